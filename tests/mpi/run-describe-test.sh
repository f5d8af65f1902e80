#!/bin/sh
#
# run-describe-test.sh - what a handle says it opened (mpikvs_info,
# mpikvs_describe; tests/mpi/test_describe.c), MPIKVS_VERBOSE=1's print
# at open, and the version, under plain mpirun:
#   - np 4 on 2 virtual nodes, the transport auto's choice, with
#     MPIKVS_VERBOSE=1: the text on stderr once, from rank 0 only, and
#     the same as rank 0's mpikvs_describe;
#   - np 3 on 3 virtual nodes, MPIKVS_TRANSPORT=mpi, the fine-lock mode;
#   - auto where UCX does not start (UCX_TLS=no_such_tl, Open MPI only):
#     mpi, and why;
#   - np 2 on one node without MPIKVS_VERBOSE: nothing printed;
#   - a config with persist: no file at the first open, the second loads
#     what the first's close saved;
#   - a config with a node tier on 2 virtual nodes: its regions named;
#   - MPIKVS_VERBOSE=yes refused at open;
#   - mpikvs_version(), MPIKVS_VERSION and configure's version agree
#     (each job), and mpikvs.pc's Version is the same.
# The regions go to a private directory, which must be empty at the end;
# each mpirun has a hard time limit (MPITEST_TIMEOUT, default 120 s).

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_describe
plain_mpirun_scratch describe
plain_mpirun_tally
# a window across virtual nodes needs osc pt2pt under Open MPI
# (run-mpi-tests.sh says why)
OMPI_MCA_osc=pt2pt
export OMPI_MCA_osc
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"

# job LABEL NP [NAME=VALUE ...] -- ARGS...: the job's stdout in
# $tmp/out, its stderr in $tmp/err; true when it passed
job() {
    label=$1 np=$2
    shift 2
    envs=
    while [ "$1" != "--" ]; do
        envs="$envs $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    if env $envs timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs \
        $(for e in $envs; do echo "-x ${e%%=*}"; done) -np "$np" \
        "$prog" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"; then
        return 0
    fi
    cat "$tmp/err" >>"$tmp/out"
    bad "$label" "$tmp/out"
    return 1
}

# the describe text on the job's stderr: from its first line to its last
verbose_text() {
    sed -n '/^mpikvs [0-9][0-9.]*$/,/^persist: /p' "$tmp/err"
}

if job "2 virtual nodes, auto, MPIKVS_VERBOSE=1" 4 MPIKVS_VIRTUAL_NODES=2 \
    MPIKVS_VERBOSE=1 -- open 2 1 any "auto, from the default: " off 0 \
    "$tmp/text"; then
    ok
    printed=$(grep -c '^mpikvs [0-9]' "$tmp/err")
    if [ "$printed" != 1 ]; then
        bad "MPIKVS_VERBOSE=1 printed the text $printed times, not once" \
            "$tmp/err"
    elif ! verbose_text | cmp -s - "$tmp/text"; then
        verbose_text >"$tmp/printed"
        diff "$tmp/text" "$tmp/printed" >"$tmp/diff"
        bad "MPIKVS_VERBOSE=1 printed another text than rank 0's mpikvs_describe" \
            "$tmp/diff"
    else
        ok
        echo "PASS MPIKVS_VERBOSE=1: rank 0 printed once:"
        sed 's/^/    /' "$tmp/text"
    fi
    version=$(sed -n 's/^version: //p' "$tmp/out")
    pc=$(sed -n 's/^Version: //p' "${top_builddir:-.}/mpikvs.pc")
    if [ -n "$version" ] && [ "$version" = "$pc" ]; then
        ok
        echo "PASS mpikvs_version() $version, mpikvs.pc $pc"
    else
        bad "mpikvs_version() '$version', mpikvs.pc's Version '$pc'"
    fi
fi

if job "3 virtual nodes, mpi, fine-lock" 3 MPIKVS_VIRTUAL_NODES=3 \
    MPIKVS_TRANSPORT=mpi MPITEST_MODE=fine-lock -- \
    open 3 1 mpi "asked for by MPIKVS_TRANSPORT" off; then
    ok
    echo "PASS 3 virtual nodes, mpi, fine-lock"
fi

# auto falls back when UCX does not start, and says why; not under
# MPICH, whose own ch4:ucx would not start either
if grep -q '^transport: ucx ' "$tmp/text" 2>/dev/null &&
    [ "${MPI_FAMILY:-openmpi}" = openmpi ]; then
    if job "auto without UCX" 2 MPIKVS_VIRTUAL_NODES=2 UCX_TLS=no_such_tl \
        -- open 2 1 mpi "auto, from the default: UCX did not start, so MPI one-sided: " off; then
        ok
        echo "PASS auto without UCX: mpi, and why"
    fi
else
    echo "SKIP auto without UCX: the first job did not choose ucx, or MPI_FAMILY is not openmpi"
fi

if job "one node, quiet" 2 -- open 1 0 any "auto, from the default: " off; then
    if grep -q '^mpikvs [0-9]' "$tmp/err"; then
        bad "printed without MPIKVS_VERBOSE" "$tmp/err"
    else
        ok
        echo "PASS one node, nothing printed without MPIKVS_VERBOSE"
    fi
fi

cat >"$tmp/persist.json" <<JSON
{"version": 1, "tables": {"warm": {"key": {"key_size": 32},
 "value": {"value_size": 64}, "size": "4M",
 "persist": {"load": "$tmp/warm.kvs", "save": "$tmp/warm.kvs"}}}}
JSON
if job "config: no file yet" 2 MPIKVS_CONFIG="$tmp/persist.json" \
    MPIKVS_VIRTUAL_NODES=2 -- open 2 1 any "auto, from the default: " \
    no-file 0; then
    ok
    echo "PASS config: persist found no file (a cold start)"
fi
if job "config: loaded" 2 MPIKVS_CONFIG="$tmp/persist.json" \
    MPIKVS_VERBOSE=1 -- open 1 0 any "auto, from the default: " \
    loaded 100; then
    ok
    echo "PASS config: persist loaded 100 entries:"
    verbose_text | sed 's/^/    /'
fi

cat >"$tmp/tier.json" <<JSON
{"version": 1, "tables": {"near": {"key": {"key_size": 32},
 "value": {"value_size": 64}, "size": "4M", "tier": {"enabled": true}}}}
JSON
if job "config: a node tier" 4 MPIKVS_CONFIG="$tmp/tier.json" \
    MPIKVS_VIRTUAL_NODES=2 MPITEST_TIER=1 -- open 2 1 any \
    "auto, from the default: " off 0 "$tmp/tier.text"; then
    ok
    echo "PASS config: a node tier, its regions named:"
    grep '^tier: ' "$tmp/tier.text" | sed 's/^/    /'
fi

if job "MPIKVS_VERBOSE=yes" 2 MPIKVS_VERBOSE=yes -- refused; then
    ok
    echo "PASS MPIKVS_VERBOSE=yes refused"
fi

left=$(ls -A "$MPIKVS_SHM_DIR")
[ -z "$left" ] || bad "left in $MPIKVS_SHM_DIR: $left"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
