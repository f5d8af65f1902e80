#!/bin/sh
#
# run-thread-test.sh - mpikvs_open and MPI's thread level
# (tests/mpi/test_thread.c) under plain mpirun: np 2 under
# MPI_THREAD_FUNNELED (another thread is refused, the main thread opens)
# and MPI_THREAD_SERIALIZED (another thread opens and uses a cache), np 1
# before MPI_Init.  The regions go to a private directory, which must be
# empty at the end; each mpirun has a hard time limit (MPITEST_TIMEOUT,
# default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_thread
plain_mpirun_shm thread
xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

fail=0
for run in "2 funneled" "2 serialized" "1 uninit"; do
    set -- $run
    plain_mpirun_run "np=$1 $2" "$1" "$2"
done
plain_mpirun_left
[ "$fail" = 0 ]
