#!/bin/sh
#
# bench-mpis.sh - mpikvs-bench dht built against two MPIs, side by side
# in one invocation: np=2, lockfree, on one node (the shared-memory path),
# and on 2 virtual nodes (MPIKVS_VIRTUAL_NODES=2) over the ucx and over
# the mpi transport (Open MPI: OMPI_MCA_osc=pt2pt, as Debian excludes the
# components that can make the window; MPICH: no setting).  For each
# (setting, MPI): the read and mixed phases' agg_Mop/s (all ops / slowest
# rank's time in mpikvs calls, mpikvs-bench(1)); for each setting the
# second MPI's figure over the first's.  The runs are interleaved, every
# setting of every MPI in turn for each repetition, so that a change of
# the machine's load hits them alike; with -r R each figure is the median
# of R runs.
#
# A measurement tool, not a test: it asserts nothing about speed.  Run it
# on an otherwise idle machine.  Exit status: 0 when every run worked and
# read no wrong value, 1 otherwise, 2 bad usage.
#
# Usage: tests/bench-mpis.sh [-r REPS] [-p PAIRS] BUILDDIR1 BUILDDIR2
#   -r REPS    repetitions of each run, medians printed (default 5)
#   -p PAIRS   pairs per rank (default 50000)
#   BUILDDIRs  two configured and built trees (make), e.g. one configured
#              with MPICC=mpicc and one with MPICC=mpicc.mpich; each is
#              run with the launcher its configure found (tests/mpi-launch.sh)
# Environment: BENCH_MPIS_TIMEOUT (seconds per run, default 180).

LC_ALL=C
export LC_ALL

reps=5 pairs=50000
usage() {
    sed -n '/^# Usage:/,/^# Environment:/p' "$0" | sed '$d; s/^# //' >&2
    exit 2
}
posint() {
    case $2 in
    '' | *[!0-9]* | 0*) echo "bench-mpis.sh: invalid value '$2' for -$1: expected a positive integer" >&2
        exit 2 ;;
    esac
}
while getopts r:p:h opt; do
    case $opt in
    r) posint r "$OPTARG"; reps=$OPTARG ;;
    p) posint p "$OPTARG"; pairs=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || usage
src=$(cd "$(dirname "$0")/.." && pwd)
limit=${BENCH_MPIS_TIMEOUT:-180}

# makevar DIR NAME: a variable of DIR's Makefile, as configure set it
makevar() {
    sed -n "s|^$2 = ||p" "$1/Makefile" | head -n 1
}
n=0
for dir; do
    n=$((n + 1))
    [ -x "$dir/mpikvs-bench/mpikvs-bench" ] ||
        { echo "bench-mpis.sh: $dir/mpikvs-bench/mpikvs-bench is missing (make there)" >&2; exit 2; }
    eval "dir$n=\$(cd \"\$dir\" && pwd)"
    eval "family$n=\$(makevar \"\$dir\" MPI_FAMILY)"
    eval "mpiexec$n=\$(makevar \"\$dir\" MPIEXEC)"
    eval "lib$n=\$(makevar \"\$dir\" MPI_LIBRARY_VERSION)"
done

. "$src/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_scratch mpis

# run I SETTING REP: one run of build I, its two figures into $tmp
run() {
    eval "d=\$dir$1 fam=\$family$1 exe=\$mpiexec$1"
    xs="-x OMPI_MCA_btl -x MPIKVS_SHM_DIR"
    if [ "$2" != onenode ]; then
        xs="$xs -x MPIKVS_VIRTUAL_NODES=2 -x MPIKVS_TRANSPORT=$2"
        [ "$2" = mpi ] && xs="$xs -x OMPI_MCA_osc=pt2pt"
    fi
    out=$tmp/out.$1.$2.$3
    # shellcheck disable=SC2086
    MPIEXEC=$exe MPI_FAMILY=$fam timeout -k 10 "$limit" \
        "$src/tests/mpi-launch.sh" --oversubscribe -np 2 $xs \
        "$d/mpikvs-bench/mpikvs-bench" dht --pairs "$pairs" \
        >"$out" 2>&1 </dev/null
    rc=$?
    rm -f "$MPIKVS_SHM_DIR"/*
    # the phase's agg_Mop/s (4th column) and wrong (7th)
    r=$(awk '$1 == "read" {print $4}' "$out")
    m=$(awk '$1 == "mixed" {print $4}' "$out")
    wrong=$(awk '$1 == "read" || $1 == "mixed" {w += $7} END {print w + 0}' "$out")
    if [ "$rc" != 0 ] || [ -z "$r" ] || [ -z "$m" ] || [ "$wrong" != 0 ]; then
        echo "FAIL build $1 ($fam) $2 run $3 (exit $rc, wrong $wrong):" >&2
        sed 's/^/    /' "$out" | head -n 20 >&2
        failed=1
        return
    fi
    echo "$r" >>"$tmp/read.$1.$2"
    echo "$m" >>"$tmp/mixed.$1.$2"
}

median() {
    [ -s "$1" ] || { echo fail; return; }
    sort -g "$1" | awk '{v[NR] = $1} END {
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

failed=0
settings="onenode ucx mpi"
i=1
while [ "$i" -le "$reps" ]; do
    for s in $settings; do
        run 1 "$s" "$i"
        run 2 "$s" "$i"
    done
    i=$((i + 1))
done

echo "# mpikvs-bench dht --pairs $pairs, np=2, lockfree; medians of $reps interleaved runs (agg_Mop/s)"
echo "# 1: $lib1 ($family1, $dir1)"
echo "# 2: $lib2 ($family2, $dir2)"
printf '%-8s %9s %9s %7s %9s %9s %7s\n' setting read_1 read_2 2/1 mixed_1 mixed_2 2/1
for s in $settings; do
    r1=$(median "$tmp/read.1.$s") r2=$(median "$tmp/read.2.$s")
    m1=$(median "$tmp/mixed.1.$s") m2=$(median "$tmp/mixed.2.$s")
    printf '%-8s %9s %9s %7s %9s %9s %7s\n' "$s" "$r1" "$r2" \
        "$(awk -v a="$r1" -v b="$r2" 'BEGIN {if (a + 0 > 0 && b != "fail") printf "%.2f", b / a; else print "-"}')" \
        "$m1" "$m2" \
        "$(awk -v a="$m1" -v b="$m2" 'BEGIN {if (a + 0 > 0 && b != "fail") printf "%.2f", b / a; else print "-"}')"
done
exit "$failed"
