#!/bin/sh
#
# examples.sh - examples/surrogate.py, the Python module's example, run
# as its head says under plain mpirun, each job in a private shm
# directory, its printed hits checked:
#
#   - at np 1 it prints what examples/batches (the C example of the
#     same inputs) prints: "gets 5000, hits 4500", the first step's 500
#     cells missing and every later step hitting (the cells share 50
#     states);
#   - at np 2 on one node, and on two virtual nodes over
#     MPIKVS_TRANSPORT=ucx and mpi: 10000 gets, of which at least 9000
#     hit (each rank's first step may miss; the ranks' keys are equal
#     after rounding, so at most 500 do);
#   - nothing is left in the shm directory.

LC_ALL=C
export LC_ALL
srcdir=${top_srcdir:-.}
. "$srcdir/tests/plain-mpirun.sh"
. "$srcdir/tests/python/python-env.sh"
plain_mpirun_env
plain_mpirun_scratch pyexamples
plain_mpirun_tally
unset SLURM_JOB_ID SLURM_STEP_ID
python_env
mpirun=${MPIRUN:-mpirun}
limit=${MPITEST_TIMEOUT:-120}
batches=${top_builddir:-.}/examples/batches
[ -x "$batches" ] || { echo "FAIL: $batches is missing (make check builds it)"; exit 1; }
command -v "$mpirun" >/dev/null 2>&1 || { echo "FAIL: $mpirun not found"; exit 1; }
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR -x PYTHONPATH"
[ -n "$ASAN_OPTIONS" ] && xs="$xs -x ASAN_OPTIONS"
config=$srcdir/etc/examples/chemistry.json

# run OUT NP [-x VAR...] PROGRAM ARGS...: at NP ranks, output in OUT
run() {
    out=$1 np=$2
    shift 2
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np "$np" "$@" \
        >"$out" 2>&1 </dev/null
}
# the example under Python, LD_PRELOAD first under a sanitizer build
python_run() {
    out=$1 np=$2
    shift 2
    if [ -n "$preload" ]; then
        run "$out" "$np" -x "LD_PRELOAD=$preload" "$@" "$python" \
            "$srcdir/examples/surrogate.py" "$config"
    else
        run "$out" "$np" "$@" "$python" "$srcdir/examples/surrogate.py" "$config"
    fi
}
# rate FILE PROGRAM: the gets and hits PROGRAM printed, as "GETS HITS"
rate() {
    sed -n "s/^$2: gets \([0-9]*\), hits \([0-9]*\) .*/\1 \2/p" "$1"
}

echo "# np 1: surrogate.py and batches, the same inputs"
if run "$tmp/c1" 1 "$batches" "$config"; then ok
else bad "batches, np 1: exit $?" "$tmp/c1"; fi
if python_run "$tmp/p1" 1; then ok
else bad "surrogate.py, np 1: exit $?" "$tmp/p1"; fi
c=$(rate "$tmp/c1" batches) p=$(rate "$tmp/p1" surrogate.py)
if [ "$c" = "5000 4500" ] && [ "$p" = "$c" ]; then ok
else bad "np 1: want gets 5000, hits 4500 of both; batches: '$c', surrogate.py: '$p'" "$tmp/p1"; fi

# np 2: 10000 gets, 9000 to 9500 hits
check_np2() {
    set -- $(rate "$1" surrogate.py)
    [ "${1:-0}" -eq 10000 ] && [ "${2:-0}" -ge 9000 ] && [ "$2" -le 9500 ]
}
echo "# np 2, one node"
if python_run "$tmp/p2" 2; then ok
else bad "surrogate.py, np 2: exit $?" "$tmp/p2"; fi
if check_np2 "$tmp/p2"; then ok
else bad "surrogate.py, np 2: want 10000 gets, 9000 to 9500 hits" "$tmp/p2"; fi
# the mpi transport with Open MPI's osc ucx, as README says (pt2pt, its
# other choice, refuses mpi4py's MPI_THREAD_MULTIPLE), without UCX's self
# transport (tests/python/pytest.sh says why)
for t in ucx mpi; do
    echo "# np 2, two virtual nodes, transport $t"
    osc=
    [ "$t" = mpi ] && osc="-x OMPI_MCA_osc=ucx -x UCX_TLS=^self"
    # shellcheck disable=SC2086
    if MPIKVS_VIRTUAL_NODES=2 MPIKVS_TRANSPORT=$t python_run "$tmp/v$t" 2 \
        -x MPIKVS_VIRTUAL_NODES=2 -x MPIKVS_TRANSPORT=$t $osc; then ok
    else bad "surrogate.py, 2 virtual nodes, $t: exit $?" "$tmp/v$t"; fi
    if check_np2 "$tmp/v$t"; then ok
    else bad "surrogate.py, 2 virtual nodes, $t: want 10000 gets, 9000 to 9500 hits" "$tmp/v$t"; fi
done

left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else bad "left in $MPIKVS_SHM_DIR: $(echo $left)"; fi

echo "python examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
