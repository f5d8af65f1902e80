/*
 * bench-c.c - the C side of tests/python/bench.py, the same work: each
 * rank puts N keys of 80 bytes with values of 104 (one node: every get
 * is direct), then times get_batch of all N, REPS times, and N single
 * gets 5 times.  Rank 0 prints its own figures: keys/s of the best batch, and
 * ns per single get, as bench.py does.
 *
 *   mpirun -np 2 tests/python/bench-c [N [REPS]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#include <mpikvs.h>

#define KS 80
#define VS 104

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(int rc, const char *call, const mpikvs_t *kvs)
{
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "bench-c: %s: %s: %s\n", call, mpikvs_strerror(rc),
                mpikvs_last_error(kvs));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 65536;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_t *kvs = NULL;
    unsigned char *keys, *values;
    int *status, rank;
    double t, best = 1e30, single;
    size_t hits = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    opt.key_size = KS;
    opt.value_size = VS;
    opt.size_per_node = (size_t)256 << 20;
    check(mpikvs_open(MPI_COMM_WORLD, &opt, &kvs), "mpikvs_open", NULL);
    keys = calloc(n, KS);
    values = calloc(n, VS);
    status = calloc(n, sizeof(int));
    if (keys == NULL || values == NULL || status == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    /* key i of rank r: i in its first 8 bytes, r in the ninth (bench.py
     * makes the same) */
    for (size_t i = 0; i < n; i++) {
        uint64_t v = i;

        memcpy(keys + i * KS, &v, sizeof v);
        keys[i * KS + 8] = (unsigned char)rank;
        memset(values + i * VS, (int)(i & 0xff), VS);
    }
    check(mpikvs_put_batch(kvs, n, keys, values), "mpikvs_put_batch", kvs);
    check(mpikvs_fence(kvs), "mpikvs_fence", kvs);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t = now();
        check(mpikvs_get_batch(kvs, n, keys, values, status),
              "mpikvs_get_batch", kvs);
        t = now() - t;
        if (t < best)
            best = t;
    }
    single = 1e30;
    for (int r = 0; r < 5; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        hits = 0;
        t = now();
        for (size_t i = 0; i < n; i++)
            hits += mpikvs_get(kvs, keys + i * KS, values) == MPIKVS_OK;
        t = now() - t;
        if (t < single)
            single = t;
    }
    if (rank == 0)
        printf("bench-c: get_batch of %zu keys: %.3g keys/s (best of %d); "
               "get: %.0f ns per call (best of 5), %zu hits\n", n, (double)n / best,
               reps, 1e9 * single / (double)n, hits);
    free(keys);
    free(values);
    free(status);
    check(mpikvs_close(&kvs), "mpikvs_close", NULL);
    MPI_Finalize();
    return hits * 100 > n * 99 ? 0 : 1;   /* a few evicted */
}
