#!/bin/bash
# run-stat-tests.sh - mpikvs-stat against regions that libmpikvs makes
# under plain mpirun (MPIKVS_VIRTUAL_NODES=2 for two nodes in one run),
# and against regions made by the shm core directly (a Slurm job's
# regions, a tier with entries, damaged and foreign files).
#
# Everything happens in a private shm directory (MPIKVS_SHM_DIR) that is
# removed at the end; no other region is looked at or touched.  Every
# mpirun is bounded (STAT_TEST_TIMEOUT seconds, default 120).  The checks
# that run mpikvs-stat as another user (permission denied, --gc refused)
# need root and the user mpikvstest (made with useradd if missing); as
# another user they are skipped, saying so.  Exit 0 when every check
# passed, 1 otherwise.
set -u
# cond 'EXPR' evaluates its single-quoted EXPR when the check runs
# shellcheck disable=SC2016

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/stat/common.sh"

limit=${STAT_TEST_TIMEOUT:-120}
# what the transport auto resolves to in the lock-free mode: ucx in a
# library built with UCX, else mpi
if grep -q "^#define HAVE_UCX 1" "${top_builddir:-.}/config.h" 2>/dev/null; then
    auto_tp=ucx
else
    auto_tp=mpi
fi
for p in "$stat_bin" "$stat_job" "$stat_region" "$json_get"; do
    [ -x "$p" ] || { echo "FAIL: $p is missing (make check builds it)"; exit 1; }
done
mpirun=${MPIRUN:-mpirun}
command -v "$mpirun" >/dev/null 2>&1 || { echo "FAIL: $mpirun not found"; exit 1; }

. "$top_srcdir/tests/plain-mpirun.sh"
plain_mpirun_env
# two virtual nodes need a window: Debian excludes osc pt2pt by default
export OMPI_MCA_osc=pt2pt
# a sanitizer build: the jobs end without freeing what MPI keeps (and
# --leak on purpose), so they run without leak checks; mpikvs-stat
# keeps them
job_asan=""
if stat_asan; then
    job_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

shm=$(mktemp -d /dev/shm/mpikvs-stat-tests.XXXXXX) || exit 1
chmod 1777 "$shm"                 # like /dev/shm: any user may look
work=$(mktemp -d /tmp/mpikvs-stat-tests.XXXXXX) || exit 1
chmod 755 "$work"
export MPIKVS_SHM_DIR=$shm
started=""
cleanup() {
    for pid in $started; do
        kill "$pid" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$shm" "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# job NP VNODES ARGS...: stat_job under mpirun, bounded in time
job() {
    local np=$1 vnodes=$2 layout=()
    shift 2
    # a step of a job the plugin set up (Open MPI warns of -x of an
    # unset variable)
    [ -n "${MPIKVS_LAYOUT:-}" ] && layout=(-x MPIKVS_LAYOUT)
    if [ -n "$job_asan" ]; then
        set -- -x ASAN_OPTIONS "$stat_job" "$@"
    else
        set -- "$stat_job" "$@"
    fi
    ASAN_OPTIONS=$job_asan MPIKVS_VIRTUAL_NODES=$vnodes \
        timeout -k 10 "$limit" \
        "$mpirun" --oversubscribe -np "$np" -x MPIKVS_SHM_DIR \
        -x MPIKVS_VIRTUAL_NODES "${layout[@]}" \
        -x OMPI_MCA_btl -x OMPI_MCA_osc \
        "$@" </dev/null
}

# jobs_in_dir: the job ids of the regions of the private dir, as
# mpikvs-stat lists them: a running job's regions have no name there
# (libmpikvs unlinks them at open), mpikvs-stat finds them through the
# ranks that hold them
jobs_in_dir() {
    "$stat_bin" -d "$shm" --slurm-timeout 0 |
        sed -n '3,$s/^\([^ ]*\) .*/\1/p' | sort -u
}

user=""
if [ "$(id -u)" = 0 ]; then
    user=mpikvstest
    if ! getent passwd "$user" >/dev/null; then
        useradd -m -s /bin/sh -c 'mpikvs tests' "$user" ||
            { echo "FAIL: cannot create $user"; exit 1; }
    fi
fi
as_user() { runuser -u "$user" -- "$@"; }

echo "# an empty directory, usage and bad arguments"
expect "empty dir: says so" 0 "no mpikvs regions in $shm" -- "$stat_bin" -d "$shm"
out=$(MPIKVS_SHM_DIR=$shm "$stat_bin" 2>&1)
check "MPIKVS_SHM_DIR chooses the directory" has_fixed "$out" "no mpikvs regions in $shm"
out=$("$stat_bin" -d "$shm" --json)
check "empty dir, --json: no regions" [ "$(jget regions.# <<<"$out")" = 0 ]
check "empty dir, --json: names the dir" [ "$(jget shm_dir <<<"$out")" = "$shm" ]
out=$("$stat_bin" -d "$shm" --watch 0.1 --count 3 2>&1)
check "--watch --count 3 of the listing: three printings" \
    [ "$(grep -c "^no mpikvs regions in $shm" <<<"$out")" = 3 ]
out=$("$stat_bin" -d "$shm" --json --watch 0.1 --count 2)
check "--json --watch: one document a line" \
    cond '[ "$(wc -l <<<"$out")" = 2 ] && [ "$(jget regions.# <<<"$out")" = "0
0" ]'
expect "a missing directory" 1 \
    "cannot read the shm directory $work/none: No such file or directory" -- \
    "$stat_bin" -d "$work/none"
expect "no such job" 1 "no regions of job 12345 in $shm" -- "$stat_bin" -d "$shm" 12345
expect "no such region" 1 "no region mpikvs.1.n1.kvs-data in $shm" -- \
    "$stat_bin" -d "$shm" mpikvs.1.n1.kvs-data
expect "--help" 0 "Usage: mpikvs-stat [OPTIONS]" -- "$stat_bin" --help
expect "--version" 0 "mpikvs-stat " -- "$stat_bin" --version
expect "unknown option" 2 "unknown option '--frob'" -- "$stat_bin" --frob
expect "missing value" 2 "option '--watch' needs a value" -- "$stat_bin" --watch
expect "--dry-run without --gc" 2 "--dry-run goes with --gc" -- "$stat_bin" --dry-run
expect "--gc with a job" 2 "--gc looks at every region" -- "$stat_bin" --gc 12
expect "--gc with --json" 2 "--gc prints text once" -- "$stat_bin" --gc --json
expect "--watch 0" 2 "--watch: '0' is not a number of seconds" -- "$stat_bin" --watch 0 12
expect "--watch junk" 2 "--watch: '2s' is not a number of seconds" -- "$stat_bin" --watch 2s
expect "--count without --watch" 2 "--count goes with --watch" -- "$stat_bin" --count 3
expect "--slurm-timeout junk" 2 "--slurm-timeout: '-1' is not a whole number" -- \
    "$stat_bin" --slurm-timeout -1
expect "a bad job id" 2 "'a.b!' is neither a job id nor a region name" -- "$stat_bin" 'a.b!'
expect "two targets" 2 "takes one JOBID or REGION, not also '13'" -- "$stat_bin" 12 13

echo "# a job's counters move while it runs, and its output stays the same"
# a table big enough that no key is ever evicted: the output must not
# depend on timing
args=(--rounds 80 --keys 25 --size 16777216)
baseline=$(job 4 2 "${args[@]}" 2>&1)
check "the unwatched run works: $baseline" has "$baseline" "^stat_job: ranks 4 rounds 80: hits 32000 misses 8000 wrong 0 "
check "the unwatched run left no region" [ -z "$(ls -A "$shm")" ]
job 4 2 "${args[@]}" --pause-ms 50 --ready "$work/ready" >"$work/watched.out" 2>&1 &
started="$started $!"
if ! wait_for 60 test -e "$work/ready"; then
    fail "the watched job did not start: $(cat "$work/watched.out")"
else
    jobid=$(jobs_in_dir)
    check "the watched job's regions, of one job ($jobid)" \
        cond '[ -n "$jobid" ] && [ "$(wc -l <<<"$jobid")" = 1 ]'
    "$stat_bin" -d "$shm" --json --watch 0.3 --count 4 "$jobid" \
        >"$work/watch.json" 2>"$work/watch.err"
    rc=$?
    text=$("$stat_bin" -d "$shm" "$jobid" 2>&1)
    text_rc=$?
    "$stat_bin" -d "$shm" --no-scan --watch 0.1 --count 2 "$jobid" \
        >"$work/watch.text" 2>&1
    listing=$("$stat_bin" -d "$shm" 2>&1)
    wait
    started=""
    watched=$(cat "$work/watched.out")
    docs=$(jget job <"$work/watch.json" | wc -l)
    check "--watch --count 4 printed 4 reports (exit $rc: $(cat "$work/watch.err"))" \
        cond '[ "$rc" = 0 ] && [ "$docs" = 4 ]'
    check "each report: the job is alive, mapped by its ranks" \
        [ "$(jget job_state <"$work/watch.json" | sort -u)" = alive ]
    check "each report: two nodes" \
        [ "$(jget nodes.# <"$work/watch.json" | sort -u)" = 2 ]
    gets=$(watched_gets "$work/watch.json")
    check "the gets move while the job runs:$gets" gets_move $gets
    last=$(tail -n 1 "$work/watch.json")
    remote=$(sum_of nodes.0.tables.0.counters.dht.node.remote \
        nodes.1.tables.0.counters.dht.node.remote <<<"$last")
    direct=$(sum_of nodes.0.tables.0.counters.dht.node.direct \
        nodes.1.tables.0.counters.dht.node.direct <<<"$last")
    check "gets go direct ($direct) and remote ($remote) across 2 nodes" \
        cond '[ "$direct" -gt 0 ] && [ "$remote" -gt 0 ]'
    check "no key was evicted" [ "$(sum_of nodes.0.tables.0.counters.dht.node.evictions \
        nodes.1.tables.0.counters.dht.node.evictions <<<"$last")" = 0 ]
    check "each node shows its 2 ranks" \
        [ "$(jget nodes.0.tables.0.counters.dht.ranks.# <<<"$last")" = 2 ]
    mpi_ranks=$(for n in 0 1; do for r in 0 1; do
        jget "nodes.$n.tables.0.counters.dht.ranks.$r.mpi_rank" <<<"$last"
    done; done)
    check "the rows name the MPI ranks 0-3 of the 2 nodes: $(xargs <<<"$mpi_ranks")" \
        [ "$(sort -n <<<"$mpi_ranks" | xargs)" = "0 1 2 3" ]
    r0=$(jget nodes.0.tables.0.counters.dht.ranks.0.mpi_rank <<<"$last")
    r1=$(jget nodes.0.tables.0.counters.dht.ranks.1.mpi_rank <<<"$last")
    check "a node's ranks are consecutive MPI ranks, in their local order ($r0 $r1)" \
        cond '[[ $r0 =~ ^[0-9]+$ ]] && [ "$r1" = $((r0 + 1)) ]'
    total=$(jget totals.0.counters.dht.gets <<<"$last")
    check "the job's total sums the 2 nodes' gets ($total)" cond '
        [ "$(jget totals.# <<<"$last")" = 1 ] &&
        [ "$(jget totals.0.nnodes <<<"$last")" = 2 ] &&
        [ "$(jget totals.0.table <<<"$last")" = kvs ] &&
        [ "$total" = "$(sum_of nodes.0.tables.0.counters.dht.node.gets \
            nodes.1.tables.0.counters.dht.node.gets <<<"$last")" ]'
    moved=$(jget totals.0.counters.transfer.moved <<<"$last")
    check "the job's remote gets moved bytes and copied values ($moved)" cond '
        [ "$moved" -gt 0 ] &&
        [ "$(jget totals.0.counters.transfer.copies <<<"$last")" -gt 0 ] ||
        [ "$(jget totals.0.counters.dht.remote <<<"$last")" = 0 ]'
    why=$(rates_agree "$work/watch.json")
    check "--watch --json: rates per second of each interval, none in the first report $why" \
        [ -z "$why" ]
    rates=$(tail -n +2 "$work/watch.json" | jget totals.0.rates.dht.gets | xargs)
    check "the rates move while the job runs: $rates" \
        awk -v r="$rates" 'BEGIN { n = split(r, a, " "); for (i = 1; i <= n; i++) if (a[i] > 0) exit 0; exit 1 }'
    check "text: a rank's MPI rank and its place on the node" \
        has "$text" "^ *rank  *local  *gets  *hits"
    check "text: MPI rank 3 is the second rank of its node" has "$text" "^ *3  *1  *[0-9]"
    check "text: the job's total of the table over both nodes" cond '
        has "$text" "^job total of table kvs: 2 nodes$" &&
        has "$text" "^ *job  *[0-9]"'
    slots=$(jget nodes.0.tables.0.occupancy.slots <<<"$last")
    counted=$(sum_of nodes.0.tables.0.occupancy.used \
        nodes.0.tables.0.occupancy.invalid \
        nodes.0.tables.0.occupancy.unverified \
        nodes.0.tables.0.occupancy.free <<<"$last")
    check "occupancy counts every slot once ($counted of $slots)" [ "$counted" = "$slots" ]
    check "the text report while it runs (exit $text_rc)" [ "$text_rc" = 0 ]
    check "text: the table and its config" \
        has "$text" "config:    16-byte keys, 32-byte values; 4 slots of 56 B per bucket"
    check "text: the occupancy" has "$text" "occupancy: [0-9]* slots: [0-9]* used"
    check "text: the transport its ranks opened with (auto resolved)" \
        has "$text" "^    transport: $auto_tp (to other nodes"
    check "each node: transport $auto_tp" cond '
        [ "$(jget nodes.0.tables.0.transport <<<"$last")" = "$auto_tp" ] &&
        [ "$(jget nodes.1.tables.0.transport <<<"$last")" = "$auto_tp" ]'
    check "text: a row per rank and the node's total" \
        has "$text" "^ *node  *[0-9]"
    check "text: the columns" has "$text" "gets *hits *misses *direct *remote *retries *invalidated *puts *updates *evictions *probes *hit% *direct%"
    check "text: made by libmpikvs outside Slurm" has "$text" "by libmpikvs, outside a Slurm step"
    check "text: the node tier's counters" has "$text" "tier_hits *tier_misses *published *dropped *stalls"
    check "listing: the job's two data regions, alive" \
        [ "$(grep -c "^$jobid .* kvs-data .*alive (mapped by pid" <<<"$listing")" = 2 ]
    check "the watched run printed the same as the unwatched one" \
        [ "$watched" = "$baseline" ]
    [ "$watched" = "$baseline" ] || printf '    unwatched: %s\n    watched:   %s\n' "$baseline" "$watched"
    # two printings of a job row per counter group (DHT, tier, save and
    # load, transfers, surrogates), the second with the rates
    check "text --watch: the rates of the interval, from the second printing" cond '
        [ "$(grep -c "^ *job  *[0-9]" "$work/watch.text")" = 10 ] &&
        [ "$(grep -c "^ */s ([0-9.]*s)  *[0-9]" "$work/watch.text")" = 5 ]'
    [ "$(grep -c "^ */s (" "$work/watch.text")" = 5 ] || sed 's/^/    /' "$work/watch.text" | grep -A3 "^    job total"
    expect "after the job: no such job" 1 "no regions of job $jobid" -- \
        "$stat_bin" -d "$shm" "$jobid"
fi

echo "# two steps of a job on the region the plugin keeps for the job"
# as spank_mpikvs makes them for a job-scope table: the region outlives
# each step (stat_region), and each step's stats since its open are its
# own while the region's sum both steps
"$stat_region" layout "$shm" 901 nodex --nodes 1 --size 4194304 >/dev/null
"$stat_region" raw "$shm" 901 nodex kvs-data --step 0 --size 4194304 >/dev/null
steps=""
for _ in 1 2; do
    steps="$steps
$(MPIKVS_LAYOUT=$shm/mpikvs.901.nodex.layout job 2 0 --rounds 3 --stats 2>&1)"
done
check "the first step: its own figures are the region's" has "$steps" \
    "^stat_job: since open: gets 900 hits 600 puts 300; node since open: gets 900 hits 600 puts 300; since creation: gets 900 hits 600 puts 300$"
check "the second step: its own figures, and the region's of both steps" has "$steps" \
    "^stat_job: since open: gets 900 hits 600 puts 300; node since open: gets 900 hits 600 puts 300; since creation: gets 1800 hits 1200 puts 600$"
[ "$(grep -c "^stat_job: ranks 2 rounds 3: hits 600 misses 300 wrong 0" <<<"$steps")" = 2 ] ||
    fail "the steps ran: $steps"
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 --no-scan --json 901)
check "mpikvs-stat: the ranks of the latest step" cond '
    [ "$(jget nodes.0.tables.0.counters.dht.ranks.0.mpi_rank <<<"$out")" = 0 ] &&
    [ "$(jget nodes.0.tables.0.counters.dht.ranks.1.mpi_rank <<<"$out")" = 1 ] &&
    [ "$(jget totals.0.counters.dht.gets <<<"$out")" = 1800 ]'
rm -f "$shm"/mpikvs.901.*

echo "# sampled accuracy: the surrogate counters, their doubles as numbers"
# verify 1: every hit is a verify hit, reported with 0.25 (odd keys) or
# 2^-40: 2 ranks x 2 owners x 10 keys on one node; the job holds
printf '%s\n' '{ "version": 1, "tables": { "kvs": { "size": "4M", "verify": 1,' \
    '  "key": { "key_size": 16 }, "value": { "value_size": 32 } } } }' \
    >"$work/verify.json"
job 2 1 --rounds 1 --keys 10 --verify "$work/verify.json" \
    --hold "$work/go-v" --timeout 60 >"$work/v.out" 2>&1 &
started="$started $!"
wait_for 60 grep -qs "^stat_job:" "$work/v.out" ||
    fail "the verify job did not get to its hold: $(cat "$work/v.out")"
vjob=$(jobs_in_dir)
rep=$("$stat_bin" -d "$shm" --json --no-scan "$vjob")
text=$("$stat_bin" -d "$shm" --no-scan "$vjob")
touch "$work/go-v"
wait
started=""
s=nodes.0.tables.0.counters.surrogate.node
check "verify job: its hits all reported ($(cat "$work/v.out"))" \
    has "$(cat "$work/v.out")" "^stat_job: ranks 2 rounds 1: hits 40 misses 20 wrong 0"
check "verify: 40 verify hits, 40 reports, in two bins" cond '
    [ "$(jget $s.verify_hits <<<"$rep")" = 40 ] &&
    [ "$(jget $s.verify_reports <<<"$rep")" = 40 ] &&
    [ "$(jget $s.verify_below_1e_12 <<<"$rep")" = 20 ] &&
    [ "$(jget $s.verify_above_1e_3 <<<"$rep")" = 20 ] &&
    [ "$(jget $s.verify_below_1e_9 <<<"$rep")" = 0 ]'
check "verify: the error sum, largest and mean as numbers ($(jget $s.verify_error_sum <<<"$rep"), $(jget $s.verify_error_max <<<"$rep"), $(jget $s.verify_error_mean <<<"$rep"))" \
    awk -v s="$(jget $s.verify_error_sum <<<"$rep")" \
    -v m="$(jget $s.verify_error_max <<<"$rep")" \
    -v a="$(jget $s.verify_error_mean <<<"$rep")" \
    'BEGIN { exit !(s > 4.999999 && s < 5.000001 && m == 0.25 &&
                    a > 0.124999 && a < 0.125001) }'
check "verify: the job's total as the node's" \
    [ "$(jget totals.0.counters.surrogate.verify_error_max <<<"$rep")" = 0.25 ]
check "verify text: the surrogate columns" has "$text" \
    "forgotten *near *members *to_verify *reports *err_sum *err_max *<1e-12 *<1e-9 *<1e-6 *<1e-3 *>=1e-3 *err_mean"
check "verify text: the node's row, doubles as numbers" has "$text" \
    "^ *node *0 *0 *0 *40 *40 *5 *0.25 *20 *0 *0 *0 *20 *0.125$"
[ "$(grep -c "^ *node *0 *0 *0 *40 *40 *5 *0.25" <<<"$text")" = 1 ] ||
    printf '%s\n' "$text" | sed 's/^/    /'

echo "# a live job and a job that ended without closing (a crash)"
job 2 1 --rounds 5 --keys 40 --ready "$work/ready-a" --hold "$work/go-a" \
    --timeout 100 --save "$work/a.kvs" >"$work/a.out" 2>&1 &
started="$started $!"
if ! wait_for 60 grep -qs "^stat_job:" "$work/a.out"; then
    fail "the live job did not get to its hold: $(cat "$work/a.out")"
fi
live=$(jobs_in_dir)
check "the live job's region, of one job ($live)" \
    cond '[ -n "$live" ] && [ "$(wc -l <<<"$live")" = 1 ]'
check "the live job's region has no name in the directory" \
    cond '[ -n "$live" ] && ! ls "$shm" | grep -q "^mpikvs\.$live\."'
out=$(job 2 1 --rounds 5 --keys 40 --leak 2>&1)
check "the crashing job ran: $out" has "$out" "^stat_job: ranks 2 rounds 5: hits 800 misses 400 wrong 0"
check "the job that ended without mpikvs_close left nothing" \
    [ "$(jobs_in_dir)" = "$live" ]
# what a job that died between its open's create and unlink would leave
# (or an older libmpikvs): a region of libmpikvs's, named, that nothing
# maps
dead=u1-0-deadbeef
"$stat_region" data "$shm" "$dead" n1 kvs-data --size 4194304 >/dev/null

# exact figures of the live job, now that it waits: 2 ranks, 5 rounds of
# 40 keys each, every rank reads the 2 ranks' keys and 40 missing ones
rep=$("$stat_bin" -d "$shm" --json "$live")
t=nodes.0.tables.0
check "live job: gets 1200" [ "$(jget $t.counters.dht.node.gets <<<"$rep")" = 1200 ]
check "live job: the node tier's counters are reported (no tier: 0 hits, 0 stalls)" cond '
    [ "$(jget $t.counters.tier.node.tier_hits <<<"$rep")" = 0 ] &&
    [ "$(jget $t.counters.tier.node.tier_stalls <<<"$rep")" = 0 ]'
check "live job: the save counters: 400 entries saved, none torn, none loaded" cond '
    [ "$(jget $t.counters.persist.node.saved <<<"$rep")" = 400 ] &&
    [ "$(jget $t.counters.persist.node.save_torn <<<"$rep")" = 0 ] &&
    [ "$(jget $t.counters.persist.node.loaded <<<"$rep")" = 0 ]'
check "live job: text shows the save and load counters" \
    has "$("$stat_bin" -d "$shm" "$live")" "saved *save_torn *loaded *unfit"
check "live job: hits 800, misses 400" cond '
    [ "$(jget $t.counters.dht.node.hits <<<"$rep")" = 800 ] &&
    [ "$(jget $t.counters.dht.node.misses <<<"$rep")" = 400 ]'
check "live job: hit rate 2/3" \
    [ "$(jget $t.counters.dht.node.hit_rate <<<"$rep" | cut -c1-6)" = 0.6666 ]
check "live job: all direct on one node" cond '
    [ "$(jget $t.counters.dht.node.direct <<<"$rep")" = 1200 ] &&
    [ "$(jget $t.counters.dht.node.remote <<<"$rep")" = 0 ]'
check "live job: puts 400, no updates or evictions" cond '
    [ "$(jget $t.counters.dht.node.puts <<<"$rep")" = 400 ] &&
    [ "$(jget $t.counters.dht.node.updates <<<"$rep")" = 0 ] &&
    [ "$(jget $t.counters.dht.node.evictions <<<"$rep")" = 0 ]'
check "live job: rank 1 got 600 of the gets" \
    [ "$(jget $t.counters.dht.ranks.1.gets <<<"$rep")" = 600 ]
check "live job: every slot libmpikvs wrote verifies (400 used, 0 unverified, 0 invalid)" cond '
    [ "$(jget $t.occupancy.used <<<"$rep")" = 400 ] &&
    [ "$(jget $t.occupancy.unverified <<<"$rep")" = 0 ] &&
    [ "$(jget $t.occupancy.invalid <<<"$rep")" = 0 ]'
check "live job: key and value sizes, mode" cond '
    [ "$(jget $t.config.key_size <<<"$rep")" = 16 ] &&
    [ "$(jget $t.config.value_size <<<"$rep")" = 32 ] &&
    [ "$(jget $t.config.mode <<<"$rep")" = lockfree ]'
check "live job: transport $auto_tp, as its opens resolved auto" \
    [ "$(jget $t.transport <<<"$rep")" = "$auto_tp" ]
check "live job: no problems" [ "$(jget problems.# <<<"$rep")" = 0 ]

listing=$("$stat_bin" -d "$shm")
check "listing: the live job is alive" has "$listing" "^$live .*alive (mapped by pid"
check "listing: the crashed job is gone" has "$listing" "^$dead .*gone (no process maps it)"
out=$("$stat_bin" -d "$shm" --json)
check "listing --json: 2 regions" [ "$(jget regions.# <<<"$out")" = 2 ]
states=$( { jget regions.0.job <<<"$out"; jget regions.0.job_state <<<"$out"
            jget regions.1.job <<<"$out"; jget regions.1.job_state <<<"$out"; } |
          paste -d' ' - - | sort)
check "listing --json: job states" [ "$states" = "$(printf '%s\n' "$dead gone" "$live alive" | sort)" ]

echo "# damaged and foreign files"
printf 'not a region at all' >"$shm/mpikvs.junk.n1.kvs-data"
: >"$shm/mpikvs.$(printf '\377\001')stray"     # a name that is not text
"$stat_region" data "$shm" badsum n1 kvs-data >/dev/null
printf '\377' | dd of="$shm/mpikvs.badsum.n1.kvs-data" bs=1 seek=40 conv=notrunc status=none
"$stat_region" data "$shm" badctl n1 kvs-data >/dev/null
dd if=/dev/zero of="$shm/mpikvs.badctl.n1.kvs-data" bs=1 seek=256 count=8 conv=notrunc status=none
"$stat_region" data "$shm" short n1 kvs-data >/dev/null
truncate -s 100000 "$shm/mpikvs.short.n1.kvs-data"
expect "a foreign file" 1 "mpikvs.junk.n1.kvs-data is not an mpikvs region" -- \
    "$stat_bin" -d "$shm" mpikvs.junk.n1.kvs-data
expect "a header with a bad checksum" 1 "mpikvs.badsum.n1.kvs-data has a corrupt header (checksum" -- \
    "$stat_bin" -d "$shm" badsum
expect "a damaged control block" 1 "mpikvs.badctl.n1.kvs-data has a corrupt control block: key_size 0 is impossible" -- \
    "$stat_bin" -d "$shm" badctl
expect "a truncated region" 1 "mpikvs.short.n1.kvs-data is truncated: 100000 bytes, its header says 1048576" -- \
    "$stat_bin" -d "$shm" "$shm/mpikvs.short.n1.kvs-data"
out=$("$stat_bin" -d "$shm" --json badctl 2>/dev/null)
check "--json names the damaged region's problem" cond '
    [ "$(jget problems.0.region <<<"$out")" = mpikvs.badctl.n1.kvs-data ] &&
    [ "$(jget problems.0.error <<<"$out")" = "region header is corrupt" ]'
listing=$("$stat_bin" -d "$shm" 2>&1)
rc=$?
check "the listing still works with them (exit $rc)" \
    cond '[ "$rc" = 0 ] && has "$listing" "regions that cannot be read:"'
out=$("$stat_bin" -d "$shm" --json 2>&1)
check "--json lists a file whose name is not text, as valid JSON" \
    has "$(jget regions <<<"$out")" '"name":"mpikvs.??stray"'
check "the listing says what is wrong with each" cond '
    has "$listing" "mpikvs.junk.n1.kvs-data is not an mpikvs region" &&
    has "$listing" "badsum.n1.kvs-data has a corrupt header" &&
    has "$listing" "short.n1.kvs-data is truncated"'

echo "# regions of a Slurm job, a tier and a layout, made as the plugin makes them"
"$stat_region" data "$shm" 777 nodex kvs-data --step 0 --size 2097152 >/dev/null
"$stat_region" tier "$shm" 777 nodex kvs --step 0 --entries 20 >/dev/null
"$stat_region" layout "$shm" 777 nodex --step 0 >/dev/null
"$stat_region" raw "$shm" 778 nodex kvs-data --step 3 >/dev/null
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 777 2>&1)
check "Slurm not asked: state unknown" has "$out" "^job 777: unknown (slurm: not asked (--slurm-timeout 0))"
check "made by the plugin for step 0" has "$out" "by spank_mpikvs for step 0"
check "the layout" has "$out" "layout mpikvs.777.nodex.layout: job scope, made by step 0; node 0 of 2 (mpikvs\[1-2\]), 2 tasks here"
check "the tier under its table" has "$out" "    tier kvs: 20 entries in 64 buckets, load factor 0.31"
check "the tier's dropped entries and repairs" has "$out" "0 clears; 0 entries dropped, 0 repairs; no writer$"
check "no counters yet" has "$out" "DHT counters: none yet"
rep=$("$stat_bin" -d "$shm" --slurm-timeout 0 --json 777)
check "--json: the tier's entries, buckets and load factor" cond '
    [ "$(jget nodes.0.tiers.0.entries <<<"$rep")" = 20 ] &&
    [ "$(jget nodes.0.tiers.0.buckets <<<"$rep")" = 64 ] &&
    [ "$(jget nodes.0.tiers.0.load_factor <<<"$rep")" = 0.3125 ] &&
    [ "$(jget nodes.0.tiers.0.table <<<"$rep")" = kvs ]'
check "--json: live bytes of 20 entries of 16+32 bytes" \
    [ "$(jget nodes.0.tiers.0.live_bytes <<<"$rep")" = 1600 ]
check "--json: a whole tier: nothing dropped, no repair" cond '
    [ "$(jget nodes.0.tiers.0.dropped <<<"$rep")" = 0 ] &&
    [ "$(jget nodes.0.tiers.0.repairs <<<"$rep")" = 0 ]'
check "--json: the layout" cond '
    [ "$(jget nodes.0.layouts.0.scope <<<"$rep")" = job ] &&
    [ "$(jget nodes.0.layouts.0.nnodes <<<"$rep")" = 2 ]'
check "--json: the step" [ "$(jget nodes.0.tables.0.region.step <<<"$rep")" = 0 ]
out=$(SLURM_CONF=$work/none.conf "$stat_bin" -d "$shm" --slurm-timeout 5 777 2>&1)
check "no slurm.conf: unknown, with libslurm's reason" has "$out" "^job 777: unknown (slurm: "
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 778 2>&1)
check "a data region nobody laid out yet" \
    has "$out" "occupancy: none: the buckets are not laid out (no rank has opened the table yet)"
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 --json 778)
check "--json: not laid out, no config" cond '
    [ "$(jget nodes.0.tables.0.state <<<"$out")" = "not laid out" ] &&
    [ "$(jget nodes.0.tables.0.config <<<"$out")" = null ]'
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 mpikvs.777.nodex.kvs-index 2>&1)
check "one region by name: the tier only" \
    cond 'has "$out" "^  tier kvs: 20 entries" && lacks "$out" "table kvs"'
out=$("$stat_bin" --slurm-timeout 0 "$shm/mpikvs.777.nodex.kvs-data" 2>&1)
check "one region by path" cond 'has "$out" "table kvs" && lacks "$out" "layout mpikvs"'
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 --no-scan 777 2>&1)
check "--no-scan" has "$out" "occupancy: not scanned (--no-scan)"
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 --no-scan --json 777)
check "--no-scan --json: occupancy null" [ "$(jget nodes.0.tables.0.occupancy <<<"$out")" = null ]

echo "# mpikvs-stat maps regions read-only"
"$stat_region" data "$shm" 779 nodex kvs-data --size 67108864 >/dev/null
"$stat_bin" -d "$shm" --watch 0.1 --count 20 779 >/dev/null 2>&1 &
watcher=$!
seen=""
while kill -0 "$watcher" 2>/dev/null; do
    seen="$seen $(grep -F "mpikvs.779.nodex.kvs-data" "/proc/$watcher/maps" 2>/dev/null |
        awk '{ print $2 }')"
done
wait "$watcher"
perms=$(tr ' ' '\n' <<<"$seen" | grep . | sort -u | tr '\n' ' ')
check "while it reads a region, its mapping is read-only and shared (saw: $perms)" \
    [ "$perms" = "r--s " ]
rm -f "$shm/mpikvs.779.nodex.kvs-data"

echo "# permissions"
if [ -z "$user" ]; then
    echo "SKIP: the checks as another user need root"
else
    uid=$(id -u "$user")
    expect "another user: permission denied, run as root or as the job's user" 1 \
        "permission denied reading $shm/mpikvs.$dead." -- as_user "$stat_bin" -d "$shm" "$dead"
    out=$(as_user "$stat_bin" -d "$shm" "$dead" 2>&1)
    check "  ... and names the remedy" has "$out" "run as root or as the job's user (root)"
    out=$(as_user "$stat_bin" -d "$shm" 2>&1)
    check "another user still gets the listing" has "$out" "^$dead .*root"
    check "  ... without the live job's unlinked region: only its user and root may read its ranks" \
        lacks "$out" "$live"
    before=$(ls "$shm")
    out=$(as_user "$stat_bin" -d "$shm" --gc 2>&1)
    rc=$?
    check "--gc as another user is refused (exit $rc)" [ "$rc" = 1 ]
    check "  ... naming the region, its owner and the remedy" \
        has "$out" "mpikvs-stat: --gc: not allowed to remove $shm/mpikvs\.$dead\..*: it belongs to root (uid 0), not to uid $uid; run as root"
    check "  ... and removes nothing" [ "$(ls "$shm")" = "$before" ]
fi

echo "# --gc"
before=$(ls "$shm")
out=$("$stat_bin" -d "$shm" --gc --dry-run --slurm-timeout 0 2>&1)
rc=$?
check "--gc --dry-run (exit $rc)" [ "$rc" = 0 ]
check "  ... names the crashed job's region" \
    has "$out" "^would remove $shm/mpikvs\.$dead\..*\.kvs-data (4.0 MiB; job $dead gone: no process maps it)"
check "  ... and not the live job's" \
    cond '[ -n "$live" ] && lacks "$out" "would remove .*$live"'
check "  ... removes nothing" [ "$(ls "$shm")" = "$before" ]
out=$("$stat_bin" -d "$shm" --gc --slurm-timeout 0 2>&1)
rc=$?
check "--gc (exit $rc)" [ "$rc" = 0 ]
check "  ... says what it removed" has "$out" "^removed $shm/mpikvs\.$dead\..*\.kvs-data"
check "  ... removed it" \
    cond '[ -n "$dead" ] && [ -z "$(ls "$shm" | grep "^mpikvs\.$dead\.")" ]'
check "  ... kept the live job's region" [ "$(jobs_in_dir | grep -cx "$live")" = 1 ]
check "  ... kept the Slurm job it could not judge" cond '
    has "$out" "^keeping 4 regions of job 777: cannot tell whether it is alive (slurm: not asked" &&
    [ "$(ls "$shm" | grep -c "^mpikvs\.777\.")" = 4 ]'
check "  ... kept the damaged files" cond '
    has "$out" "keeping what is not a valid region: .*mpikvs.badsum.n1.kvs-data has a corrupt header" &&
    [ -e "$shm/mpikvs.junk.n1.kvs-data" ]'
check "  ... removed the region of a gone job whose body is damaged" \
    cond 'has "$out" "^removed $shm/mpikvs.badctl.n1.kvs-data (1.0 MiB; job badctl gone" &&
          [ ! -e "$shm/mpikvs.badctl.n1.kvs-data" ]'
check "  ... and sums it up" has "$out" "^gc: removed 2 regions (5.0 MiB) of 2 jobs; kept 1 region of live jobs, 5 of jobs that cannot be judged, 4 invalid files; 0 refused, 0 failed"

echo "# --gc as root: a region of one user never decides for another's"
if [ -z "$user" ]; then
    echo "SKIP: planting a region as another user needs root"
else
    # a valid region of the user's own, named for job 777 and sorted
    # before its regions (node "-"); nothing maps any of them
    as_user "$stat_region" data "$shm" 777 - x >/dev/null
    failed_before=$failed
    out=$("$stat_bin" -d "$shm" --gc --slurm-timeout 0 2>&1)
    rc=$?
    check "--gc with a region planted in job 777 by $user (exit $rc)" [ "$rc" = 0 ]
    check "  ... keeps job 777's own regions, which Slurm must judge" cond '
        has "$out" "^keeping 4 regions of job 777: cannot tell whether it is alive (slurm: not asked" &&
        [ "$(ls "$shm" | grep -c "^mpikvs\.777\.nodex\.")" = 4 ]'
    check "  ... and removes the planted one, judged on its own" cond '
        has "$out" "^removed $shm/mpikvs.777.-.x (1.0 MiB; job 777 gone: no process maps it)" &&
        [ ! -e "$shm/mpikvs.777.-.x" ]'
    [ "$failed" = "$failed_before" ] || printf '%s\n' "$out" | sed 's/^/    /'
fi

touch "$work/go-a"
wait
started=""
check "the live job ran to its end: $(cat "$work/a.out")" \
    has "$(cat "$work/a.out")" "^stat_job: ranks 2 rounds 5: hits 800 misses 400 wrong 0"
check "and nothing of it is left" \
    cond '[ -n "$live" ] && [ -z "$(jobs_in_dir | grep -x "$live")" ]'

echo "# a FIFO under a region's name never blocks mpikvs-stat"
mkfifo "$shm/mpikvs.780.nodex.kvs-data"
expect "a FIFO named like a region: refused, not opened" 1 \
    "mpikvs.780.nodex.kvs-data is not a regular file" -- \
    timeout 20 "$stat_bin" -d "$shm" --slurm-timeout 0 780
# the name turns into a FIFO between the listing and the reading: swap it
# between a region and a FIFO (links kept under names mpikvs-stat skips)
rm -f "$shm/mpikvs.780.nodex.kvs-data"
"$stat_region" data "$shm" 780 nodex kvs-data >/dev/null
ln "$shm/mpikvs.780.nodex.kvs-data" "$shm/keep-780-region"
mkfifo "$shm/keep-780-fifo"
( while :; do
      ln -f "$shm/keep-780-fifo" "$shm/mpikvs.780.nodex.kvs-data"
      ln -f "$shm/keep-780-region" "$shm/mpikvs.780.nodex.kvs-data"
  done ) 2>/dev/null &
swapper=$!
started="$started $swapper"
hung=0 runs=""
for _ in $(seq 20); do
    timeout 20 "$stat_bin" -d "$shm" --slurm-timeout 0 780 >/dev/null 2>&1
    rc=$?
    runs="$runs $rc"
    [ "$rc" = 124 ] && hung=$((hung + 1))
done
kill "$swapper"
wait "$swapper" 2>/dev/null
check "20 reports while the name flips to a FIFO: none hangs (exits:$runs)" \
    cond '[ "$hung" = 0 ] && [ "$(wc -w <<<"$runs")" = 20 ]'
rm -f "$shm/mpikvs.780.nodex.kvs-data" "$shm/keep-780-region" "$shm/keep-780-fifo"

echo "# strings from a user's region are printed escaped"
"$stat_region" data "$shm" 781 nodex kvs-data \
    --table "$(printf 'k\033[7m\\\nx')" >/dev/null
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 781 2>&1)
check "text: the table name escaped, no control byte reaches the terminal" cond '
    has_fixed "$out" "table k\\x1b[7m\\\\\\nx" && ! grep -q "$(printf "\033")" <<<"$out"'
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 --json 781 2>&1)
check "--json: the table name escaped the same way" \
    [ "$(jget nodes.0.tables.0.table <<<"$out")" = 'k\x1b[7m\\\nx' ]
rm -f "$shm/mpikvs.781.nodex.kvs-data"

echo "# a sparse region that claims counters for billions of ranks"
"$stat_region" raw "$shm" 782 nodex kvs-data --sparse 1099511627776 \
    --max-ranks 3435973000 >/dev/null
expect "refused with a clear error, nothing allocated for it" 1 \
    "mpikvs.782.nodex.kvs-data is sparse: its control block claims counters for 3435973000 ranks" -- \
    "$stat_bin" -d "$shm" --slurm-timeout 0 782
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 2>&1)
check "  ... and the listing still shows it" has "$out" "^782 *nodex *kvs-data"
rm -f "$shm/mpikvs.782.nodex.kvs-data"

echo "# a sparse rmacache window region that claims 1024 ranks"
"$stat_region" rma "$shm" 786 nodex win --max-ranks 1024 >/dev/null
rma_file="$shm/mpikvs.786.nodex.win-rma"
blocks_before=$(stat -c %b "$rma_file")
expect "refused with a clear error" 1 \
    "mpikvs.786.nodex.win-rma is sparse: its control block claims 1024 ranks with rings of 4.0 KiB" -- \
    "$stat_bin" -d "$shm" --slurm-timeout 0 786
blocks_after=$(stat -c %b "$rma_file")
check "  ... and nothing of it read ($blocks_before blocks before, $blocks_after after)" \
    cond '[ "$blocks_after" = "$blocks_before" ]'
rm -f "$rma_file"
"$stat_region" rma "$shm" 787 nodex win >/dev/null
expect "a whole rmacache window region is read" 0 \
    "2 of the window's 2 ranks on this node" -- \
    "$stat_bin" -d "$shm" --slurm-timeout 0 787
rm -f "$shm/mpikvs.787.nodex.win-rma"

echo "# a tier truncated while mpikvs-stat reads it"
if ! command -v gdb >/dev/null 2>&1; then
    echo "SKIP: truncating a tier at the moment it is read needs gdb"
else
    "$stat_region" tier "$shm" 783 nodex kvs --entries 5 >/dev/null
    # stop mpikvs-stat where it reads the tier it has open, truncate the
    # index, let it go on
    out=$(timeout 120 gdb -q -batch -nx -ex 'set debuginfod enabled off' \
        -ex 'handle SIGBUS nostop noprint pass' -ex 'break kvshm_tier_stats' \
        -ex run -ex "shell truncate -s 0 $shm/mpikvs.783.nodex.kvs-index" \
        -ex continue \
        --args "$stat_bin" -d "$shm" --slurm-timeout 0 783 2>&1)
    check "a problem of the report, not the end of mpikvs-stat" cond '
        has "$out" "^Breakpoint 1, kvshm_tier_stats" &&
        has_fixed "$out" "mpikvs-stat: the tier $shm/mpikvs.783.nodex.kvs-index/-entries shrank while it was read" &&
        has "$out" "exited with code 01" && lacks "$out" "signal SIGBUS"'
    lacks "$out" "signal SIGBUS" || printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /'
    rm -f "$shm"/mpikvs.783.*
fi

rm -f "$shm"/mpikvs.*
stat_summary run-stat-tests
