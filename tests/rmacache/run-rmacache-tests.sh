#!/bin/sh
#
# run-rmacache-tests.sh - tests/rmacache/test_rmacache, an unchanged MPI
# program, under plain mpirun with libmpikvs-rmacache preloaded: every
# synchronization mode, the barrier trap, own writes, layouts that pass
# through, frees with gets pending, random gets against a shadow copy
# (np 2 and 3); the statistics (MPIKVS_RMACACHE_STATS) show that the
# cache served what it may; MPIKVS_RMACACHE_VERIFY counts the lies of a
# wrong readonly claim; a bad MPIKVS_RMACACHE stops the job naming it;
# libmpikvs's own window (tests/mpi/test_basic, the mpi transport) is
# not cached.
# In the sanitizer build the sanitizer runtime is preloaded first.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog ../rmacache/test_rmacache
plain_mpirun_scratch rmacache
plain_mpirun_tally
lib="${top_builddir:-.}/rmacache/.libs/libmpikvs-rmacache.so"
if [ ! -f "$lib" ]; then
    echo "FAIL: $lib is missing (make builds it)" >&2
    exit 1
fi
# preloaded into the ranks only (mpirun -x), not into mpirun
preload=$lib
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_RMACACHE_STATS"
if plain_mpirun_asan "$prog"; then
    # ASan must be the first library of the process
    preload="$(ldd "$lib" | awk '/libasan/ {print $3}') $lib"
    xs="$xs -x ASAN_OPTIONS"
fi
MPIKVS_RMACACHE_STATS=1
export MPIKVS_RMACACHE_STATS

# run NAME NP [ENV=VALUE...] -- PARTS...: the job's output in $tmp/NAME
run() {
    name=$1 np=$2
    shift 2
    extra=
    while [ "$1" != -- ]; do
        extra="$extra -x $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -x "LD_PRELOAD=$preload" $extra \
        -np "$np" "$prog" "$@" >"$tmp/$name" 2>&1 </dev/null
}

# stat NAME RANK WINDOW FIELD: a number of the statistics line
stat() {
    awk -v r="rank $2 " -v w="'$3'" -v f="$4" '
        index($0, r) && index($0, w) {
            for (i = 1; i < NF; i++) if ($i == f) { print $(i + 1); exit }
        }' "$tmp/$1"
}

expect_stat() { # NAME RANK WINDOW FIELD OP VALUE
    got=$(stat "$1" "$2" "$3" "$4")
    if [ -n "$got" ] && [ "$got" "$5" "$6" ]; then
        ok
    else
        bad "$1: rank $2 window $3: $4 is '$got', expected $5 $6" "$tmp/$1"
    fi
}

if run all 2 -- && grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/all"; then
    ok
    echo "PASS np=2 all parts"
else
    bad "np=2 all parts" "$tmp/all"
fi
expect_stat all 0 exclusive-lock hits -gt 0
expect_stat all 0 fence-ro hits -gt 0
expect_stat all 0 fence pending-hits -gt 0
expect_stat all 0 own-writes hits -gt 0
expect_stat all 0 own-writes own-write -gt 0
expect_stat all 0 noncontig passed -gt 0
expect_stat all 0 noncontig hits -eq 0
expect_stat all 0 barrier-trap order -gt 0
expect_stat all 0 lock-all-flush hits -eq 0
expect_stat all 0 threads hits -gt 0

if run three 3 -- random random-ro barrier-trap exclusive-lock node &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/three"; then
    ok
    echo "PASS np=3 random, random-ro, barrier-trap, exclusive-lock, node"
else
    bad "np=3" "$tmp/three"
fi
# the node tier: rank 2 is served what rank 0 fetched
expect_stat three 2 node node-hits -gt 0
expect_stat three 2 node misses -eq 0

# a readonly claim that is wrong: the verification counts it (and gives
# the program MPI's data)
MPIKVS_RMACACHE_VERIFY=1
export MPIKVS_RMACACHE_VERIFY
if run verify 2 MPIKVS_RMACACHE_VERIFY -- ro-lie random-ro &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/verify"; then
    ok
    echo "PASS verify"
else
    bad "verify" "$tmp/verify"
fi
expect_stat verify 0 ro-lie mismatches -gt 0
expect_stat verify 0 random-ro mismatches -eq 0
expect_stat verify 0 random-ro verified -gt 0
unset MPIKVS_RMACACHE_VERIFY

# modes from the environment: by creation order (window 0 off) and by
# name (the third window, named after its creation, readonly)
MPIKVS_RMACACHE=off@0,readonly@free-pending-f*,transparent
export MPIKVS_RMACACHE
if run env 2 MPIKVS_RMACACHE -- fence free-pending &&
    grep -q "passed, 0 failed" "$tmp/env" &&
    grep -q "rank 0 window 0 'fence' mode off" "$tmp/env" &&
    grep -q "rank 0 window 1 'free-pending' mode readonly" "$tmp/env" &&
    grep -q "rank 0 window 2 'free-pending-fence' mode readonly" "$tmp/env"; then
    ok
    echo "PASS MPIKVS_RMACACHE=$MPIKVS_RMACACHE"
else
    bad "MPIKVS_RMACACHE=$MPIKVS_RMACACHE" "$tmp/env"
fi
MPIKVS_RMACACHE=bogus
if ! run badenv 2 MPIKVS_RMACACHE -- fence &&
    grep -q "MPIKVS_RMACACHE: 'bogus' is not a mode" "$tmp/badenv"; then
    ok
else
    bad "MPIKVS_RMACACHE=bogus is not refused by name" "$tmp/badenv"
fi
unset MPIKVS_RMACACHE

# libmpikvs's own window (its mpi transport, 2 virtual nodes) goes past
# the cache: PMPI_ calls, so no window of the library is in the
# statistics, and its test passes as without the preload
basic="${top_builddir:-.}/tests/mpi/.libs/test_basic"
[ -x "$basic" ] || basic="${top_builddir:-.}/tests/mpi/test_basic"
# shellcheck disable=SC2086
if MPIKVS_TRANSPORT=mpi OMPI_MCA_osc=pt2pt MPIKVS_VIRTUAL_NODES=2 \
    LD_LIBRARY_PATH="${top_builddir:-.}/libmpikvs/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs \
    -x "LD_PRELOAD=$preload" -x LD_LIBRARY_PATH -x MPIKVS_TRANSPORT \
    -x OMPI_MCA_osc -x MPIKVS_VIRTUAL_NODES -x MPIKVS_SHM_DIR \
    -np 2 "$basic" lockfree >"$tmp/libmpikvs" 2>&1 </dev/null &&
    grep -q "test_basic: [0-9]* passed, 0 failed" "$tmp/libmpikvs" &&
    ! grep -q "^mpikvs-rmacache: rank" "$tmp/libmpikvs"; then
    ok
    echo "PASS libmpikvs's own window past the cache"
else
    bad "libmpikvs under the preload: its window was cached, or its test failed" "$tmp/libmpikvs"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
