#!/bin/bash
# run-stat-slurm-tests.sh - mpikvs-stat against the regions spank_mpikvs
# makes for real Slurm jobs: munged, slurmctld and two slurmd (simulated
# nodes mpikvs1 and mpikvs2 on this machine) started in a temporary
# directory by tests/slurm/cluster.sh and stopped at the end, whatever
# happens.  The plugin puts the regions in a private shm directory
# (shm_dir=), so nothing else in /dev/shm is looked at or touched.
#
# Checks: a running job's report (layout, tables, counters that move
# while the job's output stays what it is without mpikvs-stat), as root,
# as the job's user and as a user who may not read it; liveness asked of
# slurmctld (a job between two steps maps nothing and is still alive; a
# job Slurm does not know is gone; a slurmctld that does not answer
# leaves it unknown); --gc as root and as a non-owner.  Needs root (the
# daemons run as root); without root, without Slurm or in a sanitizer
# build (slurmstepd cannot load an ASan plugin) it exits 77 saying why.
set -u
# cond 'EXPR' evaluates its single-quoted EXPR when the check runs
# shellcheck disable=SC2016

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/stat/common.sh"

plugin=$build/spank/.libs/spank_mpikvs.so
[ "$(id -u)" = 0 ] || skip "the test cluster's daemons need root"
for d in slurmctld slurmd munged srun sbatch; do
    command -v "$d" >/dev/null 2>&1 ||
        PATH=$PATH:/usr/sbin command -v "$d" >/dev/null 2>&1 ||
        skip "$d is not installed (apt-get install slurmctld slurmd slurm-client munge)"
done
PATH=$PATH:/usr/sbin
for p in "$plugin" "$stat_bin" "$stat_job" "$stat_region" "$json_get"; do
    [ -e "$p" ] || { echo "FAIL: $p was not built"; exit 1; }
done
nm -D "$plugin" | grep -q __asan_init &&
    skip "a sanitizer build of the plugin cannot load into slurmstepd"
for v in $(env | sed -n 's/^\(\(SLURM\|MPIKVS\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

. "$top_srcdir/tests/slurm/cluster.sh"

base=$(mktemp -d /tmp/mpikvs-stat-slurm.XXXXXX) || exit 1
chmod 755 "$base"
dir=$base/cluster
shm=$base/shm
plugstack=$base/plugstack.conf
mkdir -p "$shm" && chmod 1777 "$shm"
started=""
cleanup() {
    for pid in $started; do
        kill "$pid" 2>/dev/null
    done
    cluster_stop "$dir"
    wait 2>/dev/null
    rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "required $plugin shm_dir=$shm max_size=1G default_size=32M" >"$plugstack"
cluster_start "$dir" 2 "$plugstack" || { echo "FAIL: cluster start"; exit 1; }
cluster_env "$dir" >/dev/null
user=$(cluster_user) || { echo "FAIL: no test user"; exit 1; }
uid=$(id -u "$user")
gid=$(id -g "$user")
work=$dir/tmp     # writable by the test user
# The library's defaults: its ucx transport needs no one-sided component
# (no OMPI_MCA_osc), as a user's job sets none.
export OMPI_MCA_btl=self,tcp
unset OMPI_MCA_osc
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# as_user CMD...: CMD as the test user, bounded in time
as_user() { cluster_runuser "$dir" timeout 120 "$@"; }
# nobody CMD...: CMD as a user who is neither root nor the job's
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# job_regions JOBID: names of the job's regions in the private shm dir
job_regions() { ls "$shm" | grep "^mpikvs\.$1\." || true; }
# no_regions JOBID: the job has none; never true of a job id lost on the
# way (empty)
no_regions() { [ -n "$1" ] && [ -z "$(job_regions "$1")" ]; }
# the one Slurm job whose regions are in the private dir
job_in_dir() { ls "$shm" | sed -n 's/^mpikvs\.\([0-9]*\)\..*/\1/p' | sort -u; }

echo "# a job's report while it runs, its counters moving, its output unchanged"
# 2 nodes, a rank on each (remote gets over UCX crawl when the ranks
# outnumber the cores); a table that never evicts, so the output does
# not depend on timing
args=(--rounds 40 --keys 10 --size 16777216)
# rank 0 names the job, then becomes stat_job
named='[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$0" "$@"'
out=$(as_user srun --dht-size=16M -N2 -n2 \
    bash -c "$named" "$stat_job" "${args[@]}" 2>&1)
finished=$(sed -n 's/^job \([0-9]*\)$/\1/p' <<<"$out")
baseline=$(grep '^stat_job:' <<<"$out")
check "the unwatched Slurm job $finished: $baseline" \
    has "$baseline" "^stat_job: ranks 2 rounds 40: hits 1600 misses 800 wrong 0 "
check "the plugin removed its regions at the job's end" \
    cond '[ -n "$finished" ] && wait_for 20 no_regions "$finished"'
# the job holds at its end until the looks below are done (a busy
# machine may run its rounds before them)
rm -f "$work/ready" "$work/looked"
as_user srun --dht-size=16M -N2 -n2 "$stat_job" "${args[@]}" \
    --pause-ms 50 --ready "$work/ready" --hold "$work/looked" --timeout 100 \
    >"$work/watched.out" 2>&1 &
started="$started $!"
if ! wait_for 60 test -e "$work/ready"; then
    fail "the watched job did not start: $(cat "$work/watched.out")"
else
    job=$(job_in_dir)
    check "the watched job's regions, of one job ($job)" \
        cond '[ -n "$job" ] && [ "$(wc -l <<<"$job")" = 1 ]'
    "$stat_bin" -d "$shm" --json --watch 0.5 --count 4 "$job" \
        >"$work/watch.json" 2>"$work/watch.err"
    rc=$?
    text=$("$stat_bin" -d "$shm" "$job" 2>&1)
    text_rc=$?
    listing=$("$stat_bin" -d "$shm" 2>&1)
    mine=$(as_user "$stat_bin" -d "$shm" "$job" 2>&1)
    mine_rc=$?
    theirs=$(nobody "$stat_bin" -d "$shm" "$job" 2>&1)
    theirs_rc=$?
    touch "$work/looked"
    wait
    started=""
    watched=$(grep '^stat_job:' "$work/watched.out")
    docs=$(jget job <"$work/watch.json" | wc -l)
    check "--watch --count 4: 4 reports (exit $rc: $(cat "$work/watch.err"))" \
        cond '[ "$rc" = 0 ] && [ "$docs" = 4 ]'
    check "slurmctld says the job runs" \
        has "$(jget job_state_why <"$work/watch.json")" "slurm: RUNNING"
    gets=$(watched_gets "$work/watch.json")
    check "the gets move while the job runs:$gets" gets_move $gets
    last=$(tail -n 1 "$work/watch.json")
    check "both nodes, each with its layout and its table" cond '
        [ "$(jget nodes.0.node <<<"$last")" = mpikvs1 ] &&
        [ "$(jget nodes.1.node <<<"$last")" = mpikvs2 ] &&
        [ "$(jget nodes.1.layouts.0.scope <<<"$last")" = job ] &&
        [ "$(jget nodes.1.layouts.0.node_index <<<"$last")" = 1 ] &&
        [ "$(jget nodes.1.tables.0.table <<<"$last")" = kvs ]'
    check "remote gets between the nodes" \
        [ "$(jget nodes.0.tables.0.counters.dht.node.remote <<<"$last")" -gt 0 ]
    check "the data regions are the job user's" \
        [ "$(jget nodes.0.tables.0.region.owner <<<"$last")" = "$user" ]
    check "the text report (exit $text_rc)" [ "$text_rc" = 0 ]
    check "text: alive, asked of Slurm" has "$text" "^job $job: alive (.*slurm: RUNNING)"
    check "text: the layout of node mpikvs2" \
        has "$text" "layout mpikvs.$job.mpikvs2.layout: job scope, made by step 0; node 1 of 2 (mpikvs\[1-2\]), 1 task here; 16.0 MiB of DHT memory per node; no job config"
    check "text: made by the plugin" has "$text" "by spank_mpikvs for step 0"
    check "text: the job's user owns the table" has "$text" "owner $user:"
    check "listing: layout and data of both nodes, alive" \
        [ "$(grep -c "^$job .*alive (.*slurm: RUNNING)" <<<"$listing")" = 4 ]
    check "the job's user reads the report (exit $mine_rc)" \
        cond '[ "$mine_rc" = 0 ] && has "$mine" "table kvs"'
    check "another user is refused: permission denied (exit $theirs_rc)" cond '
        [ "$theirs_rc" = 1 ] &&
        has "$theirs" "permission denied reading $shm/mpikvs.$job.mpikvs1.kvs-data (owner $user, mode 600): run as root or as the job.s user ($user)"'
    check "the watched job printed what the unwatched one did" [ "$watched" = "$baseline" ]
    [ "$watched" = "$baseline" ] ||
        printf '    unwatched: %s\n    watched:   %s\n' "$baseline" "$watched"
    check "the job's regions went with it" wait_for 20 no_regions "$job"
    expect "after the job: no such job" 1 "no regions of job $job in $shm" -- \
        "$stat_bin" -d "$shm" "$job"
fi

echo "# a table with a node tier that the job fills"
printf '{ "version": 1, "tables": { "kvs": { "key": { "key_size": 16 },
  "value": { "value_size": 32 }, "tier": { "enabled": true, "size": "25%%" } } } }\n' \
    >"$work/tier.json"
chmod 644 "$work/tier.json"
rm -f "$work/go"
as_user srun --dht-size=16M --dht-config="$work/tier.json" -N2 -n2 \
    "$stat_job" --rounds 5 --keys 20 --size 12582912 \
    --hold "$work/go" --timeout 100 >"$work/tier.out" 2>&1 &
started="$started $!"
if ! wait_for 60 grep -qs '^stat_job:' "$work/tier.out"; then
    fail "the job with a tier did not get to its hold: $(cat "$work/tier.out")"
else
    job=$(job_in_dir)
    rep=$("$stat_bin" -d "$shm" --json "$job" 2>&1)
    text=$("$stat_bin" -d "$shm" "$job" 2>&1)
    check "the tier of each node has the remote hits published at the fences" cond '
        [ "$(jget nodes.0.tiers.0.entries <<<"$rep")" -gt 0 ] &&
        [ "$(jget nodes.1.tiers.0.entries <<<"$rep")" -gt 0 ]'
    check "  ... belongs to table kvs, has a load factor and live bytes" cond '
        [ "$(jget nodes.0.tiers.0.table <<<"$rep")" = kvs ] &&
        [ "$(jget nodes.0.tiers.0.live_bytes <<<"$rep")" -gt 0 ] &&
        awk "BEGIN { exit !($(jget nodes.0.tiers.0.load_factor <<<"$rep") > 0) }"'
    check "  ... and its writer, the node's first rank" \
        [ "$(jget nodes.0.tiers.0.writer_pid <<<"$rep")" != null ]
    check "text: the tier under its table" \
        has "$text" "^    tier kvs: [1-9][0-9]* entries in [0-9]* buckets, load factor 0\.[0-9]*; .* written by pid [0-9]*$"
    check "the layout names the tier" \
        has "$text" "table kvs: data .* in kvs-data, tier .* in kvs-index/-entries"
    touch "$work/go"
    wait
    started=""
    check "the job with a tier ran: $(cat "$work/tier.out")" \
        has "$(cat "$work/tier.out")" "^stat_job: ranks 2 rounds 5: hits 400 misses 200 wrong 0"
    check "its regions went with it" wait_for 20 no_regions "$job"
fi

echo "# liveness from slurmctld, and --gc"
# a job between two steps: its regions exist, nobody maps them
# the job id from Slurm itself (--parsable: "ID" or "ID;CLUSTER")
out=$(as_user sbatch --parsable -N2 -o "$work/held.out" --dht-size=16M \
    --wrap 'srun -N2 -n2 true; sleep 100' 2>&1)
held=${out%%;*}
[[ "$held" =~ ^[0-9]+$ ]] || { fail "sbatch gave no job id: $out"; held=""; }
# step 0 made the regions and ended; only the batch step is left
step_done() {
    [ "$(job_regions "$held" | wc -l)" -ge 4 ] &&
        ! squeue -h -s -j "$held" -o %i 2>/dev/null | grep -qx "$held\.0"
}
check "a job that holds its regions between steps ($held)" \
    cond '[ -n "$held" ] && wait_for 60 step_done'
# a job Slurm never had, a job that ended, and a dead job of the user
never=3999999999
"$stat_region" data "$shm" "$never" mpikvs1 kvs-data --step 0 >/dev/null
"$stat_region" layout "$shm" "$never" mpikvs1 --step 0 >/dev/null
"$stat_region" data "$shm" "$finished" mpikvs1 kvs-data --step 0 >/dev/null
"$stat_region" data "$shm" 3999999998 mpikvs2 kvs-data --step 0 \
    --uid "$uid" --gid "$gid" >/dev/null
"$stat_region" layout "$shm" 3999999998 mpikvs2 --step 0 --gid "$gid" >/dev/null

listing=$("$stat_bin" -d "$shm" 2>&1)
check "the held job is alive though nothing maps it" \
    has "$listing" "^$held .*alive (slurm: RUNNING)"
check "a job Slurm does not know is gone" \
    has "$listing" "^$never .*gone (slurm: no such job)"
check "a job that ended is gone" \
    has "$listing" "^$finished .*gone (slurm: \(COMPLETED\|no such job\))"
out=$("$stat_bin" -d "$shm" --slurm-timeout 0 2>&1)
check "--slurm-timeout 0: Slurm is not asked, the held job is unknown" \
    has "$out" "^$held .*unknown (slurm: not asked (--slurm-timeout 0))"
sed "s/^SlurmctldPort=.*/SlurmctldPort=$((RANDOM % 1000 + 30000))/" \
    "$dir/etc/slurm.conf" >"$base/dead.conf"
chmod 644 "$base/dead.conf"
out=$(SLURM_CONF=$base/dead.conf "$stat_bin" -d "$shm" --slurm-timeout 2 2>&1)
check "a slurmctld that does not answer: unknown, within the timeout" \
    has "$out" "^$held .*unknown (slurm: slurmctld did not answer within 2 s)"
out=$(SLURM_CONF=$base/dead.conf "$stat_bin" -d "$shm" --slurm-timeout 2 --gc 2>&1)
check "  ... and --gc removes nothing then" cond '
    has "$out" "^gc: removed 0 regions" && [ -n "$(job_regions "$never")" ]'

before=$(ls "$shm")
out=$(as_user "$stat_bin" -d "$shm" --gc 2>&1)
rc=$?
check "--gc as the test user: exit 1, something refused ($rc)" [ "$rc" = 1 ]
check "  ... removes its own dead job's data region" cond '
    has "$out" "^removed $shm/mpikvs.3999999998.mpikvs2.kvs-data" &&
    [ ! -e "$shm/mpikvs.3999999998.mpikvs2.kvs-data" ]'
check "  ... refuses root's layout of it, saying to run as root" \
    has "$out" "mpikvs-stat: --gc: not allowed to remove $shm/mpikvs.3999999998.mpikvs2.layout (job 3999999998 gone: slurm: no such job): it belongs to root (uid 0), not to uid $uid; run as root"
check "  ... refuses root's regions of other jobs" \
    has "$out" "not allowed to remove $shm/mpikvs.$never.mpikvs1.kvs-data"
check "  ... leaves the held job alone" cond '
    lacks "$out" "mpikvs.$held" && [ "$(job_regions "$held" | wc -l)" -ge 4 ]'

out=$("$stat_bin" -d "$shm" --gc --dry-run 2>&1)
rc=$?
check "--gc --dry-run as root (exit $rc)" [ "$rc" = 0 ]
check "  ... would remove the dead jobs' regions" cond '
    has "$out" "^would remove $shm/mpikvs.$never.mpikvs1.layout .*slurm: no such job" &&
    has "$out" "^would remove $shm/mpikvs.$finished.mpikvs1.kvs-data"'
check "  ... not the held job's" lacks "$out" "would remove .*mpikvs.$held"
check "  ... and removes nothing" [ -n "$(job_regions "$never")" ]
out=$("$stat_bin" -d "$shm" --gc 2>&1)
rc=$?
check "--gc as root (exit $rc)" [ "$rc" = 0 ]
check "  ... removed every dead job's region" cond '
    no_regions "$never" && no_regions 3999999998 && no_regions "$finished"'
check "  ... kept the held job's" [ "$(job_regions "$held" | wc -l)" -ge 4 ]
check "  ... and says so" \
    has "$out" "^gc: removed 4 regions .* of 3 jobs; kept [0-9]* regions of live jobs, 0 of jobs that cannot be judged, 0 invalid files; 0 refused, 0 failed"

echo "# --gc as root: a region another user plants never decides for the job's"
# uid 65534 plants a valid region of its own under the held job's name,
# sorted before the job's regions (node "-"); between the job's steps
# nothing maps any of them
own=$(job_regions "$held")
nobody "$stat_region" data "$shm" "$held" - x >/dev/null
failed_before=$failed
listing=$("$stat_bin" -d "$shm" 2>&1)
out=$("$stat_bin" -d "$shm" --gc 2>&1)
rc=$?
check "--gc as root with a region planted in job $held by uid 65534 (exit $rc)" \
    [ "$rc" = 0 ]
check "  ... keeps every region of the job's own" cond '
    [ "$(wc -l <<<"$own")" -ge 4 ] &&
    [ "$(job_regions "$held" | grep -v "^mpikvs\.$held\.-\.x$")" = "$own" ] &&
    lacks "$out" "^removed .*mpikvs\.$held\.mpikvs"'
check "  ... judges the planted one on its own: Slurm says its job runs" cond '
    has "$listing" "^$held  *-  *x .*alive (slurm: RUNNING)" &&
    [ -e "$shm/mpikvs.$held.-.x" ]'
[ "$failed" = "$failed_before" ] || printf '%s\n' "$listing" "$out" | sed 's/^/    /'
rm -f "$shm/mpikvs.$held.-.x"

scancel "$held"
check "scancel: the plugin removes the held job's regions" wait_for 30 no_regions "$held"
expect "nothing left" 0 "no mpikvs regions in $shm" -- "$stat_bin" -d "$shm"

stat_summary run-stat-slurm-tests
