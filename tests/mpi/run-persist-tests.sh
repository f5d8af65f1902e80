#!/bin/sh
#
# run-persist-tests.sh - mpikvs_save and mpikvs_load and foreach_local
# (tests/mpi/test_persist.c) under plain mpirun: save on 2 virtual nodes
# (np 4), load on 1 (np 2) and 3 (np 3) nodes and into a table too small
# for every entry, into buckets of 8 slots (np 2 on 2 nodes) and in the
# fine-lock mode, damaged files refused, and the config's persist (the
# first open finds no file, a cold start; close saves; the next open
# loads); values of 1 MiB, the largest, saved from buckets of 16 slots
# (more than a round's 7 blocks of them) on 2 nodes and loaded on 3.  The save file goes to a scratch
# directory, the regions to one of their own, both removed at the end
# and checked empty of regions; each mpirun has a hard time limit
# (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_persist
plain_mpirun_scratch persist
plain_mpirun_tally
# every job with two nodes or more needs an MPI window (run-mpi-tests.sh
# says why pt2pt)
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
n=3000
file="$tmp/table.kvs"

# run LABEL NP VNODES [ENV=VALUE ...] -- ARGS...
run() {
    label=$1 np=$2 vn=$3
    shift 3
    envs="MPIKVS_VIRTUAL_NODES=$vn"
    while [ "$1" != "--" ]; do
        envs="$envs $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    if env $envs timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs \
        -x MPIKVS_VIRTUAL_NODES $(for e in $envs; do
            [ "${e%%=*}" = MPIKVS_VIRTUAL_NODES ] || echo "-x ${e%%=*}"
        done) -np "$np" "$prog" "$@" </dev/null >"$tmp/out" 2>&1; then
        echo "PASS $label"
        grep '^rank 0:' "$tmp/out" | sed 's/^/    /'
        ok
    else
        bad "$label" "$tmp/out"
    fi
}

run "save on 2 nodes" 4 2 -- save "$file" $n
run "load on 1 node" 2 1 -- load "$file" $n 4194304
run "load on 3 nodes" 3 3 -- load "$file" $n 4194304
run "load into a smaller table" 2 2 -- load "$file" $n 131072
run "load into buckets of 8 slots" 2 2 MPITEST_SLOTS=8 -- \
    load "$file" $n 4194304
run "damaged files refused" 2 2 -- refuse "$file" "$tmp" $n
run "load on 2 nodes, fine-lock" 2 2 MPITEST_MODE=fine-lock \
    MPIKVS_TRANSPORT=mpi -- load "$file" $n 4194304

# 1 MiB values: 24 entries, 24 MiB of file; 64 MiB a node holds 3
# buckets of 16 slots (16.8 MiB each), or 15 of 4
large="$tmp/large.kvs"
run "save 1 MiB values on 2 nodes, 16 slots" 2 2 MPITEST_VALUE_SIZE=1048576 \
    MPITEST_SLOTS=16 -- save "$large" 24 67108864
run "load 1 MiB values on 3 nodes" 3 3 MPITEST_VALUE_SIZE=1048576 -- \
    load "$large" 24 67108864
rm -f "$large"

cat >"$tmp/persist.json" <<JSON
{"version": 1, "tables": {"warm": {"key": {"key_size": 32},
 "value": {"value_size": 64}, "size": "4M",
 "persist": {"load": "$tmp/warm.kvs", "save": "$tmp/warm.kvs"}}}}
JSON
run "config: no file to load yet, close saves" 2 2 \
    MPIKVS_CONFIG="$tmp/persist.json" -- config $n
run "config: open loads" 3 3 MPIKVS_CONFIG="$tmp/persist.json" -- \
    config-check $n

left=$(ls -A "$MPIKVS_SHM_DIR")
[ -z "$left" ] || bad "left in $MPIKVS_SHM_DIR: $left"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
