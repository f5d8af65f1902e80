#!/bin/sh
#
# run-absent-stopped-test.sh - two racing callers of put-if-absent, one
# stopped 20 ms every 25 ms (tests/mpi/test_absent_stopped.c): np=3 on
# one node, lock-free.  Every key must have exactly one winner, whose
# value the loser is shown and a get returns.
#
# Environment: ABSENT_STOPPED_SECONDS (how long rank 1 offers keys,
# default 20), ABSENT_STOPPED_KEYS (at most this many keys, default
# 200000), MPITEST_TIMEOUT (default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"

plain_mpirun_env
plain_mpirun_prog test_absent_stopped
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR -x MPITEST_WATCHDOG"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
plain_mpirun_shm absent-stopped
fail=0

plain_mpirun_run "put-if-absent, one racer stopped" 3 \
    --seconds "${ABSENT_STOPPED_SECONDS:-20}" \
    --max-keys "${ABSENT_STOPPED_KEYS:-200000}"
plain_mpirun_left

echo "absent-stopped: $fail failed"
[ "$fail" = 0 ]
