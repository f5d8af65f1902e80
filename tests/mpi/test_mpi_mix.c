/*
 * test_mpi_mix.c - mpikvs_open in a process that may run the wrong MPI
 * (run-mpi-mix-test.sh): built against the tree's MPI and started by
 * another MPI's launcher, or built with another MPI's wrapper against
 * the tree's libmpikvs.  Prints what the open said; exits 0 only when it
 * succeeded.  Only mpikvs.h: the other MPI's wrapper builds it too.
 */
#include <mpi.h>
#include <stdio.h>

#include "mpikvs.h"

int main(int argc, char **argv)
{
    mpikvs_t *kvs = NULL;
    int rank = 0, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rc = mpikvs_open(MPI_COMM_WORLD, NULL, &kvs);
    printf("rank %d: mpikvs_open: %s: %s\n", rank, mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    fflush(stdout);
    if (rc == MPIKVS_OK)
        mpikvs_close(&kvs);
    MPI_Finalize();
    return rc == MPIKVS_OK ? 0 : 1;
}
