/*
 * kvs_steps.c - writes or reads a known set of pairs through libmpikvs,
 * so that the Slurm tests can check what the regions of spank_mpikvs
 * hold from one job step to the next.
 *
 *   kvs_steps write N    the ranks put keys 0..N-1 between them
 *   kvs_steps read N     every rank gets keys 0..N-1 and checks values
 *   kvs_steps write-kill N   write, then the last rank kills itself with
 *                        SIGKILL after the line is printed, without
 *                        mpikvs_close (the others wait in a barrier
 *                        until srun ends them)
 *   ... CONFIG           either, opening with options.config = CONFIG
 *
 * Rank 0 prints one line: "kvs_steps: <verb> N keys: H hits, W wrong,
 * M missing, ranks R, layout <path>, tier T hits P published" (the job's
 * node tier counters, which count from the regions' creation), or
 * "kvs_steps: open failed: <why>".  The exit status is
 * 0 when the line could be printed; the tests judge the numbers.
 */
#include <inttypes.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpikvs.h"

#define KEY_SIZE   16
#define VALUE_SIZE 32

static void make_key(uint64_t i, unsigned char *key)
{
    memset(key, 0, KEY_SIZE);
    memcpy(key, &i, sizeof(i));
    memcpy(key + 8, "kvsteps", 7);
}

static void make_value(uint64_t i, unsigned char *value)
{
    for (int b = 0; b < VALUE_SIZE; b++)
        value[b] = (unsigned char)(i * 31u + (unsigned)b * 7u);
}

int main(int argc, char **argv)
{
    mpikvs_options_t opt = {.size = sizeof(mpikvs_options_t),
                            .key_size = KEY_SIZE, .value_size = VALUE_SIZE};
    unsigned char key[KEY_SIZE], value[VALUE_SIZE], want[VALUE_SIZE];
    long counts[3] = {0, 0, 0}, sums[3];   /* hits, wrong, missing */
    const char *layout = getenv("MPIKVS_LAYOUT");
    mpikvs_stats_t st;
    mpikvs_t *kvs = NULL;
    int rank, size, rc, write;
    uint64_t n;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || argc > 4 ||
        (strcmp(argv[1], "write") && strcmp(argv[1], "read") &&
         strcmp(argv[1], "write-kill"))) {
        if (rank == 0)
            fprintf(stderr, "usage: kvs_steps write|read|write-kill N "
                            "[CONFIG]\n");
        MPI_Finalize();
        return 2;
    }
    write = strncmp(argv[1], "write", 5) == 0;
    n = strtoull(argv[2], NULL, 10);
    if (argc == 4)
        opt.config = argv[3];
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
    if (rc != MPIKVS_OK) {
        if (rank == 0)
            printf("kvs_steps: open failed: %s\n", mpikvs_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    for (uint64_t i = 0; i < n; i++) {
        make_key(i, key);
        make_value(i, want);
        if (write) {
            if ((int)(i % (uint64_t)size) == rank &&
                mpikvs_put(kvs, key, want) != MPIKVS_OK)
                counts[1]++;
            continue;
        }
        rc = mpikvs_get(kvs, key, value);
        if (rc == MPIKVS_OK)
            counts[memcmp(value, want, VALUE_SIZE) == 0 ? 0 : 1]++;
        else
            counts[rc == MPIKVS_MISS ? 2 : 1]++;
    }
    mpikvs_fence(kvs);   /* with a node tier: publishes the remote hits */
    MPI_Reduce(counts, sums, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, &st, sizeof st) != MPIKVS_OK)
        memset(&st, 0, sizeof(st));
    if (rank == 0)
        printf("kvs_steps: %s %" PRIu64 " keys: %ld hits, %ld wrong, %ld "
               "missing, ranks %d, layout %s, tier %" PRIu64 " hits %"
               PRIu64 " published\n",
               argv[1], n, sums[0], sums[1], sums[2], size,
               layout ? layout : "(none)", st.tier_hits, st.tier_published);
    fflush(stdout);
    if (strcmp(argv[1], "write-kill") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);   /* the line is out */
        if (rank == size - 1)
            kill(getpid(), SIGKILL);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    mpikvs_close(&kvs);
    MPI_Finalize();
    return 0;
}
