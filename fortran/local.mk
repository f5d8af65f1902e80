##
# fortran/: the Fortran module mpikvs (mpikvs_fortran(3)).
#
# libmpikvs_fortran: the module (mpikvs.f90, by the MPI's Fortran
# wrapper FC) and its C part (bind.c, by CC: ISO_Fortran_binding.h),
# linked by FC, which brings the MPI's Fortran libraries.  The module
# includes mpikvs_constants.inc, which fortran/gen_constants prints from
# the C headers at build time.  make install puts mpikvs.mod in fmoddir
# (configure) and mpikvs-fortran.pc beside mpikvs.pc.
##
EXTRA_DIST += \
	fortran/gen_constants.c \
	fortran/mpikvs-fortran.pc.in
# End of EXTRA_DIST (fortran)

if MPIKVS_FORTRAN
lib_LTLIBRARIES += fortran/libmpikvs_fortran.la
fortran_libmpikvs_fortran_la_SOURCES = fortran/bind.c fortran/mpikvs.f90
fortran_libmpikvs_fortran_la_CPPFLAGS = -I$(top_srcdir)/include
fortran_libmpikvs_fortran_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
# -J: mpikvs.mod in fortran/ of the build tree, where the examples and
# tests find it (FORTRAN_MODFLAGS) and make install takes it from
fortran_libmpikvs_fortran_la_FCFLAGS = -I$(top_builddir)/fortran \
	-J$(top_builddir)/fortran
fortran_libmpikvs_fortran_la_LIBADD = libmpikvs/libmpikvs.la
fortran_libmpikvs_fortran_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

# what a program of the tree that uses the module compiles with; its
# objects depend on fortran/libmpikvs_fortran.la, which makes mpikvs.mod
FORTRAN_MODFLAGS = -I$(top_builddir)/fortran
FORTRAN_LDADD = fortran/libmpikvs_fortran.la libmpikvs/libmpikvs.la

# the generator runs on the build machine and needs only the headers
fortran/gen_constants$(EXEEXT): fortran/gen_constants.c \
		$(top_srcdir)/include/mpikvs.h \
		$(top_srcdir)/include/mpikvs_errors.h \
		$(top_srcdir)/include/mpikvs_statistics.h
	$(AM_V_CC)$(MKDIR_P) fortran && \
	$(CC) $(CPPFLAGS) -I$(top_srcdir)/include $(MPI_CFLAGS) $(CFLAGS) \
	    -o $@ $(top_srcdir)/fortran/gen_constants.c
fortran/mpikvs_constants.inc: fortran/gen_constants$(EXEEXT)
	$(AM_V_GEN)fortran/gen_constants$(EXEEXT) >$@.tmp && mv $@.tmp $@
BUILT_SOURCES += fortran/mpikvs_constants.inc
$(fortran_libmpikvs_fortran_la_OBJECTS): fortran/mpikvs_constants.inc

# mpikvs.mod comes with the library's objects
fortran/mpikvs.mod: fortran/libmpikvs_fortran.la
	@test -f $@ || { echo "$@ was not made with $<" >&2; exit 1; }
fmod_DATA = fortran/mpikvs.mod
fpkgconfigdir = $(pkgconfigdir)
fpkgconfig_DATA = fortran/mpikvs-fortran.pc

man_MANS += man/mpikvs_fortran.3

# the examples, built by make check, installed as sources with the C ones
check_PROGRAMS += \
	examples/surrogate-f08 \
	examples/surrogate-mpi
examples_surrogate_f08_SOURCES = examples/surrogate-f08.f90
examples_surrogate_f08_FCFLAGS = $(FORTRAN_MODFLAGS)
examples_surrogate_f08_LDADD = $(FORTRAN_LDADD)
$(examples_surrogate_f08_OBJECTS): fortran/libmpikvs_fortran.la
examples_surrogate_mpi_SOURCES = examples/surrogate-mpi.f90
examples_surrogate_mpi_FCFLAGS = $(FORTRAN_MODFLAGS)
examples_surrogate_mpi_LDADD = $(FORTRAN_LDADD)
$(examples_surrogate_mpi_OBJECTS): fortran/libmpikvs_fortran.la
# (examplesdir is etc/local.mk's, set after this file is read)
fexamplesdir = $(examplesdir)
dist_fexamples_DATA = \
	examples/surrogate-f08.f90 \
	examples/surrogate-mpi.f90
endif
EXTRA_DIST += man/mpikvs_fortran.3.in

CLEANFILES += \
	fortran/gen_constants$(EXEEXT) \
	fortran/mpikvs_constants.inc \
	fortran/mpikvs.mod
# End of CLEANFILES (fortran)
