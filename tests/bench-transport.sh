#!/bin/sh
#
# bench-transport.sh - the transports side by side, in one invocation:
# "mpikvs-bench dht" at np=2 on 2 virtual nodes (MPIKVS_VIRTUAL_NODES=2)
# through the mpi and the ucx transport, in the two settings of issue 15:
#
#   separate-hosts  OMPI_MCA_btl=self,tcp and UCX_TLS=tcp,self for every
#                   run, as on a cluster without RDMA; the mpi transport
#                   then needs osc ucx or osc pt2pt, and both are run
#                   (Debian's openmpi-mca-params.conf excludes them, so
#                   OMPI_MCA_osc names one explicitly);
#   one-host        no setting: Open MPI's default osc (rdma, reading
#                   through the shared-memory BTL), UCX's default
#                   transports.
#
# For each (setting, path): tight-loop reads/s and writes/s (the read and
# write phases' agg_Mop/s: all ops / slowest rank's time in mpikvs calls),
# the mixed phase's efficiency at --work-us 20 and 100 (ops x N / (ranks x
# slowest rank's time of work and calls), mpikvs-bench(1)), and the
# latency of one remote get (--remote-gets: rank 0 alone, the other rank
# waiting in MPI_Barrier).  The runs are interleaved, every path of every
# setting in turn for each measure and repetition, so that a change of
# the machine's load hits all of them alike.  With -r R each figure is
# the median of R runs.  One table at the end; a path that cannot run
# (a transport that does not open) shows "fail" and its first error.
#
# A measurement tool, not a test: it asserts nothing about speed.  Run it
# on an otherwise idle machine; the defaults take a few minutes on 2
# cores.  Exit status: 0 when every run worked and read no wrong value,
# 1 otherwise, 2 bad usage.
#
# Usage: tests/bench-transport.sh [-r REPS] [-m MODE] [-p PAIRS]
#            [-o OPS20] [-O OPS100] [-g GETS]
#   -r REPS    repetitions of each run, medians printed (default 1)
#   -m MODE    lockfree or fine-lock (default lockfree; coarse-lock is
#              mpi only; in fine-lock the get latency may include own-node
#              gets through the transport, mpikvs-bench(1))
#   -p PAIRS   pairs per rank of the tight-loop run (default 50000)
#   -o OPS20   mixed ops per rank at --work-us 20 (default 20000)
#   -O OPS100  mixed ops per rank at --work-us 100 (default 5000)
#   -g GETS    timed remote gets of the latency measure (default 2000)
# Environment: top_builddir (default .), top_srcdir (default: this
# script's directory's parent), MPIRUN (default mpirun),
# BENCH_TRANSPORT_TIMEOUT (seconds per run, default 180).

LC_ALL=C
export LC_ALL

reps=1 mode=lockfree pairs=50000 ops20=20000 ops100=5000 gets=2000
usage() {
    sed -n '/^# Usage:/,/^# Environment:/p' "$0" | sed '$d; s/^# //' >&2
    exit 2
}
posint() {
    case $2 in
    '' | *[!0-9]* | 0*) echo "bench-transport.sh: invalid value '$2' for -$1: expected a positive integer" >&2
        exit 2 ;;
    esac
}
while getopts r:m:p:o:O:g:h opt; do
    case $opt in
    r) posint r "$OPTARG"; reps=$OPTARG ;;
    m) case $OPTARG in
       lockfree | fine-lock) mode=$OPTARG ;;
       *) echo "bench-transport.sh: invalid value '$OPTARG' for -m: expected lockfree or fine-lock" >&2
          exit 2 ;;
       esac ;;
    p) posint p "$OPTARG"; pairs=$OPTARG ;;
    o) posint o "$OPTARG"; ops20=$OPTARG ;;
    O) posint O "$OPTARG"; ops100=$OPTARG ;;
    g) posint g "$OPTARG"; gets=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage

bench="${top_builddir:-.}/mpikvs-bench/mpikvs-bench"
src="${top_srcdir:-$(dirname "$0")/..}"
mpirun="${MPIRUN:-mpirun}"
limit="${BENCH_TRANSPORT_TIMEOUT:-180}"

if ! command -v "$mpirun" >/dev/null 2>&1; then
    echo "bench-transport.sh: $mpirun not found" >&2
    exit 1
fi
if [ ! -x "$bench" ]; then
    echo "bench-transport.sh: $bench is missing (make builds it; set top_builddir)" >&2
    exit 1
fi

. "$src/tests/plain-mpirun.sh"
plain_mpirun_env
# each run sets the btl of its setting; one-host leaves Open MPI's own
unset OMPI_MCA_btl OMPI_MCA_osc UCX_TLS MPIKVS_UCX_OPS
plain_mpirun_asan "$bench" && asan="-x ASAN_OPTIONS"

# the regions go to a directory of their own, checked empty at the end
plain_mpirun_scratch bench-transport
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES

# The paths: setting, transport, the osc the mpi transport gets or the
# MPIKVS_UCX_OPS the ucx one gets ("-": the default), and the row's
# label.  Across hosts without RDMA ucx ships the lock-free mode's keys
# whole (auto); the rma row reads buckets and writes slots instead.
paths="sep:mpi:ucx:mpi_(osc_ucx)
sep:mpi:pt2pt:mpi_(osc_pt2pt)
sep:ucx:-:ucx
sep:ucx:rma:ucx_(rma)
one:mpi:-:mpi_(osc_default)
one:ucx:-:ucx"

failed=0

# run ID SETTING TRANSPORT OSC: one mpikvs-bench dht run with $args,
# its output (both streams) in $tmp/ID.out; returns its exit status
run() {
    id=$1 setting=$2 transport=$3 osc=$4
    # the setting's variables, for mpirun and (-x) its ranks
    set -- env
    xs=
    if [ "$setting" = sep ]; then
        set -- "$@" OMPI_MCA_btl=self,tcp UCX_TLS=tcp,self
        xs="-x OMPI_MCA_btl -x UCX_TLS"
    fi
    if [ "$osc" != - ] && [ "$transport" = ucx ]; then
        set -- "$@" MPIKVS_UCX_OPS="$osc"
        xs="$xs -x MPIKVS_UCX_OPS"
    elif [ "$osc" != - ]; then
        set -- "$@" OMPI_MCA_osc="$osc"
        xs="$xs -x OMPI_MCA_osc"
    fi
    # shellcheck disable=SC2086
    "$@" timeout -k 10 "$limit" "$mpirun" --oversubscribe -np 2 \
        -x MPIKVS_VIRTUAL_NODES -x MPIKVS_SHM_DIR $xs $asan \
        "$bench" dht --mode "$mode" --transport "$transport" \
        $args >"$tmp/$id.out" 2>&1 </dev/null
}

# note ID KEY VALUE: one figure of a run, for the medians
note() {
    echo "$3" >>"$tmp/$1.$2"
}

# measure KIND REP: every path once, interleaved
measure() {
    kind=$1 rep=$2
    case $kind in
    tight) args="--pairs $pairs --remote-gets $gets" ;;
    w20) args="--pairs 5000 --ops $ops20 --work-us 20" ;;
    w100) args="--pairs 5000 --ops $ops100 --work-us 100" ;;
    esac
    for p in $paths; do
        IFS=: read -r setting transport osc label <<EOF
$p
EOF
        id="$setting.$transport.$osc"
        out="$tmp/$id.out"
        printf '# %s %s rep %s: %s\n' "$setting" "$label" "$rep" "$kind" >&2
        if ! run "$id" "$setting" "$transport" "$osc"; then
            failed=1
            if [ ! -f "$tmp/$id.err" ]; then
                grep -m1 -i 'mpikvs-bench\|error' "$out" >"$tmp/$id.err" ||
                    tail -n 1 "$out" >"$tmp/$id.err"
            fi
            note "$id" fail 1
            continue
        fi
        # the transport the header says it used must be the one asked
        if ! grep -q "^# .* dht: .* transport=$transport " "$out"; then
            failed=1
            echo "bench-transport.sh: $setting $label: the header names another transport:" >&2
            head -n 1 "$out" >&2
        fi
        w=$(awk '($1 == "read" || $1 == "mixed") && $7 ~ /^[0-9]+$/ { w += $7 }
                 $1 == "remote_get:" { w += $13 } END { print w + 0 }' "$out")
        note "$id" wrong "$w"
        [ "$w" -eq 0 ] || failed=1
        case $kind in
        tight)
            note "$id" reads "$(awk '$1 == "read" { print $4 }' "$out")"
            note "$id" writes "$(awk '$1 == "write" { print $4 }' "$out")"
            note "$id" lat_mean "$(awk '$1 == "remote_get:" { print $5 }' "$out")"
            note "$id" lat_median "$(awk '$1 == "remote_get:" { print $7 }' "$out")"
            ;;
        *)
            note "$id" "$kind" "$(awk '$1 == "mixed" { sub(/%$/, "", $12); print $12 }' "$out")"
            ;;
        esac
    done
}

# median ID KEY: the median of a figure's runs, "fail" or "-"
median() {
    if [ -f "$tmp/$1.fail" ]; then
        echo fail
    elif [ -s "$tmp/$1.$2" ]; then
        sort -g "$tmp/$1.$2" | awk '{ v[NR] = $1 }
            END { if (NR % 2) print v[(NR + 1) / 2];
                  else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
    else
        echo -
    fi
}

start=$(date +%s)
r=1
while [ "$r" -le "$reps" ]; do
    for kind in tight w20 w100; do
        measure "$kind" "$r"
    done
    r=$((r + 1))
done
end=$(date +%s)

echo "# bench-transport.sh: mpikvs-bench dht, np=2, 2 virtual nodes, mode $mode, $reps repetition(s) (medians), $((end - start)) s"
echo "# $("$bench" --version 2>/dev/null | head -n 1); $("$mpirun" --version 2>/dev/null | head -n 1); UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# *Version *//p' | head -n 1)"
echo "# separate-hosts: OMPI_MCA_btl=self,tcp UCX_TLS=tcp,self; one-host: no setting"
echo "# reads, writes: M ops/s, tight loop ($pairs pairs per rank); eff20, eff100: mixed-phase efficiency in percent at --work-us 20 ($ops20 ops per rank) and 100 ($ops100);"
echo "# get_us: one remote get, mean and median in microseconds ($gets gets of rank 0, the other rank in MPI_Barrier)"
printf '%-15s %-18s %9s %9s %7s %7s %10s %10s %6s\n' setting path reads \
    writes eff20 eff100 get_mean get_median wrong
for p in $paths; do
    IFS=: read -r setting transport osc label <<EOF
$p
EOF
    id="$setting.$transport.$osc"
    name=separate-hosts
    [ "$setting" = one ] && name=one-host
    printf '%-15s %-18s %9s %9s %7s %7s %10s %10s %6s\n' "$name" \
        "$(echo "$label" | tr _ ' ')" "$(median "$id" reads)" \
        "$(median "$id" writes)" "$(median "$id" w20)" \
        "$(median "$id" w100)" "$(median "$id" lat_mean)" \
        "$(median "$id" lat_median)" \
        "$(awk '{ w += $1 } END { print w + 0 }' "$tmp/$id.wrong" 2>/dev/null)"
done
for p in $paths; do
    IFS=: read -r setting transport osc label <<EOF
$p
EOF
    id="$setting.$transport.$osc"
    [ -f "$tmp/$id.err" ] &&
        echo "# $setting $(echo "$label" | tr _ ' ') failed: $(cat "$tmp/$id.err")"
done

left=$(ls -A "$MPIKVS_SHM_DIR")
if [ -n "$left" ]; then
    echo "bench-transport.sh: left in $MPIKVS_SHM_DIR: $left" >&2
    failed=1
fi
exit "$failed"
