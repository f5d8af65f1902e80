#!/bin/sh
#
# run-clear-tests.sh - mpikvs_clear (tests/mpi/test_clear.c says what is
# asserted: every key misses from both nodes afterwards, the node tier's
# too, foreach_local and save see nothing, a save of before loads, puts
# after it take the old slots without evicting, two clears in a row, and
# a clear refused while a batch is in flight), np 2 on 2 virtual nodes:
#
#   ucx lockfree always   node 1's region mapped here, a node tier that
#                         never drops entries ("always"), emptied anyway
#   ucx fine-lock off
#   mpi lockfree off      osc pt2pt (unclaimed remote puts)
#   mpi fine-lock off
#   ucx shipped lockfree  UCX_TLS=tcp,self: as across hosts without RDMA,
#                         keys shipped to node 1's serving thread
#
# Without UCX the ucx runs are skipped (named).  Each run has a hard
# limit (MPITEST_TIMEOUT, default 120 s); the whole takes a few seconds.
# The regions go to a private directory, which must be empty at the end.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_clear
plain_mpirun_scratch clear
asan_x=
plain_mpirun_asan "$prog" && asan_x="-x ASAN_OPTIONS"
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES
have_ucx=0
grep -q '^#define HAVE_UCX 1' "${top_builddir:-.}/config.h" && have_ucx=1

fail=0
start=$(date +%s)

# clear TRANSPORT MODE CACHING: test_clear MODE CACHING over TRANSPORT
# (ucx, shipped: ucx over tcp, or mpi)
clear() {
    unset UCX_TLS OMPI_MCA_osc
    OMPI_MCA_btl=self,vader,tcp
    MPIKVS_TRANSPORT=$1
    xs="-x OMPI_MCA_btl -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
    xs="$xs -x MPIKVS_VIRTUAL_NODES -x MPIKVS_TRANSPORT $asan_x"
    case $1 in
    ucx | shipped)
        if [ "$have_ucx" = 0 ]; then
            echo "SKIP $1 $2 $3: libmpikvs is built without UCX"
            return
        fi ;;
    esac
    case $1 in
    shipped)
        MPIKVS_TRANSPORT=ucx UCX_TLS=tcp,self OMPI_MCA_btl=self,tcp
        export UCX_TLS
        xs="$xs -x UCX_TLS" ;;
    mpi)
        OMPI_MCA_osc=pt2pt
        export OMPI_MCA_osc
        xs="$xs -x OMPI_MCA_osc" ;;
    esac
    export MPIKVS_TRANSPORT
    plain_mpirun_run "np=2 vnodes=2 $1: test_clear $2 $3" 2 "$2" "$3" "$tmp"
}

clear ucx lockfree always
clear ucx fine-lock off
clear mpi lockfree off
clear mpi fine-lock off
clear shipped lockfree off

plain_mpirun_left
echo "clear: total time $(($(date +%s) - start)) s"
[ "$fail" = 0 ]
