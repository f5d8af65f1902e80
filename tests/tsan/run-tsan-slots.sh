#!/bin/sh
#
# run-tsan-slots.sh - tests/tsan/tsan_slots (the bucket protocol under
# ThreadSanitizer) with the environment it needs: a report ends it with
# status 66 (TSAN_OPTIONS), and UCX's memory hooks stay out
# (UCX_MEM_MMAP_HOOK_MODE=none): the program links libucm with the
# library, whose madvise hook, called as a thread's stack is released,
# crashes inside TSan's interceptors.
#
# Environment: top_builddir (default .), TSAN_SLOTS_ARGS (default none:
# the program's own counts).

prog="${top_builddir:-.}/tests/tsan/tsan_slots"
if [ ! -x "$prog" ]; then
    echo "FAIL: $prog is missing (make check builds it)" >&2
    exit 1
fi
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }halt_on_error=1 exitcode=66"
UCX_MEM_MMAP_HOOK_MODE=none
export TSAN_OPTIONS UCX_MEM_MMAP_HOOK_MODE
# shellcheck disable=SC2086
timeout -k 5 "${MPITEST_TIMEOUT:-120}" "$prog" ${TSAN_SLOTS_ARGS:-}
rc=$?
case $rc in
0)   echo "PASS tsan_slots" ;;
66)  echo "FAIL tsan_slots: ThreadSanitizer reported (above)" ;;
124|137) echo "FAIL tsan_slots: timed out" ;;
*)   echo "FAIL tsan_slots: exit $rc" ;;
esac
exit $rc
