#!/bin/sh
#
# run-mpi-mix-test.sh - the common mistakes of a machine with two MPIs
# (tests/mpi/test_mpi_mix.c), each refused at mpikvs_open with a message
# that names the mismatch, within a hard time limit (no hang, no crash):
#
#   launcher  the program, built against the tree's MPI, started on 2
#             ranks by the other MPI's launcher: each rank finds itself
#             alone in a world of one;
#   link      a program built with the other MPI's wrapper and linked
#             against this tree's libmpikvs: two MPI libraries in one
#             process (skipped in a sanitizer build, whose libmpikvs
#             needs ASan's runtime loaded first).
#
# "The other MPI" is Open MPI's mpicc.openmpi/mpiexec.openmpi for an
# MPICH build and MPICH's mpicc.mpich/mpiexec.mpich for an Open MPI one
# (MPI_FAMILY, as make check sets it); skipped (77) when it is not
# installed.  No region may be made.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_mpi_mix
plain_mpirun_scratch mpimix
plain_mpirun_tally

case ${MPI_FAMILY:-openmpi} in
openmpi) other=mpich ;;
*) other=openmpi ;;
esac
other_cc=mpicc.$other
other_exec=mpiexec.$other
for p in "$other_cc" "$other_exec"; do
    if ! command -v "$p" >/dev/null 2>&1; then
        echo "SKIP: $p not found: the other MPI is not installed" \
            "(Debian: libmpich-dev mpich, or libopenmpi-dev openmpi-bin)"
        exit 77
    fi
done

# expect LABEL TEXT OUT RC: the run failed, and its output says TEXT
expect() {
    if [ "$4" = 124 ] || [ "$4" = 137 ]; then
        bad "$1: timed out after $limit s (a hang)" "$3"
    elif [ "$4" = 0 ]; then
        bad "$1: the open succeeded" "$3"
    elif ! grep -qF -- "$2" "$3"; then
        bad "$1: no '$2' in its output (exit $4)" "$3"
    elif grep -q 'Segmentation\|SIGSEGV\|signal 11' "$3"; then
        bad "$1: a crash" "$3"
    else
        ok
        echo "PASS $1: $(grep -F -- "$2" "$3" | head -n 1)"
    fi
}

# other_run NP PROGRAM OUT: PROGRAM on NP ranks of the other MPI's
# launcher, with its own options, bounded; rc its exit status
other_run() {
    rc=0
    MPIEXEC=$other_exec MPI_FAMILY=$other timeout -k 5 "$limit" \
        "${top_srcdir:-.}/tests/mpi-launch.sh" --oversubscribe \
        -x MPIKVS_SHM_DIR -np "$1" "$2" >"$3" 2>&1 </dev/null || rc=$?
}

# launcher: the real program, the other MPI's launcher
other_run 2 "$prog" "$tmp/launcher"
expect "started by $other_exec" "was it started by another MPI's launcher?" \
    "$tmp/launcher" "$rc"

# link: the same source, built with the other MPI's wrapper against the
# tree's libmpikvs (libtool puts the real library in .libs)
lib="${top_builddir:-.}/libmpikvs/.libs/libmpikvs.so"
if ldd "$lib" 2>/dev/null | grep -q libasan; then
    echo "SKIP link: a sanitizer build (its libmpikvs needs ASan's runtime first)"
elif ! "$other_cc" -I"${top_srcdir:-.}/include" \
        "${top_srcdir:-.}/tests/mpi/test_mpi_mix.c" "$lib" \
        -Wl,-rpath,"$(cd "$(dirname "$lib")" && pwd)" \
        -o "$tmp/mix" >"$tmp/cc" 2>&1; then
    bad "link: $other_cc cannot build the program" "$tmp/cc"
else
    other_run 1 "$tmp/mix" "$tmp/link"
    expect "built with $other_cc" "libmpikvs was built for" "$tmp/link" "$rc"
fi

left=$(ls -A "$MPIKVS_SHM_DIR")
[ -z "$left" ] || bad "regions were made: $left"
echo "run-mpi-mix-test: $pass passed, $fail failed"
[ "$fail" = 0 ]
