#!/bin/sh
#
# bench-persist.sh - "mpikvs-bench persist" and "mpikvs-bench clear"
# under mpirun, np 2 on 2 virtual nodes, a small table: they run and
# print their fields, never how fast.
#
#   - text and JSON carry the entries, the file's bytes, the save and
#     load times and rates, and how many did not fit (0: the same table);
#   - the save file is gone afterwards, and so are its partial files
#     (<file>.partial.XXXXXX);
#   - a bad option is refused with its message and status 2;
#   - clear: text and JSON carry the open's, the clear's and the
#     barriers' times, and no key hits after a clear;
#   - nothing is left in the shm directory (private to this script).
#
# Environment: top_builddir, top_srcdir (as make check sets them), MPIRUN
# (default mpirun), MPITEST_TIMEOUT (seconds per run, default 120).
# Exits 77 (skipped) without mpirun.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_bench

plain_mpirun_env
plain_mpirun_scratch bench-persist
plain_mpirun_tally
# two virtual nodes need an MPI window (run-mpi-tests.sh says why pt2pt)
OMPI_MCA_osc=pt2pt
MPIKVS_VIRTUAL_NODES=2
export OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPIKVS_VIRTUAL_NODES -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$bench" && xs="$xs -x ASAN_OPTIONS"

run() {   # run OUT NP ARGS...: persist, or clear (SUB=clear)
    out=$1 np=$2
    shift 2
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs \
        "$bench" "${SUB:-persist}" "$@" >"$out" 2>&1 </dev/null
}
file="$tmp/save.kvs"
num='[0-9][0-9]*\.[0-9][0-9]*'

echo "# text"
if run "$tmp/t" 2 --size 1M --reps 2 --file "$file"; then ok
else bad "text: exit $?" "$tmp/t"; fi
if grep -q "^persist: 2 ranks on 2 nodes, 1048576 bytes a node, [1-9][0-9]* entries saved" "$tmp/t"; then ok
else bad "text: no heading" "$tmp/t"; fi
if grep -q "^  save (synced, renamed): $num s, $num GB/s$" "$tmp/t"; then ok
else bad "text: no save line" "$tmp/t"; fi
if grep -q "^  load (page cache warm): $num s, $num GB/s, 0 did not fit$" "$tmp/t"; then ok
else bad "text: no load line" "$tmp/t"; fi
if [ ! -e "$file" ] && ! ls "$file".partial.* >/dev/null 2>&1; then ok
else bad "the save file or a partial file of it is left"; fi

echo "# json"
if run "$tmp/j" 2 --size 1M --reps 1 --file "$file" --json; then ok
else bad "json: exit $?" "$tmp/j"; fi
for f in ranks nodes size_per_node entries file_bytes save_s save_gbs \
    load_s load_gbs not_fitting; do
    if grep -q "\"$f\": [0-9]" "$tmp/j"; then ok
    else bad "json: no $f" "$tmp/j"; fi
done

echo "# refused"
run "$tmp/r" 1 --fill 2
rc=$?
if [ "$rc" -eq 2 ] && grep -qF "invalid value '2' for --fill" "$tmp/r"; then
    ok; else bad "--fill 2: exit $rc" "$tmp/r"; fi

echo "# clear"
if SUB=clear run "$tmp/c" 2 --size 1M --puts 2000 --reps 2; then ok
else bad "clear: exit $?" "$tmp/c"; fi
if grep -q "^clear: 2 ranks on 2 virtual nodes, 1048576 bytes a node, 2000 puts before each clear, median of 2$" "$tmp/c" &&
    grep -q "^  open (empty table): $num s$" "$tmp/c" &&
    grep -q "^  clear: $num s (the open takes $num times as long)$" "$tmp/c" &&
    grep -q "^  4 barriers (a clear's collectives alone): $num s$" "$tmp/c" &&
    grep -q "^  gets after the clears: 0 of 4000 hit$" "$tmp/c"; then ok
else bad "clear: text" "$tmp/c"; fi
if SUB=clear run "$tmp/cj" 2 --size 1M --puts 0 --reps 1 --json &&
    grep -q '"puts": 0, "reps": 1, "open_s": [0-9.]*, "clear_s": [0-9.]*, "open_over_clear": [0-9.]*, "barriers_s": [0-9.]*, "checked": 0, "hits_after_clear": 0}$' "$tmp/cj"; then ok
else bad "clear: json" "$tmp/cj"; fi
SUB=clear run "$tmp/cr" 1 --puts -1
rc=$?
if [ "$rc" -eq 2 ] && grep -qF "invalid value '-1' for --puts" "$tmp/cr"; then
    ok; else bad "clear --puts -1: exit $rc" "$tmp/cr"; fi

echo "# nothing left behind"
left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else
    bad "left in $MPIKVS_SHM_DIR: $(echo "$left" | tr '\n' ' ')"; fi

echo "bench-persist: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
