/*
 * test_tier.c - the node tier inside the DHT, under mpirun; it means
 * something with MPIKVS_VIRTUAL_NODES=2 (one node: no key is another
 * node's, the tier stays empty, and that is checked too).
 *
 *   always:  remote hits of epoch 1 are published at the fence and epoch 2
 *            reads them with no remote get; mpikvs_get_ref points at them;
 *            a put updates the home and the tier keeps its value.
 *   user:    mpikvs_tier_invalidate empties the tier; the next get reads
 *            the home's new value.
 *   full:    a tier too small for the remote hits takes what fits, drops
 *            the rest (counted), and every value stays right.
 *   readers: a thread on every rank reads the node tier through shm/
 *            while the leaders publish at fences: every value it finds is
 *            whole (two nodes or more, lockfree mode).
 *   stalled: a tier left in mid-publication (its writer died) is a miss
 *            of the tier: every get reads the key's home, with no error,
 *            and a rank waits out the stall once per epoch, not per get
 *            (two nodes, two ranks, lockfree mode).
 *
 *   large:   (--value-size N, alone) the always phase's epochs with a few
 *            values of N bytes (up to 1 MiB): remote hits published at
 *            the fence, epoch 2 and get_ref find them whole.
 *
 * Usage: test_tier MODE [--value-size N] (MODE lockfree, fine-lock or
 * coarse-lock).  The regions go to a private directory under /dev/shm,
 * removed at the end.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

#include "mpikvs.h"
#include "mpitest.h"
#include "held.h"
#include "tier.h"

#define KS        16u
#define VS        32u
#define NKEYS     150u      /* per rank */
#define TAG_TIER  0x7431u

static int    rank, size, vnodes;
static size_t vsize = VS;   /* the tables' values; --value-size */
static char   shm_dir[128];
static const char *mode;

static bool T_lockmode(void)
{
    return strcmp(mode, "lockfree") != 0;
}

static void write_config(char *path, size_t len, const char *table_size,
                         const char *tier_size, const char *caching)
{
    FILE *f;

    snprintf(path, len, "%s/tier-%s-%d.json", shm_dir, caching, rank);
    f = fopen(path, "w");
    if (!f ||
        fprintf(f,
                "{ \"version\": 1, \"tables\": { \"t\": {\n"
                "  \"size\": \"%s\", \"mode\": \"%s\",\n"
                "  \"key\": { \"key_size\": %u },\n"
                "  \"value\": { \"value_size\": %u },\n"
                "  \"tier\": { \"enabled\": true, \"size\": \"%s\",\n"
                "            \"caching\": \"%s\" } } } }\n",
                table_size, mode, KS, (unsigned)vsize, tier_size,
                caching) < 0 ||
        fclose(f) != 0)
        mt_abort("cannot write the test config");
}

static mpikvs_t *open_with(const char *table_size, const char *tier_size,
                           const char *caching)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;
    char path[256];
    mpikvs_t *kvs = NULL;
    int rc, ok, all;

    write_config(path, sizeof(path), table_size, tier_size, caching);
    o.config = path;
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    EXPECT(rc == MPIKVS_OK, "open (%s, tier %s): %d (%s): %s", caching,
           tier_size, rc, mpikvs_strerror(rc), mpikvs_last_error(NULL));
    ok = rc == MPIKVS_OK;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        mt_abort("mpikvs_open failed somewhere");
    unlink(path);
    return kvs;
}

static void stats(mpikvs_t *kvs, int scope, mpikvs_stats_t *s)
{
    int rc = mpikvs_stats(kvs, scope, s, sizeof *s);
    if (rc != MPIKVS_OK)
        mt_abort("mpikvs_stats failed");
}

static void fence(mpikvs_t *kvs)
{
    int rc = mpikvs_fence(kvs);
    EXPECT(rc == MPIKVS_OK, "fence: %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
}

/* Every rank puts its keys, one rank at a time: two lock-free puts into
 * one bucket at once may take the same free slot, and a lost key would
 * blur what these tests count. */
static void put_all(mpikvs_t *kvs, uint32_t tag, uint64_t version)
{
    unsigned char key[KS], value[VS];

    for (int turn = 0; turn < size; turn++) {
        for (uint32_t i = 0; turn == rank && i < NKEYS; i++) {
            mt_make_key(tag, (uint32_t)rank, i, key, KS);
            mt_make_value(key, KS, version, value, VS);
            int rc = mpikvs_put(kvs, key, value);
            EXPECT(rc == MPIKVS_OK, "put: %d (%s)", rc, mpikvs_strerror(rc));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Read every rank's keys; count versions seen, and wrong values. */
struct seen {
    uint64_t hits, misses, wrong, version[3];
};

static struct seen get_all(mpikvs_t *kvs)
{
    unsigned char key[KS], value[VS];
    struct seen s = {0};

    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < NKEYS; i++) {
            uint64_t v = 0;
            mt_make_key(TAG_TIER, (uint32_t)r, i, key, KS);
            int rc = mpikvs_get(kvs, key, value);
            if (rc == MPIKVS_MISS) {
                s.misses++;
                continue;
            }
            EXPECT(rc == MPIKVS_OK, "get: %d (%s): %s", rc,
                   mpikvs_strerror(rc), mpikvs_last_error(kvs));
            if (rc != MPIKVS_OK)
                continue;
            if (!mt_value_ok(key, KS, value, VS, &v) || v > 2)
                s.wrong++;
            else
                s.version[v]++, s.hits++;
        }
    return s;
}

#define ALL_KEYS ((uint64_t)size * NKEYS)

static void test_always(void)
{
    mpikvs_t *kvs;
    mpikvs_stats_t a, b, c;
    struct seen s;
    unsigned char key[KS], expect[VS];
    uint64_t remote_hits, refs = 0, bad_refs = 0, own_refs = 0;

    mt_phase("always: open, put, fence");
    kvs = open_with("8M", "2M", "always");
    put_all(kvs, TAG_TIER, 1);
    fence(kvs);

    mt_phase("always: epoch 1");
    stats(kvs, MPIKVS_SCOPE_RANK, &a);
    s = get_all(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &b);
    EXPECT(s.hits == ALL_KEYS && s.wrong == 0,
           "always: epoch 1: %llu of %llu hits, %llu wrong",
           (unsigned long long)s.hits, (unsigned long long)ALL_KEYS,
           (unsigned long long)s.wrong);
    /* the tier is asked about other nodes' keys only: its misses in
     * epoch 1 count them (the lock modes reach their own node through
     * MPI too, so the remote counter does not) */
    remote_hits = b.tier_misses - a.tier_misses;
    EXPECT(b.tier_hits == a.tier_hits,
           "always: epoch 1 found %llu keys in an empty tier",
           (unsigned long long)(b.tier_hits - a.tier_hits));
    EXPECT(vnodes < 2 || remote_hits > 0,
           "always: no key of another node among %llu",
           (unsigned long long)ALL_KEYS);
    EXPECT(vnodes >= 2 || remote_hits == 0,
           "always: one node, yet %llu remote gets",
           (unsigned long long)remote_hits);

    mt_phase("always: fence publishes; epoch 2");
    fence(kvs);
    s = get_all(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &c);
    EXPECT(s.hits == ALL_KEYS && s.wrong == 0,
           "always: epoch 2: %llu hits, %llu wrong",
           (unsigned long long)s.hits, (unsigned long long)s.wrong);
    EXPECT(c.tier_misses == b.tier_misses,
           "always: epoch 2: %llu other nodes' keys missed the tier",
           (unsigned long long)(c.tier_misses - b.tier_misses));
    EXPECT(T_lockmode() || c.remote == b.remote,
           "always: epoch 2 still made %llu remote gets",
           (unsigned long long)(c.remote - b.remote));
    EXPECT(c.tier_hits - b.tier_hits == remote_hits,
           "always: epoch 2: %llu tier hits for %llu remote keys",
           (unsigned long long)(c.tier_hits - b.tier_hits),
           (unsigned long long)remote_hits);

    mt_phase("always: get_ref");
    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < NKEYS; i++) {
            const void *ref = NULL;
            mt_make_key(TAG_TIER, (uint32_t)r, i, key, KS);
            int rc = mpikvs_get_ref(kvs, key, &ref);
            if (rc == MPIKVS_OK) {
                refs++;
                mt_make_value(key, KS, 1, expect, VS);
                if (!ref || memcmp(ref, expect, VS) != 0)
                    bad_refs++;
            } else {
                EXPECT(rc == MPIKVS_MISS && ref == NULL,
                       "get_ref: %d, ref %p", rc, ref);
                own_refs++;
            }
        }
    EXPECT(refs == remote_hits && bad_refs == 0,
           "always: get_ref found %llu of %llu tier keys, %llu wrong",
           (unsigned long long)refs, (unsigned long long)remote_hits,
           (unsigned long long)bad_refs);
    EXPECT(own_refs == ALL_KEYS - remote_hits,
           "always: get_ref: %llu misses for %llu own-node keys",
           (unsigned long long)own_refs,
           (unsigned long long)(ALL_KEYS - remote_hits));

    mt_phase("always: puts update the homes, the tier keeps its values");
    put_all(kvs, TAG_TIER, 2);
    fence(kvs);
    s = get_all(kvs);
    EXPECT(s.hits == ALL_KEYS && s.wrong == 0 &&
               s.version[1] == remote_hits &&
               s.version[2] == ALL_KEYS - remote_hits,
           "always: after the update: %llu from the tier (version 1), "
           "%llu from the homes (version 2), %llu wrong; want %llu and "
           "%llu",
           (unsigned long long)s.version[1], (unsigned long long)s.version[2],
           (unsigned long long)s.wrong, (unsigned long long)remote_hits,
           (unsigned long long)(ALL_KEYS - remote_hits));
    EXPECT(mpikvs_tier_invalidate(kvs) == MPIKVS_OK,
           "always: invalidate is a no-op");
    s = get_all(kvs);
    EXPECT(s.version[1] == remote_hits,
           "always: invalidate dropped entries (%llu from the tier)",
           (unsigned long long)s.version[1]);
    mpikvs_close(&kvs);
}

static void test_user(void)
{
    mpikvs_t *kvs;
    mpikvs_stats_t a, b;
    struct seen s;
    uint64_t remote;

    mt_phase("user: fill the tier");
    kvs = open_with("8M", "2M", "user");
    put_all(kvs, TAG_TIER, 1);
    fence(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &a);
    get_all(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &b);
    remote = b.tier_misses - a.tier_misses;
    fence(kvs);
    put_all(kvs, TAG_TIER, 2);
    fence(kvs);
    s = get_all(kvs);
    EXPECT(s.version[1] == remote && s.wrong == 0,
           "user: before invalidation %llu stale from the tier, want %llu",
           (unsigned long long)s.version[1], (unsigned long long)remote);

    mt_phase("user: invalidate");
    int rc = mpikvs_tier_invalidate(kvs);
    EXPECT(rc == MPIKVS_OK, "user: invalidate: %d (%s)", rc,
           mpikvs_strerror(rc));
    s = get_all(kvs);
    EXPECT(s.version[2] == ALL_KEYS && s.wrong == 0,
           "user: after invalidation %llu of %llu are the homes' version 2 "
           "(%llu version 1, %llu wrong)",
           (unsigned long long)s.version[2], (unsigned long long)ALL_KEYS,
           (unsigned long long)s.version[1], (unsigned long long)s.wrong);
    fence(kvs);   /* the tier fills again, now with version 2 */
    s = get_all(kvs);
    EXPECT(s.version[2] == ALL_KEYS, "user: refilled tier: %llu of %llu",
           (unsigned long long)s.version[2], (unsigned long long)ALL_KEYS);
    mpikvs_close(&kvs);
}

static void test_full(void)
{
    mpikvs_t *kvs;
    mpikvs_stats_t a, b, node;
    struct seen s;

    mt_phase("full: an 8 KiB tier");
    kvs = open_with("8M", "8K", "always");
    put_all(kvs, TAG_TIER, 1);
    fence(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &a);
    get_all(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &b);
    fence(kvs);
    stats(kvs, MPIKVS_SCOPE_NODE, &node);
    s = get_all(kvs);
    EXPECT(s.hits == ALL_KEYS && s.wrong == 0,
           "full: %llu of %llu hits, %llu wrong", (unsigned long long)s.hits,
           (unsigned long long)ALL_KEYS, (unsigned long long)s.wrong);
    if (vnodes >= 2) {
        /* a page of index, a page of entries: 53 of 72 bytes fit, and
         * every rank reads at least 150 keys of the other node */
        EXPECT(node.tier_published > 0 && node.tier_published <= 53 &&
                   node.tier_dropped > 0,
               "full: the node published %llu and dropped %llu",
               (unsigned long long)node.tier_published,
               (unsigned long long)node.tier_dropped);
    }
    mpikvs_close(&kvs);
}

/* ---- large values ---- */

#define LARGE_KEYS 4u   /* per rank */

/* Is value key's value of version want?  (mt_value_ok checks values of
 * up to 4 KiB.) */
static bool large_value_ok(const unsigned char *key, const void *value,
                           uint64_t want, unsigned char *scratch)
{
    mt_make_value(key, KS, want, scratch, vsize);
    return memcmp(scratch, value, vsize) == 0;
}

/* Every rank's large keys got: *wrong counts the values not whole. */
static uint64_t large_get_all(mpikvs_t *kvs, unsigned char *value,
                              unsigned char *scratch, uint64_t *wrong)
{
    unsigned char key[KS];
    uint64_t hits = 0;

    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < LARGE_KEYS; i++) {
            mt_make_key(TAG_TIER + 1, (uint32_t)r, i, key, KS);
            int rc = mpikvs_get(kvs, key, value);
            EXPECT(rc == MPIKVS_OK, "large: get: %d (%s): %s", rc,
                   mpikvs_strerror(rc), mpikvs_last_error(kvs));
            if (rc != MPIKVS_OK)
                continue;
            hits++;
            if (!large_value_ok(key, value, 1, scratch))
                ++*wrong;
        }
    return hits;
}

static void test_large(void)
{
    const uint64_t all = (uint64_t)size * LARGE_KEYS;
    unsigned char key[KS], *value = malloc(vsize), *scratch = malloc(vsize);
    uint64_t wrong = 0, hits, remote, refs = 0, bad_refs = 0;
    mpikvs_stats_t a, b, c;
    mpikvs_t *kvs;

    if (!value || !scratch)
        mt_abort("out of memory for two values");
    mt_phase("large: open, put, fence");
    /* 64 MiB a node: buckets of 4 slots of 1 MiB take 4 MiB each, the
     * tier 16 MiB (a dozen entries) */
    kvs = open_with("64M", "16M", "always");
    for (int turn = 0; turn < size; turn++) {
        for (uint32_t i = 0; turn == rank && i < LARGE_KEYS; i++) {
            mt_make_key(TAG_TIER + 1, (uint32_t)rank, i, key, KS);
            mt_make_value(key, KS, 1, value, vsize);
            int rc = mpikvs_put(kvs, key, value);
            EXPECT(rc == MPIKVS_OK, "large: put: %d (%s): %s", rc,
                   mpikvs_strerror(rc), mpikvs_last_error(kvs));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fence(kvs);

    mt_phase("large: epoch 1");
    stats(kvs, MPIKVS_SCOPE_RANK, &a);
    hits = large_get_all(kvs, value, scratch, &wrong);
    stats(kvs, MPIKVS_SCOPE_RANK, &b);
    remote = b.tier_misses - a.tier_misses;
    EXPECT(hits == all && wrong == 0,
           "large: epoch 1: %llu of %llu hits, %llu not whole",
           (unsigned long long)hits, (unsigned long long)all,
           (unsigned long long)wrong);
    EXPECT(vnodes < 2 || remote > 0, "large: no key of another node");

    mt_phase("large: fence publishes; epoch 2");
    fence(kvs);
    hits = large_get_all(kvs, value, scratch, &wrong);
    stats(kvs, MPIKVS_SCOPE_RANK, &c);
    EXPECT(hits == all && wrong == 0,
           "large: epoch 2: %llu of %llu hits, %llu not whole",
           (unsigned long long)hits, (unsigned long long)all,
           (unsigned long long)wrong);
    EXPECT(c.tier_hits - b.tier_hits == remote &&
               c.tier_misses == b.tier_misses,
           "large: epoch 2: %llu tier hits, %llu misses for %llu remote "
           "keys (published %llu, dropped %llu)",
           (unsigned long long)(c.tier_hits - b.tier_hits),
           (unsigned long long)(c.tier_misses - b.tier_misses),
           (unsigned long long)remote,
           (unsigned long long)c.tier_published,
           (unsigned long long)c.tier_dropped);
    EXPECT(T_lockmode() || c.remote == b.remote,
           "large: epoch 2 still made %llu remote gets",
           (unsigned long long)(c.remote - b.remote));

    mt_phase("large: get_ref");
    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < LARGE_KEYS; i++) {
            const void *ref = NULL;
            mt_make_key(TAG_TIER + 1, (uint32_t)r, i, key, KS);
            if (mpikvs_get_ref(kvs, key, &ref) != MPIKVS_OK)
                continue;
            refs++;
            if (!ref || !large_value_ok(key, ref, 1, scratch))
                bad_refs++;
        }
    EXPECT(refs == remote && bad_refs == 0,
           "large: get_ref found %llu of %llu tier keys, %llu not whole",
           (unsigned long long)refs, (unsigned long long)remote,
           (unsigned long long)bad_refs);
    if (rank == 0)
        mt_note("large: %zu-byte values: %llu remote keys published and "
                "found in the tier", vsize, (unsigned long long)remote);
    mpikvs_close(&kvs);
    free(value);
    free(scratch);
}

/* ---- a reader thread during publications ---- */

struct reader {
    char         prefix_path[256];   /* a tier index file of this job */
    atomic_bool  stop;
    atomic_bool  reading;   /* the tier is open and read */
    uint64_t     lookups, wrong;
    atomic_ulong found;
    atomic_int   err;
};

static void *read_tier(void *arg)
{
    struct reader *rd = arg;
    char job[KVSHM_JOB_MAX], node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];
    const char *base = strrchr(rd->prefix_path, '/') + 1;
    unsigned char key[KS], value[VS];
    struct kvshm_tier *t = NULL;
    mpikvs_error_t err;

    if (kvshm_region_name_parse(base, job, node, tag) != MPIKVS_OK) {
        rd->err = -1;
        return NULL;
    }
    tag[strlen(tag) - strlen("-index")] = '\0';
    struct kvshm_tier_reader_opts ro = {.expect_uid = geteuid(),
                                        .held = true};
    rd->err = kvshm_tier_open(shm_dir, job, node, tag, &ro, &t, &err);
    if (rd->err != MPIKVS_OK)
        return NULL;
    for (uint64_t n = 0; !atomic_load(&rd->stop); n++) {
        size_t len;
        uint64_t v;
        mt_make_key(TAG_TIER + 1, (uint32_t)(n % (uint64_t)size),
                    n / (uint64_t)size % NKEYS, key, KS);
        int rc = kvshm_tier_get(t, key, KS, value, VS, &len);
        rd->lookups++;
        atomic_store(&rd->reading, true);
        if (rc == MPIKVS_OK) {
            atomic_fetch_add(&rd->found, 1);
            if (len != VS || !mt_value_ok(key, KS, value, VS, &v))
                rd->wrong++;
        } else if (rc != MPIKVS_MISS) {
            rd->err = rc;
            break;
        }
        /* leave the cores to the ranks now and then: on an oversubscribed
         * machine their MPI progress (pt2pt's in the lock modes) starves */
        if (n % 256 == 255) {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
        }
    }
    kvshm_tier_close(&t);
    return NULL;
}

struct index_hunt {
    char  *out;
    size_t len;
    int    which, n;
};

static bool is_index(const char *name)
{
    size_t l = strlen(name);

    return l > 8 && strcmp(name + l - 8, ".t-index") == 0;
}

static int held_index(const struct kvshm_held *h, void *arg)
{
    struct index_hunt *hunt = arg;

    if (!is_index(h->name) || hunt->n++ != hunt->which)
        return 0;
    snprintf(hunt->out, hunt->len, "%s/%s", shm_dir, h->name);
    return 1;
}

/* The which-th tier index of the test directory: libmpikvs unlinked the
 * names of the regions it made at open, so they are found through the
 * ranks that hold them (shm/held.h), as mpikvs-stat finds them. */
static bool find_index(char *out, size_t len, int which)
{
    struct index_hunt hunt = {out, len, which, 0};

    return kvshm_held_scan(shm_dir, held_index, &hunt) == 1;
}

static void test_readers(void)
{
    struct reader rd = {0};
    pthread_t th;
    mpikvs_t *kvs;
    unsigned char key[KS], value[VS];

    mt_phase("readers: open");
    kvs = open_with("8M", "2M", "always");
    put_all(kvs, TAG_TIER + 1, 1);
    fence(kvs);
    if (!find_index(rd.prefix_path, sizeof(rd.prefix_path),
                    rank % (vnodes > 1 ? vnodes : 1)))
        mt_abort("readers: no tier index in the test directory");
    if (pthread_create(&th, NULL, read_tier, &rd) != 0)
        mt_abort("readers: pthread_create");
    /* a loaded machine may not run the thread at once: the publications
     * must come while it reads (it stops by itself on an error) */
    for (int waited = 0; !atomic_load(&rd.reading) && waited < 30000;
         waited++) {
        struct timespec pause = {0, 1000000};
        if (rd.err != MPIKVS_OK)
            break;
        nanosleep(&pause, NULL);
    }

    /* Epochs that each read a tenth more of the keys: every fence
     * publishes new entries while the threads read. */
    mt_phase("readers: epochs");
    for (int epoch = 1; epoch <= 10; epoch++) {
        for (int r = 0; r < size; r++)
            for (uint32_t i = 0; i < NKEYS * (uint32_t)epoch / 10; i++) {
                mt_make_key(TAG_TIER + 1, (uint32_t)r, i, key, KS);
                int rc = mpikvs_get(kvs, key, value);
                EXPECT(rc == MPIKVS_OK, "readers: get: %d", rc);
            }
        fence(kvs);
    }
    /* a thread the machine ran little must still see the filled tier */
    for (int waited = 0; atomic_load(&rd.found) == 0 && waited < 10000 &&
                         rd.err == MPIKVS_OK;
         waited++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    atomic_store(&rd.stop, true);
    pthread_join(th, NULL);
    EXPECT(rd.err == MPIKVS_OK, "readers: the thread's tier: %d (%s)",
           rd.err, mpikvs_strerror(rd.err));
    EXPECT(rd.wrong == 0, "readers: %llu of %llu values found were not "
           "whole", (unsigned long long)rd.wrong,
           (unsigned long long)atomic_load(&rd.found));
    EXPECT(rd.lookups > 0, "readers: the thread made no lookup");
    EXPECT(vnodes < 2 || atomic_load(&rd.found) > 0 || size < 2,
           "readers: %llu lookups found nothing in a tier being filled",
           (unsigned long long)rd.lookups);
    mt_note("readers: %llu lookups during publications, %llu found, "
            "%llu wrong", (unsigned long long)rd.lookups,
            (unsigned long long)atomic_load(&rd.found), (unsigned long long)rd.wrong);
    mpikvs_close(&kvs);
}

/* Set or clear the odd bit of seq in every tier index of the test
 * directory: what a writer killed in mid-publication leaves. */
static void poison_tiers(bool odd)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_TIER_INDEX,
                                 .writable = true, .expect_uid = geteuid(),
                                 .held = true};
    char path[256];

    for (int which = 0; find_index(path, sizeof(path), which); which++) {
        struct kvshm_region *idx = NULL;
        mpikvs_error_t err;
        if (kvshm_region_open(shm_dir, strrchr(path, '/') + 1, &oo, &idx,
                              &err) != MPIKVS_OK)
            mt_abort("stalled: cannot open a tier index");
        uint64_t *seq = &((struct kvshm_tier_control *)(
                              (char *)idx->base + KVSHM_HEADER_SIZE))->seq;
        uint64_t s = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        if ((s & 1) != odd)
            __atomic_store_n(seq, s + 1, __ATOMIC_RELEASE);
        kvshm_region_close(&idx);
    }
}

static void test_stalled(void)
{
    unsigned char key[KS], value[VS];
    mpikvs_stats_t a, b;
    uint64_t remote = 0, bad = 0;
    mpikvs_t *kvs;

    mt_phase("stalled: open, put, publish");
    kvs = open_with("8M", "2M", "always");
    put_all(kvs, TAG_TIER + 2, 1);
    fence(kvs);
    for (int pass = 0; pass < 2; pass++) {   /* remote hits, published */
        for (int r = 0; r < size; r++)
            for (uint32_t i = 0; i < NKEYS; i++) {
                mt_make_key(TAG_TIER + 2, (uint32_t)r, i, key, KS);
                (void)mpikvs_get(kvs, key, value);
            }
        fence(kvs);
    }
    stats(kvs, MPIKVS_SCOPE_RANK, &a);

    mt_phase("stalled: gets while every tier is mid-publication");
    if (rank == 0)
        poison_tiers(true);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size && !bad; r++)
        for (uint32_t i = 0; i < NKEYS; i++) {
            uint64_t v = 0;
            mt_make_key(TAG_TIER + 2, (uint32_t)r, i, key, KS);
            int rc = mpikvs_get(kvs, key, value);
            if (rc != MPIKVS_OK || !mt_value_ok(key, KS, value, VS, &v) ||
                v != 1) {
                /* one is enough: without the fix each costs the stall */
                EXPECT(0, "stalled: get of rank %d's key %u: %d (%s): %s",
                       r, i, rc, mpikvs_strerror(rc),
                       mpikvs_last_error(kvs));
                bad++;
                break;
            }
            remote++;
        }
    stats(kvs, MPIKVS_SCOPE_RANK, &b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        poison_tiers(false);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(b.tier_stalls - a.tier_stalls == 1,
           "stalled: %llu stalls in one epoch (once, then the tier is "
           "skipped)", (unsigned long long)(b.tier_stalls - a.tier_stalls));
    EXPECT(b.tier_hits == a.tier_hits, "stalled: %llu tier hits from a "
           "tier in mid-publication",
           (unsigned long long)(b.tier_hits - a.tier_hits));
    mt_note("stalled: %llu gets right from the homes, %llu stall",
            (unsigned long long)remote,
            (unsigned long long)(b.tier_stalls - a.tier_stalls));

    /* the next epoch reads the tier again */
    fence(kvs);
    stats(kvs, MPIKVS_SCOPE_RANK, &a);
    for (int r = 0; r < size; r++)
        for (uint32_t i = 0; i < NKEYS; i++) {
            mt_make_key(TAG_TIER + 2, (uint32_t)r, i, key, KS);
            int rc = mpikvs_get(kvs, key, value);
            EXPECT(rc == MPIKVS_OK, "stalled: get after the fence: %d", rc);
        }
    stats(kvs, MPIKVS_SCOPE_RANK, &b);
    EXPECT(b.tier_hits > a.tier_hits && b.tier_stalls == a.tier_stalls,
           "stalled: after the fence %llu tier hits, %llu stalls",
           (unsigned long long)(b.tier_hits - a.tier_hits),
           (unsigned long long)(b.tier_stalls - a.tier_stalls));
    mpikvs_close(&kvs);
}

int main(int argc, char **argv)
{
    const char *vn = getenv("MPIKVS_VIRTUAL_NODES");
    int provided;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mode = argc > 1 ? argv[1] : "lockfree";
    if (argc > 3 && !strcmp(argv[2], "--value-size"))
        vsize = (size_t)strtoull(argv[3], NULL, 10);
    else if (argc > 2)
        mt_abort("usage: test_tier MODE [--value-size N]");
    if (vsize < 8)
        mt_abort("--value-size: 8 bytes at least (the version)");
    vnodes = vn ? atoi(vn) : 1;
    if (provided < MPI_THREAD_FUNNELED)
        mt_abort("MPI does not give MPI_THREAD_FUNNELED");

    /* a private shm directory for the regions and the configs */
    if (rank == 0) {
        snprintf(shm_dir, sizeof(shm_dir), "/dev/shm/kvtest.tier.XXXXXX");
        if (!mkdtemp(shm_dir))
            mt_abort("mkdtemp under /dev/shm");
    }
    MPI_Bcast(shm_dir, sizeof(shm_dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    setenv("MPIKVS_SHM_DIR", shm_dir, 1);

    if (vsize != VS) {   /* large values, alone */
        test_large();
        goto done;
    }
    test_always();
    test_user();
    test_full();
    /* One node publishes nothing to read; the lock modes reach the tier
     * the same way, only through slower gets (pt2pt's, with the threads
     * competing for two cores, would take minutes). */
    if (vnodes >= 2 && !T_lockmode()) {
        test_readers();
        /* each rank waits out one stall (10 s): one run of the matrix
         * (np 2) is enough, the others would only add the wait */
        if (size == 2)
            test_stalled();
    }

done:
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        DIR *d = opendir(shm_dir);
        struct dirent *e;
        int left = 0;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.')
                left++;
        if (d)
            closedir(d);
        EXPECT(left == 0, "%d files left in %s", left, shm_dir);
        rmdir(shm_dir);
    }
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
}
