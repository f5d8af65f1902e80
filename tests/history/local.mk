##
# tests/history/: the history checker.  history records, per rank, every
# operation with its times, result and self-describing values;
# check-history.py checks the histories against mpikvs's contract per key;
# run-history-tests.sh runs the matrix (virtual nodes, transports, modes,
# the node tier) and keeps the histories of a failed check.
# prove-broken.sh (not in the suite) builds the deliberately broken trees
# of broken/*.patch and expects the checker to catch each.
##
check_PROGRAMS += tests/history/history

TESTS += tests/history/run-history-tests.sh
# End of TESTS (history)

# built from the library's sources: it records each key's home node
tests_history_history_SOURCES = tests/history/history.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_history_history_CPPFLAGS = $(TESTS_CPPFLAGS) -I$(top_srcdir)/tests/mpi
tests_history_history_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_history_history_LDADD = $(LIBMPIKVS_LIBS)

EXTRA_DIST += \
	tests/history/broken/checksum-skips-value.patch \
	tests/history/broken/fence-does-not-wait.patch \
	tests/history/check-history.py \
	tests/history/prove-broken.sh \
	tests/history/run-history-tests.sh
# End of EXTRA_DIST (history)
