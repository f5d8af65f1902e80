#!/bin/sh
#
# run-large-values-test.sh - large values raced by test_torture in the
# lock-free mode (tests/mpi/test_torture.c), np 2 on 2 virtual nodes:
# ranks rewrite values of 64 KiB while others read them, over the ucx
# transport mapping the other node's region (the same-host path), over
# ucx with UCX_TLS=tcp,self (as across hosts without RDMA: keys shipped
# to their node), and over the mpi transport (osc pt2pt), each with the
# tables' far_read "bucket" and then "slot" (mpikvs.json(5)); then values
# of 1 MiB, with few operations, mapped and shipped.
#
# test_torture asserts, in every phase: no wrong value (each hit checked
# whole, word by word; a torn one is also counted torn), no failed call,
# hits, remote gets, evictions in its eviction table and no lost insert.
# Its lines give the counts (hits, misses, wrong, torn) and the
# library's statistics (retries, invalidations, moved, copies).  Each run
# has a hard limit (MPITEST_TIMEOUT, default 120 s) and prints its time;
# the regions go to a private directory, which must be empty at the end.
# The whole takes about 10 s on two busy cores.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_torture
plain_mpirun_shm largevalues
asan_x=
plain_mpirun_asan "$prog" && asan_x="-x ASAN_OPTIONS"
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES

fail=0
start=$(date +%s)

# large PATH ARGS...: test_torture lockfree ARGS on 2 ranks, 2 virtual
# nodes, reaching the other node by PATH: mapped (ucx over shared
# memory), shipped (ucx over tcp) or mpi (osc pt2pt).
large() {
    path=$1
    shift
    plain_mpirun_route "$path"
    t0=$(date +%s)
    plain_mpirun_run "np=2 vnodes=2 $path: test_torture lockfree $*" 2 \
        lockfree "$@"
    echo "    ($(($(date +%s) - t0)) s)"
}

# 16 hot keys: each rewritten often enough that readers catch writes
# (the retries); over the mpi transport each remote operation waits for
# the target rank's progress, so half the operations
large mapped --value-size 65536 --keys 16 --ops 1000 --far-read bucket,slot
large shipped --value-size 65536 --keys 16 --ops 1000 --far-read bucket,slot
large mpi --value-size 65536 --keys 16 --ops 500 --far-read bucket,slot
# a bucket of 1 MiB values is 4 MiB: few operations
large mapped --value-size 1048576 --keys 16 --ops 100 --far-read bucket,slot
large shipped --value-size 1048576 --keys 16 --ops 100 --far-read slot

plain_mpirun_left
echo "large values: total time $(($(date +%s) - start)) s"
[ "$fail" = 0 ]
