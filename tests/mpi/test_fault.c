/*
 * test_fault.c - faults libmpikvs must survive: torn slots and their
 * invalidation, a rank that does not come to mpikvs_close, a rank that
 * dies inside the coarse-lock mode.
 *
 *   test_fault MODE invalidate   any np, any MPIKVS_VIRTUAL_NODES
 *   test_fault MODE late-close   np >= 2: the last rank comes to close
 *                                only after the others returned from it
 *   test_fault coarse-lock die-locked
 *                                np >= 2: the last rank takes rank 0's
 *                                window lock and SIGKILLs itself while
 *                                the others run coarse-lock operations;
 *                                the job must be killed (the calling
 *                                script checks what mpirun says)
 *
 * This program is built from the library's own sources with
 * KVS_TEST_HOOKS (tests/mpi/local.mk), so it can corrupt a slot in the
 * node's region and run code between a reader's last torn read and what
 * the reader does about it (kvs_test_torn_hook in slot.h).  libmpikvs
 * itself has no hook.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "mt_key_home.h"
#include "ops.h"
#include "slot.h"
#include "transport.h"

#define KS   32u
#define VS   64u
#define SIZE (1u << 20)

static int rank, size;

static mpikvs_t *open_table(const char *mode)
{
    mpikvs_options_t o;
    mpikvs_t *kvs = NULL;
    int rc;

    o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    o.key_size = KS;
    o.value_size = VS;
    o.size_per_node = SIZE;
    o.mode = mode;
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "rank %d: mpikvs_open: %s\n", rank,
                mpikvs_last_error(NULL));
        mt_abort("mpikvs_open failed");
    }
    return kvs;
}

/* A key of tag whose home is node (the first of a deterministic row). */
static struct kvs_key key_on(mpikvs_t *kvs, uint32_t tag, uint32_t node,
                             unsigned char *key)
{
    return mt_key_home(kvs, tag, node, node, key, KS);
}

/* A slot of this node's region: its bucket and its index there. */
struct at {
    unsigned char *bucket;
    uint64_t       i;
};

/* The slot of key in its home bucket on this node's region: false if
 * the key is in none. */
static bool slot_of(mpikvs_t *kvs, const unsigned char *key, struct at *a)
{
    struct kvs_key k;

    kvs_key_make(kvs, key, &k);
    a->bucket = kvs->tab.buckets + k.bucket * kvs->tab.bucket_size;
    for (a->i = 0; a->i < kvs->tab.slots; a->i++)
        if (memcmp(kvs_slot_at(&kvs->tab, a->bucket, a->i) +
                       KVSHM_SLOT_KV_OFFSET,
                   key, KS) == 0)
            return true;
    return false;
}

static uint64_t meta_of(const struct at *a)
{
    return __atomic_load_n(kvs_meta_at(a->bucket, a->i), __ATOMIC_ACQUIRE);
}

/* Whether a's stamp is the newest of its bucket's live slots. */
static bool newest_in_bucket(mpikvs_t *kvs, const struct at *a)
{
    uint32_t mine = kvshm_meta_stamp(meta_of(a));

    for (uint64_t i = 0; i < kvs->tab.slots; i++) {
        uint64_t m = *kvs_meta_at(a->bucket, i);
        if (kvshm_meta_live(m) &&
            (int32_t)(kvshm_meta_stamp(m) - mine) > 0)
            return false;
    }
    return true;
}

/* Flip a bit of the value in place: the slot no longer verifies. */
static void corrupt(mpikvs_t *kvs, const struct at *a)
{
    __atomic_fetch_xor(kvs_slot_at(&kvs->tab, a->bucket, a->i) +
                           kvshm_slot_value_offset(KS) + VS - 1,
                       0x40, __ATOMIC_SEQ_CST);
}

static uint64_t stat_of(mpikvs_t *kvs, int which)
{
    mpikvs_stats_t st;

    mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, &st, sizeof st);
    return which ? st.invalidations : st.checksum_retries;
}

/* The hook: a valid put of the same key lands between the reader's last
 * torn read and its invalidation. */
static unsigned char hook_key[KS], hook_value[VS];
static int hook_rc, hook_fired;

static void rewrite_hook(mpikvs_t *kvs, uint64_t bucket, uint64_t slot)
{
    (void)bucket;
    (void)slot;
    kvs_test_torn_hook = NULL;
    hook_fired++;
    hook_rc = mpikvs_put(kvs, hook_key, hook_value);
}

/* get key, expecting a hit with value want */
static void expect_hit(mpikvs_t *kvs, const unsigned char *key,
                       const unsigned char *want, const char *what)
{
    unsigned char v[VS];
    int rc = mpikvs_get(kvs, key, v);

    EXPECT(rc == MPIKVS_OK, "%s: get returned %d (%s), want a hit", what,
           rc, mpikvs_strerror(rc));
    EXPECT(rc != MPIKVS_OK || memcmp(v, want, VS) == 0,
           "%s: a hit with the wrong value", what);
}

/* A get that saw the torn slot: a miss, or the rewritten value. */
static void expect_miss_or(mpikvs_t *kvs, const unsigned char *key,
                           const unsigned char *want, const char *what)
{
    unsigned char v[VS];
    int rc = mpikvs_get(kvs, key, v);

    EXPECT(rc == MPIKVS_MISS || (rc == MPIKVS_OK && want &&
                                 memcmp(v, want, VS) == 0),
           "%s: get returned %d (%s)%s", what, rc, mpikvs_strerror(rc),
           rc == MPIKVS_OK ? " with a torn value" : "");
}

/* A slot torn, then validly rewritten while its reader decides: on the
 * own node (direct path) and from another node (remote path). */
static void invalidate_tests(const char *mode)
{
    mpikvs_t *kvs = open_table(mode);
    bool lockfree = strcmp(mode, "lockfree") == 0;
    unsigned char key[KS], v1[VS], v2[VS];
    struct at slot;
    bool found;
    uint64_t before;
    /* a reader through MPI: on another node than node 0 if there is
     * one; in the lock modes, where every get goes through MPI, rank 0
     * itself on one node */
    int remote_reader = kvs->nnodes > 1 ? kvs->leaders[1]
                        : lockfree      ? -1
                                        : 0;

    mt_phase("invalidate: direct, rewritten before the invalidation");
    if (rank == 0 && lockfree) {
        key_on(kvs, 1, 0, key);
        mt_make_value(key, KS, 1, v1, VS);
        mt_make_value(key, KS, 2, v2, VS);
        EXPECT(mpikvs_put(kvs, key, v1) == MPIKVS_OK, "put");
        found = slot_of(kvs, key, &slot);
        EXPECT(found, "the put's slot is in the bucket");
        if (found) {
            /* An invalidation tells a rewrite by its new stamp: the
             * bucket's clock moves on with every write. */
            EXPECT(newest_in_bucket(kvs, &slot),
                   "direct: the put's stamp %#llx is not its bucket's "
                   "newest", (unsigned long long)(meta_of(&slot) >> 32));
            corrupt(kvs, &slot);
            memcpy(hook_key, key, KS);
            memcpy(hook_value, v2, VS);
            hook_fired = 0;
            kvs_test_torn_hook = rewrite_hook;
            before = stat_of(kvs, 1);
            expect_miss_or(kvs, key, v2, "direct: the torn read");
            kvs_test_torn_hook = NULL;
            EXPECT(hook_fired == 1 && hook_rc == MPIKVS_OK,
                   "direct: the hook ran once (%d) and its put worked "
                   "(%d)", hook_fired, hook_rc);
            EXPECT(!(meta_of(&slot) & KVSHM_SLOT_INVALID),
                   "direct: the fresh slot (meta %#llx) was marked "
                   "invalid against the meta of a later write",
                   (unsigned long long)meta_of(&slot));
            expect_hit(kvs, key, v2, "direct: after the rewrite");
            EXPECT(stat_of(kvs, 1) == before,
                   "direct: %llu invalidations counted, want none",
                   (unsigned long long)(stat_of(kvs, 1) - before));
        }
    }

    mt_phase("invalidate: direct, torn for good");
    if (rank == 0 && lockfree) {
        key_on(kvs, 2, 0, key);
        mt_make_value(key, KS, 1, v1, VS);
        EXPECT(mpikvs_put(kvs, key, v1) == MPIKVS_OK, "put");
        if (slot_of(kvs, key, &slot)) {
            uint64_t meta = meta_of(&slot);
            corrupt(kvs, &slot);
            before = stat_of(kvs, 1);
            expect_miss_or(kvs, key, NULL, "direct: torn for good");
            EXPECT(meta_of(&slot) == (meta | KVSHM_SLOT_INVALID),
                   "direct: the torn slot is marked invalid (meta %#llx, "
                   "was %#llx)", (unsigned long long)meta_of(&slot),
                   (unsigned long long)meta);
            EXPECT(stat_of(kvs, 1) == before + 1,
                   "direct: one invalidation counted");
            expect_miss_or(kvs, key, NULL, "direct: the invalid slot");
            EXPECT(mpikvs_put(kvs, key, v1) == MPIKVS_OK, "put again");
            expect_hit(kvs, key, v1, "direct: put after invalidation");
        }
    }

    /* Another node reads a slot of node 0 that node 0 corrupted. */
    mt_phase("invalidate: remote, rewritten before the invalidation");
    key_on(kvs, 3, 0, key);
    mt_make_value(key, KS, 1, v1, VS);
    mt_make_value(key, KS, 2, v2, VS);
    if (rank == 0) {
        EXPECT(mpikvs_put(kvs, key, v1) == MPIKVS_OK, "put");
        found = slot_of(kvs, key, &slot);
        EXPECT(found, "the put's slot is in the bucket");
        if (found)
            corrupt(kvs, &slot);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == remote_reader && lockfree) {
        memcpy(hook_key, key, KS);
        memcpy(hook_value, v2, VS);
        hook_fired = 0;
        kvs_test_torn_hook = rewrite_hook;
        expect_miss_or(kvs, key, v2, "remote: the torn read");
        kvs_test_torn_hook = NULL;
        EXPECT(hook_fired == 1 && hook_rc == MPIKVS_OK,
               "remote: the hook ran once (%d) and its put worked (%d)",
               hook_fired, hook_rc);
        expect_hit(kvs, key, v2, "remote: after the rewrite");
    } else if (rank == remote_reader) {
        /* lock modes: the lock keeps writers out, the slot is torn for
         * good and marked invalid under the lock */
        expect_miss_or(kvs, key, NULL, "remote, locked: torn");
        EXPECT(stat_of(kvs, 1) == 1, "remote, locked: one invalidation "
                                     "(%llu)",
               (unsigned long long)stat_of(kvs, 1));
        EXPECT(mpikvs_put(kvs, key, v2) == MPIKVS_OK, "put");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && remote_reader >= 0) {
        found = slot_of(kvs, key, &slot);
        EXPECT(found && !(meta_of(&slot) & KVSHM_SLOT_INVALID),
               "remote: the slot rewritten by the hook is not marked "
               "invalid");
        expect_hit(kvs, key, v2, "remote: read at home after the rewrite");
    }

    mt_phase("invalidate: remote, torn for good");
    key_on(kvs, 4, 0, key);
    mt_make_value(key, KS, 1, v1, VS);
    uint64_t meta = 0;
    if (rank == 0) {
        EXPECT(mpikvs_put(kvs, key, v1) == MPIKVS_OK, "put");
        if (slot_of(kvs, key, &slot)) {
            meta = meta_of(&slot);
            corrupt(kvs, &slot);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == remote_reader)
        expect_miss_or(kvs, key, NULL, "remote: torn for good");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && remote_reader >= 0 && lockfree &&
        slot_of(kvs, key, &slot)) {
        /* No remote atomic on a word the direct path changes with CPU
         * atomics: the remote reader left the slot alone... */
        EXPECT(meta_of(&slot) == meta,
               "remote: a remote reader changed the meta of a torn slot "
               "(%#llx, was %#llx)", (unsigned long long)meta_of(&slot),
               (unsigned long long)meta);
        /* ...and the home node's direct path repairs it. */
        expect_miss_or(kvs, key, NULL, "home: torn for good");
        EXPECT(meta_of(&slot) == (meta | KVSHM_SLOT_INVALID),
               "home: the torn slot is marked invalid");
    }

    mt_phase("invalidate: close");
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));
}

/* How many live slots of key's bucket on this node hold key, and whether
 * each of them verifies with a value of key. */
static unsigned live_copies(mpikvs_t *kvs, const unsigned char *key,
                            bool *verified)
{
    struct kvs_key k;
    unsigned char *b, value[VS];
    unsigned n = 0;

    kvs_key_make(kvs, key, &k);
    b = kvs->tab.buckets + k.bucket * kvs->tab.bucket_size;
    *verified = true;
    for (uint64_t i = 0; i < kvs->tab.slots; i++) {
        uint64_t meta = *kvs_meta_at(b, i), ver;
        if (!kvshm_meta_live(meta) ||
            memcmp(kvs_slot_at(&kvs->tab, b, i), key, KS) != 0)
            continue;
        n++;
        if (kvshm_slot_read(meta, kvs_slot_at(&kvs->tab, b, i),
                            kvs->tab.slot_size, KS, VS, true, key, k.seed,
                            value) !=
                KVSHM_SLOT_READ_VERIFIED ||
            !mt_value_ok(key, KS, value, VS, &ver))
            *verified = false;
    }
    return n;
}

/* Every rank puts the same keys of node 0 at the same time, each with
 * values of its own: each key must end in one slot, which verifies.
 * Lock-free, the puts of node 0's ranks claim their slot with a
 * compare-and-swap and wait for a BUSY slot of their key's tag; from
 * another node so do those of a transport with the CPU's atomics (the
 * mpi transport's are not: there it is not asserted). */
static void same_key_tests(const char *mode)
{
    enum { KEYS = 300 };
    mpikvs_t *kvs = open_table(mode);
    unsigned char (*keys)[KS] = malloc(KEYS * sizeof(*keys)), v[VS];
    bool claims = strcmp(mode, "lockfree") != 0 || kvs->nnodes == 1 ||
                  kvs->tp->cpu_atomic || kvs_shipped(kvs, 1);
    unsigned dup = 0, bad = 0;

    if (!keys)
        mt_abort("out of memory");
    mt_phase("same key: racing puts");
    for (unsigned i = 0; i < KEYS; i++)
        key_on(kvs, 1000 + i, 0, keys[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (unsigned i = 0; i < KEYS; i++) {
        mt_make_value(keys[i], KS, (uint64_t)rank << 32 | i, v, VS);
        EXPECT(mpikvs_put(kvs, keys[i], v) == MPIKVS_OK, "same key: put");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (unsigned i = 0; i < KEYS; i++) {
            bool ok;
            unsigned n = live_copies(kvs, keys[i], &ok);
            dup += n > 1;
            bad += !ok || n == 0;
        }
        mt_note("same key: %d ranks put %u keys at once: %u in more than "
                "one slot, %u lost or torn%s", size, (unsigned)KEYS, dup, bad,
                claims ? "" : " (not asserted: unclaimed remote puts)");
        if (claims) {
            EXPECT(dup == 0, "same key: %u keys in more than one slot", dup);
            EXPECT(bad == 0, "same key: %u keys lost or torn", bad);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(keys);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));
}

/* Each of values in the environment variable var fails the open with
 * MPIKVS_ERR_INVAL and a message that quotes it. */
static void refused_values(const char *mode, const char *var,
                           const char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                              .key_size = KS, .value_size = VS,
                              .size_per_node = SIZE, .mode = mode};
        mpikvs_t *kvs = NULL;
        char want[96];
        int rc;

        setenv(var, values[i], 1);
        rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
        snprintf(want, sizeof want, "%s='%s'", var, values[i]);
        EXPECT(rc == MPIKVS_ERR_INVAL && !kvs &&
               strstr(mpikvs_last_error(NULL), want),
               "open with %s: %d (%s)", want, rc, mpikvs_last_error(NULL));
        if (kvs)
            mpikvs_close(&kvs);
    }
}

/* Bad MPIKVS_CLOSE_TIMEOUT, MPIKVS_UCX_OPS and MPIKVS_POPULATE values
 * fail the open.  Then the last rank does not come to mpikvs_close until
 * every other rank has returned from it: they must return within
 * MPIKVS_CLOSE_TIMEOUT with an error that says so, and so must the late
 * rank. */
static void late_close(const char *mode)
{
    int late = size - 1, rc, got;
    mpikvs_t *kvs;

    if (size < 2) {
        EXPECT(1, "late-close needs 2 ranks");
        return;
    }
    mt_phase("late-close: bad MPIKVS_CLOSE_TIMEOUT");
    static const char *const bad[] = {"0", "abc", "5s", "-1", "86401",
                                      "99999999999999999999"};
    refused_values(mode, "MPIKVS_CLOSE_TIMEOUT", bad,
                   sizeof bad / sizeof bad[0]);
    setenv("MPIKVS_CLOSE_TIMEOUT", "1", 1);
    /* refused whatever the transport: no silent fallback to another */
    mt_phase("late-close: bad MPIKVS_UCX_OPS");
    static const char *const bad_ops[] = {"RMA", "ships", "auto,rma", " "};
    refused_values(mode, "MPIKVS_UCX_OPS", bad_ops,
                   sizeof bad_ops / sizeof bad_ops[0]);
    unsetenv("MPIKVS_UCX_OPS");
    mt_phase("late-close: bad MPIKVS_POPULATE");
    static const char *const bad_populate[] = {"ALL", "yes", "-1", "1Q"};
    refused_values(mode, "MPIKVS_POPULATE", bad_populate,
                   sizeof bad_populate / sizeof bad_populate[0]);
    unsetenv("MPIKVS_POPULATE");
    kvs = open_table(mode);
    mt_phase("late-close: close");
    if (rank != late) {
        rc = mpikvs_close(&kvs);
        const char *msg = mpikvs_last_error(NULL);
        EXPECT(rc == MPIKVS_ERR_STALLED, "close returned %d (%s), want "
                                         "MPIKVS_ERR_STALLED", rc,
               mpikvs_strerror(rc));
        EXPECT(strstr(msg, "MPIKVS_CLOSE_TIMEOUT") &&
               strstr(msg, "within 1 s"),
               "the message names the timeout: \"%s\"", msg);
        EXPECT(kvs == NULL, "the handle is gone after a failed close");
        mt_note("returned from close: %s", msg);
        MPI_Send(&rc, 1, MPI_INT, late, 7, MPI_COMM_WORLD);
    } else {
        for (int r = 0; r < size - 1; r++) {
            MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            EXPECT(got == MPIKVS_ERR_STALLED, "a rank's close: %d", got);
        }
        mt_phase("late-close: the late close");
        rc = mpikvs_close(&kvs);
        EXPECT(rc == MPIKVS_ERR_STALLED,
               "the late close returned %d (%s), want MPIKVS_ERR_STALLED",
               rc, mpikvs_strerror(rc));
        mt_note("the late close: %s", mpikvs_last_error(NULL));
    }
}

/* The last rank takes rank 0's window lock, then dies; the others keep
 * asking for it.  Only the job's end ends this: the calling script
 * checks that mpirun ends the job and names the dead rank. */
static void die_locked(void)
{
    mpikvs_t *kvs = open_table("coarse-lock");
    int victim = size - 1, one = 1;
    unsigned char key[KS], v[VS];
    uint64_t word;

    if (size < 2 || kvs->leaders[0] == victim)
        mt_abort("die-locked needs 2 ranks and a victim that is not a "
                 "leader");
    mt_phase("die-locked");
    if (rank == victim) {
        for (int r = 0; r < size - 1; r++)
            MPI_Recv(&one, 1, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        kvs->tp->lock_node(kvs, 0, true);
        kvs->tp->read(kvs, 0, 0, &word, sizeof(word));
        kvs->tp->flush(kvs, 0);   /* the lock is ours */
        mt_note("holding rank %d's window lock; SIGKILL",
                kvs->leaders[0]);
        raise(SIGKILL);
    }
    key_on(kvs, 5, 0, key);
    for (uint64_t i = 0;; i++) {
        mt_make_value(key, KS, i, v, VS);
        if (mpikvs_put(kvs, key, v) != MPIKVS_OK ||
            mpikvs_get(kvs, key, v) < 0)
            mt_abort(mpikvs_last_error(kvs));
        if (i == 0)
            MPI_Send(&one, 1, MPI_INT, victim, 8, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "lockfree";
    const char *what = argc > 2 ? argv[2] : "invalidate";

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (strcmp(what, "invalidate") == 0) {
        invalidate_tests(mode);
        same_key_tests(mode);
    }
    else if (strcmp(what, "late-close") == 0)
        late_close(mode);
    else if (strcmp(what, "die-locked") == 0)
        die_locked();
    else
        mt_abort("usage: test_fault MODE invalidate|late-close|die-locked");
    int status = mt_finish();
#ifdef MPICH_VERSION
    /* A close given up on leaves the cache's window (mpikvs(3)), and
     * MPICH 4.0's MPI_Finalize aborts on a window left registered with
     * UCX (an assertion in ucp_cleanup): what MPI does then is not the
     * test's to judge, as its checks are done. */
    if (strcmp(what, "late-close") == 0 &&
        strcmp(mode, "coarse-lock") == 0) {
        fflush(NULL);
        _exit(status);
    }
#endif
    MPI_Finalize();
    return status;
}
