/*
 * test_batch.c - batches of libmpikvs, blocking and started, in the mode
 * given as argv[1] (lockfree | fine-lock | coarse-lock): over an 8 MiB
 * table that holds every rank's keys, get batches of 1, 7, 64 and 1000
 * keys equal single gets, put batches land and are counted, a key twice
 * in a batch, empty batches; two batches in flight at once (completed
 * by mpikvs_test and by mpikvs_wait) equal the blocking one, put
 * batches land in the order they were started, misuse is refused; a
 * close with a batch in flight completes it.
 *
 * Run under mpirun with any number of ranks; MPIKVS_VIRTUAL_NODES=N makes
 * N blocks of consecutive ranks act as nodes.  See mpitest.h for the
 * output, mt_table.h for what the table tests share.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"

/* Key j of a batch test of size n: a third absent, the rest keys of the
 * big table from every rank. */
static void batch_key(size_t n, size_t j, unsigned char *key)
{
    if (j % 3 == 0)
        mt_make_key(TAG_ABSENT, (uint32_t)T.rank, 1000 * n + j, key, KS);
    else
        mt_make_key(TAG_MAIN, (uint32_t)(j % (size_t)T.size),
                    (j * 7 + n) % NKEYS, key, KS);
}

/* get_batch of keys equals single gets of them. */
static void compare_batch(mpikvs_t *kvs, size_t n, const unsigned char *keys,
                          int want_all_hits, const char *what)
{
    unsigned char *vals = malloc(n * VS);
    int           *st = malloc(n * sizeof *st);
    mpikvs_stats_t before, after;
    size_t         hits = 0;
    int            rc;

    if (!vals || !st)
        mt_abort("out of memory");
    memset(vals, 0xee, n * VS);
    for (size_t j = 0; j < n; j++)
        st[j] = 12345;
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &before, what);
    rc = mpikvs_get_batch(kvs, n, keys, vals, st);
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &after, what);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_get_batch(n=%zu) = %d (%s)", what, n,
           rc, mpikvs_strerror(rc));
    EXPECT(after.gets - before.gets == n,
           "%s: get_batch of %zu counted %llu gets", what, n,
           (unsigned long long)(after.gets - before.gets));
    for (size_t j = 0; j < n; j++) {
        const unsigned char *key = keys + j * KS;
        unsigned char        one[VS];
        int                  rc1;

        EXPECT(st[j] == MPIKVS_OK || st[j] == MPIKVS_MISS,
               "%s: n=%zu status[%zu] = %d", what, n, j, st[j]);
        if (st[j] == MPIKVS_OK) {
            hits++;
            EXPECT(mt_value_ok(key, KS, vals + j * VS, VS, NULL),
                   "%s: n=%zu key %zu: batch returned a wrong value", what,
                   n, j);
        }
        memset(one, 0xdd, VS);
        rc1 = mpikvs_get(kvs, key, one);
        EXPECT(rc1 == st[j], "%s: n=%zu key %zu: batch status %d, single "
               "get %d", what, n, j, st[j], rc1);
        if (rc1 == MPIKVS_OK && st[j] == MPIKVS_OK)
            EXPECT(memcmp(one, vals + j * VS, VS) == 0,
                   "%s: n=%zu key %zu: batch and single get disagree on "
                   "the value", what, n, j);
    }
    EXPECT(after.hits - before.hits == hits,
           "%s: get_batch of %zu: %zu hits, stats counted %llu", what, n,
           hits, (unsigned long long)(after.hits - before.hits));
    if (want_all_hits)
        EXPECT(hits == n, "%s: n=%zu: %zu hits, want all", what, n, hits);
    free(vals);
    free(st);
}

/* Complete req with mpikvs_test, polling; a bound in time, not in
 * calls (a test that finds nothing arrived returns at once). */
static int test_until_done(mpikvs_t *kvs, mpikvs_request_t *req,
                           const char *what)
{
    double until = MPI_Wtime() + 60;
    int done = 0, rc = MPIKVS_OK;

    while (!done && MPI_Wtime() < until) {
        rc = mpikvs_test(kvs, req, &done);
        if (rc < 0)
            break;
    }
    EXPECT(done, "%s: mpikvs_test = %d (%s), not done within 60 s", what,
           rc, mpikvs_strerror(rc));
    return rc;
}

/* Batches in flight: two get batches at once equal the blocking one (one
 * completed by mpikvs_test, one by mpikvs_wait); two put batches of the
 * same keys land in the order they were started; misuse is refused. */
static void test_async(mpikvs_t *kvs)
{
    static const size_t sizes[] = { 1, 64, 200 };

    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t            n = sizes[s];
        unsigned char    *keys = malloc(n * KS), *want = malloc(n * VS);
        unsigned char    *got1 = malloc(n * VS), *got2 = malloc(n * VS);
        int              *st = malloc(3 * n * sizeof *st);
        mpikvs_request_t  r1, r2, stale;
        char              what[64];
        int               rc;

        if (!keys || !want || !got1 || !got2 || !st)
            mt_abort("out of memory");
        snprintf(what, sizeof what, "async get n=%zu", n);
        mt_phase(what);
        for (size_t j = 0; j < n; j++)
            batch_key(n, j, keys + j * KS);
        memset(want, 0, n * VS);
        memset(got1, 0, n * VS);
        memset(got2, 0, n * VS);
        rc = mpikvs_get_batch(kvs, n, keys, want, st);
        EXPECT(rc == MPIKVS_OK, "%s: blocking batch = %d", what, rc);
        rc = mpikvs_get_batch_start(kvs, n, keys, got1, st + n, &r1);
        EXPECT(rc == MPIKVS_OK && r1.id, "%s: start = %d (%s)", what, rc,
               mpikvs_last_error(kvs));
        rc = mpikvs_get_batch_start(kvs, n, keys, got2, st + 2 * n, &r2);
        EXPECT(rc == MPIKVS_OK && r2.id, "%s: second start = %d (%s)", what,
               rc, mpikvs_last_error(kvs));
        stale = r1;
        rc = test_until_done(kvs, &r1, what);
        EXPECT(rc == MPIKVS_OK && r1.id == 0, "%s: test = %d (%s)", what, rc,
               mpikvs_strerror(rc));
        rc = mpikvs_wait(kvs, &r2);
        EXPECT(rc == MPIKVS_OK && r2.id == 0, "%s: wait = %d (%s)", what, rc,
               mpikvs_strerror(rc));
        for (size_t j = 0; j < n; j++) {
            EXPECT(st[n + j] == st[j] && st[2 * n + j] == st[j],
                   "%s: key %zu: status %d and %d in flight, %d blocking",
                   what, j, st[n + j], st[2 * n + j], st[j]);
            if (st[j] == MPIKVS_OK)
                EXPECT(memcmp(got1 + j * VS, want + j * VS, VS) == 0 &&
                       memcmp(got2 + j * VS, want + j * VS, VS) == 0,
                       "%s: key %zu: another value in flight", what, j);
        }
        /* misuse: an ended request, NULL arguments */
        rc = mpikvs_wait(kvs, &stale);
        EXPECT(rc == MPIKVS_ERR_INVAL &&
               strstr(mpikvs_last_error(kvs), "waited for already"),
               "%s: a second wait = %d (%s)", what, rc,
               mpikvs_last_error(kvs));
        rc = mpikvs_test(kvs, &r1, &(int){0});
        EXPECT(rc == MPIKVS_ERR_INVAL, "%s: test of an ended request = %d",
               what, rc);
        EXPECT(mpikvs_wait(kvs, NULL) == MPIKVS_ERR_INVAL &&
               mpikvs_test(kvs, &stale, NULL) == MPIKVS_ERR_INVAL &&
               mpikvs_get_batch_start(kvs, n, keys, got1, st, NULL) ==
                   MPIKVS_ERR_INVAL &&
               mpikvs_get_batch_start(kvs, n, keys, got1, NULL, &r1) ==
                   MPIKVS_ERR_INVAL,
               "%s: NULL arguments accepted", what);

        snprintf(what, sizeof what, "async put n=%zu", n);
        mt_phase(what);
        for (size_t j = 0; j < n; j++) {
            mt_make_key(TAG_ASYNC, (uint32_t)T.rank, 1000 * n + j,
                        keys + j * KS, KS);
            mt_make_value(keys + j * KS, KS, 1, got1 + j * VS, VS);
            mt_make_value(keys + j * KS, KS, 2, got2 + j * VS, VS);
        }
        /* by turns: read back in full (see turns()) */
        for (int turn = 0; turn < turns(); turn++) {
            if (my_turn(turn)) {
                rc = mpikvs_put_batch_start(kvs, n, keys, got1, &r1);
                EXPECT(rc == MPIKVS_OK, "%s: start = %d", what, rc);
                rc = mpikvs_put_batch_start(kvs, n, keys, got2, &r2);
                EXPECT(rc == MPIKVS_OK, "%s: second start = %d", what, rc);
                /* waited for in the other order: they land in the
                 * started one */
                EXPECT(mpikvs_wait(kvs, &r2) == MPIKVS_OK &&
                       mpikvs_wait(kvs, &r1) == MPIKVS_OK, "%s: wait: %s",
                       what, mpikvs_last_error(kvs));
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        fence_ok(kvs, what);
        for (size_t j = 0; j < n; j++)
            mt_make_key(TAG_ASYNC, (uint32_t)((T.rank + 1) % T.size),
                        1000 * n + j, keys + j * KS, KS);
        rc = mpikvs_get_batch(kvs, n, keys, want, st);
        for (size_t j = 0; rc == MPIKVS_OK && j < n; j++) {
            uint64_t ver = 0;
            EXPECT(st[j] == MPIKVS_OK &&
                   mt_value_ok(keys + j * KS, KS, want + j * VS, VS, &ver) &&
                   ver == 2, "%s: key %zu of the next rank: status %d, "
                   "version %llu, want 2 (the later batch)", what, j, st[j],
                   (unsigned long long)ver);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        free(keys);
        free(want);
        free(got1);
        free(got2);
        free(st);
    }
}

/* A close with a batch in flight completes it and says so. */
static void test_async_close(void)
{
    mpikvs_options_t o = opts(KS, VS, BIG, T.mode);
    mpikvs_t        *kvs = open_ok(&o, "async close: open");
    unsigned char    key[KS], val[VS];
    mpikvs_request_t r;
    int              st = 12345, rc;

    if (!kvs)
        return;
    mt_make_key(TAG_ASYNC, (uint32_t)((T.rank + 1) % T.size), 0, key, KS);
    rc = mpikvs_get_batch_start(kvs, 1, key, val, &st, &r);
    EXPECT(rc == MPIKVS_OK, "async close: start = %d", rc);
    mt_phase("async close: close");
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_ERR_INVAL && !kvs &&
           strstr(mpikvs_last_error(NULL), "never waited for"),
           "async close: close with a batch in flight = %d (%s)", rc,
           mpikvs_last_error(NULL));
    EXPECT(st == MPIKVS_MISS, "async close: the batch in flight was not "
           "completed (status %d)", st);
}

static void test_batch(mpikvs_t *kvs)
{
    static const size_t sizes[] = { 1, 7, 64, 1000 };

    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t         n = sizes[s];
        unsigned char *keys = malloc(n * KS);
        unsigned char *vals = malloc(n * VS);
        mpikvs_stats_t before, after;
        char           what[64];
        int            rc;

        if (!keys || !vals)
            mt_abort("out of memory");

        snprintf(what, sizeof what, "batch get n=%zu", n);
        mt_phase(what);
        for (size_t j = 0; j < n; j++)
            batch_key(n, j, keys + j * KS);
        compare_batch(kvs, n, keys, 0, what);

        snprintf(what, sizeof what, "batch put n=%zu", n);
        mt_phase(what);
        for (size_t j = 0; j < n; j++) {
            mt_make_key(TAG_BATCH_PUT, (uint32_t)T.rank, 1000 * n + j,
                        keys + j * KS, KS);
            mt_make_value(keys + j * KS, KS, 5, vals + j * VS, VS);
        }
        for (int turn = 0; turn < turns(); turn++) {
            if (my_turn(turn)) {
                stats_ok(kvs, MPIKVS_SCOPE_RANK, &before, what);
                rc = mpikvs_put_batch(kvs, n, keys, vals);
                stats_ok(kvs, MPIKVS_SCOPE_RANK, &after, what);
                EXPECT(rc == MPIKVS_OK, "%s: mpikvs_put_batch = %d (%s): %s",
                       what, rc, mpikvs_strerror(rc),
                       mpikvs_last_error(kvs));
                EXPECT(after.puts - before.puts == n,
                       "%s: put_batch of %zu counted %llu puts", what, n,
                       (unsigned long long)(after.puts - before.puts));
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        fence_ok(kvs, what);
        /* read back the next rank's batch */
        for (size_t j = 0; j < n; j++)
            mt_make_key(TAG_BATCH_PUT, (uint32_t)((T.rank + 1) % T.size),
                        1000 * n + j, keys + j * KS, KS);
        snprintf(what, sizeof what, "batch put n=%zu, read back", n);
        compare_batch(kvs, n, keys, 1, what);
        MPI_Barrier(MPI_COMM_WORLD);
        free(keys);
        free(vals);
    }

    /* one key twice in one batch: the later value wins */
    {
        unsigned char keys[2 * KS], vals[2 * VS], got[VS];
        uint64_t      ver = 0;
        int           rc;

        mt_phase("batch put: one key twice");
        mt_make_key(TAG_BATCH_DUP, (uint32_t)T.rank, 0, keys, KS);
        memcpy(keys + KS, keys, KS);
        mt_make_value(keys, KS, 1, vals, VS);
        mt_make_value(keys, KS, 2, vals + VS, VS);
        for (int turn = 0; turn < turns(); turn++) {
            if (my_turn(turn)) {
                rc = mpikvs_put_batch(kvs, 2, keys, vals);
                EXPECT(rc == MPIKVS_OK, "put_batch of one key twice = %d "
                       "(%s)", rc, mpikvs_strerror(rc));
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        fence_ok(kvs, "batch put: one key twice: fence");
        rc = mpikvs_get(kvs, keys, got);
        EXPECT(rc == MPIKVS_OK, "get after put_batch of one key twice = %d "
               "(%s)", rc, mpikvs_strerror(rc));
        if (rc == MPIKVS_OK)
            EXPECT(mt_value_ok(keys, KS, got, VS, &ver) && ver == 2,
                   "put_batch of one key twice: got version %llu, want 2 "
                   "(the later one)", (unsigned long long)ver);
    }

    /* one key three times in a get batch, between others */
    {
        unsigned char keys[5 * KS];

        mt_phase("batch get: one key three times");
        for (uint32_t j = 0; j < 5; j++)
            mt_make_key(TAG_MAIN, (uint32_t)((T.rank + 1) % T.size),
                        j % 2 ? 3 : j, keys + j * KS, KS);
        compare_batch(kvs, 5, keys, 1, "batch get: one key three times");
    }

    /* an empty batch answers every one of its zero lookups */
    {
        unsigned char key[KS], val[VS];
        int           st = 0, rc;

        mt_make_key(TAG_ABSENT, 0, 0, key, KS);
        rc = mpikvs_get_batch(kvs, 0, key, val, &st);
        EXPECT(rc == MPIKVS_OK, "get_batch n=0 = %d (%s)", rc,
               mpikvs_strerror(rc));
        rc = mpikvs_put_batch(kvs, 0, key, val);
        EXPECT(rc == MPIKVS_OK, "put_batch n=0 = %d (%s)", rc,
               mpikvs_strerror(rc));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The big table's sections: its keys must be there (put_main_keys, or
 * test_getput's test_big in test_areas). */
static void batch_big(mpikvs_t *kvs)
{
    test_batch(kvs);
    test_async(kvs);
}

static void batch_area(void)
{
    mpikvs_t *kvs = open_big();

    if (kvs) {
        struct tally t = { 0 };

        put_main_keys(kvs, 0, &t, "big: puts");
        batch_big(kvs);
        close_ok(&kvs, "big: close");
        shm_check("big table");
    }
    test_async_close();
}

TABLE_TEST_MAIN(batch_area)
