#!/bin/sh
#
# run-abi-test.sh - a program built against ABI 1's header (tests/api/v1/,
# kept as it was: abi_v1.c says what it checks) runs against the library
# of this tree, on 2 ranks of one node: the option fields, counters and
# info fields added since must not break it.  The regions go to a private
# directory, which must be empty at the end; the job has a hard time
# limit (MPITEST_TIMEOUT, default 120 s).
LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog ../api/abi_v1
plain_mpirun_scratch abi
plain_mpirun_tally
# the fine-lock mode (an option v1 sets) needs MPI atomics on every
# rank: osc pt2pt under Open MPI (run-mpi-tests.sh says why)
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc
xs="-x OMPI_MCA_osc -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
plain_mpirun_run "a program of ABI 1 against this library" 2
plain_mpirun_left
echo "$((fail == 0 ? 1 : 0)) passed, $fail failed"
[ "$fail" = 0 ]
