#!/bin/sh
#
# configure-minimal.sh - the build of a site that has neither Check nor
# SUNDIALS nor UCX nor a Fortran compiler, and does not want Python, and
# what an installed libmpikvs gives a user:
#
#   - configure with an MPICC that is no MPI wrapper, is missing, or
#     links no MPI program fails, naming it and what to install; with
#     MPICC=mpicc and MPICC=mpicc.mpich its summary names the MPI
#     library that wrapper's programs run, and the build takes that
#     wrapper's headers;
#   - configure without UCX fails, naming libucx-dev and --without-ucx;
#   - configure --without-ucx with Check, SUNDIALS and UCX hidden (a
#     pkg-config directory of every system .pc file but check.pc and
#     ucx*.pc, and the cache variable ac_cv_header_cvode_cvode_h=no)
#     says what it leaves out, and `make`
#     builds the library, the plugin and the tools but not the demo,
#     the Fortran module or the Python module, and each of them sees only the source directories it uses
#     (include-paths.sh);
#   - `make check` and `make dist` then fail, saying to install check;
#   - configure --enable-demo without SUNDIALS fails, saying what to
#     install, and so does --enable-fortran without a Fortran compiler;
#   - `make install`: the headers installed are exactly include/*.h, each
#     compiles alone; mpikvs.pc is valid and enough on its own (no other
#     .pc file), a program links with `pkg-config --cflags --libs mpikvs`
#     and mpicc alone, dynamically with -lmpikvs only, and statically with
#     `pkg-config --static`, and runs;
#   - the CMake package is installed, and a CMake project finds it,
#     builds with mpikvs::mpikvs and runs (cmake-project.sh).
#
# It configures and builds a tree of its own (a minute or two), so it is
# not part of `make check`; quickstart.sh test runs it once.  Prints "ok"
# or "FAIL" per check; exits 1 on any failure.
#
# Environment: top_srcdir (default: this script's ..; autoreconf must
# have been run there), MPICC (default mpicc), KEEP=1 keeps the scratch
# directory.

LC_ALL=C
export LC_ALL
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 1
mpicc=${MPICC:-mpicc}

[ -x "$top_srcdir/configure" ] ||
    { echo "FAIL: $top_srcdir/configure is missing; run autoreconf -fi"; exit 1; }
command -v "$mpicc" >/dev/null 2>&1 || { echo "FAIL: $mpicc not found"; exit 1; }
command -v pkg-config >/dev/null 2>&1 || { echo "FAIL: pkg-config not found"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-minimal.XXXXXX") || exit 1
if [ "${KEEP:-}" = 1 ]; then
    echo "scratch directory: $work"
else
    trap 'rm -rf "$work"' EXIT
fi
trap 'exit 130' INT TERM

tally_name=configure-minimal
. "$top_srcdir/tests/tally.sh"
# built FILE: the link made FILE; else show the compiler's output
built() {
    [ -x "$1" ] && return 0
    sed 's/^/  | /' "$work/app.out"
    return 1
}
# says TEXT COMMAND...: COMMAND's output holds TEXT
says() {
    text=$1
    shift
    out=$("$@" 2>&1)
    echo "  $*: $out"
    printf '%s\n' "$out" | grep -qF -- "$text"
}

# Every .pc file of the default search path (and PKG_CONFIG_PATH) but
# check.pc and UCX's, as symlinks in one directory: with PKG_CONFIG_LIBDIR
# there, pkg-config finds everything it finds on this machine except
# Check and UCX.
pc=$work/pc
mkdir "$pc"
for dir in $(printf '%s:%s' "${PKG_CONFIG_PATH:-}" \
        "$(pkg-config --variable pc_path pkg-config)" | tr ':' ' '); do
    for f in "$dir"/*.pc; do
        [ -f "$f" ] || continue
        name=$(basename "$f")
        case $name in check.pc|ucx.pc|ucx-*.pc) continue ;; esac
        [ -e "$pc/$name" ] || ln -s "$f" "$pc/$name"
    done
done
unset PKG_CONFIG_PATH
PKG_CONFIG_LIBDIR=$pc
export PKG_CONFIG_LIBDIR
check "Check is hidden from pkg-config" sh -c '! pkg-config --exists check'
check "UCX is hidden from pkg-config" sh -c '! pkg-config --exists ucx'
check "jansson is still found" pkg-config --exists jansson

# Configure without Check, SUNDIALS and UCX.  The cache file makes the
# later configures quick; all see the same machine.
build=$work/build
inst=$work/inst
mkdir "$build" "$work/noucx"
# MPICC: the MPI configure is given is the MPI of the build, or it stops
# naming the wrapper and what to install.  Each configure stops at the
# MPI check or reaches the summary (no cache: each names another MPI).
mpi_configure() { # NAME ARGS...: configure in $work/NAME, output in NAME.out
    name=$1
    shift
    mkdir "$work/$name"
    (cd "$work/$name" && "$top_srcdir/configure" --without-ucx \
        ac_cv_header_cvode_cvode_h=no "$@") >"$work/$name.out" 2>&1
}
echo "# configure with MPICC: not a wrapper, missing, or linking no MPI"
mkdir "$work/fake"
# a wrapper that names an MPI library nobody has
printf '#!/bin/sh\ncase $1 in\n--showme:compile) echo -I%s ;;\n--showme:link) echo -lmpikvs_no_such_mpi ;;\n*) exec gcc "$@" ;;\nesac\n' \
    "$work/fake" >"$work/fake/mpicc"
chmod +x "$work/fake/mpicc"
: >"$work/fake/mpi.h"
for case in "gcc:is it an MPI C wrapper" \
        "$work/no/such/mpicc:is not an executable file" \
        "no-such-mpicc:no such program on PATH" \
        "$work/fake/mpicc:does not link"; do
    m=${case%%:*}
    out=$work/mpicc.$(basename "$m").out
    rc=0
    mpi_configure "mpicc.$(basename "$m")" MPICC="$m" || rc=$?
    check "configure MPICC=$m fails (exit $rc)" [ "$rc" -ne 0 ]
    check "  ... saying '${case#*:}'" has "$out" "${case#*:}"
    check "  ... naming it and what to install" sh -c \
        "grep -F -- '$m' '$out' | grep -q 'install libopenmpi-dev and openmpi-bin, or libmpich-dev and mpich'"
done
for m in mpicc mpicc.mpich; do
    command -v "$m" >/dev/null 2>&1 || { fail "$m not found"; continue; }
    rc=0
    mpi_configure "mpi.$m" MPICC="$m" || rc=$?
    check "configure MPICC=$m (exit $rc)" [ "$rc" -eq 0 ]
    # what the wrapper's own program says it is, as configure shortens it
    printf '#include <mpi.h>\n#include <stdio.h>\nint main(void) { char v[MPI_MAX_LIBRARY_VERSION_STRING]; int n; MPI_Get_library_version(v, &n); printf("%%s", v); return 0; }\n' \
        >"$work/mpiver.c"
    "$m" "$work/mpiver.c" -o "$work/mpiver.$m"
    want=$("$work/mpiver.$m" | sed -n '1{s/,.*//;s/[[:space:]][[:space:]]*/ /g;s/ *$//;p;}')
    check "  ... its summary names the MPI ($want)" \
        has "$work/mpi.$m.out" "mpi:          $want"
    inc=$("$m" -show | tr ' ' '\n' | grep '^-I' | head -n 1)
    check "  ... and compiles with that wrapper's headers ($inc)" \
        has "$work/mpi.$m/Makefile" "MPI_CFLAGS = $inc"
done

echo "# configure without UCX, and without saying --without-ucx"
(cd "$work/noucx" && "$top_srcdir/configure" --cache-file="$work/config.cache" \
    --prefix="$inst" ac_cv_header_cvode_cvode_h=no) >"$work/noucx.out" 2>&1
rc=$?
check "configure fails (exit $rc)" [ "$rc" -ne 0 ]
check "configure says to install libucx-dev or give --without-ucx" \
    has "$work/noucx.out" "install libucx-dev, or configure --without-ucx"
echo "# configure --without-ucx, without Check, SUNDIALS, Fortran and Python"
# MPIFC: a Fortran wrapper that is not there stands for a site without
# gfortran, whose mpifort (Debian's) is there but compiles nothing (the
# configures after this one name it too: the cache keeps it).
(cd "$build" && "$top_srcdir/configure" --cache-file="$work/config.cache" \
    --prefix="$inst" --enable-werror --without-ucx --disable-python \
    MPIFC=no-such-mpifort ac_cv_header_cvode_cvode_h=no) \
    >"$work/configure.out" 2>"$work/configure.err"
rc=$?
check "configure succeeds (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { cat "$work/configure.err"; finish; }
check "configure warns that make check needs Check" \
    has "$work/configure.err" "Check (unit tests) not found: \`make check\` needs it; install check"
check "configure warns that the demo is left out" \
    has "$work/configure.err" "SUNDIALS CVODE not found: the reactive-transport demo is not built; install libsundials-dev"
check "configure's summary: no demo" \
    has "$work/configure.out" "demo:         no"
check "configure's summary: no make check" \
    has "$work/configure.out" "make check:   no"
check "configure's summary: no UCX" \
    has "$work/configure.out" "ucx:          no"
check "configure warns that the Fortran module is left out, saying to install gfortran" \
    sh -c "grep 'the Fortran module is not built: no-such-mpifort' '$work/configure.err' | grep -q 'install gfortran'"
check "configure's summary: no Fortran, and why" \
    has "$work/configure.out" "fortran:      no (no-such-mpifort "
check "configure's summary: no Python, --disable-python" \
    has "$work/configure.out" "python:       no (--disable-python)"

echo "# make"
make -C "$build" -s -j2 >"$work/make.out" 2>&1
rc=$?
check "make builds (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { tail -n 40 "$work/make.out"; finish; }
for f in libmpikvs/.libs/libmpikvs.so libmpikvs/.libs/libmpikvs.a \
        spank/.libs/spank_mpikvs.so mpikvs-stat/mpikvs-stat \
        mpikvs-config/mpikvs-config mpikvs-bench/mpikvs-bench; do
    check "built $f" [ -f "$build/$f" ]
done
check "the demo is not built" \
    [ ! -e "$build/examples/reactive-transport/mpikvs-reactive-transport" ]
check "each target sees only the directories it uses (include-paths.sh)" \
    "$top_srcdir/tests/include-paths.sh" "$build"

echo "# make check and make dist without Check"
make -C "$build" -s check >"$work/check.out" 2>&1
rc=$?
check "make check fails (exit $rc)" [ "$rc" -ne 0 ]
check "make check says to install check" has "$work/check.out" \
    "make check: the tests need Check, which configure did not find; install check"
make -C "$build" -s dist >"$work/dist.out" 2>&1
rc=$?
check "make dist fails (exit $rc)" [ "$rc" -ne 0 ]
check "make dist says to install check" has "$work/dist.out" \
    "make dist: the tests need Check"
rm -rf "$build"/mpikvs-[0-9]*   # the tree make dist left behind

echo "# configure --enable-demo without SUNDIALS"
mkdir "$work/demo"
(cd "$work/demo" && "$top_srcdir/configure" --cache-file="$work/config.cache" \
    --prefix="$inst" --enable-werror --enable-demo --without-ucx \
    MPIFC=no-such-mpifort ac_cv_header_cvode_cvode_h=no) >"$work/demo.out" 2>&1
rc=$?
check "configure --enable-demo fails (exit $rc)" [ "$rc" -ne 0 ]
check "configure --enable-demo says what to install" has "$work/demo.out" \
    "error: --enable-demo: SUNDIALS CVODE not found; install libsundials-dev"

echo "# configure --enable-fortran without a Fortran compiler"
mkdir "$work/fortran"
(cd "$work/fortran" && "$top_srcdir/configure" --cache-file="$work/config.cache" \
    --prefix="$inst" --enable-fortran --without-ucx MPIFC=no-such-mpifort \
    ac_cv_header_cvode_cvode_h=no) >"$work/fortran.out" 2>&1
rc=$?
check "configure --enable-fortran fails (exit $rc)" [ "$rc" -ne 0 ]
check "configure --enable-fortran says what to install" sh -c \
    "grep 'error: --enable-fortran: no-such-mpifort' '$work/fortran.out' | grep -q 'install gfortran'"

echo "# make install: headers and mpikvs.pc"
make -C "$build" -s install >"$work/install.out" 2>&1
rc=$?
check "make install (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { tail -n 40 "$work/install.out"; finish; }
for f in lib/libmpikvs.so lib/libmpikvs.a lib/slurm/spank_mpikvs.so \
        bin/mpikvs-stat bin/mpikvs-config bin/mpikvs-bench \
        lib/pkgconfig/mpikvs.pc share/man/man3/mpikvs.3; do
    check "installed $f" [ -f "$inst/$f" ]
done
left=$(grep -l '@[A-Z_]*@' "$inst"/share/man/man*/* 2>/dev/null)
check "no man page keeps a template token ($(printf "%s " $left))" \
    [ -z "$left" ]
check "the man pages' header names the version" \
    grep -q '^\.TH MPIKVS 3 "[0-9-]*" "mpikvs [0-9][0-9.]*"' \
    "$inst/share/man/man3/mpikvs.3"
check "the demo is not installed" [ ! -e "$inst/bin/mpikvs-reactive-transport" ]
check "nor its man page" \
    [ ! -e "$inst/share/man/man1/mpikvs-reactive-transport.1" ]
bindings=$(cd "$inst" && find . -name 'libmpikvs_fortran*' -o -name mpikvs.mod \
    -o -name mpikvs-fortran.pc -o -name 'mpikvs_fortran.3' -o -name 'mpikvs_python.3' \
    -o -name 'mpikvs*.so' -path '*python*')
check "nor the Fortran and Python modules ($(echo $bindings))" [ -z "$bindings" ]
want=$(cd "$top_srcdir/include" && ls ./*.h | sed "s,^\./,,")
got=$(cd "$inst/include" && ls)
check "the headers installed are exactly include/*.h ($(printf "%s " $got))" \
    [ "$want" = "$got" ]
for h in $got; do
    # alone, twice (its guard), warnings as errors
    printf '#include <%s>\n#include <%s>\n' "$h" "$h" >"$work/alone.c"
    check "$h compiles alone" "$mpicc" -std=c11 -Wall -Wextra -Werror \
        -fsyntax-only -I"$inst/include" "$work/alone.c"
done

# mpikvs.pc and nothing else: no other .pc file in the search path
mkdir "$work/nopc"
PKG_CONFIG_LIBDIR=$work/nopc
PKG_CONFIG_PATH=$inst/lib/pkgconfig
export PKG_CONFIG_PATH
check "pkg-config --validate mpikvs" pkg-config --validate mpikvs
flags=$(pkg-config --cflags --libs mpikvs)
check "pkg-config --cflags --libs mpikvs needs no other .pc ($flags)" \
    [ -n "$flags" ]
check "a dynamic link needs only -lmpikvs" \
    [ "$(pkg-config --libs mpikvs | tr -s ' ' | sed 's/ $//')" = "-L$inst/lib -lmpikvs" ]
static=$(pkg-config --static --libs mpikvs)
rc=0
for l in -lmpikvs -ljansson -lxxhash -lm -lpthread; do
    case " $static " in *" $l "*) ;; *) rc=1 ;; esac
done
check "pkg-config --static adds jansson, xxhash, libm, pthreads ($static)" \
    [ "$rc" -eq 0 ]
pc_mpicc=$(pkg-config --variable=mpicc mpikvs)
check "mpikvs.pc names the wrapper of its MPI ($pc_mpicc)" \
    [ "$pc_mpicc" = "$(sed -n 's/^MPICC = //p' "$build/Makefile")" ]
check "... and its launcher ($(pkg-config --variable=mpiexec mpikvs))" \
    [ -x "$(pkg-config --variable=mpiexec mpikvs)" ]
# the plugin and mpikvs-stat serve the regions of an install of either MPI
for f in lib/slurm/spank_mpikvs.so bin/mpikvs-stat bin/mpikvs-config; do
    check "$f links no MPI library" sh -c \
        "! readelf -d '$inst/$f' | grep -Eq 'NEEDED.*\[lib(mpi|mpich|mpi_[a-z]+)\.so'"
done

# A user's program: mpikvs_strerror at run time; mpikvs_open and
# mpikvs_close referenced, so that a static link must resolve all of the
# library (jansson, xxhash, libm, pthreads) and MPI.
cat >"$work/app.c" <<'EOF'
#include <mpikvs.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 99) {   /* never: only for the linker */
        mpikvs_t *kvs = NULL;
        mpikvs_open(MPI_COMM_WORLD, NULL, &kvs);
        mpikvs_close(&kvs);
    }
    printf("%s\n", mpikvs_strerror(MPIKVS_ERR_EXISTS));
    return 0;
}
EOF
want_text="region already exists"
# shellcheck disable=SC2046,SC2086
"$mpicc" "$work/app.c" $(pkg-config --cflags --libs mpikvs) \
    -o "$work/app-dynamic" >"$work/app.out" 2>&1
check "dynamic link with mpicc and pkg-config" built "$work/app-dynamic"
check "the dynamic program uses libmpikvs.so" \
    sh -c "readelf -d '$work/app-dynamic' | grep -q 'NEEDED.*libmpikvs\.so'"
check "the dynamic program runs" \
    says "$want_text" env LD_LIBRARY_PATH="$inst/lib" "$work/app-dynamic"

# Static: a directory with only libmpikvs.a, first on the path
mkdir "$work/static"
ln -s "$inst/lib/libmpikvs.a" "$work/static/libmpikvs.a"
# shellcheck disable=SC2046,SC2086
"$mpicc" "$work/app.c" $(pkg-config --cflags mpikvs) -L"$work/static" \
    $static -o "$work/app-static" >>"$work/app.out" 2>&1
check "static link with mpicc and pkg-config --static" built "$work/app-static"
check "the static program does not use libmpikvs.so" \
    sh -c "! readelf -d '$work/app-static' | grep -q 'NEEDED.*libmpikvs'"
check "the static program runs" says "$want_text" "$work/app-static"

# The CMake package: a project's find_package(mpikvs 0.1 CONFIG REQUIRED)
# against this install, built and run (cmake-project.sh, one check here)
echo "# the CMake package"
for f in mpikvsConfig.cmake mpikvsConfigVersion.cmake; do
    check "installed lib/cmake/mpikvs/$f" [ -f "$inst/lib/cmake/mpikvs/$f" ]
done
"$top_srcdir/tests/cmake-project.sh" "$inst" >"$work/cmake.out" 2>&1
rc=$?
sed 's/^/  /' "$work/cmake.out"
check "a CMake project finds, builds with and runs this install (cmake-project.sh, exit $rc)" \
    [ "$rc" -eq 0 ]

finish
