##
# tests/slurm/: end-to-end tests of spank_mpikvs against a real Slurm
# (munged, slurmctld and two slurmd) that run-slurm-tests.sh starts in a
# temporary directory and always stops.
##
check_PROGRAMS += \
	tests/slurm/kvs_steps
# End of check_PROGRAMS (slurm)

TESTS += \
	tests/slurm/run-persist-slurm-test.sh \
	tests/slurm/run-slurm-tests.sh \
	tests/slurm/run-tmpfs-tests.sh
# End of TESTS (slurm)

tests_slurm_kvs_steps_SOURCES = tests/slurm/kvs_steps.c
tests_slurm_kvs_steps_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_slurm_kvs_steps_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_slurm_kvs_steps_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

EXTRA_DIST += \
	tests/slurm/checks.sh \
	tests/slurm/cluster.sh \
	tests/slurm/run-persist-slurm-test.sh \
	tests/slurm/run-slurm-tests.sh \
	tests/slurm/run-tmpfs-tests.sh \
	tests/slurm/smoke.sh
# End of EXTRA_DIST (slurm)
