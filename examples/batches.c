/*
 * batches.c - batches in flight: start the lookups of all cells at
 * once, do other work while the home nodes answer, then compute the
 * misses and store them with a started put batch.
 *
 *   mpicc -std=gnu11 batches.c $(pkg-config --cflags --libs mpikvs) -o batches
 *   mpirun -np 4 ./batches PREFIX/share/doc/mpikvs/examples/chemistry.json
 *
 * The table "chemistry" of the example chemistry.json, as surrogate.c.
 * Until mpikvs_wait (or a mpikvs_test that says done) the keys, values
 * and status of a started batch belong to the library: do not touch
 * them.  Rank 0 prints the job's hit rate.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <mpikvs.h>

#define NIN    10
#define NOUT   13
#define NCELLS 500
#define NSTEPS 10

static void inputs(int rank, int step, int c, double *x)
{
    int state = (c + step) % 50;

    for (int f = 0; f < NIN - 1; f++)
        x[f] = 1e-3 * (1 + state) * (f + 1) * (1 + 1e-9 * rank);
    x[NIN - 1] = 60.0;
}

static void solve(const double *x, double *y)
{
    for (int j = 0; j < NOUT; j++) {
        double c = x[j % (NIN - 1)];
        y[j] = c / (1.0 + c * c) + 1e-3 * j * x[NIN - 1];
    }
}

static void fail(const mpikvs_t *kvs, const char *call, int rc)
{
    fprintf(stderr, "batches: %s: %s: %s\n", call, mpikvs_strerror(rc),
            mpikvs_last_error(kvs));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    static double in[NCELLS][NIN], out[NCELLS][NOUT], new_out[NCELLS][NOUT];
    static int status[NCELLS];
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_t *kvs = NULL;
    mpikvs_request_t req;
    mpikvs_stats_t st;
    unsigned char *keys, *new_keys;
    size_t ks;
    long polls = 0;
    int rank, rc, done;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    opt.config = argc > 1 ? argv[1] : NULL;
    opt.table = "chemistry";
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "batches: mpikvs_open: %s: %s\n",
                mpikvs_strerror(rc), mpikvs_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    ks = mpikvs_key_size(kvs);                  /* key i is at keys + i*ks */
    keys = malloc(NCELLS * ks);
    new_keys = malloc(NCELLS * ks);
    if (keys == NULL || new_keys == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int step = 0; step < NSTEPS; step++) {
        size_t nnew = 0;

        for (int c = 0; c < NCELLS; c++) {
            inputs(rank, step, c, in[c]);
            rc = mpikvs_round_key(kvs, in[c], NIN, keys + c * ks);
            if (rc != MPIKVS_OK)
                fail(kvs, "mpikvs_round_key", rc);
        }
        rc = mpikvs_get_batch_start(kvs, NCELLS, keys, out, status, &req);
        if (rc != MPIKVS_OK)
            fail(kvs, "mpikvs_get_batch_start", rc);
        /* Other work goes here, polling now and then. */
        do {
            polls++;
            rc = mpikvs_test(kvs, &req, &done);
        } while (rc == MPIKVS_OK && !done);
        if (rc != MPIKVS_OK)                    /* the batch's own result */
            fail(kvs, "mpikvs_test", rc);

        for (int c = 0; c < NCELLS; c++) {
            if (status[c] == MPIKVS_OK)
                continue;                       /* a hit: out[c] is set */
            solve(in[c], new_out[nnew]);
            memcpy(new_keys + nnew * ks, keys + c * ks, ks);
            nnew++;
        }
        if (nnew > 0) {
            rc = mpikvs_put_batch_start(kvs, nnew, new_keys, new_out, &req);
            if (rc == MPIKVS_OK)                /* work could go here, */
                rc = mpikvs_wait(kvs, &req);    /* then complete it */
            if (rc != MPIKVS_OK)
                fail(kvs, "mpikvs_put_batch_start/wait", rc);
        }
        rc = mpikvs_fence(kvs);
        if (rc != MPIKVS_OK)
            fail(kvs, "mpikvs_fence", rc);
    }

    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &st,
                      sizeof st);
    if (rc != MPIKVS_OK)
        fail(kvs, "mpikvs_stats", rc);
    if (rank == 0)
        printf("batches: gets %" PRIu64 ", hits %" PRIu64 " (%.1f %%), "
               "%ld polls on rank 0\n", st.gets, st.hits,
               st.gets ? 100.0 * (double)st.hits / (double)st.gets : 0.0,
               polls);
    free(keys);
    free(new_keys);
    rc = mpikvs_close(&kvs);
    if (rc != MPIKVS_OK)
        fprintf(stderr, "batches: mpikvs_close: %s\n", mpikvs_strerror(rc));
    MPI_Finalize();
    return rc == MPIKVS_OK ? 0 : 1;
}
