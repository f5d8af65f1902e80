##
# cmake/: the CMake package, find_package(mpikvs CONFIG) and the target
# mpikvs::mpikvs (mpikvs(3)).  configure writes both files from their .in
# templates; cmake is not needed to build or install them.
##
cmakeconfigdir = $(libdir)/cmake/mpikvs
cmakeconfig_DATA = \
	cmake/mpikvsConfig.cmake \
	cmake/mpikvsConfigVersion.cmake
# End of cmakeconfig_DATA

# make installcheck, and so make distcheck, whichever MPI it was
# configured with: a CMake project finds, links and runs what was
# installed (tests/cmake-project.sh; needs cmake)
installcheck-local:
	top_srcdir=$(top_srcdir) $(SHELL) $(top_srcdir)/tests/cmake-project.sh \
		$(DESTDIR)$(prefix)
