/*
 * mt_table.h - what the MPI tests of a table share (test_open,
 * test_getput, test_batch, test_absent, test_torture, test_counters):
 * the mode given as argv[1] and the job's nodes as the library sees
 * them (T), keys of KS and values of VS bytes in tags of key families,
 * opens that must succeed or fail on every rank, single gets and puts
 * counted in a tally, puts by turns, the check that no table of this job
 * left a region in the regions' directory (MPIKVS_SHM_DIR or /dev/shm),
 * and the small table of the racing phases (open_small) with whether a
 * lock-free put of another node's key claims its slot there (claims).
 * See mpitest.h for EXPECT and the output.
 *
 * Include it in one file of a program only: its state is static.
 */
#ifndef MPIKVS_TESTS_MT_TABLE_H
#define MPIKVS_TESTS_MT_TABLE_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "data_region.h"   /* kvshm_bucket_size: the format's size rule */
#include "mpikvs.h"
#include "mpitest.h"

#define KS      80u             /* key bytes */
#define VS      104u            /* value bytes */
#define NKEYS   256u            /* keys a rank puts in the big table */
#define BIG     (8u << 20)      /* size_per_node of the big table */

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
static inline const char *shm_dir(void)
{
    const char *d = getenv("MPIKVS_SHM_DIR");
    return d && *d ? d : "/dev/shm";
}

static inline int ours(const char *name)
{
    char prefix[32];

    for (int i = 0; i < njob_pids; i++) {
        snprintf(prefix, sizeof prefix, "mpikvs.u%x-", (unsigned)job_pids[i]);
        if (strncmp(name, prefix, strlen(prefix)) == 0)
            return 1;
    }
    return 0;
}

static inline void shm_list(struct names *out)
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

static inline int names_has(const struct names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

static struct names shm_before, shm_now;

/* Collective: nothing named mpikvs.* appeared in the shm dir since
 * shm_before was taken. */
static inline void shm_check(const char *when)
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

static inline int agreed(int v)
{
    return mt_all_same(v, MPI_COMM_WORLD);
}

static inline mpikvs_options_t opts(size_t ks, size_t vs, size_t size,
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
static inline mpikvs_t *open_ok(const mpikvs_options_t *o, const char *what)
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

static inline void close_ok(mpikvs_t **kvs, const char *what)
{
    int rc;

    mt_phase(what);
    rc = mpikvs_close(kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_close = %d (%s)", what, rc,
           mpikvs_strerror(rc));
    EXPECT(*kvs == NULL, "%s: handle not NULL after mpikvs_close", what);
}

/* Open that must fail on every rank with want (0: any error). */
static inline void open_fails(const mpikvs_options_t *o, int want,
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

static inline void stats_ok(mpikvs_t *kvs, int scope, mpikvs_stats_t *st,
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
static inline void get_check(mpikvs_t *kvs, uint32_t tag, uint32_t a,
                             uint64_t b, uint64_t want, struct tally *t,
                             const char *what)
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

static inline void put_one(mpikvs_t *kvs, uint32_t tag, uint32_t a,
                           uint64_t b, uint64_t version, struct tally *t,
                           const char *what)
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
static inline int turns(void)
{
    return T.lockmode ? 1 : T.size;
}

static inline int my_turn(int turn)
{
    return T.lockmode || turn == T.rank;
}

static inline void fence_ok(mpikvs_t *kvs, const char *what)
{
    int rc;

    mt_phase(what);
    rc = mpikvs_fence(kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_fence = %d (%s)", what, rc,
           mpikvs_strerror(rc));
}

/* The big table (BIG bytes a node), opened on every rank, or NULL. */
static inline mpikvs_t *open_big(void)
{
    mpikvs_options_t o = opts(KS, VS, BIG, T.mode);

    return open_ok(&o, "big: open");
}

/* Every rank puts its NKEYS keys of the big table (TAG_MAIN) with
 * version, by turns, and fences: what the gets and batches read. */
static inline void put_main_keys(mpikvs_t *kvs, uint64_t version,
                                 struct tally *t, const char *what)
{
    mt_phase(what);
    for (int turn = 0; turn < turns(); turn++) {
        if (my_turn(turn))
            for (uint32_t i = 0; i < NKEYS; i++)
                put_one(kvs, TAG_MAIN, (uint32_t)T.rank, i, version, t,
                        what);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fence_ok(kvs, what);
}

static inline void setup_nodes(void)
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

/* Call first: MPI_Init, the mode (argv[1]), T, and the regions in the
 * directory before any table of this job.  A mode that is not one ends
 * the program (status 2). */
static inline void table_test_start(int argc, char **argv)
{
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
        exit(2);
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
}

/* Call last: nothing left in the regions' directory; the exit status. */
static inline int table_test_finish(void)
{
    int status;

    shm_check("the whole test");
    MPI_Comm_free(&T.node);
    status = mt_finish();
    MPI_Finalize();
    return status;
}

/* The main of the table test of one API area, which runs the area's
 * sections (AREA, a function); left out where test_areas.c includes the
 * area's file to run every area in one job and calls the sections
 * itself (there a pointer to AREA keeps it from being reported unused). */
#ifdef MT_AREAS_IN_ONE_JOB
#define TABLE_TEST_MAIN(area)                                            \
    static void (*const area##_alone)(void) __attribute__((unused)) = area;
#else
#define TABLE_TEST_MAIN(area)                                            \
    int main(int argc, char **argv)                                      \
    {                                                                    \
        table_test_start(argc, argv);                                    \
        area();                                                          \
        return table_test_finish();                                      \
    }
#endif

/* The insert and put-if-absent phases' table: 8 buckets of 64 slots a
 * node (SMALL_BUCKETS, SMALL_SLOTS), opened or the test is over. */
#define SMALL_BUCKETS 8u
#define SMALL_SLOTS   64u
static inline mpikvs_t *open_small(const char *mode, const char *what)
{
    size_t bucket = kvshm_bucket_size(&(struct kvshm_data_shape){
        KS, VS, SMALL_SLOTS, KVSHM_MODE_LOCKFREE});
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .size_per_node = SMALL_BUCKETS * bucket,
                          .mode = mode, .slots_per_bucket = SMALL_SLOTS};
    mpikvs_t *kvs = NULL;
    char phase_name[64];
    int rc;

    snprintf(phase_name, sizeof phase_name, "open (%s)", what);
    mt_phase(phase_name);
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (rc != MPIKVS_OK) {
        EXPECT(0, "%s: mpikvs_open = %d (%s): %s", what, rc,
               mpikvs_strerror(rc), mpikvs_last_error(NULL));
        mt_abort("mpikvs_open failed");
    }
    return kvs;
}

/* Whether a lock-free put of another node's key claims its slot: not
 * over the mpi transport, whose atomics are not the CPU's (mpikvs(7)). */
static inline bool claims(const char *mode, const char *tp)
{
    return strcmp(mode, "lockfree") != 0 || strcmp(tp, "mpi") != 0 ||
           mt_node_count() == 1;
}

#endif /* MPIKVS_TESTS_MT_TABLE_H */
