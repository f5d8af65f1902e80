#!/bin/sh
# call-circles.sh BUILD: no circle of calls between the files of one
# library or program.  For each directory of the tree, an edge "a b" for
# every symbol a's object uses and b's defines (nm), and tsort(1) to find
# a loop; a circle means two files that are one concern, or one concern
# split wrongly.  Run on a built tree (quickstart.sh test runs it).
set -eu
build=${1:?usage: call-circles.sh BUILD}
dirs="common shm libmpikvs fortran python rmacache spank mpikvs-config mpikvs-stat
mpikvs-bench examples/reactive-transport"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
checked=0
for dir in $dirs; do
    [ -d "$build/$dir" ] || continue
    # each source's object once: libtool's PIC one where there is one
    objs=$(find "$build/$dir" -maxdepth 2 -name '*.o' | sort |
           awk -F/ '{ f = $NF; sub(/^[^-]*-/, "", f); if (!(f in seen)) { seen[f] = 1; print } }')
    [ -n "$objs" ] || continue
    : >"$work/defs"
    : >"$work/uses"
    for o in $objs; do
        f=$(basename "$o" .o)
        f=${f#*-}
        nm --defined-only "$o" | awk -v f="$f" '$2 ~ /^[TDBRC]$/ { print $3, f }' >>"$work/defs"
        nm --undefined-only "$o" | awk -v f="$f" '{ print $NF, f }' >>"$work/uses"
    done
    # edge: user -> definer, never a file to itself
    awk 'NR == FNR { def[$1] = $2; next }
         ($1 in def) && def[$1] != $2 { print $2, def[$1] }' \
        "$work/defs" "$work/uses" | sort -u >"$work/edges"
    checked=$((checked + 1))
    if ! tsort "$work/edges" >/dev/null 2>"$work/loop"; then
        echo "call-circles: $dir: a circle of calls between its files:" >&2
        sed 's/^tsort: .*input contains a loop:$/  loop:/; s/^tsort: /  /; s/^[^ ]/    &/' "$work/loop" >&2
        failed=1
    fi
done
if [ "$checked" -eq 0 ]; then
    echo "call-circles: nothing built in $build" >&2
    exit 1
fi
[ "$failed" -eq 0 ] || exit 1
echo "call-circles: $checked libraries and programs, no circle of calls"
