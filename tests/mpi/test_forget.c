/*
 * test_forget.c - mpikvs_forget in the modes given as argv[1] (lockfree,
 * fine-lock, coarse-lock, or a comma-separated list of them, run one
 * after the other), over whatever route the environment makes
 * (run-forget-test.sh: np 2 on 2 virtual nodes, the ucx transport
 * mapping the other node's region, shipping keys to it, or with RMA, and
 * the mpi transport).
 *
 *   forget   keys homed on both nodes, put by one rank; each rank
 *            forgets half of the keys whose home is the other node
 *            (MPIKVS_OK each); then both ranks miss those and hit the
 *            rest; a second forget of one is MPIKVS_MISS; puts of them
 *            afterwards hit again; the job's statistic "forgotten"
 *            equals the OKs; NULL handle and key are MPIKVS_ERR_INVAL.
 *   race     rank 0 forgets keys of every bucket of both nodes while
 *            rank 1 puts other keys into the same buckets: every
 *            forgotten key misses, every other key hits with its value,
 *            and the table, big enough, evicted nothing.
 *   tier     a table with a node tier (caching user), its far buckets
 *            read slot by slot (far_read "slot"): rank 0 reads node
 *            1's keys (remote hits, recorded for the tier) and forgets
 *            half of them; after the fence's publication the forgotten
 *            ones miss (their records were dropped), the others hit
 *            from the tier; a key forgotten after its publication is
 *            still served by the tier until mpikvs_tier_invalidate
 *            (mpikvs_forget(3), The node tier).
 *
 * See mpitest.h for the output, mt_table.h for what the table tests
 * share.  Built against the library's headers to know each key's home
 * node (key.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"
#include "key.h"        /* kvs_key_make: a key's home node */

#define TAG_FORGET 41u   /* the forget phase's keys */
#define TAG_GONE   42u   /* the race: keys rank 0 forgets */
#define TAG_STAY   43u   /* the race: keys rank 1 puts meanwhile */
#define NFORGET    64u   /* keys of the forget phase */
#define NRACE      96u   /* keys of each family of the race */
#define TAG_TIER   44u   /* the tier phase's keys */
#define NTIER      32u

/* The node kvs places key (tag, a, b) on (the library's own rule). */
static uint32_t home(mpikvs_t *kvs, uint32_t tag, uint32_t a, uint64_t b,
                     unsigned char *key)
{
    struct kvs_key k;

    mt_make_key(tag, a, b, key, KS);
    kvs_key_make(kvs, key, &k);
    return k.node;
}

/* Get (tag, 0, i): a hit of version want (want 0: a miss). */
static void expect_get(mpikvs_t *kvs, uint32_t tag, uint32_t i,
                       uint64_t want, const char *what)
{
    unsigned char key[KS], val[VS];
    uint64_t ver = 0;
    int rc;

    mt_make_key(tag, 0, i, key, KS);
    rc = mpikvs_get(kvs, key, val);
    if (!want) {
        EXPECT(rc == MPIKVS_MISS, "%s: key %u of tag %u: get = %d (%s), "
               "want MPIKVS_MISS", what, i, tag, rc, mpikvs_strerror(rc));
        return;
    }
    EXPECT(rc == MPIKVS_OK, "%s: key %u of tag %u: get = %d (%s): %s", what,
           i, tag, rc, mpikvs_strerror(rc), mpikvs_last_error(kvs));
    if (rc == MPIKVS_OK)
        EXPECT(mt_value_ok(key, KS, val, VS, &ver) && ver == want,
               "%s: key %u of tag %u: value of version %llu, want %llu",
               what, i, tag, (unsigned long long)ver,
               (unsigned long long)want);
}

static void put_key(mpikvs_t *kvs, uint32_t tag, uint32_t i, uint64_t ver,
                    const char *what)
{
    unsigned char key[KS], val[VS];
    int rc;

    mt_make_key(tag, 0, i, key, KS);
    mt_make_value(key, KS, ver, val, VS);
    rc = mpikvs_put(kvs, key, val);
    EXPECT(rc == MPIKVS_OK, "%s: put of key %u of tag %u = %d (%s): %s",
           what, i, tag, rc, mpikvs_strerror(rc), mpikvs_last_error(kvs));
}

static long job_sum(long mine)
{
    long all = 0;

    MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

static void forget_phase(void)
{
    mpikvs_t *kvs = open_small(T.mode, "forget");
    unsigned char key[KS];
    uint32_t node = kvs->node;
    int homes[2] = {0, 0};
    long oks = 0;
    mpikvs_stats_t st;
    int rc;

    mt_phase("forget: puts");
    if (T.rank == 0)
        for (uint32_t i = 0; i < NFORGET; i++)
            put_key(kvs, TAG_FORGET, i, 1, "forget");
    fence_ok(kvs, "forget: puts");

    /* the even keys, each by the rank whose node is not its home */
    mt_phase("forget: forget");
    for (uint32_t i = 0; i < NFORGET; i++) {
        uint32_t h = home(kvs, TAG_FORGET, 0, i, key);
        homes[h != 0]++;
        if (i % 2 || h == node)
            continue;
        rc = mpikvs_forget(kvs, key);
        EXPECT(rc == MPIKVS_OK, "forget of key %u (home node %u) = %d "
               "(%s): %s", i, h, rc, mpikvs_strerror(rc),
               mpikvs_last_error(kvs));
        oks += rc == MPIKVS_OK;
    }
    EXPECT(homes[0] > 4 && homes[1] > 4,
           "keys homed on both nodes: %d on node 0, %d elsewhere",
           homes[0], homes[1]);
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("forget: gets");
    for (uint32_t i = 0; i < NFORGET; i++)
        expect_get(kvs, TAG_FORGET, i, i % 2 ? 1 : 0, "after forget");

    /* gone already: a miss, from either side of the key */
    mt_phase("forget: missing");
    for (uint32_t i = 0; i < NFORGET; i += 2) {
        mt_make_key(TAG_FORGET, 0, i, key, KS);
        rc = mpikvs_forget(kvs, key);
        EXPECT(rc == MPIKVS_MISS, "second forget of key %u = %d (%s)", i,
               rc, mpikvs_strerror(rc));
    }
    EXPECT(mpikvs_forget(kvs, NULL) == MPIKVS_ERR_INVAL,
           "forget of a NULL key is not MPIKVS_ERR_INVAL");
    EXPECT(mpikvs_forget(NULL, key) == MPIKVS_ERR_INVAL,
           "forget with a NULL handle is not MPIKVS_ERR_INVAL");
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("forget: put again");
    if (T.rank == 1)
        for (uint32_t i = 0; i < NFORGET; i += 2)
            put_key(kvs, TAG_FORGET, i, 2, "put after forget");
    fence_ok(kvs, "forget: put again");
    for (uint32_t i = 0; i < NFORGET; i++)
        expect_get(kvs, TAG_FORGET, i, i % 2 ? 1 : 2, "put after forget");

    oks = job_sum(oks);
    stats_ok(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &st, "forget");
    EXPECT(oks == NFORGET / 2, "forgets that returned MPIKVS_OK: %ld, "
           "want %u", oks, NFORGET / 2);
    EXPECT(st.forgotten == (uint64_t)oks, "statistic forgotten = %llu, "
           "forgets that returned MPIKVS_OK: %ld",
           (unsigned long long)st.forgotten, oks);
    if (T.rank == 0)
        mt_note("forget: %s, %ld forgotten (%d keys homed on node 0, %d "
                "on node 1)", mpikvs_transport(kvs), oks, homes[0],
                homes[1]);
    close_ok(&kvs, "forget: close");
}

/* Rank 0 forgets the TAG_GONE keys (every bucket of both nodes) while
 * rank 1 puts the TAG_STAY keys into the same buckets. */
static void race_phase(void)
{
    mpikvs_t *kvs = open_small(T.mode, "race");
    mpikvs_stats_t st;
    long oks = 0;

    mt_phase("race: puts");
    if (T.rank == 0)
        for (uint32_t i = 0; i < NRACE; i++)
            put_key(kvs, TAG_GONE, i, 1, "race");
    fence_ok(kvs, "race: puts");

    mt_phase("race: forget and puts");
    for (uint32_t i = 0; i < NRACE; i++) {
        if (T.rank == 0) {
            unsigned char key[KS];
            int rc;
            mt_make_key(TAG_GONE, 0, i, key, KS);
            rc = mpikvs_forget(kvs, key);
            EXPECT(rc == MPIKVS_OK, "race: forget of key %u = %d (%s): %s",
                   i, rc, mpikvs_strerror(rc), mpikvs_last_error(kvs));
            oks += rc == MPIKVS_OK;
        } else if (T.rank == 1) {
            put_key(kvs, TAG_STAY, i, 3, "race");
        }
    }
    fence_ok(kvs, "race: forget and puts");

    mt_phase("race: gets");
    for (uint32_t i = 0; i < NRACE; i++) {
        expect_get(kvs, TAG_GONE, i, 0, "race");
        expect_get(kvs, TAG_STAY, i, 3, "race");
    }
    oks = job_sum(oks);
    stats_ok(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &st, "race");
    EXPECT(st.evictions == 0, "race: %llu evictions in a table that "
           "holds every key", (unsigned long long)st.evictions);
    EXPECT(st.forgotten == (uint64_t)oks, "race: statistic forgotten = "
           "%llu, forgets that returned MPIKVS_OK: %ld",
           (unsigned long long)st.forgotten, oks);
    close_ok(&kvs, "race: close");
}

/* A table of a config with a node tier of caching user, whose other
 * nodes' buckets are read slot by slot (far_read "slot": the forget's
 * look reads the header and the slots of the key's tag only), where the
 * other phases read them whole. */
static mpikvs_t *open_tier(void)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/forget-tier-%d.json", shm_dir(), T.rank);
    f = fopen(path, "w");
    if (!f ||
        fprintf(f,
                "{ \"version\": 1, \"tables\": { \"t\": {\n"
                "  \"size\": \"8M\", \"mode\": \"%s\",\n"
                "  \"far_read\": \"slot\",\n"
                "  \"key\": { \"key_size\": %u },\n"
                "  \"value\": { \"value_size\": %u },\n"
                "  \"tier\": { \"enabled\": true, \"size\": \"2M\",\n"
                "            \"caching\": \"user\" } } } }\n",
                T.mode, KS, VS) < 0 ||
        fclose(f) != 0)
        mt_abort("cannot write the tier phase's config");
    o.config = path;
    mpikvs_t *kvs = open_ok(&o, "tier: open");
    unlink(path);
    if (!kvs)
        mt_abort("mpikvs_open failed");
    return kvs;
}

static void tier_phase(void)
{
    mpikvs_t *kvs = open_tier();
    unsigned char key[KS], val[VS];
    uint32_t node = kvs->node, far[NTIER], nfar = 0, i = 0;
    uint64_t tier_hits;
    mpikvs_stats_t a, b;
    int rc;

    /* the keys homed on node 1, which rank 0 (node 0) reads remotely */
    for (uint64_t n = 0; nfar < NTIER; n++)
        if (home(kvs, TAG_TIER, 0, n, key) == 1)
            far[nfar++] = (uint32_t)n;
    if (T.rank == 1)
        for (i = 0; i < nfar; i++)
            put_key(kvs, TAG_TIER, far[i], 1, "tier");
    fence_ok(kvs, "tier: puts");

    mt_phase("tier: remote hits, half forgotten");
    if (node == 0) {
        for (i = 0; i < nfar; i++)
            expect_get(kvs, TAG_TIER, far[i], 1, "tier: remote hit");
        for (i = 0; i < nfar; i += 2) {
            mt_make_key(TAG_TIER, 0, far[i], key, KS);
            rc = mpikvs_forget(kvs, key);
            EXPECT(rc == MPIKVS_OK, "tier: forget of key %u = %d (%s)",
                   far[i], rc, mpikvs_strerror(rc));
        }
    }
    fence_ok(kvs, "tier: publication");

    mt_phase("tier: after the publication");
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &a, "tier");
    if (node == 0)
        for (i = 0; i < nfar; i++)
            expect_get(kvs, TAG_TIER, far[i], i % 2 ? 1 : 0,
                       "tier: after the publication");
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &b, "tier");
    tier_hits = b.tier_hits - a.tier_hits;
    if (node == 0)
        EXPECT(tier_hits == nfar / 2, "tier: %llu hits from the tier, want "
               "the %u keys not forgotten", (unsigned long long)tier_hits,
               nfar / 2);

    /* forgotten after its publication: the tier serves its copy until
     * it is invalidated */
    mt_phase("tier: forgotten after the publication");
    if (node == 0) {
        mt_make_key(TAG_TIER, 0, far[1], key, KS);
        rc = mpikvs_forget(kvs, key);
        EXPECT(rc == MPIKVS_OK, "tier: forget of published key %u = %d (%s)",
               far[1], rc, mpikvs_strerror(rc));
        rc = mpikvs_get(kvs, key, val);
        EXPECT(rc == MPIKVS_OK, "tier: the tier's copy of a forgotten key: "
               "get = %d (%s), want its copy", rc, mpikvs_strerror(rc));
    }
    EXPECT(mpikvs_tier_invalidate(kvs) == MPIKVS_OK,
           "tier: mpikvs_tier_invalidate failed");
    if (node == 0)
        expect_get(kvs, TAG_TIER, far[1], 0, "tier: after invalidation");
    close_ok(&kvs, "tier: close");
}

/* argv[1]: the modes, a comma-separated list run one after the other
 * in one job (one start of the job for several modes). */
int main(int argc, char **argv)
{
    char modes[128], first[128] = "lockfree", *save = NULL;
    char *start_argv[] = {argv[0], first, NULL};

    snprintf(modes, sizeof modes, "%s", argc > 1 ? argv[1] : "lockfree");
    for (char *m = strtok_r(modes, ",", &save); m;
         m = strtok_r(NULL, ",", &save)) {
        if (strcmp(m, "lockfree") && strcmp(m, "fine-lock") &&
            strcmp(m, "coarse-lock")) {
            fprintf(stderr, "usage: %s lockfree|fine-lock|coarse-lock"
                            "[,...]\n", argv[0]);
            return 2;
        }
        if (m == modes)   /* the first, which the start notes */
            snprintf(first, sizeof first, "%s", m);
    }
    table_test_start(2, start_argv);
    if (T.size != 2 || T.nnodes != 2) {
        if (T.rank == 0)
            fprintf(stderr, "test_forget: run at np 2 on 2 nodes "
                            "(MPIKVS_VIRTUAL_NODES=2)\n");
        MPI_Finalize();
        return 2;
    }
    snprintf(modes, sizeof modes, "%s", argc > 1 ? argv[1] : "lockfree");
    for (char *m = strtok_r(modes, ",", &save); m;
         m = strtok_r(NULL, ",", &save)) {
        T.mode = m;
        T.lockmode = strcmp(m, "lockfree") != 0;
        if (T.rank == 0)
            mt_note("mode %s", T.mode);
        forget_phase();
        race_phase();
        tier_phase();
    }
    return table_test_finish();
}
