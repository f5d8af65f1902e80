#!/bin/sh
#
# run-populate-test.sh - MPIKVS_POPULATE (tests/mpi/test_populate.c) under
# plain mpirun at np 1 and 2 on one node: what mpikvs_open faults in with
# the default, all, 0, off and a small bound, a working table after each,
# and bad values refused.  The regions go to a private directory, which
# must be empty at the end; each mpirun has a hard time limit
# (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_populate
plain_mpirun_shm populate
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

fail=0
for np in 1 2; do
    plain_mpirun_run "np=$np" "$np"
done
plain_mpirun_left
[ "$fail" = 0 ]
