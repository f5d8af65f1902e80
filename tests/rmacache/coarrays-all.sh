#!/bin/sh
#
# coarrays-all.sh - run-coarrays.sh over every OpenCoarrays test program
# Debian ships (92 in 2.10.1), not only make check's short list: each
# without and with libmpikvs-rmacache, the same verdict expected.  Run
# from a build directory: top_srcdir=.. top_builddir=. sh
# ../tests/rmacache/coarrays-all.sh (a few minutes).

dir=/usr/lib/x86_64-linux-gnu/open-coarrays/openmpi/bin/OpenCoarrays-2.10.1-tests
if [ ! -d "$dir" ]; then
    echo "SKIP: $dir is missing (apt-get install libcoarrays-openmpi-dev)"
    exit 77
fi
# shellcheck disable=SC2046
exec sh "${top_srcdir:-.}/tests/rmacache/run-coarrays.sh" $(ls "$dir")
