/*
 * rmacache-get.c - an ordinary MPI program whose repeated MPI_Gets the
 * MPI_Get cache (mpikvs-rmacache(7)) serves from memory, without a
 * change to the program: it is preloaded.
 *
 *   mpicc -std=gnu11 rmacache-get.c -o rmacache-get       # MPI only
 *   mpirun -np 2 -x LD_PRELOAD=PREFIX/lib/libmpikvs-rmacache.so \
 *       -x MPIKVS_RMACACHE=readonly@table -x MPIKVS_RMACACHE_STATS=1 \
 *       ./rmacache-get
 *
 * Every rank exposes a table that no one changes while it is read, and
 * reads entries of the next rank's table again and again in one
 * passive-target epoch (lock_all, get, flush).  MPI's rules let the
 * default mode (transparent) keep nothing across such flushes; the
 * window's name lets the run declare it readonly (MPIKVS_RMACACHE),
 * and then each entry is fetched once.  MPIKVS_RMACACHE_STATS=1 prints
 * each window's gets and hits at MPI_Finalize.
 */
#include <stdio.h>

#include <mpi.h>

#define NENTRIES 64     /* entries of each rank's table */
#define NREADS   2000   /* gets of a rank */

int main(int argc, char **argv)
{
    double *table, v, sum = 0.0;
    MPI_Win win;
    int rank, size, target;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_allocate(NENTRIES * sizeof(double), sizeof(double),
                     MPI_INFO_NULL, MPI_COMM_WORLD, &table, &win);
    MPI_Win_set_name(win, "table");
    for (int i = 0; i < NENTRIES; i++)
        table[i] = rank * 1000.0 + i;
    MPI_Barrier(MPI_COMM_WORLD);    /* every table is filled */

    target = (rank + 1) % size;
    MPI_Win_lock_all(0, win);
    for (int r = 0; r < NREADS; r++) {
        MPI_Get(&v, 1, MPI_DOUBLE, target, r % NENTRIES, 1, MPI_DOUBLE,
                win);
        MPI_Win_flush(target, win);     /* v is there */
        sum += v;
    }
    MPI_Win_unlock_all(win);

    printf("rmacache-get: rank %d read %d entries of rank %d, sum %.1f\n",
           rank, NREADS, target, sum);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
