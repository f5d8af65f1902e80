##
# tests/fortran/: the Fortran module and its examples under mpirun
# (tests/fortran/fortran.sh), and what the binding costs per call
# (tests/fortran/bench_fortran, built by make check, run by hand:
# mpikvs_fortran(3), PERFORMANCE).
##
EXTRA_DIST += tests/fortran/fortran.sh
if MPIKVS_FORTRAN
check_PROGRAMS += \
	tests/fortran/check_fortran \
	tests/fortran/bench_fortran
TESTS += tests/fortran/fortran.sh

tests_fortran_check_fortran_SOURCES = tests/fortran/check_fortran.f90
tests_fortran_check_fortran_FCFLAGS = $(FORTRAN_MODFLAGS)
tests_fortran_check_fortran_LDADD = $(FORTRAN_LDADD)
$(tests_fortran_check_fortran_OBJECTS): fortran/libmpikvs_fortran.la

tests_fortran_bench_fortran_SOURCES = tests/fortran/bench_fortran.f90 \
	tests/fortran/bench_c.c
tests_fortran_bench_fortran_FCFLAGS = $(FORTRAN_MODFLAGS)
tests_fortran_bench_fortran_CPPFLAGS = -I$(top_srcdir)/include
tests_fortran_bench_fortran_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_fortran_bench_fortran_LDADD = $(FORTRAN_LDADD)
$(tests_fortran_bench_fortran_OBJECTS): fortran/libmpikvs_fortran.la
endif
