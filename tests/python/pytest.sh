#!/bin/sh
#
# pytest.sh - tests/python/test_mpikvs.py under pytest (python3-pytest)
# on each rank of a plain mpirun job at np 2 (run_pytest.py: each rank's
# report in its own file), on one node and on two virtual nodes (the
# other rank's keys remote) over MPIKVS_TRANSPORT=ucx and mpi; every rank's
# report must say it passed; tests/python/no_numpy.py, the batches and
# round_keys where NumPy cannot be imported, passes on both ranks; and
# nothing may be left in the shm directory.  Without pytest for
# configure's Python: SKIP.

LC_ALL=C
export LC_ALL
srcdir=${top_srcdir:-.}
. "$srcdir/tests/plain-mpirun.sh"
. "$srcdir/tests/python/python-env.sh"
plain_mpirun_env
plain_mpirun_scratch pytest
plain_mpirun_tally
unset SLURM_JOB_ID SLURM_STEP_ID
python_env
mpirun=${MPIRUN:-mpirun}
limit=${MPITEST_TIMEOUT:-120}
command -v "$mpirun" >/dev/null 2>&1 || { echo "FAIL: $mpirun not found"; exit 1; }
if ! "$python" -c 'import pytest' 2>/dev/null; then
    echo "SKIP: no pytest for $python (Debian: apt-get install python3-pytest)"
    exit 77
fi
MPIKVS_TEST_SRCDIR=$(cd "$srcdir" && pwd)
MPIKVS_TEST_SCRATCH=$tmp
export MPIKVS_TEST_SRCDIR MPIKVS_TEST_SCRATCH
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR -x PYTHONPATH -x MPIKVS_TEST_SRCDIR -x MPIKVS_TEST_SCRATCH"
[ -n "$ASAN_OPTIONS" ] && xs="$xs -x ASAN_OPTIONS"
[ -n "$preload" ] && xs="$xs -x LD_PRELOAD=$preload"

# run NAME [-x VAR...]: pytest on 2 ranks, the reports in $tmp/NAME/
run() {
    name=$1
    shift
    mkdir -p "$tmp/$name"
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs "$@" -np 2 \
        "$python" "$srcdir/tests/python/run_pytest.py" "$tmp/$name" -q \
        "$MPIKVS_TEST_SRCDIR/tests/python/test_mpikvs.py" \
        >"$tmp/$name/mpirun" 2>&1 </dev/null
    st=$?
    for r in 0 1; do
        if grep -Eq '^[0-9]+ passed in ' "$tmp/$name/rank.$r" 2>/dev/null; then ok
        else bad "pytest, $name, rank $r: not all passed (mpirun: exit $st)" "$tmp/$name/rank.$r"; fi
    done
    if [ "$st" -eq 0 ]; then ok
    else bad "pytest, $name: mpirun exit $st" "$tmp/$name/mpirun"; fi
    rm -f "$tmp/save.kvs"
}

echo "# np 2, one node"
run one-node
echo "# np 2, two virtual nodes, transport ucx"
MPIKVS_VIRTUAL_NODES=2 MPIKVS_TRANSPORT=ucx run virtual-nodes-ucx \
    -x MPIKVS_VIRTUAL_NODES=2 -x MPIKVS_TRANSPORT=ucx
# Open MPI's osc ucx, as README says for the mpi transport across nodes
# (with Debian's default osc rdma the library refuses the counters, whose
# atomics it crashes on; pt2pt, README's other choice, refuses mpi4py's
# MPI_THREAD_MULTIPLE), without UCX's self transport, which breaks the
# atomics on the own rank (mpikvs(3), MPIKVS_ERR_MPI)
echo "# np 2, two virtual nodes, transport mpi"
MPIKVS_VIRTUAL_NODES=2 MPIKVS_TRANSPORT=mpi run virtual-nodes-mpi \
    -x MPIKVS_VIRTUAL_NODES=2 -x MPIKVS_TRANSPORT=mpi -x OMPI_MCA_osc=ucx \
    -x UCX_TLS=^self
grep -h ' passed in ' "$tmp"/*/rank.* | sed 's/^/  /'

echo "# np 2, one node, without NumPy (no_numpy.py)"
# shellcheck disable=SC2086
timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs -np 2 "$python" \
    "$srcdir/tests/python/no_numpy.py" "$srcdir/etc/examples/chemistry.json" "$tmp" \
    >"$tmp/no_numpy" 2>&1 </dev/null
st=$?
if [ "$st" -eq 0 ] && [ "$(grep -c '^no_numpy: rank [01]: ok$' "$tmp/no_numpy")" = 2 ]; then ok
else bad "no_numpy.py: exit $st, or a rank not ok" "$tmp/no_numpy"; fi

left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else bad "left in $MPIKVS_SHM_DIR: $(echo $left)"; fi

echo "python pytest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
