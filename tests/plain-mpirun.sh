# plain-mpirun.sh - sourced (POSIX sh) by the tests that start plain
# mpirun jobs, outside Slurm, so that they all set them up alike.
#
#   plain_mpirun_env     nothing of a surrounding Slurm job or shell
#       (MPIKVS_*) may choose the jobs' nodes, config or regions; as
#       root, Open MPI's consent to run as root; OMPI_MCA_btl exported
#       (self,vader,tcp: tcp is what two virtual nodes talk over).
#   plain_mpirun_prog NAME   the program tests/mpi/NAME of a script that
#       runs one: sets prog, mpirun (MPIRUN, default mpirun) and limit
#       (MPITEST_TIMEOUT, default 120 s) and exports MPITEST_WATCHDOG
#       (10 s less); exits 1 saying why when mpirun or the program is
#       missing.
#   plain_mpirun_asan PROGRAM   true when PROGRAM, a libtool wrapper or
#       the binary itself, is a sanitizer build; then ASAN_OPTIONS gets
#       detect_leaks=0 and is exported: what MPI keeps until exit is not
#       ours to judge.
#   plain_mpirun_scratch NAME   a scratch directory in tmp and the jobs'
#       regions in a directory of their own, MPIKVS_SHM_DIR (exported),
#       both named after NAME and removed when the script exits.
#   plain_mpirun_route PATH   the environment and $xs (exported to
#       the ranks, with $asan_x) of a job of 2 virtual nodes that reach
#       each other by PATH: mapped (ucx over shared memory, the other
#       node's region mapped), shipped (ucx with UCX_TLS=tcp,self, as
#       across hosts without RDMA: keys shipped to the node's serving
#       thread), rma (the same network, buckets read and slots written
#       by UCX's RMA: MPIKVS_UCX_OPS=rma) or mpi (the mpi transport, Open
#       MPI's osc pt2pt).
#   plain_mpirun_tally   pass=0 and fail=0, counted by ok and by
#       bad MESSAGE [FILE] (prints FAIL MESSAGE, and FILE indented).
#   plain_mpirun_window_starves NP   true where this MPI is known to
#       starve one-sided operations at NP ranks on this machine (below).
#   plain_mpirun_death FILE RANK   the launcher's words that the rank
#       was killed; plain_mpirun_survives_death: whether the others
#       outlive it (below).

plain_mpirun_env() {
    for v in $(env | sed -n 's/^\(MPIKVS_[A-Za-z0-9_]*\)=.*/\1/p'); do
        unset "$v"
    done
    if [ "$(id -u)" = 0 ]; then
        OMPI_ALLOW_RUN_AS_ROOT=1
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
    fi
    OMPI_MCA_btl=self,vader,tcp
    export OMPI_MCA_btl
}

plain_mpirun_route() {
    unset UCX_TLS MPIKVS_TRANSPORT MPIKVS_UCX_TLS MPIKVS_UCX_OPS OMPI_MCA_osc
    OMPI_MCA_btl=self,vader,tcp
    xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
    xs="$xs -x MPIKVS_VIRTUAL_NODES ${asan_x:-}"
    case $1 in
    mapped)
        MPIKVS_TRANSPORT=ucx
        export MPIKVS_TRANSPORT
        xs="$xs -x MPIKVS_TRANSPORT" ;;
    shipped)
        UCX_TLS=tcp,self OMPI_MCA_btl=self,tcp MPIKVS_TRANSPORT=ucx
        export UCX_TLS MPIKVS_TRANSPORT
        xs="$xs -x UCX_TLS -x MPIKVS_TRANSPORT" ;;
    rma)
        MPIKVS_UCX_TLS=tcp,self OMPI_MCA_btl=self,tcp MPIKVS_TRANSPORT=ucx
        MPIKVS_UCX_OPS=rma
        export MPIKVS_UCX_TLS MPIKVS_TRANSPORT MPIKVS_UCX_OPS
        xs="$xs -x MPIKVS_UCX_TLS -x MPIKVS_TRANSPORT -x MPIKVS_UCX_OPS" ;;
    mpi)
        MPIKVS_TRANSPORT=mpi OMPI_MCA_osc=pt2pt
        export MPIKVS_TRANSPORT OMPI_MCA_osc
        xs="$xs -x MPIKVS_TRANSPORT -x OMPI_MCA_osc" ;;
    esac
    export OMPI_MCA_btl
}

plain_mpirun_asan() {
    # ldd of a libtool wrapper script says nothing: look at the binary
    pm_real="$(dirname "$1")/.libs/$(basename "$1")"
    [ -x "$pm_real" ] || pm_real=$1
    ldd "$pm_real" 2>/dev/null | grep -q asan || return 1
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export ASAN_OPTIONS
}

plain_mpirun_prog() {
    prog="${top_builddir:-.}/tests/mpi/$1"
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
    MPITEST_WATCHDOG=$((limit > 20 ? limit - 10 : limit))
    export MPITEST_WATCHDOG
}

# The bench scripts' start: $bench (mpikvs-bench), $mpirun and $limit
# (MPITEST_TIMEOUT, default 120 s); without mpirun the script is skipped
# (77), without mpikvs-bench it fails.
plain_mpirun_bench() {
    bench="${top_builddir:-.}/mpikvs-bench/mpikvs-bench"
    mpirun="${MPIRUN:-mpirun}"
    limit="${MPITEST_TIMEOUT:-120}"
    if ! command -v "$mpirun" >/dev/null 2>&1; then
        echo "SKIP: $mpirun not found"
        exit 77
    fi
    if [ ! -x "$bench" ]; then
        echo "FAIL: $bench is missing (make builds it)"
        exit 1
    fi
}

plain_mpirun_scratch() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-$1.XXXXXX") || exit 1
    MPIKVS_SHM_DIR=$(mktemp -d "/dev/shm/kv$1.XXXXXX") || exit 1
    export MPIKVS_SHM_DIR
    trap 'rm -rf "$tmp" "$MPIKVS_SHM_DIR"' EXIT
    trap 'exit 130' INT TERM
}

# A private shm directory for the regions of the runs, removed at exit;
# plain_mpirun_left counts a region left in it as a failure.
plain_mpirun_shm() {
    MPIKVS_SHM_DIR=$(mktemp -d "/dev/shm/mpikvs-$1.XXXXXX") || exit 1
    export MPIKVS_SHM_DIR
    trap 'rm -rf "$MPIKVS_SHM_DIR"' EXIT
    trap 'exit 130' INT TERM
}

plain_mpirun_left() {
    pm_left=$(ls -A "$MPIKVS_SHM_DIR")
    if [ -n "$pm_left" ]; then
        echo "FAIL left in $MPIKVS_SHM_DIR: $pm_left"
        fail=$((fail + 1))
    fi
}

# plain_mpirun_run NAME NP ARGS...: $prog ARGS on NP ranks with the
# exported $xs, within $limit seconds; PASS or FAIL NAME, counted in fail.
plain_mpirun_run() {
    pm_name=$1 pm_np=$2
    shift 2
    # shellcheck disable=SC2086
    if timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np "$pm_np" \
        "$prog" "$@" </dev/null; then
        echo "PASS $pm_name"
    else
        echo "FAIL $pm_name"
        fail=$((fail + 1))
    fi
}

# plain_mpirun_window_starves NP: true when this MPI is known to starve
# a rank's one-sided operations on a window of MPI_Win_create memory at NP
# ranks on this machine's cores.  MPICH 4.0 (ch4:ucx; MPI_FAMILY mpich)
# serves them as active messages in the target's progress loop, which
# does not yield: with more than one rank beyond the cores, one rank's
# MPI_Fetch_and_op + MPI_Win_flush took 7.8 ms where the others' took
# 1-6 us (np 4 on 2 cores, a plain MPI program; mpikvs(7), MPI
# IMPLEMENTATIONS).  Open MPI's progress yields when oversubscribed.
plain_mpirun_window_starves() {
    [ "${MPI_FAMILY:-openmpi}" = mpich ] &&
        [ "$1" -gt $(($(nproc) + 1)) ]
}

# plain_mpirun_death FILE RANK: the launcher's words in FILE (the job's
# output) that rank RANK was killed by SIGKILL; false if there are none.
# Open MPI's mpirun names the rank; hydra names the pid of one process
# it saw end, not always the killed one's, so there the words are that a
# process of the job ended by SIGKILL.
plain_mpirun_death() {
    case ${MPI_FAMILY:-openmpi} in
    openmpi) grep -o "process rank $2 .*exited on signal 9.*" "$1" ;;
    *) grep -q 'EXIT CODE: 9' "$1" && echo "hydra: EXIT CODE: 9" ;;
    esac
}

# plain_mpirun_survives_death: whether the ranks of a job outlive a rank
# killed beside them (Open MPI's mpirun --enable-recovery), so that what
# they do afterwards can be asserted.  Not under MPICH 4.0 (ch4:ucx):
# hydra's -disable-auto-cleanup keeps them only until MPICH's UCX error
# handling aborts the job ("Abort(1) ... Internal error"), which in the
# tests came within milliseconds of the death, at a point of its choosing.
# Prints why not, for a SKIP line.
plain_mpirun_survives_death() {
    [ "${MPI_FAMILY:-openmpi}" = openmpi ] && return 0
    echo "under $MPI_FAMILY the survivors of a killed rank are aborted soon after (tests/plain-mpirun.sh)"
    return 1
}

# ok and bad are defined here only: the scripts that source this file
# and count otherwise keep their own
plain_mpirun_tally() {
    pass=0
    fail=0
    ok() { pass=$((pass + 1)); }
    bad() {
        echo "FAIL $1"
        [ -n "$2" ] && sed 's/^/    /' "$2"
        fail=$((fail + 1))
    }
}
