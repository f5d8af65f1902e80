/*
 * test_basic.c - put, get, update, eviction, batches, stats, bad input
 * and key rounding of libmpikvs, in the mode given as argv[1]
 * (lockfree | fine-lock | coarse-lock).
 *
 * Run under mpirun with any number of ranks; MPIKVS_VIRTUAL_NODES=N makes
 * N blocks of consecutive ranks act as nodes (the remote path).  Every
 * rank checks what it sees; see mpitest.h for the output.
 *
 * Sections, in order: opens that must fail; an 8 MiB table (puts, gets
 * of every rank's keys, absent keys, updates, stats of every scope,
 * batches of 1, 7, 64 and 1000 against single operations, bad calls,
 * close twice); a 4 KiB table (evictions, no wrong value); the eviction
 * victim in a full bucket; two handles at once; a JSON config (key size
 * and rounding); the transport (option, MPIKVS_TRANSPORT, config, bad
 * names); tables over half the ranks and over MPI_COMM_SELF;
 * ranks that disagree about the options (last: a library that does not
 * check them hangs there).  After each table, no mpikvs.* file of this
 * job may be left in the regions' directory (MPIKVS_SHM_DIR or /dev/shm).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "config.h"   /* HAVE_UCX */

#include "mpikvs.h"
#include "mpitest.h"

#define KS      80u             /* key bytes */
#define VS      104u            /* value bytes */
#define NKEYS   256u            /* keys a rank puts in the big table */
#define BIG     (8u << 20)      /* size_per_node of the big table */
#define TINY    4096u           /* size_per_node of the tiny table */
#define NTINY   300u            /* keys a rank puts in the tiny table */

enum tag {                      /* key families */
    TAG_MAIN = 1,
    TAG_BATCH_PUT,
    TAG_BATCH_DUP,
    TAG_TINY,
    TAG_TWO,
    TAG_ASYNC,
    TAG_ABSENT = 99
};

static struct {
    int         rank, size;
    const char *mode;
    int         lockmode;       /* fine-lock or coarse-lock */
    int         nnodes;         /* nodes as the library sees them */
    int         vnodes;         /* MPIKVS_VIRTUAL_NODES, or 0 */
    MPI_Comm    node;           /* ranks of my node (library's view) */
    int         node_known;     /* node computed, not guessed */
    int         shm_leader;     /* lists the shm dir for its machine */
} T;

/* ---------------------------------------------------------------- shm */

#define MAXNAMES 512

struct names {
    int  n;
    char v[MAXNAMES][256];
};

/* The job ids this job's tables get start "u<pid of a rank>-": other
 * programs' regions (another test run at the same time) are not ours. */
static int   *job_pids;
static int    njob_pids;

/* where the library makes the regions (mpikvs(3), MPIKVS_SHM_DIR) */
static const char *shm_dir(void)
{
    const char *d = getenv("MPIKVS_SHM_DIR");
    return d && *d ? d : "/dev/shm";
}

static int ours(const char *name)
{
    char prefix[32];

    for (int i = 0; i < njob_pids; i++) {
        snprintf(prefix, sizeof prefix, "mpikvs.u%x-", (unsigned)job_pids[i]);
        if (strncmp(name, prefix, strlen(prefix)) == 0)
            return 1;
    }
    return 0;
}

static void shm_list(struct names *out)
{
    DIR           *d;
    struct dirent *e;

    out->n = 0;
    if (!T.shm_leader)
        return;
    d = opendir(shm_dir());
    if (!d)
        return;
    while ((e = readdir(d)) != NULL && out->n < MAXNAMES) {
        if (ours(e->d_name))
            snprintf(out->v[out->n++], sizeof out->v[0], "%s", e->d_name);
    }
    closedir(d);
}

static int names_has(const struct names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

static struct names shm_before, shm_now;

/* Collective: nothing named mpikvs.* appeared in the shm dir since
 * shm_before was taken. */
static void shm_check(const char *when)
{
    MPI_Barrier(MPI_COMM_WORLD);
    shm_list(&shm_now);
    for (int i = 0; i < shm_now.n; i++)
        EXPECT(names_has(&shm_before, shm_now.v[i]),
               "after %s: %s/%s was left behind", when, shm_dir(),
               shm_now.v[i]);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ------------------------------------------------------------- helpers */

static int agreed(int v)
{
    return mt_all_same(v, MPI_COMM_WORLD);
}

static mpikvs_options_t opts(size_t ks, size_t vs, size_t size,
                             const char *mode)
{
    mpikvs_options_t o;

    o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    o.key_size = ks;
    o.value_size = vs;
    o.size_per_node = size;
    o.mode = mode;
    return o;
}

/* Open that must succeed on every rank; NULL on failure (counted). */
static mpikvs_t *open_ok(const mpikvs_options_t *o, const char *what)
{
    mpikvs_t *kvs = NULL;
    int       rc, ok, all;

    mt_phase(what);
    rc = mpikvs_open(MPI_COMM_WORLD, o, &kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_open = %d (%s): %s", what, rc,
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
    EXPECT((rc == MPIKVS_OK) == (kvs != NULL),
           "%s: mpikvs_open = %d but handle %p", what, rc, (void *)kvs);
    ok = rc == MPIKVS_OK && kvs != NULL;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all && ok)
        mt_abort("mpikvs_open succeeded on some ranks only; close would "
                 "hang");
    return all ? kvs : NULL;
}

static void close_ok(mpikvs_t **kvs, const char *what)
{
    int rc;

    mt_phase(what);
    rc = mpikvs_close(kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_close = %d (%s)", what, rc,
           mpikvs_strerror(rc));
    EXPECT(*kvs == NULL, "%s: handle not NULL after mpikvs_close", what);
}

/* Open that must fail on every rank with want (0: any error). */
static void open_fails(const mpikvs_options_t *o, int want,
                       const char *what, const char *must_name)
{
    mpikvs_t   *kvs = (mpikvs_t *)&kvs;   /* must become NULL */
    const char *msg;
    int         rc, ok, lo, hi;

    mt_phase(what);
    rc = mpikvs_open(MPI_COMM_WORLD, o, &kvs);
    msg = mpikvs_last_error(NULL);
    if (want)
        EXPECT(rc == want, "%s: mpikvs_open = %d (%s), want %d (%s)", what,
               rc, mpikvs_strerror(rc), want, mpikvs_strerror(want));
    else
        EXPECT(rc < 0, "%s: mpikvs_open = %d (%s), want an error", what, rc,
               mpikvs_strerror(rc));
    if (rc < 0) {
        EXPECT(kvs == NULL, "%s: failed open left the handle %p", what,
               (void *)kvs);
        EXPECT(msg && *msg, "%s: mpikvs_last_error(NULL) is empty", what);
        EXPECT(mpikvs_strerror(rc) && *mpikvs_strerror(rc),
               "%s: mpikvs_strerror(%d) is empty", what, rc);
        if (must_name && msg)
            EXPECT(strstr(msg, must_name) != NULL,
                   "%s: mpikvs_last_error(NULL) = \"%s\" does not name "
                   "\"%s\"", what, msg, must_name);
    }
    ok = rc == MPIKVS_OK && kvs != NULL && kvs != (mpikvs_t *)&kvs;
    MPI_Allreduce(&ok, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi)
        mt_abort("mpikvs_open succeeded on some ranks only; close would "
                 "hang");
    EXPECT(agreed(rc), "%s: ranks got different return codes (mine %d)",
           what, rc);
    if (ok)
        close_ok(&kvs, what);
}

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

static void stats_ok(mpikvs_t *kvs, int scope, mpikvs_stats_t *st,
                     const char *what)
{
    int rc = mpikvs_stats(kvs, scope, st, sizeof *st);

    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_stats(scope %d) = %d (%s)", what,
           scope, rc, mpikvs_strerror(rc));
    if (rc != MPIKVS_OK)
        memset(st, 0, sizeof *st);
}

/* What this rank did, counted by the test. */
struct tally {
    uint64_t gets, hits, misses, puts, wrong, stale;
};

/* Get key (tag, a, b) and check its value has version want (or any
 * version when want is UINT64_MAX). */
static void get_check(mpikvs_t *kvs, uint32_t tag, uint32_t a, uint64_t b,
                      uint64_t want, struct tally *t, const char *what)
{
    unsigned char key[KS], val[VS];
    uint64_t      ver = 0;
    int           rc;

    mt_make_key(tag, a, b, key, KS);
    memset(val, 0xee, VS);
    rc = mpikvs_get(kvs, key, val);
    t->gets++;
    if (rc == MPIKVS_OK) {
        t->hits++;
        if (!mt_value_ok(key, KS, val, VS, &ver)) {
            t->wrong++;
            EXPECT(0, "%s: key (%u,%u,%llu): wrong value (version field "
                   "%llu)", what, tag, a, (unsigned long long)b,
                   (unsigned long long)ver);
        } else if (want != UINT64_MAX && ver != want) {
            t->stale++;
            EXPECT(0, "%s: key (%u,%u,%llu): version %llu, want %llu", what,
                   tag, a, (unsigned long long)b, (unsigned long long)ver,
                   (unsigned long long)want);
        }
    } else if (rc == MPIKVS_MISS) {
        t->misses++;
    } else {
        EXPECT(0, "%s: mpikvs_get(%u,%u,%llu) = %d (%s)", what, tag, a,
               (unsigned long long)b, rc, mpikvs_strerror(rc));
    }
}

static void put_one(mpikvs_t *kvs, uint32_t tag, uint32_t a, uint64_t b,
                    uint64_t version, struct tally *t, const char *what)
{
    unsigned char key[KS], val[VS];
    int           rc;

    mt_make_key(tag, a, b, key, KS);
    mt_make_value(key, KS, version, val, VS);
    rc = mpikvs_put(kvs, key, val);
    t->puts++;
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_put(%u,%u,%llu) = %d (%s): %s", what,
           tag, a, (unsigned long long)b, rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
}

/* Puts that the test reads back in full run rank by rank in lockfree
 * mode, where two writers of one bucket may take the same free slot (a
 * loss the contract allows: "a slot lost to a concurrent writer").  In
 * the lock modes they run at once: the locks must keep them apart.
 *   for (int turn = 0; turn < turns(); turn++) {
 *       if (my_turn(turn)) ...puts...;
 *       MPI_Barrier(MPI_COMM_WORLD);
 *   }                                                                  */
static int turns(void)
{
    return T.lockmode ? 1 : T.size;
}

static int my_turn(int turn)
{
    return T.lockmode || turn == T.rank;
}

static void fence_ok(mpikvs_t *kvs, const char *what)
{
    int rc;

    mt_phase(what);
    rc = mpikvs_fence(kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_fence = %d (%s)", what, rc,
           mpikvs_strerror(rc));
}

/* ------------------------------------------------------------ sections */

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
    mt_phase("big: puts");
    for (int turn = 0; turn < turns(); turn++) {
        if (my_turn(turn))
            for (uint32_t i = 0; i < NKEYS; i++)
                put_one(kvs, TAG_MAIN, (uint32_t)T.rank, i, 0, &t,
                        "big: put");
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fence_ok(kvs, "big: fence after puts");

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

    mt_phase("big: updates");
    for (int turn = 0; turn < turns(); turn++) {
        if (my_turn(turn))
            for (uint32_t i = 0; i < NKEYS; i++)
                put_one(kvs, TAG_MAIN, (uint32_t)T.rank, i, 1, &t,
                        "big: update");
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fence_ok(kvs, "big: fence after updates");
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
        rc = mpikvs_put_batch_start(kvs, n, keys, got1, &r1);
        EXPECT(rc == MPIKVS_OK, "%s: start = %d", what, rc);
        rc = mpikvs_put_batch_start(kvs, n, keys, got2, &r2);
        EXPECT(rc == MPIKVS_OK, "%s: second start = %d", what, rc);
        /* waited for in the other order: they land in the started one */
        EXPECT(mpikvs_wait(kvs, &r2) == MPIKVS_OK &&
               mpikvs_wait(kvs, &r1) == MPIKVS_OK, "%s: wait: %s", what,
               mpikvs_last_error(kvs));
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

static void setup_nodes(void)
{
    const char *vn = getenv("MPIKVS_VIRTUAL_NODES");
    MPI_Comm    phys;
    int         prank, color;

    T.nnodes = mt_node_count();
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, T.rank,
                        MPI_INFO_NULL, &phys);
    MPI_Comm_rank(phys, &prank);
    T.shm_leader = prank == 0;
    if (vn && atoi(vn) > 0) {
        int n = T.nnodes;

        T.vnodes = atoi(vn);
        color = (int)((long)T.rank * n / T.size);
        /* how blocks of unequal size are cut is the library's business */
        T.node_known = T.size % n == 0;
        MPI_Comm_split(MPI_COMM_WORLD, color, T.rank, &T.node);
        MPI_Comm_free(&phys);
    } else {
        T.node = phys;
        T.node_known = 1;
    }
}

int main(int argc, char **argv)
{
    mpikvs_options_t o;
    mpikvs_t        *kvs;
    int              status;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &T.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &T.size);
    T.mode = argc > 1 ? argv[1] : "lockfree";
    T.lockmode = strcmp(T.mode, "lockfree") != 0;
    if (T.lockmode && strcmp(T.mode, "fine-lock") != 0 &&
        strcmp(T.mode, "coarse-lock") != 0) {
        if (T.rank == 0)
            fprintf(stderr, "usage: %s [lockfree|fine-lock|coarse-lock]\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    /* "without a config" must mean it */
    unsetenv("MPIKVS_CONFIG");
    setup_nodes();
    if (T.rank == 0)
        mt_note("mode %s, %d ranks, %d nodes", T.mode, T.size, T.nnodes);

    MPI_Barrier(MPI_COMM_WORLD);
    {
        int pid = (int)getpid();
        MPI_Comm_size(MPI_COMM_WORLD, &njob_pids);
        job_pids = malloc(sizeof(int) * (size_t)njob_pids);
        if (!job_pids)
            mt_abort("out of memory");
        MPI_Allgather(&pid, 1, MPI_INT, job_pids, 1, MPI_INT,
                      MPI_COMM_WORLD);
    }
    shm_list(&shm_before);
    MPI_Barrier(MPI_COMM_WORLD);

    test_bad_open();

    o = opts(KS, VS, BIG, T.mode);
    kvs = open_ok(&o, "big: open");
    if (kvs) {
        int rc;

        test_big(kvs);
        test_batch(kvs);
        test_async(kvs);
        test_bad_calls(kvs);
        close_ok(&kvs, "big: close");
        mt_phase("big: close again");
        rc = mpikvs_close(&kvs);
        EXPECT(rc == MPIKVS_OK || rc == MPIKVS_ERR_INVAL,
               "mpikvs_close of a closed (NULL) handle = %d (%s)", rc,
               mpikvs_strerror(rc));
        rc = mpikvs_close(NULL);
        EXPECT(rc == MPIKVS_OK || rc == MPIKVS_ERR_INVAL,
               "mpikvs_close(NULL) = %d (%s)", rc, mpikvs_strerror(rc));
        shm_check("big table");
    }

    test_async_close();
    test_tiny();
    test_smallest();
    test_evict_order();
    test_two_handles();
    test_config();
    test_transport();
    test_subcomm();
    test_disagree();

    shm_check("the whole test");
    MPI_Comm_free(&T.node);
    status = mt_finish();
    MPI_Finalize();
    return status;
}
