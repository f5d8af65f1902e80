#!/bin/bash
# run-persist-slurm-test.sh - spank_mpikvs and the config's persist
# paths (mpikvs.json(5)) against a real Slurm (cluster.sh: munged,
# slurmctld, two slurmd on this machine, stopped at the end whatever
# happens).  At submission, as the test user, a load file the user cannot
# read and a save directory the user cannot write into are refused, with
# the config path and the table named; paths the user can use are taken.
# Then a job of the user writes keys through libmpikvs, whose close saves
# them: the file belongs to the user (the plugin, root on the nodes,
# never makes it), and a second job's open loads them.
# Exits 77 (SKIP) without root or in a sanitizer build, as
# run-slurm-tests.sh does.
set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/slurm/checks.sh"
slurm_test_needs
steps=$build/tests/slurm/kvs_steps

. "$top_srcdir/tests/slurm/cluster.sh"

base=$(mktemp -d /tmp/mpikvs-persist-slurm.XXXXXX)
chmod 755 "$base"
dir=$base/cluster
plugstack=$base/plugstack.conf
cleanup() {
    cluster_stop "$dir"
    rm -rf "$base"
}
trap cleanup EXIT

echo "required $plugin max_size=1G default_size=32M" >"$plugstack"
cluster_start "$dir" 2 "$plugstack" || { echo "FAIL: cluster start"; exit 1; }
cluster_env "$dir" >/dev/null
user=$(cluster_user) || { echo "FAIL: no test user"; exit 1; }
work=$dir/tmp     # writable by the test user
unset OMPI_MCA_osc OMPI_MCA_btl   # the cluster's TaskProlog sets OMPI_MCA_btl
export OMPI_MCA_rmaps_base_oversubscribe=1

as_user() { cluster_runuser "$dir" timeout 120 "$@"; }

# config NAME LOAD SAVE: a config of kvs_steps' sizes with those paths
config() {
    printf '{ "version": 1, "tables": { "t": {\n  "key": { "key_size": 16 }, "value": { "value_size": 32 },\n  "persist": { "load": "%s", "save": "%s" } } } }\n' \
        "$2" "$3" >"$work/$1.json"
    chmod 644 "$work/$1.json"
}
mkdir -p "$base/rootonly"
chmod 700 "$base/rootonly"
echo secret >"$base/rootonly.kvs"
chmod 600 "$base/rootonly.kvs"
mkdir -p "$work/saves"
chown "$user" "$work/saves"
config unreadable "$base/rootonly.kvs" "$work/saves/t.kvs"
config unwritable "$work/saves/t.kvs" "$base/rootonly/t.kvs"
config nodir "$work/saves/t.kvs" "$work/none/t.kvs"
config good "$work/saves/t.kvs" "$work/saves/t.kvs"

echo "# persist paths the user cannot use are refused at submission"
before=$(squeue -h | wc -l)
out=$(as_user sbatch -N1 --dht-config="$work/unreadable.json" --wrap true 2>&1)
check "a load file the user cannot read" \
    has "$out" "spank_mpikvs: --dht-config=$work/unreadable.json: tables.t.persist.load: cannot read $base/rootonly.kvs: Permission denied"
out=$(as_user srun -N1 --dht-config="$work/unwritable.json" true 2>&1)
check "a save directory the user cannot write into" \
    has "$out" "spank_mpikvs: --dht-config=$work/unwritable.json: tables.t.persist.save: cannot write into $base/rootonly: Permission denied"
out=$(as_user salloc -N1 --dht-config="$work/nodir.json" true 2>&1)
check "a save directory that does not exist" \
    has "$out" "spank_mpikvs: --dht-config=$work/nodir.json: tables.t.persist.save: the directory $work/none does not exist"
check "no job was queued" [ "$(squeue -h | wc -l)" = "$before" ]

echo "# a campaign: the first job saves, the second loads"
# MPIKVS_VERBOSE=1: rank 0 says what each open opened (mpikvs_info(3))
printf '#!/bin/bash\nMPIKVS_VERBOSE=1 srun -n2 %s "$1" 20\n' "$steps" >"$work/warm.sh"
chmod 755 "$work/warm.sh"
rm -f "$work/first.out" "$work/second.out"
batch_job "$work/first.out" 120 as_user sbatch -N2 -n2 -o "$work/first.out" \
    --dht-scope=step --dht-config="$work/good.json" "$work/warm.sh" write
check "the first job completed ($state)" [ "$state" = COMPLETED ]
check "its open found no file to load: a cold start" \
    has "$out" "kvs_steps: write 20 keys"
check "MPIKVS_VERBOSE=1: the job id of the plugin's regions" \
    has "$out" "^job: $job (spank_mpikvs's regions, kept after close)$"
check "MPIKVS_VERBOSE=1: 2 nodes" has "$out" "^nodes: 2$"
check "MPIKVS_VERBOSE=1: the job's config" \
    has "$out" "^config: $work/good.json (the job's --dht-config)$"
check "MPIKVS_VERBOSE=1: no file to load yet" \
    has "$out" "^persist: no file at $work/saves/t.kvs yet (a cold start)$"
owner=$(stat -c %U "$work/saves/t.kvs" 2>&1)
check "its close saved the file, owned by the user ($owner)" \
    [ "$owner" = "$user" ]
check "its mode is 0600 ($(stat -c %a "$work/saves/t.kvs" 2>&1))" \
    [ "$(stat -c %a "$work/saves/t.kvs" 2>&1)" = 600 ]
check "no partial file is left" \
    [ -z "$(ls "$work/saves" | grep '^t\.kvs\.partial')" ]
batch_job "$work/second.out" 120 as_user sbatch -N2 -n2 -o "$work/second.out" \
    --dht-scope=step --dht-config="$work/good.json" "$work/warm.sh" read
check "the second job completed ($state)" [ "$state" = COMPLETED ]
check "its open loaded every key the first saved" \
    has "$out" "kvs_steps: read 20 keys: 40 hits, 0 wrong, 0 missing"
check "MPIKVS_VERBOSE=1: persist loaded the 20 entries" \
    has "$out" "^persist: loaded 20 of 20 entries from $work/saves/t.kvs$"

checks_done "run-persist-slurm-test"
