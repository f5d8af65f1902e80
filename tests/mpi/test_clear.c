/*
 * test_clear.c - mpikvs_clear (run-clear-tests.sh runs it): np 2 on
 * MPIKVS_VIRTUAL_NODES=2, each rank a node and its leader.
 *
 *   test_clear MODE CACHING DIR   (MODE lockfree or fine-lock, CACHING
 *                                  off or always; DIR for save files)
 *
 *   fill:    every rank puts three times as many keys as the two nodes
 *            have slots (versions 1), so that every bucket is full; then
 *            each rank gets every key and keeps which hit (entries on
 *            both nodes, seen by foreach_local).  always: half of them
 *            are gotten before a fence, which publishes them: the node
 *            tier answers them (tier hits, get_ref); the other half
 *            after it, remote hits the next fence would publish.
 *   save:    the table to DIR/before.
 *   clear:   every key misses on both ranks, the tier's too (no tier
 *            hit, get_ref misses), the next fence publishes nothing (the
 *            remote hits of before the clear were dropped);
 *            foreach_local visits nothing; a save writes a file of 0
 *            entries; each node's region and each handle say
 *            generation 1.
 *   load:    DIR/before into the cleared table without
 *            MPIKVS_LOAD_MERGE (it holds no entries): every entry is
 *            loaded and none evicts (the slots of before the clear are
 *            free to a put); the keys that hit before hit again with
 *            their values.
 *   puts:    after a second clear, new keys, at most a bucket's slots of
 *            them per bucket (chosen by their home bucket), are put one
 *            rank at a time: none evicts, every one hits from both
 *            ranks, the old keys miss.
 *   twice:   two clears in a row: both succeed, generation 4, the new
 *            keys miss.
 *   batch:   rank 0 starts a batch and does not wait for it; both ranks
 *            call mpikvs_clear: MPIKVS_ERR_INVAL on both, the text naming
 *            rank 0's one batch in flight; the table is not cleared.
 *            After the wait the clear succeeds.
 *
 * Built from the library's sources (tests/mpi/local.mk): it picks keys
 * by their home bucket (kvs_key_make) and reads the regions' generation.
 * See mpitest.h for the output.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "mt_key_home.h"

#define KS        16u
#define VS        32u
#define TAG_FILL  0x636c4641u   /* "clFA" */
#define TAG_NEW   0x636c4e57u   /* "clNW" */
#define NEW_MAX   4096u

static int         rank, size;
static const char *mode, *caching, *dir;
static bool        tier;
static uint32_t    nfill;        /* fill keys per rank */
static bool       *hit;          /* [size * nfill]: hit after the fill */

static mpikvs_t *open_table(void)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;
    char path[512];
    mpikvs_t *kvs = NULL;
    FILE *f;
    int rc, ok, all;

    snprintf(path, sizeof(path), "%s/clear-%d.json", dir, rank);
    f = fopen(path, "w");
    if (!f ||
        fprintf(f,
                "{ \"version\": 1, \"tables\": { \"t\": {\n"
                "  \"size\": \"%s\", \"mode\": \"%s\",\n"
                "  \"key\": { \"key_size\": %u },\n"
                "  \"value\": { \"value_size\": %u }%s%s%s } } }\n",
                /* 64K of buckets either way: the tier's share is its
                 * size */
                tier ? "320K" : "64K", mode, KS, VS,
                tier ? ",\n  \"tier\": { \"enabled\": true, \"size\": "
                       "\"256K\", \"caching\": \""
                     : "",
                tier ? caching : "", tier ? "\" }" : "") < 0 ||
        fclose(f) != 0)
        mt_abort("cannot write the test config");
    o.config = path;
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    EXPECT(rc == MPIKVS_OK, "open: %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    ok = rc == MPIKVS_OK;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        mt_abort("mpikvs_open failed somewhere");
    unlink(path);
    return kvs;
}

static mpikvs_stats_t job_stats(mpikvs_t *kvs)
{
    mpikvs_stats_t s;

    if (mpikvs_stats(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &s,
                     sizeof(s)) != MPIKVS_OK)
        mt_abort("mpikvs_stats failed");
    return s;
}

static void ok_call(int rc, mpikvs_t *kvs, const char *what)
{
    EXPECT(rc == MPIKVS_OK, "%s: %d (%s): %s", what, rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
}

static void clear_ok(mpikvs_t *kvs, const char *what)
{
    ok_call(mpikvs_clear(kvs), kvs, what);
}

/* The generation of this node's region and of the handle. */
static void generation_is(mpikvs_t *kvs, uint32_t want, const char *when)
{
    const struct kvshm_data_control *c =
        (const struct kvshm_data_control *)((const char *)kvs->region->base +
                                            KVSHM_DATA_CONTROL_OFFSET);
    uint32_t region = __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);

    EXPECT(region == want && kvs->generation == want,
           "%s: generation %u in the region, %u in the handle, want %u", when,
           region, kvs->generation, want);
}

/* Get fill key i of rank r: 1 hit (with a right value of version 1),
 * 0 miss. */
static int get_fill(mpikvs_t *kvs, int r, uint32_t i)
{
    unsigned char key[KS], value[VS];
    uint64_t ver = 0;
    int rc;

    mt_make_key(TAG_FILL, (uint32_t)r, i, key, KS);
    rc = mpikvs_get(kvs, key, value);
    if (rc == MPIKVS_MISS)
        return 0;
    EXPECT(rc == MPIKVS_OK, "get: %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    EXPECT(rc != MPIKVS_OK || (mt_value_ok(key, KS, value, VS, &ver) &&
                               ver == 1),
           "fill key %d/%u: a wrong value (version %llu)", r, i,
           (unsigned long long)ver);
    return rc == MPIKVS_OK;
}

static int count_entry(const void *key, const void *value, void *arg)
{
    (void)key;
    (void)value;
    (*(uint64_t *)arg)++;
    return 0;
}

static uint64_t local_entries(mpikvs_t *kvs)
{
    uint64_t n = 0;

    ok_call(mpikvs_foreach_local(kvs, count_entry, &n), kvs,
            "foreach_local");
    return n;
}

/* A key of another node whose value the tier should answer. */
static bool remote_fill(mpikvs_t *kvs, int r, uint32_t i)
{
    unsigned char key[KS];
    struct kvs_key k;

    mt_make_key(TAG_FILL, (uint32_t)r, i, key, KS);
    kvs_key_make(kvs, key, &k);
    return k.node != kvs->node;
}

static void fill(mpikvs_t *kvs)
{
    unsigned char key[KS], value[VS];
    uint64_t hits = 0, tier_hits, refs = 0;
    mpikvs_stats_t a, b;

    mt_phase("fill: put");
    for (uint32_t i = 0; i < nfill; i++) {
        mt_make_key(TAG_FILL, (uint32_t)rank, i, key, KS);
        mt_make_value(key, KS, 1, value, VS);
        ok_call(mpikvs_put(kvs, key, value), kvs, "fill: put");
    }
    ok_call(mpikvs_fence(kvs), kvs, "fill: fence");

    mt_phase("fill: get");
    /* always: the first half before a fence publishes it, the second
     * half after it, remote hits the tier has not published */
    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < nfill / 2; i++)
            hit[(size_t)r * nfill + i] = get_fill(kvs, r, i);
    ok_call(mpikvs_fence(kvs), kvs, "fill: fence");
    a = job_stats(kvs);
    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < nfill; i++) {
            int h = get_fill(kvs, r, i);
            if (i < nfill / 2)
                EXPECT(h == hit[(size_t)r * nfill + i],
                       "fill key %d/%u: %s before the fence, %s after", r,
                       i, hit[(size_t)r * nfill + i] ? "hit" : "missed",
                       h ? "hit" : "missed");
            hit[(size_t)r * nfill + i] = h;
            hits += (uint64_t)h;
        }
    b = job_stats(kvs);
    tier_hits = b.tier_hits - a.tier_hits;
    EXPECT(hits > (uint64_t)size * nfill / 8,
           "fill: %llu of %llu keys hit", (unsigned long long)hits,
           (unsigned long long)size * nfill);
    EXPECT(!tier || tier_hits > 0,
           "fill: the node tier (always) answered none of %llu hits",
           (unsigned long long)hits);
    if (tier)
        for (int r = 0; r < size; r++)
            for (uint32_t i = 0; i < nfill / 2; i++) {
                const void *ref;
                if (!hit[(size_t)r * nfill + i] || !remote_fill(kvs, r, i))
                    continue;
                mt_make_key(TAG_FILL, (uint32_t)r, i, key, KS);
                refs += mpikvs_get_ref(kvs, key, &ref) == MPIKVS_OK;
            }
    EXPECT(!tier || refs > 0, "fill: get_ref found no key in the tier");
    uint64_t local = local_entries(kvs);
    EXPECT(local > 0, "fill: node %u holds no entry", kvs->node);
    mt_note("fill: %llu of %llu keys hit, %llu from the tier, %llu "
            "entries on node %u, nbuckets %llu",
            (unsigned long long)hits, (unsigned long long)size * nfill,
            (unsigned long long)tier_hits, (unsigned long long)local,
            kvs->node, (unsigned long long)kvs->tab.nbuckets);
}

/* After a clear: every fill key misses, the tier's included. */
static void all_miss(mpikvs_t *kvs, const char *when)
{
    uint64_t hits = 0, refs = 0;
    unsigned char key[KS];
    mpikvs_stats_t a, b;

    a = job_stats(kvs);
    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < nfill; i++) {
            const void *ref;
            hits += (uint64_t)get_fill(kvs, r, i);
            mt_make_key(TAG_FILL, (uint32_t)r, i, key, KS);
            refs += mpikvs_get_ref(kvs, key, &ref) == MPIKVS_OK;
        }
    b = job_stats(kvs);
    EXPECT(hits == 0, "%s: %llu fill keys hit", when,
           (unsigned long long)hits);
    EXPECT(refs == 0, "%s: get_ref found %llu keys", when,
           (unsigned long long)refs);
    EXPECT(b.tier_hits == a.tier_hits, "%s: %llu tier hits", when,
           (unsigned long long)(b.tier_hits - a.tier_hits));
}

static void save(mpikvs_t *kvs, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    ok_call(mpikvs_save(kvs, path), kvs, name);
}

static void after_clear(mpikvs_t *kvs, const char *before)
{
    char empty[512];
    mpikvs_load_report_t r = {0};
    mpikvs_stats_t a, b;
    uint64_t hits = 0, want = 0;

    mt_phase("clear: checks");
    generation_is(kvs, 1, "after the clear");
    all_miss(kvs, "after the clear");
    a = job_stats(kvs);
    ok_call(mpikvs_fence(kvs), kvs, "after the clear: fence");
    b = job_stats(kvs);
    EXPECT(b.tier_published == a.tier_published,
           "after the clear: the fence published %llu old remote hits",
           (unsigned long long)(b.tier_published - a.tier_published));
    all_miss(kvs, "after the clear and a fence");
    EXPECT(local_entries(kvs) == 0, "after the clear: foreach_local "
                                    "visits entries of node %u",
           kvs->node);
    save(kvs, "cleared", empty, sizeof(empty));
    ok_call(mpikvs_load(kvs, empty, MPIKVS_LOAD_MERGE, &r), kvs,
            "load of the cleared table's save");
    EXPECT(r.entries == 0 && r.loaded == 0,
           "the cleared table's save holds %llu entries",
           (unsigned long long)r.entries);

    mt_phase("load of the save before the clear");
    a = job_stats(kvs);
    ok_call(mpikvs_load(kvs, before, 0, &r), kvs,
            "load (no merge) into the cleared table");
    b = job_stats(kvs);
    for (int q = 0; q < size; q++)
        for (uint32_t i = 0; i < nfill; i++)
            want += hit[(size_t)q * nfill + i];
    EXPECT(r.entries == want && r.loaded == want && r.not_fitting == 0,
           "load: %llu entries, %llu loaded, %llu not fitting; the table "
           "held %llu",
           (unsigned long long)r.entries, (unsigned long long)r.loaded,
           (unsigned long long)r.not_fitting, (unsigned long long)want);
    EXPECT(b.evictions == a.evictions, "load: %llu evictions",
           (unsigned long long)(b.evictions - a.evictions));
    for (int q = 0; q < size; q++)
        for (uint32_t i = 0; i < nfill; i++)
            hits += (uint64_t)(hit[(size_t)q * nfill + i] &&
                               get_fill(kvs, q, i));
    EXPECT(hits == want, "after the load: %llu of %llu keys hit",
           (unsigned long long)hits, (unsigned long long)want);
}

/* New keys, at most a bucket's slots of them per home bucket: the
 * first n of the row (TAG_NEW, 0, b) that fit. */
static uint32_t pick_new(mpikvs_t *kvs, uint32_t *b_of, uint32_t n)
{
    uint64_t buckets = kvs->tab.nbuckets * (uint64_t)kvs->nnodes;
    uint8_t *count = calloc(buckets, 1);
    unsigned char key[KS];
    uint32_t got = 0;

    if (!count)
        mt_abort("out of memory");
    for (uint32_t b = 0; got < n && b < 16 * n; b++) {
        struct kvs_key k;
        mt_make_key(TAG_NEW, 0, b, key, KS);
        kvs_key_make(kvs, key, &k);
        uint8_t *c = &count[(uint64_t)k.node * kvs->tab.nbuckets + k.bucket];
        if (*c < kvs->tab.slots) {
            (*c)++;
            b_of[got++] = b;
        }
    }
    free(count);
    return got;
}

static void new_puts(mpikvs_t *kvs)
{
    static uint32_t b_of[NEW_MAX];
    uint32_t n = (uint32_t)(kvs->tab.nbuckets * kvs->tab.slots *
                            kvs->nnodes / 2);
    unsigned char key[KS], value[VS];
    uint64_t hits = 0, ver;
    mpikvs_stats_t a, b;

    mt_phase("puts after a clear");
    clear_ok(kvs, "second clear");
    generation_is(kvs, 2, "after the second clear");
    n = pick_new(kvs, b_of, n < NEW_MAX ? n : NEW_MAX);
    a = job_stats(kvs);
    /* one rank at a time: two unclaimed puts (the mpi transport) into
     * one free slot at once may lose a key (mpikvs(7)) */
    for (int turn = 0; turn < size; turn++) {
        for (uint32_t j = (uint32_t)turn; turn == rank && j < n;
             j += (uint32_t)size) {
            mt_make_key(TAG_NEW, 0, b_of[j], key, KS);
            mt_make_value(key, KS, 2, value, VS);
            ok_call(mpikvs_put(kvs, key, value), kvs, "new put");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    b = job_stats(kvs);
    EXPECT(b.evictions == a.evictions,
           "%llu of %u new puts evicted: the slots of before the clear "
           "are free",
           (unsigned long long)(b.evictions - a.evictions), n);
    for (uint32_t j = 0; j < n; j++) {
        mt_make_key(TAG_NEW, 0, b_of[j], key, KS);
        int rc = mpikvs_get(kvs, key, value);
        EXPECT(rc == MPIKVS_OK && mt_value_ok(key, KS, value, VS, &ver) &&
                   ver == 2,
               "new key %u: %d (%s)", b_of[j], rc, mpikvs_strerror(rc));
        hits += rc == MPIKVS_OK;
    }
    all_miss(kvs, "after the second clear");
    mt_note("puts: %llu of %u new keys hit, %llu evictions",
            (unsigned long long)hits, n,
            (unsigned long long)(b.evictions - a.evictions));

    mt_phase("two clears in a row");
    clear_ok(kvs, "third clear");
    clear_ok(kvs, "fourth clear");
    generation_is(kvs, 4, "after two clears in a row");
    for (uint32_t j = 0; j < n; j++) {
        mt_make_key(TAG_NEW, 0, b_of[j], key, KS);
        int rc = mpikvs_get(kvs, key, value);
        EXPECT(rc == MPIKVS_MISS, "new key %u after two clears: %d (%s)",
               b_of[j], rc, mpikvs_strerror(rc));
    }
}

static void batch_in_flight(mpikvs_t *kvs)
{
    unsigned char keys[8 * KS], values[8 * VS], key[KS], value[VS];
    int status[8], rc;
    mpikvs_request_t req;

    mt_phase("clear with a batch in flight");
    mt_make_key(TAG_NEW, 1, 0, key, KS);
    mt_make_value(key, KS, 3, value, VS);
    ok_call(mpikvs_put(kvs, key, value), kvs, "put before the batch");
    MPI_Barrier(MPI_COMM_WORLD);
    for (uint32_t i = 0; i < 8; i++)
        mt_make_key(TAG_NEW, 2, i, keys + i * KS, KS);
    if (rank == 0)
        ok_call(mpikvs_get_batch_start(kvs, 8, keys, values, status, &req),
                kvs, "batch start");
    rc = mpikvs_clear(kvs);
    EXPECT(rc == MPIKVS_ERR_INVAL &&
               strstr(mpikvs_last_error(kvs), "rank 0 has 1 batch in "
                                              "flight"),
           "clear with rank 0's batch in flight: %d (%s): %s", rc,
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    if (rank == 0)
        ok_call(mpikvs_wait(kvs, &req), kvs, "batch wait");
    rc = mpikvs_get(kvs, key, value);
    EXPECT(rc == MPIKVS_OK, "the refused clear cleared: %d (%s)", rc,
           mpikvs_strerror(rc));
    generation_is(kvs, 4, "after the refused clear");
    MPI_Barrier(MPI_COMM_WORLD);
    clear_ok(kvs, "clear after the wait");
    rc = mpikvs_get(kvs, key, value);
    EXPECT(rc == MPIKVS_MISS, "after the clear: %d (%s)", rc,
           mpikvs_strerror(rc));
}

int main(int argc, char **argv)
{
    char before[512];
    mpikvs_t *kvs;
    int rc;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 || (strcmp(argv[2], "off") && strcmp(argv[2], "always")))
        mt_abort("usage: test_clear MODE off|always DIR");
    mode = argv[1];
    caching = argv[2];
    dir = argv[3];
    tier = strcmp(caching, "off") != 0;

    kvs = open_table();
    generation_is(kvs, 0, "a new table");
    /* three times the slots of both nodes: every bucket full */
    nfill = (uint32_t)(3 * kvs->tab.nbuckets * kvs->tab.slots * kvs->nnodes /
                       (uint64_t)size);
    if (!(hit = calloc((size_t)size * nfill, sizeof(*hit))))
        mt_abort("out of memory");
    fill(kvs);
    save(kvs, "before", before, sizeof(before));

    mt_phase("clear");
    clear_ok(kvs, "clear");
    after_clear(kvs, before);
    new_puts(kvs);
    batch_in_flight(kvs);

    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close: %d (%s)", rc, mpikvs_strerror(rc));
    free(hit);
    rc = mt_finish();
    MPI_Finalize();
    return rc;
}
