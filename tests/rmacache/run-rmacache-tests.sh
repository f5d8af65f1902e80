#!/bin/sh
#
# run-rmacache-tests.sh - tests/rmacache/test_rmacache, an unchanged MPI
# program, under plain mpirun with libmpikvs-rmacache preloaded: every
# synchronization mode, the barrier trap, own writes, layouts that pass
# through, frees with gets pending, random gets against a shadow copy
# (np 2 and 3); the statistics (MPIKVS_RMACACHE_STATS) show that the
# cache served what it may; MPIKVS_RMACACHE_VERIFY counts the lies of a
# wrong readonly claim; a bad MPIKVS_RMACACHE stops the job naming it;
# libmpikvs's own window (tests/mpi/test_areas, the mpi transport) is
# not cached; mpikvs-stat reads a live window's node tier (its counters
# while the job runs, through the ranks that hold the region: its name
# goes once the node's ranks have it), nothing is left after the window
# (freed, or left to MPI_Finalize), nor after a job killed by
# MPI_Abort; issue 29's H3, H4 (the node
# tier) and H5 (an exclusive target's own store, under osc rdma and
# pt2pt); issue 31's advice: the windows whose transparent mode fetched
# unchanged data again at every epoch, named at MPI_Finalize with the
# setting that caches them, and none for data that changes.
# In the sanitizer build the sanitizer runtime is preloaded first.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog ../rmacache/test_rmacache
plain_mpirun_scratch rmacache
plain_mpirun_tally
# regions named after a run of its own, not after a Slurm job the suite
# may run in
unset SLURM_JOB_ID SLURM_STEP_ID
stat_bin="${top_builddir:-.}/mpikvs-stat/mpikvs-stat"
json_get="${top_builddir:-.}/tests/stat/json_get"
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

# refused VAR VALUE TEXT PART: the job with VAR=VALUE stops, saying
# "VAR: 'VALUE' TEXT".  Each rank's standard error goes straight into a
# file of its own: the launcher may lose what a rank wrote just before
# the job was aborted (MPICH's did, now and then).
refused() {
    eval "$1=\$2"
    export "$1"
    RC_ERR=$tmp/bad-$1.err
    export RC_ERR
    rm -f "$RC_ERR".*
    # shellcheck disable=SC2016,SC2086
    if ! timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -x "$1" -x RC_ERR \
        -np 2 sh -c 'LD_PRELOAD=$0 exec "$@" 2>"$RC_ERR.${PMI_RANK:-$OMPI_COMM_WORLD_RANK}"' \
        "$preload" "$prog" "$4" >"$tmp/bad-$1" 2>&1 </dev/null &&
        cat "$RC_ERR".* 2>/dev/null | grep -q "$1: '$2' $3"; then
        ok
    else
        cat "$RC_ERR".* >>"$tmp/bad-$1" 2>/dev/null
        bad "$1=$2 is not refused by name" "$tmp/bad-$1"
    fi
    unset "$1" RC_ERR
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
# issue 31: every part but the repeat loops reads data that changes
# between epochs (fence, PSCW, locks, flushes, dynamic, random): the
# advice at MPI_Finalize names the two loops of unchanged data only
advised=$(sed -n "s/^mpikvs-rmacache: window [0-9]* '\([^']*\)': .*/\1/p" "$tmp/all" | sort | tr '\n' ' ')
if [ "$advised" = "repeat-lock repeat-lock-all " ]; then
    ok
else
    bad "np=2 all parts: readonly advised for '$advised', not for the repeat loops alone" "$tmp/all"
fi
expect_stat all 0 shared-lock refetched-changed -gt 0
expect_stat all 0 fence refetched-changed -gt 0

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

# virtual nodes: ranks 0 and 1 are one node, rank 2 another, so rank 2
# fetches for itself; a count that is not one stops the job naming it
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES
if run vnodes 3 MPIKVS_VIRTUAL_NODES -- node &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/vnodes"; then
    ok
else
    bad "MPIKVS_VIRTUAL_NODES=2" "$tmp/vnodes"
fi
expect_stat vnodes 2 node node-hits -eq 0
expect_stat vnodes 2 node misses -gt 0

# issue 29, H3 and H4 (ranks 0 and 1 one node, rank 2 the target): a
# rank's local invalidations do not let it or a neighbour take an entry
# from before MPI_Win_set_info; a rank reads back its own write, not a
# neighbour's older copy.  The node tier still serves: after the
# collective invalidation, and away from what the rank wrote.  Rank 2,
# alone on its node, takes part in every bcast of the window's creation
# (the program's next bcast brings it the program's data).
if run vnodes-h 3 MPIKVS_VIRTUAL_NODES -- node-local-inval node-own-write node-lone-bcast &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/vnodes-h"; then
    ok
    echo "PASS node tier: local invalidations (H3), own writes (H4)"
else
    bad "node tier: local invalidations (H3), own writes (H4)" "$tmp/vnodes-h"
fi
expect_stat vnodes-h 1 node-local-inval node-hits -eq 1
expect_stat vnodes-h 0 node-own-write node-hits -eq 1
refused MPIKVS_VIRTUAL_NODES two "is not a node count" node

# issue 29, H5: a transparent window's entries of an exclusively locked
# target end at a barrier that orders the target's own store, or a put
# through a second window over the same memory; under the default osc
# (rdma) and under pt2pt
for osc in default pt2pt; do
    if [ $osc = default ]; then
        run excl-$osc 3 -- excl-store excl-second-win
    else
        OMPI_MCA_osc=$osc
        export OMPI_MCA_osc
        run excl-$osc 3 OMPI_MCA_osc -- excl-store excl-second-win
        unset OMPI_MCA_osc
    fi
    if grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/excl-$osc"; then
        ok
        echo "PASS exclusive lock, a store ordered by a barrier (H5), osc $osc"
    else
        bad "exclusive lock, a store ordered by a barrier (H5), osc $osc" "$tmp/excl-$osc"
    fi
    # what the test counts on: the repeat before the barrier was a hit
    expect_stat excl-$osc 0 excl-store hits -eq 1
    expect_stat excl-$osc 0 excl-store order -gt 0
done

# no_region WHAT: the shm directory holds no region after WHAT
no_region() {
    if [ -z "$(ls -A "$MPIKVS_SHM_DIR")" ]; then
        ok
    else
        bad "$1 left $(ls -A "$MPIKVS_SHM_DIR") in $MPIKVS_SHM_DIR"
    fi
}
no_region "np=3 (windows freed)"

# jfield FIELD: a value of the window's report (mpikvs-stat --json)
jfield() {
    "$json_get" "nodes.0.rmacache.0.$1" <"$tmp/hold.json"
}

expect_json() { # FIELD VALUE
    got=$(jfield "$1")
    if [ "$got" = "$2" ]; then
        ok
    else
        bad "mpikvs-stat --json: $1 is '$got', expected '$2'" "$tmp/hold.json"
    fi
}

# mpikvs-stat while the job runs: the job holds its window until the
# script has looked (bounded polls on the files it writes and reads)
hold=$tmp/hold.d
mkdir "$hold"
RMACACHE_HOLD=$hold
export RMACACHE_HOLD
run hold 3 RMACACHE_HOLD -- node-hold &
hold_pid=$!
i=0
while [ ! -e "$hold/ready" ] && [ $i -lt 600 ] && kill -0 $hold_pid 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
# the window's job, as mpikvs-stat lists it: the region has no name in
# the directory any more
job=$("$stat_bin" -d "$MPIKVS_SHM_DIR" --slurm-timeout 0 2>/dev/null |
      sed -n '3,$s/^\([^ ]*\) .* rmacache .*unlinked.*/\1/p' | head -n 1)
if [ -e "$hold/ready" ] && [ -n "$job" ] &&
    [ -z "$(ls -A "$MPIKVS_SHM_DIR")" ] &&
    "$stat_bin" -d "$MPIKVS_SHM_DIR" --json "$job" >"$tmp/hold.json" 2>&1 &&
    "$stat_bin" -d "$MPIKVS_SHM_DIR" "$job" >"$tmp/hold.txt" 2>&1 &&
    grep -q "rmacache window 'node-hold'" "$tmp/hold.txt"; then
    ok
    echo "PASS mpikvs-stat reads the live window"
else
    bad "mpikvs-stat on the live window (job '$job')" "$tmp/hold.txt"
fi
touch "$hold/go"
if wait $hold_pid && grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/hold"; then
    ok
else
    bad "node-hold" "$tmp/hold"
fi
expect_json window node-hold
expect_json nranks 3
expect_json ranks.2.mode readonly
expect_json ranks.2.window_rank 2
expect_json counters.ranks.0.misses 1
expect_json counters.ranks.0.published 1
expect_json counters.ranks.2.node_hits 1
expect_json counters.node.gets 2
no_region "node-hold (window freed)"

# (MPICH 4.0's own MPI_Finalize aborts on the window the program left
# registered with UCX, an assertion in ucp_cleanup, with or without the
# cache: there the exit status is MPICH's, and the checks and the region
# are what is asserted)
rc=0
run unfreed 3 -- node-unfreed || rc=$?
if { [ "$rc" = 0 ] || [ "${MPI_FAMILY:-openmpi}" = mpich ]; } &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/unfreed"; then
    ok
else
    bad "node-unfreed (exit $rc)" "$tmp/unfreed"
fi
no_region "node-unfreed (MPI_Finalize)"

# MPI_Abort: the region's name went at open, and the memory with the
# job's processes
if ! run abort 3 -- node-abort; then
    ok
else
    bad "node-abort: the job did not end in MPI_Abort" "$tmp/abort"
fi
no_region "node-abort"

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

# issue 31: lock/get/unlock and lock_all/get/flush loops of a
# transparent window miss at every get (16 ints, 25 rounds: 400 gets,
# of which 384 fetch again what they fetched before); when the data
# stays, the advice at MPI_Finalize names the window and the rule that
# would cache them, once for the job; when rank 1 changes it between
# rounds, no advice (readonly would serve old values), and the
# statistics count the changed refetches
advice() { # NAME WINDOW: the advice lines of the window
    grep "^mpikvs-rmacache: window [0-9]* '$2': " "$tmp/$1"
}
expect_advice() { # NAME WINDOW TEXT
    if [ "$(advice "$1" "$2" | wc -l)" = 1 ] && advice "$1" "$2" | grep -qF -- "$3"; then
        ok
    else
        bad "$1: no single advice for window '$2' saying '$3'" "$tmp/$1"
    fi
}
if run repeat 2 -- repeat-lock repeat-lock-all repeat-changing &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/repeat"; then
    ok
else
    bad "repeat loops" "$tmp/repeat"
fi
for win in repeat-lock repeat-lock-all; do
    expect_advice repeat $win "384 of its 400 gets (all ranks) fetched again data that had not changed"
    expect_advice repeat $win "MPIKVS_RMACACHE=readonly@$win (before any other rule)"
    expect_stat repeat 0 $win hits -eq 0
    expect_stat repeat 0 $win refetched-same -eq 384
    expect_stat repeat 0 $win refetched-changed -eq 0
done
if [ -z "$(advice repeat repeat-changing)" ]; then
    ok
else
    bad "repeat-changing: readonly advised for data that changes" "$tmp/repeat"
fi
expect_stat repeat 0 repeat-changing refetched-changed -eq 384
expect_stat repeat 0 repeat-changing refetched-same -eq 0
# the advice comes without MPIKVS_RMACACHE_STATS, the statistics not
MPIKVS_RMACACHE_STATS=0
if run repeat-quiet 2 -- repeat-lock &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/repeat-quiet" &&
    ! grep -q "^mpikvs-rmacache: rank" "$tmp/repeat-quiet"; then
    ok
else
    bad "repeat-lock without statistics" "$tmp/repeat-quiet"
fi
expect_advice repeat-quiet repeat-lock "MPIKVS_RMACACHE=readonly@repeat-lock (before any other rule)"
MPIKVS_RMACACHE_STATS=1
# the advice taken: the rule it names serves the 384 from the cache
MPIKVS_RMACACHE=readonly@repeat-lock
export MPIKVS_RMACACHE
if run repeat-ro 2 MPIKVS_RMACACHE -- repeat-lock &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/repeat-ro" &&
    [ -z "$(advice repeat-ro repeat-lock)" ]; then
    ok
else
    bad "repeat-lock under MPIKVS_RMACACHE=$MPIKVS_RMACACHE" "$tmp/repeat-ro"
fi
expect_stat repeat-ro 0 repeat-lock hits -eq 384
unset MPIKVS_RMACACHE

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
refused MPIKVS_RMACACHE bogus "is not a mode" fence

# libmpikvs's own window (its mpi transport, 2 virtual nodes) goes past
# the cache: PMPI_ calls, so no window of the library is in the
# statistics, and its test passes as without the preload
areas="${top_builddir:-.}/tests/mpi/.libs/test_areas"
[ -x "$areas" ] || areas="${top_builddir:-.}/tests/mpi/test_areas"
# shellcheck disable=SC2086
if MPIKVS_TRANSPORT=mpi OMPI_MCA_osc=pt2pt MPIKVS_VIRTUAL_NODES=2 \
    LD_LIBRARY_PATH="${top_builddir:-.}/libmpikvs/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs \
    -x "LD_PRELOAD=$preload" -x LD_LIBRARY_PATH -x MPIKVS_TRANSPORT \
    -x OMPI_MCA_osc -x MPIKVS_VIRTUAL_NODES -x MPIKVS_SHM_DIR \
    -np 2 "$areas" lockfree >"$tmp/libmpikvs" 2>&1 </dev/null &&
    grep -q "test_areas: [0-9]* passed, 0 failed" "$tmp/libmpikvs" &&
    ! grep -q "^mpikvs-rmacache: rank" "$tmp/libmpikvs"; then
    ok
    echo "PASS libmpikvs's own window past the cache"
else
    bad "libmpikvs under the preload: its window was cached, or its test failed" "$tmp/libmpikvs"
fi

# one rule for the regions' directory (issue 29): an MPIKVS_SHM_DIR of
# more than 255 bytes is refused by both libraries, naming it: a window
# goes without the node tier (it works), libmpikvs's open fails.
# Before, libmpikvs cut it at 255 bytes and libmpikvs-rmacache took it
# whole: their regions went to two directories.
long_dir=$MPIKVS_SHM_DIR/$(printf '%0200d' 0)/$(printf '%0100d' 0)
mkdir -p "$long_dir"
too_long="MPIKVS_SHM_DIR is ${#long_dir} bytes long, more than 255"
short_dir=$MPIKVS_SHM_DIR
MPIKVS_SHM_DIR=$long_dir
if run long-dir 3 MPIKVS_SHM_DIR -- node &&
    grep -q "test_rmacache: [0-9]* passed, 0 failed" "$tmp/long-dir" &&
    grep -q "window 0 has no node tier: $too_long" "$tmp/long-dir"; then
    ok
    echo "PASS rmacache: a too long MPIKVS_SHM_DIR, no node tier"
else
    bad "rmacache: a too long MPIKVS_SHM_DIR is not refused by name" "$tmp/long-dir"
fi
# shellcheck disable=SC2086
if ! LD_LIBRARY_PATH="${top_builddir:-.}/libmpikvs/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 "$limit" "$mpirun" --oversubscribe -x OMPI_MCA_btl -x LD_LIBRARY_PATH \
    -x MPIKVS_SHM_DIR -np 2 "$areas" lockfree >"$tmp/long-dir-basic" 2>&1 </dev/null &&
    grep -q "mpikvs_open = .*(invalid region name): $too_long" "$tmp/long-dir-basic"; then
    ok
    echo "PASS libmpikvs: a too long MPIKVS_SHM_DIR, open refused"
else
    bad "libmpikvs: a too long MPIKVS_SHM_DIR is not refused by name" "$tmp/long-dir-basic"
fi
if [ -z "$(find "$long_dir" "$short_dir" -type f)" ]; then
    ok
else
    bad "a too long MPIKVS_SHM_DIR: regions left: $(find "$short_dir" -type f)"
fi
MPIKVS_SHM_DIR=$short_dir

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
