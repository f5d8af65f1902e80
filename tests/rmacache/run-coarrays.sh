#!/bin/sh
#
# run-coarrays.sh [NAME...] - the OpenCoarrays test programs Debian ships
# (libcoarrays-openmpi-dev, libcoarrays-mpich-dev), unchanged Fortran programs whose runtime
# reads other images with MPI_Get under MPI_Win_lock_all and
# MPI_Win_flush, each run on 2 images without and with
# libmpikvs-rmacache preloaded: both runs must end the same way (exit
# status, 124 for a run cut at COARRAY_TIMEOUT seconds, default 60).
# Without NAMEs a short list runs (make check); coarrays-all.sh runs
# them all.  Prints a line per program and the counts; skips (77) when
# the package is not installed.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_tally
# Debian builds them once per MPI: the build's (MPI_FAMILY, as make check
# sets it) is the one whose runtime the preloaded library was built for
family=${MPI_FAMILY:-openmpi}
dir=/usr/lib/x86_64-linux-gnu/open-coarrays/$family/bin/OpenCoarrays-2.10.1-tests
if [ ! -d "$dir" ]; then
    echo "SKIP: $dir is missing (apt-get install libcoarrays-$family-dev)"
    exit 77
fi
lib="${top_builddir:-.}/rmacache/.libs/libmpikvs-rmacache.so"
if [ ! -f "$lib" ]; then
    echo "FAIL: $lib is missing (make builds it)" >&2
    exit 1
fi
mpirun="${MPIRUN:-mpirun}"
limit="${COARRAY_TIMEOUT:-60}"
preload=$lib
if ldd "$lib" | grep -q libasan; then
    # the sanitizer build: ASan first, and what MPI keeps is not ours
    preload="$(ldd "$lib" | awk '/libasan/ {print $3}') $lib"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export ASAN_OPTIONS
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-coarrays.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# a short list for make check: gets, puts, locks, events, collectives
set -- ${*:-get_array get_self get_static_array get_with_offset_1d strided_get \
    whole_get_array increment_my_neighbor atomics syncimages \
    sendget_convert_nums}

verdict() { # LABEL PROG [PRELOAD]: the exit status of one run
    if [ -n "$3" ]; then
        timeout -k 5 "$limit" "$mpirun" --oversubscribe -x OMPI_MCA_btl \
            -x "LD_PRELOAD=$3" ${ASAN_OPTIONS:+-x ASAN_OPTIONS} \
            -np 2 "$2" >"$tmp/$1" 2>&1 </dev/null
    else
        timeout -k 5 "$limit" "$mpirun" --oversubscribe -x OMPI_MCA_btl \
            -np 2 "$2" >"$tmp/$1" 2>&1 </dev/null
    fi
    echo $?
}

passed_plain=0 passed_cached=0
for name; do
    prog=$dir/$name
    if [ ! -x "$prog" ]; then
        bad "$name: no such test program in $dir"
        continue
    fi
    a=$(verdict "$name.plain" "$prog")
    b=$(verdict "$name.cached" "$prog" "$preload")
    [ "$a" = 0 ] && passed_plain=$((passed_plain + 1))
    [ "$b" = 0 ] && passed_cached=$((passed_cached + 1))
    if [ "$a" = "$b" ]; then
        ok
        echo "SAME $name: exit $a"
    else
        bad "$name: exit $a without the cache, $b with it" "$tmp/$name.cached"
    fi
done
echo "$# programs: $passed_plain pass without the cache, $passed_cached with it;" \
    "$pass the same, $fail different"
[ "$fail" = 0 ]
