#!/bin/sh
#
# run-verify-test.sh - sampled accuracy (tests/mpi/test_verify.c): np 2
# on 2 virtual nodes, over the ucx transport mapping the other node's
# region, over ucx with UCX_TLS=tcp,self (keys shipped to their node, as
# across hosts without RDMA), and over the mpi transport (osc pt2pt).
# test_verify asserts that both ranks pick the same quarter of the hits
# as MPIKVS_VERIFY in gets, batches and the node tier, that reports are
# refused where they must be and counted exactly where they are, and
# that a handle without MPIKVS_OPEN_VERIFY never sees the code.  Each
# run has a hard limit (MPITEST_TIMEOUT, default 120 s); the regions go
# to a private directory, which must be empty at the end.  About 6 s.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_verify
plain_mpirun_shm verify
asan_x=
plain_mpirun_asan "$prog" && asan_x="-x ASAN_OPTIONS"
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES

fail=0
start=$(date +%s)

# verify PATH: test_verify on 2 ranks, 2 virtual nodes, reaching the
# other node by PATH: mapped (ucx over shared memory), shipped (ucx over
# tcp) or mpi (osc pt2pt).
verify() {
    plain_mpirun_route "$1"
    t0=$(date +%s)
    plain_mpirun_run "np=2 vnodes=2 $1: test_verify" 2
    echo "    ($(($(date +%s) - t0)) s)"
}

verify mapped
verify shipped
verify mpi

plain_mpirun_left
echo "verify: total time $(($(date +%s) - start)) s"
[ "$fail" = 0 ]
