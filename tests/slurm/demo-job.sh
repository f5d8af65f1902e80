#!/bin/sh
# demo-job.sh - the reactive-transport demo as a Slurm batch job, with the
# DHT made by the SPANK plugin:
#
#   sbatch -N2 -n4 --dht-size=64M \
#       --dht-config=etc/examples/reactive-transport.json \
#       tests/slurm/demo-job.sh [mpikvs-reactive-transport options]
#
# The plugin checks the config at submission and makes each node's
# region before the tasks start; the program reads the config from the
# job (no --config needed) and the plugin removes the regions at the end.
# RT_PROGRAM names the program (default: mpikvs-reactive-transport from
# PATH; sbatch passes the submitter's environment on).  The outputs go
# to the job's working directory.
#
# Nothing to set for the cache: its default transport (ucx) needs no
# one-sided component of Open MPI (see mpikvs(3)).  srun starts the tasks
# with the cluster's MpiDefault plugin, which must be the one of the MPI
# the program was built with (pmix for Open MPI, pmi2 for MPICH: the
# test cluster's follows the build, tests/slurm/cluster.sh).
set -eu
if [ "$(id -u)" = 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
exec srun "${RT_PROGRAM:-mpikvs-reactive-transport}" --compare \
    --quiet "$@"
