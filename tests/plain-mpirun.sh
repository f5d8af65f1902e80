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
#   plain_mpirun_tally   pass=0 and fail=0, counted by ok and by
#       bad MESSAGE [FILE] (prints FAIL MESSAGE, and FILE indented).

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
