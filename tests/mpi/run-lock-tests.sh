#!/bin/sh
#
# run-lock-tests.sh - the fine-lock mode's bucket locks across opens of
# one table (tests/mpi/test_locks.c), under plain mpirun:
#
#   killed holder  a process holding a bucket's write lock and a reader's
#                  +1 on another bucket is killed with SIGKILL; the next
#                  open of the table (job scope: the regions stay, as the
#                  SPANK plugin keeps them between steps) gets and puts on
#                  both buckets (before epochs: MPIKVS_ERR_STALLED after
#                  30 s), and takes over the dead process's lease
#   second open    while one open of the table is alive, another (another
#                  process, or the same one) is refused with a message
#                  naming the table and the holder; after it closed, an
#                  open works
#   writer         two ranks relay a read lock so that the bucket always
#                  has a reader; a writer gets in within a bounded number
#                  of relay steps
#
# The table lives in a temporary directory (MPIKVS_LAYOUT names a layout
# there), never in /dev/shm.  Every wait is a bounded poll of a file the
# waited-for process writes; each mpirun has a hard time limit
# (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_locks
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPITEST_WATCHDOG"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
# the lock modes need MPI atomics on the own rank (see run-mpi-tests.sh)
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc

dir=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-locks.XXXXXX") || exit 1
bg=
cleanup() {
    [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass=0
fail=0

ok() {
    pass=$((pass + 1))
    echo "PASS $1"
}

bad() {
    fail=$((fail + 1))
    echo "FAIL $1"
    [ -s "$dir/out" ] && sed 's/^/    /' "$dir/out"
    return 0
}

# mpi NP ARGS...: run test_locks under mpirun, output in $dir/out
mpi() {
    np=$1
    shift
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs \
        "$prog" "$@" >"$dir/out" 2>&1 </dev/null
}

# start NP ARGS...: the same in the background ($bg)
start() {
    np=$1
    shift
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs \
        "$prog" "$@" >"$dir/bg-out" 2>&1 </dev/null &
    bg=$!
}

# await_held: true once the background job wrote $dir/held (at most 60 s)
await_held() {
    n=0
    while [ ! -s "$dir/held" ]; do
        kill -0 "$bg" 2>/dev/null || return 1
        n=$((n + 1))
        [ "$n" -le 600 ] || return 1
        sleep 0.1
    done
}

# finish_bg: wait for the background job; its exit status
finish_bg() {
    wait "$bg"
    st=$?
    bg=
    return "$st"
}

if ! "$prog" setup "$dir" >"$dir/layout-path" 2>"$dir/out"; then
    bad "setup of a job-scope table in $dir"
    exit 1
fi
MPIKVS_LAYOUT=$(cat "$dir/layout-path")
export MPIKVS_LAYOUT
xs="$xs -x MPIKVS_LAYOUT"

# ---- a holder killed with SIGKILL ----
rm -f "$dir/held"
start 1 hold "$dir"
if await_held; then
    holder=$(cat "$dir/held")
    kill -9 "$holder"
    finish_bg
    if mpi 2 use "$dir" 1234; then
        ok "killed holder: a new open gets and puts on its buckets"
    else
        bad "killed holder: a new open gets and puts on its buckets"
    fi
else
    finish_bg
    cp "$dir/bg-out" "$dir/out"
    bad "killed holder: the holder never took its locks"
fi

# ---- a second open while the first is alive ----
rm -f "$dir/held" "$dir/release"
start 1 hold-open "$dir"
if await_held; then
    if mpi 1 refused "$dir"; then
        ok "second open: refused while the first is open"
    else
        bad "second open: refused while the first is open"
    fi
    : >"$dir/release"
    if finish_bg; then
        ok "second open: the first one closes"
    else
        cp "$dir/bg-out" "$dir/out"
        bad "second open: the first one closes"
    fi
    if mpi 1 use "$dir" 777; then
        ok "second open: an open after the first closed works"
    else
        bad "second open: an open after the first closed works"
    fi
else
    finish_bg
    cp "$dir/bg-out" "$dir/out"
    bad "second open: the first open never got going"
fi

# ---- a writer among readers (a table of its own, in $dir) ----
unset MPIKVS_LAYOUT
MPIKVS_SHM_DIR=$dir
export MPIKVS_SHM_DIR
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
if mpi 4 starve "$dir"; then
    ok "writer: not starved by a relay of readers"
    grep 'relay steps' "$dir/out" | sed 's/^/    /'
else
    bad "writer: not starved by a relay of readers"
fi

echo "locks: $pass passed, $fail failed"
[ "$fail" = 0 ]
