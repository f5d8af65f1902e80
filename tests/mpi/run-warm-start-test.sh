#!/bin/sh
#
# run-warm-start-test.sh - what the config's persist.load did at open is
# recorded on the handle (tests/mpi/test_warm_start.c): no file (a cold
# start), loaded N entries from the file, no persist.load.  Under plain
# mpirun at np 1 and 2 on one node; the save file goes to a scratch
# directory, the regions to one of their own, which must be empty at the
# end; each mpirun has a hard time limit (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_warm_start
plain_mpirun_scratch warm
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

fail=0
for np in 1 2; do
    rm -f "$tmp/warm.kvs"
    plain_mpirun_run "np=$np" "$np" "$tmp"
done
plain_mpirun_left
[ "$fail" = 0 ]
