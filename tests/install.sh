#!/bin/sh
#
# install.sh - what `make install` of this build puts where a user looks
# (issue 31), installed with DESTDIR into a scratch directory:
#
#   - every installed man page reads with `man -l FILE` from another
#     directory, with no error on standard error (an alias page, which
#     was a ".so man3/mpikvs.3" line, is a link to its page), and
#     `man mpikvs_put` with MANPATH at the install still finds it;
#   - the plugstack example names the plugin where it was installed
#     ($(spankdir)), the plugin is there, and configure's summary
#     (config.log) names the same path;
#   - libmpikvs-rmacache, which only LD_PRELOAD loads, is installed as
#     its .so alone: no static archive, no libtool archive;
#   - the example programs are installed beside the example configs
#     ($(docdir)/examples), compile against the installed header, and
#     mpikvs(3) names where they are;
#   - where the build has them, the Fortran examples (use mpi_f08 and
#     use mpi) build against the install with the MPI's Fortran wrapper
#     and `pkg-config --cflags --libs mpikvs-fortran`, as
#     mpikvs_fortran(3) says, and the Python example imports the
#     installed module (mpikvs_python(3)); each runs at np 2 on the
#     example config and prints its hit rate;
#   - `make uninstall` leaves no file behind.
#
# Environment: top_builddir, top_srcdir (make check sets them), MPICC,
# MPIRUN, KEEP=1 keeps the scratch directory.  Needs man (man-db).

LC_ALL=C
export LC_ALL
top_builddir=$(cd "${top_builddir:-.}" && pwd) || exit 1
top_srcdir=$(cd "${top_srcdir:-.}" && pwd) || exit 1
mpicc=${MPICC:-mpicc}

command -v man >/dev/null 2>&1 ||
    { echo "FAIL: man not found (Debian: apt-get install man-db)"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-install.XXXXXX") || exit 1
# the regions of the example jobs
MPIKVS_SHM_DIR=$(mktemp -d /dev/shm/kvinstall.XXXXXX) || exit 1
export MPIKVS_SHM_DIR
if [ "${KEEP:-}" = 1 ]; then
    echo "scratch directory: $work"
    trap 'rm -rf "$MPIKVS_SHM_DIR"' EXIT
else
    trap 'rm -rf "$work" "$MPIKVS_SHM_DIR"' EXIT
fi
trap 'exit 130' INT TERM

tally_name=install
. "$top_srcdir/tests/tally.sh"

# The make of this test is not the make check that runs it: none of its
# flags, jobserver or TESTS.
unset MAKEFLAGS MFLAGS MAKELEVEL
# dir VAR: make's value of an installation directory, fully expanded
printf 'print-var:\n\t@echo "$(%s)"\n' '$(VAR)' >"$work/print.mk"
dir() {
    make -s -C "$top_builddir" -f Makefile -f "$work/print.mk" print-var VAR="$1"
}
# built VAR: configure built what VAR installs, a variable its local.mk
# sets only then (fmod_DATA: the Fortran module; pyexec_LTLIBRARIES: the
# Python one)
built() {
    [ -n "$(dir "$1")" ]
}
mandir=$(dir mandir)
libdir=$(dir libdir)
spankdir=$(dir spankdir)
docdir=$(dir docdir)
includedir=$(dir includedir)
dest=$work/dest

echo "# make install DESTDIR=$dest"
make -s -C "$top_builddir" install DESTDIR="$dest" >"$work/install.out" 2>&1
rc=$?
check "make install (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { sed 's/^/  | /' "$work/install.out" | tail -n 30; finish; }

echo "# the man pages, with man -l from another directory"
pages=$(cd "$dest$mandir" && ls -d man*/* 2>/dev/null)
check "man pages installed in $mandir ($(echo $pages | wc -w))" [ -n "$pages" ]
# Errors only: troff's warnings about filling a line ("cannot adjust
# line", "can't break line") depend on the terminal's width, which
# MANWIDTH fixes for man, but not for each troff that distcheck runs.
bad=
for p in $pages; do
    (cd "$work" && MANWIDTH=80 man -l "$dest$mandir/$p" >"$work/page.out" 2>"$work/page.err")
    rc=$?
    grep -v 'troff: <standard input>:[0-9]*: warning' "$work/page.err" >"$work/page.errors"
    if [ "$rc" -ne 0 ] || [ -s "$work/page.errors" ] || [ ! -s "$work/page.out" ]; then
        bad="$bad $p"
        echo "  man -l $p: exit $rc, $(head -n 1 "$work/page.errors")"
    fi
done
check "man -l reads every page, no error on stderr (bad:${bad:- none})" [ -z "$bad" ]
check "an alias page is a link to its page" \
    [ "$(readlink "$dest$mandir/man3/mpikvs_put.3")" = mpikvs.3 ]
MANPATH=$dest$mandir man mpikvs_put >"$work/put.out" 2>&1
rc=$?
check "MANPATH=... man mpikvs_put (exit $rc) shows mpikvs(3)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'mpikvs_put' '$work/put.out' && grep -q 'MPIKVS(3)' '$work/put.out'"

echo "# the plugin and its plugstack example"
conf=$dest$docdir/examples/mpikvs.conf
check "the plugstack example is installed ($docdir/examples/mpikvs.conf)" [ -f "$conf" ]
line=$(grep '^required ' "$conf" 2>/dev/null)
plugin=$(printf '%s\n' "$line" | awk '{ print $2 }')
check "it names $spankdir/spank_mpikvs.so ($line)" \
    [ "$plugin" = "$spankdir/spank_mpikvs.so" ]
check "and the plugin is there" [ -f "$dest$plugin" ]
check "configure's summary names the same path" \
    grep -qF "plugin:       $spankdir/spank_mpikvs.so" "$top_builddir/config.log"

echo "# libmpikvs-rmacache: the preloaded library alone"
check "libmpikvs-rmacache.so is installed" [ -f "$dest$libdir/libmpikvs-rmacache.so" ]
check "no libmpikvs-rmacache.a" [ ! -e "$dest$libdir/libmpikvs-rmacache.a" ]
check "no libmpikvs-rmacache.la" [ ! -e "$dest$libdir/libmpikvs-rmacache.la" ]

echo "# the examples"
for f in surrogate.c batches.c warm-start.c warm-start.json rmacache-get.c \
        chemistry.json; do
    check "installed $docdir/examples/$f" [ -f "$dest$docdir/examples/$f" ]
done
for f in surrogate.c batches.c warm-start.c rmacache-get.c; do
    check "$f compiles against the installed header" "$mpicc" -std=gnu11 \
        -Wall -Wextra -Werror -fsyntax-only -I"$dest$includedir" \
        "$dest$docdir/examples/$f"
done
check "mpikvs(3) points at them, in $docdir/examples" \
    grep -qF "ex=$docdir/examples" "$dest$mandir/man3/mpikvs.3"

# run_installed OUT PROGRAM ARGS...: PROGRAM of the install at np 2,
# finding the installed libraries (DESTDIR moved them from their rpath);
# in a sanitizer build the ASan runtime is preloaded, as the program
# (a Python, or one mpifort linked) does not load it first
run_installed() {
    ri_out=$1
    shift
    ri_asan=$(ldd "$dest$libdir/libmpikvs.so" | awk '/libasan/ {print $3}')
    ri_x="-x LD_LIBRARY_PATH=$dest$libdir -x MPIKVS_SHM_DIR"
    [ -n "${PYTHONPATH:-}" ] && ri_x="$ri_x -x PYTHONPATH"
    if [ -n "$ri_asan" ]; then
        ri_x="$ri_x -x LD_PRELOAD=$ri_asan -x ASAN_OPTIONS=detect_leaks=0"
    fi
    # shellcheck disable=SC2086
    timeout -k 5 120 "$mpirun" --oversubscribe $ri_x -np 2 "$@" \
        >"$ri_out" 2>&1 </dev/null
}
# hit_rate OUT NAME: OUT has NAME's line of gets and hits, 9 in 10 hits
hit_rate() {
    set -- $(sed -n "s/^$2: gets \([0-9]*\), hits \([0-9]*\) .*/\1 \2/p" "$1")
    [ -n "${1:-}" ] && [ "$1" -gt 0 ] && [ $(($2 * 10)) -ge $(($1 * 9)) ]
}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
unset SLURM_JOB_ID SLURM_STEP_ID MPIKVS_CONFIG MPIKVS_TRANSPORT MPIKVS_VIRTUAL_NODES
ex=$dest$docdir/examples

if built fmod_DATA; then
    echo "# the Fortran examples, built against the install (mpikvs_fortran(3))"
    fc=$(dir FC)
    fflags=$(PKG_CONFIG_PATH=$dest$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest \
        pkg-config --cflags --libs mpikvs-fortran)
    check "pkg-config --cflags --libs mpikvs-fortran ($fflags)" [ -n "$fflags" ]
    for f in surrogate-f08 surrogate-mpi; do
        # shellcheck disable=SC2086
        check "$f.f90 builds: $fc $f.f90 \$(pkg-config ... mpikvs-fortran)" \
            "$fc" -o "$work/$f" "$ex/$f.f90" $fflags
        if run_installed "$work/$f.out" "$work/$f" "$ex/chemistry.json" &&
            hit_rate "$work/$f.out" "$f"; then
            ok "$f runs at np 2 and 9 in 10 of its gets hit"
        else
            fail "$f runs at np 2 and 9 in 10 of its gets hit"
            sed 's/^/  | /' "$work/$f.out"
        fi
    done
fi

if built pyexec_LTLIBRARIES; then
    echo "# the Python example, on the installed module (mpikvs_python(3))"
    python=$(dir PYTHON)
    PYTHONPATH=$dest$(dir pyexecdir)
    export PYTHONPATH
    check "the module is installed in $(dir pyexecdir)" \
        sh -c "ls '$PYTHONPATH'/mpikvs*.so >/dev/null"
    check "and no libtool archive beside it" [ ! -e "$PYTHONPATH/mpikvs.la" ]
    if run_installed "$work/py.out" "$python" "$ex/surrogate.py" "$ex/chemistry.json" &&
        hit_rate "$work/py.out" surrogate.py; then
        ok "surrogate.py runs at np 2 and 9 in 10 of its gets hit"
    else
        fail "surrogate.py runs at np 2 and 9 in 10 of its gets hit"
        sed 's/^/  | /' "$work/py.out"
    fi
    unset PYTHONPATH
fi
left=$(ls -A "$MPIKVS_SHM_DIR")
check "the example jobs left no region ($(echo $left))" [ -z "$left" ]

echo "# make uninstall"
make -s -C "$top_builddir" uninstall DESTDIR="$dest" >"$work/uninstall.out" 2>&1
rc=$?
check "make uninstall (exit $rc)" [ "$rc" -eq 0 ]
left=$(cd "$dest" && find . ! -type d | head -n 5)
check "it leaves no file ($(echo $left))" [ -z "$left" ]

finish
