#!/bin/sh
#
# prove-broken.sh - does the history checker catch real bugs?  For each
# deliberately broken build of tests/history/broken/*.patch: copy the
# source tree, apply the patch, build the history program, run the
# matrix setting the patch names ("setting:" line, a HISTORY_ONLY
# pattern), and expect the check to fail.  Not in the suite (it builds
# the library once per patch); run it by hand from the source tree:
#
#   sh tests/history/prove-broken.sh [PATCH...]
#
# Prints, per patch, what the checker printed; exits nonzero when a
# broken build passed.  Environment: PROVE_OPS (operations per rank and
# epoch; default: the suite's), PROVE_TRIES (runs of the setting before a
# broken build counts as not caught, default 3), PROVE_KEEP=1 (keep the
# work directory), TMPDIR.

LC_ALL=C
export LC_ALL
src=$(cd "$(dirname "$0")/../.." && pwd)
ops="${PROVE_OPS:-}"
tries="${PROVE_TRIES:-3}"
[ $# -gt 0 ] || set -- "$src"/tests/history/broken/*.patch
work=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-prove-broken.XXXXXX") || exit 1
[ "${PROVE_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

missed=0
for patch in "$@"; do
    name=$(basename "$patch" .patch)
    setting=$(sed -n 's/^setting: //p' "$patch")
    tree="$work/$name"
    echo "== $name: $(sed -n 2,3p "$patch" | tr '\n' ' ')"
    mkdir -p "$tree/build"
    # the tracked files, as they are in the work tree
    (cd "$src" && git ls-files -z | xargs -0 tar cf -) |
        (cd "$tree" && tar xf -)
    if ! (cd "$tree" && patch -s -p1 <"$patch"); then
        echo "FAIL $name: the patch does not apply"
        missed=$((missed + 1))
        continue
    fi
    if ! (cd "$tree" && autoreconf -fi >/dev/null 2>&1 && cd build &&
          ../configure --quiet >"$work/$name.log" 2>&1 &&
          make -j2 -s tests/history/history >>"$work/$name.log" 2>&1); then
        echo "FAIL $name: the broken tree does not build ($work/$name.log):"
        tail -20 "$work/$name.log"
        missed=$((missed + 1))
        continue
    fi
    caught=0
    for try in $(seq "$tries"); do
        out="$work/$name.run$try"
        (cd "$tree/build" && env top_builddir=. top_srcdir=.. \
            HISTORY_ONLY="$setting" ${ops:+HISTORY_OPS="$ops"} \
            HISTORY_KEEP="$work/$name.kept" \
            sh ../tests/history/run-history-tests.sh) >"$out" 2>&1
        if grep -q "^FAIL $setting\|^FAIL vnodes" "$out"; then
            caught=1
            echo "CAUGHT $name (setting \"$setting\", run $try of $tries)" \
                "; the checker printed:"
            sed -n '/^FAIL vnodes/,$p' "$out" | grep -v '^    history: ' |
                cut -c1-300 | head -20
            break
        fi
        if ! grep -q '^PASS vnodes' "$out"; then
            echo "FAIL $name: the setting did not run:"
            sed 's/^/    /' "$out" | tail -20
            break
        fi
        echo "    run $try: $(grep '^PASS vnodes' "$out" | cut -c1-200)"
    done
    if [ "$caught" = 0 ]; then
        echo "MISSED $name: the checker passed $tries runs of \"$setting\""
        missed=$((missed + 1))
    fi
done
[ "$missed" = 0 ]
