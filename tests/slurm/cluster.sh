# shellcheck shell=bash
#
# cluster.sh - start and stop a private, real Slurm cluster on this one
# machine, for tests.  Source it from bash:
#
#     . tests/slurm/cluster.sh
#     dir=$(mktemp -d /tmp/mpikvs-slurm.XXXXXX)
#     trap 'cluster_stop "$dir"' EXIT
#     cluster_start "$dir" 2 [PLUGSTACK_FILE] || exit 1
#     cluster_env "$dir" >/dev/null        # exports SLURM_CONF
#     srun -N2 -n4 hostname
#     runuser -u "$(cluster_user)" -- env $(cluster_env "$dir") srun ...
#
# Everything lives under DIR: etc/ (slurm.conf, plugstack.conf,
# task-prolog.sh), munge/ (key, seed), run/ (pid files,
# run/munge/munge.socket.2), state/
# (StateSaveLocation), spool/<node>/ (SlurmdSpoolDir), tmp/ and
# tmp/<node>/ (TmpFS; all mode 1777), log/ (munged.log, slurmctld.log,
# slurmd-<node>.log), work/ (mode 1777: a place for job scripts, programs
# and output files of root and of the test user).
# Nothing outside DIR is read or written: not /etc/slurm, not /etc/munge,
# not the system munge socket.  The daemons run as root (this must be
# run as root); jobs may run as root or as the user cluster_user makes.
# The nodes are mpikvs1, mpikvs2, ...: one slurmd each, all on
# 127.0.0.1, each with its own port, spool dir and TmpFS.
#
# Needs root, bash, and the packages munge, slurmctld, slurmd and
# slurm-client (it installs nothing).  Every function leaves the caller's
# errexit and nounset alone and works under set -eu; usage errors return
# 2.  Every wait is bounded.
#
# Functions (all return nonzero with a message on stderr on failure):
#   cluster_start DIR NNODES [PLUGSTACK_FILE]  start munged, slurmctld and
#       NNODES slurmds; wait until every node is idle; export SLURM_CONF;
#       set CLUSTER_START_MS.  DIR (at most 60 bytes, every parent
#       searchable by others) must be missing, empty or an earlier
#       cluster's.  PLUGSTACK_FILE (and the plugins it names) must be
#       readable by the job users too: srun loads it.  Without it the
#       plugin stack is an empty DIR/etc/plugstack.conf.  On failure:
#       print the logs' tails, stop what was started (unless
#       CLUSTER_KEEP_ON_FAILURE=1), return 1.
#   cluster_stop DIR        cancel all jobs, stop every daemon of DIR (and
#       any slurmstepd they left), munged last.  Safe to call any time:
#       twice, after a failed start, on a DIR that never started.
#   cluster_env DIR         export SLURM_CONF; print NAME=VALUE lines
#       (SLURM_CONF=...) for `env $(cluster_env DIR) cmd`.  That is all a
#       client needs: the munge socket comes from slurm.conf's AuthInfo
#       (libmunge reads no environment variable).
#   cluster_user            make sure the non-root user mpikvstest exists
#       (useradd -m); print its name.
#   cluster_nodes DIR       print the node names, one a line.
#   cluster_runuser DIR CMD...  run CMD as cluster_user with cluster_env
#       DIR, in DIR/work (mode 1777, for job files of any user).
#   cluster_wait_job DIR JOBID [SECONDS]  wait until the job has left
#       the queue or ended (bounded, default 60 s); print its final state
#       (COMPLETED, FAILED, ...), return 0 only for COMPLETED.
#   cluster_regions DIR     print the mpikvs.<job>.* files in /dev/shm of
#       this cluster's jobs (its job ids start at a random FirstJobId),
#       not those of another cluster running beside it.
#   cluster_pids DIR        print the pids of every process of this
#       cluster still alive (daemons and slurmstepds), one a line.
#   cluster_logs DIR [LINES]  print the tails of the logs.
#
# Tunables (environment): CLUSTER_CPUS (CPUs per node, default 2, so
# that srun -N2 -n4 puts 2 tasks on each node: with 4, the block layout
# gives 3+1; more than the real cores is fine, config_overrides),
# CLUSTER_MEMORY (RealMemory MB per node, default 1000),
# CLUSTER_START_TIMEOUT (seconds, default 30), CLUSTER_DEBUG (SlurmdDebug
# and SlurmctldDebug, default debug), CLUSTER_KEEP_ON_FAILURE,
# CLUSTER_EXTRA_CONF (lines appended to slurm.conf before the node lines;
# a repeated key overrides the one above it), CLUSTER_JOB_CONTAINER_CONF
# (the text of DIR/etc/job_container.conf, for JobContainerType).
#
# For MPI across the simulated nodes (all on one host): srun's MPI
# plugin is the cluster's MpiDefault, cluster_mpi's (so the tests write
# no --mpi); the cluster's TaskProlog (DIR/etc/task-prolog.sh,
# cluster__task_prolog says why) gives every task Open MPI's transport
# for simulated nodes unless the job chose its own.  What a job still
# sets itself: OMPI_MCA_osc=pt2pt or ucx for an MPI window (Debian's
# openmpi-mca-params.conf excludes both; the environment wins), and as
# root OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.  srun
# hands its environment to the tasks.

# cluster__task_prolog: print the cluster's TaskProlog.  slurmstepd runs
# it as the job's user, with the task's environment, before each task;
# each "export NAME=VALUE" line it prints goes into the task's
# environment.  Both simulated nodes are this one host, which Open MPI
# cannot tell apart from one node:
#   - OMPI_MCA_btl=self,tcp: its shared-memory BTL (vader) takes ranks of
#     the two nodes for neighbours and crashes (SIGSEGV in
#     mca_btl_vader_poll_handle_frag) or hangs;
#   - OMPI_MCA_pml=ucx (with any of UCX's transports and devices, which
#     Debian's openmpi-mca-params.conf and the component's defaults
#     leave out): point-to-point over UCX instead of the TCP BTL, whose
#     connection setup in Open MPI 4.1.4 under load takes a connect()
#     still in progress for a failure ("connect() ... failed, Operation
#     now in progress (115)", fixed after 4.1.4), and a rank then died of
#     SIGSEGV: 4 of 258 two-node runs of the fine-lock benchmark beside
#     4 busy loops (over the host's Ethernet address and over loopback
#     alike); with UCX's, 0 of 150.
# A value the job set itself wins: the prolog sets only what is unset.
cluster__task_prolog() {
    cat <<'EOF'
#!/bin/sh
# Written by tests/slurm/cluster.sh: Open MPI's transport for simulated
# nodes that share one host (cluster.sh, cluster__task_prolog, says why).
[ -n "${OMPI_MCA_btl:-}" ] || echo "export OMPI_MCA_btl=self,tcp"
if [ -z "${OMPI_MCA_pml:-}" ]; then
    echo "export OMPI_MCA_pml=ucx"
    echo "export OMPI_MCA_pml_ucx_tls=any"
    echo "export OMPI_MCA_pml_ucx_devices=any"
fi
exit 0
EOF
}

# cluster_mpi: srun's MPI plugin for the MPI the tests were built with
# (MPI_FAMILY, as make check sets it): pmix for Open MPI; pmi2 for the
# MPICH family, whose built-in PMI client (hydra's PMI-1 wire protocol)
# Slurm's pmi2 plugin also serves.  CLUSTER_MPI overrides it.
cluster_mpi() {
    if [ -n "${CLUSTER_MPI:-}" ]; then
        echo "$CLUSTER_MPI"
    elif [ "${MPI_FAMILY:-openmpi}" = openmpi ]; then
        echo pmix
    else
        echo pmi2
    fi
}

CLUSTER_NODE_PREFIX=mpikvs
CLUSTER_USER_NAME=mpikvstest
# Set in the environment of every daemon this library starts, so that
# cluster_stop finds them (and the slurmstepds they fork) by it.
CLUSTER_MARK=MPIKVS_TEST_CLUSTER

cluster__say() { printf 'cluster: %s\n' "$*" >&2; }

# cluster__words TEXT: TEXT's words on one line.
cluster__words() (
    set -f
    # shellcheck disable=SC2086
    printf '%s' "$(printf '%s ' $1)" | sed 's/ $//'
)

# cluster__call FUNC ARGS...: run FUNC with errexit off (the functions
# test statuses themselves), and restore the caller's errexit after.
cluster__call() {
    local rc=0
    case $- in
        *e*)
            set +e
            "$@"
            rc=$?
            set -e
            ;;
        *)
            "$@"
            rc=$?
            ;;
    esac
    return "$rc"
}

cluster_start() { cluster__call cluster__start_impl "$@"; }
cluster_stop() { cluster__call cluster__stop_impl "$@"; }
cluster_env() { cluster__call cluster__env_impl "$@"; }
cluster_user() { cluster__call cluster__user_impl; }
cluster_nodes() { cluster__call cluster__nodes_impl "$@"; }
cluster_runuser() { cluster__call cluster__runuser_impl "$@"; }
cluster_wait_job() { cluster__call cluster__wait_job_impl "$@"; }
cluster_pids() { cluster__call cluster__pids_impl "$@"; }
cluster_regions() { cluster__call cluster__regions_impl "$@"; }
cluster_logs() { cluster__call cluster__logs_impl "$@"; }

# cluster__abs DIR: DIR as an absolute path without a trailing slash.
cluster__abs() {
    local d=${1:-}
    case $d in
        /*) ;;
        *) d=$PWD/$d ;;
    esac
    while [ "${#d}" -gt 1 ] && [ "${d%/}" != "$d" ]; do d=${d%/}; done
    printf '%s\n' "$d"
}

cluster__regions_impl() {
    local dir first
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_regions DIR"; return 2; }
    dir=$(cluster__abs "$1")
    first=$(sed -n 's/^FirstJobId=//p' "$dir/etc/slurm.conf" 2>/dev/null)
    [ -n "$first" ] || return 1
    ls /dev/shm | awk -F. -v lo="$first" \
        '$1 == "mpikvs" && $2 ~ /^[0-9]+$/ && $2 >= lo && $2 < lo + 1000'
}

cluster__nodes_impl() {
    local dir n
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_nodes DIR"; return 2; }
    dir=$(cluster__abs "$1")
    [ -r "$dir/etc/nnodes" ] || return 1
    n=$(cat "$dir/etc/nnodes")
    local i=1
    while [ "$i" -le "$n" ]; do
        printf '%s%d\n' "$CLUSTER_NODE_PREFIX" "$i"
        i=$((i + 1))
    done
}

# cluster__alive PID: the process exists (and is not a zombie).
cluster__alive() {
    local pid=$1 st
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
    st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}

# cluster__pidfile_pid FILE: the pid in FILE, if FILE is there.
cluster__pidfile_pid() {
    [ -r "$1" ] || return 1
    local p
    p=$(tr -dc 0-9 <"$1" 2>/dev/null)   # it may go meanwhile
    [ -n "$p" ] && printf '%s\n' "$p"
}

cluster__pids_impl() {
    local dir p f
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_pids DIR"; return 2; }
    dir=$(cluster__abs "$1")
    {
        # By the mark in the environment: munged, slurmctld, the slurmds
        # and whatever they forked (slurmstepd inherits slurmd's
        # environment).
        # shellcheck disable=SC2013
        for f in $(grep -lzxF "$CLUSTER_MARK=$dir" /proc/[0-9]*/environ 2>/dev/null); do
            p=${f#/proc/}
            p=${p%/environ}
            [ "$p" = "$$" ] && continue
            cluster__alive "$p" && printf '%s\n' "$p"
        done
        # And by pid file, in case a daemon lost the mark; only a pid
        # whose command line names DIR (-f DIR/etc/slurm.conf,
        # --socket=DIR/...) counts, not a stale file's reused pid.
        for f in "$dir"/run/*.pid "$dir"/run/munge/munged.pid; do
            p=$(cluster__pidfile_pid "$f") || continue
            cluster__alive "$p" || continue
            if { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null |
                grep -qF "$dir/"; then
                printf '%s\n' "$p"
            fi
        done
    } | sort -un
}

cluster__logs_impl() {
    local dir lines f
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_logs DIR [LINES]"; return 2; }
    dir=$(cluster__abs "$1")
    lines=${2:-25}
    for f in "$dir"/log/*.log; do
        [ -f "$f" ] || continue
        printf -- '----- %s (last %s lines) -----\n' "$f" "$lines"
        tail -n "$lines" "$f"
    done
}

cluster__env_impl() {
    local dir
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_env DIR"; return 2; }
    dir=$(cluster__abs "$1")
    if [ ! -r "$dir/etc/slurm.conf" ]; then
        cluster__say "no $dir/etc/slurm.conf: cluster_start $dir first"
        return 1
    fi
    export SLURM_CONF="$dir/etc/slurm.conf"
    printf 'SLURM_CONF=%s\n' "$SLURM_CONF"
}

cluster__user_impl() {
    local u=$CLUSTER_USER_NAME home
    if ! getent passwd "$u" >/dev/null 2>&1; then
        if [ "$(id -u)" != 0 ]; then
            cluster__say "user $u is missing and only root may create it"
            return 1
        fi
        if ! command -v useradd >/dev/null 2>&1; then
            cluster__say "user $u is missing and useradd is unavailable (install passwd)"
            return 1
        fi
        if ! useradd -m -s /bin/sh -c 'mpikvs Slurm tests' "$u" >&2; then
            cluster__say "useradd -m $u failed"
            return 1
        fi
    fi
    home=$(getent passwd "$u" | cut -d: -f6)
    if [ -n "$home" ] && [ ! -d "$home" ] && [ "$(id -u)" = 0 ]; then
        mkdir -p "$home" && chown "$u:" "$home" && chmod 755 "$home"
    fi
    printf '%s\n' "$u"
}

cluster__runuser_impl() {
    local dir u conf
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_runuser DIR CMD..."; return 2; }
    dir=$(cluster__abs "$1")
    shift
    u=$(cluster_user) || return 1
    conf=$(cluster_env "$dir") || return 1
    (cd "$dir/work" && runuser -u "$u" -- env "$conf" "$@")
}

# cluster__free_ports COUNT: print a base port B, B..B+COUNT-1 all unused
# (no TCP socket of any state on them), B random in 20000-29999.
cluster__free_ports() {
    local count=$1 base used p ok
    local hex
    # shellcheck disable=SC2013
    used=$(for hex in $(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
        awk '$2 ~ /:/ { n = split($2, a, ":"); print a[n] }'); do
        echo $((16#$hex))
    done)
    if [ -z "$used" ] && command -v ss >/dev/null 2>&1; then
        used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
    fi
    for _ in $(seq 1 50); do
        base=$((20000 + (RANDOM * 32768 + RANDOM) % (10000 - count)))
        ok=1
        for p in $(seq "$base" $((base + count - 1))); do
            if printf '%s\n' "$used" | grep -qx "$p"; then ok=0; break; fi
        done
        if [ "$ok" = 1 ]; then
            printf '%s\n' "$base"
            return 0
        fi
    done
    return 1
}

# cluster__wait SECONDS CMD...: run CMD every 0.2 s until it succeeds;
# 1 when SECONDS pass first, 2 at once when CMD returns 2 (no hope).
cluster__wait() {
    local end=$(($(date +%s%N) / 1000000 + $1 * 1000)) rc
    shift
    while :; do
        if "$@"; then return 0; else rc=$?; fi
        [ "$rc" -eq 2 ] && return 2
        [ $(($(date +%s%N) / 1000000)) -lt "$end" ] || return 1
        sleep 0.2
    done
}

# cluster__running DIR COMM...: some process of DIR is named COMM.
cluster__running() {
    local dir=$1 p c n
    shift
    for p in $(cluster_pids "$dir"); do
        c=$(cat "/proc/$p/comm" 2>/dev/null) || continue
        for n in "$@"; do
            [ "$c" = "$n" ] && return 0
        done
    done
    return 1
}

# The environment of the daemons: the caller's, less anything SLURM_*
# (a surrounding job's), plus SLURM_CONF and the mark.  No daemon keeps
# the caller's stdin (the callers redirect stdout and stderr to files).
cluster__daemon() {
    local dir=$1
    shift
    local unset_args=() v
    for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do
        unset_args+=(-u "$v")
    done
    env "${unset_args[@]}" "SLURM_CONF=$dir/etc/slurm.conf" "$CLUSTER_MARK=$dir" "$@" </dev/null
}

cluster__munge_ok() {
    local sock=$1
    [ -S "$sock" ] || return 1
    if command -v munge >/dev/null 2>&1 && command -v unmunge >/dev/null 2>&1; then
        munge -n --socket="$sock" 2>/dev/null | unmunge --socket="$sock" >/dev/null 2>&1
    fi
}

# cluster__ctld_up DIR: 0 when slurmctld answers, 2 when it is gone.
cluster__ctld_up() {
    timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
    cluster__running "$1" slurmctld || return 2
    return 1
}

# cluster__all_idle DIR N: sinfo shows N nodes, all idle; 2 when a daemon
# is gone.
cluster__all_idle() {
    local dir=$1 want=$2 out node
    out=$(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null)
    if [ "$(printf '%s\n' "$out" | awk '$2 == "idle"' | sort -u | wc -l)" -eq "$want" ]; then
        return 0
    fi
    cluster__running "$dir" slurmctld || return 2
    for node in $(cluster_nodes "$dir"); do
        cluster__slurmd_running "$dir" "$node" || return 2
    done
    return 1
}

# cluster__slurmd_running DIR NODE: the slurmd -N NODE of DIR is alive
# (found by the mark, not the pid file, which comes late).
cluster__slurmd_running() {
    local p
    for p in $(cluster_pids "$1"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmd ] || continue
        { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF " -N $2 " &&
            return 0
    done
    return 1
}

cluster__fail() {
    local dir=$1
    shift
    cluster__say "$*"
    cluster_logs "$dir" 30 >&2
    if [ -r "$dir/etc/slurm.conf" ] && cluster__running "$dir" slurmctld; then
        printf -- '----- sinfo -----\n' >&2
        SLURM_CONF="$dir/etc/slurm.conf" timeout 5 sinfo -N -l >&2 2>&1 || true
    fi
    if [ "${CLUSTER_KEEP_ON_FAILURE:-0}" != 1 ]; then
        cluster_stop "$dir"
    fi
    return 1
}

cluster__start_impl() {
    local dir n plug i node base ctld_port sock t0 t1 host stale first_job
    if [ $# -lt 2 ]; then
        cluster__say "usage: cluster_start DIR NNODES [PLUGSTACK_FILE]"
        return 2
    fi
    dir=$(cluster__abs "$1")
    n=$2
    plug=${3:-}
    t0=$(date +%s%N)
    case $n in
        '' | *[!0-9]* | 0)
            cluster__say "NNODES must be a positive number, not '$n'"
            return 2
            ;;
    esac
    case $dir in
        *[[:space:]]* | *[\'\"\\\$\`%]*)
            cluster__say "DIR must not hold blanks, quotes or %: '$dir'"
            return 2
            ;;
    esac
    if [ "$(id -u)" != 0 ]; then
        cluster__say "must be run as root (the daemons run as root)"
        return 2
    fi
    local prog
    for prog in munged slurmctld slurmd scontrol sinfo srun; do
        if ! command -v "$prog" >/dev/null 2>&1 &&
            [ ! -x "/usr/sbin/$prog" ]; then
            cluster__say "$prog is not installed (packages munge slurmctld slurmd slurm-client)"
            return 2
        fi
    done
    case ":$PATH:" in
        *:/usr/sbin:*) ;;
        *) PATH=$PATH:/usr/sbin ;;
    esac
    if [ -n "$plug" ]; then
        plug=$(cluster__abs "$plug")
        if [ ! -r "$plug" ]; then
            cluster__say "plugstack file $plug is not readable"
            return 2
        fi
    fi
    sock=$dir/run/munge/munge.socket.2
    # A Unix socket path holds at most 107 bytes; the slurmstepd and
    # PMIx sockets under spool/ are longer still.
    if [ "${#dir}" -gt 60 ]; then
        cluster__say "DIR is too long for Unix socket paths (${#dir} > 60): $dir"
        return 2
    fi
    stale=$(cluster_pids "$dir")
    if [ -n "$stale" ]; then
        cluster__say "a cluster of $dir is still running (pids $(cluster__words "$stale")); cluster_stop it first"
        return 1
    fi

    # Parents of DIR: every user has to reach slurm.conf and the munge
    # socket (munged itself refuses a socket below a directory others
    # cannot search).
    local p=$dir
    while [ "$p" != / ] && [ -n "$p" ]; do
        p=$(dirname "$p")
        [ -d "$p" ] || continue
        if [ "$(($(stat -L -c '0%a' "$p") & 1))" -eq 0 ]; then
            cluster__say "$p (above $dir) is not searchable by others (mode $(stat -L -c %a "$p")); choose a DIR under /tmp"
            return 2
        fi
    done

    # DIR is new, empty, or an earlier cluster's: never clear anything else.
    if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/etc/nnodes" ]; then
        cluster__say "$dir is neither empty nor an earlier cluster's directory"
        return 2
    fi
    # The layout.  Every directory a job's user must pass through is 755;
    # the key's directory is root's alone.
    mkdir -p "$dir" || return 1
    rm -rf "${dir:?}/etc" "$dir/state" "$dir/spool" "$dir/run" "$dir/munge" "$dir/tmp"
    mkdir -p "$dir/etc" "$dir/state" "$dir/spool" "$dir/log" "$dir/run/munge" \
        "$dir/munge" "$dir/tmp" "$dir/work" || return 1
    chmod 755 "$dir" "$dir/etc" "$dir/state" "$dir/spool" "$dir/log" \
        "$dir/run" "$dir/run/munge"
    chmod 1777 "$dir/work" "$dir/tmp"
    chmod 700 "$dir/munge"
    rm -f "$dir"/log/*.log
    printf '%s\n' "$n" >"$dir/etc/nnodes"
    for node in $(cluster_nodes "$dir"); do
        mkdir -p "$dir/spool/$node" "$dir/tmp/$node"
        chmod 755 "$dir/spool/$node"
        chmod 1777 "$dir/tmp/$node"
    done

    # munge: its own key, socket, pid, log and seed.
    if command -v mungekey >/dev/null 2>&1 || [ -x /usr/sbin/mungekey ]; then
        mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1 ||
            dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 2>/dev/null
    else
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 2>/dev/null
    fi
    chmod 400 "$dir/munge/munge.key"
    if ! cluster__daemon "$dir" munged \
        --socket="$sock" \
        --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/run/munge/munged.pid" \
        --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed" >"$dir/log/munged.out" 2>&1; then
        cat "$dir/log/munged.out" >&2
        cluster__fail "$dir" "munged failed to start"
        return 1
    fi
    if ! cluster__wait 10 cluster__munge_ok "$sock"; then
        cluster__fail "$dir" "munged does not answer on $sock"
        return 1
    fi

    cluster__task_prolog >"$dir/etc/task-prolog.sh"
    chmod 755 "$dir/etc/task-prolog.sh"

    # slurm.conf.
    base=$(cluster__free_ports $((n + 1))) || {
        cluster__fail "$dir" "found no $((n + 1)) free ports in 20000-29999"
        return 1
    }
    ctld_port=$base
    if [ -z "$plug" ]; then
        plug=$dir/etc/plugstack.conf
        : >"$plug"
    fi
    host=$(hostname)
    # Job ids differ between clusters, run after run and side by side:
    # what is named after the job id on this one host (mpikvs.<job>.*
    # regions in /dev/shm, the PMIx namespace slurm.pmix.<job>.<step>)
    # must not meet a leftover or a neighbour of the same name.
    first_job=$(((RANDOM % 9000 + 1) * 1000))
    {
        cat <<EOF
# Written by tests/slurm/cluster.sh for a private test cluster.
ClusterName=mpikvstest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=$(cluster_mpi)
TaskProlog=$dir/etc/task-prolog.sh
SwitchType=switch/none
PlugStackConfig=$plug
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=${CLUSTER_DEBUG:-debug}
SlurmdDebug=${CLUSTER_DEBUG:-debug}
SlurmdParameters=config_overrides
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
InactiveLimit=0
KillWait=5
MinJobAge=30
MessageTimeout=10
MailProg=/bin/true
FirstJobId=$first_job
EOF
        if [ -n "${CLUSTER_EXTRA_CONF:-}" ]; then
            echo "# CLUSTER_EXTRA_CONF"
            printf '%s\n' "$CLUSTER_EXTRA_CONF"
        fi
        i=1
        for node in $(cluster_nodes "$dir"); do
            printf 'NodeName=%s NodeAddr=127.0.0.1 NodeHostname=%s Port=%d CPUs=%d RealMemory=%d State=UNKNOWN\n' \
                "$node" "$host" $((ctld_port + i)) "${CLUSTER_CPUS:-2}" "${CLUSTER_MEMORY:-1000}"
            i=$((i + 1))
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
    } >"$dir/etc/slurm.conf"
    chmod 644 "$dir/etc/slurm.conf"
    if [ -n "${CLUSTER_JOB_CONTAINER_CONF:-}" ]; then
        printf '%s\n' "$CLUSTER_JOB_CONTAINER_CONF" >"$dir/etc/job_container.conf"
        chmod 644 "$dir/etc/job_container.conf"
    fi
    export SLURM_CONF="$dir/etc/slurm.conf"

    # slurmctld, then the slurmds.
    if ! cluster__daemon "$dir" slurmctld -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1; then
        cat "$dir/log/slurmctld.out" >&2
        cluster__fail "$dir" "slurmctld failed to start"
        return 1
    fi
    cluster__wait 15 cluster__ctld_up "$dir"
    case $? in
        0) ;;
        2)
            cluster__fail "$dir" "slurmctld died (see slurmctld.log)"
            return 1
            ;;
        *)
            cluster__fail "$dir" "slurmctld does not answer (scontrol ping)"
            return 1
            ;;
    esac
    for node in $(cluster_nodes "$dir"); do
        if ! cluster__daemon "$dir" slurmd -f "$SLURM_CONF" -N "$node" \
            >"$dir/log/slurmd-$node.out" 2>&1; then
            cat "$dir/log/slurmd-$node.out" >&2
            cluster__fail "$dir" "slurmd -N $node failed to start"
            return 1
        fi
    done
    cluster__wait "${CLUSTER_START_TIMEOUT:-30}" cluster__all_idle "$dir" "$n"
    case $? in
        0) ;;
        2)
            cluster__fail "$dir" "a daemon died before all $n nodes were idle"
            return 1
            ;;
        *)
            cluster__fail "$dir" "not all $n nodes became idle within ${CLUSTER_START_TIMEOUT:-30} s"
            return 1
            ;;
    esac
    t1=$(date +%s%N)
    CLUSTER_START_MS=$(((t1 - t0) / 1000000))
    cluster__say "$n nodes idle after ${CLUSTER_START_MS} ms (SLURM_CONF=$SLURM_CONF)"
    return 0
}

# cluster__kill_all DIR SECONDS: SIGTERM every process of DIR, wait up to
# SECONDS, then SIGKILL what is left.
cluster__kill_all() {
    local dir=$1 secs=$2 pids
    pids=$(cluster_pids "$dir")
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null
    cluster__wait "$secs" cluster__none_left "$dir" && return 0
    pids=$(cluster_pids "$dir")
    [ -n "$pids" ] || return 0
    cluster__say "SIGKILL to $(cluster__words "$pids")"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
    cluster__wait 5 cluster__none_left "$dir"
}

cluster__none_left() {
    [ -z "$(cluster_pids "$1")" ]
}

# cluster__only_munged DIR: of the processes of DIR, only munged remains.
cluster__only_munged() {
    local dir=$1 p m
    m=$(cluster__pidfile_pid "$dir/run/munge/munged.pid" 2>/dev/null) || m=
    for p in $(cluster_pids "$dir"); do
        [ "$p" = "$m" ] || return 1
    done
    return 0
}

cluster__stop_impl() {
    local dir conf sock jobs m rc=0
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_stop DIR"; return 2; }
    dir=$(cluster__abs "$1")
    [ -d "$dir" ] || return 0
    conf=$dir/etc/slurm.conf
    sock=$dir/run/munge/munge.socket.2
    case ":$PATH:" in
        *:/usr/sbin:*) ;;
        *) PATH=$PATH:/usr/sbin ;;
    esac
    if [ -r "$conf" ] && cluster__running "$dir" slurmctld; then
        local slurm_env=(env "SLURM_CONF=$conf")
        jobs=$("${slurm_env[@]}" timeout 5 squeue -h -o %A 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086
            "${slurm_env[@]}" timeout 5 scancel $jobs >/dev/null 2>&1
            # Give the steps a moment to end (KillWait=5).
            cluster__wait 8 cluster__queue_empty "$conf"
        fi
        "${slurm_env[@]}" timeout 5 scontrol shutdown >/dev/null 2>&1
        # slurmctld and the slurmds exit on their own; munged stays.
        cluster__wait 8 cluster__only_munged "$dir"
    fi
    # Whatever is left of slurm, then munged.
    m=$(cluster__pidfile_pid "$dir/run/munge/munged.pid" 2>/dev/null) || m=
    local p others=
    for p in $(cluster_pids "$dir"); do
        [ "$p" = "$m" ] || others="$others $p"
    done
    if [ -n "$others" ]; then
        # shellcheck disable=SC2086
        kill -TERM $others 2>/dev/null
        local t=0
        while [ "$t" -lt 25 ]; do
            local alive=
            for p in $others; do cluster__alive "$p" && alive="$alive $p"; done
            others=$alive
            [ -z "$others" ] && break
            sleep 0.2
            t=$((t + 1))
        done
        if [ -n "$others" ]; then
            cluster__say "SIGKILL to$others"
            # shellcheck disable=SC2086
            kill -KILL $others 2>/dev/null
        fi
    fi
    if [ -n "$m" ] && cluster__alive "$m"; then
        munged --stop --socket="$sock" >/dev/null 2>&1 ||
            kill -TERM "$m" 2>/dev/null
    fi
    cluster__kill_all "$dir" 5 || rc=1
    if [ -n "$(cluster_pids "$dir")" ]; then
        cluster__say "processes of $dir survive: $(cluster__words "$(cluster_pids "$dir")")"
        rc=1
    else
        rm -f "$dir"/run/*.pid "$dir"/run/munge/munged.pid
    fi
    return "$rc"
}

cluster__queue_empty() {
    [ -z "$(SLURM_CONF=$1 timeout 5 squeue -h -o %A 2>/dev/null)" ]
}

cluster__wait_job_impl() {
    local dir id secs conf end state out
    [ -n "${1:-}" ] || { cluster__say "usage: cluster_wait_job DIR JOBID [SECONDS]"; return 2; }
    dir=$(cluster__abs "$1")
    [ -n "${2:-}" ] || { cluster__say "usage: cluster_wait_job DIR JOBID [SECONDS]"; return 2; }
    id=$2
    secs=${3:-60}
    conf=$dir/etc/slurm.conf
    end=$(($(date +%s) + secs))
    while :; do
        out=$(SLURM_CONF=$conf timeout 5 scontrol show job "$id" -o 2>&1)
        state=$(printf '%s\n' "$out" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
        case $state in
            PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED) ;;
            '')
                # Purged already (MinJobAge), or no such job.
                if printf '%s\n' "$out" | grep -q 'Invalid job id'; then
                    state=UNKNOWN
                    break
                fi
                ;;
            *) break ;;
        esac
        if [ "$(date +%s)" -ge "$end" ]; then
            state=TIMEOUT_WAITING${state:+($state)}
            break
        fi
        sleep 0.3
    done
    printf '%s\n' "$state"
    [ "$state" = COMPLETED ]
}
