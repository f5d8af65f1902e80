#!/bin/sh
# libmpikvs exports exactly the symbols listed in libmpikvs/libmpikvs.sym
# (the linker takes its exports from that list), and the list is exactly
# the functions the public headers (include/*.h) declare: a symbol more
# is an internal name leaking into every application that links the
# library, a symbol less is a declared function no program can link, and
# a symbol that goes away breaks the ABI (libmpikvs/local.mk says how the
# version follows).
LC_ALL=C
export LC_ALL
lib=${top_builddir:-.}/libmpikvs/.libs/libmpikvs.so
src=${top_srcdir:-.}
list=$src/libmpikvs/libmpikvs.sym
if [ ! -f "$lib" ]; then
    echo "check-exports: $lib not built" >&2
    exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
    sort >"$tmp/exported"
sort "$list" >"$tmp/listed"
# a declaration starts at the line's start with its type (not in a
# comment): "int mpikvs_open(", "const char *mpikvs_version("; a static
# inline function of a header (mpikvs_stat_double) is no symbol
sed -n '/^static /!s/^[a-z][^(]*[ *]\(mpikvs_[a-z0-9_]*\)(.*/\1/p' "$src"/include/*.h |
    sort -u >"$tmp/declared"

rc=0
# same WHAT A B: the lists A and B are the same, else what each has more
same() {
    if ! cmp -s "$2" "$3"; then
        echo "check-exports: $1:" >&2
        comm -23 "$2" "$3" | sed "s/^/  only in $(basename "$2"): /" >&2
        comm -13 "$2" "$3" | sed "s/^/  only in $(basename "$3"): /" >&2
        rc=1
    fi
}
if [ ! -s "$tmp/exported" ]; then
    echo "check-exports: $lib exports nothing" >&2
    exit 1
fi
same "$lib's exports are not $list" "$tmp/exported" "$tmp/listed"
same "$list is not what include/*.h declare" "$tmp/listed" "$tmp/declared"
[ "$rc" = 0 ] &&
    echo "check-exports: $(wc -l <"$tmp/exported") symbols, as listed in libmpikvs.sym and declared in include/"
exit "$rc"
