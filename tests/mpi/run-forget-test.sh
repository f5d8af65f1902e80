#!/bin/sh
#
# run-forget-test.sh - mpikvs_forget (tests/mpi/test_forget.c), np 2 on
# 2 virtual nodes, over every route to the other node's buckets: the ucx
# transport mapping its region (the same-host path), ucx over
# UCX_TLS=tcp,self (keys shipped to the node's serving thread; the lock
# modes through the serving worker's memory operations), ucx with RMA
# (MPIKVS_UCX_OPS=rma: slots claimed with UCX's compare-and-swap), and
# the mpi transport (osc pt2pt: lock-free slots written unclaimed);
# lock-free and fine-lock on each, coarse-lock once (it is MPI's).
#
# test_forget asserts: forgotten keys miss from both ranks, the others
# hit with their values, a second forget is MPIKVS_MISS, puts after a
# forget hit, the statistic "forgotten" equals the forgets that returned
# MPIKVS_OK, and a forget racing puts of other keys into the same
# buckets loses none of them (no evictions).  Each run has a hard limit
# (MPITEST_TIMEOUT, default 120 s); the regions go to a private
# directory, which must be empty at the end.  About 5 s in all.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_forget
plain_mpirun_shm forget
asan_x=
plain_mpirun_asan "$prog" && asan_x="-x ASAN_OPTIONS"
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES

fail=0
start=$(date +%s)

# route PATH MODES: test_forget MODES on 2 ranks, 2 virtual nodes, reaching
# the other node by PATH: mapped, shipped, rma or mpi.
route() {
    plain_mpirun_route "$1"
    t0=$(date +%s)
    plain_mpirun_run "np=2 vnodes=2 $1: test_forget $2" 2 "$2"
    echo "    ($(($(date +%s) - t0)) s)"
}

# several modes in one job each: a job's start is most of a run's time
route mapped lockfree,fine-lock
route shipped lockfree,fine-lock
route mpi lockfree,fine-lock,coarse-lock
route rma lockfree

plain_mpirun_left
echo "forget: total time $(($(date +%s) - start)) s"
[ "$fail" = 0 ]
