#!/bin/sh
#
# bench-dht.sh - "mpikvs-bench dht" --work-us, --remote-gets and
# --transport under mpirun, np 2, small numbers: what the runs print,
# never how fast (tests/bench-transport.sh measures).
#
#   - through each transport built (mpi; ucx when config.h has HAVE_UCX),
#     on 2 virtual nodes: the header names the transport asked for; with
#     --work-us the table has an efficiency column, a percentage of at
#     most 100 in the mixed row and "-" in the others; --remote-gets
#     prints its line with as many remote gets as asked; no wrong value;
#   - the same in JSON ("work_us", "efficiency", "remote_get");
#   - --async --batch 8 --work-us 20 on 2 virtual nodes: the header says
#     "async", the mixed row has its efficiency, no wrong value;
#   - without --work-us the table is as before (no efficiency column);
#   - on one node --remote-gets says there is no remote key;
#   - --value-size 16K,64K (small table, few gets) on 2 virtual nodes:
#     the header, and for each size its table, get, memcpy, pingpong and
#     ratio lines with numbers in every field (moved and copies per get
#     included: numbers, whatever the library counts), 0 misses, 0 wrong;
#     --slots and --far-read without --value-size, a bad --far-read and
#     --value-size with --json are refused with status 2;
#   - "mpikvs-bench near" (a small table) on 2 virtual nodes: its header,
#     every pass with a rate above 0 and no wrong answer, the near passes
#     with members per query above 0 by its count and by the library's
#     statistics, the ratio and memory lines; --coarser not below
#     --digits is refused with status 2;
#   - an unknown --transport fails with the library's message; without
#     UCX, --transport ucx fails with its message; bad values and
#     --work-us with --tier, --async without --batch are refused with
#     status 2;
#   - nothing is left in the shm directory (private to this script).
#
# Environment: top_builddir, top_srcdir (as make check sets them), MPIRUN
# (default mpirun), MPITEST_TIMEOUT (seconds per run, default 120).
# Exits 77 (skipped) without mpirun.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_bench
transports=mpi
if grep -q '^#define HAVE_UCX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
    transports="mpi ucx"
fi

plain_mpirun_env
# Debian's Open MPI: the mpi transport's window across (virtual) nodes
# needs osc pt2pt or ucx (mpikvs-bench(1)); the ucx transport needs none
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$bench" && xs="$xs -x ASAN_OPTIONS"

plain_mpirun_scratch bench-dht

plain_mpirun_tally

# run OUT VNODES ARGS...: the benchmark at np 2, its output (both
# streams) in OUT; returns its exit status
run() {
    out=$1 vnodes=$2
    shift 2
    MPIKVS_VIRTUAL_NODES=$vnodes
    export MPIKVS_VIRTUAL_NODES
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np 2 $xs \
        -x MPIKVS_VIRTUAL_NODES "$bench" dht "$@" >"$out" 2>&1 </dev/null
}

# expect NAME STATUS TEXT ARGS...: a refused run (STATUS "nonzero": any
# but 0, as mpirun passes on the first failing rank's)
expect() {
    name=$1 want=$2 text=$3
    shift 3
    run "$tmp/out" 2 "$@"
    rc=$?
    if [ "$want" = nonzero ] && [ "$rc" -eq 0 ] ||
        { [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; }; then
        bad "$name: exit $rc, expected $want" "$tmp/out"
        return
    fi
    if grep -qF -- "$text" "$tmp/out"; then ok; else
        bad "$name: no '$text' in the output" "$tmp/out"; fi
}

small="--pairs 500 --ops 500"

for t in $transports; do
    echo "# --transport $t --work-us 20 --remote-gets 100, 2 virtual nodes"
    out="$tmp/$t"
    # shellcheck disable=SC2086
    if run "$out" 2 --transport "$t" $small --work-us 20 \
        --remote-gets 100; then ok; else
        bad "$t: exit $?" "$out"; fi
    if grep -q "^# .* dht: np=2 nodes=2 (virtual) mode=lockfree transport=$t " "$out"; then ok; else
        bad "$t: the header lacks 'nodes=2 (virtual) ... transport=$t'" "$out"; fi
    if grep -q '^# work: 20 us of computation' "$out" &&
        grep -q '^phase .* direct efficiency  *probes$' "$out"; then ok; else
        bad "$t: no '# work: 20 us' line or no efficiency column" "$out"; fi
    # mixed: a percentage in (0, 100]; write and read: "-"
    e=$(awk '$1 == "mixed" && $12 ~ /^[0-9]+\.[0-9]%$/ {
             v = $12 + 0; if (v > 0 && v <= 100) print "yes" }' "$out")
    d=$(awk '($1 == "write" || $1 == "read") && $12 == "-"' "$out" | wc -l)
    if [ "$e" = yes ] && [ "$d" -eq 2 ]; then ok; else
        bad "$t: the mixed row's efficiency is not a percentage in (0, 100], or write/read do not show '-'" "$out"; fi
    w=$(awk '($1 == "read" || $1 == "mixed") && $7 == "0"' "$out" | wc -l)
    if [ "$w" -eq 2 ]; then ok; else
        bad "$t: wrong values in the read or mixed phase" "$out"; fi
    if grep -q '^remote_get: gets 100 mean_us [0-9.]* median_us [0-9.]* p99_us [0-9.]* misses [0-9]* wrong 0$' "$out"; then ok; else
        bad "$t: no 'remote_get: gets 100 ... wrong 0'" "$out"; fi

    echo "# --transport $t --json"
    out="$tmp/$t.json"
    # shellcheck disable=SC2086
    if run "$out" 2 --transport "$t" $small --work-us 20 --remote-gets 50 \
        --json; then ok; else
        bad "$t json: exit $?" "$out"; fi
    for want in "\"transport\": \"$t\"" '"work_us": 20,' \
        '"efficiency": null' '"remote_get": {"gets": 50, ' '"wrong": 0}'; do
        if grep -qF -- "$want" "$out"; then ok; else
            bad "$t json: no '$want'" "$out"; fi
    done
    if grep -q '"efficiency": 0\.[0-9]*$\|"efficiency": 1\.0*$' "$out"; then ok; else
        bad "$t json: no efficiency fraction in the mixed phase" "$out"; fi
done

echo "# --async: batches in flight during the work"
# shellcheck disable=SC2086
if run "$tmp/async" 2 $small --batch 8 --async --work-us 20; then ok; else
    bad "async: exit $?" "$tmp/async"; fi
if grep -q '^# .* dht: np=2 nodes=2 (virtual) .* batch=8 async$' "$tmp/async"; then ok; else
    bad "async: the header lacks 'batch=8 async'" "$tmp/async"; fi
e=$(awk '$1 == "mixed" && $7 == "0" && $12 ~ /^[0-9]+\.[0-9]%$/' "$tmp/async" | wc -l)
w=$(awk '$1 == "read" && $7 == "0"' "$tmp/async" | wc -l)
if [ "$e" -eq 1 ] && [ "$w" -eq 1 ]; then ok; else
    bad "async: a wrong value, or no efficiency in the mixed row" "$tmp/async"; fi

echo "# without --work-us: no efficiency column; one node: no remote key"
# shellcheck disable=SC2086
if run "$tmp/plain" 1 $small --remote-gets 10; then ok; else
    bad "plain: exit $?" "$tmp/plain"; fi
if grep -q '^phase .* evictions  *direct  *probes$' "$tmp/plain" &&
    ! grep -q '^# work:' "$tmp/plain"; then ok; else
    bad "plain: the table changed without --work-us" "$tmp/plain"; fi
if grep -q '^remote_get: - (one node: no key has another home)$' "$tmp/plain"; then ok; else
    bad "plain: no 'remote_get: - (one node ...)'" "$tmp/plain"; fi

echo "# --value-size 16K,64K: large values, what a get moved and copied"
out="$tmp/large"
if run "$out" 2 --value-size 16K,64K --size 64M --remote-gets 50; then ok; else
    bad "large: exit $?" "$out"; fi
if grep -q '^# .* dht --value-size: np=2 nodes=2 (virtual) mode=lockfree transport=[a-z]* seed 1$' "$out"; then ok; else
    bad "large: no '# ... dht --value-size: np=2 nodes=2 (virtual)' header" "$out"; fi
num='[0-9][0-9]*\(\.[0-9]*\)\{0,1\}'
for v in 16384 65536; do
    for want in \
        "table: value_bytes $v slot_bytes $num slots_per_bucket 4 bucket_bytes $num buckets $num far_read auto pairs $num keys $num" \
        "get: value_bytes $v gets 50 gets_per_s $num mean_us $num median_us $num p99_us $num moved_per_get $num copies_per_get $num read_path [-a-z]* misses 0 wrong 0" \
        "memcpy: value_bytes $v copies $num mean_us $num" \
        "pingpong: value_bytes $v rounds 50 mean_us $num median_us $num p99_us $num" \
        "ratio: value_bytes $v get/memcpy $num get/pingpong $num"; do
        if grep -q "^$want\$" "$out"; then ok; else
            bad "large: no line '$want'" "$out"; fi
    done
done

echo "# mpikvs-bench near: neighbourhood queries against gets, 2 virtual nodes"
# near OUT ARGS...: "mpikvs-bench near" at np 2 on 2 virtual nodes
near() {
    out=$1
    shift
    MPIKVS_VIRTUAL_NODES=2
    export MPIKVS_VIRTUAL_NODES
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np 2 $xs \
        -x MPIKVS_VIRTUAL_NODES "$bench" near "$@" >"$out" 2>&1 </dev/null
}
out="$tmp/near"
if near "$out" --points 4000 --queries 256; then ok; else
    bad "near: exit $?" "$out"; fi
if grep -q '^# .* near: np=2 nodes=2 (virtual) mode=lockfree transport=[a-z]* seed 1$' "$out"; then ok; else
    bad "near: no '# ... near: np=2 nodes=2 (virtual)' header" "$out"; fi
# every pass: a rate above 0, no wrong answer; the near passes: members
# per query above 0, by the bench's count and by the library's statistics
rows=$(awk '$1 ~ /^(get|get_batch|near|near_batch|locations)$/ &&
            $4 + 0 > 0 && $5 + 0 > 0 && $6 + 0 > 0 && $11 == "0" &&
            ($1 ~ /^get/ || ($7 + 0 > 0 && $8 + 0 > 0))' "$out" | wc -l)
if [ "$rows" -eq 5 ]; then ok; else
    bad "near: not every pass has a rate, members per query above 0 and 0 wrong" "$out"; fi
if grep -q '^ratio: near/get [0-9.]* near_batch/get_batch [0-9.]* locations/copies [0-9.]* ' "$out" &&
    grep -q '^ratio_mean: near/get [0-9.]* near_batch/get_batch [0-9.]* locations/copies [0-9.]* ' "$out" &&
    grep -q '^memory: members 20 copies_bytes [1-9][0-9]* .* locations_bytes 320 ' "$out"; then ok; else
    bad "near: no ratio or memory line" "$out"; fi
near "$tmp/near.bad" --coarser 4 --digits 4
rc=$?
if [ "$rc" -eq 2 ] && grep -qF "invalid value '4' for --coarser" "$tmp/near.bad"; then ok; else
    bad "near --coarser 4 --digits 4: exit $rc, expected 2 and the message" "$tmp/near.bad"; fi

echo "# refused"
expect "--transport bogus" nonzero \
    "options.transport 'bogus' is not a transport (accepted: auto, mpi, ucx)" \
    --pairs 10 --transport bogus
case " $transports " in
*" ucx "*) ;;
*) expect "--transport ucx without UCX" nonzero \
       "this libmpikvs was built without UCX" --pairs 10 --transport ucx ;;
esac
expect "--work-us abc" 2 "invalid value 'abc' for --work-us" --work-us abc
expect "--work-us with --tier" 2 \
    "--work-us does not apply with --tier" --tier --work-us 5
expect "--async without --batch" 2 \
    "--async starts batches: give --batch K with K of 2 or more" --async
expect "--async with --tier" 2 \
    "--async does not apply with --tier" --tier --async
expect "--remote-gets with --tier" 2 \
    "--remote-gets does not apply with --tier" --tier --remote-gets 5
expect "--far-read without --value-size" 2 \
    "--far-read applies only with --value-size" --far-read slot
expect "--far-read bogus" 2 \
    "invalid value 'bogus' for --far-read: expected one of auto, bucket, slot" \
    --value-size 16K --far-read bogus
expect "--value-size with --json" 2 \
    "--json does not apply with --value-size" --value-size 16K --json

left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else
    bad "left in $MPIKVS_SHM_DIR: $left"; fi

echo "bench-dht.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
