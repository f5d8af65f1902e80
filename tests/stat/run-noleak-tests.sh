#!/bin/bash
# run-noleak-tests.sh - a run outside Slurm leaves nothing in the shm
# directory however it ends, and mpikvs-stat finds and reads its regions
# while it runs.
#
# libmpikvs unlinks the names of the regions a run makes once every rank
# holds them (mpikvs(7), LIFETIME OF REGIONS); mpikvs-stat finds them
# through the processes that hold them.  Three runs of stat_job (np=4,
# MPIKVS_VIRTUAL_NODES=2, a config with a node tier: a data region, a
# tier index and tier entries per node) end the three ways a program
# ends without mpikvs_close: it returns from main (--leak), it calls
# MPI_Abort (--abort, as the example of mpikvs(3) does on an error), a
# rank is killed with SIGKILL.  Asserted for each: while it runs, no
# region of it has a name in the directory, and mpikvs-stat lists its 6
# regions, alive and unlinked, and reads the job's report; after it,
# nothing of the job is in the directory or in mpikvs-stat's listing.
#
# Then what processes hold that is no unlinked region of theirs:
# mpikvs-stat takes neither a valid region really named "NAME (deleted)"
# nor a FIFO held open and unlinked (it never opens it), nor, as root,
# another user's unlinked region that only a root process holds; it lists
# the user's region its own process holds; and the user does not see
# root's running job (as root, with the user mpikvstest, made by useradd
# if missing; skipped, saying so, otherwise).
#
# Everything happens in a private shm directory (MPIKVS_SHM_DIR), removed
# at the end; only the runs' own job ids are looked at.  Every mpirun is
# bounded (STAT_TEST_TIMEOUT seconds, default 120); every wait is a
# bounded poll on a condition.  Exit 0 when every check passed.
set -u
# cond 'EXPR' evaluates its single-quoted EXPR when the check runs
# shellcheck disable=SC2016

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
. "$top_srcdir/tests/stat/common.sh"

limit=${STAT_TEST_TIMEOUT:-120}
for p in "$stat_bin" "$stat_job" "$stat_region" "$json_get"; do
    [ -x "$p" ] || { echo "FAIL: $p is missing (make check builds it)"; exit 1; }
done
mpirun=${MPIRUN:-mpirun}
command -v "$mpirun" >/dev/null 2>&1 || { echo "FAIL: $mpirun not found"; exit 1; }

. "$top_srcdir/tests/plain-mpirun.sh"
plain_mpirun_env
# two virtual nodes need a window: Debian excludes osc pt2pt by default
export OMPI_MCA_osc=pt2pt
# a sanitizer build: the runs end without freeing what MPI keeps
job_asan=""
if stat_asan; then
    job_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

shm=$(mktemp -d /dev/shm/mpikvs-noleak-tests.XXXXXX) || exit 1
work=$(mktemp -d /tmp/mpikvs-noleak-tests.XXXXXX) || exit 1
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

# a node tier besides the table: three regions a node
cat >"$work/tier.json" <<'EOF'
{ "version": 1, "tables": { "kvs": {
    "size": "4M",
    "key": { "key_size": 16 }, "value": { "value_size": 32 },
    "tier": { "enabled": true, "size": "256K", "caching": "user" } } } }
EOF
export MPIKVS_CONFIG=$work/tier.json

# job ARGS...: stat_job at np=4 on two virtual nodes, bounded in time
job() {
    if [ -n "$job_asan" ]; then
        set -- -x ASAN_OPTIONS "$stat_job" "$@"
    else
        set -- "$stat_job" "$@"
    fi
    ASAN_OPTIONS=$job_asan MPIKVS_VIRTUAL_NODES=2 \
        timeout -k 10 "$limit" \
        "$mpirun" --oversubscribe -np 4 -x MPIKVS_SHM_DIR -x MPIKVS_CONFIG \
        -x MPIKVS_VIRTUAL_NODES -x OMPI_MCA_btl -x OMPI_MCA_osc \
        "$@" </dev/null
}

# listing_of JOB: mpikvs-stat's listing rows of the job's regions
listing_of() {
    "$stat_bin" -d "$shm" --slurm-timeout 0 | grep "^$1 "
}

# named_in_dir JOB: the job's regions that have a name in the directory
named_in_dir() {
    local f
    for f in "$shm"/mpikvs."$1".*; do
        [ -e "$f" ] && echo "${f##*/}"
    done
}

# ready_or_ended FILE PID: FILE exists, or the run PID has ended (then
# it never will)
ready_or_ended() {
    [ -e "$1" ] || ! kill -0 "$2" 2>/dev/null
}

# run_case NAME ARGS...: start a run that ends as NAME says, look at it
# while it runs, end it (end_run, set by the caller) and look after it
run_case() {
    local name=$1 tag job pid rows json pids rc
    shift
    tag=$(tr -c 'a-z0-9\n' - <<<"$name")
    echo "# $name"
    job --rounds 3 --keys 20 --ready "$work/ready-$tag" \
        --hold "$work/go-$tag" --timeout 100 "$@" >"$work/$tag.out" 2>&1 &
    pid=$!
    started="$started $pid"
    if ! wait_for "$limit" ready_or_ended "$work/ready-$tag" "$pid" ||
        [ ! -e "$work/ready-$tag" ]; then
        fail "$name: the run did not start: $(cat "$work/$tag.out")"
        return
    fi
    # the ready file comes after a round, that is after every rank's
    # open: the names are gone by then
    job=$("$stat_bin" -d "$shm" --slurm-timeout 0 --json |
              jget regions.0.job)
    check "$name: while it runs, mpikvs-stat finds its job ($job)" \
        [ -n "$job" ]
    rows=$(listing_of "$job")
    check "$name: ... and lists its 6 regions (2 nodes: data, tier index and entries)" \
        [ "$(grep -c . <<<"$rows")" = 6 ]
    check "$name: ... every one alive, its name unlinked at open" \
        [ "$(grep -c "alive (mapped by pid .*name unlinked at open)" <<<"$rows")" = 6 ]
    json=$("$stat_bin" -d "$shm" --slurm-timeout 0 --json)
    check "$name: ... --json says unlinked" \
        [ "$(jget regions.0.unlinked <<<"$json")" = true ]
    check "$name: no region of the run has a name in the directory" \
        [ -z "$(named_in_dir "$job")" ]
    out=$("$stat_bin" -d "$shm" --slurm-timeout 0 "$job" 2>&1)
    rc=$?
    check "$name: the job's report reads the unlinked regions (exit $rc)" cond '
        [ "$rc" = 0 ] && has "$out" "^    occupancy: " &&
        has "$out" "^    tier kvs: " && lacks "$out" "cannot"'
    [ "$rc" = 0 ] || printf '%s\n' "$out" | sed 's/^/    /'
    pids=$(sed -n 's/.*mapped by pid \([0-9]*\).*/\1/p' <<<"$rows" | head -n 1)
    end_run "$tag" "$pids"
    wait "$pid"
    rc=$?
    started=${started% "$pid"}
    end_status "$name" "$rc" "$work/$tag.out"
    # nothing has a name; a rank that MPICH's launcher has not reaped
    # yet when it returns may still hold the regions a moment
    check "$name: afterwards, nothing of the run is in the directory" \
        [ -z "$(named_in_dir "$job")" ]
    check "$name: ... nor in mpikvs-stat's listing, once its ranks are gone" \
        wait_for 30 listing_lacks "$job"
}

# listing_lacks JOB: mpikvs-stat lists nothing of the job
listing_lacks() { [ -z "$(listing_of "$1")" ]; }

# exit without mpikvs_close: let it end, it returns 0
end_run() { touch "$work/go-$1"; }
end_status() {
    check "$1: the run ended well (exit $2)" cond "[ $2 = 0 ] &&
        grep -q '^stat_job: ranks 4 rounds 3: hits 960 misses 240 wrong 0' $3"
}
run_case "exit without mpikvs_close" --leak

# MPI_Abort from rank 0
end_status() {
    check "$1: the run ended in MPI_Abort (exit $2)" [ "$2" != 0 ]
}
run_case "MPI_Abort" --abort

# SIGKILL of a rank, while the run waits for its hold file
end_run() { kill -KILL "$2"; }
end_status() {
    check "$1: the run ended with its killed rank (exit $2)" [ "$2" != 0 ]
}
run_case "a rank killed with SIGKILL"

echo "# what a process holds that is not an unlinked region of its own"
# hold FILE [USER]: a process (of USER) that holds FILE open on fd 9;
# its pid in held_by once the descriptor is there
hold() {
    if [ -n "${2:-}" ]; then
        # setpriv execs, so that $! is the holder itself
        setpriv --reuid="$2" --regid="$2" --clear-groups \
            sh -c 'exec sleep 300 9<>"$1"' sh "$1" &
    else
        sleep 300 9<>"$1" &
    fi
    held_by=$!
    started="$started $held_by"
    wait_for 30 test -e "/proc/$held_by/fd/9" ||
        fail "no process holds $1"
}
# a valid region really named "NAME (deleted)": its descriptor reads
# like an unlinked region's, but the file has a name
"$stat_region" data "$shm" planted n1 kvs-data >/dev/null
mv "$shm/mpikvs.planted.n1.kvs-data" "$shm/mpikvs.planted.n1.kvs-data (deleted)"
hold "$shm/mpikvs.planted.n1.kvs-data (deleted)"
# a FIFO under a region's name, held open and unlinked: never opened
mkfifo "$shm/mpikvs.fifo.n1.kvs-data"
hold "$shm/mpikvs.fifo.n1.kvs-data"
rm "$shm/mpikvs.fifo.n1.kvs-data"
json=$(timeout 20 "$stat_bin" -d "$shm" --slurm-timeout 0 --json 2>&1)
rc=$?
check "mpikvs-stat lists the directory beside them (exit $rc)" [ "$rc" = 0 ]
check "  ... takes none of them for an unlinked region" \
    lacks "$json" '"unlinked": true'
expect "the FIFO is no region" 1 "no regions of job fifo" -- \
    timeout 20 "$stat_bin" -d "$shm" --slurm-timeout 0 fifo
expect "the file named like an unlinked region is no region of job planted" 1 \
    "no regions of job planted" -- \
    timeout 20 "$stat_bin" -d "$shm" --slurm-timeout 0 planted
rm -f "$shm/mpikvs.planted.n1.kvs-data (deleted)"

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the checks with another user's processes need root"
else
    user=mpikvstest
    if ! getent passwd "$user" >/dev/null; then
        useradd -m -s /bin/sh -c 'mpikvs tests' "$user" ||
            { echo "FAIL: cannot create $user"; exit 1; }
    fi
    chmod 1777 "$shm"
    # two unlinked regions of the user: one its own process holds, one
    # only a process of root (a file a process holds must be its own)
    runuser -u "$user" -- "$stat_region" data "$shm" usrheld n1 kvs-data >/dev/null
    runuser -u "$user" -- "$stat_region" data "$shm" rootheld n1 kvs-data >/dev/null
    hold "$shm/mpikvs.usrheld.n1.kvs-data" "$user"
    hold "$shm/mpikvs.rootheld.n1.kvs-data"
    rm "$shm/mpikvs.usrheld.n1.kvs-data" "$shm/mpikvs.rootheld.n1.kvs-data"
    out=$("$stat_bin" -d "$shm" --slurm-timeout 0 2>&1)
    check "root sees the user's unlinked region its process holds, as the user's" \
        has "$out" "^usrheld .* $user .*alive (held open by pid"
    check "  ... and not one that only another uid's process holds" \
        lacks "$out" "rootheld"
    out=$(runuser -u "$user" -- "$stat_bin" -d "$shm" --slurm-timeout 0 2>&1)
    check "the user sees its own unlinked region" has "$out" "^usrheld .* $user "
    # a running job of root, unlinked: the user may not read its ranks
    job --rounds 3 --keys 20 --ready "$work/ready-u" --hold "$work/go-u" \
        --timeout 100 >"$work/u.out" 2>&1 &
    pid=$!
    started="$started $pid"
    if wait_for "$limit" ready_or_ended "$work/ready-u" "$pid" &&
        [ -e "$work/ready-u" ]; then
        root_job=$(listing_of "u[^ ]*" | grep -v "^u[^ ]*held" | head -n 1 | cut -d' ' -f1)
        out=$(runuser -u "$user" -- "$stat_bin" -d "$shm" --slurm-timeout 0 2>&1)
        check "another user does not see root's running job ($root_job)" \
            cond '[ -n "$root_job" ] && lacks "$out" "$root_job"'
    else
        fail "the run did not start: $(cat "$work/u.out")"
    fi
    touch "$work/go-u"
    wait "$pid"
fi

stat_summary run-noleak-tests
