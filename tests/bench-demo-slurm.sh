#!/bin/bash
#
# bench-demo-slurm.sh - issue 15's demo target: the reactive-transport
# demo through the test Slurm cluster with the job's defaults, against
# the same run under plain mpirun on one node.
#
#   slurm   sbatch -N2 -n2 (one rank on each of the two simulated nodes)
#           --dht-size=64M --dht-config=etc/examples/reactive-transport.json
#           tests/slurm/demo-job.sh (which sets nothing for the cache),
#           with the btl the test cluster's TaskProlog gives tasks (the
#           nodes share one host) and nothing else: no OMPI_MCA_osc, no
#           MPIKVS_TRANSPORT, no UCX_TLS (but -u's).  The two nodes share
#           this host, so the ucx transport maps the other node's region
#           (mpikvs(3), "Nodes of one host"); -u tcp,self stands for hosts
#           without shared memory instead.
#   mpirun  mpirun --oversubscribe -np 2 PROG --compare --config
#           etc/examples/reactive-transport.json: one node, no setting
#           (not even the btl).
#
# Both run the demo's --compare on the same grid (default 60 x 60 cells,
# 30 steps) and print the cached run's chemistry speedup (the no-cache
# run's chemistry time over the cached run's); the table has each run's
# figures from the run's CSV, and the medians and their ratio
# slurm/mpirun (the issue's target: at least 0.9).  The runs alternate,
# slurm first, so that a change of the machine's load hits both alike.
# The "transport" column is the one the demo's summary names for its
# cache ("-" when it names none).
#
# A measurement tool, not a test: it asserts nothing about speed.  Run it
# as root (the cluster's daemons need it) on an otherwise idle machine,
# under the CPU lock.  Exit status: 0 when every run completed and
# printed its speedup, 1 otherwise, 2 bad usage, 77 when the Slurm
# daemons or root are missing.
#
# Usage: tests/bench-demo-slurm.sh [-r REPS] [-x NX] [-y NY] [-s STEPS] [-u TLS]
#   -r REPS    runs of each kind (default 3)
#   -x NX, -y NY, -s STEPS   the demo's grid and steps (default 60 60 30)
#   -u TLS     UCX_TLS for the Slurm jobs (default: unset)
# Environment: top_builddir (default .), top_srcdir (default: this
# script's directory's parent), MPIRUN (default mpirun),
# BENCH_DEMO_TIMEOUT (seconds per run, default 600).

LC_ALL=C
export LC_ALL

reps=3 nx=60 ny=60 steps=30
usage() {
    sed -n '/^# Usage:/,/^# Environment:/p' "$0" | sed '$d; s/^# //' >&2
    exit 2
}
posint() {
    case $2 in
    '' | *[!0-9]* | 0*) echo "bench-demo-slurm.sh: invalid value '$2' for -$1: expected a positive integer" >&2
        exit 2 ;;
    esac
}
tls=
while getopts r:x:y:s:u:h opt; do
    case $opt in
    u) tls=$OPTARG ;;
    r) posint r "$OPTARG"; reps=$OPTARG ;;
    x) posint x "$OPTARG"; nx=$OPTARG ;;
    y) posint y "$OPTARG"; ny=$OPTARG ;;
    s) posint s "$OPTARG"; steps=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_srcdir=$(cd "$top_srcdir" && pwd)
mpirun=${MPIRUN:-mpirun}
limit=${BENCH_DEMO_TIMEOUT:-600}

# sets build and plugin; exits 77 without root or the Slurm daemons
. "$top_srcdir/tests/slurm/checks.sh"
slurm_test_needs mpirun
prog=$build/examples/reactive-transport/mpikvs-reactive-transport
config=$top_srcdir/etc/examples/reactive-transport.json
if [ ! -x "$prog" ]; then
    echo "bench-demo-slurm.sh: $prog is missing (configure did not build the demo, or make did not run; set top_builddir)" >&2
    exit 1
fi
command -v "$mpirun" >/dev/null 2>&1 ||
    { echo "bench-demo-slurm.sh: $mpirun not found" >&2; exit 1; }

. "$top_srcdir/tests/plain-mpirun.sh"
# the defaults: nothing of the caller's shell chooses the transport,
# the one-sided component, UCX's transports or the regions
plain_mpirun_env
unset OMPI_MCA_btl OMPI_MCA_osc OMPI_MCA_pml UCX_TLS UCX_NET_DEVICES

. "$top_srcdir/tests/slurm/cluster.sh"

base=$(mktemp -d /tmp/mpikvs-bdemo.XXXXXX) || exit 1
chmod 755 "$base"
dir=$base/cluster
plugstack=$base/plugstack.conf
work=$base/work
# the mpirun runs' regions go to a directory of their own, checked
# empty at the end (the cluster's are the plugin's, in /dev/shm)
shm=$(mktemp -d /dev/shm/kvbench-demo.XXXXXX) || exit 1
cleanup() {
    cluster_stop "$dir"
    rm -rf "$base" "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$work" && chmod 755 "$work"
cp "$top_srcdir/tests/slurm/demo-job.sh" "$work/demo-job.sh"
chmod 755 "$work/demo-job.sh"
echo "required $plugin max_size=1G default_size=32M" >"$plugstack"
cluster_start "$dir" 2 "$plugstack" || { echo "bench-demo-slurm.sh: the cluster did not start" >&2; exit 1; }
cluster_env "$dir" >/dev/null

grid=(--nx "$nx" --ny "$ny" --steps "$steps")
failed=0

# slurm I: one batch job of the demo; its output in $work/slurm-I.out,
# its CSV in $work/slurm-I.csv
slurm() {
    local out jobid state
    out=$(cd "$work" && env ${tls:+UCX_TLS=$tls} RT_PROGRAM="$prog" \
        sbatch -N2 -n2 --ntasks-per-node=1 -o "$work/slurm-$1.out" \
        --dht-size=64M --dht-config="$config" "$work/demo-job.sh" \
        "${grid[@]}" --no-plot --csv "$work/slurm-$1.csv" 2>&1)
    jobid=$(sed -n 's/^Submitted batch job //p' <<<"$out")
    if [ -z "$jobid" ]; then
        echo "slurm $1: sbatch failed: $out" >"$work/slurm-$1.err"
        return 1
    fi
    state=$(cluster_wait_job "$dir" "$jobid" "$limit")
    echo "job $jobid: $state" >"$work/slurm-$1.err"
    [ "$state" = COMPLETED ]
}

# mpirun I: the same demo under plain mpirun, np=2 on one node
mpi() {
    (cd "$work" && MPIKVS_SHM_DIR=$shm timeout "$limit" \
        "$mpirun" --oversubscribe -np 2 "$prog" --compare --quiet \
        --config "$config" "${grid[@]}" --no-plot --csv "$work/mpirun-$1.csv") \
        >"$work/mpirun-$1.out" 2>&1
    echo "exit $?" >"$work/mpirun-$1.err"
    grep -q '^exit 0$' "$work/mpirun-$1.err"
}

# col KIND I NAME ROW: column NAME of row ROW (no-cache|cached) of the CSV
col() {
    awk -F, -v name="$3" -v row="$4" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
        NR > 1 && $1 == row && c { print $c }' "$work/$1-$2.csv" 2>/dev/null
}

# median of the numbers on stdin ("-" when none)
median() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (!NR) { print "-"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

rows=$base/rows
: >"$rows"
# record KIND I: one row of the table from the run's output and CSV
record() {
    local f=$work/$1-$2 sp csvsp ref cached dht hit ranks said
    sp=$(sed -n 's/^chemistry speedup  *\([0-9.]*\)x.*/\1/p' "$f.out" | head -n1)
    csvsp=$(col "$1" "$2" chemistry_speedup cached)
    ref=$(col "$1" "$2" chemistry_s no-cache)
    cached=$(col "$1" "$2" chemistry_s cached)
    dht=$(col "$1" "$2" dht_s cached)
    hit=$(col "$1" "$2" hit_rate cached)
    ranks=$(col "$1" "$2" ranks cached)
    # the summary's "cache: ..., mpikvs transport T;"
    said=$(sed -n 's/^cache: .*, mpikvs transport \([a-z]*\);.*/\1/p' "$f.out")
    if [ -z "$sp" ] || [ -z "$csvsp" ]; then
        echo "$1 $2: no speedup in the output ($(cat "$f.err" 2>/dev/null)):" >&2
        sed 's/^/    | /' "$f.out" 2>/dev/null | head -n 30 >&2
        failed=1
        printf '%s %s fail - - - - - -\n' "$1" "$2" >>"$rows"
        return
    fi
    printf '%s %s ok %s %s %s %s %s %s %s\n' "$1" "$2" "$csvsp" "$ref" \
        "$cached" "$dht" "$hit" "$ranks" "${said:--}" >>"$rows"
    # the printed figure and the CSV's agree (2 decimals against 4)
    awk -v a="$sp" -v b="$csvsp" 'BEGIN { d = a - b; exit !(d > 0.006 || d < -0.006) }' &&
        echo "$1 $2: printed speedup ${sp}x, CSV $csvsp" >&2
    if [ "$1" = slurm ]; then
        grep -q "the job's config (sbatch --dht-config)" "$f.out" ||
            echo "slurm $2: the demo did not take the job's config" >&2
    fi
}

echo "# the demo, $nx x $ny cells, $steps steps, np=2; $reps runs of each, interleaved"
for i in $(seq "$reps"); do
    echo "# run $i: slurm (2 nodes, 1 rank each)"
    slurm "$i" || failed=1
    record slurm "$i"
    echo "# run $i: mpirun (1 node, 2 ranks)"
    mpi "$i" || failed=1
    record mpirun "$i"
done

echo
printf '%-7s %3s %9s %11s %11s %7s %8s %5s  %s\n' kind run speedup \
    "no-cache s" "cached s" "DHT s" "hit rate" ranks transport
while read -r kind i st sp ref cached dht hit ranks said; do
    if [ "$st" = ok ]; then
        printf '%-7s %3s %8.2fx %11.2f %11.2f %7.2f %7.2f%% %5s  %s\n' \
            "$kind" "$i" "$sp" "$ref" "$cached" "$dht" \
            "$(awk -v h="$hit" 'BEGIN { print 100 * h }')" "$ranks" "$said"
    else
        printf '%-7s %3s %9s\n' "$kind" "$i" fail
    fi
done <"$rows"
ms=$(awk '$1 == "slurm" && $3 == "ok" { print $4 }' "$rows" | median)
mm=$(awk '$1 == "mpirun" && $3 == "ok" { print $4 }' "$rows" | median)
echo
echo "median chemistry speedup: slurm ${ms}x, mpirun ${mm}x"
awk -v s="$ms" -v m="$mm" 'BEGIN {
    if (s == "-" || m == "-" || m <= 0) print "ratio slurm/mpirun: -"
    else printf "ratio slurm/mpirun: %.3f (target >= 0.9)\n", s / m }'

# the plugin removes a job's regions as the job ends: wait (bounded)
for _ in $(seq 100); do
    left=$(cluster_regions "$dir"; ls -A "$shm")
    [ -z "$left" ] && break
    sleep 0.1
done
if [ -n "$left" ]; then
    echo "left in /dev/shm:"
    printf '%s\n' "$left"
    failed=1
fi
exit "$failed"
