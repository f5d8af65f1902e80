# tally.sh - sourced (POSIX sh) by the scripts that run their checks in
# one process and print "ok: ..." or "FAIL: ..." for each
# (configure-minimal.sh, cmake-project.sh).  Set tally_name first.
#
#   check TEXT COMMAND...   ok TEXT if COMMAND succeeds, else fail TEXT
#   ok TEXT, fail TEXT      print it and count it (passed, failed)
#   has FILE TEXT           FILE holds TEXT (a fixed string); else show
#       FILE and be false, as a check's evidence
#   finish                  print "$tally_name: P passed, F failed" and
#       exit, 0 only when nothing failed

passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
check() {
    tally_what=$1
    shift
    if "$@"; then ok "$tally_what"; else fail "$tally_what"; fi
}
has() {
    grep -qF -- "$2" "$1" && return 0
    echo "  '$2' is not in $1:"
    sed 's/^/  | /' "$1"
    return 1
}
finish() {
    echo "$tally_name: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}
