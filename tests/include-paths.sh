#!/bin/sh
#
# include-paths.sh BUILD_DIR - every program and library of a built tree
# sees only the source directories whose headers it uses: each -I of the
# tree in a target's _CPPFLAGS (its local.mk) must be the directory of a
# header that some object of the target includes (from the compiler's
# dependency files, .deps/*.Po and *.Plo).  The tests' own targets see
# every directory by design (tests/local.mk) and are not judged.
#
# Run by configure-minimal.sh on its build, and usable on any build
# directory after `make`.  Prints "ok" or "FAIL" per target; exits 1 on
# any failure.

LC_ALL=C
export LC_ALL
build=${1:?usage: include-paths.sh BUILD_DIR}
build=$(cd "$build" && pwd) || exit 1
srcdir=$(sed -n 's/^top_srcdir = //p' "$build/Makefile")
srcdir=$(cd "$build" && cd "$srcdir" && pwd) || exit 1

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
printvar=$tmp/print.mk
# shellcheck disable=SC2016
printf 'print-var:\n\t@echo $($(VAR))\n' >"$printvar"

passed=0
failed=0
# A target's objects share their .deps prefix: DIR/.deps/CANON-SOURCE.P[l]o
targets=$(cd "$build" && find . -path ./tests -prune -o \
    -path '*/.deps/*' -name '*-*.P*o' -print |
    sed 's|^\./||; s|/\.deps/\([^-]*\)-.*|/\1|' | sort -u)
for t in $targets; do
    dir=${t%/*} canon=${t##*/}
    case $canon in tests_*) continue ;; esac
    # configure writes a dummy .deps file for every source; skip a
    # target that was not built (the demo without SUNDIALS)
    grep -q ':' "$build/$dir/.deps/$canon"-*.P*o 2>/dev/null || continue
    var=$(printf '%s' "$dir" | tr '/.-' '___')_${canon}_CPPFLAGS
    flags=$(make -s -C "$build" -f Makefile -f "$printvar" print-var VAR="$var" 2>/dev/null)
    # the directories of the tree it sees
    seen=$(for f in $flags; do
        case $f in -I*) d=$(cd "$build" && cd "${f#-I}" 2>/dev/null && pwd) ;; *) continue ;; esac
        case $d in "$srcdir"/*) echo "${d#"$srcdir"/}" ;; esac
    done | sort -u)
    # the directories of the tree's headers its objects include
    used=$(cd "$build/$dir/.deps" && cat "$canon"-*.P*o |
        tr ' \\' '\n\n' | grep '\.h$' | while read -r h; do
            case $h in /*) p=$h ;; *) p=$build/$h ;; esac
            d=$(cd "$(dirname "$p")" 2>/dev/null && pwd) || continue
            case $d in "$srcdir"/*) echo "${d#"$srcdir"/}" ;; esac
        done | sort -u)
    printf '%s\n' "$used" >"$tmp/used"
    extra=$(printf '%s\n' "$seen" | comm -23 - "$tmp/used" | tr '\n' ' ')
    if [ -z "$seen" ] && [ -z "$used" ]; then
        # an MPI-only program (examples/rmacache-get)
        echo "ok: $dir ($canon) sees no directory of the tree and uses none"
        passed=$((passed + 1))
    elif [ -z "$seen" ]; then
        echo "FAIL: $dir ($canon): no -I of the tree in $var; is the variable named so?"
        failed=$((failed + 1))
    elif [ -n "$extra" ]; then
        echo "FAIL: $dir ($canon) sees ${extra}without using a header there ($var)"
        failed=$((failed + 1))
    else
        echo "ok: $dir ($canon) sees $(printf '%s ' $seen)and uses them all"
        passed=$((passed + 1))
    fi
done
echo "include-paths: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
