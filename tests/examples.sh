#!/bin/sh
#
# examples.sh - the programs of examples/ (installed for users, quoted
# by mpikvs(3)) run as their heads say, under plain mpirun at np 2, each
# in a private shm directory:
#
#   - surrogate and batches on the table "chemistry" of
#     etc/examples/chemistry.json: exit 0, and the job's hit rate they
#     print is high (the cells share 50 states);
#   - warm-start twice on examples/warm-start.json, its persist path
#     moved to the scratch directory: the first run is a cold start with
#     no hit and saves the file; the second loads it and every get hits;
#   - rmacache-get alone, and with libmpikvs-rmacache preloaded and its
#     window declared readonly (MPIKVS_RMACACHE=readonly@table): the same
#     sums, and the cache's statistics show each rank fetched each entry
#     at most once and served the other gets;
#   - mpikvs(3)'s excerpt of surrogate.c is the program's own lines;
#   - nothing is left in the shm directory.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_scratch examples
plain_mpirun_tally
unset SLURM_JOB_ID SLURM_STEP_ID
mpirun=${MPIRUN:-mpirun}
limit=${MPITEST_TIMEOUT:-120}
ex=${top_builddir:-.}/examples
srcdir=${top_srcdir:-.}
for p in surrogate batches warm-start rmacache-get; do
    [ -x "$ex/$p" ] || { echo "FAIL: $ex/$p is missing (make check builds it)"; exit 1; }
done
command -v "$mpirun" >/dev/null 2>&1 || { echo "FAIL: $mpirun not found"; exit 1; }
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$ex/surrogate" && xs="$xs -x ASAN_OPTIONS"

# run OUT PROGRAM ARGS...: PROGRAM at np 2, its output in OUT
run() {
    out=$1
    shift
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np 2 "$@" \
        >"$out" 2>&1 </dev/null
}
# rate FILE PROGRAM: the hits and gets PROGRAM printed, as "HITS GETS"
rate() {
    sed -n "s/^$2: .*gets \([0-9]*\), hits \([0-9]*\) .*/\2 \1/p" "$1"
}
# mostly_hits FILE PROGRAM: gets were made, and 9 in 10 hit
mostly_hits() {
    set -- $(rate "$1" "$2")
    [ -n "$1" ] && [ "$2" -gt 0 ] && [ $(($1 * 10)) -ge $(($2 * 9)) ]
}

echo "# surrogate and batches, table chemistry"
for p in surrogate batches; do
    if run "$tmp/$p" "$ex/$p" "$srcdir/etc/examples/chemistry.json"; then ok
    else bad "$p: exit $?" "$tmp/$p"; fi
    if mostly_hits "$tmp/$p" "$p"; then ok
    else bad "$p: no line of 9 hits in 10 gets" "$tmp/$p"; fi
done

echo "# warm-start, twice"
sed "s|/tmp/mpikvs-warm-start.kvs|$tmp/warm.kvs|g" \
    "$srcdir/examples/warm-start.json" >"$tmp/warm.json"
if run "$tmp/w1" "$ex/warm-start" "$tmp/warm.json"; then ok
else bad "warm-start, first run: exit $?" "$tmp/w1"; fi
if grep -qF "warm-start: no $tmp/warm.kvs yet: a cold start" "$tmp/w1" &&
    [ "$(rate "$tmp/w1" warm-start)" = "0 400" ]; then ok
else bad "warm-start, first run: not a cold start of 400 gets, 0 hits" "$tmp/w1"; fi
if [ -f "$tmp/warm.kvs" ]; then ok; else bad "warm-start: close saved no $tmp/warm.kvs"; fi
if run "$tmp/w2" "$ex/warm-start" "$tmp/warm.json"; then ok
else bad "warm-start, second run: exit $?" "$tmp/w2"; fi
if grep -qF "warm-start: loaded 400 entries from $tmp/warm.kvs" "$tmp/w2" &&
    [ "$(rate "$tmp/w2" warm-start)" = "400 400" ]; then ok
else bad "warm-start, second run: did not load 400 entries and hit all 400 gets" "$tmp/w2"; fi

echo "# rmacache-get, alone and with the MPI_Get cache preloaded"
lib=${top_builddir:-.}/rmacache/.libs/libmpikvs-rmacache.so
preload=$lib
if plain_mpirun_asan "$ex/rmacache-get"; then
    preload="$(ldd "$lib" | awk '/libasan/ {print $3}') $lib"
fi
if run "$tmp/r0" "$ex/rmacache-get"; then ok
else bad "rmacache-get: exit $?" "$tmp/r0"; fi
if (MPIKVS_RMACACHE=readonly@table MPIKVS_RMACACHE_STATS=1
    export MPIKVS_RMACACHE MPIKVS_RMACACHE_STATS
    run "$tmp/r1" -x "LD_PRELOAD=$preload" -x MPIKVS_RMACACHE \
        -x MPIKVS_RMACACHE_STATS "$ex/rmacache-get"); then ok
else bad "rmacache-get, preloaded: exit $?" "$tmp/r1"; fi
sums() { grep '^rmacache-get: rank' "$1" | sort; }
if [ -n "$(sums "$tmp/r0")" ] && [ "$(sums "$tmp/r0")" = "$(sums "$tmp/r1")" ]; then ok
else bad "rmacache-get: the sums differ with the cache" "$tmp/r1"; fi
# each rank: gets 2000, at most its 64 entries fetched, the rest served
for r in 0 1; do
    stats=$(tr '\n' ' ' <"$tmp/r1" |
        grep -o "mpikvs-rmacache: rank $r window [0-9]* 'table' mode readonly: gets [0-9]* hits [0-9]* pending-hits [0-9]* node-hits [0-9]* misses [0-9]*")
    set -- $stats
    gets=${10:-0} hits=${12:-0} misses=${18:-99999}
    if [ "$gets" -eq 2000 ] && [ "$misses" -le 64 ] && [ "$hits" -ge 1900 ]; then ok
    else bad "rmacache-get: rank $r: want gets 2000, misses <= 64, hits >= 1900: ${stats:-no statistics}" "$tmp/r1"; fi
done

echo "# mpikvs(3) quotes surrogate.c as it is"
# each line of the excerpt after "The heart of", troff escapes undone
# and blanks squeezed, is a line of the program
squeeze() { tr -s ' ' | sed 's/^ //'; }
sed -n '/^The heart of$/,/^\.fi$/p' "$srcdir/man/mpikvs.3.in" |
    sed -n '/^\.nf$/,/^\.fi$/p' | sed '1d;$d' |
    sed 's/\\-/-/g; s/\\e/\\/g; s/^\\&//' | squeeze >"$tmp/excerpt"
squeeze <"$srcdir/examples/surrogate.c" >"$tmp/program"
missing=
while IFS= read -r line; do
    [ -z "$line" ] || [ "$line" = ... ] || grep -qxF -- "$line" "$tmp/program" ||
        missing="$missing
  $line"
done <"$tmp/excerpt"
if [ -s "$tmp/excerpt" ] && [ -z "$missing" ]; then ok
else bad "mpikvs(3)'s excerpt has lines surrogate.c does not:${missing:- (no excerpt)}"; fi

left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else bad "left in $MPIKVS_SHM_DIR: $(echo $left)"; fi

echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
