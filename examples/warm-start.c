/*
 * warm-start.c - a campaign of runs that each start from what the last
 * one computed, with no save or load in the program: the table's
 * "persist" in the config (warm-start.json, mpikvs.json(5)) makes
 * mpikvs_open load the file and mpikvs_close save it.
 *
 *   mpicc -std=gnu11 warm-start.c $(pkg-config --cflags --libs mpikvs) -o warm-start
 *   mpirun -np 2 ./warm-start warm-start.json    # cold: computes all
 *   mpirun -np 2 ./warm-start warm-start.json    # warm: every get hits
 *
 * The persist paths must be absolute (a shared file system across
 * nodes); warm-start.json names /tmp/mpikvs-warm-start.kvs.  Rank 0
 * says what the open loaded (mpikvs_info) and the job's hit rate.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <mpikvs.h>

#define NPOINTS 200     /* points of this rank */

/* The expensive property of a state (two key fields, one double). */
static double property(const double *x)
{
    return x[0] * x[0] / (1.0 + x[1]);
}

static void fail(const mpikvs_t *kvs, const char *call, int rc)
{
    fprintf(stderr, "warm-start: %s: %s: %s\n", call, mpikvs_strerror(rc),
            mpikvs_last_error(kvs));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_info_t info = { .size = sizeof info };
    mpikvs_t *kvs = NULL;
    mpikvs_stats_t st;
    unsigned char *key;
    double x[2], y;
    int rank, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    opt.config = argc > 1 ? argv[1] : NULL;     /* its only table */
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);   /* loads persist.load */
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "warm-start: mpikvs_open: %s: %s\n",
                mpikvs_strerror(rc), mpikvs_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    rc = mpikvs_info(kvs, &info);
    if (rc != MPIKVS_OK)
        fail(kvs, "mpikvs_info", rc);
    if (rank == 0 && info.persist == MPIKVS_PERSIST_LOADED)
        printf("warm-start: loaded %" PRIu64 " entries from %s\n",
               info.persist_loaded, info.persist_path);
    else if (rank == 0 && info.persist == MPIKVS_PERSIST_NO_FILE)
        printf("warm-start: no %s yet: a cold start\n", info.persist_path);
    key = malloc(mpikvs_key_size(kvs));
    if (key == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int i = 0; i < NPOINTS; i++) {
        x[0] = 273.15 + 0.5 * (rank * NPOINTS + i);     /* temperature */
        x[1] = 1.0e5;                                   /* pressure */
        rc = mpikvs_round_key(kvs, x, 2, key);
        if (rc == MPIKVS_OK)
            rc = mpikvs_get(kvs, key, &y);
        if (rc == MPIKVS_MISS) {
            y = property(x);
            rc = mpikvs_put(kvs, key, &y);
        }
        if (rc != MPIKVS_OK)
            fail(kvs, "mpikvs_round_key/get/put", rc);
    }

    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &st,
                      sizeof st);
    if (rc != MPIKVS_OK)
        fail(kvs, "mpikvs_stats", rc);
    if (rank == 0)
        printf("warm-start: gets %" PRIu64 ", hits %" PRIu64 " (%.1f %%)\n",
               st.gets, st.hits,
               st.gets ? 100.0 * (double)st.hits / (double)st.gets : 0.0);
    free(key);
    rc = mpikvs_close(&kvs);                    /* saves persist.save */
    if (rc != MPIKVS_OK)
        fprintf(stderr, "warm-start: mpikvs_close: %s: %s\n",
                mpikvs_strerror(rc), mpikvs_last_error(NULL));
    MPI_Finalize();
    return rc == MPIKVS_OK ? 0 : 1;
}
