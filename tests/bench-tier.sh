#!/bin/sh
#
# bench-tier.sh - "mpikvs-bench dht --tier" under mpirun, on 2 virtual
# nodes with small numbers: what the run does, never how fast.
#
#   - every value read is right (wrong=0, and 0 in every epoch's row);
#   - epoch 1 finds the tier empty and publishes into it at its fence;
#     every later epoch has tier hits and fewer remote gets than epoch 1;
#   - the latency pass sees both tier hits and remote gets;
#   - the same in fine-lock mode, and in JSON;
#   - on one node the tier stays empty, and the run says so;
#   - bad combinations of options and configs without a tier are refused
#     with their message and status;
#   - nothing is left in the shm directory or in TMPDIR (both private to
#     this script: MPIKVS_SHM_DIR, TMPDIR).
#
# Environment: top_builddir, top_srcdir (as make check sets them), MPIRUN
# (default mpirun), BENCH_TIER_TIMEOUT (seconds per run, default 300).
# Exits 77 (skipped) without mpirun.

LC_ALL=C
export LC_ALL
src="${top_srcdir:-.}"
. "$src/tests/plain-mpirun.sh"
plain_mpirun_bench
limit="${BENCH_TIER_TIMEOUT:-300}"
# what the transport auto resolves to in the lock-free mode: ucx in a
# library built with UCX, else mpi
if grep -q "^#define HAVE_UCX 1" "${top_builddir:-.}/config.h" 2>/dev/null; then
    auto_tp=ucx
else
    auto_tp=mpi
fi

plain_mpirun_env
# Debian's Open MPI: a window across (virtual) nodes needs osc pt2pt or
# ucx (see mpikvs-bench(1))
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x TMPDIR -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$bench" && xs="$xs -x ASAN_OPTIONS"

# the regions go to a directory of their own: other jobs' regions in
# /dev/shm are none of this test's business
plain_mpirun_scratch bench-tier
# the temporary configs go here, so that a left one is seen
TMPDIR="$tmp/tmpdir"
export TMPDIR
mkdir "$TMPDIR" || exit 1

plain_mpirun_tally

# run OUT NP VNODES ARGS...: the benchmark's output (both streams) in OUT;
# returns its exit status
run() {
    out=$1 np=$2 vnodes=$3
    shift 3
    if [ "$vnodes" -gt 1 ]; then
        MPIKVS_VIRTUAL_NODES=$vnodes
        export MPIKVS_VIRTUAL_NODES
        vx="-x MPIKVS_VIRTUAL_NODES"
    else
        unset MPIKVS_VIRTUAL_NODES
        vx=
    fi
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs $vx \
        "$bench" dht "$@" >"$out" 2>&1 </dev/null
}

# The epoch rows of a table: "epoch gets direct remote tier_hits tier_rate
# published dropped stalls hit_rate wrong ..." (lines that start with a
# number).
rows() {
    awk '$1 ~ /^[0-9]+$/ && NF >= 14' "$1"
}

# check_epochs NAME OUT EPOCHS: the tier's behaviour in a table.
check_epochs() {
    name=$1 out=$2 epochs=$3
    n=$(rows "$out" | wc -l)
    if [ "$n" -ne "$epochs" ]; then
        bad "$name: $n epoch rows, expected $epochs" "$out"
        return
    fi
    ok
    if grep -q '^checked [0-9]* values: wrong=0$' "$out"; then ok; else
        bad "$name: no 'checked N values: wrong=0'" "$out"; fi
    if grep -q '^epoch .* dropped  *stalls  *hit_rate  *wrong ' "$out"; then ok; else
        bad "$name: no column heading '... dropped stalls hit_rate wrong ...'" "$out"; fi
    w=$(rows "$out" | awk '$11 != 0' | wc -l)
    if [ "$w" -eq 0 ]; then ok; else
        bad "$name: $w epochs with wrong values" "$out"; fi
    r1=$(rows "$out" | awk '$1 == 1 { print $4 }')
    t1=$(rows "$out" | awk '$1 == 1 { print $5 }')
    p1=$(rows "$out" | awk '$1 == 1 { print $7 }')
    if [ "$t1" -eq 0 ]; then ok; else
        bad "$name: epoch 1 found $t1 keys in an empty tier" "$out"; fi
    if [ "$p1" -gt 0 ]; then ok; else
        bad "$name: the fence after epoch 1 published nothing" "$out"; fi
    # every later epoch: tier hits, and fewer remote gets than epoch 1
    later=$(rows "$out" | awk -v r1="$r1" \
        '$1 > 1 && ($5 == 0 || $4 >= r1) { printf "epoch %s ", $1 }')
    if [ -z "$later" ]; then ok; else
        bad "$name: no tier hits, or not fewer remote gets than epoch 1's $r1, in: $later" "$out"; fi
}

# check_latency NAME OUT: both paths measured, and their ratio printed.
check_latency() {
    name=$1 out=$2
    th=$(awk '$1 == "tier_hit" { print $2 }' "$out")
    rg=$(awk '$1 == "remote" { print $2 }' "$out")
    if [ "${th:-0}" -gt 0 ] && [ "${rg:-0}" -gt 0 ] &&
        grep -q '^tier_hit/remote: mean [0-9.]*, median [0-9.]*$' "$out"; then
        ok
    else
        bad "$name: latency pass without tier hits ($th) or remote gets ($rg), or no ratio" "$out"
    fi
}

# expect NAME STATUS TEXT NP ARGS...: a refused run
expect() {
    name=$1 want=$2 text=$3 np=$4
    shift 4
    run "$tmp/out" "$np" 1 "$@"
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "$name: exit $rc, expected $want" "$tmp/out"
    elif ! grep -qF -- "$text" "$tmp/out"; then
        bad "$name: no '$text' in the output" "$tmp/out"
    else
        ok
    fi
}

small="--keys 20000 --ops 4000 --epochs 3 --latency 2000"

echo "# lockfree, 2 virtual nodes, np 4"
# shellcheck disable=SC2086
if run "$tmp/lf" 4 2 --tier $small; then ok; else
    bad "lockfree: exit $?" "$tmp/lf"; fi
check_epochs lockfree "$tmp/lf" 3
check_latency lockfree "$tmp/lf"
if grep -q '^# .*nodes=2 (virtual)' "$tmp/lf"; then ok; else
    bad "lockfree: not on 2 virtual nodes" "$tmp/lf"; fi
# the transport the handle uses, next to the mode: what auto resolved to
if grep -q "^# .* dht --tier: .* mode=lockfree transport=$auto_tp\$" "$tmp/lf"; then ok; else
    bad "lockfree: the header lacks 'mode=lockfree transport=$auto_tp'" "$tmp/lf"; fi

echo "# fine-lock, 2 virtual nodes, np 4"
if run "$tmp/fl" 4 2 --tier --mode fine-lock --keys 5000 --ops 2000 \
    --epochs 2 --latency 500; then ok; else
    bad "fine-lock: exit $?" "$tmp/fl"; fi
check_epochs fine-lock "$tmp/fl" 2

echo "# JSON, 2 virtual nodes, np 2"
if run "$tmp/js" 2 2 --tier --json --keys 5000 --ops 2000 --epochs 2 \
    --latency 500; then ok; else
    bad "json: exit $?" "$tmp/js"; fi
for want in '"benchmark": "dht-tier"' '"epoch": 2' '"tier_hit": {"gets": ' \
    '"tier_stalls": ' '"checked": ' '"wrong": 0' "\"transport\": \"$auto_tp\""; do
    if grep -qF -- "$want" "$tmp/js"; then ok; else
        bad "json: no '$want'" "$tmp/js"; fi
done

echo "# one node: the tier stays empty"
if run "$tmp/one" 2 1 --tier --keys 5000 --ops 1000 --epochs 2 \
    --latency 100; then ok; else
    bad "one node: exit $?" "$tmp/one"; fi
if grep -q '^# note: one node' "$tmp/one" &&
    [ -z "$(rows "$tmp/one" | awk '$4 != 0 || $5 != 0')" ] &&
    grep -q 'wrong=0$' "$tmp/one"; then ok; else
    bad "one node: remote gets or tier hits, or no note" "$tmp/one"; fi

echo "# plain dht (no tier): the header and the JSON name the transport"
run "$tmp/plain" 2 2 --pairs 200 --ops 200
rc=$?
if [ "$rc" -eq 0 ] &&
    grep -q "^# .* dht: .* mode=lockfree transport=$auto_tp dist=" "$tmp/plain"; then ok; else
    bad "plain dht: exit $rc, or no 'mode=lockfree transport=$auto_tp' in the header" "$tmp/plain"; fi
run "$tmp/plainjs" 2 2 --pairs 200 --ops 200 --json
rc=$?
if [ "$rc" -eq 0 ] && grep -qF "\"transport\": \"$auto_tp\"" "$tmp/plainjs"; then ok; else
    bad "plain dht --json: exit $rc, or no '\"transport\": \"$auto_tp\"'" "$tmp/plainjs"; fi

echo "# refused"
expect pairs 2 '--pairs does not apply with --tier' 1 --tier --pairs 10
expect batch 2 '--batch does not apply with --tier' 1 --tier --batch 8
expect uniform 2 '--dist uniform does not apply with --tier' 1 \
    --tier --dist uniform
expect epochs 2 '--epochs applies only with --tier' 1 --epochs 3
expect tier-size 2 "invalid value '100%' for --tier-size" 1 \
    --tier --tier-size 100%
expect config-tier-size 2 '--tier-size applies to the temporary config' 1 \
    --tier --config "$src/etc/examples/chemistry.json" --tier-size 10%
expect no-tier 1 "has no node tier" 2 \
    --tier --config "$src/etc/examples/minimal.json"
expect wrong-sizes 1 'needs 80-byte keys and 104-byte values' 2 \
    --tier --config "$src/etc/examples/chemistry.json" --table interp
expect no-table 1 "has no table 'nope'" 2 \
    --tier --config "$src/etc/examples/chemistry.json" --table nope

echo "# nothing left behind"
left=
for f in "$TMPDIR"/mpikvs-bench.*; do
    [ -e "$f" ] && left="$left ${f##*/}"
done
if [ -z "$left" ]; then ok; else
    bad "temporary configs left in TMPDIR: $left"; fi
left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else
    bad "left in $MPIKVS_SHM_DIR: $(echo "$left" | tr '\n' ' ')"; fi

echo "bench-tier: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
