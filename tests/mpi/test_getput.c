/*
 * test_getput.c - single puts and gets of libmpikvs, in the mode given
 * as argv[1] (lockfree | fine-lock | coarse-lock): an 8 MiB table (puts,
 * gets of every rank's keys, absent keys, updates, stats of every scope
 * against what the test did, bad calls, close twice); a 4 KiB table
 * (evictions, no wrong value); the smallest table; the eviction victim
 * in a full bucket; two handles at once.  After each table, no region
 * of this job may be left in the regions' directory.
 *
 * Run under mpirun with any number of ranks; MPIKVS_VIRTUAL_NODES=N makes
 * N blocks of consecutive ranks act as nodes (the remote path).  See
 * mpitest.h for the output, mt_table.h for what the table tests share.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"

#define TINY    4096u           /* size_per_node of the tiny table */
#define NTINY   300u            /* keys a rank puts in the tiny table */

static int same_stats(const mpikvs_stats_t *a, const mpikvs_stats_t *b,
                      const char *what)
{
    int good = 1;
#define CMP(f)                                                           \
    do {                                                                 \
        EXPECT(a->f == b->f, "%s: " #f " %llu != %llu", what,            \
               (unsigned long long)a->f, (unsigned long long)b->f);      \
        good &= a->f == b->f;                                            \
    } while (0)
    CMP(gets);
    CMP(hits);
    CMP(misses);
    CMP(direct);
    CMP(remote);
    CMP(checksum_retries);
    CMP(invalidations);
    CMP(puts);
    CMP(updates);
    CMP(evictions);
#undef CMP
    return good;
}

static void sum_stats(const mpikvs_stats_t *in, mpikvs_stats_t *out,
                      MPI_Comm comm)
{
    MPI_Allreduce((void *)in, out, sizeof *in / sizeof(uint64_t),
                  MPI_UINT64_T, MPI_SUM, comm);
}

/* Stats at a quiescent point: what the library counted equals what the
 * test did, and the scopes add up. */
static void check_stats(mpikvs_t *kvs, const struct tally *t,
                        uint64_t updates, const char *what)
{
    mpikvs_stats_t rank, node, job, sum;
    char           w[160];

    mt_phase(what);
    MPI_Barrier(MPI_COMM_WORLD);
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &rank, what);
    stats_ok(kvs, MPIKVS_SCOPE_NODE, &node, what);
    stats_ok(kvs, MPIKVS_SCOPE_JOB, &job, what);
    MPI_Barrier(MPI_COMM_WORLD);

    snprintf(w, sizeof w, "%s: rank stats vs the test's count", what);
    EXPECT(rank.gets == t->gets, "%s: gets %llu, test made %llu", w,
           (unsigned long long)rank.gets, (unsigned long long)t->gets);
    EXPECT(rank.hits == t->hits, "%s: hits %llu, test saw %llu", w,
           (unsigned long long)rank.hits, (unsigned long long)t->hits);
    EXPECT(rank.misses == t->misses, "%s: misses %llu, test saw %llu", w,
           (unsigned long long)rank.misses, (unsigned long long)t->misses);
    EXPECT(rank.puts == t->puts, "%s: puts %llu, test made %llu", w,
           (unsigned long long)rank.puts, (unsigned long long)t->puts);
    if (updates != UINT64_MAX)
        EXPECT(rank.updates == updates, "%s: updates %llu, want %llu", w,
               (unsigned long long)rank.updates,
               (unsigned long long)updates);
    EXPECT(rank.direct + rank.remote == rank.gets,
           "%s: direct %llu + remote %llu != gets %llu", w,
           (unsigned long long)rank.direct, (unsigned long long)rank.remote,
           (unsigned long long)rank.gets);
    /* nobody wrote while anybody read: every slot read must verify */
    EXPECT(rank.checksum_retries == 0 && rank.invalidations == 0,
           "%s: %llu checksum retries, %llu invalidations without "
           "concurrent writers", w,
           (unsigned long long)rank.checksum_retries,
           (unsigned long long)rank.invalidations);
    if (T.lockmode)
        EXPECT(rank.remote == rank.gets && rank.direct == 0,
               "%s: mode %s: direct %llu remote %llu of %llu gets; every "
               "access must go through MPI", w, T.mode,
               (unsigned long long)rank.direct,
               (unsigned long long)rank.remote,
               (unsigned long long)rank.gets);
    else if (T.nnodes == 1)
        EXPECT(rank.direct == rank.gets,
               "%s: one node, lockfree: direct %llu of %llu gets", w,
               (unsigned long long)rank.direct,
               (unsigned long long)rank.gets);

    snprintf(w, sizeof w, "%s: job stats vs the sum of the ranks", what);
    sum_stats(&rank, &sum, MPI_COMM_WORLD);
    same_stats(&job, &sum, w);
    EXPECT(job.gets == job.hits + job.misses,
           "%s: gets %llu != hits %llu + misses %llu", w,
           (unsigned long long)job.gets, (unsigned long long)job.hits,
           (unsigned long long)job.misses);
    EXPECT(job.direct + job.remote == job.gets,
           "%s: direct %llu + remote %llu != gets %llu", w,
           (unsigned long long)job.direct, (unsigned long long)job.remote,
           (unsigned long long)job.gets);
    if (T.nnodes > 1 && !T.lockmode)
        EXPECT(job.remote > 0 && job.direct > 0,
               "%s: %d nodes: direct %llu remote %llu; keys hash all over, "
               "both paths must serve", w, T.nnodes,
               (unsigned long long)job.direct,
               (unsigned long long)job.remote);

    if (T.node_known) {
        snprintf(w, sizeof w, "%s: node stats vs the sum of its ranks",
                 what);
        sum_stats(&rank, &sum, T.node);
        same_stats(&node, &sum, w);
    }
}

static void test_big(mpikvs_t *kvs)
{
    struct tally   t = { 0 };
    mpikvs_stats_t job;
    uint64_t       misses_v0;

    EXPECT(mpikvs_last_error(kvs) && !*mpikvs_last_error(kvs),
           "big: a new handle's mpikvs_last_error is \"%s\", want \"\"",
           mpikvs_last_error(kvs) ? mpikvs_last_error(kvs) : "(null)");
    EXPECT(mpikvs_key_size(kvs) == KS && mpikvs_value_size(kvs) == VS,
           "big: mpikvs_key_size %zu, mpikvs_value_size %zu, opened with "
           "%u and %u", mpikvs_key_size(kvs), mpikvs_value_size(kvs), KS,
           VS);
    put_main_keys(kvs, 0, &t, "big: puts");

    mt_phase("big: gets");
    for (int r = 0; r < T.size; r++)
        for (uint32_t i = 0; i < NKEYS; i++)
            get_check(kvs, TAG_MAIN, (uint32_t)r, i, 0, &t, "big: get");
    misses_v0 = t.misses;

    mt_phase("big: absent keys");
    for (uint32_t i = 0; i < 16; i++) {
        unsigned char key[KS], val[VS];
        int           rc;

        unsigned char was[VS];

        mt_make_key(TAG_ABSENT, (uint32_t)T.rank, i, key, KS);
        memset(val, 0x5a + (int)i, VS);
        memcpy(was, val, VS);
        rc = mpikvs_get(kvs, key, val);
        t.gets++;
        EXPECT(rc == MPIKVS_MISS, "big: get of an absent key = %d (%s), "
               "want MPIKVS_MISS", rc, mpikvs_strerror(rc));
        EXPECT(memcmp(val, was, VS) == 0, "big: a miss changed the value "
               "buffer");
        if (rc == MPIKVS_MISS)
            t.misses++;
        else if (rc == MPIKVS_OK)
            t.hits++;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    stats_ok(kvs, MPIKVS_SCOPE_JOB, &job, "big");
    EXPECT(misses_v0 == 0 || job.evictions > 0,
           "big: %llu misses of keys put before the fence, and no eviction",
           (unsigned long long)misses_v0);
    EXPECT(job.evictions == 0, "big: %llu evictions with %u keys in a "
           "%u-byte table per node", (unsigned long long)job.evictions,
           NKEYS * (unsigned)T.size, BIG);
    check_stats(kvs, &t, 0, "big: after first gets");

    put_main_keys(kvs, 1, &t, "big: updates");
    mt_phase("big: gets after updates");
    for (int r = 0; r < T.size; r++)
        for (uint32_t i = 0; i < NKEYS; i++)
            get_check(kvs, TAG_MAIN, (uint32_t)r, i, 1, &t,
                      "big: get after update");
    EXPECT(t.wrong == 0 && t.stale == 0,
           "big: %llu wrong values, %llu stale values",
           (unsigned long long)t.wrong, (unsigned long long)t.stale);
    MPI_Barrier(MPI_COMM_WORLD);
    stats_ok(kvs, MPIKVS_SCOPE_JOB, &job, "big");
    EXPECT(t.misses == 16 || job.evictions > 0,
           "big: %llu misses (16 absent keys), and no eviction",
           (unsigned long long)t.misses);
    check_stats(kvs, &t, NKEYS, "big: after updates");
}

static void test_bad_calls(mpikvs_t *kvs)
{
    unsigned char  key[KS], val[VS];
    double         in[3] = { 1, 2, 3 };
    int            st[2];
    mpikvs_stats_t s;
    int            rc;

    mt_phase("bad calls");
    mt_make_key(TAG_MAIN, 0, 0, key, KS);
    memset(val, 0, VS);

#define BAD(call, want)                                                  \
    do {                                                                 \
        rc = (call);                                                     \
        EXPECT(rc == (want), "%s = %d (%s), want %s", #call, rc,         \
               mpikvs_strerror(rc), #want);                              \
    } while (0)
#define ERR(call)                                                        \
    do {                                                                 \
        rc = (call);                                                     \
        EXPECT(rc < 0, "%s = %d (%s), want an error", #call, rc,         \
               mpikvs_strerror(rc));                                     \
    } while (0)

    BAD(mpikvs_put(NULL, key, val), MPIKVS_ERR_INVAL);
    BAD(mpikvs_get(NULL, key, val), MPIKVS_ERR_INVAL);
    BAD(mpikvs_put(kvs, NULL, val), MPIKVS_ERR_INVAL);
    EXPECT(mpikvs_last_error(kvs) && *mpikvs_last_error(kvs),
           "mpikvs_last_error(kvs) is empty after a failed mpikvs_put");
    BAD(mpikvs_put(kvs, key, NULL), MPIKVS_ERR_INVAL);
    BAD(mpikvs_get(kvs, NULL, val), MPIKVS_ERR_INVAL);
    BAD(mpikvs_get(kvs, key, NULL), MPIKVS_ERR_INVAL);
    ERR(mpikvs_get_batch(NULL, 2, key, val, st));
    ERR(mpikvs_get_batch(kvs, 1, NULL, val, st));
    ERR(mpikvs_get_batch(kvs, 1, key, NULL, st));
    ERR(mpikvs_get_batch(kvs, 1, key, val, NULL));
    ERR(mpikvs_put_batch(NULL, 1, key, val));
    ERR(mpikvs_put_batch(kvs, 1, NULL, val));
    ERR(mpikvs_put_batch(kvs, 1, key, NULL));
    ERR(mpikvs_stats(NULL, MPIKVS_SCOPE_RANK, &s, sizeof s));
    BAD(mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, NULL,
                     sizeof(mpikvs_stats_t)), MPIKVS_ERR_INVAL);
    BAD(mpikvs_stats(kvs, 7, &s, sizeof s), MPIKVS_ERR_INVAL);
    BAD(mpikvs_stats(kvs, -1, &s, sizeof s), MPIKVS_ERR_INVAL);
    ERR(mpikvs_fence(NULL));
    ERR(mpikvs_round_key(NULL, in, 3, key));
    /* a table opened without a config has no rounding rules */
    BAD(mpikvs_round_key(kvs, in, 3, key), MPIKVS_ERR_CONFIG);
#undef BAD
#undef ERR

    for (int c = MPIKVS_ERR_LAST; c <= MPIKVS_OK + 1; c++) {
        const char *s1 = mpikvs_strerror(c);

        if (c < MPIKVS_OK && c > MPIKVS_ERR_FIRST)
            continue;
        EXPECT(s1 && *s1, "mpikvs_strerror(%d) is empty", c);
    }
    EXPECT(mpikvs_strerror(-ENOMEM) && *mpikvs_strerror(-ENOMEM),
           "mpikvs_strerror(-ENOMEM) is empty");
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A table far too small for its keys: puts evict, gets of evicted keys
 * miss, and no get returns a wrong value. */
static void test_tiny(void)
{
    mpikvs_options_t o = opts(KS, VS, TINY, T.mode);
    mpikvs_t        *kvs;
    struct tally     t = { 0 };
    mpikvs_stats_t   job;
    uint64_t         cap, total;

    kvs = open_ok(&o, "tiny: open");
    if (!kvs)
        return;
    /* one rank at a time, so that every put meets the table as the
     * previous one left it */
    mt_phase("tiny: puts");
    for (int r = 0; r < T.size; r++) {
        if (r == T.rank)
            for (uint32_t i = 0; i < NTINY; i++)
                put_one(kvs, TAG_TINY, (uint32_t)T.rank, i, 0, &t,
                        "tiny: put");
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fence_ok(kvs, "tiny: fence");
    mt_phase("tiny: gets");
    for (int r = 0; r < T.size; r++)
        for (uint32_t i = 0; i < NTINY; i++)
            get_check(kvs, TAG_TINY, (uint32_t)r, i, 0, &t, "tiny: get");
    /* the last put of all cannot have been evicted by a later one */
    {
        struct tally last = { 0 };

        get_check(kvs, TAG_TINY, (uint32_t)(T.size - 1), NTINY - 1, 0, &last,
                  "tiny: last put");
        t.gets++;
        t.hits += last.hits;
        t.misses += last.misses;
        EXPECT(last.hits == 1, "tiny: the last key put (rank %d, %u) "
               "misses", T.size - 1, NTINY - 1);
    }

    /* a slot holds at least a key and a value */
    cap = (uint64_t)T.nnodes * (TINY / (KS + VS));
    total = (uint64_t)T.size * NTINY;
    EXPECT(t.wrong == 0, "tiny: %llu wrong values",
           (unsigned long long)t.wrong);
    EXPECT(t.hits <= cap + 1, "tiny: %llu of %llu keys hit, but %d x %u "
           "bytes hold at most %llu", (unsigned long long)t.hits,
           (unsigned long long)total, T.nnodes, TINY,
           (unsigned long long)cap);
    EXPECT(t.misses > 0, "tiny: no miss among %llu keys",
           (unsigned long long)total);
    MPI_Barrier(MPI_COMM_WORLD);
    stats_ok(kvs, MPIKVS_SCOPE_JOB, &job, "tiny");
    EXPECT(job.puts == total, "tiny: job puts %llu, want %llu",
           (unsigned long long)job.puts, (unsigned long long)total);
    EXPECT(job.evictions >= total - cap && job.evictions <= total,
           "tiny: %llu evictions for %llu puts into at most %llu slots",
           (unsigned long long)job.evictions, (unsigned long long)total,
           (unsigned long long)cap);
    EXPECT(job.updates == 0, "tiny: %llu updates of distinct keys",
           (unsigned long long)job.updates);
    if (T.rank == 0)
        mt_note("tiny: %llu puts, %llu evictions, %llu of %llu gets hit",
                (unsigned long long)job.puts,
                (unsigned long long)job.evictions,
                (unsigned long long)job.hits, (unsigned long long)job.gets);
    check_stats(kvs, &t, 0, "tiny");
    close_ok(&kvs, "tiny: close");
    shm_check("tiny table");
}

/* The smallest usable size_per_node, one bucket of four slots of an
 * 80-byte key, a 104-byte value and a checksum (192 bytes) after a
 * 64-byte header: opens and holds a key; a byte less is refused, naming
 * the smallest (the rule of mpikvs-config(1) and the plugin, shm/plan.h). */
#define SMALLEST 832u

static void test_smallest(void)
{
    mpikvs_options_t o = opts(KS, VS, SMALLEST, T.mode);
    mpikvs_t        *kvs;
    struct tally     t = { 0 };

    kvs = open_ok(&o, "smallest: open at 832 bytes");
    if (kvs) {
        if (T.rank == 0)
            put_one(kvs, TAG_TINY, 0, 7, 3, &t, "smallest: put");
        MPI_Barrier(MPI_COMM_WORLD);
        fence_ok(kvs, "smallest: fence");
        get_check(kvs, TAG_TINY, 0, 7, 3, &t, "smallest: get");
        EXPECT(t.hits == 1 && t.wrong == 0, "smallest: the key put at the "
               "smallest size: %llu hits, %llu wrong",
               (unsigned long long)t.hits, (unsigned long long)t.wrong);
        close_ok(&kvs, "smallest: close");
    }
    o = opts(KS, VS, SMALLEST - 1, T.mode);
    open_fails(&o, MPIKVS_ERR_TOOSMALL, "smallest: open at 831 bytes",
               "options.size_per_node=831 is below the smallest usable "
               "size, 832: one bucket of 832 bytes");
    shm_check("smallest table");
}

/* A bucket that is full gives up the slot written longest ago: right
 * after a put, the key put just before it is still there.  One bucket a
 * node (1000 bytes hold one bucket of four slots of at least 192 bytes
 * but not two), rank 0 alone puts a quick run of keys. */
static void test_evict_order(void)
{
    mpikvs_options_t o = opts(KS, VS, 1000, T.mode);
    mpikvs_t        *kvs;
    enum { RUN = 32 };

    kvs = open_ok(&o, "evict order: open");
    if (!kvs)
        return;
    mt_phase("evict order: puts");
    if (T.rank == 0) {
        struct tally t = { 0 };
        unsigned     lost_prev = 0, lost_self = 0, first = 0;

        for (uint32_t i = 0; i < RUN; i++) {
            struct tally a = { 0 }, b = { 0 };

            put_one(kvs, TAG_TWO, 3000, i, 0, &t, "evict order: put");
            get_check(kvs, TAG_TWO, 3000, i, 0, &a, "evict order: get");
            if (a.hits != 1)
                lost_self++;
            if (i > 0) {
                get_check(kvs, TAG_TWO, 3000, i - 1, 0, &b,
                          "evict order: get previous");
                if (b.hits != 1 && lost_prev++ == 0)
                    first = i;
            }
        }
        EXPECT(lost_self == 0, "evict order: %u of %d keys missed right "
               "after their own put", lost_self, RUN);
        EXPECT(lost_prev == 0, "evict order: %u of %d puts into a full "
               "bucket evicted the key put just before them (first at put "
               "%u), not the slot written longest ago", lost_prev, RUN - 1,
               first);
    }
    close_ok(&kvs, "evict order: close");
    shm_check("evict order");
}

/* Two handles at once are independent. */
static void test_two_handles(void)
{
    mpikvs_options_t o = opts(KS, VS, 1u << 20, T.mode);
    mpikvs_t        *a, *b;
    unsigned char    key[KS], val[VS];
    uint64_t         ver = 0;
    int              rc;

    a = open_ok(&o, "two handles: open a");
    if (!a)
        return;
    b = open_ok(&o, "two handles: open b");
    if (!b) {
        close_ok(&a, "two handles: close a");
        return;
    }
    mt_phase("two handles: puts");
    for (int turn = 0; turn < turns(); turn++) {
        if (my_turn(turn)) {
            mt_make_key(TAG_TWO, (uint32_t)T.rank, 0, key, KS);
            mt_make_value(key, KS, 10, val, VS);
            rc = mpikvs_put(a, key, val);
            EXPECT(rc == MPIKVS_OK, "two handles: put a = %d", rc);
            mt_make_value(key, KS, 20, val, VS);
            rc = mpikvs_put(b, key, val);
            EXPECT(rc == MPIKVS_OK, "two handles: put b = %d", rc);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fence_ok(a, "two handles: fence a");
    fence_ok(b, "two handles: fence b");
    mt_make_key(TAG_TWO, (uint32_t)((T.rank + 1) % T.size), 0, key, KS);
    rc = mpikvs_get(a, key, val);
    EXPECT(rc == MPIKVS_OK && mt_value_ok(key, KS, val, VS, &ver) &&
           ver == 10, "two handles: get a = %d, version %llu, want 10", rc,
           (unsigned long long)ver);
    rc = mpikvs_get(b, key, val);
    EXPECT(rc == MPIKVS_OK && mt_value_ok(key, KS, val, VS, &ver) &&
           ver == 20, "two handles: get b = %d, version %llu, want 20", rc,
           (unsigned long long)ver);
    close_ok(&a, "two handles: close a");
    rc = mpikvs_get(b, key, val);
    EXPECT(rc == MPIKVS_OK && mt_value_ok(key, KS, val, VS, &ver) &&
           ver == 20, "two handles: get b after closing a = %d, version "
           "%llu", rc, (unsigned long long)ver);
    close_ok(&b, "two handles: close b");
    shm_check("two handles");
}

/* The big table's sections (in test_areas the batches run on it too). */
static void getput_big(mpikvs_t *kvs)
{
    test_big(kvs);
    test_bad_calls(kvs);
}

/* Close the big table, then close it again, and close NULL. */
static void close_big(mpikvs_t **kvs)
{
    int rc;

    close_ok(kvs, "big: close");
    mt_phase("big: close again");
    rc = mpikvs_close(kvs);
    EXPECT(rc == MPIKVS_OK || rc == MPIKVS_ERR_INVAL,
           "mpikvs_close of a closed (NULL) handle = %d (%s)", rc,
           mpikvs_strerror(rc));
    rc = mpikvs_close(NULL);
    EXPECT(rc == MPIKVS_OK || rc == MPIKVS_ERR_INVAL,
           "mpikvs_close(NULL) = %d (%s)", rc, mpikvs_strerror(rc));
    shm_check("big table");
}

/* The tables of other sizes, and two at once. */
static void getput_other_tables(void)
{
    test_tiny();
    test_smallest();
    test_evict_order();
    test_two_handles();
}

static void getput_area(void)
{
    mpikvs_t *kvs = open_big();

    if (kvs) {
        getput_big(kvs);
        close_big(&kvs);
    }
    getput_other_tables();
}

TABLE_TEST_MAIN(getput_area)
