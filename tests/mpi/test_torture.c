/*
 * test_torture.c - every rank writes and reads the same few hot keys at
 * once, in the mode given as argv[1] (lockfree | fine-lock | coarse-lock).
 *
 *   test_torture MODE [--ops N] [--keys K]
 *
 * N operations per rank (default 250000 in lockfree, 20000 in the lock
 * modes) on K hot keys (default 64): 40 % single puts, 50 % single gets,
 * 5 % batch gets of 8 keys, 5 % batch puts of 4 (a batch counts as its
 * number of keys).  A value is derived from its key and a version (see
 * mpitest.h), so every hit is checked without a checksum of the test's
 * own: a torn value, a mix of two versions or a value of another key is
 * a wrong value.  Misses are allowed and counted; wrong values are not,
 * in any mode.  Prints the counts and the library's stats.
 *
 * Three phases: a 1 MiB table that holds every hot key, then, with a
 * quarter of the operations, a 4 KiB table where puts evict all the
 * time (evictions race with writers and readers of the same slots);
 * then inserts only: every rank puts keys of its own, all at once, into
 * a few buckets of 64 slots, so that puts of different keys keep picking
 * the same free slot at the same moment.  Every key put and not found
 * afterwards must have been evicted (the library counts each eviction):
 * a key lost otherwise is a lost insert, and there must be none.
 * (Put-if-absent races: test_absent.)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"   /* KS, VS, open_small, claims */

#define TAG_HOT  7u
#define TAG_NEW  8u             /* the insert phase's keys */
#define GETB     8u             /* keys of a batch get */
#define PUTB     4u             /* keys of a batch put */

struct counts {
    uint64_t ops, gets, hits, misses, puts, wrong, errors;
};

static int           rank_, size_;
static unsigned      nkeys = 64;
static unsigned char (*hot)[KS];   /* the hot keys */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*, seeded per rank */
    uint64_t x = *s;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static void check_hit(const unsigned char *key, const unsigned char *val,
                      struct counts *c, const char *what)
{
    uint64_t ver = 0;

    if (mt_value_ok(key, KS, val, VS, &ver))
        return;
    c->wrong++;
    if (c->wrong <= 5) {
        uint64_t k;

        memcpy(&k, key + 8, 8);
        EXPECT(0, "%s: hot key %llu: wrong value (version field %#llx)",
               what, (unsigned long long)k, (unsigned long long)ver);
    }
}

static void error_rc(int rc, struct counts *c, const char *what,
                     mpikvs_t *kvs)
{
    c->errors++;
    if (c->errors <= 5)
        EXPECT(0, "%s = %d (%s): %s", what, rc, mpikvs_strerror(rc),
               mpikvs_last_error(kvs));
}

static void run(mpikvs_t *kvs, uint64_t nops, struct counts *c)
{
    uint64_t      seed = 0x1234567ULL + 0x9e3779b97f4a7c15ULL * (rank_ + 1);
    uint64_t      version = (uint64_t)(rank_ + 1) << 40;
    unsigned char val[PUTB > GETB ? PUTB * VS : GETB * VS];
    unsigned char keys[GETB * KS];
    int           st[GETB];

    while (c->ops < nops) {
        uint64_t r = rng_next(&seed);
        unsigned k = (unsigned)(r % nkeys);
        unsigned op = (unsigned)((r >> 32) % 100);
        int      rc;

        if (op < 40) {
            mt_make_value(hot[k], KS, ++version, val, VS);
            rc = mpikvs_put(kvs, hot[k], val);
            c->ops++;
            c->puts++;
            if (rc != MPIKVS_OK)
                error_rc(rc, c, "mpikvs_put", kvs);
        } else if (op < 90) {
            memset(val, 0xee, VS);
            rc = mpikvs_get(kvs, hot[k], val);
            c->ops++;
            c->gets++;
            if (rc == MPIKVS_OK) {
                c->hits++;
                check_hit(hot[k], val, c, "get");
            } else if (rc == MPIKVS_MISS) {
                c->misses++;
            } else {
                error_rc(rc, c, "mpikvs_get", kvs);
            }
        } else if (op < 95) {
            for (unsigned j = 0; j < GETB; j++) {
                memcpy(keys + j * KS, hot[(k + j * 5) % nkeys], KS);
                st[j] = 12345;
            }
            memset(val, 0xee, GETB * VS);
            rc = mpikvs_get_batch(kvs, GETB, keys, val, st);
            c->ops += GETB;
            c->gets += GETB;
            if (rc != MPIKVS_OK)
                error_rc(rc, c, "mpikvs_get_batch", kvs);
            for (unsigned j = 0; j < GETB; j++) {
                if (st[j] == MPIKVS_OK) {
                    c->hits++;
                    check_hit(keys + j * KS, val + j * VS, c, "get_batch");
                } else if (st[j] == MPIKVS_MISS) {
                    c->misses++;
                } else if (rc == MPIKVS_OK) {
                    error_rc(st[j], c, "mpikvs_get_batch status", kvs);
                }
            }
        } else {
            for (unsigned j = 0; j < PUTB; j++) {
                memcpy(keys + j * KS, hot[(k + j * 3) % nkeys], KS);
                mt_make_value(keys + j * KS, KS, ++version, val + j * VS, VS);
            }
            rc = mpikvs_put_batch(kvs, PUTB, keys, val);
            c->ops += PUTB;
            c->puts += PUTB;
            if (rc != MPIKVS_OK)
                error_rc(rc, c, "mpikvs_put_batch", kvs);
        }
    }
}

/* One table, nops operations per rank on the hot keys, then a quiet
 * read-back and the stats.  tiny: a table that holds fewer slots than
 * there are hot keys, so puts evict all the time. */
static void phase(const char *mode, size_t size_per_node, uint64_t nops,
                  int tiny)
{
    const char      *name = tiny ? "eviction" : "hot keys";
    mpikvs_options_t o;
    mpikvs_t        *kvs = NULL;
    struct counts    c = { 0 }, all;
    mpikvs_stats_t   rank, job;
    double           t0, t1, dt, slow;
    int              rc, ok, allok;

    o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    o.key_size = KS;
    o.value_size = VS;
    o.size_per_node = size_per_node;
    o.mode = mode;
    mt_phase(tiny ? "open (eviction)" : "open");
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    EXPECT(rc == MPIKVS_OK && kvs, "%s: mpikvs_open(%s, %zu bytes) = %d "
           "(%s): %s", name, mode, size_per_node, rc, mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    ok = rc == MPIKVS_OK && kvs;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!allok) {
        if (ok)
            mt_abort("mpikvs_open succeeded on some ranks only");
        return;
    }

    mt_phase(tiny ? "torture (eviction)" : "torture");
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    run(kvs, nops, &c);
    t1 = MPI_Wtime();

    /* quiescent: every hit still checks */
    mt_phase(tiny ? "fence (eviction)" : "fence");
    rc = mpikvs_fence(kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_fence = %d (%s)", name, rc,
           mpikvs_strerror(rc));
    mt_phase(tiny ? "read back (eviction)" : "read back");
    {
        unsigned char val[VS];
        uint64_t      before = c.wrong;

        for (unsigned k = 0; k < nkeys; k++) {
            rc = mpikvs_get(kvs, hot[k], val);
            c.gets++;
            if (rc == MPIKVS_OK) {
                c.hits++;
                check_hit(hot[k], val, &c, "get after fence");
            } else if (rc == MPIKVS_MISS) {
                c.misses++;
            } else {
                error_rc(rc, &c, "mpikvs_get after fence", kvs);
            }
        }
        EXPECT(c.wrong == before, "%s: %llu wrong values after the fence",
               name, (unsigned long long)(c.wrong - before));
    }

    mt_phase(tiny ? "stats (eviction)" : "stats");
    MPI_Barrier(MPI_COMM_WORLD);
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, &rank, sizeof rank);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_stats(rank) = %d", name, rc);
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, &job, sizeof job);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_stats(job) = %d", name, rc);
    MPI_Allreduce(&c, &all, sizeof c / sizeof(uint64_t), MPI_UINT64_T,
                  MPI_SUM, MPI_COMM_WORLD);

    EXPECT(c.wrong == 0, "%s: %llu wrong values in %llu gets (%s)", name,
           (unsigned long long)c.wrong, (unsigned long long)c.gets, mode);
    EXPECT(c.errors == 0, "%s: %llu calls failed", name,
           (unsigned long long)c.errors);
    EXPECT(rank.gets == c.gets && rank.hits == c.hits &&
           rank.misses == c.misses && rank.puts == c.puts,
           "%s: rank stats gets/hits/misses/puts %llu/%llu/%llu/%llu, the "
           "test counted %llu/%llu/%llu/%llu", name,
           (unsigned long long)rank.gets, (unsigned long long)rank.hits,
           (unsigned long long)rank.misses, (unsigned long long)rank.puts,
           (unsigned long long)c.gets, (unsigned long long)c.hits,
           (unsigned long long)c.misses, (unsigned long long)c.puts);
    EXPECT(job.gets == all.gets && job.puts == all.puts &&
           job.gets == job.hits + job.misses &&
           job.direct + job.remote == job.gets,
           "%s: job stats: gets %llu (test %llu) = hits %llu + misses %llu, "
           "direct %llu + remote %llu; puts %llu (test %llu)", name,
           (unsigned long long)job.gets, (unsigned long long)all.gets,
           (unsigned long long)job.hits, (unsigned long long)job.misses,
           (unsigned long long)job.direct, (unsigned long long)job.remote,
           (unsigned long long)job.puts, (unsigned long long)all.puts);
    if (tiny)
        EXPECT(job.evictions > 0, "%s: %u hot keys in %zu bytes a node and "
               "no eviction", name, nkeys, size_per_node);
    else
        /* nkeys keys in 1 MiB: a cache that mostly misses is broken */
        EXPECT(all.hits * 4 >= all.gets, "%s: only %llu hits in %llu gets",
               name, (unsigned long long)all.hits,
               (unsigned long long)all.gets);

    dt = t1 - t0;
    MPI_Allreduce(&dt, &slow, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank_ == 0) {
        printf("torture (%s): mode %s, %d ranks, %u hot keys, %zu bytes a "
               "node: %llu ops (%llu gets, %llu puts) in %.2f s (%.0f "
               "ops/s); hits %llu, misses %llu, wrong %llu; stats: checksum "
               "retries %llu, invalidations %llu, updates %llu, evictions "
               "%llu, direct %llu, remote %llu\n",
               name, mode, size_, nkeys, size_per_node,
               (unsigned long long)all.ops, (unsigned long long)all.gets,
               (unsigned long long)all.puts, slow,
               slow > 0 ? all.ops / slow : 0.0,
               (unsigned long long)all.hits, (unsigned long long)all.misses,
               (unsigned long long)all.wrong,
               (unsigned long long)job.checksum_retries,
               (unsigned long long)job.invalidations,
               (unsigned long long)job.updates,
               (unsigned long long)job.evictions,
               (unsigned long long)job.direct,
               (unsigned long long)job.remote);
        fflush(stdout);
    }

    mt_phase(tiny ? "close (eviction)" : "close");
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK && kvs == NULL, "%s: mpikvs_close = %d (%s)", name,
           rc, mpikvs_strerror(rc));
}

/* Inserts only, racing: rounds of ninsert new keys per rank into 8
 * buckets of 64 slots a node (a fresh table each round), then every
 * rank reads its keys back.  lost = not found - evicted. */
static void insert_phase(const char *mode, unsigned rounds, unsigned ninsert)
{
    unsigned char    key[KS], val[VS];
    uint64_t         missing = 0, evicted = 0, put = 0, errors = 0;
    uint64_t         sums[4], all[4];
    const char      *tp = "";
    bool             atomic_claims;

    for (unsigned r = 0; r < rounds; r++) {
        mpikvs_t        *kvs = open_small(mode, "inserts");
        mpikvs_stats_t   job;
        int              rc;

        tp = mpikvs_transport(kvs);
        mt_phase("inserts");
        MPI_Barrier(MPI_COMM_WORLD);
        for (unsigned i = 0; i < ninsert; i++) {
            mt_make_key(TAG_NEW, (uint32_t)rank_, (uint64_t)r << 32 | i, key,
                        KS);
            mt_make_value(key, KS, 1, val, VS);
            if (mpikvs_put(kvs, key, val) != MPIKVS_OK)
                errors++;
            put++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        mt_phase("read back (inserts)");
        for (unsigned i = 0; i < ninsert; i++) {
            uint64_t ver = 0;
            mt_make_key(TAG_NEW, (uint32_t)rank_, (uint64_t)r << 32 | i, key,
                        KS);
            rc = mpikvs_get(kvs, key, val);
            if (rc == MPIKVS_MISS)
                missing++;
            else if (rc != MPIKVS_OK)
                errors++;
            else
                EXPECT(mt_value_ok(key, KS, val, VS, &ver),
                       "inserts: a wrong value");
        }
        rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, &job, sizeof job);
        EXPECT(rc == MPIKVS_OK, "inserts: mpikvs_stats(job) = %d", rc);
        if (rank_ == 0)
            evicted += job.evictions;
        mt_phase("close (inserts)");
        rc = mpikvs_close(&kvs);
        EXPECT(rc == MPIKVS_OK, "inserts: mpikvs_close = %d (%s)", rc,
               mpikvs_strerror(rc));
    }
    sums[0] = missing;
    sums[1] = evicted;
    sums[2] = put;
    sums[3] = errors;
    MPI_Allreduce(sums, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    atomic_claims = claims(mode, tp);
    EXPECT(all[3] == 0, "inserts: %llu calls failed",
           (unsigned long long)all[3]);
    EXPECT(all[0] >= all[1], "inserts: %llu keys missing, fewer than the "
           "%llu evictions", (unsigned long long)all[0],
           (unsigned long long)all[1]);
    if (atomic_claims)
        EXPECT(all[0] == all[1], "inserts: %llu lost inserts (%llu keys "
               "missing, %llu evicted)", (unsigned long long)(all[0] - all[1]),
               (unsigned long long)all[0], (unsigned long long)all[1]);
    if (rank_ == 0) {
        printf("torture (inserts): mode %s, transport %s, %d ranks, %u "
               "rounds of %u new keys a rank into %u buckets of %u slots a "
               "node: %llu puts, %llu missing, %llu evicted, lost inserts "
               "%llu%s\n",
               mode, tp, size_, rounds, ninsert, SMALL_BUCKETS, SMALL_SLOTS,
               (unsigned long long)all[2], (unsigned long long)all[0],
               (unsigned long long)all[1],
               (unsigned long long)(all[0] - all[1]),
               atomic_claims ? "" : " (not asserted: unclaimed remote puts)");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *mode = "lockfree";
    uint64_t    nops = 0;
    int         status;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            nops = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            nkeys = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (argv[i][0] != '-')
            mode = argv[i];
        else
            nkeys = 0;
    }
    if (nkeys == 0 || (strcmp(mode, "lockfree") != 0 &&
                       strcmp(mode, "fine-lock") != 0 &&
                       strcmp(mode, "coarse-lock") != 0)) {
        if (rank_ == 0)
            fprintf(stderr, "usage: %s [lockfree|fine-lock|coarse-lock] "
                    "[--ops N] [--keys K]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (nops == 0)
        nops = strcmp(mode, "lockfree") == 0 ? 250000 : 20000;
    unsetenv("MPIKVS_CONFIG");

    hot = malloc(nkeys * sizeof *hot);
    if (!hot)
        mt_abort("out of memory");
    for (unsigned k = 0; k < nkeys; k++)
        mt_make_key(TAG_HOT, 0, k, hot[k], KS);

    phase(mode, 1u << 20, nops, 0);
    /* 4 KiB a node: about 20 slots for the hot keys */
    phase(mode, 4096, nops / 4 > 0 ? nops / 4 : 1, 1);
    insert_phase(mode, 8, 100);

    free(hot);
    status = mt_finish();
    MPI_Finalize();
    return status;
}
