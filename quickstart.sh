#!/bin/sh
# quickstart.sh run|test [ARGS]: make a Debian 12 machine ready, build
# mpikvs, and run it (run) or its whole test suite (test).
#
#   run   installs what is missing, builds, runs the main job: the
#         reactive-transport demo with and without the cache
#         (mpirun -np ${RANKS:-2} mpikvs-reactive-transport --compare ARGS).
#   test  installs what is missing, then: a -Werror build against Open MPI
#         and `make check`, a build without Check and SUNDIALS and programs
#         linked through mpikvs.pc and CMake (tests/configure-minimal.sh),
#         `make distcheck` built against MPICH (MPICH_CC, default
#         mpicc.mpich: its whole suite under MPICH), and an ASan+UBSan
#         build and `make check`; fails if any test fails or an mpikvs
#         region is left in /dev/shm.
set -eu
cd "$(dirname "$0")"
top=$(pwd)

# gdb: a stat test stops mpikvs-stat in mid-read to truncate a tier under it;
# libcoarrays-openmpi-dev, libcoarrays-mpich-dev: their test programs are
# unchanged clients of libmpikvs-rmacache (tests/rmacache/run-coarrays.sh);
# libmpich-dev, mpich: the suite runs under MPICH too; cmake: a CMake
# project finds the installed library (tests/cmake-project.sh); libfiu-dev and
# fiu-utils: tests that make system calls fail (tests/region-fiu.sh);
# python3: the history checker, tests/history/check-history.py (its
# standard library only); man-db: tests/install.sh reads every installed
# man page with man -l; g++: include/mpikvs.h compiles as C++
# (tests/api/header-cxx.sh); gfortran: the Fortran module (fortran/);
# python3-dev, python3-mpi4py, python3-numpy, python3-pytest: the Python
# module (python/) and its tests
PACKAGES="autoconf automake libtool pkg-config make gcc libc6-dev
          libopenmpi-dev openmpi-bin g++ libslurm-dev libjansson-dev
          libxxhash-dev libucx-dev check groff-base libsundials-dev gnuplot-nox
          slurmctld slurmd slurm-client munge gdb libcoarrays-openmpi-dev
          libfiu-dev fiu-utils python3 libmpich-dev mpich
          libcoarrays-mpich-dev cmake man-db gfortran python3-dev
          python3-mpi4py python3-numpy python3-pytest"

# The second MPI of `test`: Debian's MPICH installs beside Open MPI
# without changing the default mpicc.
MPICH_CC=${MPICH_CC:-mpicc.mpich}

started=$(date +%s)
say() { printf 'quickstart: [%ss] %s\n' "$(($(date +%s) - started))" "$*"; }

install_missing() {
    missing=
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
            grep -q '^install ok installed$' || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    say "installing:$missing"
    sudo=
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null ||
            { say "run as root to install:$missing"; exit 1; }
        sudo=sudo
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        --no-install-recommends $missing >/dev/null
}

# build DIR CONFIGURE-ARGS...: an out-of-tree build in DIR.
build() {
    dir=$1
    shift
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        say "autoreconf"
        autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
    fi
    mkdir -p "$dir"
    say "configure $* in $dir"
    (cd "$dir" && "$top/configure" --quiet "$@")
    say "make in $dir"
    make -C "$dir" -s -j"$(nproc)"
}

# Summarise a `make check` run as one line CI can read.
summary() {
    log=$1/test-suite.log
    pass=$(sed -n 's/^# PASS: *//p' "$log" 2>/dev/null | head -n1)
    fail=$(sed -n 's/^# FAIL: *//p' "$log" 2>/dev/null | head -n1)
    err=$(sed -n 's/^# ERROR: *//p' "$log" 2>/dev/null | head -n1)
    skip=$(sed -n 's/^# SKIP: *//p' "$log" 2>/dev/null | head -n1)
    grep -h '^[0-9]*%: Checks:' "$1"/tests/*.log 2>/dev/null || true
    grep -h '^SKIP: \|^run-slurm-tests: ' "$1"/tests/*/*.log 2>/dev/null || true
    echo "$2: ${pass:-0} passed, $(( ${fail:-0} + ${err:-0} )) failed, ${skip:-0} skipped"
}

check_in() {
    rc=0
    make -C "$1" -s check || rc=$?
    summary "$1" "$2"
    if [ $rc -ne 0 ]; then
        # the logs of the failed tests, wherever in tests/ they live
        cat "$1/test-suite.log" 2>/dev/null || true
        exit $rc
    fi
}

# Our files in /dev/shm; the leak check compares before and after the
# tests, so that another job's regions on the machine are not ours.
shm_ours() {
    ls /dev/shm 2>/dev/null |
        grep -E '^(mpikvs[.-]|kvtest\.|kvbench[.-]|kvscan\.)' || true
}

leak_check() {
    left=$(shm_ours | grep -vxF -f "$1" || true)
    if [ -n "$left" ]; then
        say "left behind in /dev/shm:"
        printf '  %s\n' $left
        exit 1
    fi
    say "no mpikvs regions left in /dev/shm"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
run)
    install_missing
    # --enable-demo: the main job is the demo, so a missing SUNDIALS is
    # configure's error, not a missing program later
    build build --enable-werror --enable-demo
    # The main job: the reactive-transport demo, without and with the
    # cache, under a plain mpirun; it prints the summary and leaves the
    # CSV and the picture in build/.
    if [ "$(id -u)" = 0 ]; then
        OMPI_ALLOW_RUN_AS_ROOT=1
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
    fi
    say "mpirun -np ${RANKS:-2} mpikvs-reactive-transport --compare $*"
    mpirun --oversubscribe -np "${RANKS:-2}" \
        ./build/examples/reactive-transport/mpikvs-reactive-transport --compare \
        --config etc/examples/reactive-transport.json \
        --csv build/reactive-transport.csv \
        --plot build/reactive-transport.svg "$@"
    ;;
test)
    install_missing
    shm_before=$(mktemp)
    trap 'rm -f "$shm_before"' EXIT
    shm_ours >"$shm_before"
    build build --enable-werror --enable-fortran --enable-python
    check_in build "check"
    say "include paths: each program and library sees only what it uses"
    if ! tests/include-paths.sh build >build/include-paths.log; then
        cat build/include-paths.log
        exit 1
    fi
    tail -n 1 build/include-paths.log
    tests/call-circles.sh build
    say "configure without Check and SUNDIALS; link through mpikvs.pc"
    if ! tests/configure-minimal.sh >build/configure-minimal.log 2>&1; then
        cat build/configure-minimal.log
        exit 1
    fi
    tail -n 1 build/configure-minimal.log
    # The tarball is built and its suite run against the second MPI:
    # MPICH, whose launcher, PMI and RMA differ from Open MPI's.
    say "make distcheck, built with MPICH ($MPICH_CC)"
    rc=0
    make -C build -s distcheck DISTCHECK_CONFIGURE_FLAGS="--enable-werror --enable-fortran \
        --quiet MPICC=$MPICH_CC" >build/distcheck.log 2>&1 || rc=$?
    # its tree is gone when it passed: the tally comes from its output
    grep -E '^(SKIP|FAIL|ERROR): |^# (TOTAL|PASS|SKIP|FAIL|ERROR): ' \
        build/distcheck.log || true
    if [ $rc -ne 0 ]; then
        tail -n 30 build/distcheck.log
        # distcheck keeps its tree when a test fails; show what failed.
        find build -path '*/_build/*' -name test-suite.log -exec cat {} + || true
        exit 1
    fi
    say "distcheck (MPICH) passed"
    build build-asan --enable-sanitizers --enable-werror --enable-fortran \
        --enable-python
    check_in build-asan "asan"
    leak_check "$shm_before"
    ;;
*)
    echo "usage: $0 run [mpikvs-reactive-transport options] | test" >&2
    exit 2
    ;;
esac
