/*
 * test_torture.c - every rank writes and reads the same few hot keys at
 * once, in the mode given as argv[1] (lockfree | fine-lock | coarse-lock).
 *
 *   test_torture MODE [--ops N] [--keys K] [--value-size V]
 *                [--far-read auto|bucket|slot[,...]]
 *
 * N operations per rank (default 250000 in lockfree, 20000 in the lock
 * modes, fewer for large values) on K hot keys (default 64) of values of
 * V bytes (default VS of mt_table.h): 40 % single puts, 50 % single gets,
 * 5 % batch gets of 8 keys, 5 % batch puts of 4 (a batch counts as its
 * number of keys).  A value is derived from its key and a version (see
 * mpitest.h: every 8-byte word of it depends on the key, the version and
 * the word's place), and every hit is checked whole, so that a torn
 * value, a mix of two versions, a partial write or a value of another
 * key is a wrong value wherever in the value it shows; a wrong value
 * whose start checks and whose rest does not is also counted torn.
 * Misses are allowed and counted; wrong values are not, in any mode.
 * Prints the counts and the library's stats.
 *
 * Three phases: a table that holds every hot key (1 MiB a node, or room
 * for twice the hot keys when values are large), then, with a quarter of
 * the operations, a table where puts evict all the time (4 KiB a node;
 * for large values half as many slots in the job as hot keys), so that
 * evictions race with writers and readers of the same slots; then
 * inserts only: every rank puts keys of its own, all at once, into a few
 * buckets of many slots (8 of 64 a node; 2 of 8 for large values), so
 * that puts of different keys keep picking the same free slot at the
 * same moment.  Every key put and not found afterwards must have been
 * evicted (the library counts each eviction): a key lost otherwise is a
 * lost insert, and there must be none.  Over more than one node, remote
 * gets must have happened.
 *
 * --far-read opens every table with a job config whose table sets
 * far_read (mpikvs.json(5)); a list runs the three phases once for each.
 * Without it no config is given (the library's default).
 * (Put-if-absent races: test_absent.)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"   /* KS, VS, SMALL_BUCKETS, SMALL_SLOTS, claims */

#define TAG_HOT  7u
#define TAG_NEW  8u             /* the insert phase's keys */
#define GETB     8u             /* keys of a batch get */
#define PUTB     4u             /* keys of a batch put */
#define SLOTS    4u             /* slots a bucket of the hot and eviction
                                 * tables (the library's default) */
#define MAX_FAR  3u             /* far_read settings in one run */

struct counts {
    uint64_t ops, gets, hits, misses, puts, wrong, torn, errors;
};

/* The tables of the phases, sized from the value size and the nodes. */
struct plan {
    size_t   hot_size;          /* a node's bytes: the hot keys' table */
    size_t   evict_size;        /* ... the eviction table */
    unsigned ins_buckets, ins_slots;    /* the insert table, a node */
    unsigned ins_rounds, ins_keys;      /* rounds, new keys a rank each */
};

static int           rank_, size_;
static unsigned      nkeys = 64;
static size_t        vsize = VS;    /* bytes of a value (--value-size) */
static const char   *far_read;      /* the table's far_read, or NULL: no
                                     * config */
static unsigned char (*hot)[KS];    /* the hot keys */
static unsigned char *vbuf;         /* values: a batch's, GETB * vsize */

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

/* The whole value checked on every hit: the first wrong word, anywhere. */
static void check_hit(const unsigned char *key, const unsigned char *val,
                      struct counts *c, const char *what)
{
    uint64_t ver = 0;
    size_t   bad = mt_value_check(key, KS, val, vsize, &ver);

    if (bad == vsize)
        return;
    c->wrong++;
    /* the start is a value of this key at ver, the rest is not */
    if (bad > 8)
        c->torn++;
    if (c->wrong <= 5) {
        uint64_t k;

        memcpy(&k, key + 8, 8);
        EXPECT(0, "%s: hot key %llu: wrong value of %zu bytes from byte %zu "
               "on (version field %#llx)%s", what, (unsigned long long)k,
               vsize, bad, (unsigned long long)ver,
               bad > 8 ? ": torn" : "");
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

/* ------------------------------------------------------------ tables */

static size_t bucket_bytes(unsigned slots)
{
    return kvshm_bucket_size(&(struct kvshm_data_shape){
        KS, vsize, slots, KVSHM_MODE_LOCKFREE});
}

static struct plan plan_tables(int nodes)
{
    size_t      bucket = bucket_bytes(SLOTS);
    size_t      hot_buckets, evict_buckets;
    struct plan p;

    /* room for twice the hot keys in the job: several keys a bucket,
     * mostly hits; never less than today's 1 MiB */
    hot_buckets = (2u * nkeys + SLOTS * nodes - 1) / (SLOTS * nodes);
    p.hot_size = hot_buckets * bucket;
    if (p.hot_size < (1u << 20))
        p.hot_size = 1u << 20;
    /* 4 KiB a node: about 20 slots for the hot keys, where it holds a few
     * buckets; else half as many slots in the job as hot keys, at least
     * a bucket a node */
    if (4096 >= 4 * bucket) {
        p.evict_size = 4096;
    } else {
        evict_buckets = nkeys / (2u * SLOTS * nodes);
        p.evict_size = (evict_buckets ? evict_buckets : 1) * bucket;
    }
    /* inserts: 8 buckets of 64 slots a node where that is small; for
     * large values 2 of 8, into which two ranks' 16 new keys a round
     * (more keys than slots: claims race and evict) */
    if (SMALL_BUCKETS * bucket_bytes(SMALL_SLOTS) <= (1u << 20)) {
        p.ins_buckets = SMALL_BUCKETS;
        p.ins_slots = SMALL_SLOTS;
        p.ins_rounds = 8;
        p.ins_keys = 100;
    } else {
        p.ins_buckets = 2;
        p.ins_slots = 8;
        p.ins_rounds = 2;
        p.ins_keys = 16;
    }
    return p;
}

/* A job config of one table, "torture", whose far_read is far_read, in
 * a file of this rank's (path, removed by the caller once opened). */
static void write_config(char *path, size_t len, const char *mode,
                         unsigned slots)
{
    const char *tmpdir = getenv("TMPDIR");
    FILE       *f;
    int         fd;

    snprintf(path, len, "%s/mpikvs-torture-%d.XXXXXX",
             tmpdir && *tmpdir ? tmpdir : "/tmp", rank_);
    fd = mkstemp(path);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f ||
        fprintf(f,
                "{ \"version\": 1, \"tables\": { \"torture\": {\n"
                "  \"key\": { \"key_size\": %u },\n"
                "  \"value\": { \"value_size\": %zu },\n"
                "  \"slots_per_bucket\": %u, \"mode\": \"%s\",\n"
                "  \"far_read\": \"%s\" } } }\n",
                KS, vsize, slots, mode, far_read) < 0 ||
        fclose(f) != 0)
        mt_abort("cannot write the test config");
}

/* Open a table of size_per_node bytes a node, buckets of slots slots,
 * on every rank (with the config of far_read, if any), or NULL on every
 * rank (counted).  The name is for messages. */
static mpikvs_t *open_table(const char *mode, size_t size_per_node,
                            unsigned slots, const char *name)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;
    mpikvs_t        *kvs = NULL;
    char             path[4096];
    int              rc, ok, allok;

    o.key_size = KS;
    o.value_size = vsize;
    o.size_per_node = size_per_node;
    o.mode = mode;
    o.slots_per_bucket = slots;
    if (far_read) {
        write_config(path, sizeof path, mode, slots);
        o.config = path;
        o.table = "torture";
    }
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (far_read)
        unlink(path);
    EXPECT(rc == MPIKVS_OK && kvs, "%s: mpikvs_open(%s, %zu-byte values, "
           "%zu bytes, far_read %s) = %d (%s): %s", name, mode, vsize,
           size_per_node, far_read ? far_read : "(no config)", rc,
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
    ok = rc == MPIKVS_OK && kvs;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!allok) {
        if (ok)
            mt_abort("mpikvs_open succeeded on some ranks only");
        return NULL;
    }
    return kvs;
}

/* --------------------------------------------------------- the races */

static void run(mpikvs_t *kvs, uint64_t nops, struct counts *c)
{
    uint64_t      seed = 0x1234567ULL + 0x9e3779b97f4a7c15ULL * (rank_ + 1);
    uint64_t      version = (uint64_t)(rank_ + 1) << 40;
    unsigned char *val = vbuf;
    unsigned char keys[GETB * KS];
    int           st[GETB];

    while (c->ops < nops) {
        uint64_t r = rng_next(&seed);
        unsigned k = (unsigned)(r % nkeys);
        unsigned op = (unsigned)((r >> 32) % 100);
        int      rc;

        if (op < 40) {
            mt_make_value(hot[k], KS, ++version, val, vsize);
            rc = mpikvs_put(kvs, hot[k], val);
            c->ops++;
            c->puts++;
            if (rc != MPIKVS_OK)
                error_rc(rc, c, "mpikvs_put", kvs);
        } else if (op < 90) {
            memset(val, 0xee, vsize);
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
            memset(val, 0xee, GETB * vsize);
            rc = mpikvs_get_batch(kvs, GETB, keys, val, st);
            c->ops += GETB;
            c->gets += GETB;
            if (rc != MPIKVS_OK)
                error_rc(rc, c, "mpikvs_get_batch", kvs);
            for (unsigned j = 0; j < GETB; j++) {
                if (st[j] == MPIKVS_OK) {
                    c->hits++;
                    check_hit(keys + j * KS, val + j * vsize, c,
                              "get_batch");
                } else if (st[j] == MPIKVS_MISS) {
                    c->misses++;
                } else if (rc == MPIKVS_OK) {
                    error_rc(st[j], c, "mpikvs_get_batch status", kvs);
                }
            }
        } else {
            for (unsigned j = 0; j < PUTB; j++) {
                memcpy(keys + j * KS, hot[(k + j * 3) % nkeys], KS);
                mt_make_value(keys + j * KS, KS, ++version, val + j * vsize,
                              vsize);
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
    mpikvs_t        *kvs;
    struct counts    c = { 0 }, all;
    mpikvs_stats_t   rank, job;
    double           t0, t1, dt, slow;
    int              rc, nodes;

    mt_phase(tiny ? "open (eviction)" : "open");
    kvs = open_table(mode, size_per_node, SLOTS, name);
    if (!kvs)
        return;

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
        unsigned char *val = vbuf;
        uint64_t       before = c.wrong;

        for (unsigned k = 0; k < nkeys; k++) {
            memset(val, 0xee, vsize);
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
    nodes = mt_node_count();
    MPI_Barrier(MPI_COMM_WORLD);
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, &rank, sizeof rank);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_stats(rank) = %d", name, rc);
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, &job, sizeof job);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_stats(job) = %d", name, rc);
    MPI_Allreduce(&c, &all, sizeof c / sizeof(uint64_t), MPI_UINT64_T,
                  MPI_SUM, MPI_COMM_WORLD);

    EXPECT(c.wrong == 0, "%s: %llu wrong values (%llu torn) in %llu gets "
           "(%s)", name, (unsigned long long)c.wrong,
           (unsigned long long)c.torn, (unsigned long long)c.gets, mode);
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
    EXPECT(all.hits > 0, "%s: no hit in %llu gets", name,
           (unsigned long long)all.gets);
    /* the hot keys are homed on every node: some gets went remote */
    if (nodes > 1)
        EXPECT(job.remote > 0, "%s: %d nodes and no remote get", name,
               nodes);
    if (tiny)
        EXPECT(job.evictions > 0, "%s: %u hot keys in %zu bytes a node and "
               "no eviction", name, nkeys, size_per_node);
    else
        /* nkeys keys in room for twice as many: a cache that mostly
         * misses is broken */
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
        printf("torture (%s): %zu-byte values, far_read %s: torn %llu, "
               "moved %llu bytes (%.0f a remote get), copies %llu (%.2f a "
               "remote get)\n",
               name, vsize, far_read ? far_read : "(no config)",
               (unsigned long long)all.torn, (unsigned long long)job.moved,
               job.remote ? (double)job.moved / job.remote : 0.0,
               (unsigned long long)job.copies,
               job.remote ? (double)job.copies / job.remote : 0.0);
        fflush(stdout);
    }

    mt_phase(tiny ? "close (eviction)" : "close");
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK && kvs == NULL, "%s: mpikvs_close = %d (%s)", name,
           rc, mpikvs_strerror(rc));
}

/* Inserts only, racing: rounds of ninsert new keys per rank into nbuckets
 * buckets of nslots slots a node (a fresh table each round), then every
 * rank reads its keys back.  lost = not found - evicted. */
static void insert_phase(const char *mode, const struct plan *p)
{
    unsigned char    key[KS], *val = vbuf;
    uint64_t         missing = 0, evicted = 0, put = 0, errors = 0;
    uint64_t         wrong = 0;
    uint64_t         sums[5], all[5];
    const char      *tp = "";
    bool             atomic_claims;

    for (unsigned r = 0; r < p->ins_rounds; r++) {
        mpikvs_t        *kvs;
        mpikvs_stats_t   job;
        int              rc;

        mt_phase("open (inserts)");
        kvs = open_table(mode, p->ins_buckets * bucket_bytes(p->ins_slots),
                         p->ins_slots, "inserts");
        if (!kvs)
            mt_abort("mpikvs_open failed");
        tp = mpikvs_transport(kvs);
        mt_phase("inserts");
        MPI_Barrier(MPI_COMM_WORLD);
        for (unsigned i = 0; i < p->ins_keys; i++) {
            mt_make_key(TAG_NEW, (uint32_t)rank_, (uint64_t)r << 32 | i, key,
                        KS);
            mt_make_value(key, KS, 1, val, vsize);
            if (mpikvs_put(kvs, key, val) != MPIKVS_OK)
                errors++;
            put++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        mt_phase("read back (inserts)");
        for (unsigned i = 0; i < p->ins_keys; i++) {
            uint64_t ver = 0;

            mt_make_key(TAG_NEW, (uint32_t)rank_, (uint64_t)r << 32 | i, key,
                        KS);
            memset(val, 0xee, vsize);
            rc = mpikvs_get(kvs, key, val);
            if (rc == MPIKVS_MISS) {
                missing++;
            } else if (rc != MPIKVS_OK) {
                errors++;
            } else if (mt_value_check(key, KS, val, vsize, &ver) != vsize ||
                       ver != 1) {
                wrong++;
            }
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
    sums[4] = wrong;
    MPI_Allreduce(sums, all, 5, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    atomic_claims = claims(mode, tp);
    EXPECT(all[3] == 0, "inserts: %llu calls failed",
           (unsigned long long)all[3]);
    EXPECT(all[4] == 0, "inserts: %llu wrong values read back",
           (unsigned long long)all[4]);
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
               mode, tp, size_, p->ins_rounds, p->ins_keys, p->ins_buckets,
               p->ins_slots, (unsigned long long)all[2],
               (unsigned long long)all[0], (unsigned long long)all[1],
               (unsigned long long)(all[0] - all[1]),
               atomic_claims ? "" : " (not asserted: unclaimed remote puts)");
        fflush(stdout);
    }
}

static int usage(const char *argv0)
{
    if (rank_ == 0)
        fprintf(stderr, "usage: %s [lockfree|fine-lock|coarse-lock] "
                "[--ops N] [--keys K] [--value-size V] "
                "[--far-read auto|bucket|slot[,...]]\n", argv0);
    MPI_Finalize();
    return 2;
}

/* "a,b,c" into at most MAX_FAR settings (in place); 0 when bad. */
static unsigned split_far(char *list, const char **out)
{
    unsigned n = 0;

    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_FAR || (strcmp(tok, "auto") != 0 &&
                             strcmp(tok, "bucket") != 0 &&
                             strcmp(tok, "slot") != 0))
            return 0;
        out[n++] = tok;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *mode = "lockfree";
    const char *fars[MAX_FAR] = { NULL };
    unsigned    nfar = 1;
    uint64_t    nops = 0;
    struct plan plan;
    int         status, bad = 0;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            nops = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            nkeys = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--value-size") == 0 && i + 1 < argc)
            vsize = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--far-read") == 0 && i + 1 < argc)
            bad |= (nfar = split_far(argv[++i], fars)) == 0;
        else if (argv[i][0] != '-')
            mode = argv[i];
        else
            bad = 1;
    }
    /* a value holds its version (8 bytes) */
    if (bad || nkeys == 0 || vsize < 8 ||
        (strcmp(mode, "lockfree") != 0 && strcmp(mode, "fine-lock") != 0 &&
         strcmp(mode, "coarse-lock") != 0))
        return usage(argv[0]);
    if (nops == 0) {
        nops = strcmp(mode, "lockfree") == 0 ? 250000 : 20000;
        /* about as many bytes as today's values move, at least 1000 */
        if (vsize > VS)
            nops = nops * VS / vsize > 1000 ? nops * VS / vsize : 1000;
    }
    unsetenv("MPIKVS_CONFIG");

    hot = malloc(nkeys * sizeof *hot);
    vbuf = malloc(GETB * vsize);
    if (!hot || !vbuf)
        mt_abort("out of memory");
    for (unsigned k = 0; k < nkeys; k++)
        mt_make_key(TAG_HOT, 0, k, hot[k], KS);
    plan = plan_tables(mt_node_count());

    for (unsigned f = 0; f < nfar; f++) {
        far_read = fars[f];
        phase(mode, plan.hot_size, nops, 0);
        phase(mode, plan.evict_size, nops / 4 > 0 ? nops / 4 : 1, 1);
        insert_phase(mode, &plan);
    }

    free(vbuf);
    free(hot);
    status = mt_finish();
    MPI_Finalize();
    return status;
}
