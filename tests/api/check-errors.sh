#!/bin/sh
# check-errors.sh - the return codes are listed once, MPIKVS_RETURN_CODES
# in include/mpikvs_errors.h, and the rest agrees with the list:
#   - mpikvs_strerror gives each code the list's text (errors_list);
#   - the tables of mpikvs(3) and mpikvs(7) (their ".BR MPIKVS_... (N)"
#     entries) name every error code of the list, with its value, in its
#     order, and no other; a success code they name has its value;
#   - the band each page states, MPIKVS_ERR_LAST (N) to MPIKVS_ERR_FIRST
#     (N), is the list's.
# Prints "ok" or "FAIL" per check and a tally; exits 1 on any failure.
LC_ALL=C
export LC_ALL
src=${top_srcdir:-.}
prog=${top_builddir:-.}/tests/api/errors_list
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() {
    echo "FAIL: $1"
    [ -n "$2" ] && sed 's/^/    /' "$2"
    fail=$((fail + 1))
}

if "$prog" >"$tmp/list" 2>"$tmp/err"; then
    ok "mpikvs_strerror gives every code the list's text"
else
    bad "mpikvs_strerror disagrees with the list" "$tmp/err"
fi
grep '^MPIKVS_ERR_' "$tmp/list" >"$tmp/errors"
[ -s "$tmp/errors" ] || { bad "no error code listed by $prog" "$tmp/err"; exit 1; }
first=$(sed -n 's/^band \(-[0-9]*\) -[0-9]*$/\1/p' "$tmp/list")
last=$(sed -n 's/^band -[0-9]* \(-[0-9]*\)$/\1/p' "$tmp/list")

for page in mpikvs.3 mpikvs.7; do
    in=$src/man/$page.in
    # ".BR MPIKVS_ERR_INVAL " (\-30800)"" -> "MPIKVS_ERR_INVAL -30800"
    sed -nE 's/^\.BR (MPIKVS_[A-Z_]+) " \((\\-)?([0-9]+)\)"$/\1 \2\3/p' "$in" |
        sed 's/ \\-/ -/' >"$tmp/$page"
    grep '^MPIKVS_ERR_' "$tmp/$page" >"$tmp/$page.errors"
    if cmp -s "$tmp/errors" "$tmp/$page.errors"; then
        ok "$page's table has every error code of the list, in order"
    else
        diff "$tmp/errors" "$tmp/$page.errors" >"$tmp/diff"
        bad "$page's table is not the list's error codes (< list, > $page)" \
            "$tmp/diff"
    fi
    grep -v '^MPIKVS_ERR_' "$tmp/$page" | while read -r name value; do
        grep -qx "$name $value" "$tmp/list" ||
            echo "$name ($value) is not in the list so"
    done >"$tmp/other"
    if [ -s "$tmp/other" ]; then
        bad "$page names a success code with another value" "$tmp/other"
    else
        ok "$page's success codes have the list's values"
    fi
    # ".B MPIKVS_ERR_LAST" then "(\-30820) to"
    band=$(sed -n '/^\.B MPIKVS_ERR_\(LAST\|FIRST\)$/{n;s/^(\\\(-[0-9]*\)).*/\1/p;}' "$in" |
        paste -s -d ' ' -)
    if [ "$band" = "$last $first" ]; then
        ok "$page gives the band as $last to $first"
    else
        bad "$page gives the band as '$band', the list's is '$last $first'"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
