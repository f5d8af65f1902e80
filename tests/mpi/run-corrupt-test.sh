#!/bin/sh
#
# run-corrupt-test.sh - libmpikvs refuses data regions with a damaged
# control block (tests/mpi/test_corrupt.c), under plain mpirun, np 1.
# The table lives in a temporary directory (MPIKVS_LAYOUT names a layout
# there), never in /dev/shm; the mpirun has a hard time limit
# (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_corrupt
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

dir=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-corrupt.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086
timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np 1 "$prog" "$dir"
