#!/bin/sh
#
# bench-open.sh - "mpikvs-bench open" under mpirun, np 2 to 6 with a few
# repetitions: it runs and prints its fields, never how fast.
#
#   - the table has the open, the close, every step and every counted
#     MPI call, each with numbers; the JSON form has them too;
#   - an open makes one MPI_Comm_dup and its close two MPI_Ibarrier (the
#     counts are the library's own calls);
#   - what the open's MPI_Allgather brings to the ranks, summed over
#     them, is the same on one node at np 2 and np 3, and on 2 virtual
#     nodes at np 4 and np 6: only the node leaders exchange rows (issue
#     14; before it every rank gathered every rank's);
#   - the heading names MPIKVS_POPULATE's bound, and the region_populate
#     step says what rank 0 faulted in: all of the region by default,
#     nothing with MPIKVS_POPULATE=0;
#   - a bad option is refused with its message and status 2, a bad
#     MPIKVS_POPULATE by the library's open, with its message;
#   - an open that fails on one rank only fails on every rank with that
#     rank's cause (kvs_agreed's rule): rank 0 prints rank 1's message
#     about its MPIKVS_TRANSPORT, not "another rank failed";
#   - nothing is left in the shm directory (private to this script).
#
# Environment: top_builddir, top_srcdir (as make check sets them), MPIRUN
# (default mpirun), MPITEST_TIMEOUT (seconds per run, default 120).
# Exits 77 (skipped) without mpirun.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_bench

plain_mpirun_env
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$bench" && xs="$xs -x ASAN_OPTIONS"

plain_mpirun_scratch bench-open

plain_mpirun_tally

# run OUT NP ARGS...: the benchmark's output (both streams) in OUT
run() {
    out=$1 np=$2
    shift 2
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" "$mpirun" --oversubscribe -np "$np" $xs \
        "$bench" open "$@" >"$out" 2>&1 </dev/null
}

small="--reps 2 --size 1M"
steps="mpikvs_open mpikvs_close comm_dup node_split leaders_split
leaders_allgather node_bcast allreduce old_allgather_int old_allgather_name
win_create win_free region_create region_attach region_populate"
calls="MPI_Comm_dup MPI_Comm_split MPI_Comm_split_type MPI_Comm_free
MPI_Allgather MPI_Bcast MPI_Allreduce MPI_Barrier MPI_Ibarrier
MPI_Win_create MPI_Win_free"
num='[0-9][0-9]*\.[0-9][0-9]*'

echo "# the table, np 2"
# shellcheck disable=SC2086
if run "$tmp/t" 2 $small; then ok; else bad "table: exit $?" "$tmp/t"; fi
if grep -q '^# mpikvs-bench .* open: np=2 nodes=1 mode=lockfree .*reps=2$' \
    "$tmp/t"; then ok; else bad "table: no heading" "$tmp/t"; fi
for s in $steps; do
    if grep -q "^$s  *[0-9][0-9]*  *$num  *$num  *$num  " "$tmp/t"; then ok
    else bad "table: no row '$s ranks min median max'" "$tmp/t"; fi
done
for k in $calls; do
    if grep -q "^$k  *$num  *$num  *[0-9][0-9]*  *[0-9][0-9]*$" "$tmp/t"
    then ok; else bad "table: no row '$k open close bytes'" "$tmp/t"; fi
done
# the library's own calls, counted
if awk '$1 == "MPI_Comm_dup" && $2 == 1.0 { f = 1 } END { exit !f }' \
    "$tmp/t" &&
    awk '$1 == "MPI_Ibarrier" && $3 == 2.0 { f = 1 } END { exit !f }' \
    "$tmp/t"; then ok; else
    bad "table: an open without one MPI_Comm_dup or a close without two MPI_Ibarrier" "$tmp/t"; fi

echo "# JSON, np 2"
# shellcheck disable=SC2086
if run "$tmp/j" 2 $small --json; then ok; else bad "json: exit $?" "$tmp/j"; fi
for want in '"benchmark": "open"' '"np": 2' '"reps": 2' \
    '{"name": "mpikvs_open", "ranks": 2, "min_ms": ' \
    '{"name": "region_attach", "ranks": 1, ' \
    '{"call": "MPI_Allreduce", "open": '; do
    if grep -qF -- "$want" "$tmp/j"; then ok; else
        bad "json: no '$want'" "$tmp/j"; fi
done

echo "# the leaders' exchange does not grow with the ranks of a node"
# shellcheck disable=SC2086
run "$tmp/n3" 3 $small || bad "np 3: exit $?" "$tmp/n3"
b2=$(awk '$1 == "MPI_Allgather" { print $5 }' "$tmp/t")
b3=$(awk '$1 == "MPI_Allgather" { print $5 }' "$tmp/n3")
if [ -n "$b2" ] && [ "$b2" = "$b3" ]; then ok; else
    bad "the open's MPI_Allgather brings $b2 bytes to the ranks at np 2 and $b3 at np 3 on one node" "$tmp/n3"; fi

echo "# the same across 2 virtual nodes: np 4 and np 6"
# a window across (virtual) nodes needs osc pt2pt (see mpikvs-bench(1))
OMPI_MCA_osc=pt2pt MPIKVS_VIRTUAL_NODES=2
export OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
xs="$xs -x OMPI_MCA_osc -x MPIKVS_VIRTUAL_NODES"
# shellcheck disable=SC2086
run "$tmp/v4" 4 $small || bad "2 virtual nodes, np 4: exit $?" "$tmp/v4"
# shellcheck disable=SC2086
run "$tmp/v6" 6 $small || bad "2 virtual nodes, np 6: exit $?" "$tmp/v6"
if grep -q '^# .*open: np=4 nodes=2 (virtual) ' "$tmp/v4" &&
    grep -q "^leaders_allgather  *2  *$num" "$tmp/v4"; then ok; else
    bad "2 virtual nodes: not 2 nodes, or not 2 leaders exchanging" "$tmp/v4"; fi
b4=$(awk '$1 == "MPI_Allgather" { print $5 }' "$tmp/v4")
b6=$(awk '$1 == "MPI_Allgather" { print $5 }' "$tmp/v6")
if [ -n "$b4" ] && [ "$b4" = "$b6" ]; then ok; else
    bad "the open's MPI_Allgather brings $b4 bytes to the ranks at np 4 and $b6 at np 6 on 2 virtual nodes" "$tmp/v6"; fi
unset OMPI_MCA_osc MPIKVS_VIRTUAL_NODES
xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$bench" && xs="$xs -x ASAN_OPTIONS"

echo "# MPIKVS_POPULATE"
want='^# region_populate: rank 0 faulted in 1\.0 MiB (its share 0\.5 MiB'
if grep -q '^# .*open: .* populate=1\.0 GiB reps=2$' "$tmp/t" &&
    grep -q "$want first) by MADV_POPULATE\$" "$tmp/t"; then ok; else
    bad "table: rank 0 of 2 did not populate all of a 1 MiB region" "$tmp/t"; fi
MPIKVS_POPULATE=0
export MPIKVS_POPULATE
xs_before=$xs
xs="$xs -x MPIKVS_POPULATE"
# shellcheck disable=SC2086
run "$tmp/p0" 2 $small || bad "MPIKVS_POPULATE=0: exit $?" "$tmp/p0"
if grep -q '^# .*open: .* populate=off reps=2$' "$tmp/p0" &&
    grep -q '^# region_populate: rank 0 faulted in 0\.0 MiB ' "$tmp/p0"
then ok; else bad "MPIKVS_POPULATE=0: populated something" "$tmp/p0"; fi
MPIKVS_POPULATE=lots
# shellcheck disable=SC2086
run "$tmp/pb" 2 $small
rc=$?
if [ "$rc" -ne 0 ] &&
    grep -qF "MPIKVS_POPULATE='lots' is not a size" "$tmp/pb"; then ok; else
    bad "MPIKVS_POPULATE=lots: exit $rc" "$tmp/pb"; fi
unset MPIKVS_POPULATE
xs=$xs_before

echo "# one rank's failure, every rank's cause"
# rank 1 alone asks for a transport that does not exist (the rank from
# Open MPI's or a Hydra launcher's variable)
cat >"$tmp/rank1-bogus.sh" <<'EOS'
#!/bin/sh
[ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 1 ] &&
    MPIKVS_TRANSPORT=bogus && export MPIKVS_TRANSPORT
exec "$@"
EOS
# shellcheck disable=SC2086
timeout -k 10 "$limit" "$mpirun" --oversubscribe -np 2 $xs \
    sh "$tmp/rank1-bogus.sh" "$bench" open $small >"$tmp/a" 2>&1 </dev/null
rc=$?
if [ "$rc" -ne 0 ] &&
    grep -qF "MPIKVS_TRANSPORT 'bogus' is not a transport" "$tmp/a" &&
    ! grep -qF "another rank failed" "$tmp/a"; then ok; else
    bad "rank 1's bad MPIKVS_TRANSPORT: exit $rc, rank 0 did not tell rank 1's cause" "$tmp/a"; fi

echo "# refused"
run "$tmp/r" 1 --reps 0
rc=$?
if [ "$rc" -eq 2 ] && grep -qF "invalid value '0' for --reps" "$tmp/r"; then
    ok; else bad "--reps 0: exit $rc" "$tmp/r"; fi

echo "# nothing left behind"
left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -z "$left" ]; then ok; else
    bad "left in $MPIKVS_SHM_DIR: $(echo "$left" | tr '\n' ' ')"; fi

echo "bench-open: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
