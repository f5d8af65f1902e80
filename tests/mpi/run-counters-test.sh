#!/bin/sh
#
# run-counters-test.sh - the global counters, mpikvs_counter_add and
# mpikvs_counter_cas (tests/mpi/test_counters.c), under plain mpirun: on
# two virtual nodes over the transport the library picks (ucx, where the
# machine has it) and over the mpi transport, on one node over the mpi
# transport (no window), and in the coarse-lock mode; under Open MPI's
# osc rdma (Open MPI only) the counter calls refused.  The regions go to
# a private directory, which must be empty at the end; each mpirun has a
# hard time limit (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_counters
plain_mpirun_shm counters
# every job with two nodes or more needs an MPI window (run-mpi-tests.sh
# says why pt2pt)
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
xs="$xs -x MPIKVS_VIRTUAL_NODES -x MPIKVS_TRANSPORT"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
export MPIKVS_VIRTUAL_NODES MPIKVS_TRANSPORT

fail=0
# NP VNODES TRANSPORT MODE INCREMENTS (a rank's, of each counter)
for run in "4 2 auto lockfree 500" "3 2 mpi lockfree 300" \
    "2 1 mpi lockfree 300" "3 2 mpi coarse-lock 300"; do
    # shellcheck disable=SC2086
    set -- $run
    MPIKVS_VIRTUAL_NODES=$2 MPIKVS_TRANSPORT=$3
    plain_mpirun_run "np=$1 vnodes=$2 transport=$3 $4" "$1" "$4" "$5"
done
# Open MPI's rdma component, which crashes on atomics across the
# virtual nodes of one host (over vader): the counters refused, not a
# crash (mpikvs(3), MPIKVS_ERR_MPI)
if [ "${MPI_FAMILY:-openmpi}" = openmpi ]; then
    OMPI_MCA_osc=rdma MPIKVS_VIRTUAL_NODES=2 MPIKVS_TRANSPORT=mpi
    plain_mpirun_run "np=2 vnodes=2 transport=mpi osc=rdma: counters refused" \
        2 lockfree refused
fi
plain_mpirun_left
[ "$fail" = 0 ]
