#!/bin/sh
# mpi-launch.sh [OPTIONS] PROGRAM [ARGS]: start a job of the tests with
# the launcher of the MPI the tree was built with.  The tests write Open
# MPI's mpirun options; this is the one place that knows what each
# launcher calls them.
#
#   --oversubscribe     more ranks than cores.  Hydra (MPICH, Intel MPI,
#                       MVAPICH) never refuses them: dropped.
#   -np N, -n N         the ranks.  Hydra: -n N.
#   -x NAME[=VALUE]     NAME (with VALUE, or its value here) in the ranks'
#                       environment.  Hydra: -genv NAME VALUE, which sets
#                       it in the ranks only, not in hydra's own processes
#                       (what -x LD_PRELOAD=... needs).
#   --enable-recovery   the job goes on when a rank dies.  Hydra:
#                       -disable-auto-cleanup.
#   --version           the launcher's version.
#
# Environment (make check sets them from configure): MPIEXEC, the
# launcher (default mpirun); MPI_FAMILY, openmpi (the options go through
# as they are), mpich, or other (MPI's standard mpiexec: -n only, the
# -x variables exported, nothing else).
launcher=${MPIEXEC:-mpirun}
family=${MPI_FAMILY:-openmpi}

[ "$family" = openmpi ] && exec "$launcher" "$@"

# Rebuild the arguments in "$@": each option is shifted off the front and
# its translation appended at the back, until the program is reached.
n=$#
while [ "$n" -gt 0 ]; do
    opt=$1
    shift
    n=$((n - 1))
    case $opt in
    --oversubscribe) ;;
    -np | -n)
        set -- "$@" -n "$1"
        shift
        n=$((n - 1))
        ;;
    -x)
        name=${1%%=*}
        case $1 in
        *=*) value=${1#*=} set=1 ;;
        *) eval "value=\${$name-} set=\${$name+1}" ;;
        esac
        shift
        n=$((n - 1))
        # an unset NAME stays unset in the ranks, as with Open MPI's -x
        if [ -z "$set" ]; then
            :
        elif [ "$family" = mpich ]; then
            set -- "$@" -genv "$name" "$value"
        else
            export "$name=$value"
        fi
        ;;
    --enable-recovery)
        [ "$family" = mpich ] && set -- "$@" -disable-auto-cleanup
        ;;
    --version)
        exec "$launcher" --version
        ;;
    -*)
        echo "mpi-launch.sh: $opt: no $family equivalent known" >&2
        exit 2
        ;;
    *)
        # the program: it and its arguments go to the back as they are
        set -- "$@" "$opt"
        while [ "$n" -gt 0 ]; do
            set -- "$@" "$1"
            shift
            n=$((n - 1))
        done
        ;;
    esac
done
exec "$launcher" "$@"
