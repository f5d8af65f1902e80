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
# fiu-run puts its wrappers first in LD_PRELOAD, and ASan's runtime must
# come first: in a sanitizer build the test cannot run (the plain build
# of quickstart.sh test runs it)
if ldd "$prog" 2>/dev/null | grep -q libasan; then
    echo "SKIP: region-fiu: fiu-run's preload and the ASan runtime do not mix"
    exit 77
fi
exec "$fiu_run" -x -f "" "$prog"
