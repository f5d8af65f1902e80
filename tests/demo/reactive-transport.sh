#!/bin/sh
#
# reactive-transport.sh - mpikvs-reactive-transport on small grids under
# mpirun: the cached run hits and stays within the error bound, a warm
# start (the config's persist: a second run loads the first's save) hits
# every lookup, the no-cache run is reproducible bit for bit (also over
# another number of ranks), bad usage and a config that does not fit are refused, the
# outputs are written, --compare --interpolate --verify across two
# virtual nodes accounts for every cell (exact hits, interpolations
# accepted and rejected, CVODE), conserves mass in every accepted
# interpolation and reports its verified hits to the library, and no
# region is left behind.
#
# Every run has a hard time limit (DEMO_TIMEOUT seconds, default 120)
# and a private shm directory (MPIKVS_SHM_DIR), which must be empty at
# the end.  Timings are printed by the program but never judged here.
# Prints "ok" or "FAIL" per check; exits 1 on any failure, 77 (skip)
# without mpirun.
#
# Environment: top_builddir, top_srcdir (as make check sets them),
# MPIRUN (default mpirun), DEMO_TIMEOUT, DEMO_VERBOSE=1 (show every
# run's output).

LC_ALL=C
export LC_ALL
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
prog="$top_builddir/examples/reactive-transport/mpikvs-reactive-transport"
config="$top_srcdir/etc/examples/reactive-transport.json"
near_config="$top_srcdir/etc/examples/reactive-transport-near-coarser2.json"
mpirun=${MPIRUN:-mpirun}
limit=${DEMO_TIMEOUT:-120}
# the error bound of the issue: the cached run's fields within 1e-3
bound=1e-3

command -v "$mpirun" >/dev/null 2>&1 || { echo "SKIP: $mpirun not found"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "FAIL: timeout(1) not found"; exit 1; }
[ -x "$prog" ] || { echo "FAIL: $prog was not built"; exit 1; }
[ -r "$config" ] || { echo "FAIL: $config is missing"; exit 1; }

. "$top_srcdir/tests/plain-mpirun.sh"
plain_mpirun_env
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-demo.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
MPIKVS_SHM_DIR=$tmp/shm
export MPIKVS_SHM_DIR
mkdir "$MPIKVS_SHM_DIR"

passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# demo NAME NP ARGS...: run the program on NP ranks, output in
# $tmp/NAME.out, exit status in $rc.
demo() {
    name=$1 np=$2
    shift 2
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs \
        "$prog" --quiet "$@" >"$tmp/$name.out" 2>&1 </dev/null
    rc=$?
    [ "${DEMO_VERBOSE:-0}" = 1 ] && sed "s/^/    $name: /" "$tmp/$name.out"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo "    $name: timed out after $limit s"
    fi
    return 0
}

# field NAME FILE: the column NAME of the CSV line of the cached run
field() {
    awk -F, -v name="$1" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) col = i }
        NR > 1 && $1 == "cached" && col { print $col }' "$2"
}

# value RUN NAME FILE: the column NAME of the CSV line of run RUN
value() {
    awk -F, -v run="$1" -v name="$2" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) col = i }
        NR > 1 && $1 == run && col { print $col }' "$3"
}

# A number compared by awk: holds A OP B
holds() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }

small="--nx 24 --ny 20 --steps 12"

echo "# --compare on a small grid, 2 ranks"
demo compare 2 --compare --config "$config" $small \
    --csv "$tmp/compare.csv" --fields "$tmp/compare.fields" --no-plot
if [ "$rc" = 0 ]; then ok "--compare exits 0"; else
    fail "--compare exits $rc: $(cat "$tmp/compare.out")"; fi
if [ -r "$tmp/compare.csv" ] && [ "$(wc -l <"$tmp/compare.csv")" = 3 ]; then
    ok "the CSV has a header and a line per run"
else
    fail "the CSV: $(cat "$tmp/compare.csv" 2>&1)"
fi
hits=$(field hits "$tmp/compare.csv")
rate=$(field hit_rate "$tmp/compare.csv")
err=$(field max_rel_error "$tmp/compare.csv")
errfield=$(field max_rel_error_field "$tmp/compare.csv")
if [ -n "$hits" ] && holds "$hits" ">" 0; then
    ok "the cached run hits ($hits hits, rate $rate)"
else
    fail "no hits in the cached run: hits '$hits'"
fi
if [ -n "$err" ] && holds "$err" "<=" "$bound"; then
    ok "largest relative error $err ($errfield) <= $bound"
else
    fail "largest relative error '$err' ($errfield) is not <= $bound"
fi
if grep -q "^hit rate  *[0-9.]*%" "$tmp/compare.out" &&
   grep -q "^chemistry speedup" "$tmp/compare.out" &&
   grep -q "^largest error" "$tmp/compare.out" &&
   grep -q "^cache: .*, mpikvs transport \(ucx\|mpi\); " "$tmp/compare.out"; then
    ok "the summary reports hit rate, speedup, error and the cache's transport"
else
    fail "summary incomplete: $(cat "$tmp/compare.out")"
fi
lines=$(grep -vc '^#' "$tmp/compare.fields" 2>/dev/null)
if [ "$lines" = $((24 * 20)) ]; then ok "the fields file has a line per cell"
else fail "the fields file has '$lines' cells, not $((24 * 20))"; fi

echo "# --no-cache twice, and on another number of ranks: the same bits"
demo ref1 2 --no-cache $small --csv "$tmp/ref1.csv" --fields "$tmp/ref1.fields" --no-plot
rc1=$rc
demo ref2 2 --no-cache $small --csv "$tmp/ref2.csv" --fields "$tmp/ref2.fields" --no-plot
rc2=$rc
demo ref3 3 --no-cache $small --csv "$tmp/ref3.csv" --fields "$tmp/ref3.fields" --no-plot
rc3=$rc
if [ "$rc1$rc2$rc3" = 000 ]; then ok "--no-cache runs exit 0"; else
    fail "--no-cache runs exit $rc1 $rc2 $rc3: $(cat "$tmp/ref1.out" "$tmp/ref3.out")"; fi
if [ -s "$tmp/ref1.fields" ] && cmp -s "$tmp/ref1.fields" "$tmp/ref2.fields"; then
    ok "two --no-cache runs give identical fields"
else
    fail "two --no-cache runs differ: $(cmp "$tmp/ref1.fields" "$tmp/ref2.fields" 2>&1)"
fi
if [ -s "$tmp/ref3.fields" ] && cmp -s "$tmp/ref1.fields" "$tmp/ref3.fields"; then
    ok "--no-cache on 3 ranks gives the fields of 2 ranks"
else
    fail "--no-cache on 3 ranks differs: $(cmp "$tmp/ref1.fields" "$tmp/ref3.fields" 2>&1)"
fi
if grep -q '^no-cache,' "$tmp/ref1.csv" && ! grep -q '^cached,' "$tmp/ref1.csv"; then
    ok "--no-cache makes no cached run"
else
    fail "--no-cache CSV: $(cat "$tmp/ref1.csv")"
fi

echo "# across two virtual nodes: the remote path of the DHT"
OMPI_MCA_osc=pt2pt MPIKVS_VIRTUAL_NODES=2
export OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
xs_save=$xs
xs="$xs -x OMPI_MCA_osc -x MPIKVS_VIRTUAL_NODES"
demo vnodes 2 --compare --config "$config" $small --csv "$tmp/vnodes.csv" --no-plot
xs=$xs_save
unset OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
hits=$(field hits "$tmp/vnodes.csv")
err=$(field max_rel_error "$tmp/vnodes.csv")
if [ "$rc" = 0 ] && [ -n "$hits" ] && holds "$hits" ">" 0 &&
   [ -n "$err" ] && holds "$err" "<=" "$bound"; then
    ok "2 virtual nodes: hits $hits, error $err"
else
    fail "2 virtual nodes: exit $rc, hits '$hits', error '$err': $(cat "$tmp/vnodes.out")"
fi

echo "# --compare --interpolate --verify 0.5 across two virtual nodes"
# coarser 2 and one member: a grid this small has few neighbours
OMPI_MCA_osc=pt2pt MPIKVS_VIRTUAL_NODES=2
export OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
xs="$xs -x OMPI_MCA_osc -x MPIKVS_VIRTUAL_NODES"
demo interp 2 --compare --interpolate --min-members 1 --verify 0.5 \
    --config "$near_config" --nx 16 --ny 12 --steps 10 \
    --csv "$tmp/interp.csv" --no-plot
xs=$xs_save
unset OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
csv=$tmp/interp.csv
if [ "$rc" = 0 ] && grep -q '^cached,' "$csv" && grep -q '^interpolating,' "$csv"; then
    ok "--compare --interpolate: exit 0, an exact-only and an interpolating run"
else
    fail "--compare --interpolate: exit $rc: $(cat "$tmp/interp.out")"
fi
if head -n 1 "$csv" | grep -q ',interpolated,rejected_balance,rejected_negative,cvode_misses,mass_violations,near_queries,' &&
   grep -q '^surrogate  *exact hits  *interpolated  *rejected' "$tmp/interp.out" &&
   grep -q '^interpolating ' "$tmp/interp.out" &&
   grep -q '^accuracy of hits, per field (interpolating run' "$tmp/interp.out"; then
    ok "the CSV and the summary have the surrogates' columns and lines"
else
    fail "surrogate columns missing: $(head -n 1 "$csv"; cat "$tmp/interp.out")"
fi
for run in cached interpolating; do
    v() { value "$run" "$1" "$csv"; }
    lookups=$(v lookups) hits=$(v hits) acc=$(v interpolated)
    rb=$(v rejected_balance) rn=$(v rejected_negative) direct=$(v cvode_misses)
    solves=$(v cvode_solves) shared=$(v shared_solves) verified=$(v verified_hits)
    reports=$(v verify_reports) viol=$(v mass_violations)
    if [ -n "$lookups" ] && [ "$lookups" -gt 0 ] &&
       [ $((hits + acc + rb + rn + direct)) = "$lookups" ] &&
       [ $((rb + rn + direct - shared + verified)) = "$solves" ]; then
        ok "$run: $lookups cells = $hits hits + $acc interpolated + $((rb + rn)) rejected + $direct to CVODE; $solves solves"
    else
        fail "$run: the counts do not add up: lookups '$lookups' hits '$hits' interpolated '$acc' rejected '$rb'/'$rn' cvode_misses '$direct' solves '$solves' shared '$shared' verified '$verified'"
    fi
    if [ -n "$verified" ] && [ "$verified" -gt 0 ] && [ "$reports" = "$verified" ]; then
        ok "$run: $verified hits verified, the library counted $reports reports"
    else
        fail "$run: verified hits '$verified', the library's reports '$reports'"
    fi
done
acc=$(value interpolating interpolated "$csv")
viol=$(value interpolating mass_violations "$csv")
queries=$(value interpolating near_queries "$csv")
ierr=$(value interpolating max_rel_error "$csv")
if [ -n "$acc" ] && [ "$acc" -gt 0 ] && [ "$viol" = 0 ] && [ "$queries" -gt 0 ]; then
    ok "$acc interpolations accepted ($queries near queries), none off balance; error $ierr"
else
    fail "interpolations: accepted '$acc', off balance '$viol', near queries '$queries'"
fi
# interpolating from one member is coarse: only a sane bound here (the
# benchmark measures the error)
if [ -n "$ierr" ] && holds "$ierr" "<" 1; then
    ok "the interpolating run's largest error $ierr < 1"
else
    fail "the interpolating run's largest error '$ierr' is not < 1"
fi
demo nonear 1 --interpolate --config "$config" --nx 4 --ny 2 --steps 1 \
    --no-plot --csv "$tmp/nonear.csv"
if [ "$rc" = 1 ] && grep -q 'no "near" setting' "$tmp/nonear.out"; then
    ok "--interpolate on a table without near: exit 1, says so"
else
    fail "--interpolate without near: exit $rc: $(cat "$tmp/nonear.out")"
fi

echo "# a warm start: a second run loads what the first saved (config persist)"
awk -v f="$tmp/warm.kvs" '
    /"mode": "lockfree"/ { sub(/"mode": "lockfree"/,
        "\"mode\": \"lockfree\", \"persist\": { \"load\": \"" f "\", \"save\": \"" f "\" }") }
    { print }' "$config" >"$tmp/warm.json"
demo cold 2 --config "$tmp/warm.json" $small --csv "$tmp/cold.csv" --no-plot
rc_cold=$rc
demo warm 2 --config "$tmp/warm.json" $small --csv "$tmp/warm.csv" --no-plot
cold=$(field hit_rate "$tmp/cold.csv")
warm=$(field hit_rate "$tmp/warm.csv")
solves=$(field cvode_solves "$tmp/warm.csv")
if [ "$rc_cold" = 0 ] && [ "$rc" = 0 ] && [ -s "$tmp/warm.kvs" ]; then
    ok "the cold run saved at close, the warm run loaded at open"
else
    fail "cold exit $rc_cold, warm exit $rc: $(cat "$tmp/cold.out" "$tmp/warm.out")"
fi
if [ -n "$warm" ] && [ "$solves" = 0 ] && holds "$warm" "==" 1; then
    ok "the warm run hits every lookup (cold: $cold, warm: $warm)"
else
    fail "warm run: hit rate '$warm' (cold '$cold'), '$solves' solves"
fi

echo "# the picture"
if command -v "${GNUPLOT:-gnuplot}" >/dev/null 2>&1; then
    demo plot 1 --config "$config" $small --csv "$tmp/plot.csv" --plot "$tmp/fields.svg"
    if [ "$rc" = 0 ] && grep -q '<svg' "$tmp/fields.svg" 2>/dev/null &&
       grep -q '<image' "$tmp/fields.svg"; then
        ok "--plot writes an SVG with the fields"
    else
        fail "--plot: exit $rc: $(cat "$tmp/plot.out")"
    fi
else
    echo "skip: gnuplot is not installed: no picture test"
fi
GNUPLOT=$tmp/no-such-gnuplot
export GNUPLOT
demo noplot 1 --config "$config" $small --csv "$tmp/noplot.csv" --plot "$tmp/none.png"
unset GNUPLOT
if [ "$rc" = 1 ] && grep -q "no-such-gnuplot' not found (install gnuplot" "$tmp/noplot.out" &&
   grep -q '^cached,' "$tmp/noplot.csv"; then
    ok "without gnuplot: exit 1, a clear message, the CSV still written"
else
    fail "without gnuplot: exit $rc: $(cat "$tmp/noplot.out")"
fi

echo "# refusals"
# refused NAME WANT ARGS...: exit 2 (usage) with WANT in the message
refused() {
    name=$1 want=$2
    shift 2
    demo "$name" 1 "$@"
    if [ "$rc" = 2 ] && grep -q -- "$want" "$tmp/$name.out"; then
        ok "$name: refused"
    else
        fail "$name: exit $rc, wanted 2 and '$want': $(cat "$tmp/$name.out")"
    fi
}
refused "unknown option" "unknown option '--bogus'" --bogus
refused "--nx 1" "invalid value '1' for --nx" --nx 1
refused "--steps x" "invalid value 'x' for --steps" --steps x
refused "--dt 0" "invalid value '0' for --dt" --dt 0
refused "--plot x.jpg" "must end in .svg or .png" --plot x.jpg
refused "--reuse both" "give 'change' or 'state'" --reuse both
refused "--no-cache --compare" "exclude each other" --no-cache --compare
refused "--verify 1.5" "invalid value '1.5' for --verify" --verify 1.5
refused "--no-cache --interpolate" "excludes --interpolate" --no-cache --interpolate
demo help 1 --help
if [ "$rc" = 0 ] && grep -q -- "--compare" "$tmp/help.out"; then ok "--help"
else fail "--help: exit $rc"; fi

demo noconfig 2 $small --no-plot --csv "$tmp/noconfig.csv"
if [ "$rc" = 1 ] && grep -q "no job config: give --config FILE" "$tmp/noconfig.out"; then
    ok "no config: exit 1, says how to give one"
else
    fail "no config: exit $rc: $(cat "$tmp/noconfig.out")"
fi
demo wrongtable 2 $small --no-plot --csv "$tmp/wrong.csv" \
    --config "$top_srcdir/etc/examples/chemistry.json"
if [ "$rc" = 1 ] && grep -q "does not fit this program" "$tmp/wrongtable.out"; then
    ok "a config of another shape: exit 1, names the key it needs"
else
    fail "a config of another shape: exit $rc: $(cat "$tmp/wrongtable.out")"
fi
demo toomany 3 --no-cache --nx 4 --ny 2 --steps 1 --no-plot --csv "$tmp/toomany.csv"
if [ "$rc" = 1 ] && grep -q "3 ranks for 2 rows" "$tmp/toomany.out"; then
    ok "more ranks than rows: exit 1, says so"
else
    fail "more ranks than rows: exit $rc: $(cat "$tmp/toomany.out")"
fi

echo "# nothing left behind"
left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok "no region left in the private shm directory"
else fail "left in the shm directory: $left"; fi

echo "demo: $passed passed, $failed failed"
[ "$failed" = 0 ]
