#!/bin/sh
#
# run-intruder-test.sh - another user attacks a job through its UCX
# workers, and gets nothing in, nothing out and nothing crashed.
#
# test_intruder (np=2, MPIKVS_VIRTUAL_NODES=2, MPIKVS_TRANSPORT=ucx,
# UCX_TLS=tcp,self: nodes as across hosts without RDMA, each rank a
# leader whose serving worker listens on TCP) puts its keys, publishes
# its workers' addresses, its region's address and its keys in a
# directory, and gets keys while ucx_intruder, run as the user
# mpikvstest, sends what another user could: shipped gets, puts and
# put-if-absents (the message layout before the secret, and today's
# with a wrong secret), memory operations, UCX's own RMA (a put to the
# region's header and to address 0x10, a get), and forged answers to
# the job's gets.  Asserted: the intruder had no answer and no RMA read
# answered (within its 3 s of progress: it cannot know when the job has
# read a message it drops), and the job read every key as it put it,
# during and after the attack, and ended well.
#
# Needs root (to run the intruder as another uid): skipped (77) without,
# and without UCX.  The regions live in a private directory, which must
# be empty at the end.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"

if ! grep -q '^#define HAVE_UCX 1' "${top_builddir:-.}/config.h"; then
    echo "SKIP: libmpikvs is built without UCX (configure --without-ucx)"
    exit 77
fi
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the intruder runs as another user: run as root"
    exit 77
fi
user=mpikvstest
if ! getent passwd "$user" >/dev/null; then
    useradd -m -s /bin/sh -c 'mpikvs tests' "$user" ||
        { echo "FAIL: cannot create $user"; exit 1; }
fi

plain_mpirun_env
plain_mpirun_prog test_intruder
intruder="${top_builddir:-.}/tests/mpi/ucx_intruder"
[ -x "$intruder" ] || { echo "FAIL: $intruder is missing"; exit 1; }
plain_mpirun_asan "$prog" && xs_asan="-x ASAN_OPTIONS"
plain_mpirun_scratch intruder
chmod 755 "$tmp"
plain_mpirun_tally

OMPI_MCA_btl=self,tcp
MPIKVS_VIRTUAL_NODES=2
MPIKVS_TRANSPORT=ucx
MPIKVS_UCX_TLS=tcp,self
export OMPI_MCA_btl MPIKVS_VIRTUAL_NODES MPIKVS_TRANSPORT MPIKVS_UCX_TLS
timeout -k 5 "$limit" "$mpirun" --oversubscribe -np 2 -x OMPI_MCA_btl \
    -x MPIKVS_VIRTUAL_NODES -x MPIKVS_TRANSPORT -x MPIKVS_UCX_TLS \
    -x MPIKVS_SHM_DIR -x MPITEST_WATCHDOG ${xs_asan:-} \
    "$prog" "$tmp" >"$tmp/job.out" 2>&1 </dev/null &
job=$!

# the job's ready files, bounded by the job itself: it may fail first
while [ ! -e "$tmp/ready.0" ] || [ ! -e "$tmp/ready.1" ]; do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
done
if [ -e "$tmp/ready.0" ] && [ -e "$tmp/ready.1" ]; then
    # the intruder's own UCX: no variable of the job's
    runuser -u "$user" -- env -u UCX_TLS timeout -k 5 60 "$intruder" "$tmp" 2 \
        >"$tmp/intruder.out" 2>&1 </dev/null
    irc=$?
    echo "intruder (exit $irc): $(cat "$tmp/intruder.out")" | head -n 5
    if [ "$irc" = 0 ] &&
        grep -qx 'intruder: 0 answers, 0 RMA reads answered' \
            "$tmp/intruder.out"; then
        ok
    else
        bad "the intruder had answers, or failed" "$tmp/intruder.out"
    fi
else
    bad "the job did not publish its addresses" "$tmp/job.out"
fi
touch "$tmp/done"
wait "$job"
jrc=$?
if [ "$jrc" = 0 ] && grep -q '^test_intruder: [0-9]* passed, 0 failed' "$tmp/job.out"; then
    ok
    grep 'intruder:' "$tmp/job.out"
else
    bad "the job under attack (exit $jrc)" "$tmp/job.out"
fi
plain_mpirun_left

echo "intruder: $pass passed, $fail failed"
[ "$fail" = 0 ]
