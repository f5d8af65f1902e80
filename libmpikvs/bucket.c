/*
 * bucket.c - the bucket protocol (bucket.h): one get, one put and one
 * put-if-absent over a table and a bucket I/O; and the I/O of a bucket in
 * this process's shared memory.  A slot is read, picked, claimed and
 * written as slot.h says.
 *
 * The put-if-absent.  Two racing callers of one key may claim two
 * different free slots of its bucket, so a compare-and-swap on one slot
 * cannot decide alone.  A caller claims a slot as a put does, then looks
 * at the bucket again, after a full fence, so that of two claims at least
 * one sees the other (kvs_slot_absent_step):
 *   - the key verified in a slot: present; the claim is given back, the
 *     slot's old meta word restored (its old entry, never touched);
 *   - a BUSY slot of the key's tag before ours: give the claim back, wait
 *     for that slot, start again;
 *   - a BUSY slot of the key's tag after ours: wait for it and look again;
 *   - none of these: write.
 * Of two claims that see each other, the one after gives way and the one
 * before writes; where only one saw the other, the one that did not
 * writes, and the other waits for it (after it) or gives way (before it),
 * then finds the key.  So every key has one winner.
 *
 * That holds only while no claim is decided away by time: a claimer
 * stopped, descheduled or faulting between its claim and its write has
 * already decided to write, and will.  So a claim is passed over (or its
 * slot taken over) only when its owner is known dead (slot.h, Claims); a
 * live one is waited for, and after KVS_SLOT_STALL_MS the call gives its
 * own claim back and fails with MPIKVS_ERR_STALLED, never with a second
 * winner.
 *
 * Where the I/O has no compare-and-swap (under a lock nobody races; the
 * mpi transport lock-free) it is a lookup, then a put, which a racing put
 * can still beat (mpikvs(3)).
 */
#include <string.h>

#include "bucket.h"
#include "key.h"
#include "route.h"
#include "slot.h"

void kvs_count_put(const struct kvs_table *t, int choice)
{
    KVS_COUNT(t, puts, 1);
    if (choice == SLOT_UPDATE)
        KVS_COUNT(t, updates, 1);
    else if (choice == SLOT_EVICT)
        KVS_COUNT(t, evictions, 1);
}

/* ---- the I/O of a bucket in shared memory ---- */

/* Always inlined where the protocol runs with &kvs_shared_io (WITH_IO,
 * below): the own node's get and put are the hot path. */

static inline __attribute__((always_inline)) int
shared_bucket(struct kvs_access *a, unsigned char **b)
{
    *b = kvs_bucket_prefetch(a->t, a->k);
    return MPIKVS_OK;
}

static inline __attribute__((always_inline)) int
shared_cas(struct kvs_access *a, uint64_t i, uint64_t expect,
           uint64_t desired, uint64_t *seen, bool fence)
{
    uint64_t *m = kvs_meta_at(a->t->buckets +
                                  a->k->bucket * a->t->bucket_size, i);

    /* a claim orders the slot's writes after it, a release before it:
     * both, whichever this is */
    *seen = expect;
    __atomic_compare_exchange_n(m, seen, desired, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    /* put-if-absent: the loads of the next look come after the claim, in
     * every order the other claimer's may see (store-load: the fence, not
     * the CAS's own ordering, is what C promises that of) */
    if (fence)
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return MPIKVS_OK;
}

static inline __attribute__((always_inline)) int
shared_write(struct kvs_access *a, unsigned char *b, uint64_t i,
             const uint64_t *meta, const void *value)
{
    (void)meta;   /* every write in shared memory claims its slot */
    kvs_slot_write_claimed(a->t, b, i, a->k, value);
    return MPIKVS_OK;
}

static inline __attribute__((always_inline)) int
shared_invalidate(struct kvs_access *a, unsigned char *b, uint64_t i,
                  uint64_t meta)
{
    (void)a;
    return kvs_slot_invalidate(b, i, meta);
}

const struct kvs_bucket_io kvs_shared_io = {
    .shared = true,
    .locked = false,
    .bucket = shared_bucket,
    .find = NULL,
    .cas = shared_cas,
    .write = shared_write,
    .invalidate = shared_invalidate};

/* ---- the protocol ---- */

/* The protocol's steps take the I/O as io: the public calls below run
 * them with &kvs_shared_io as a constant, so that the compiler calls the
 * shared memory's steps directly (the own node's get and put are the
 * hot path), and with any other I/O through its pointers. */
#define WITH_IO(a, call)                                                \
    ((a)->io == &kvs_shared_io ? call(a, &kvs_shared_io)                \
                               : call(a, (a)->io))

static inline __attribute__((always_inline)) int
get(struct kvs_access *a, const struct kvs_bucket_io *io, void *value)
{

    for (int attempt = 0;; attempt++) {
        uint64_t torn = 0, meta = 0;
        unsigned char *b = NULL;
        enum slot_found f;
        int rc = io->find ? io->find(a, value, &torn, &meta)
                          : io->bucket(a, &b);

        if (rc < 0)
            return rc;
        f = io->find ? (enum slot_found)rc
                     : kvs_slot_find(a->t, b, io->shared, a->k, value,
                                     &torn, &meta);
        if (f == SLOT_HIT)
            return MPIKVS_OK;
        if (f == SLOT_MISS)
            return MPIKVS_MISS;
        KVS_COUNT(a->t, checksum_retries, 1);
        /* A writer of this slot may be halfway: let it finish (under a
         * lock none is), and read again, or give up on the slot. */
        if (kvs_slot_retry(attempt, !io->locked))
            continue;
        KVS_TORN_HOOK(a->kvs, a->k->bucket, torn);
        /* Against the meta of the read that failed, not a fresh load: a
         * slot rewritten since is another write, and valid. */
        rc = io->invalidate(a, b, torn, meta);
        if (rc < 0)
            return rc;
        if (rc)
            KVS_COUNT(a->t, invalidations, 1);
        return MPIKVS_MISS;
    }
}

/* MPIKVS_ERR_STALLED for a claim of slot i (meta) waited for too long. */
static int stalled(struct kvs_access *a, uint64_t i, uint64_t meta)
{
    a->stall_slot = i;
    a->stall_meta = meta;
    a->claim_stalled = true;
    return MPIKVS_ERR_STALLED;
}

/* Whether the bucket as the I/O gives it holds every slot's key: in
 * shared memory, and in a copy read whole; not in a copy of a route that
 * reads single slots (bucket_far.c: its header and the slots of the
 * key's tag only).  No handle: a serving thread's or a test's, in shared
 * memory or a whole copy. */
static inline __attribute__((always_inline)) bool
keys_at_hand(const struct kvs_access *a, const struct kvs_bucket_io *io)
{
    return io->shared || !a->kvs || !kvs_route(a->kvs, a->k->node)->far_slot;
}

/* Pick the slot a put of a->k goes to, in the bucket as it is now (*b),
 * waiting for the claims in its way as the pick says. */
static inline __attribute__((always_inline)) int
pick(struct kvs_access *a, const struct kvs_bucket_io *io, struct kvs_busy *w,
     unsigned char **b, struct slot_pick *p)
{
    for (;;) {
        int rc = io->bucket(a, b);
        if (rc != MPIKVS_OK)
            return rc;
        if (kvs_slot_pick(a->t, *b, io->shared, keys_at_hand(a, io), a->k,
                          kvs_slot_takeover(w, io->shared, io->locked), p))
            return MPIKVS_OK;
        if (!kvs_slot_busy_wait(w))
            return stalled(a, p->slot, p->seen);
    }
}

static inline __attribute__((always_inline)) int
put(struct kvs_access *a, const struct kvs_bucket_io *io, const void *value)
{
    uint64_t claim, seen = 0;
    struct kvs_busy w = {0};
    struct slot_pick p;
    unsigned char *b;
    int rc;

    if (!io->cas) {   /* written as picked: nothing to claim with */
        if ((rc = pick(a, io, &w, &b, &p)) != MPIKVS_OK)
            return rc;
        rc = io->write(a, b, p.slot, &p.meta, value);
        return rc == MPIKVS_OK ? (int)p.choice : rc;
    }
    do {   /* until the claim finds the meta word the pick saw: another
            * put changed the slot since, and made progress */
        if ((rc = pick(a, io, &w, &b, &p)) != MPIKVS_OK)
            return rc;
        claim = kvs_slot_claim(p.meta, kvs_slot_owner(a->t, io->shared));
        if ((rc = io->cas(a, p.slot, p.seen, claim, &seen, false)) !=
            MPIKVS_OK)
            return rc;
    } while (seen != p.seen);
    rc = io->write(a, b, p.slot, NULL, value);
    /* Done: BUSY off, for the writers that waited for it; unless a write
     * that claims nothing (TAKEOVER_ANY: the mpi transport's) overwrote
     * the slot meanwhile, whose meta stands. */
    if (rc == MPIKVS_OK)
        rc = io->cas(a, p.slot, claim, p.meta, &seen, false);
    return rc == MPIKVS_OK ? (int)p.choice : rc;
}

/* Hold the claim of slot p->slot until the bucket says what to do; then
 * write, or give the claim back.  Returns the slot choice, SLOT_PRESENT,
 * -1 (gave way: start again) or an error (below -1). */
#define GAVE_WAY (-1)
static inline __attribute__((always_inline)) int
decide(struct kvs_access *a, const struct kvs_bucket_io *io,
       const struct slot_pick *p, struct kvs_busy *w, const void *value,
       void *present)
{
    uint64_t claim = kvs_slot_claim(p->meta,
                                    kvs_slot_owner(a->t, io->shared));
    uint64_t seen, wait_slot = 0, wait_meta = 0;
    unsigned char *b;
    enum absent_step step;
    int rc;

    for (;;) {
        if ((rc = io->bucket(a, &b)) != MPIKVS_OK)
            return rc;
        step = kvs_slot_absent_step(
            a->t, b, io->shared,
            kvs_slot_takeover(w, io->shared, io->locked) == TAKEOVER_DEAD,
            a->k, p->slot, p->seen, present, &wait_slot, &wait_meta);
        if (step != ABSENT_WAIT)
            break;
        if (!kvs_slot_busy_wait(w)) {
            /* the live claim after ours may still write: ours goes back,
             * so that at most that one wins */
            rc = io->cas(a, p->slot, claim, p->seen, &seen, true);
            return rc != MPIKVS_OK ? rc : stalled(a, wait_slot, wait_meta);
        }
    }
    if (step == ABSENT_WRITE) {
        rc = io->write(a, b, p->slot, NULL, value);
        /* BUSY off; a write that claims nothing may have overwritten the
         * slot (kvs_bucket_put) */
        if (rc == MPIKVS_OK)
            rc = io->cas(a, p->slot, claim, p->meta, &seen, true);
        return rc == MPIKVS_OK ? (int)p->choice : rc;
    }
    /* the slot as it was: free, or the entry it held, untouched */
    if ((rc = io->cas(a, p->slot, claim, p->seen, &seen, true)) != MPIKVS_OK)
        return rc;
    return step == ABSENT_PRESENT ? SLOT_PRESENT : GAVE_WAY;
}

/* The bucket as it is now, in *b: SLOT_PRESENT where the key verifies
 * in it (its value in present, if not NULL), else MPIKVS_OK, or an
 * error. */
static inline __attribute__((always_inline)) int
look(struct kvs_access *a, const struct kvs_bucket_io *io, unsigned char **b,
     void *present)
{
    uint64_t torn = 0, meta = 0;
    int rc = io->bucket(a, b);

    if (rc != MPIKVS_OK)
        return rc;
    return kvs_slot_find(a->t, *b, io->shared, a->k, present, &torn,
                         &meta) == SLOT_HIT
               ? SLOT_PRESENT
               : MPIKVS_OK;
}

static inline __attribute__((always_inline)) int
put_absent(struct kvs_access *a, const struct kvs_bucket_io *io,
           const void *value, void *present)
{
    uint32_t owner = kvs_slot_owner(a->t, io->shared);
    struct kvs_busy w = {0};
    struct slot_pick p;
    unsigned char *b;
    uint64_t seen;
    int rc;

    if (!io->cas) {   /* nothing to claim with: look, then put */
        rc = look(a, io, &b, present);
        return rc == MPIKVS_OK ? put(a, io, value) : rc;
    }
    for (;;) {
        if ((rc = look(a, io, &b, present)) != MPIKVS_OK)
            return rc;
        if (!kvs_slot_pick(a->t, b, io->shared, keys_at_hand(a, io), a->k,
                           kvs_slot_takeover(&w, io->shared, io->locked),
                           &p)) {
            if (!kvs_slot_busy_wait(&w))
                return stalled(a, p.slot, p.seen);
            continue;
        }
        rc = io->cas(a, p.slot, p.seen, kvs_slot_claim(p.meta, owner),
                     &seen, true);
        if (rc != MPIKVS_OK)
            return rc;
        if (seen != p.seen)
            continue;   /* another put changed the slot: pick again */
        rc = decide(a, io, &p, &w, value, present);
        if (rc != GAVE_WAY)
            return rc;
        /* gave way to a live claim before ours: wait for it (past the
         * bound, the next pick, which waits for that claim, says so) */
        (void)kvs_slot_busy_wait(&w);
    }
}

int kvs_bucket_get(struct kvs_access *a, void *value)
{
#define GET(a, io) get(a, io, value)
    return WITH_IO(a, GET);
#undef GET
}

int kvs_bucket_put(struct kvs_access *a, const void *value)
{
#define PUT(a, io) put(a, io, value)
    return WITH_IO(a, PUT);
#undef PUT
}

int kvs_bucket_put_absent(struct kvs_access *a, const void *value,
                          void *present)
{
#define PUT_ABSENT(a, io) put_absent(a, io, value, present)
    return WITH_IO(a, PUT_ABSENT);
#undef PUT_ABSENT
}
