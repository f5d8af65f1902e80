#!/bin/bash
# run-tmpfs-tests.sh - spank_mpikvs under JobContainerType=job_container/
# tmpfs: every job has a mount namespace of its own with a private
# /dev/shm and /tmp, and the plugin (ns_path=) must make the regions in
# there, where the tasks look, not in the node's /dev/shm.
#
# A real munged, slurmctld and two slurmd (cluster.sh) with
# PrologFlags=Contain and a job_container.conf.  The cluster lives under /var/tmp, not /tmp: a job's
# /tmp is private, and the tasks must still reach the cluster's files.
# Exits 77 (SKIP) without root or in a sanitizer build, as
# run-slurm-tests.sh does.
set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/slurm/checks.sh"
slurm_test_needs unshare nsenter
unshare -m true 2>/dev/null ||
    skip "this machine does not allow mount namespaces (job_container/tmpfs needs them)"

. "$top_srcdir/tests/slurm/cluster.sh"

base=$(mktemp -d /var/tmp/mpikvs-jc.XXXXXX)
chmod 755 "$base"
dir=$base/cluster
plugstack=$base/plugstack.conf
bin=$base/bin
# Unmount what job_container/tmpfs left if a job outlived the test.
unmount_under() {
    awk -v b="$1" 'index($2, b) == 1 { print $2 }' /proc/self/mounts |
        sort -r | while read -r m; do umount -l "$m"; done
}
cleanup() {
    cluster_stop "$dir"
    unmount_under "$base"
    rm -rf "$base"
}
trap cleanup EXIT

set_site() { echo "required $bin/spank_mpikvs.so $*" >"$plugstack"; }
host_regions() { ls /dev/shm | grep -c "^mpikvs\.$1\." ; }
in_work() { (cd "$work" && "$@"); }

# The plugin and the tasks' programs, where a job's namespace shows them
# (an srun in a batch script loads the plugin in there too): the build
# tree may be under /tmp, which the job sees as its private one.
mkdir -p "$bin"
cp "$plugin" "$build/tests/slurm/.libs/kvs_steps" \
    "$build"/libmpikvs/.libs/libmpikvs.so.* "$bin/"
export LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
steps=$bin/kvs_steps

mkdir -p "$base/jc"
export CLUSTER_EXTRA_CONF="JobContainerType=job_container/tmpfs
PrologFlags=Contain"
# Slurm built for several slurmd on one host (as Debian's is, and as the
# simulated nodes need) appends /<node name> to BasePath by itself.
export CLUSTER_JOB_CONTAINER_CONF="AutoBasePath=true
BasePath=$base/jc"
set_site default_size=32M "ns_path=$base/jc/%n/%j/.ns"
cluster_start "$dir" 2 "$plugstack" || { echo "FAIL: cluster start"; exit 1; }
cluster_env "$dir" >/dev/null
work=$dir/tmp
# The library's defaults: its ucx transport needs no one-sided component
# (no OMPI_MCA_osc), as a user's job sets none; OMPI_MCA_btl comes from
# the cluster's TaskProlog.
unset OMPI_MCA_osc OMPI_MCA_btl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
host_shm_dev=$(stat -c %d /dev/shm)

echo "# the tasks find the regions in their private /dev/shm"
out=$(cd "$work" && timeout 120 srun --dht-size=32M -N2 -n2 -l bash -c '
    echo "dev $(stat -c %d /dev/shm)"
    echo "layout $(stat -c "%U %a" "$MPIKVS_LAYOUT")"
    echo "seen $(ls /dev/shm | grep -c "^mpikvs\.$SLURM_JOB_ID\.$SLURMD_NODENAME\.")"
    echo "job $SLURM_JOB_ID"' 2>&1)
job=$(sed -n 's/.*job \([0-9]*\)$/\1/p' <<<"$out" | head -n1)
check "the step ran on both nodes" [ "$(grep -c 'seen 2$' <<<"$out")" = 2 ]
check "the tasks' /dev/shm is not the node's" lacks "$out" "dev $host_shm_dev\$"
check "the layout is in there, root's, 0640" has "$out" "layout root 640"

echo "# while a step runs: the regions are in the job's namespace only"
(cd "$work" && timeout 60 srun --dht-size=32M -N2 -n2 sleep 30 >/dev/null 2>&1) &
in_ns=0
for _ in $(seq 100); do
    job=$(squeue -h -o %i | sort -n | tail -n1)
    if [ -n "$job" ] && [ -e "$base/jc/mpikvs2/$job/.ns" ]; then
        in_ns=$(for n in mpikvs1 mpikvs2; do
            nsenter --mount="$base/jc/$n/$job/.ns" ls /dev/shm 2>/dev/null
        done | grep -c "^mpikvs\.$job\.")
        [ "$in_ns" = 4 ] && break
    fi
    sleep 0.1
done
check "each node's job namespace has the layout and the data region ($in_ns)" \
    [ "$in_ns" = 4 ]
check "the node's /dev/shm has none of them" \
    [ -n "$job" -a "$(host_regions "$job")" = 0 ]
scancel "$job"
wait
for _ in $(seq 100); do
    [ ! -e "$base/jc/mpikvs1/$job" ] && [ ! -e "$base/jc/mpikvs2/$job" ] && break
    sleep 0.1
done
check "at the job's end job_container/tmpfs removed its namespace" \
    [ ! -e "$base/jc/mpikvs1/$job" ]
check "... on both nodes" [ ! -e "$base/jc/mpikvs2/$job" ]

echo "# libmpikvs through the plugin's regions; job scope across steps"
cat >"$work/steps.sh" <<EOF
#!/bin/bash
srun -n4 $steps write 300
srun -n4 $steps read 300
srun -n4 --dht-scope=step bash -c 'ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*\.s2-" | sed "s/^/own /"'
for i in \$(seq 50); do
    left=\$(ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*\.s2-")
    [ "\$left" = 0 ] && break
    sleep 0.1
done
echo "step regions left \$left"
srun -N2 -n2 bash -c 'ls /dev/shm | grep -c "^mpikvs\.\$SLURM_JOB_ID\..*kvs-data" | sed "s/^/data /"'
EOF
chmod 755 "$work/steps.sh"
batch_job "$work/steps.out" 120 in_work sbatch -N2 -n4 -o "$work/steps.out" \
    --dht-size=16M "$work/steps.sh"
check "the steps job completed ($state)" [ "$state" = COMPLETED ]
check "step 0 wrote 300 keys" has "$out" "write 300 keys: 0 hits, 0 wrong"
check "step 1 (job scope) finds all 300" \
    has "$out" "read 300 keys: 1200 hits, 0 wrong, 0 missing, ranks 4"
check "a step-scope step has its own regions in the namespace" \
    [ "$(grep -c '^own [1-9]' <<<"$out")" -ge 1 ]
check "the step-scope regions went at the step's end" has "$out" "step regions left 0"
check "the job's data regions stay for later steps" \
    [ "$(grep -c '^data 1$' <<<"$out")" = 2 ]
check "the node's /dev/shm never had them" [ -n "$job" -a "$(host_regions "$job")" = 0 ]

echo "# an ns_path that does not match BasePath is refused, saying what to check"
set_site default_size=32M "ns_path=$base/elsewhere/%j/.ns"
out=$(cd "$work" && timeout 60 srun --dht-size=32M -N1 -n1 echo ran 2>&1)
check "the step failed" lacks "$out" "^ran"
check "it says which file and what to check" \
    has "$out" "cannot open the job's mount namespace $base/elsewhere/[0-9]*/.ns (plugstack argument ns_path): No such file or directory; is JobContainerType=job_container/tmpfs"

echo "# a bad ns_path argument"
set_site "ns_path=$base/jc/%h/.ns"
out=$(cd "$work" && timeout 60 srun --dht-size=32M -N1 -n1 echo ran 2>&1)
check "an unknown escape is refused at submit" \
    has "$out" "ns_path=.*only %j (job id), %n (node name) and %% may follow a %"

echo "# nothing is left"
left=$(cluster_regions "$dir")
check "no mpikvs.<jobid>.* in the node's /dev/shm${left:+: }$(echo $left)" [ -z "$left" ]
check "every job ended" wait_no_jobs
check "no node was drained or is down ($(node_states))" \
    [ "$(node_states)" = "mpikvs1 idle mpikvs2 idle" ]

checks_done run-tmpfs-tests
