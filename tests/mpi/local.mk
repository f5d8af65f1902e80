##
# tests/mpi/: MPI tests of libmpikvs, plain MPI programs (Check's fork
# mode does not mix with MPI) run under mpirun by run-mpi-tests.sh over
# np 1..4, virtual nodes and the three consistency modes.
##
check_PROGRAMS += \
	tests/mpi/test_absent \
	tests/mpi/test_absent_stopped \
	tests/mpi/test_areas \
	tests/mpi/test_batch \
	tests/mpi/test_clear \
	tests/mpi/test_corrupt \
	tests/mpi/test_counters \
	tests/mpi/test_errors \
	tests/mpi/test_forget \
	tests/mpi/test_describe \
	tests/mpi/test_fault \
	tests/mpi/test_getput \
	tests/mpi/test_open \
	tests/mpi/test_tier \
	tests/mpi/test_torture \
	tests/mpi/test_locks \
	tests/mpi/test_mpi_mix \
	tests/mpi/test_near \
	tests/mpi/test_nodes \
	tests/mpi/test_persist \
	tests/mpi/test_persist_fault \
	tests/mpi/test_populate \
	tests/mpi/test_progress \
	tests/mpi/test_thread \
	tests/mpi/test_killed_writer \
	tests/mpi/test_verify
# End of check_PROGRAMS (mpi)

TESTS += \
	tests/mpi/run-mpi-tests.sh \
	tests/mpi/run-absent-stopped-test.sh \
	tests/mpi/run-clear-tests.sh \
	tests/mpi/run-corrupt-test.sh \
	tests/mpi/run-counters-test.sh \
	tests/mpi/run-errors-test.sh \
	tests/mpi/run-describe-test.sh \
	tests/mpi/run-fault-tests.sh \
	tests/mpi/run-forget-test.sh \
	tests/mpi/run-intruder-test.sh \
	tests/mpi/run-killed-writer-test.sh \
	tests/mpi/run-large-values-test.sh \
	tests/mpi/run-lock-tests.sh \
	tests/mpi/run-mpi-mix-test.sh \
	tests/mpi/run-near-test.sh \
	tests/mpi/run-nodes-test.sh \
	tests/mpi/run-persist-tests.sh \
	tests/mpi/run-persist-fault-tests.sh \
	tests/mpi/run-populate-test.sh \
	tests/mpi/run-progress-tests.sh \
	tests/mpi/run-thread-test.sh \
	tests/mpi/run-verify-test.sh
# End of TESTS (mpi)

tests_mpi_test_absent_stopped_SOURCES = tests/mpi/test_absent_stopped.c
tests_mpi_test_absent_stopped_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_absent_stopped_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_absent_stopped_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_verify_SOURCES = tests/mpi/test_verify.c
tests_mpi_test_verify_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_verify_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_verify_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS) -lm

tests_mpi_test_describe_SOURCES = tests/mpi/test_describe.c
tests_mpi_test_describe_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_describe_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_describe_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

# the table tests by API area, sharing mt_table.h
tests_mpi_test_open_SOURCES = tests/mpi/test_open.c
tests_mpi_test_open_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_open_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_open_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_getput_SOURCES = tests/mpi/test_getput.c
tests_mpi_test_getput_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_getput_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_getput_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_batch_SOURCES = tests/mpi/test_batch.c
tests_mpi_test_batch_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_batch_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_batch_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_absent_SOURCES = tests/mpi/test_absent.c
tests_mpi_test_absent_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_absent_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_absent_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

# the four above in one job (run-mpi-tests.sh's matrix)
tests_mpi_test_areas_SOURCES = tests/mpi/test_areas.c
tests_mpi_test_areas_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_areas_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_areas_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_counters_SOURCES = tests/mpi/test_counters.c
tests_mpi_test_counters_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_counters_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_counters_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

# Built from the library's sources with its test hooks (libmpikvs/slot.h),
# which libmpikvs itself does not have.
tests_mpi_test_fault_SOURCES = tests/mpi/test_fault.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_fault_CPPFLAGS = $(TESTS_CPPFLAGS) -DKVS_TEST_HOOKS
tests_mpi_test_fault_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_fault_LDADD = $(LIBMPIKVS_LIBS)

tests_mpi_test_corrupt_SOURCES = tests/mpi/test_corrupt.c
tests_mpi_test_corrupt_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_corrupt_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_corrupt_LDADD = libmpikvs/libmpikvs.la shm/libkvshm.la $(MPI_LIBS)

# public calls only; a thread opens under MPI_THREAD_FUNNELED
tests_mpi_test_errors_SOURCES = tests/mpi/test_errors.c
tests_mpi_test_errors_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_errors_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -pthread
tests_mpi_test_errors_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS) -lpthread

tests_mpi_test_near_SOURCES = tests/mpi/test_near.c
tests_mpi_test_near_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_near_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_near_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS) -lm

# the library's headers too: a key's home node (key.h)
tests_mpi_test_forget_SOURCES = tests/mpi/test_forget.c
tests_mpi_test_forget_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_forget_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_forget_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_tier_SOURCES = tests/mpi/test_tier.c
tests_mpi_test_tier_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_tier_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -pthread
tests_mpi_test_tier_LDADD = libmpikvs/libmpikvs.la shm/libkvshm.la $(MPI_LIBS) -lpthread

# also built by another MPI's wrapper, from the source (run-mpi-mix-test.sh)
tests_mpi_test_mpi_mix_SOURCES = tests/mpi/test_mpi_mix.c
tests_mpi_test_mpi_mix_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_mpi_mix_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_mpi_mix_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_mpi_test_persist_SOURCES = tests/mpi/test_persist.c
tests_mpi_test_persist_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_persist_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_persist_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

# crafts a save file's header, checksum included (XXH3)
tests_mpi_test_persist_fault_SOURCES = tests/mpi/test_persist_fault.c \
	tests/mpi/fail_syscalls.c tests/mpi/fail_syscalls.h
tests_mpi_test_persist_fault_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_persist_fault_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) $(XXHASH_CFLAGS)
tests_mpi_test_persist_fault_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS) $(XXHASH_LIBS)

tests_mpi_test_torture_SOURCES = tests/mpi/test_torture.c
tests_mpi_test_torture_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_torture_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_torture_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

# built from the library's sources: it calls kvs_nodes itself
tests_mpi_test_nodes_SOURCES = tests/mpi/test_nodes.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_nodes_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_nodes_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_nodes_LDADD = $(LIBMPIKVS_LIBS)

# built from the library's sources: it picks keys by their home node
# (kvs_key_make)
tests_mpi_test_progress_SOURCES = tests/mpi/test_progress.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_progress_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_progress_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_progress_LDADD = $(LIBMPIKVS_LIBS)

tests_mpi_test_populate_SOURCES = tests/mpi/test_populate.c
tests_mpi_test_populate_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_populate_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_mpi_test_populate_LDADD = libmpikvs/libmpikvs.la shm/libkvshm.la $(MPI_LIBS)

tests_mpi_test_thread_SOURCES = tests/mpi/test_thread.c
tests_mpi_test_thread_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_thread_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -pthread
tests_mpi_test_thread_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS) -lpthread

# built from the library's sources: it publishes its UCX workers'
# addresses for the intruder (a plain UCX program, run as another user)
if MPIKVS_HAVE_UCX
check_PROGRAMS += tests/mpi/test_intruder tests/mpi/ucx_intruder
tests_mpi_test_intruder_SOURCES = tests/mpi/test_intruder.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_intruder_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_intruder_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_intruder_LDADD = $(LIBMPIKVS_LIBS)
tests_mpi_ucx_intruder_SOURCES = tests/mpi/ucx_intruder.c
tests_mpi_ucx_intruder_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS)
tests_mpi_ucx_intruder_LDADD = $(UCX_LIBS)
endif

# built from the library's sources: it picks keys by their home node
tests_mpi_test_killed_writer_SOURCES = tests/mpi/test_killed_writer.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_killed_writer_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_killed_writer_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_killed_writer_LDADD = $(LIBMPIKVS_LIBS)

# built from the library's sources: it picks keys by their home bucket
# and reads the regions' generation
tests_mpi_test_clear_SOURCES = tests/mpi/test_clear.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_clear_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_clear_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_clear_LDADD = $(LIBMPIKVS_LIBS)

# built from the library's sources: it holds bucket locks itself
tests_mpi_test_locks_SOURCES = tests/mpi/test_locks.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_mpi_test_locks_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_mpi_test_locks_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
tests_mpi_test_locks_LDADD = $(LIBMPIKVS_LIBS)

EXTRA_DIST += \
	tests/mpi/mpitest.h \
	tests/mpi/mt_key_home.h \
	tests/mpi/mt_table.h \
	tests/mpi/run-absent-stopped-test.sh \
	tests/mpi/run-clear-tests.sh \
	tests/mpi/run-corrupt-test.sh \
	tests/mpi/run-counters-test.sh \
	tests/mpi/run-errors-test.sh \
	tests/mpi/run-describe-test.sh \
	tests/mpi/run-fault-tests.sh \
	tests/mpi/run-forget-test.sh \
	tests/mpi/run-intruder-test.sh \
	tests/mpi/run-killed-writer-test.sh \
	tests/mpi/run-large-values-test.sh \
	tests/mpi/run-lock-tests.sh \
	tests/mpi/run-mpi-mix-test.sh \
	tests/mpi/run-near-test.sh \
	tests/mpi/run-mpi-tests.sh \
	tests/mpi/run-nodes-test.sh \
	tests/mpi/run-persist-tests.sh \
	tests/mpi/run-persist-fault-tests.sh \
	tests/mpi/run-populate-test.sh \
	tests/mpi/run-progress-tests.sh \
	tests/mpi/run-thread-test.sh \
	tests/mpi/run-verify-test.sh
# End of EXTRA_DIST (mpi)
