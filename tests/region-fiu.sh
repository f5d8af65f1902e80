#!/bin/sh
# region-fiu.sh - check_region_fiu under `fiu-run -x`: libfiu's POSIX
# wrappers make open(2) and mmap(2) fail in creating and opening a
# region (see check_region_fiu.c).
fiu_run=${FIU_RUN:-fiu-run}
if ! command -v "$fiu_run" >/dev/null 2>&1; then
    echo "FAIL: $fiu_run is missing (install fiu-utils)"
    exit 1
fi
prog="${top_builddir:-.}/tests/check_region_fiu"
# a libtool wrapper script would run under the wrappers too: the binary
real="$(dirname "$prog")/.libs/$(basename "$prog")"
[ -x "$real" ] && prog=$real
# fiu-run preloads its libraries; the sanitizers' runtime must come first
case "${LD_PRELOAD:-}" in *asan*) ;; *)
    asan=$(ldd "$prog" 2>/dev/null | sed -n 's/.*=> \(.*libasan[^ ]*\).*/\1/p')
    [ -n "$asan" ] && LD_PRELOAD=$asan && export LD_PRELOAD ;;
esac
exec "$fiu_run" -x -f "" "$prog"
