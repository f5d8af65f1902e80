#!/bin/sh
#
# run-nodes-test.sh - kvs_nodes for every placement of np ranks on one
# machine (tests/mpi/test_nodes.c) under plain mpirun, np 1, 2, 3, 5 and
# 6.  No region is made; each mpirun has a hard time limit
# (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_nodes
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

fail=0
for np in 1 2 3 5 6; do
    plain_mpirun_run "np=$np" "$np"
done
[ "$fail" = 0 ]
