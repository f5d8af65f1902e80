##
# tests/rmacache/: libmpikvs-rmacache under an unchanged MPI program
# (test_rmacache.c, linked with MPI only: the library is preloaded by
# run-rmacache-tests.sh), and the OpenCoarrays test programs run with
# and without it (run-coarrays.sh; all of them: coarrays-all.sh).
##
check_PROGRAMS += tests/rmacache/test_rmacache
# End of check_PROGRAMS (rmacache)

TESTS += \
	tests/rmacache/run-coarrays.sh \
	tests/rmacache/run-rmacache-tests.sh
# End of TESTS (rmacache)

tests_rmacache_test_rmacache_SOURCES = tests/rmacache/test_rmacache.c
tests_rmacache_test_rmacache_CPPFLAGS = -I$(top_srcdir)/tests/mpi
tests_rmacache_test_rmacache_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -pthread
tests_rmacache_test_rmacache_LDADD = $(MPI_LIBS) -lpthread

EXTRA_DIST += \
	tests/rmacache/coarrays-all.sh \
	tests/rmacache/run-coarrays.sh \
	tests/rmacache/run-rmacache-tests.sh
# End of EXTRA_DIST (rmacache)
