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
