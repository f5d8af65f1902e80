#!/bin/sh
#
# run-thread-test.sh - mpikvs_open and MPI's thread level
# (tests/mpi/test_thread.c) under plain mpirun: np 2 under
# MPI_THREAD_FUNNELED (another thread is refused, the main thread opens)
# and MPI_THREAD_SERIALIZED (another thread opens and uses a cache), np 1
# before MPI_Init.  The regions go to a private directory, which must be
# empty at the end; each mpirun has a hard time limit (MPITEST_TIMEOUT,
# default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_thread
MPIKVS_SHM_DIR=$(mktemp -d /dev/shm/mpikvs-thread.XXXXXX) || exit 1
export MPIKVS_SHM_DIR
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
trap 'rm -rf "$MPIKVS_SHM_DIR"' EXIT
trap 'exit 130' INT TERM

fail=0
for run in "2 funneled" "2 serialized" "1 uninit"; do
    set -- $run
    # shellcheck disable=SC2086
    if timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np "$1" \
        "$prog" "$2" </dev/null; then
        echo "PASS np=$1 $2"
    else
        echo "FAIL np=$1 $2"
        fail=$((fail + 1))
    fi
done
left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -n "$left" ]; then
    echo "FAIL left in $MPIKVS_SHM_DIR: $left"
    fail=$((fail + 1))
fi
[ "$fail" = 0 ]
