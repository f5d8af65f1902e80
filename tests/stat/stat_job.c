/*
 * stat_job.c - a small MPI job for the tests of mpikvs-stat: it uses
 * libmpikvs the way a simulation does, slowly enough for mpikvs-stat to
 * watch it, and prints one line that depends only on what the cache
 * returned, so that two runs can be compared.
 *
 *   stat_job [--rounds N] [--keys K] [--pause-ms P] [--size BYTES]
 *            [--ready FILE] [--hold FILE] [--timeout S] [--leak]
 *            [--abort] [--save FILE] [--stats] [--verify CONFIG]
 *
 * Each round, every rank puts K keys of its own (one rank after the
 * other), all ranks meet in
 * mpikvs_fence(), every rank gets the round's keys of every rank (hits)
 * and K keys nobody put (misses), the ranks meet again, and rank 0 sleeps
 * P ms.  After the first round rank 0 creates FILE (--ready).  At the end
 * rank 0 waits until the file --hold names exists (at most --timeout
 * seconds), so the test can look at a live job (--save: after saving
 * the table to FILE with mpikvs_save); --leak ends without
 * mpikvs_close(), as a crashed job would; --abort ends in
 * MPI_Abort(MPI_COMM_WORLD, 3) from rank 0 instead, as the example of
 * mpikvs(3) does on an error (the other ranks wait in a barrier until
 * the launcher kills them).
 * --stats: rank 0 then prints "stat_job: since open: gets G hits H puts P;
 * node since open: gets G hits H puts P; since creation: gets G hits H
 * puts P" (mpikvs_stats of the job, of the node, and of the job for the
 * region's lifetime).
 * --verify CONFIG: the table is CONFIG's (16-byte keys, 32-byte values,
 * a "verify" fraction), opened with MPIKVS_OPEN_VERIFY; a verify hit
 * counts as a hit and is reported with the error 0.25 for keys of odd i
 * and 2^-40 for the others.
 *
 * Rank 0 prints "stat_job: ranks R rounds N: hits H misses M wrong W sum
 * S" (S sums the values read, so a wrong byte changes it) and exits 0;
 * a failure to open or an error of a call prints "stat_job: ..." and
 * exits 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpikvs.h"

#define KEY_SIZE   16
#define VALUE_SIZE 32

struct args {
    unsigned    rounds, keys, pause_ms, timeout;
    size_t      size;
    const char *ready, *hold, *save, *verify;
    int         leak, abort, stats;
};

static void make_key(uint32_t round, uint32_t owner, uint32_t i,
                     unsigned char *key)
{
    memset(key, 0, KEY_SIZE);
    memcpy(key, &round, 4);
    memcpy(key + 4, &owner, 4);
    memcpy(key + 8, &i, 4);
    memcpy(key + 12, "stat", 4);
}

static void make_value(const unsigned char *key, unsigned char *value)
{
    for (int b = 0; b < VALUE_SIZE; b++)
        value[b] = (unsigned char)(key[b % KEY_SIZE] * 13u + (unsigned)b);
}

static int parse(int argc, char **argv, struct args *a)
{
    a->rounds = 10;
    a->keys = 50;
    a->pause_ms = 0;
    a->timeout = 60;
    a->size = 4u << 20;
    a->ready = a->hold = a->save = a->verify = NULL;
    a->leak = a->abort = a->stats = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--leak")) {
            a->leak = 1;
            continue;
        }
        if (!strcmp(argv[i], "--stats")) {
            a->stats = 1;
            continue;
        }
        if (!strcmp(argv[i], "--abort")) {
            a->abort = 1;
            continue;
        }
        if (!v)
            return -1;
        if (!strcmp(argv[i], "--rounds"))
            a->rounds = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--keys"))
            a->keys = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--pause-ms"))
            a->pause_ms = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--timeout"))
            a->timeout = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--size"))
            a->size = (size_t)strtoull(v, NULL, 10);
        else if (!strcmp(argv[i], "--ready"))
            a->ready = v;
        else if (!strcmp(argv[i], "--hold"))
            a->hold = v;
        else if (!strcmp(argv[i], "--save"))
            a->save = v;
        else if (!strcmp(argv[i], "--verify"))
            a->verify = v;
        else
            return -1;
        i++;
    }
    return a->rounds && a->keys ? 0 : -1;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Rank 0 waits (bounded) until path exists. */
static int wait_for(const char *path, unsigned timeout)
{
    for (unsigned waited = 0; access(path, F_OK) != 0; waited += 50) {
        if (waited >= timeout * 1000u)
            return -1;
        sleep_ms(50);
    }
    return 0;
}

/* --stats: the figures of this run and of the region's life
 * (collective). */
static int print_stats(mpikvs_t *kvs, int rank)
{
    static const struct {
        int scope;
        const char *what;
    } scopes[] = {
        {MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, "since open"},
        {MPIKVS_SCOPE_NODE | MPIKVS_SINCE_OPEN, "node since open"},
        {MPIKVS_SCOPE_JOB, "since creation"},
    };
    mpikvs_stats_t st;

    for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
        if (mpikvs_stats(kvs, scopes[i].scope, &st, sizeof st) != MPIKVS_OK) {
            printf("stat_job: rank %d: stats: %s\n", rank,
                   mpikvs_last_error(kvs));
            return -1;
        }
        if (rank == 0)
            printf("%s%s: gets %" PRIu64 " hits %" PRIu64 " puts %" PRIu64,
                   i ? "; " : "stat_job: ", scopes[i].what, st.gets, st.hits,
                   st.puts);
    }
    if (rank == 0)
        printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    mpikvs_options_t opt = {.size = sizeof(mpikvs_options_t),
                            .key_size = KEY_SIZE, .value_size = VALUE_SIZE};
    unsigned char key[KEY_SIZE], value[VALUE_SIZE], want[VALUE_SIZE];
    uint64_t counts[4] = {0, 0, 0, 0}, sums[4];   /* hits misses wrong sum */
    int rank, size, rc, failed = 0, any_failed;
    mpikvs_t *kvs = NULL;
    struct args a;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &a) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: stat_job [--rounds N] [--keys K] "
                            "[--pause-ms P] [--size BYTES] [--ready FILE] "
                            "[--hold FILE] [--timeout S] [--leak] [--abort] "
                            "[--save FILE] [--stats] [--verify CONFIG]\n");
        MPI_Finalize();
        return 2;
    }
    opt.size_per_node = a.size;
    if (a.verify) {
        opt.config = a.verify;
        opt.flags = MPIKVS_OPEN_VERIFY;
        opt.size_per_node = 0;   /* the config's */
    }
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
    if (rc != MPIKVS_OK) {
        if (rank == 0)
            printf("stat_job: open failed: %s\n", mpikvs_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    for (uint32_t r = 0; r < a.rounds && !failed; r++) {
        /* The ranks put in turn: two lock-free puts that race for one
         * free slot may lose a key (mpikvs(3)), and this job's line must
         * depend on what the cache holds, not on how the ranks ran. */
        for (int writer = 0; writer < size; writer++) {
            for (uint32_t i = 0; writer == rank && i < a.keys && !failed;
                 i++) {
                make_key(r, (uint32_t)rank, i, key);
                make_value(key, want);
                if ((rc = mpikvs_put(kvs, key, want)) != MPIKVS_OK) {
                    printf("stat_job: rank %d: put: %s\n", rank,
                           mpikvs_last_error(kvs));
                    failed = 1;
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if ((rc = mpikvs_fence(kvs)) != MPIKVS_OK) {
            printf("stat_job: fence: %s\n", mpikvs_last_error(kvs));
            failed = 1;
        }
        /* every rank's keys of this round, then as many nobody put */
        for (int owner = 0; owner <= size && !failed; owner++)
            for (uint32_t i = 0; i < a.keys && !failed; i++) {
                make_key(r, (uint32_t)owner, i, key);
                rc = mpikvs_get(kvs, key, value);
                if (rc == MPIKVS_VERIFY &&
                    mpikvs_verify_report(kvs, key, i % 2 ? 0.25 : 0x1p-40) !=
                        MPIKVS_OK) {
                    printf("stat_job: rank %d: verify_report: %s\n", rank,
                           mpikvs_last_error(kvs));
                    failed = 1;
                }
                if (rc == MPIKVS_OK || rc == MPIKVS_VERIFY) {
                    make_value(key, want);
                    counts[0]++;
                    counts[2] += memcmp(value, want, VALUE_SIZE) != 0;
                    for (int b = 0; b < VALUE_SIZE; b++)
                        counts[3] += value[b];
                } else if (rc == MPIKVS_MISS) {
                    counts[1]++;
                } else {
                    printf("stat_job: rank %d: get: %s\n", rank,
                           mpikvs_last_error(kvs));
                    failed = 1;
                }
            }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0 && r == 0 && a.ready) {
            FILE *f = fopen(a.ready, "w");
            if (f)
                fclose(f);
        }
        if (rank == 0 && a.pause_ms)
            sleep_ms(a.pause_ms);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (a.save && mpikvs_save(kvs, a.save) != MPIKVS_OK) {
        printf("stat_job: rank %d: save: %s\n", rank, mpikvs_last_error(kvs));
        failed = 1;
    }
    if (a.stats && !failed && print_stats(kvs, rank) != 0)
        failed = 1;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Reduce(counts, sums, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && !any_failed)
        printf("stat_job: ranks %d rounds %u: hits %" PRIu64 " misses %" PRIu64
               " wrong %" PRIu64 " sum %" PRIu64 "\n",
               size, a.rounds, sums[0], sums[1], sums[2], sums[3]);
    fflush(stdout);
    if (rank == 0 && a.hold && wait_for(a.hold, a.timeout) != 0) {
        printf("stat_job: %s did not appear within %u s\n", a.hold,
               a.timeout);
        any_failed = 1;
    }
    MPI_Bcast(&any_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (a.abort) {
        if (rank == 0)
            MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (!a.leak)
        mpikvs_close(&kvs);
    MPI_Finalize();
    return any_failed ? 1 : 0;
}
