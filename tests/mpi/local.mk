##
# tests/mpi/: MPI tests of libmpikvs, plain MPI programs (Check's fork
# mode does not mix with MPI) run under mpirun by run-mpi-tests.sh over
# np 1..4, virtual nodes and the three consistency modes.
##
check_PROGRAMS += \
	tests/mpi/test_basic \
	tests/mpi/test_tier \
	tests/mpi/test_torture
# End of check_PROGRAMS (mpi)

TESTS += \
	tests/mpi/run-mpi-tests.sh
# End of TESTS (mpi)

tests_mpi_test_basic_SOURCES = tests/mpi/test_basic.c
tests_mpi_test_basic_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_basic_LDADD = libmpikvs.la $(MPI_LIBS)

tests_mpi_test_tier_SOURCES = tests/mpi/test_tier.c
tests_mpi_test_tier_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shm
tests_mpi_test_tier_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -pthread
tests_mpi_test_tier_LDADD = libmpikvs.la shm/libkvshm.la $(MPI_LIBS) -lpthread

tests_mpi_test_torture_SOURCES = tests/mpi/test_torture.c
tests_mpi_test_torture_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_torture_LDADD = libmpikvs.la $(MPI_LIBS)

EXTRA_DIST += \
	tests/mpi/mpitest.h \
	tests/mpi/run-mpi-tests.sh
# End of EXTRA_DIST (mpi)
