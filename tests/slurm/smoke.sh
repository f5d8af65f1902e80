#!/bin/bash
#
# smoke.sh [DIR_PARENT] - a self-test of tests/slurm/cluster.sh: start a
# private 2-node Slurm cluster in a fresh directory under DIR_PARENT
# (default $TMPDIR or /tmp), run jobs on it as root and as the test user,
# stop it, and check that nothing of it is left running.
#
# Prints one PASS/FAIL line per check; exits 0 when all pass, 1 on any
# failure, 77 (skip) when not root or Slurm/munge is not installed.  The
# directory is removed after a clean run and kept (its path printed) after
# a failed one, or always with SMOKE_KEEP=1.  SMOKE_PLUGSTACK=FILE
# starts the cluster with that plugstack.conf (the checks must pass with
# the plugins loaded but unused).  Every wait is bounded.

set -u
LC_ALL=C
export LC_ALL
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/slurm/cluster.sh
. "$here/cluster.sh"

PATH=$PATH:/usr/sbin:/sbin
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: smoke.sh must run as root"
    exit 77
fi
for prog in munged slurmctld slurmd srun sbatch scontrol squeue scancel sinfo; do
    if ! command -v "$prog" >/dev/null 2>&1; then
        echo "SKIP: $prog is not installed"
        exit 77
    fi
done
# Nothing of a surrounding job may leak into these jobs.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

parent=${1:-${TMPDIR:-/tmp}}
mkdir -p "$parent" || exit 1
dir=$(mktemp -d "$(cluster__abs "$parent")/mpikvs-slurm.XXXXXX") || exit 1
chmod 755 "$dir"
pass=0
fail=0
# shellcheck disable=SC2317
finish() {
    cluster_stop "$dir"
    if [ "$fail" -eq 0 ] && [ "${SMOKE_KEEP:-0}" != 1 ]; then
        rm -rf "$dir"
    else
        echo "kept $dir"
    fi
}
trap finish EXIT
trap 'echo "INTERRUPTED"; fail=$((fail + 1)); exit 1' INT TERM HUP

ok() {
    echo "PASS: $*"
    pass=$((pass + 1))
}
bad() {
    echo "FAIL: $*"
    fail=$((fail + 1))
}
# show TEXT: indent TEXT under a FAIL line.
show() {
    printf '%s\n' "$1" | sed 's/^/    | /' | head -40
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# 0. Start.
t0=$(now_ms)
if ! cluster_start "$dir" 2 ${SMOKE_PLUGSTACK:+"$SMOKE_PLUGSTACK"}; then
    bad "cluster_start $dir 2 ${SMOKE_PLUGSTACK:-}"
    exit 1
fi
t1=$(now_ms)
echo "cluster_start took $((t1 - t0)) ms"
ok "cluster_start: 2 nodes idle"
cluster_env "$dir" >/dev/null
user=$(cluster_user) || {
    bad "cluster_user"
    exit 1
}
daemons=$(cluster_pids "$dir")
echo "daemons: $(cluster__words "$daemons")"
# steps_left: the pids of the cluster other than its daemons (slurmstepd).
steps_left() {
    cluster_pids "$dir" | grep -vxF "$daemons"
}
jobdir=$dir/work
cd "$jobdir" || exit 1

# nodes_of OUTPUT: "mpikvs1 mpikvs1 mpikvs2 mpikvs2" from env lines.
nodes_of() {
    printf '%s\n' "$1" | sed -n 's/^SLURMD_NODENAME=//p' | sort | xargs
}

# 1. srun as root.
if out=$(timeout 30 srun -N1 -n1 hostname 2>&1) && [ "$out" = "$(hostname)" ]; then
    ok "srun -N1 -n1 hostname: $out"
else
    bad "srun -N1 -n1 hostname"
    show "$out"
fi
out=$(timeout 30 srun -N2 -n4 env 2>&1)
got=$(nodes_of "$out")
if [ "$got" = "mpikvs1 mpikvs1 mpikvs2 mpikvs2" ]; then
    ok "srun -N2 -n4 env: $got"
else
    bad "srun -N2 -n4 env: SLURMD_NODENAME '$got'"
    show "$out"
fi

# 2. The same as the test user.
if out=$(timeout 30 runuser -u "$user" -- env "SLURM_CONF=$SLURM_CONF" \
    srun -N1 -n1 id -un 2>&1) && [ "$out" = "$user" ]; then
    ok "srun -N1 -n1 as $user: runs as $out"
else
    bad "srun -N1 -n1 id -un as $user"
    show "$out"
fi
out=$(cluster_runuser "$dir" timeout 30 srun -N2 -n4 env 2>&1)
got=$(nodes_of "$out")
if [ "$got" = "mpikvs1 mpikvs1 mpikvs2 mpikvs2" ] &&
    printf '%s\n' "$out" | grep -qx "USER=$user"; then
    ok "srun -N2 -n4 env as $user: $got"
else
    bad "srun -N2 -n4 env as $user: SLURMD_NODENAME '$got'"
    show "$out"
fi

# 3. A batch job, polled to its end.
batch_out=$jobdir/batch.out
jobid=$(timeout 10 sbatch --parsable -N2 -o "$batch_out" -t 1 \
    --wrap 'srun -n2 printenv SLURMD_NODENAME' 2>&1)
if [ -z "$jobid" ] || [ -n "$(printf '%s' "$jobid" | tr -d 0-9)" ]; then
    bad "sbatch: $jobid"
else
    state=$(cluster_wait_job "$dir" "$jobid" 30)
    got=$(sort "$batch_out" 2>/dev/null | xargs)
    if [ "$state" = COMPLETED ] && [ "$got" = "mpikvs1 mpikvs2" ]; then
        ok "sbatch -N2 --wrap 'srun -n2 ...': job $jobid $state, output: $got"
    else
        bad "sbatch job $jobid: state $state, output '$got'"
        show "$(cat "$batch_out" 2>&1)"
    fi
fi

# 4. MPI: hello world, and an MPI_Get across the nodes.
mpicc=${MPICC:-mpicc}
if ! command -v "$mpicc" >/dev/null 2>&1; then
    bad "$mpicc not found (install libopenmpi-dev or libmpich-dev)"
else
    mkdir -p "$jobdir/mpi"
    cat >"$jobdir/mpi/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int rank, size;
    const char *node = getenv("SLURMD_NODENAME");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d on %s\n", rank, size, node ? node : "?");
    MPI_Finalize();
    return 0;
}
EOF
    cat >"$jobdir/mpi/get.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* Every rank exposes 1000 + rank and reads the value of the rank half a
 * world away, which the block layout of -N2 puts on the other node. */
int main(int argc, char **argv)
{
    int rank, size, mine, got = -1, peer;
    MPI_Win win;
    const char *node = getenv("SLURMD_NODENAME");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = 1000 + rank;
    MPI_Win_create(&mine, sizeof mine, sizeof mine, MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    peer = (rank + size / 2) % size;
    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
    MPI_Get(&got, 1, MPI_INT, peer, 0, 1, MPI_INT, win);
    MPI_Win_unlock(peer, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    printf("rank %d on %s got %d from rank %d: %s\n", rank,
           node ? node : "?", got, peer, got == 1000 + peer ? "ok" : "WRONG");
    MPI_Finalize();
    return got == 1000 + peer ? 0 : 1;
}
EOF
    if ! out=$(cd "$jobdir/mpi" && "$mpicc" -o hello hello.c 2>&1 && "$mpicc" -o get get.c 2>&1); then
        bad "mpicc"
        show "$out"
    else
        # shellcheck disable=SC2054
        mpienv=(env -u OMPI_MCA_btl OMPI_ALLOW_RUN_AS_ROOT=1
            OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
        out=$(timeout 60 "${mpienv[@]}" srun -N2 -n4 "$jobdir/mpi/hello" 2>&1)
        rc=$?
        got=$(printf '%s\n' "$out" | grep '^rank ' | sort | xargs)
        want="rank 0 of 4 on mpikvs1 rank 1 of 4 on mpikvs1 rank 2 of 4 on mpikvs2 rank 3 of 4 on mpikvs2"
        if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
            ok "srun -N2 -n4 hello: 4 ranks of size 4, 2 a node"
        else
            bad "srun -N2 -n4 hello (exit $rc)"
            show "$out"
        fi
        for osc in pt2pt ucx; do
            out=$(timeout 60 "${mpienv[@]}" OMPI_MCA_osc=$osc \
                srun -N2 -n4 "$jobdir/mpi/get" 2>&1)
            rc=$?
            n=$(printf '%s\n' "$out" | grep -c ': ok$')
            if [ $rc -eq 0 ] && [ "$n" -eq 4 ]; then
                ok "MPI_Win_create + MPI_Get across nodes, osc $osc: 4 ranks ok"
            else
                bad "MPI_Get across nodes, osc $osc (exit $rc, $n ranks ok)"
                show "$out"
            fi
        done
        out=$(cluster_runuser "$dir" timeout 60 env -u OMPI_MCA_btl \
            srun -N2 -n4 "$jobdir/mpi/hello" 2>&1)
        rc=$?
        got=$(printf '%s\n' "$out" | grep '^rank ' | sort | xargs)
        if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
            ok "srun -N2 -n4 hello as $user"
        else
            bad "srun -N2 -n4 hello as $user (exit $rc)"
            show "$out"
        fi
    fi
fi

# 5. scancel ends a running job within a few seconds.
timeout 60 srun -N2 -n2 -J smoke-sleep sleep 100 >"$jobdir/sleep.out" 2>&1 &
srun_pid=$!
jobid=
for _ in $(seq 1 50); do
    jobid=$(squeue -h -n smoke-sleep -t RUNNING -o %A 2>/dev/null)
    [ -n "$jobid" ] && steps_left >/dev/null && break
    sleep 0.2
done
if [ -z "$jobid" ]; then
    bad "srun sleep 100 did not start running within 10 s"
    kill "$srun_pid" 2>/dev/null
else
    c0=$(now_ms)
    scancel "$jobid"
    state=
    for _ in $(seq 1 50); do
        if ! kill -0 "$srun_pid" 2>/dev/null; then
            state=$(scontrol show job "$jobid" -o 2>/dev/null |
                sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
            [ "$state" = CANCELLED ] && ! steps_left >/dev/null && break
        fi
        sleep 0.2
    done
    c1=$(now_ms)
    steps=$(steps_left)
    if [ "$state" = CANCELLED ] && [ -z "$steps" ] && ! kill -0 "$srun_pid" 2>/dev/null; then
        ok "scancel $jobid: srun and its slurmstepds gone after $((c1 - c0)) ms"
    else
        bad "scancel $jobid: state '$state', srun $(kill -0 "$srun_pid" 2>/dev/null && echo alive || echo gone), steps left: $(cluster__words "$steps")"
        show "$(cat "$jobdir/sleep.out")"
        kill "$srun_pid" 2>/dev/null
    fi
fi
wait "$srun_pid" 2>/dev/null

# 6. Stop: nothing of the cluster is left.
s0=$(now_ms)
cluster_stop "$dir"
rc=$?
s1=$(now_ms)
left=
for p in $daemons; do
    cluster__alive "$p" && left="$left $p"
done
left=$(cluster__words "$left $(cluster_pids "$dir")")
if [ $rc -eq 0 ] && [ -z "$left" ]; then
    ok "cluster_stop after $((s1 - s0)) ms: none of the pids $(cluster__words "$daemons") alive"
else
    bad "cluster_stop (exit $rc): still alive: $left"
    ps -o pid,args -p "$(printf '%s' "$left" | tr ' ' ,)" 2>/dev/null
fi
if cluster_stop "$dir"; then
    ok "cluster_stop a second time"
else
    bad "cluster_stop a second time"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
