# shellcheck shell=bash
# shellcheck disable=SC2034  # the paths are for the scripts that source it
#
# common.sh - what the mpikvs-stat test scripts share.  Source it from
# bash after setting top_builddir; it sets the paths of the programs
# and counts checks: every check prints "ok: NAME" or "FAIL: NAME" with
# what it saw, and stat_summary prints the counts and returns nonzero if
# any check failed.

build=$(cd "${top_builddir:-.}" && pwd)
stat_bin=$build/mpikvs-stat/mpikvs-stat
stat_job=$build/tests/stat/stat_job
stat_region=$build/tests/stat/stat_region
json_get=$build/tests/stat/json_get

passed=0
failed=0

ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "SKIP: $*"; exit 77; }

# check NAME CMD...: ok if CMD succeeds.
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else fail "$name"; fi
}

# cond 'EXPR': EXPR (a compound condition, evaluated here) holds; for
# check NAME cond '[ "$a" = 1 ] && [ "$b" = 2 ]'.
cond() { eval "$1"; }

has() { grep -q -- "$2" <<<"$1"; }
has_fixed() { grep -qF -- "$2" <<<"$1"; }
lacks() { ! grep -q -- "$2" <<<"$1"; }

# expect NAME STATUS TEXT -- CMD...: CMD exits STATUS and its output
# (stdout and stderr) holds TEXT (fixed string); says what it got if not.
expect() {
    local name=$1 want_rc=$2 want_text=$3 out rc
    shift 4
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        fail "$name: exit $rc, expected $want_rc; output:"
        printf '%s\n' "$out" | sed 's/^/    /'
    elif ! grep -qF -- "$want_text" <<<"$out"; then
        fail "$name: output lacks '$want_text'; output:"
        printf '%s\n' "$out" | sed 's/^/    /'
    else
        ok "$name"
    fi
}

# jget PATH < JSON: the value at PATH of each document, one a line.
jget() { "$json_get" "$1"; }

# wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds.
wait_for() {
    local tries=$(($1 * 10))
    shift
    while ! "$@"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.1
    done
}

# The programs are built with the sanitizers when ldd of the real binary
# (not libtool's wrapper) shows libasan.
stat_asan() {
    local real=$stat_job
    [ -x "$build/tests/stat/.libs/stat_job" ] &&
        real=$build/tests/stat/.libs/stat_job
    ldd "$real" 2>/dev/null | grep -q asan
}

stat_summary() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" = 0 ]
}

# sum_of PATHS... < JSON: the sum of the values at the paths of one document
sum_of() {
    local doc total=0 p v
    doc=$(cat)
    for p in "$@"; do
        v=$(jget "$p" <<<"$doc") || return 1
        total=$((total + v))
    done
    echo "$total"
}

# watched_gets FILE: the job's gets (both nodes' first table) in each
# report of an "mpikvs-stat --watch --json" run, on one line.
watched_gets() {
    local doc gets=""
    while read -r doc; do
        gets="$gets $(sum_of nodes.0.tables.0.counters.dht.node.gets \
            nodes.1.tables.0.counters.dht.node.gets <<<"$doc")"
    done <"$1"
    echo "$gets"
}

# rates_agree FILE: in each report of FILE (one a line, from --json
# --watch) after the first, the job total's rates of the first table
# are what its gets, hits and puts grew by since the report before,
# per second of the interval, and its hit rate is that of the
# interval's gets; the first report has none.  Prints what disagrees.
rates_agree() {
    local doc rates prev="" ok=0 first=1 f
    while read -r doc; do
        rates=$(jget totals.0.rates <<<"$doc")
        if [ "$first" = 1 ]; then
            [ "$rates" = null ] || { echo "first report has rates: $rates"; ok=1; }
        else
            for f in gets hits puts; do
                now=$(jget "totals.0.counters.dht.$f" <<<"$doc")
                was=$(jget "totals.0.counters.dht.$f" <<<"$prev")
                rate=$(jget "totals.0.rates.dht.$f" <<<"$doc")
                secs=$(jget totals.0.rates.seconds <<<"$doc")
                awk -v n="$now" -v w="$was" -v r="$rate" -v s="$secs" \
                    'BEGIN { d = r * s - (n - w); exit !(s > 0 && d < 0.01 && d > -0.01) }' ||
                    { echo "$f: $was -> $now in $secs s, rate $rate"; ok=1; }
            done
            dg=$(jget totals.0.counters.dht.gets <<<"$doc")
            dh=$(jget totals.0.counters.dht.hits <<<"$doc")
            was=$(jget totals.0.counters.dht.gets <<<"$prev")
            hr=$(jget totals.0.counters.dht.hits <<<"$prev")
            if ! [[ "$dg $dh $was $hr" =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]]; then
                echo "no job totals: $dg $dh $was $hr"
                return 1
            fi
            dg=$((dg - was))
            dh=$((dh - hr))
            hr=$(jget totals.0.rates.dht.hit_rate <<<"$doc")
            if [ "$dg" = 0 ]; then
                [ "$hr" = null ] || { echo "no gets, hit rate $hr"; ok=1; }
            else
                awk -v h="$dh" -v g="$dg" -v r="$hr" \
                    'BEGIN { d = r - h / g; exit !(d < 1e-9 && d > -1e-9) }' ||
                    { echo "hit rate $hr of $dh hits in $dg gets"; ok=1; }
            fi
        fi
        first=0
        prev=$doc
    done <"$1"
    return $ok
}

# gets_move N...: never back, and forward over the reports (a busy
# machine may stall the job for one interval).
gets_move() {
    local g prev=-1 first=""
    for g in "$@"; do
        [ "$g" -ge "$prev" ] || return 1
        prev=$g
        first=${first:-$g}
    done
    [ "$prev" -gt "${first:-0}" ]
}
