#!/bin/sh
#
# run-mpi-tests.sh - run the MPI tests of libmpikvs under mpirun.
#
# The matrix: np 1, 2, 3, 4 on one node and np 2, 4 with
# MPIKVS_VIRTUAL_NODES=2, each in the modes lockfree, fine-lock and
# coarse-lock, for every test program, over both transports
# (MPIKVS_TRANSPORT mpi and ucx; coarse-lock is MPI's only, and the
# lock-free mode on one node uses none); then the ucx transport over
# UCX_TLS=tcp,self, as across hosts without RDMA, the lock-free mode
# both with its keys shipped whole (the default there) and with
# MPIKVS_UCX_OPS=rma.  Each run has a hard time limit
# (MPITEST_TIMEOUT seconds, default 900); a run that times out fails.
# The limit is for hangs: in the lock modes and over the mpi transport
# every operation waits for the target rank's progress, so a run's time
# is its round trips times the scheduler's latency.  Beside two
# CPU-bound processes per core, test_areas in fine-lock mode at np 4
# took 288 s under osc pt2pt and 418 s under osc ucx (a few seconds on
# an idle machine).
# Prints one line per run, the output of each failed run, and a summary;
# exits nonzero on any failure, and also when a run left a file in the
# regions' directory: a private one under /dev/shm (MPIKVS_SHM_DIR), so
# that what other programs of the machine make or leave in /dev/shm is
# neither counted nor touched.  To show it, a leftover region of another
# user appears in /dev/shm during the runs (as a crashed job of theirs
# leaves one) and must be there, untouched, at the end.
#
# Environment: top_builddir (where tests/mpi/ holds the programs; default
# .), MPIRUN (default mpirun), MPITEST_TIMEOUT, MPITEST_VERBOSE=1 (print
# the output of every run), MPITEST_KEEP_SHM=1 (keep the mpikvs.* files
# a run left in /dev/shm; by default they are named, counted as a failure
# and removed), MPITEST_ONLY="test_getput test_batch" (a subset of the
# programs, each named by the API area it tests, or test_areas, four of
# them in one job), MPITEST_MODES,
# MPITEST_TORTURE_OPS (operations per rank of test_torture in lockfree
# mode; the lock modes get a tenth, at least 1000),
# MPITEST_TORTURE_LOCK_OPS (ops per rank of test_torture in the lock
# modes; overrides the tenth; the ucx pass takes a fifth of it, at least
# 1000).
#
# Open MPI on Debian: /etc/openmpi/openmpi-mca-params.conf excludes osc
# ucx and pt2pt, and the default osc rdma segfaults on atomics to the own
# rank, so every run of the mpi transport that needs an MPI window (the
# lock modes, and every run across virtual nodes) gets
# OMPI_MCA_osc=pt2pt; a last pass runs np=4 on 2 virtual nodes over
# OMPI_MCA_osc=ucx with UCX_TLS=^self.  The ucx transport runs with no
# one-sided setting at all.  Under MPICH (MPI_FAMILY=mpich) the osc=ucx
# pass is left out, and a run that needs a window is skipped, saying so,
# where MPICH starves a rank's one-sided operations
# (plain_mpirun_window_starves: np 4 on 2 cores).

LC_ALL=C
export LC_ALL
bindir="${top_builddir:-.}/tests/mpi"
mpirun="${MPIRUN:-mpirun}"
limit="${MPITEST_TIMEOUT:-900}"
cores=$(nproc 2>/dev/null) || cores=1
# test_areas is test_open, test_getput, test_batch and test_absent in one
# job (a job's start costs about a second; see test_areas.c)
programs="${MPITEST_ONLY:-test_areas test_tier test_torture}"
modes="${MPITEST_MODES:-lockfree fine-lock coarse-lock}"
torture_ops="${MPITEST_TORTURE_OPS:-250000}"
torture_lock_ops="${MPITEST_TORTURE_LOCK_OPS:-$((torture_ops / 10))}"
[ "$torture_lock_ops" -ge 1000 ] 2>/dev/null || torture_lock_ops=1000

if ! command -v "$mpirun" >/dev/null 2>&1; then
    echo "FAIL: $mpirun not found" >&2
    exit 1
fi
if ! command -v timeout >/dev/null 2>&1; then
    echo "FAIL: timeout(1) not found" >&2
    exit 1
fi
for p in $programs; do
    if [ ! -x "$bindir/$p" ]; then
        echo "FAIL: $bindir/$p is missing (make check builds it)" >&2
        exit 1
    fi
done

. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
asan=0
plain_mpirun_asan "$bindir/test_areas" && asan=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-mpitests.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# the files in the runs' private regions directory, one a line: every
# one is a run's (the directory is this script's alone)
plain_mpirun_shm mpitests
trap 'rm -rf "$tmp" "$MPIKVS_SHM_DIR"; rm -f "$decoy"' EXIT
shm_list() { ls -A "$MPIKVS_SHM_DIR"; }
: >"$tmp/shm-left"

# another user's region left in /dev/shm by a job that died: planted
# after the first run (so it is new during the runs), never ours to count
# or remove.  Its maker's pid, 0x3ffffff, is above any pid_max.
# (Not root: the leftover is our own, which the runs must leave alone too.)
decoy=/dev/shm/mpikvs.u3ffffff-$$.decoy.node0.t
decoy_user=$(id -un) as_decoy_user=
if [ "$(id -u)" = 0 ]; then
    decoy_user=nobody as_decoy_user="runuser -u nobody --"
fi
plant_decoy() {
    [ -e "$decoy" ] && return 0
    $as_decoy_user sh -c "umask 022; echo leftover >'$decoy'" ||
        { echo "FAIL: cannot plant $decoy as $decoy_user"; fail=$((fail + 1)); }
}

pass=0
fail=0
skip=0
start=$(date +%s)

# run NP VNODES MODE PROGRAM [ARGS...]
run() {
    np=$1 vnodes=$2 mode=$3 prog=$4
    shift 4
    args="$*"   # the label's, test_tier's --value-size
    set -- "$bindir/$prog" "$mode" "$@"
    xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR"
    unset OMPI_MCA_osc MPIKVS_VIRTUAL_NODES UCX_TLS MPIKVS_TRANSPORT \
        MPIKVS_UCX_OPS MPIKVS_UCX_TLS
    if [ "$vnodes" -gt 1 ]; then
        MPIKVS_VIRTUAL_NODES=$vnodes
        export MPIKVS_VIRTUAL_NODES
        xs="$xs -x MPIKVS_VIRTUAL_NODES"
    fi
    if [ -n "$tp" ]; then
        MPIKVS_TRANSPORT=$tp
        export MPIKVS_TRANSPORT
        xs="$xs -x MPIKVS_TRANSPORT"
    fi
    if [ -n "$ucx_tls" ]; then
        MPIKVS_UCX_TLS=$ucx_tls
        export MPIKVS_UCX_TLS
        xs="$xs -x MPIKVS_UCX_TLS"
    fi
    if [ -n "$ucx_ops" ]; then
        MPIKVS_UCX_OPS=$ucx_ops
        export MPIKVS_UCX_OPS
        xs="$xs -x MPIKVS_UCX_OPS"
    fi
    # the ucx transport needs no one-sided component, but test_open
    # opens the mpi transport too
    if [ "$vnodes" -gt 1 ] || [ "$mode" != lockfree ]; then
        OMPI_MCA_osc=$osc
        export OMPI_MCA_osc
        xs="$xs -x OMPI_MCA_osc"
        if [ "$osc" = ucx ]; then
            # UCX's self transport breaks atomics on the own rank
            UCX_TLS='^self'
            export UCX_TLS
            xs="$xs -x UCX_TLS"
        fi
    fi
    [ "$asan" = 1 ] && xs="$xs -x ASAN_OPTIONS"
    # the watchdog inside the programs fires before the hard limit, so a
    # hang names its phase
    MPITEST_WATCHDOG=$((limit > 20 ? limit - 10 : limit))
    export MPITEST_WATCHDOG
    xs="$xs -x MPITEST_WATCHDOG"

    label="np=$np vnodes=$vnodes mode=$mode transport=${tp:-auto}"
    label="$label osc=$osc"
    [ -n "$ucx_tls" ] && label="$label MPIKVS_UCX_TLS=$ucx_tls"
    [ -n "$ucx_ops" ] && label="$label MPIKVS_UCX_OPS=$ucx_ops"
    label="$label $prog${args:+ $args}"
    if { [ "$tp" = mpi ] || [ "$mode" = coarse-lock ]; } &&
        plain_mpirun_window_starves "$np"; then
        skip=$((skip + 1))
        echo "SKIP $label: MPICH starves one-sided operations at np=$np" \
            "on $(nproc) cores (tests/plain-mpirun.sh)"
        return
    fi
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs "$@" \
        >"$tmp/out" 2>&1 </dev/null
    rc=$?
    t1=$(date +%s)
    if [ "$rc" = 0 ]; then
        pass=$((pass + 1))
        echo "PASS $label ($((t1 - t0)) s)"
        [ "${MPITEST_VERBOSE:-0}" = 1 ] && sed 's/^/    /' "$tmp/out"
    else
        fail=$((fail + 1))
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            echo "FAIL $label (timed out after $limit s, exit $rc)"
        else
            echo "FAIL $label (exit $rc, $((t1 - t0)) s)"
        fi
        envs="OMPI_MCA_btl=$OMPI_MCA_btl"
        [ "$vnodes" -gt 1 ] && envs="$envs MPIKVS_VIRTUAL_NODES=$vnodes"
        [ -n "${MPIKVS_TRANSPORT:-}" ] && envs="$envs MPIKVS_TRANSPORT=$MPIKVS_TRANSPORT"
        [ -n "${OMPI_MCA_osc:-}" ] && envs="$envs OMPI_MCA_osc=$OMPI_MCA_osc"
        [ -n "${UCX_TLS:-}" ] && envs="$envs UCX_TLS='$UCX_TLS'"
        [ -n "${MPIKVS_UCX_TLS:-}" ] && envs="$envs MPIKVS_UCX_TLS='$MPIKVS_UCX_TLS'"
        [ -n "${MPIKVS_UCX_OPS:-}" ] && envs="$envs MPIKVS_UCX_OPS=$MPIKVS_UCX_OPS"
        [ "$asan" = 1 ] && envs="$envs ASAN_OPTIONS=$ASAN_OPTIONS"
        echo "    command: $envs $mpirun --oversubscribe -np $np $xs $*"
        sed 's/^/    /' "$tmp/out"
    fi
    # files this run left behind (a killed run always does): name them,
    # count them in the summary, and remove them so that the next run
    # starts clean (MPITEST_KEEP_SHM=1 keeps them, and counts them once)
    new=$(shm_list | grep -vxF -f "$tmp/shm-left")
    if [ -n "$new" ]; then
        echo "    left in $MPIKVS_SHM_DIR after this run: $(echo "$new" | tr '\n' ' ')"
        echo "$new" >>"$tmp/shm-left"
        if [ "${MPITEST_KEEP_SHM:-0}" != 1 ]; then
            for f in $new; do
                rm -f "${MPIKVS_SHM_DIR:?}/$f"
            done
        fi
    fi
    plant_decoy
}

# run_programs NP VNODES MODE: every program, with $tp, $osc, $ucx_tls.
# Over ucx the torture does a fifth of the operations: each remote one
# waits for the target node's progress helper, a thread that four ranks
# on two cores leave little room (25 to 45 s for the full count at np=4).
# So do the lock modes over the mpi transport with more ranks than
# cores: each locked operation waits for the target rank itself to run
# (osc pt2pt), about 10 ms beside two busy processes per core, where
# the full count at np 3 took 292 s.  The full count runs at np 1 and 2.
run_programs() {
    for prog in $programs; do
        case $prog in
        test_torture)
            if [ "$3" = lockfree ]; then ops=$torture_ops
            else ops=$lock_ops; fi
            if [ "$tp" = ucx ] ||
                { [ "$3" != lockfree ] && [ "$tp" = mpi ] &&
                  [ "$1" -gt "$cores" ]; }; then
                ops=$((ops / 5))
                [ "$ops" -ge 1000 ] || ops=1000
            fi
            run "$1" "$2" "$3" "$prog" --ops "$ops" ;;
        *)
            run "$1" "$2" "$3" "$prog" ;;
        esac
    done
}

# The transports a mode runs over: coarse-lock is MPI's only.  On one
# node the lock-free mode uses no transport at all: one run (auto).
transports_of() {
    if [ "$1" = coarse-lock ]; then echo mpi
    elif [ "$1" = lockfree ] && [ "$2" = 1 ]; then echo auto
    else echo "mpi ucx"; fi
}

osc=pt2pt
ucx_tls=
ucx_ops=
lock_ops=$torture_lock_ops
for vnodes in 1 2; do
    if [ "$vnodes" = 1 ]; then nps="1 2 3 4"; else nps="2 4"; fi
    for np in $nps; do
        for mode in $modes; do
            for tp in $(transports_of "$mode" "$vnodes"); do
                [ "$tp" = auto ] && tp=
                run_programs "$np" "$vnodes" "$mode"
            done
        done
    done
done

# Values of 1 MiB, the largest, through the node tier (test_tier
# --value-size alone runs its large phase): across 2 virtual nodes over
# each transport, mapped and over TCP, in the lock-free and a lock mode.
if echo " $programs " | grep -q ' test_tier '; then
    for mode in lockfree fine-lock; do
        echo " $modes " | grep -q " $mode " || continue
        for tp in mpi ucx; do
            run 2 2 "$mode" test_tier --value-size 1048576
        done
    done
    tp=ucx
    ucx_tls=tcp,self
    run 2 2 lockfree test_tier --value-size 1048576
    ucx_tls=
fi

# The ucx transport as across hosts without RDMA: TCP only.  (With
# shared memory, as above, it maps a node of the same host and needs no
# UCX to reach it; this is its UCX path.)  There the lock-free mode ships
# its keys whole to their node (MPIKVS_UCX_OPS=auto); a second pass
# reads buckets and writes slots instead, the path of RDMA networks.
tp=ucx
ucx_tls=tcp,self
for np in 2 4; do
    for mode in $modes; do
        [ "$mode" = coarse-lock ] && continue
        run_programs "$np" 2 "$mode"
        if [ "$mode" = lockfree ]; then
            ucx_ops=rma
            run_programs "$np" 2 "$mode"
            ucx_ops=
        fi
    done
done
ucx_tls=

# The other one-sided component Open MPI offers, across virtual nodes,
# under the mpi transport.  Its passive-target locks over TCP are
# emulated with messages that the lock holder must progress; four ranks
# on two cores made 25000 locked operations per rank take 55 to 110 s
# under load: np 4 on two cores, the torture does a fifth of them
# (run_programs), as at np 3 and 4 in the pt2pt pass above.
tp=mpi
osc=ucx
if [ "${MPI_FAMILY:-openmpi}" = openmpi ]; then
    for mode in $modes; do
        run_programs 4 2 "$mode"
    done
else
    echo "SKIP the osc=ucx pass: a component of Open MPI's, not of $MPI_FAMILY"
fi

if [ -s "$tmp/shm-left" ]; then
    fail=$((fail + 1))
    echo "FAIL the runs left files in $MPIKVS_SHM_DIR: $(sort -u "$tmp/shm-left" | tr '\n' ' ')"
fi
if [ "$(cat "$decoy" 2>/dev/null)" = leftover ] &&
    [ "$(stat -c %U "$decoy")" = "$decoy_user" ]; then
    pass=$((pass + 1))
    echo "PASS another user's leftover region in /dev/shm was left alone"
else
    fail=$((fail + 1))
    echo "FAIL another user's leftover region $decoy was removed or changed"
fi

echo "mpi: total time $(( $(date +%s) - start )) s"
echo "mpi: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
