#!/bin/sh
#
# run-errors-test.sh - every error return of the public API that a plain
# job can cause carries a detail in mpikvs_last_error()
# (tests/mpi/test_errors.c): a call given a NULL handle, bad arguments,
# options, config and environment at open, a missing table, damaged save
# files, too many requests, a close with a request not waited for.  Under
# plain mpirun at np 1 and 2 on one node; the regions go to a private
# directory, which must be empty at the end; each mpirun has a hard time
# limit (MPITEST_TIMEOUT, default 120 s).
#
# Codes not reached here, and where they are tested: MPIKVS_ERR_NOSPACE
# (a full /dev/shm: check_region_fiu), _OWNER (another user's region:
# run-intruder-test.sh, check_region), _FULL and _TOOBIG (shm/ internals:
# check_region, check_tier), _STALLED (a stopped writer or rank:
# run-absent-stopped-test.sh, run-killed-writer-test.sh), _TRANSPORT (UCX
# failing: run-fault-tests.sh).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_errors
plain_mpirun_scratch errors
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

fail=0
for np in 1 2; do
    plain_mpirun_run "np=$np" "$np" "$tmp"
done
plain_mpirun_left
[ "$fail" = 0 ]
