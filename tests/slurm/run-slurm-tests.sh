#!/bin/bash
# run-slurm-tests.sh - spank_mpikvs against a real Slurm: munged,
# slurmctld and two slurmd (simulated nodes mpikvs1 and mpikvs2 on this
# machine) started in a temporary directory by cluster.sh and stopped
# at the end, whatever happens.  Jobs run as root and as a non-root user.
#
# Each check prints "ok" or "FAIL" with what it saw; the script exits 1
# if any check failed.  It checks outputs, not only exit codes: srun can
# exit 0 after a failed launch.  It needs root (the daemons run as root);
# without root, or in a sanitizer build (slurmstepd cannot load an ASan
# plugin), it exits 77 (SKIP) saying why.
set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/slurm/checks.sh"
slurm_test_needs
bench=$build/mpikvs-bench/mpikvs-bench
steps=$build/tests/slurm/kvs_steps

. "$top_srcdir/tests/slurm/cluster.sh"

base=$(mktemp -d /tmp/mpikvs-slurm.XXXXXX)
chmod 755 "$base"
dir=$base/cluster
smallshm=$base/smallshm
plugstack=$base/plugstack.conf
cleanup() {
    cluster_stop "$dir"
    mountpoint -q "$smallshm" && umount "$smallshm"
    rm -rf "$base"
}
trap cleanup EXIT

set_site() { echo "required $plugin $*" >"$plugstack"; }
set_site max_size=1G default_size=32M
cluster_start "$dir" 2 "$plugstack" || { echo "FAIL: cluster start"; exit 1; }
cluster_env "$dir" >/dev/null
user=$(cluster_user) || { echo "FAIL: no test user"; exit 1; }
ugroup=$(id -gn "$user")
work=$dir/tmp     # writable by the test user
# The library's defaults: its ucx transport needs no one-sided component
# (no OMPI_MCA_osc), as a user's job sets none; Open MPI's transport
# between the simulated nodes comes from the cluster (its TaskProlog), as
# the README's commands expect.
unset OMPI_MCA_osc OMPI_MCA_btl OMPI_MCA_pml OMPI_MCA_pml_ucx_tls \
    OMPI_MCA_pml_ucx_devices
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# as WHO CMD...: run CMD as root or as the test user, bounded in time.
as() {
    local who=$1
    shift
    if [ "$who" = root ]; then
        (cd "$work" && timeout 120 "$@")
    else
        cluster_runuser "$dir" timeout 120 "$@"
    fi
}

# regions JOBID: the job's region files, "name owner group mode size".
regions() {
    (cd /dev/shm && for f in mpikvs."$1".*; do
        [ -e "$f" ] && stat -c '%n %U %G %a %s' "$f" 2>/dev/null
    done)
}

# job_of TEXT: the job id srun printed with -v, or from its env output.
last_job() { squeue -h -o %i | sort -n | tail -n1; }

# wait_gone JOBID: wait until the job's regions are gone (bounded).
wait_gone() {
    [ -n "$1" ] || return 1   # no job id: nothing was tested
    for _ in $(seq 100); do
        [ -z "$(regions "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

cp "$top_srcdir/etc/examples/chemistry.json" "$work/chem.json"
printf '{ "version": 1, "tables": { "t": { "key": { "key_size": 16 },\n  "value": { "value_size": 32 }, "mode": "lock-free" } } }\n' \
    >"$work/bad-mode.json"
printf '{ "version": 1, "tables": { "t": { "key": { "key_size": 16 },\n  "value": { "value_size": 32 }, "transport": "verbs" } } }\n' \
    >"$work/bad-transport.json"
printf '{ "version": 1,\n  "tables": { "t": { "key": { "size": 16 }, }\n}\n' \
    >"$work/bad-syntax.json"
# neighbourhoods that are not coarser than the key (mpikvs.json(5))
printf '{ "version": 1, "tables": { "t": { "key": { "fields": [\n  { "name": "Ca", "type": "double", "digits": 3 } ] },\n  "value": { "value_size": 8 }, "near": { "digits": { "Ca": 3 } } } } }\n' \
    >"$work/near-not-coarser.json"
printf '{ "version": 1, "tables": { "t": { "size": "64M",\n  "key": { "key_size": 16 }, "value": { "value_size": 32 } } } }\n' \
    >"$work/big.json"
# values of 1 MiB, the largest, and one byte more
printf '{ "version": 1, "tables": { "spectra": { "key": { "key_size": 16 },\n  "value": { "value_size": 1048576 }, "far_read": "slot" } } }\n' \
    >"$work/large.json"
printf '{ "version": 1, "tables": { "t": { "key": { "key_size": 16 },\n  "value": { "value_size": 1048577 } } } }\n' \
    >"$work/value-over.json"
cp "$work/chem.json" "$work/unreadable.json"
# a table whose job-scope tags ("s3-data") read as step 3's
for name in s3 s3-x; do
    printf '{ "version": 1, "tables": { "%s": {\n  "key": { "key_size": 16 }, "value": { "value_size": 32 } } } }\n' \
        "$name" >"$work/steplike-$name.json"
done
chmod 644 "$work"/*.json
chmod 600 "$work/unreadable.json"

echo "# the cluster gives tasks Open MPI's transport for simulated nodes"
out=$(as "$user" srun -N2 -n2 sh -c 'echo "btl=$OMPI_MCA_btl pml=$OMPI_MCA_pml"' 2>&1)
check "each task gets OMPI_MCA_btl=self,tcp and OMPI_MCA_pml=ucx from the cluster" \
    [ "$(grep -c '^btl=self,tcp pml=ucx$' <<<"$out")" = 2 ]
out=$(as "$user" env OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 srun -N1 -n1 \
    sh -c 'echo "btl=$OMPI_MCA_btl pml=$OMPI_MCA_pml"' 2>&1)
check "a job's own OMPI_MCA_btl and OMPI_MCA_pml win over the cluster's" \
    has "$out" "^btl=self,vader,tcp pml=ob1$"

echo "# help text"
out=$(srun --help 2>&1)
check "srun --help shows --dht-size" has "$out" "--dht-size=SIZE.*DHT memory per node"
check "srun --help shows --dht-config" has "$out" "--dht-config=FILE"
check "srun --help shows --dht-scope" has "$out" "--dht-scope=job|step"
out=$(sbatch --help 2>&1)
check "sbatch --help shows the options" has "$out" "--dht-size=SIZE"
out=$(salloc --help 2>&1)
check "salloc --help shows the options" has "$out" "--dht-config=FILE"

for who in root "$user"; do
    owner=$who
    group=$([ "$who" = root ] && echo root || echo "$ugroup")
    echo "# srun -N2 -n4 as $who"
    out=$(as "$who" srun --dht-size=64M -N2 -n4 -l bash -c '
        echo "task $SLURM_PROCID $SLURMD_NODENAME layout=$MPIKVS_LAYOUT"
        ls /dev/shm | grep -c "^mpikvs\.$SLURM_JOB_ID\.$SLURMD_NODENAME\." | sed "s/^/seen /"
        echo "job $SLURM_JOB_ID"' 2>&1)
    job=$(sed -n 's/.*job \([0-9]*\)$/\1/p' <<<"$out" | head -n1)
    for t in 0 1 2 3; do
        node=mpikvs$((t / 2 + 1))
        check "$who: task $t has MPIKVS_LAYOUT of $node" \
            has "$out" "task $t $node layout=/dev/shm/mpikvs\.$job\.$node\.layout$"
    done
    check "$who: the regions existed while the tasks ran" has "$out" "seen 2"
    env_out=$(as "$who" srun --dht-size=64M -N1 -n1 env 2>&1)
    extra=$(grep '^MPIKVS_' <<<"$env_out" | grep -v '^MPIKVS_LAYOUT=')
    check "$who: the task has MPIKVS_LAYOUT" has "$env_out" '^MPIKVS_LAYOUT=/dev/shm/'
    check "$who: MPIKVS_LAYOUT is the only MPIKVS_ variable" [ -z "$extra" ]
    echo "# regions of a job that holds them: owner, mode, size ($who)"
    as "$who" sbatch -N2 -o "$work/hold-$who.out" --dht-size=64M \
        --wrap 'srun -N2 -n2 true; sleep 30' >"$work/hold.id" 2>&1
    job=$(sed -n 's/^Submitted batch job //p' "$work/hold.id")
    for _ in $(seq 100); do
        [ "$(regions "$job" | wc -l)" -ge 4 ] && break
        sleep 0.1
    done
    r=$(regions "$job")
    for node in mpikvs1 mpikvs2; do
        check "$who: $node data region: $owner, 0600, 64 MiB" \
            has "$r" "mpikvs\.$job\.$node\.kvs-data $owner $group 600 67108864$"
        check "$who: $node layout: root, group $group, 0640" \
            has "$r" "mpikvs\.$job\.$node\.layout root $group 640 "
    done
    layout=/dev/shm/mpikvs.$job.mpikvs1.layout
    data=/dev/shm/mpikvs.$job.mpikvs1.kvs-data
    if [ ! -e "$layout" ]; then
        fail "$who: no layout at $layout: $(cat "$work/hold-$who.out")"
    elif [ "$who" != root ]; then
        out=$(cluster_runuser "$dir" sh -c "head -c 8 $layout; echo; echo x >>$layout" 2>&1)
        check "$who: a task can read the layout" has "$out" "MPIKVSrg"
        check "$who: a task cannot write the layout" has "$out" "Permission denied"
        out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
            head -c 8 "$data" 2>&1)
        check "another user gets EACCES on $who's data region" has "$out" "Permission denied"
    else
        out=$(cluster_runuser "$dir" head -c 8 "$data" 2>&1)
        check "$user gets EACCES on root's data region" has "$out" "Permission denied"
        out=$(cluster_runuser "$dir" head -c 8 "$layout" 2>&1)
        check "$user cannot read root's job layout" has "$out" "Permission denied"
    fi
    scancel "$job"
    check "$who: scancel of the job removes its regions" wait_gone "$job"

    echo "# the library opens the plugin's regions ($who)"
    out=$(as "$who" srun --dht-size=64M -N2 -n4 \
        "$bench" dht --pairs 200 2>&1)
    check "$who: mpikvs-bench dht runs on 2 nodes" has "$out" "nodes=2"
    check "$who: over the ucx transport, the default" has "$out" "transport=ucx"
    # Ranks write at once: two lock-free puts into one bucket may take the
    # same free slot and lose a pair (a miss, never a wrong value; see
    # mpikvs(3)), so the read-back asks for no wrong value and 99 % hits.
    check "$who: mpikvs-bench dht reads back the pairs, none wrong" \
        has "$out" "^read .* \(99\.[0-9][0-9]\|100\.00\)%  *0 "
    out=$(as "$who" srun --dht-size=64M -N2 -n4 \
        "$bench" dht --mode fine-lock --pairs 200 2>&1)
    check "$who: the fine-lock mode on 2 nodes, no OMPI_MCA_osc: every pair" \
        has "$out" "^read .* 100\.00%  *0 "
    out=$(as "$who" srun --dht-size=32M -N1 -n2 \
        "$bench" dht --pairs 200 2>&1)
    check "$who: mpikvs-bench dht on 1 node: the pairs, all direct" \
        has "$out" "^read .* \(99\.[0-9][0-9]\|100\.00\)%  *0  *0  *0  *0  *100.0%"

    echo "# job scope: a later step reads what an earlier one wrote ($who)"
    cat >"$work/steps.sh" <<EOF
#!/bin/bash
srun -n4 $steps write 500
echo "shape \$(od -An -t u8 -j 256 -N 16 /dev/shm/mpikvs.\$SLURM_JOB_ID.mpikvs1.kvs-data | xargs)"
srun -n4 $steps read 500
srun -n2 -N2 $steps read 500
srun -n4 --dht-scope=step $steps read 500
MPIKVS_CONFIG=$work/chem.json srun -n2 -N1 $steps read 1
# slurmstepd removes a step's regions just after srun returns
for i in \$(seq 50); do
    left=\$(ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*\.s[0-9]*-")
    [ "\$left" = 0 ] && break
    sleep 0.1
done
echo "step regions left \$left"
echo "batch MPIKVS_LAYOUT=\${MPIKVS_LAYOUT:-unset}"
EOF
    chmod 755 "$work/steps.sh"
    rm -f "$work/steps.out"
    batch_job "$work/steps.out" 120 \
        as "$who" sbatch -N2 -n4 -o "$work/steps.out" --dht-size=16M "$work/steps.sh"
    check "$who: the steps job completed ($state)" [ "$state" = COMPLETED ]
    check "$who: step 0 wrote 500 keys" has "$out" "write 500 keys: 0 hits, 0 wrong"
    check "$who: the library laid out the plugin's region (16-byte keys, 32-byte values)" \
        has "$out" "^shape 16 32$"
    check "$who: step 1 (same nodes, job scope) finds all 500" \
        has "$out" "read 500 keys: 2000 hits, 0 wrong, 0 missing, ranks 4"
    check "$who: step 2 (other rank placement) finds all 500" \
        has "$out" "read 500 keys: 1000 hits, 0 wrong, 0 missing, ranks 2"
    check "$who: step 3 (step scope) starts empty" \
        has "$out" "read 500 keys: 0 hits, 0 wrong, 2000 missing, ranks 4, layout .*s3-layout"
    check "$who: step 3's regions went at its end" has "$out" "step regions left 0"
    check "$who: a config path given to a job submitted without one is refused" \
        has "$out" "kvs_steps: open failed: $work/chem.json (MPIKVS_CONFIG) is not the job's config: the job has none (it was submitted without --dht-config); unset MPIKVS_CONFIG, or submit the job with --dht-config=$work/chem.json"
    check "$who: the batch script gets no MPIKVS_LAYOUT" has "$out" "batch MPIKVS_LAYOUT=unset"
    check "$who: the job's regions are gone after it ends" wait_gone "$job"
done

echo "# the node tier: published at the end of a step, read by the next"
printf '{ "version": 1, "tables": { "t": {\n  "key": { "key_size": 16 }, "value": { "value_size": 32 },\n  "tier": { "enabled": true, "size": "25%%", "caching": "always" } } } }\n' \
    >"$work/tier.json"
chmod 644 "$work/tier.json"
cat >"$work/tier.sh" <<EOF
#!/bin/bash
srun -n4 $steps write 500
srun -n4 $steps read 500
srun -n4 $steps read 500
ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*\.t-entries" | sed "s/^/tier regions /"
EOF
chmod 755 "$work/tier.sh"
batch_job "$work/tier.out" 120 as "$user" sbatch -N2 -n4 -o "$work/tier.out" \
    --dht-size=32M --dht-config="$work/tier.json" "$work/tier.sh"
check "the tier job completed ($state)" [ "$state" = COMPLETED ]
# both simulated nodes keep their regions in this host's /dev/shm
check "the plugin made a tier on each node" has "$out" "^tier regions 2$"
check "step 1 reads all 500 from the homes; its fence publishes" \
    has "$out" "read 500 keys: 2000 hits, 0 wrong, 0 missing, ranks 4, .*, tier 0 hits [1-9][0-9]* published"
tier_hits=$(grep "read 500 keys" <<<"$out" | sed -n '2s/.*tier \([0-9]*\) hits.*/\1/p')
check "step 2 finds the other node's keys in its node's tier ($tier_hits hits)" \
    [ "${tier_hits:-0}" -gt 0 ]
check "step 2 still reads every value right" \
    [ "$(grep -c 'read 500 keys: 2000 hits, 0 wrong, 0 missing' <<<"$out")" = 2 ]
wait_gone "$job"

# demo_built=no (make check sets it): configure left the demo out
if [ "${demo_built:-yes}" = no ]; then
    echo "# the demo through Slurm: not run, configure did not build the demo"
else
echo "# the demo through Slurm, as the README runs it (no OMPI_MCA_* set; a small grid)"
cp "$top_srcdir/etc/examples/reactive-transport.json" "$work/rt.json"
cp "$top_srcdir/tests/slurm/demo-job.sh" "$work/demo-job.sh"
chmod 644 "$work/rt.json"
chmod 755 "$work/demo-job.sh"
batch_job "$work/demo.out" 120 \
    as "$user" env RT_PROGRAM="$build/examples/reactive-transport/mpikvs-reactive-transport" \
    sbatch -N2 -n4 -o "$work/demo.out" --dht-size=64M \
    --dht-config="$work/rt.json" "$work/demo-job.sh" \
    --nx 24 --ny 20 --steps 8 --no-plot --csv "$work/demo.csv"
check "the demo job completed ($state)" [ "$state" = COMPLETED ]
check "the demo ran on 4 ranks" has "$out" ", 4 ranks$"
check "the demo took its config from the job" \
    has "$out" "the job's config (sbatch --dht-config)"
# hit_rate and max_rel_error of the cached run, from the CSV
demo_col() {
    awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
        NR > 1 && $1 == "cached" && c { print $c }' "$work/demo.csv" 2>/dev/null
}
rate=$(demo_col hit_rate) err=$(demo_col max_rel_error)
check "the demo's cached run hits in the plugin's DHT (rate $rate)" \
    awk -v r="${rate:-0}" 'BEGIN { exit !(r > 0) }'
check "the demo's cached run stays within 1e-3 (error $err)" \
    awk -v e="${err:-1}" 'BEGIN { exit !(e <= 1e-3) }'
check "the demo job's regions are gone" wait_gone "$job"
fi

echo "# sbatch options reach srun; srun options override them"
cat >"$work/propagate.sh" <<'EOF'
#!/bin/bash
srun -n2 bash -c 'echo "step0 $MPIKVS_LAYOUT"; stat -c "size %s" /dev/shm/mpikvs.$SLURM_JOB_ID.$SLURMD_NODENAME.chemistry-data'
srun -n2 --dht-scope=step bash -c 'echo "step1 $MPIKVS_LAYOUT"'
srun -n1 --dht-size=8M true
echo "config ${SLURM_SPANK_MPIKVS_JOB_CONFIG_PATH:-unset}"
EOF
chmod 755 "$work/propagate.sh"
batch_job "$work/propagate.out" 60 sbatch -N2 -o "$work/propagate.out" \
    --dht-size=64M --dht-config="$work/chem.json" "$work/propagate.sh"
check "sbatch's --dht-size and --dht-config reach srun" \
    has "$out" "step0 /dev/shm/mpikvs\.$job\.mpikvs1\.layout"
check "the config's chemistry table got its share of 64M" has "$out" "size 5435[0-9]*"
check "srun --dht-scope=step overrides sbatch's job scope" \
    has "$out" "step1 /dev/shm/mpikvs\.$job\.mpikvs[12]\.s1-layout"
check "a later step asking for another size is refused, saying why" \
    has "$out" "made by step 0 with 64.0 MiB per node and a config; this step asks for 8.0 MiB and the same config"
check "the job's validated config travelled with it" has "$out" "config $work/chem.json"
wait_gone "$job"

echo "# the job's config under its own name; a config path given to the library"
# The plugin's JSON travels as MPIKVS_JOB_CONFIG_JSON; MPIKVS_CONFIG is
# the library's, a file path.  Under the plugin the library refuses a
# path whose config is not the job's (the one checked at submission) and
# takes one whose content is, wherever the file is and however written.
printf '{ "version": 1, "tables": { "t": {\n  "key": { "key_size": 16 }, "value": { "value_size": 32 } } } }\n' \
    >"$work/cfg-job.json"
printf '{"version":1,"tables":{"t":{"value":{"value_size":32},"key":{"key_size":16},"slots_per_bucket":4}}}\n' \
    >"$work/cfg-same.json"
printf '{ "version": 1, "tables": { "t": {\n  "key": { "key_size": 16 }, "value": { "value_size": 32 },\n  "tier": { "enabled": true } } } }\n' \
    >"$work/cfg-other.json"
chmod 644 "$work"/cfg-*.json
cat >"$work/cfgpath.sh" <<EOF
#!/bin/bash
echo "json \${SLURM_SPANK_MPIKVS_JOB_CONFIG_JSON:0:1} old \${SLURM_SPANK_MPIKVS_CONFIG:-unset} user \$MPIKVS_CONFIG"
srun -n2 bash -c 'env | grep "^MPIKVS_\|^SLURM_SPANK_MPIKVS" | sed "s/=.*//; s/^/task has /"' | sort -u
srun -n2 $steps write 20
srun -n2 $steps read 20
MPIKVS_CONFIG=$work/cfg-other.json srun -n2 $steps read 20
echo "refused step exit \$?"
srun -n2 $steps read 20 $work/cfg-other.json
srun -n2 $steps read 20 $work/cfg-job.json
EOF
chmod 755 "$work/cfgpath.sh"
rm -f "$work/cfgpath.out"
# the user's own MPIKVS_CONFIG (the job's config at another path) goes
# with the job, as sbatch exports the environment
batch_job "$work/cfgpath.out" 120 as "$user" env MPIKVS_CONFIG="$work/cfg-same.json" \
    sbatch -N1 -n2 -o "$work/cfgpath.out" --dht-size=16M \
    --dht-config="$work/cfg-job.json" "$work/cfgpath.sh"
check "the config-path job completed ($state)" [ "$state" = COMPLETED ]
check "the batch script sees the job's JSON as SLURM_SPANK_MPIKVS_JOB_CONFIG_JSON (not SLURM_SPANK_MPIKVS_CONFIG) and the user's MPIKVS_CONFIG as given" \
    has "$out" "^json { old unset user $work/cfg-same.json$"
check "a task sees the user's MPIKVS_CONFIG, MPIKVS_LAYOUT and the plugin's own names" \
    [ "$(grep '^task has' <<<"$out" | xargs)" = "task has MPIKVS_CONFIG task has MPIKVS_LAYOUT task has SLURM_SPANK_MPIKVS_JOB_CONFIG_JSON task has SLURM_SPANK_MPIKVS_JOB_CONFIG_PATH" ]
check "the job's config at another path is taken, as the user's MPIKVS_CONFIG and as options.config" \
    [ "$(grep -c 'kvs_steps: read 20 keys: 40 hits, 0 wrong' <<<"$out")" = 2 ]
check "MPIKVS_CONFIG naming another config is refused, naming both and what to do" \
    has "$out" "kvs_steps: open failed: .*$work/cfg-other.json (MPIKVS_CONFIG) is not the job's config (--dht-config=$work/cfg-job.json, checked at submission).*unset MPIKVS_CONFIG"
check "the step of the refused open failed" has "$out" "^refused step exit [1-9]"
check "options.config naming another config is refused too" \
    has "$out" "kvs_steps: open failed: $work/cfg-other.json (options.config) is not the job's config (--dht-config=$work/cfg-job.json, checked at submission).*leave options.config NULL"
wait_gone "$job"

echo "# a node that cannot read the config file still gets it"
mv "$work/chem.json" "$work/chem-moved.json"
cat >"$work/moved.sh" <<EOF
#!/bin/bash
srun -n1 bash -c 'ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*chemistry-data"'
EOF
chmod 755 "$work/moved.sh"
cp "$work/chem-moved.json" "$work/chem.json"
out=$(sbatch -N1 -o "$work/moved.out" --dht-size=64M \
    --dht-config="$work/chem.json" "$work/moved.sh" 2>&1)
rm -f "$work/chem.json"     # gone before the job starts
job=$(sed -n 's/^Submitted batch job //p' <<<"$out")
cluster_wait_job "$dir" "$job" 60 >/dev/null
check "the job used the config checked at submit time" \
    has "$(cat "$work/moved.out")" "^1$"
mv "$work/chem-moved.json" "$work/chem.json"
wait_gone "$job"

echo "# bad input is rejected at submit time, before a job exists"
before=$(squeue -h | wc -l)
reject() {   # reject NAME EXPECTED-TEXT OPTIONS...
    local name=$1 want=$2 cmd out
    shift 2
    for cmd in sbatch srun salloc; do
        case $cmd in
            sbatch) out=$(timeout 20 sbatch -N1 "$@" --wrap true 2>&1) ;;
            srun) out=$(timeout 20 srun -N1 "$@" true 2>&1) ;;
            salloc) out=$(timeout 20 salloc -N1 "$@" true 2>&1) ;;
        esac
        if has "$out" "spank_mpikvs: .*$want" && lacks "$out" "Submitted batch job\|Granted job"; then
            ok "$cmd $name: rejected"
        else
            fail "$cmd $name: not rejected with '$want': $out"
        fi
    done
}
reject "--dht-size=0" "--dht-size: '0' is zero" --dht-size=0
reject "--dht-size=-5M" "'-5M' is not a size" --dht-size=-5M
reject "--dht-size=12Gb" "'12Gb' is not a size" --dht-size=12Gb
reject "--dht-size over the site's max_size" \
    "--dht-size=2.0 GiB is more than this site allows: 1.0 GiB" --dht-size=2G
reject "--dht-config of a missing file" \
    "--dht-config=$work/none.json: cannot read: No such file" --dht-config="$work/none.json"
reject "--dht-config with a bad value" \
    "--dht-config=$work/bad-mode.json: tables.t.mode: 'lock-free' is not one of" \
    --dht-config="$work/bad-mode.json"
reject "--dht-config with a bad transport" \
    "--dht-config=$work/bad-transport.json: tables.t.transport: 'verbs' is not one of: auto, mpi, ucx" \
    --dht-config="$work/bad-transport.json"
reject "--dht-config with near not coarser than the key" \
    "--dht-config=$work/near-not-coarser.json: tables.t.near: not coarser than the key: no field loses a digit" \
    --dht-config="$work/near-not-coarser.json"
reject "--dht-config with a JSON syntax error" \
    "--dht-config=$work/bad-syntax.json: line [0-9]*, column [0-9]*: invalid JSON" --dht-config="$work/bad-syntax.json"
reject "--dht-config whose tables do not fit" \
    "--dht-config=$work/big.json: tables: the tables need 64.0 MiB, more than the 32.0 MiB" \
    --dht-size=32M --dht-config="$work/big.json"
reject "--dht-config with a value over 1 MiB" \
    "--dht-config=$work/value-over.json: tables.t.value.value_size: 1048577 is more than the largest value, 1048576 bytes" \
    --dht-config="$work/value-over.json"
# a bucket of 4 slots of 1 MiB values does not fit 2 MiB: the refusal
# names its sizes
reject "--dht-size too small for one bucket of 1 MiB values" \
    "--dht-config=$work/large.json: tables.spectra.size: 2.0 MiB cannot hold counters for 64 ranks and one bucket of 4194496 bytes (4 slots of 16-byte keys and 1048576-byte values): it needs 4210880 bytes" \
    --dht-size=2M --dht-config="$work/large.json"
reject "--dht-scope=node" "--dht-scope=node: give job or step" --dht-scope=node
# The smallest usable size (one bucket of each table after counters for
# the site's min_ranks, 64 here), as mpikvs-config check works it out:
# one byte less is refused at submit time with it, in the unit given.
printf '{ "version": 1, "tables": { "t": { "key": { "key_size": 16 },\n  "value": { "value_size": 32 } } } }\n' \
    >"$work/tiny.json"
chmod 644 "$work/tiny.json"
smallest=$("$build/mpikvs-config/mpikvs-config" check --size 1K "$work/tiny.json" 2>&1 >/dev/null |
    sed -n 's/.*below the smallest usable size, [0-9]*K (\([0-9]*\) bytes).*/\1/p')
check "mpikvs-config names the smallest usable size of tiny.json ($smallest)" \
    has "$smallest" '^[0-9][0-9]*$'
reject "--dht-size=4K with a config" \
    "--dht-size=4K is below the smallest usable size, [0-9]*K ($smallest bytes): counters for 64 ranks and one bucket in each table" \
    --dht-size=4K --dht-config="$work/tiny.json"
reject "--dht-size one byte below the smallest usable size" \
    "--dht-size=$((smallest - 1)) is below the smallest usable size, $smallest:" \
    --dht-size=$((smallest - 1)) --dht-config="$work/tiny.json"
reject "--dht-size=4K without a config" \
    "--dht-size=4K is below the smallest usable size, [0-9]*K ([0-9]* bytes): counters for 64 ranks and one bucket of the smallest shape" \
    --dht-size=4K
for name in s3 s3-x; do
    reject "--dht-config with a table named $name" \
        "--dht-config=$work/steplike-$name.json: tables.$name: names of the form s<digits> and s<digits>-... are kept for step-scope regions" \
        --dht-config="$work/steplike-$name.json"
done
out=$(cluster_runuser "$dir" timeout 20 sbatch -N1 --dht-config="$work/unreadable.json" --wrap true 2>&1)
check "sbatch --dht-config of a file the user cannot read: rejected" \
    has "$out" "spank_mpikvs: --dht-config=$work/unreadable.json: cannot read: Permission denied"
check "no job was queued by any rejected submission" [ "$(squeue -h | wc -l)" = "$before" ]

echo "# a job at exactly the smallest usable size puts and gets"
cat >"$work/smallest.sh" <<EOF
#!/bin/bash
srun -n2 $steps write 4 $work/tiny.json
srun -n2 $steps read 4 $work/tiny.json
EOF
chmod 755 "$work/smallest.sh"
rm -f "$work/smallest.out"
batch_job "$work/smallest.out" 120 \
    as "$user" sbatch -N1 -n2 -o "$work/smallest.out" --dht-size="$smallest" \
    --dht-config="$work/tiny.json" "$work/smallest.sh"
check "the job at $smallest bytes completed ($state)" [ "$state" = COMPLETED ]
check "it wrote 4 keys into its one bucket" has "$out" "write 4 keys: 0 hits, 0 wrong"
check "it read all 4 back on both ranks" \
    has "$out" "read 4 keys: 8 hits, 0 wrong, 0 missing, ranks 2"
check "its regions are gone after it ends" wait_gone "$job"

echo "# a /dev/shm too small for the request"
mkdir -p "$smallshm"
mount -t tmpfs -o size=16M,mode=1777 mpikvs-test "$smallshm"
set_site max_size=1G shm_dir="$smallshm"
out=$(timeout 60 srun --dht-size=64M -N1 -n1 echo task ran 2>&1)
check "the step fails at launch, saying what was asked and what is free" \
    has "$out" "spank_mpikvs: .*cannot reserve 64.0 MiB in $smallshm: 16.0 MiB free"
check "no task of that step ran" lacks "$out" "task ran"
check "nothing is left in the small shm dir" [ -z "$(ls -A "$smallshm")" ]
out=$(timeout 60 srun --dht-size=8M -N1 -n1 bash -c 'echo "fits $MPIKVS_LAYOUT"' 2>&1)
check "a request that fits works there" has "$out" "fits $smallshm/mpikvs\."
set_site max_size=1G default_size=32M

echo "# a bad plugstack.conf argument is one clear line"
set_site max_size=lots
out=$(timeout 60 srun --dht-size=8M -N2 -n2 true 2>&1)
check "bad site argument named" has "$out" "spank_mpikvs: plugstack.conf argument 'max_size=lots'"
# The job's epilogs run with the bad argument too: wait for them to end.
check "the failed job ended, epilogs included" wait_no_jobs
set_site max_size=1G default_size=32M
check "the epilog still cleans up: both nodes idle ($(node_states))" \
    [ "$(node_states)" = "mpikvs1 idle mpikvs2 idle" ]

echo "# cleanup after a task killed with SIGKILL, and after scancel"
# The job id comes from Slurm (sbatch --parsable), never from what a task
# printed: srun drops the last output of a task that is killed.  What the
# tasks saw before they died they leave in files, which the kill cannot
# take back.
cat >"$work/killed.sh" <<EOF
#!/bin/bash
srun -N2 -n2 bash -c 'ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\.\$SLURMD_NODENAME\." >$work/killed.\$SLURM_PROCID; kill -9 \$\$'
echo "srun exit \$?"
# slurmstepd removes a step's regions just after srun returns
for i in \$(seq 50); do
    left=\$(ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*\.s[0-9]*-")
    [ "\$left" = 0 ] && break
    sleep 0.1
done
echo "step regions left \$left"
echo "job regions \$(ls /dev/shm | grep "^mpikvs\.\$SLURM_JOB_ID\." | grep -vc "\.s[0-9]*-")"
EOF
chmod 755 "$work/killed.sh"
for scope in step job; do
    rm -f "$work"/killed.[01] "$work/killed.out"
    job=$(sbatch --parsable -N2 -o "$work/killed.out" --dht-size=16M \
        --dht-scope=$scope "$work/killed.sh" 2>&1)
    state=$(cluster_wait_job "$dir" "$job" 60)
    out=$(cat "$work/killed.out" 2>&1)
    check "SIGKILL, $scope scope: sbatch gave a job id ($job)" has "$job" '^[0-9][0-9]*$'
    check "SIGKILL, $scope scope: the batch script went on ($state)" [ "$state" = COMPLETED ]
    check "SIGKILL, $scope scope: both tasks saw their node's regions" \
        [ "$(cat "$work"/killed.[01] 2>/dev/null | grep -c '^[1-9]')" = 2 ]
    check "SIGKILL, $scope scope: srun reported the killed tasks" \
        has "$out" "^srun exit [1-9]"
    check "SIGKILL, $scope scope: no step region is left after the step" \
        has "$out" "^step regions left 0$"
    if [ $scope = step ]; then
        check "SIGKILL, step scope: the job had no region of its own" \
            has "$out" "^job regions 0$"
    else
        check "SIGKILL, job scope: the job's regions stay until the job ends" \
            has "$out" "^job regions [1-9]"
    fi
    check "SIGKILL, $scope scope: the job's regions are gone at job end" wait_gone "$job"
done
if [ "${MPI_FAMILY:-openmpi}" = mpich ]; then
    # under MPICH the step's other ranks do not end after one is killed
    # (mpikvs(3), "A rank that dies"): the step, and the job, would wait
    echo "# a killed rank, job scope: not run under MPICH (its survivors of a killed rank do not end)"
else
    # a rank of libmpikvs killed in a step: the plugin's job-scope regions
    # keep their names (libmpikvs unlinks only the regions it made itself),
    # and the next step reads what the killed one wrote
    cat >"$work/rank-killed.sh" <<EOF
#!/bin/bash
srun -n4 $steps write-kill 500
echo "srun exit \$?"
echo "job regions \$(ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*\.kvs-data\$")"
srun -n4 $steps read 500
EOF
    chmod 755 "$work/rank-killed.sh"
    batch_job "$work/rank-killed.out" 120 sbatch -N2 -n4 -o "$work/rank-killed.out" \
        --dht-size=16M "$work/rank-killed.sh"
    check "a killed rank, job scope: the job completed ($state)" [ "$state" = COMPLETED ]
    check "a killed rank, job scope: srun reported the killed rank" \
        has "$out" "^srun exit [1-9]"
    check "a killed rank, job scope: both nodes' data regions keep their names" \
        has "$out" "^job regions 2$"
    check "a killed rank, job scope: the next step reads all 500 keys" \
        has "$out" "read 500 keys: 2000 hits, 0 wrong, 0 missing, ranks 4"
    check "a killed rank, job scope: the job's regions are gone at job end" wait_gone "$job"
fi
timeout 60 srun --dht-size=16M -N2 -n2 sleep 60 >"$work/sleep.out" 2>&1 &
for _ in $(seq 100); do
    job=$(last_job)
    [ -n "$job" ] && [ "$(regions "$job" | wc -l)" -ge 4 ] && break
    sleep 0.1
done
check "a running srun step holds its regions" [ "$(regions "$job" | wc -l)" -ge 4 ]
scancel "$job"
wait
check "scancel of a running srun: its regions are gone" wait_gone "$job"

echo "# region names of the next job squatted by another user"
# The test user plants something under a region name of the next job (its
# id from slurmctld: nothing else submits meanwhile), then root runs a job
# there.  The plugin must neither hang (a hung slurmstepd is a job that
# does not end in time) nor follow, read or join the plant, nor fail
# root's step because of it: the step runs on regions of its own.
printf 'mine\n' >"$work/squat-target"
chown "$user" "$work/squat-target"
cat >"$work/squat.sh" <<'EOF'
#!/bin/bash
srun -n1 bash -c 'stat -c "layout %U %F" "$MPIKVS_LAYOUT"
    stat -c "data %U %F" "${MPIKVS_LAYOUT%.layout}.kvs-data"'
EOF
chmod 755 "$work/squat.sh"
next_job() { scontrol show config | sed -n 's/^NEXT_JOB_ID *= *//p'; }
# squat WHAT TAG TYPE CMD...: run CMD as the test user with the path of
# the next job's region TAG on mpikvs1 as its last argument, then the job;
# TYPE is what the plugin says it removed.
squat() {
    local what=$1 tag=$2 type=$3 id path f
    shift 3
    id=$(next_job)
    path=/dev/shm/mpikvs.$id.mpikvs1.$tag
    cluster_runuser "$dir" "$@" "$path"
    check "$what: planted by $user" \
        [ "$(stat -c %U "$path" 2>/dev/null)" = "$user" ]
    rm -f "$work/squat.out"
    batch_job "$work/squat.out" 60 sbatch -N1 -w mpikvs1 \
        -o "$work/squat.out" --dht-size=8M "$work/squat.sh"
    check "$what: the job got the id planted for ($job, $id)" [ "$job" = "$id" ]
    check "$what: root's job ends in time ($state)" [ "$state" = COMPLETED ]
    check "$what: the step ran on root's own layout" \
        has "$out" "^layout root regular file$"
    check "$what: and on root's own data region" \
        has "$out" "^data root regular file$"
    check "$what: the slurmd log says what was removed" \
        has "$(cat "$dir/log/slurmd-mpikvs1.log")" \
        "spank_mpikvs: job $id step 0: removed $path, $type of uid $(id -u "$user")"
    lacks "$out" "^data root regular file$" &&
        echo "$out" | sed 's/^/    job output: /'
    if [ "$state" != COMPLETED ]; then
        # a plugin blocked opening a FIFO: give it a writer, then end it
        for f in /dev/shm/mpikvs."$id".*; do
            [ -p "$f" ] && timeout 5 bash -c 'exec 3<>"$1"' _ "$f"
        done
        scancel "$id"
        cluster_wait_job "$dir" "$id" 30 >/dev/null
    fi
    check "$what: nothing of job $id is left in /dev/shm" wait_gone "$id"
    rm -f "$path"   # only where the check above failed
}
squat "a FIFO at the layout's name" layout "a FIFO" mkfifo -m 666
squat "a symbolic link at the layout's name" layout "a symbolic link" \
    ln -s "$work/squat-target"
squat "a FIFO at the data region's name" kvs-data "a FIFO" mkfifo -m 666
squat "a user's regular file with a region header at the data region's name" \
    kvs-data "a regular file" \
    sh -c 'printf MPIKVSrg >"$1" && truncate -s 8M "$1" && chmod 666 "$1"' sh
check "the link's target was not touched" \
    [ "$(stat -c '%U %s' "$work/squat-target")" = "$user 5" ]
# The library opens what MPIKVS_LAYOUT names the same way: a FIFO there
# is refused at once, not waited on.
cluster_runuser "$dir" mkfifo -m 666 /dev/shm/mpikvs-test-fifo.layout
out=$(timeout 60 srun -N1 -n1 \
    env MPIKVS_LAYOUT=/dev/shm/mpikvs-test-fifo.layout \
    "$bench" dht --pairs 10 2>&1)
check "a FIFO as the job layout: refused at once, saying what it is" \
    has "$out" "/dev/shm/mpikvs-test-fifo.layout is not a regular file (a FIFO)"
rm -f /dev/shm/mpikvs-test-fifo.layout
# A file of the job's own user is not removed: the step fails, naming it.
id=$(next_job)
path=/dev/shm/mpikvs.$id.mpikvs1.kvs-data
cluster_runuser "$dir" sh -c 'printf MPIKVSrg >"$1"' sh "$path"
rm -f "$work/own.out"
batch_job "$work/own.out" 60 as "$user" sbatch -N1 -w mpikvs1 \
    -o "$work/own.out" --dht-size=8M "$work/squat.sh"
check "own file: the job got the id planted for ($job, $id)" [ "$job" = "$id" ]
check "own file: the job ends in time ($state)" \
    [ "${state#TIMEOUT_WAITING}" = "$state" ]
check "own file: the step fails, naming the file" \
    has "$out" "spank_mpikvs: job $id step 0: $path already exists (a regular file of uid $(id -u "$user")"
check "own file: no task ran" lacks "$out" "^layout "
check "own file: nothing of job $id is left in /dev/shm" wait_gone "$id"
rm -f "$path"   # only where the check above failed
# A directory with a file in it: a user's, never removed as root; the step
# fails naming it, and the epilog leaves it without failing (a failed
# epilog drains the node).
id=$(next_job)
path=/dev/shm/mpikvs.$id.mpikvs1.kvs-data
cluster_runuser "$dir" sh -c 'mkdir "$1" && echo x >"$1/f"' sh "$path"
rm -f "$work/dir.out"
batch_job "$work/dir.out" 60 sbatch -N1 -w mpikvs1 \
    -o "$work/dir.out" --dht-size=8M "$work/squat.sh"
check "directory: the job got the id planted for ($job, $id)" [ "$job" = "$id" ]
check "directory: the job ends in time ($state)" \
    [ "${state#TIMEOUT_WAITING}" = "$state" ]
check "directory: the step fails, naming it" \
    has "$out" "spank_mpikvs: job $id step 0: $path is taken by a directory of uid $(id -u "$user")"
check "directory: what is in it was not touched" [ "$(cat "$path/f")" = x ]
node_state=$(sinfo -h -n mpikvs1 -o %t)
check "directory: the job's epilog did not drain the node ($node_state)" \
    [ "$node_state" = idle ]
[ "$node_state" = idle ] || scontrol update nodename=mpikvs1 state=resume
rm -r "$path"
check "directory: nothing else of job $id is left in /dev/shm" wait_gone "$id"

echo "# nothing of any test job is left"
left=$(cluster_regions "$dir")
check "no mpikvs.<jobid>.* in /dev/shm${left:+: }$(echo $left)" [ -z "$left" ]
check "every job ended" wait_no_jobs
check "no node was drained or is down ($(node_states))" \
    [ "$(node_states)" = "mpikvs1 idle mpikvs2 idle" ]

checks_done run-slurm-tests
