#!/bin/sh
#
# run-history-tests.sh - record histories with tests/history/history and
# check them with check-history.py, over the matrix:
#
#   one node, 2 and 3 virtual nodes (MPIKVS_VIRTUAL_NODES), np 3;
#   the modes lockfree, fine-lock and coarse-lock (coarse-lock is the mpi
#   transport's only; lock-free on one node uses no transport);
#   the transports ucx (shared memory mapped, the default), ucx over
#   UCX_TLS=tcp,self (as between hosts without RDMA), and mpi (osc pt2pt:
#   Debian excludes it by default, and osc rdma cannot span nodes);
#   the node tier, caching always and user, on 2 and 3 virtual nodes;
#   and a "hot" run: most operations on two keys with 2 KiB values.
# Every run mixes single, batch and started-batch operations,
# put-if-absent races, counter adds and CAS (see history.c).
#
# First the checker's own selftest (crafted bad histories, each must be
# caught).  One line per run with the operations checked; a failed check
# prints the checker's findings and keeps the run's histories in
# HISTORY_KEEP (default tests/history/kept under the build tree), named
# in the output.  Each run has a hard time limit (MPITEST_TIMEOUT,
# default 300 s, for hangs: a busy machine stretches the lock modes'
# round trips, as tests/mpi/run-mpi-tests.sh says, to a minute and
# more); the regions go to a private directory, and one left
# there is a failure.
#
# Environment: top_builddir, top_srcdir; HISTORY_EPOCHS and HISTORY_OPS
# (per rank and epoch; defaults 6 and 300: the whole matrix takes about
# a minute on two cores); HISTORY_LONG=1: np 4, 12 epochs of 1500
# operations; HISTORY_ONLY=PATTERN: the runs whose label matches the
# grep pattern (prove-broken.sh uses it).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
prog="${top_builddir:-.}/tests/history/history"
mpirun="${MPIRUN:-mpirun}"
limit="${MPITEST_TIMEOUT:-300}"
MPITEST_WATCHDOG=$((limit > 20 ? limit - 10 : limit))
export MPITEST_WATCHDOG
checker="${top_srcdir:-.}/tests/history/check-history.py"
keep="${HISTORY_KEEP:-${top_builddir:-.}/tests/history/kept}"
np=3
epochs="${HISTORY_EPOCHS:-6}"
ops="${HISTORY_OPS:-300}"
if [ "${HISTORY_LONG:-0}" = 1 ]; then
    np=4
    epochs="${HISTORY_EPOCHS:-12}"
    ops="${HISTORY_OPS:-1500}"
fi

if ! command -v "$mpirun" >/dev/null 2>&1; then
    echo "FAIL: $mpirun not found"
    exit 1
fi
if [ ! -x "$prog" ]; then
    echo "FAIL: $prog is missing (make check builds it)"
    exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "FAIL: python3 not found (the checker needs it: install python3)"
    exit 1
fi
plain_mpirun_asan "$prog"
plain_mpirun_shm history
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-history.XXXXXX") || exit 1
trap 'rm -rf "$MPIKVS_SHM_DIR" "$tmp"' EXIT

fail=0
pass=0
start=$(date +%s)

if python3 "$checker" --selftest >"$tmp/selftest" 2>&1; then
    pass=$((pass + 1))
    echo "PASS checker selftest ($(grep -c '^PASS' "$tmp/selftest") cases)"
else
    fail=$((fail + 1))
    echo "FAIL checker selftest"
    sed 's/^/    /' "$tmp/selftest"
fi

# run VNODES MODE TRANSPORT TLS TIER [NAME ARGS...]: one recorded run,
# checked; NAME (in the label) and ARGS: more options of the program
run() {
    vnodes=$1 mode=$2 tp=$3 tls=$4 tier=$5
    shift 5
    label="vnodes=$vnodes mode=$mode transport=$tp${tls:+ MPIKVS_UCX_TLS=$tls}"
    label="$label tier=$tier${1:+ $1}"
    [ $# -gt 0 ] && shift
    # Under MPICH a window's operations wait for the target rank's
    # progress, which 3 ranks on 2 cores seldom give it (19 to 53 s for
    # the full count): a third of them (plain_mpirun_window_starves)
    run_ops=$ops
    if { [ "$tp" = mpi ] || [ "$mode" = coarse-lock ]; } &&
        [ "${MPI_FAMILY:-openmpi}" = mpich ]; then
        run_ops=$((ops / 3))
        label="$label ops=$run_ops"
    fi
    if [ -n "${HISTORY_ONLY:-}" ] &&
        ! printf '%s\n' "$label" | grep -q -- "$HISTORY_ONLY"; then
        return 0
    fi
    unset MPIKVS_VIRTUAL_NODES MPIKVS_TRANSPORT MPIKVS_UCX_TLS OMPI_MCA_osc
    xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
    [ -n "${ASAN_OPTIONS:-}" ] && xs="$xs -x ASAN_OPTIONS"
    if [ "$vnodes" -gt 1 ]; then
        MPIKVS_VIRTUAL_NODES=$vnodes
        export MPIKVS_VIRTUAL_NODES
        xs="$xs -x MPIKVS_VIRTUAL_NODES"
    fi
    if [ "$tp" != auto ]; then
        MPIKVS_TRANSPORT=$tp
        export MPIKVS_TRANSPORT
        xs="$xs -x MPIKVS_TRANSPORT"
    fi
    if [ -n "$tls" ]; then
        MPIKVS_UCX_TLS=$tls
        export MPIKVS_UCX_TLS
        xs="$xs -x MPIKVS_UCX_TLS"
    fi
    # an MPI window (the lock modes, the mpi transport across nodes)
    # needs osc pt2pt here (tests/mpi/run-mpi-tests.sh says why)
    OMPI_MCA_osc=pt2pt
    export OMPI_MCA_osc
    xs="$xs -x OMPI_MCA_osc"

    dir="$tmp/run"
    rm -rf "$dir"
    mkdir "$dir"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np "$np" \
        "$prog" "$mode" "$dir" --epochs "$epochs" --ops "$run_ops" \
        --tier "$tier" "$@" >"$tmp/out" 2>&1 </dev/null
    rc=$?
    python3 "$checker" "$dir" >"$tmp/check" 2>&1
    crc=$?
    t1=$(date +%s)
    if [ "$rc" = 0 ] && [ "$crc" = 0 ]; then
        pass=$((pass + 1))
        checked=$(sed -n 's/.*: checked //p' "$tmp/check")
        echo "PASS $label ($((t1 - t0)) s): $checked"
    else
        fail=$((fail + 1))
        kept="$keep/$(printf '%s' "$label" | sed 's/[ =,]/_/g')"
        rm -rf "$kept"
        mkdir -p "$keep" && cp -r "$dir" "$kept"
        echo "FAIL $label (history exit $rc, checker exit $crc," \
            "$((t1 - t0)) s): $(grep -m1 '^  ' "$tmp/check" | cut -c3-)"
        echo "    histories kept in $kept"
        echo "    command: MPIKVS_VIRTUAL_NODES=${MPIKVS_VIRTUAL_NODES:-}" \
            "MPIKVS_TRANSPORT=${MPIKVS_TRANSPORT:-} MPIKVS_UCX_TLS=${MPIKVS_UCX_TLS:-}" \
            "OMPI_MCA_osc=$OMPI_MCA_osc $mpirun --oversubscribe -np $np" \
            "$prog $mode DIR --epochs $epochs --ops $run_ops --tier $tier${*:+ $*}" \
            "--seed $(sed -n 's/^seed //p' "$dir/rank-0.hist" 2>/dev/null)"
        sed 's/^/    /' "$tmp/out" | tail -20
        sed 's/^/    /' "$tmp/check"
    fi
    left=$(ls -A "$MPIKVS_SHM_DIR")
    if [ -n "$left" ]; then
        fail=$((fail + 1))
        echo "FAIL $label left in $MPIKVS_SHM_DIR: $left"
        rm -f "$MPIKVS_SHM_DIR"/*
    fi
}

run 1 lockfree auto "" off
# most operations on two keys with values of 2 KiB: copies that meet puts
# in the middle (the slot checksum's work)
run 1 lockfree auto "" off hot --value-size 2048 --hot 80 --hot-keys 2
run 1 fine-lock mpi "" off
run 1 fine-lock ucx "" off
run 1 coarse-lock mpi "" off
for vnodes in 2 3; do
    for mode in lockfree fine-lock; do
        run "$vnodes" "$mode" mpi "" off
        run "$vnodes" "$mode" ucx "" off
        run "$vnodes" "$mode" ucx tcp,self off
    done
    run "$vnodes" coarse-lock mpi "" off
done
run 2 lockfree ucx "" always
run 2 fine-lock mpi "" user
run 3 lockfree ucx tcp,self user
run 3 coarse-lock mpi "" always

echo "history: total time $(( $(date +%s) - start )) s"
echo "history: $pass passed, $fail failed"
[ "$fail" = 0 ]
