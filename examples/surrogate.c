/*
 * surrogate.c - mpikvs as a surrogate cache: round an expensive call's
 * inputs to a key, look it up, and compute only on a miss.
 *
 *   mpicc -std=gnu11 surrogate.c $(pkg-config --cflags --libs mpikvs) -o surrogate
 *   mpirun -np 4 ./surrogate PREFIX/share/doc/mpikvs/examples/chemistry.json
 *
 * It uses the table "chemistry" of the example chemistry.json (see
 * mpikvs.json(5)): ten double inputs, rounded to 5 significant digits,
 * and 13 doubles of result.  The key's size is the table's, asked of
 * the handle: never assume it.  Rank 0 prints the job's hit rate.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <mpikvs.h>

#define NIN    10       /* key fields of the table */
#define NOUT   13       /* value fields of the table */
#define NCELLS 500      /* cells of this rank */
#define NSTEPS 10

/* The inputs of cell c at a step: many cells share a state, and the
 * ranks differ in the ninth digit only, which the rounding removes. */
static void inputs(int rank, int step, int c, double *x)
{
    int state = (c + step) % 50;

    for (int f = 0; f < NIN - 1; f++)
        x[f] = 1e-3 * (1 + state) * (f + 1) * (1 + 1e-9 * rank);
    x[NIN - 1] = 60.0;  /* the time step */
}

/* The expensive call the cache stands in for. */
static void solve(const double *x, double *y)
{
    for (int j = 0; j < NOUT; j++) {
        double c = x[j % (NIN - 1)];
        y[j] = c / (1.0 + c * c) + 1e-3 * j * x[NIN - 1];
    }
}

/* A failed call: say why, with the library's detail, and end the job
 * (the other ranks may be waiting in a collective call). */
static void fail(const mpikvs_t *kvs, const char *call, int rc)
{
    fprintf(stderr, "surrogate: %s: %s: %s\n", call, mpikvs_strerror(rc),
            mpikvs_last_error(kvs));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    /* 0 and NULL: from the config */
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_t *kvs = NULL;
    mpikvs_stats_t st;
    double x[NIN], y[NOUT], sum = 0.0;
    unsigned char *key;
    int rank, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    opt.config = argc > 1 ? argv[1] : NULL;     /* NULL: $MPIKVS_CONFIG */
    opt.table = "chemistry";
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
    if (rc != MPIKVS_OK) {      /* failed on every rank, nothing left */
        fprintf(stderr, "surrogate: mpikvs_open: %s: %s\n",
                mpikvs_strerror(rc), mpikvs_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    key = malloc(mpikvs_key_size(kvs));         /* the rounded key's size */
    if (key == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int step = 0; step < NSTEPS; step++) {
        for (int c = 0; c < NCELLS; c++) {
            inputs(rank, step, c, x);
            rc = mpikvs_round_key(kvs, x, NIN, key);
            if (rc != MPIKVS_OK)
                fail(kvs, "mpikvs_round_key", rc);
            rc = mpikvs_get(kvs, key, y);
            if (rc == MPIKVS_MISS) {            /* compute, and keep it */
                solve(x, y);
                rc = mpikvs_put(kvs, key, y);
            }
            if (rc != MPIKVS_OK)
                fail(kvs, "mpikvs_get/put", rc);
            sum += y[11];                       /* the simulation goes on */
        }
        /* From here on every rank finds what the others computed. */
        rc = mpikvs_fence(kvs);
        if (rc != MPIKVS_OK)
            fail(kvs, "mpikvs_fence", rc);
    }

    /* this run's own figures, not an earlier step's (collective) */
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &st,
                      sizeof st);
    if (rc != MPIKVS_OK)
        fail(kvs, "mpikvs_stats", rc);
    if (rank == 0)
        printf("surrogate: sum %.6g, gets %" PRIu64 ", hits %" PRIu64
               " (%.1f %%)\n", sum, st.gets, st.hits,
               st.gets ? 100.0 * (double)st.hits / (double)st.gets : 0.0);
    free(key);
    rc = mpikvs_close(&kvs);
    if (rc != MPIKVS_OK)
        fprintf(stderr, "surrogate: mpikvs_close: %s\n", mpikvs_strerror(rc));
    MPI_Finalize();
    return rc == MPIKVS_OK ? 0 : 1;
}
