#!/bin/sh
#
# run-corrupt-test.sh - libmpikvs refuses data regions with a damaged
# control block (tests/mpi/test_corrupt.c), under plain mpirun, np 1.
# The table lives in a temporary directory (MPIKVS_LAYOUT names a layout
# there), never in /dev/shm; the mpirun has a hard time limit
# (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
prog="${top_builddir:-.}/tests/mpi/test_corrupt"
mpirun="${MPIRUN:-mpirun}"
limit="${MPITEST_TIMEOUT:-120}"

if ! command -v "$mpirun" >/dev/null 2>&1; then
    echo "FAIL: $mpirun not found" >&2
    exit 1
fi
if [ ! -x "$prog" ]; then
    echo "FAIL: $prog is missing (make check builds it)" >&2
    exit 1
fi

. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
MPITEST_WATCHDOG=$((limit > 20 ? limit - 10 : limit))
export MPITEST_WATCHDOG

dir=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-corrupt.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086
timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np 1 "$prog" "$dir"
