#!/bin/sh
#
# cmake-project.sh PREFIX - what the CMake package of an mpikvs installed
# in PREFIX gives a user's project (tests/cmake-project/: C,
# find_package(mpikvs 0.1 CONFIG REQUIRED), mpikvs::mpikvs):
#
#   - PREFIX has mpikvsConfig.cmake and mpikvsConfigVersion.cmake;
#   - the project configures with -DCMAKE_PREFIX_PATH=PREFIX, finds
#     PREFIX's package (not another one), and FindMPI takes the wrapper
#     mpikvs was built with (mpikvs_MPICC);
#   - it builds; the program needs libmpikvs and the MPI library that
#     wrapper links (Open MPI's libmpi.so.40, MPICH's libmpich.so.12:
#     found by linking a trivial MPI program with it) and no other MPI's,
#     as does PREFIX's libmpikvs;
#   - it runs under the wrapper's launcher with -n 2: both ranks put,
#     get the other's key and close, and leave no region behind, and the
#     package's version is the installed header's and library's;
#   - a version the install is not (9.0, the next minor of a 0.x, the
#     next major) and a 32-bit project are refused.
#
# A second install in another prefix is the caller's to set beside it.
# Needs cmake, readelf and timeout.  Prints "ok" or "FAIL" per check and
# a tally; exits 1 on any failure.  configure-minimal.sh runs it on its
# install.
#
# Environment: top_srcdir (default: this script's ..), MPIEXEC (default:
# the launcher beside the wrapper, named as it is: mpicc.mpich ->
# mpiexec.mpich, mpicc.openmpi -> mpiexec.openmpi, and Debian's
# /usr/bin/mpicc -> that of the MPI it stands for; mpicc -> mpiexec),
# KEEP=1 keeps the scratch directory.

LC_ALL=C
export LC_ALL
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 1
project=$top_srcdir/tests/cmake-project

[ $# -eq 1 ] || { echo "usage: $0 PREFIX" >&2; exit 2; }
prefix=$(cd "$1" && pwd) || { echo "FAIL: no directory $1"; exit 1; }
for tool in cmake readelf timeout; do
    command -v "$tool" >/dev/null 2>&1 ||
        { echo "FAIL: $tool not found (Debian: apt-get install $tool)"; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/mpikvs-cmake.XXXXXX") || exit 1
shm=
cleanup() {
    [ -n "$shm" ] && rm -rf "$shm"
    if [ "${KEEP:-}" = 1 ]; then
        echo "scratch directory: $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tally_name=cmake-project
. "$top_srcdir/tests/tally.sh"
# shown FILE: FILE indented, and false (a failed check's evidence)
shown() {
    sed 's/^/  | /' "$1"
    return 1
}
# mpi_needed FILE: the MPI libraries FILE needs (libmpi*, not
# libmpikvs), sorted
mpi_needed() {
    readelf -d "$1" 2>/dev/null |
        sed -n 's/.*(NEEDED).*\[\(libmpi[^]]*\)\].*/\1/p' |
        grep -v '^libmpikvs' | sort
}
# flat LIST: the lines of LIST on one line
flat() {
    printf '%s\n' "$1" | paste -s -d ' ' -
}
# same WHAT WANT GOT: ok if the two lists are equal; else say both
same() {
    [ "$2" = "$3" ] && return 0
    echo "  $1: want '$(flat "$2")', got '$(flat "$3")'"
    return 1
}

echo "# the package installed in $prefix"
config=$(find "$prefix" -path '*/cmake/mpikvs/mpikvsConfig.cmake' | head -n 1)
check "$prefix has mpikvsConfig.cmake (${config:-none})" [ -f "$config" ]
[ -f "$config" ] || finish
confdir=$(cd "$(dirname "$config")" && pwd -P)
check "and mpikvsConfigVersion.cmake beside it" \
    [ -f "$confdir/mpikvsConfigVersion.cmake" ]
version=$(sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\)")$/\1/p' \
    "$confdir/mpikvsConfigVersion.cmake")
check "which says its version (${version:-none})" [ -n "$version" ]
[ -n "$version" ] || finish
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}

echo "# configure the project with -DCMAKE_PREFIX_PATH=$prefix"
build=$work/build
cmake -S "$project" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$work/configure.out" 2>&1
rc=$?
check "cmake configures (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { shown "$work/configure.out"; finish; }
found=$(sed -n 's/^mpikvs_DIR:PATH=//p' "$build/CMakeCache.txt")
found=$(cd "$found" 2>/dev/null && pwd -P)
check "it found $prefix's package (mpikvs_DIR $found)" [ "$found" = "$confdir" ]
mpicc=$(cat "$build/mpikvs-mpicc.txt")
check "the package names the wrapper it was built with (mpikvs_MPICC $mpicc)" \
    [ -n "$mpicc" ]
[ -n "$mpicc" ] || finish
check "FindMPI used that wrapper (MPI_C_COMPILER)" \
    same "MPI_C_COMPILER" "$mpicc" "$(cat "$build/mpi-c-compiler.txt")"
# A name without a directory (configure given MPICC=mpicc.mpich) is
# found on PATH, as FindMPI finds it.
case $mpicc in
/*) ;;
*) mpicc=$(command -v "$mpicc") ;;
esac
check "the wrapper $mpicc is there" [ -x "$mpicc" ]
[ -x "$mpicc" ] || finish

echo "# build"
cmake --build "$build" >"$work/build.out" 2>&1
rc=$?
app=$build/app
check "cmake --build (exit $rc)" [ "$rc" -eq 0 ]
if [ "$rc" -ne 0 ] || [ ! -x "$app" ]; then
    shown "$work/build.out"
    finish
fi
check "the program needs libmpikvs" \
    sh -c "readelf -d '$app' | grep -q 'NEEDED.*\[libmpikvs\.so'"
# The MPI library the wrapper links, from a trivial program it linked
printf '#include <mpi.h>\nint main(void) { MPI_Init(0, 0); return MPI_Finalize(); }\n' \
    >"$work/trivial.c"
"$mpicc" "$work/trivial.c" -o "$work/trivial" >"$work/trivial.out" 2>&1 ||
    shown "$work/trivial.out"
want=$(mpi_needed "$work/trivial")
check "the wrapper links an MPI library ($(flat "$want"))" [ -n "$want" ]
check "the program needs that MPI library and no other MPI's" \
    same "NEEDED libmpi*" "$want" "$(mpi_needed "$app")"
# PREFIX's libdir: $prefix/lib, or where configure --libdir put it
lib=$(find "$prefix" -name 'libmpikvs.so' | head -n 1)
check "and so does $prefix's libmpikvs" \
    same "NEEDED libmpi*" "$want" "$(mpi_needed "$lib")"

echo "# run it with -n 2"
mpiexec=${MPIEXEC:-}
if [ -z "$mpiexec" ]; then
    # The launcher beside the wrapper: mpicc.mpich -> mpiexec.mpich.  Of
    # the names along the wrapper's symbolic links, the last that is an
    # mpicc: Debian's /usr/bin/mpicc is an alternative (mpicc.openmpi or
    # mpicc.mpich), and so is /usr/bin/mpiexec, chosen apart from it;
    # mpicc.openmpi then leads to opal_wrapper, no mpicc.  Else mpiexec.
    w=$mpicc
    name=$mpicc
    n=0
    while [ -L "$w" ] && [ "$n" -lt 20 ]; do
        t=$(readlink "$w")
        case $t in /*) w=$t ;; *) w=$(dirname "$w")/$t ;; esac
        case $(basename "$w") in mpicc*) name=$w ;; esac
        n=$((n + 1))
    done
    case $(basename "$name") in
    mpicc*) mpiexec=$(dirname "$name")/mpiexec$(basename "$name" | sed 's/^mpicc//') ;;
    *) mpiexec=$(dirname "$name")/mpiexec ;;
    esac
fi
if [ -n "$mpiexec" ] && command -v "$mpiexec" >/dev/null 2>&1; then
    ok "the launcher $mpiexec is there"
else
    fail "no launcher ${mpiexec:-beside $mpicc}: set MPIEXEC"
    finish
fi
# Nothing of a surrounding job or shell (MPIKVS_*) may choose the run's
# config or regions; its regions go to a directory of their own.
. "$top_srcdir/tests/plain-mpirun.sh"
plain_mpirun_env
shm=$(mktemp -d /dev/shm/kvcmake.XXXXXX) || finish
MPIKVS_SHM_DIR=$shm LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 120 "$mpiexec" -n 2 "$app" >"$work/run.out" 2>&1
rc=$?
check "$(basename "$mpiexec") -n 2 app (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || shown "$work/run.out"
# (the run's output is shown above if it failed)
check "rank 0 put, got rank 1's key and closed" \
    grep -qF "cmake-app: ok 0" "$work/run.out"
check "rank 1 put, got rank 0's key and closed" \
    grep -qF "cmake-app: ok 1" "$work/run.out"
left=$(ls -A "$shm")
check "no region left in $shm ($(flat "$left"))" [ -z "$left" ]

echo "# versions it is not"
cmake -S "$project" -B "$work/too-new" -DCMAKE_PREFIX_PATH="$prefix" \
    -DMPIKVS_WANT=9.0 >"$work/too-new.out" 2>&1
rc=$?
check "find_package(mpikvs 9.0 CONFIG REQUIRED) fails (exit $rc)" [ "$rc" -ne 0 ]
check "and names the installed package, $version, as not compatible" \
    has "$work/too-new.out" "mpikvsConfig.cmake, version: $version"
# The version file's answers to other requests, without a project
cat >"$work/ask.cmake" <<'EOF'
include("${FILE}")
message("compatible=${PACKAGE_VERSION_COMPATIBLE} exact=${PACKAGE_VERSION_EXACT} unsuitable=${PACKAGE_VERSION_UNSUITABLE}")
EOF
# ask REQUEST [-DVAR=VALUE...]: the version file's answer to REQUEST
ask() {
    request=$1
    shift
    # what find_package sets for a request
    cmake -DFILE="$confdir/mpikvsConfigVersion.cmake" \
        -DPACKAGE_FIND_VERSION="$request" \
        -DPACKAGE_FIND_VERSION_MAJOR="${request%%.*}" \
        -DPACKAGE_FIND_VERSION_MINOR="$(echo "$request" | cut -d. -f2)" \
        -DPACKAGE_FIND_VERSION_COUNT="$(echo "$request" | awk -F. '{ print NF }')" \
        "$@" -P "$work/ask.cmake" 2>&1
}
# answers WANT REQUEST [-D...]: the answer to REQUEST is WANT
answers() {
    want=$1
    shift
    got=$(ask "$@")
    same "mpikvs $*" "$want" "$got"
}
check "version $version is exact for $version" \
    answers "compatible=TRUE exact=TRUE unsuitable=" "$version"
# 0.1 is exactly 0.1.0 (VERSION_EQUAL), not 0.1.2
case ${version#"$major.$minor"} in
''|.0) exact=TRUE ;;
*) exact=FALSE ;;
esac
check "$major.$minor takes $version" \
    answers "compatible=TRUE exact=$exact unsuitable=" "$major.$minor"
if [ "$major" -eq 0 ]; then
    check "0.$((minor + 1)) does not take $version (0.x minors may break)" \
        answers "compatible=FALSE exact=FALSE unsuitable=" "0.$((minor + 1))"
fi
check "$((major + 1)).0 does not take $version" \
    answers "compatible=FALSE exact=FALSE unsuitable=" "$((major + 1)).0"
bits=$(sed -n 's/.*CMAKE_SIZEOF_VOID_P EQUAL \([0-9]*\)).*/\1/p' \
    "$confdir/mpikvsConfigVersion.cmake")
other=$((bits == 8 ? 4 : 8))
check "a project of $((other * 8))-bit pointers is refused ($((bits * 8))-bit build)" \
    answers "compatible=TRUE exact=$exact unsuitable=TRUE" "$major.$minor" \
    -DCMAKE_SIZEOF_VOID_P="$other"

finish
