# checks.sh - what the Slurm test scripts share: their preconditions and
# their checks.  Source it from bash with top_builddir and top_srcdir set.
#
#   slurm_test_needs CMD...   exit 77 (SKIP, saying why) without root,
#       without the Slurm daemons and commands or one of CMD, or when the
#       plugin is a sanitizer build (slurmstepd cannot load it); exit 1
#       when the plugin was not built.  Sets build and plugin.
#   check NAME COND-COMMAND...  "ok: NAME" if the command succeeds, else
#       "FAIL: NAME"; counted in passed and failed.
#   has TEXT PATTERN, lacks TEXT PATTERN   grep in a string.
#   batch_job OUTFILE LIMIT CMD...   run CMD, an sbatch command line
#       whose job writes OUTFILE (-o), and wait up to LIMIT s for the job
#       in the cluster at $dir; sets job, state (its end state) and out
#       (what the job wrote).
#   wait_no_jobs              wait (bounded) until the queue is empty,
#       jobs completing (epilogs running) included.
#   node_states               "node state ..." of every node on one line;
#       nothing if sinfo fails, so a check on it never passes on nothing.
#   checks_done NAME          print "NAME: P passed, F failed"; status 0
#       only when nothing failed.

skip() { echo "SKIP: $*"; exit 77; }

slurm_test_needs() {
    build=$(cd "$top_builddir" && pwd)
    plugin=$build/spank/.libs/spank_mpikvs.so
    [ "$(id -u)" = 0 ] || skip "the test cluster's daemons need root"
    for d in slurmctld slurmd munged srun sbatch "$@"; do
        command -v "$d" >/dev/null 2>&1 ||
            PATH=$PATH:/usr/sbin command -v "$d" >/dev/null 2>&1 ||
            skip "$d is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    done
    PATH=$PATH:/usr/sbin
    [ -f "$plugin" ] || { echo "FAIL: $plugin was not built"; exit 1; }
    if nm -D "$plugin" | grep -q __asan_init; then
        skip "a sanitizer build of the plugin cannot load into slurmstepd"
    fi
}

passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# check NAME COMMAND...: a failure also shows the last command output
# the checks look at ($out), so that CI's log says what went wrong
check() {
    local name=$1
    shift
    if "$@"; then
        ok "$name"
    else
        fail "$name"
        [ -n "${out:-}" ] && printf '%s\n' "$out" | head -n 30 | sed 's/^/    | /'
    fi
    return 0
}
has() { grep -q -- "$2" <<<"$1"; }
lacks() { ! grep -q -- "$2" <<<"$1"; }

batch_job() {
    local outfile=$1 limit=$2
    shift 2
    out=$("$@" 2>&1)
    job=$(sed -n 's/^Submitted batch job //p' <<<"$out")
    state=$(cluster_wait_job "$dir" "$job" "$limit")
    out=$(cat "$outfile" 2>&1)
}

wait_no_jobs() {
    local q
    for _ in $(seq 300); do
        q=$(squeue -h -o %i 2>&1) && [ -z "$q" ] && return 0
        sleep 0.2
    done
    echo "still queued: $q"
    return 1
}

node_states() { sinfo -h -N -o '%N %t' 2>/dev/null | sort | xargs; }

checks_done() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" = 0 ]
}
