/*
 * test_open.c - opening a table of libmpikvs, in the mode given as
 * argv[1] (lockfree | fine-lock | coarse-lock): opens that must fail,
 * a JSON config (key size and rounding), the transport (option,
 * MPIKVS_TRANSPORT, config, bad names), tables over half the ranks and
 * over MPI_COMM_SELF, and ranks that disagree about the options (last:
 * a library that does not check them hangs there).  After each, no
 * region of this job may be left in the regions' directory.
 *
 * Run under mpirun with any number of ranks; MPIKVS_VIRTUAL_NODES=N makes
 * N blocks of consecutive ranks act as nodes.  See mpitest.h for the
 * output, mt_table.h for what the table tests share.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "config.h"   /* HAVE_UCX */

#include "mpikvs.h"
#include "mt_table.h"

static void test_bad_open(void)
{
    mpikvs_options_t o;

    o = opts(KS, VS, BIG, "lock-free");
    open_fails(&o, MPIKVS_ERR_INVAL, "open: mode \"lock-free\"",
               "lock-free");

    o = opts(0, VS, BIG, T.mode);
    open_fails(&o, 0, "open: key_size 0 without a config", NULL);

    o = opts(KS, 0, BIG, T.mode);
    open_fails(&o, 0, "open: value_size 0 without a config", NULL);

    open_fails(NULL, 0, "open: NULL options without a config", NULL);

    {
        int rc;

        mt_phase("open: NULL handle pointer");
        o = opts(KS, VS, BIG, T.mode);
        rc = mpikvs_open(MPI_COMM_WORLD, &o, NULL);
        EXPECT(rc == MPIKVS_ERR_INVAL, "open with kvs NULL = %d (%s), want "
               "MPIKVS_ERR_INVAL", rc, mpikvs_strerror(rc));
    }

    o = opts(KS, VS, (size_t)1 << 50, T.mode);
    open_fails(&o, 0, "open: size_per_node 1 PiB", NULL);

    o = opts(KS, VS, BIG, T.mode);
    o.slots_per_bucket = 100000;
    open_fails(&o, 0, "open: slots_per_bucket 100000", NULL);

    o = opts(KS, VS, BIG, T.mode);
    o.config = "/nonexistent/mpikvs-test.json";
    open_fails(&o, MPIKVS_ERR_CONFIG, "open: missing config file",
               "/nonexistent/mpikvs-test.json");

    /* a virtual node count that is not a number */
    {
        const char *was = getenv("MPIKVS_VIRTUAL_NODES");
        char        keep[32] = "";

        if (was)
            snprintf(keep, sizeof keep, "%s", was);
        setenv("MPIKVS_VIRTUAL_NODES", "two", 1);
        o = opts(KS, VS, BIG, T.mode);
        open_fails(&o, MPIKVS_ERR_INVAL, "open: MPIKVS_VIRTUAL_NODES=two",
                   "two");
        if (was)
            setenv("MPIKVS_VIRTUAL_NODES", keep, 1);
        else
            unsetenv("MPIKVS_VIRTUAL_NODES");
    }
    shm_check("failed opens");
}

/* The transport: asked for by options.transport, else MPIKVS_TRANSPORT,
 * else the config's transport, else auto; in use, mpikvs_transport() says
 * which.  auto is ucx where the library has it, but mpi in the
 * coarse-lock mode, which locks MPI windows.  A name that is not a
 * transport fails on every rank, naming it and where it came from. */
static const char *auto_transport(void)
{
#ifdef HAVE_UCX
    return strcmp(T.mode, "coarse-lock") == 0 ? "mpi" : "ucx";
#else
    return "mpi";
#endif
}

static void open_transport_is(const mpikvs_options_t *o, const char *want,
                              const char *what)
{
    mpikvs_t   *kvs = open_ok(o, what);
    const char *tr;

    if (!kvs)
        return;
    tr = mpikvs_transport(kvs);
    EXPECT(tr && strcmp(tr, want) == 0,
           "%s: mpikvs_transport = \"%s\", want \"%s\"", what,
           tr ? tr : "(null)", want);
    close_ok(&kvs, what);
}

/* ucx asked for: in use, but never in the coarse-lock mode, and not in a
 * library built without UCX */
static void ucx_asked(const mpikvs_options_t *o, const char *what)
{
#ifdef HAVE_UCX
    if (strcmp(T.mode, "coarse-lock") != 0)
        open_transport_is(o, "ucx", what);
    else
        open_fails(o, MPIKVS_ERR_INVAL, what,
                   "the coarse-lock mode needs the mpi transport");
#else
    open_fails(o, MPIKVS_ERR_TRANSPORT, what, "built without UCX");
#endif
}

static void test_transport(void)
{
    static const char json[] =
        "{\"version\": 1, \"tables\": {\"t\": {\"transport\": \"mpi\",\n"
        "  \"key\": {\"key_size\": 8}, \"value\": {\"value_size\": 8}}}}\n";
    const char      *was = getenv("MPIKVS_TRANSPORT");
    char             keep[64] = "", path[128];
    mpikvs_options_t o = opts(KS, VS, 1u << 16, T.mode);
    FILE            *f;

    if (was)
        snprintf(keep, sizeof keep, "%s", was);
    EXPECT(mpikvs_transport(NULL) == NULL,
           "mpikvs_transport(NULL) is not NULL");

    unsetenv("MPIKVS_TRANSPORT");
    open_transport_is(&o, auto_transport(), "transport: the default");
    setenv("MPIKVS_TRANSPORT", "mpi", 1);
    open_transport_is(&o, "mpi", "transport: MPIKVS_TRANSPORT=mpi");
    setenv("MPIKVS_TRANSPORT", "auto", 1);
    open_transport_is(&o, auto_transport(),
                      "transport: MPIKVS_TRANSPORT=auto");
    setenv("MPIKVS_TRANSPORT", "ucx", 1);
    ucx_asked(&o, "transport: MPIKVS_TRANSPORT=ucx");

    setenv("MPIKVS_TRANSPORT", "bogus", 1);
    open_fails(&o, MPIKVS_ERR_INVAL, "transport: MPIKVS_TRANSPORT=bogus",
               "MPIKVS_TRANSPORT 'bogus' is not a transport (accepted: "
               "auto, mpi, ucx)");
    /* the option before the variable */
    o.transport = "mpi";
    open_transport_is(&o, "mpi", "transport: options.transport=mpi over "
                                  "MPIKVS_TRANSPORT=bogus");
    o.transport = "auto";
    open_transport_is(&o, auto_transport(),
                      "transport: options.transport=auto");
    o.transport = "ucx";
    ucx_asked(&o, "transport: options.transport=ucx");
    unsetenv("MPIKVS_TRANSPORT");
    o.transport = "";
    open_fails(&o, MPIKVS_ERR_INVAL, "transport: options.transport=\"\"",
               "options.transport '' is not a transport");
    o.transport = "MPI";
    open_fails(&o, MPIKVS_ERR_INVAL, "transport: options.transport=MPI",
               "options.transport 'MPI' is not a transport");

    mt_phase("transport: config");
    snprintf(path, sizeof path, "/tmp/mpikvs-test-transport.%ld.%d.json",
             (long)getpid(), T.rank);
    f = fopen(path, "w");
    if (!f || fputs(json, f) < 0 || fclose(f) != 0)
        mt_abort("cannot write the test config to /tmp");
    o = opts(0, 0, 1u << 16, T.mode);
    o.config = path;
    open_transport_is(&o, "mpi", "transport: the config's transport mpi");
    /* the variable before the config */
    setenv("MPIKVS_TRANSPORT", "bogus", 1);
    open_fails(&o, MPIKVS_ERR_INVAL, "transport: MPIKVS_TRANSPORT=bogus "
               "over the config's mpi", "MPIKVS_TRANSPORT 'bogus'");
    unlink(path);

    if (was)
        setenv("MPIKVS_TRANSPORT", keep, 1);
    else
        unsetenv("MPIKVS_TRANSPORT");
    shm_check("transport");
}

/* Ranks that pass different options to the collective open: an error on
 * every rank, not a hang.  Last, under a short deadline, because a
 * library that does not check hangs here. */
static void test_disagree(void)
{
    static const char *modes[] = { "lockfree", "fine-lock", "coarse-lock" };
    mpikvs_options_t   o;

    if (T.size < 2)
        return;
    mt_deadline(30);
    o = opts(KS, T.rank == 0 ? VS : VS - 8, BIG, T.mode);
    open_fails(&o, MPIKVS_ERR_MISMATCH, "open: ranks disagree on value_size",
               NULL);
    o = opts(KS, VS, T.rank == 0 ? BIG : BIG / 2, T.mode);
    open_fails(&o, MPIKVS_ERR_MISMATCH, "open: ranks disagree on "
               "size_per_node", NULL);
    /* rank 0 in the test's mode, the others in the next one */
    for (int m = 0; m < 3; m++)
        if (strcmp(modes[m], T.mode) == 0)
            o = opts(KS, VS, BIG, T.rank == 0 ? T.mode : modes[(m + 1) % 3]);
    open_fails(&o, MPIKVS_ERR_MISMATCH, "open: ranks disagree on mode",
               NULL);
    /* what was asked must agree, though auto is mpi today: the ranks open
     * the transport together, so they must agree before any opens one */
    o = opts(KS, VS, BIG, T.mode);
    o.transport = T.rank == 0 ? "mpi" : "auto";
    open_fails(&o, MPIKVS_ERR_MISMATCH, "open: ranks disagree on transport",
               "the ranks disagree on the transport");
    shm_check("opens with disagreeing ranks");
}

/* A config with three double key fields of 4 digits: key_size comes from
 * it, and round_key rounds by it. */
static void test_config(void)
{
    static const char json[] =
        "{\n"
        "  \"version\": 1,\n"
        "  \"tables\": {\n"
        "    \"t\": {\n"
        "      \"key\": { \"fields\": [\n"
        "        { \"name\": \"a\", \"type\": \"double\", \"digits\": 4 },\n"
        "        { \"name\": \"b\", \"type\": \"double\", \"digits\": 4 },\n"
        "        { \"name\": \"c\", \"type\": \"double\", \"digits\": 4 }\n"
        "      ] },\n"
        "      \"value\": { \"value_size\": 16 }\n"
        "    }\n"
        "  }\n"
        "}\n";
    enum { CK = 24, CV = 16, GUARD = 64 };
    char             path[128];
    FILE            *f;
    mpikvs_options_t o = opts(0, 0, 1u << 20, T.mode);
    mpikvs_t        *kvs;
    unsigned char    k1[GUARD], k2[GUARD];
    unsigned char   *key = malloc(CK), *val = malloc(CV);
    int              rc;

    if (!key || !val)
        mt_abort("out of memory");
    mt_phase("config: write");
    snprintf(path, sizeof path, "/tmp/mpikvs-test-basic.%ld.%d.json",
             (long)getpid(), T.rank);
    f = fopen(path, "w");
    if (!f || fputs(json, f) < 0 || fclose(f) != 0)
        mt_abort("cannot write the test config to /tmp");
    o.config = path;
    kvs = open_ok(&o, "config: open");
    unlink(path);
    if (!kvs) {
        free(key);
        free(val);
        return;
    }

    EXPECT(mpikvs_key_size(kvs) == CK && mpikvs_value_size(kvs) == CV,
           "config: mpikvs_key_size %zu, mpikvs_value_size %zu; the config "
           "says %d and %d", mpikvs_key_size(kvs), mpikvs_value_size(kvs),
           CK, CV);
    mt_phase("config: round_key");
    {
        /* 4 elements: the n=4 call must not read past the third */
        const double x1[4] = { 1.23456, 2.5, -7.0, 0.0 };
        const double x2[3] = { 1.23459, 2.50001, -7.0002 };   /* same */
        const double x3[3] = { 1.2344, 2.5, -7.0 };           /* a differs */
        const double x4[3] = { 1.23456, 2.5, -7.01 };         /* c differs */
        const double z1[3] = { 0.0, 1.0, 2.0 };
        const double z2[3] = { -0.0, 1.0, 2.0 };
        const double bad[3][3] = {
            { NAN, 1.0, 2.0 }, { 1.0, INFINITY, 2.0 }, { 1.0, 2.0, -INFINITY }
        };

        memset(k1, 0xa5, GUARD);
        rc = mpikvs_round_key(kvs, x1, 3, k1);
        EXPECT(rc == MPIKVS_OK, "round_key = %d (%s): %s", rc,
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
        for (int i = CK; i < GUARD; i++)
            if (k1[i] != 0xa5) {
                EXPECT(0, "round_key wrote byte %d; key_size from the "
                       "config is %d", i, CK);
                break;
            }
        memset(k2, 0xa5, GUARD);
        rc = mpikvs_round_key(kvs, x2, 3, k2);
        EXPECT(rc == MPIKVS_OK && memcmp(k1, k2, CK) == 0,
               "round_key: values equal to 4 digits give different keys "
               "(rc %d)", rc);
        rc = mpikvs_round_key(kvs, x3, 3, k2);
        EXPECT(rc == MPIKVS_OK && memcmp(k1, k2, CK) != 0,
               "round_key: 1.23456 and 1.2344 give the same key (rc %d)",
               rc);
        rc = mpikvs_round_key(kvs, x4, 3, k2);
        EXPECT(rc == MPIKVS_OK && memcmp(k1, k2, CK) != 0,
               "round_key: -7.0 and -7.01 give the same key (rc %d)", rc);
        rc = mpikvs_round_key(kvs, z1, 3, k1);
        EXPECT(rc == MPIKVS_OK, "round_key(0.0) = %d", rc);
        rc = mpikvs_round_key(kvs, z2, 3, k2);
        EXPECT(rc == MPIKVS_OK && memcmp(k1, k2, CK) == 0,
               "round_key: -0.0 and 0.0 give different keys (rc %d)", rc);
        for (int i = 0; i < 3; i++) {
            rc = mpikvs_round_key(kvs, bad[i], 3, k2);
            EXPECT(rc == MPIKVS_ERR_INVAL, "round_key(%g, %g, %g) = %d (%s),"
                   " want MPIKVS_ERR_INVAL", bad[i][0], bad[i][1], bad[i][2],
                   rc, mpikvs_strerror(rc));
        }
        rc = mpikvs_round_key(kvs, x1, 2, k2);
        EXPECT(rc == MPIKVS_ERR_INVAL, "round_key with n=2 of 3 fields = %d "
               "(%s)", rc, mpikvs_strerror(rc));
        rc = mpikvs_round_key(kvs, x1, 4, k2);
        EXPECT(rc == MPIKVS_ERR_INVAL, "round_key with n=4 of 3 fields = %d "
               "(%s)", rc, mpikvs_strerror(rc));
        rc = mpikvs_round_key(kvs, NULL, 3, k2);
        EXPECT(rc == MPIKVS_ERR_INVAL, "round_key(in NULL) = %d", rc);
        rc = mpikvs_round_key(kvs, x1, 3, NULL);
        EXPECT(rc == MPIKVS_ERR_INVAL, "round_key(key NULL) = %d", rc);
    }

    /* rounded keys through the table: a rank finds another rank's entry
     * by inputs that round the same; buffers are exactly the config's
     * sizes */
    mt_phase("config: put/get by rounded keys");
    {
        double   in[3] = { T.rank + 1.23456, 2.5, -7.0 };
        uint64_t word[2] = { 0x5eed0000u + (uint64_t)T.rank, ~(uint64_t)0 };
        int      peer = (T.rank + 1) % T.size;

        rc = mpikvs_round_key(kvs, in, 3, key);
        EXPECT(rc == MPIKVS_OK, "round_key = %d", rc);
        memcpy(val, word, CV);
        for (int turn = 0; turn < turns(); turn++) {
            if (my_turn(turn)) {
                rc = mpikvs_put(kvs, key, val);
                EXPECT(rc == MPIKVS_OK, "config: put = %d (%s)", rc,
                       mpikvs_strerror(rc));
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        fence_ok(kvs, "config: fence");
        in[0] = peer + 1.234564;
        in[1] = 2.500004;
        rc = mpikvs_round_key(kvs, in, 3, key);
        EXPECT(rc == MPIKVS_OK, "round_key = %d", rc);
        memset(val, 0, CV);
        rc = mpikvs_get(kvs, key, val);
        memcpy(word, val, CV);
        EXPECT(rc == MPIKVS_OK && word[0] == 0x5eed0000u + (uint64_t)peer &&
               word[1] == ~(uint64_t)0, "config: get of rank %d's rounded "
               "key = %d, value %llx %llx", peer, rc,
               (unsigned long long)word[0], (unsigned long long)word[1]);
    }
    close_ok(&kvs, "config: close");
    free(key);
    free(val);
    shm_check("config table");
}

/* A table over part of the ranks: the two halves of the job (even and
 * odd ranks) open one table each, at the same time; neither sees the
 * other's keys.  Then every rank opens one over MPI_COMM_SELF. */
static void test_subcomm(void)
{
    mpikvs_options_t o = opts(KS, VS, 1u << 20, T.mode);
    MPI_Comm         half;
    mpikvs_t        *kvs = NULL;
    struct tally     t = { 0 };
    int              hrank, hsize, rc, ok, all;

    if (T.size >= 2) {
        mt_phase("subcomm: open over half the ranks");
        MPI_Comm_split(MPI_COMM_WORLD, T.rank % 2, T.rank, &half);
        MPI_Comm_rank(half, &hrank);
        MPI_Comm_size(half, &hsize);
        rc = mpikvs_open(half, &o, &kvs);
        if (T.vnodes > hsize && rc == MPIKVS_ERR_INVAL) {
            /* more virtual nodes than ranks: refused, as over SELF */
            EXPECT(kvs == NULL, "subcomm: failed open left a handle");
        } else {
            EXPECT(rc == MPIKVS_OK && kvs, "subcomm: mpikvs_open over %d of "
                   "%d ranks = %d (%s): %s", hsize, T.size, rc,
                   mpikvs_strerror(rc), mpikvs_last_error(NULL));
        }
        ok = rc == MPIKVS_OK && kvs;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, half);
        if (!all && ok)
            mt_abort("mpikvs_open over a subcommunicator succeeded on some "
                     "ranks only");
        if (all) {
            /* both halves put key (TAG_TWO, 1000 + hrank) with their
             * parity as version */
            for (int turn = 0; turn < (T.lockmode ? 1 : hsize); turn++) {
                if (T.lockmode || turn == hrank)
                    put_one(kvs, TAG_TWO, 1000u + (uint32_t)hrank, 0,
                            (uint64_t)(T.rank % 2), &t, "subcomm: put");
                MPI_Barrier(half);
            }
            fence_ok(kvs, "subcomm: fence");
            for (int r = 0; r < hsize; r++)
                get_check(kvs, TAG_TWO, 1000u + (uint32_t)r, 0,
                          (uint64_t)(T.rank % 2), &t, "subcomm: get");
            EXPECT(t.hits == (uint64_t)hsize && t.stale == 0 && t.wrong == 0,
                   "subcomm: %llu of %d keys hit, %llu from the other half's "
                   "table, %llu wrong", (unsigned long long)t.hits, hsize,
                   (unsigned long long)t.stale, (unsigned long long)t.wrong);
            mt_phase("subcomm: close");
            rc = mpikvs_close(&kvs);
            EXPECT(rc == MPIKVS_OK && !kvs, "subcomm: mpikvs_close = %d",
                   rc);
        }
        MPI_Comm_free(&half);
        shm_check("tables over half the ranks");
    }

    /* over MPI_COMM_SELF (also when MPIKVS_VIRTUAL_NODES asks for more
     * nodes than the communicator has ranks): an error or a working
     * table, never a hang or a crash */
    mt_phase("subcomm: open over MPI_COMM_SELF");
    kvs = NULL;
    rc = mpikvs_open(MPI_COMM_SELF, &o, &kvs);
    EXPECT(rc == MPIKVS_OK || rc < 0, "self: mpikvs_open = %d", rc);
    EXPECT((rc == MPIKVS_OK) == (kvs != NULL), "self: mpikvs_open = %d, "
           "handle %p", rc, (void *)kvs);
    if (rc == MPIKVS_OK && kvs) {
        struct tally t1 = { 0 };

        put_one(kvs, TAG_TWO, 2000, (uint64_t)T.rank, 7, &t1, "self: put");
        fence_ok(kvs, "self: fence");
        get_check(kvs, TAG_TWO, 2000, (uint64_t)T.rank, 7, &t1, "self: get");
        EXPECT(t1.hits == 1, "self: own key missed");
        /* another rank's key is in another table */
        get_check(kvs, TAG_TWO, 2000, (uint64_t)((T.rank + 1) % T.size), 7,
                  &t1, "self: get other");
        EXPECT(T.size == 1 || t1.hits == 1, "self: a table over "
               "MPI_COMM_SELF holds another rank's key");
        mt_phase("self: close");
        rc = mpikvs_close(&kvs);
        EXPECT(rc == MPIKVS_OK && !kvs, "self: mpikvs_close = %d", rc);
    } else if (T.rank == 0) {
        mt_note("self: mpikvs_open over MPI_COMM_SELF = %d (%s): %s", rc,
                mpikvs_strerror(rc), mpikvs_last_error(NULL));
    }
    shm_check("tables over MPI_COMM_SELF");
}

static void open_area(void)
{
    test_bad_open();
    test_config();
    test_transport();
    test_subcomm();
    test_disagree();
}

TABLE_TEST_MAIN(open_area)
