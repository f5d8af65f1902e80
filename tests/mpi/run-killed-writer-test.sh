#!/bin/sh
#
# run-killed-writer-test.sh - a writer SIGKILLed in the middle of its
# puts (tests/mpi/test_killed_writer.c), np=2 in the lock-free mode:
#
#   shared   one node: the writer's slots in shared memory, half written
#            or claimed when it dies
#   shipped  2 virtual nodes over MPIKVS_UCX_TLS=tcp,self: the writer
#            ships its puts to node 0's serving thread (skipped without
#            UCX)
#
# Asserted on rank 0's result file (mpirun may end rank 0 any time after
# the death, though --enable-recovery asks it not to): no torn or foreign
# value is ever a hit, and every key can be put again and read back.
# Skipped (77), saying why, where the MPI ends the survivors of a killed
# rank soon after (plain_mpirun_survives_death: MPICH).
# The regions live in a private directory; the killed job leaves its
# own (as any killed job without the plugin does), removed with it.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"

plain_mpirun_env
if ! why=$(plain_mpirun_survives_death); then
    echo "SKIP: $why"
    exit 77
fi
plain_mpirun_prog test_killed_writer
plain_mpirun_asan "$prog" && xs_asan="-x ASAN_OPTIONS"
plain_mpirun_scratch killed-writer
plain_mpirun_tally

# case NAME: one run, checked
case_run() {
    rm -f "$tmp"/*
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" --oversubscribe --enable-recovery \
        -np 2 -x OMPI_MCA_btl -x MPIKVS_SHM_DIR -x MPITEST_WATCHDOG \
        ${vnodes:+-x MPIKVS_VIRTUAL_NODES -x MPIKVS_TRANSPORT -x MPIKVS_UCX_TLS} \
        ${xs_asan:-} "$prog" "$1" "$tmp" >"$tmp/out" 2>&1 </dev/null
    rc=$?
    res=$tmp/result
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        bad "$1: timed out after $limit s" "$tmp/out"
    elif [ ! -f "$res" ]; then
        bad "$1: rank 0 wrote no result (exit $rc)" "$tmp/out"
    elif ! grep -q '^done [1-9][0-9]* passed 0 failed$' "$res"; then
        bad "$1: rank 0's checks" "$res"
    else
        ok
        echo "PASS $1"
        sed 's/^/    /' "$res"
    fi
    rm -f "$MPIKVS_SHM_DIR"/*
}

vnodes=
case_run shared
if grep -q '^#define HAVE_UCX 1' "${top_builddir:-.}/config.h"; then
    vnodes=2
    MPIKVS_VIRTUAL_NODES=2
    MPIKVS_TRANSPORT=ucx
    MPIKVS_UCX_TLS=tcp,self
    OMPI_MCA_btl=self,tcp
    export MPIKVS_VIRTUAL_NODES MPIKVS_TRANSPORT MPIKVS_UCX_TLS OMPI_MCA_btl
    case_run shipped
fi

echo "killed-writer: $pass passed, $fail failed"
[ "$fail" = 0 ]
