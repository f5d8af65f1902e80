/*
 * absent.c - mpikvs_put_if_absent: store a key only where no live slot
 * holds it, and say so when one does.
 *
 * Two racing callers of one key may claim two different free slots of
 * its bucket, so a compare-and-swap on one slot cannot decide alone.
 * A caller claims a slot as a put does, then looks at the bucket again,
 * after a full fence, so that of two claims at least one sees the other
 * (kvs_slot_absent_step):
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
 * The same steps run on the own node's shared memory and, lock-free with
 * the CPU's atomics, through the transport; under a lock nobody races, and
 * lock-free without them (the mpi transport) it is a lookup, then a put,
 * which a racing put can still beat (mpikvs(3)).
 */
#include <string.h>

#include "mpikvs.h"
#include "ops.h"
#include "slot.h"

/* Where the steps run: shared memory, or the transport. */
struct absent_io {
    bool shared;
    /* the bucket as it is now */
    int (*bucket)(mpikvs_t *kvs, const struct kvs_key *k, unsigned char **b);
    /* compare-and-swap of slot i's meta word, ordered as a full fence;
     * *seen: the word before */
    int (*cas)(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
               uint64_t expect, uint64_t desired, uint64_t *seen);
    /* key, value and checksum into slot i, which the caller claimed */
    int (*write)(mpikvs_t *kvs, const struct kvs_key *k, unsigned char *b,
                 uint64_t i, const void *value);
};

static int shared_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                         unsigned char **b)
{
    *b = kvs_bucket_prefetch(kvs, k);
    return MPIKVS_OK;
}

static int shared_cas(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                      uint64_t expect, uint64_t desired, uint64_t *seen)
{
    uint64_t *m = kvs_meta_at(kvs->buckets + k->bucket * kvs->bucket_size,
                              i);

    *seen = expect;
    __atomic_compare_exchange_n(m, seen, desired, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    /* the loads of the next look come after the claim, in every order the
     * other claimer's may see (store-load: the fence, not the CAS's own
     * ordering, is what C promises that of) */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return MPIKVS_OK;
}

static int shared_write(mpikvs_t *kvs, const struct kvs_key *k,
                        unsigned char *b, uint64_t i, const void *value)
{
    kvs_slot_write_claimed(kvs, b, i, k, value);
    return MPIKVS_OK;
}

static const struct absent_io shared_io = {true, shared_bucket, shared_cas,
                                           shared_write};

/* Through the transport: a copy of the bucket in kvs->scratch; the
 * target's CPU runs the compare-and-swap (transport.h, cpu_atomic), a
 * locked instruction there, and completes it before the next read. */
static int far_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                      unsigned char **b)
{
    *b = kvs->scratch;
    return kvs_fetch_bucket(kvs, k, kvs->scratch);
}

static int far_cas(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                   uint64_t expect, uint64_t desired, uint64_t *seen)
{
    int rc = kvs->tp->cas64(kvs, k->node, kvs_meta_disp(kvs, k->bucket, i),
                            expect, desired, seen);

    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

static int far_write(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *b, uint64_t i, const void *value)
{
    int rc;

    (void)b;
    kvs_slot_image(kvs, k, value, kvs->slot_image);
    rc = kvs->tp->write(kvs, k->node, kvs_slot_disp(kvs, k->bucket, i),
                        kvs->slot_image, kvs->slot_size);
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

static const struct absent_io far_io = {false, far_bucket, far_cas,
                                        far_write};

/* Hold the claim of slot p->slot until the bucket says what to do; then
 * write, or give the claim back.  Returns the slot choice, SLOT_PRESENT,
 * -1 (gave way: start again) or an error (below -1). */
#define GAVE_WAY (-1)
static int decide(mpikvs_t *kvs, const struct kvs_key *k,
                  const struct absent_io *io, const struct slot_pick *p,
                  struct kvs_busy *w, const void *value, void *present)
{
    uint64_t claim = kvs_slot_claim(p->meta, kvs_slot_owner(kvs, io->shared));
    uint64_t seen, wait_slot = 0, wait_meta = 0;
    unsigned char *b;
    enum absent_step step;
    int rc;

    for (;;) {
        if ((rc = io->bucket(kvs, k, &b)) != MPIKVS_OK)
            return rc;
        step = kvs_slot_absent_step(
            kvs, b, io->shared, kvs_slot_takeover(kvs, w, io->shared) ==
                                    TAKEOVER_DEAD,
            k, p->slot, p->seen, present, &wait_slot, &wait_meta);
        if (step != ABSENT_WAIT)
            break;
        if (!kvs_slot_busy_wait(w)) {
            /* the live claim after ours may still write: ours goes back,
             * so that at most that one wins */
            rc = io->cas(kvs, k, p->slot, claim, p->seen, &seen);
            return rc != MPIKVS_OK ? rc
                                   : kvs_slot_stalled(kvs, k,
                                                      "mpikvs_put_if_absent",
                                                      wait_slot, wait_meta);
        }
    }
    if (step == ABSENT_WRITE) {
        rc = io->write(kvs, k, b, p->slot, value);
        /* BUSY off; a write that claims nothing may have overwritten the
         * slot (slot.c, kvs_slot_put_shared) */
        if (rc == MPIKVS_OK)
            rc = io->cas(kvs, k, p->slot, claim, p->meta, &seen);
        return rc == MPIKVS_OK ? (int)p->choice : rc;
    }
    /* the slot as it was: free, or the entry it held, untouched */
    if ((rc = io->cas(kvs, k, p->slot, claim, p->seen, &seen)) != MPIKVS_OK)
        return rc;
    return step == ABSENT_PRESENT ? SLOT_PRESENT : GAVE_WAY;
}

static int put_absent(mpikvs_t *kvs, const struct kvs_key *k,
                      const struct absent_io *io, const void *value,
                      void *present)
{
    uint32_t owner = kvs_slot_owner(kvs, io->shared);
    struct kvs_busy w = {0};
    struct slot_pick p;
    unsigned char *b;
    uint64_t seen;
    int rc;

    for (;;) {
        uint64_t torn = 0, meta = 0;
        if ((rc = io->bucket(kvs, k, &b)) != MPIKVS_OK)
            return rc;
        if (kvs_slot_find(kvs, b, io->shared, k, present, &torn, &meta) ==
            SLOT_HIT)
            return SLOT_PRESENT;
        if (!kvs_slot_pick(kvs, b, io->shared, k,
                           kvs_slot_takeover(kvs, &w, io->shared), &p)) {
            if (!kvs_slot_busy_wait(&w))
                return kvs_slot_stalled(kvs, k, "mpikvs_put_if_absent",
                                        p.slot, p.seen);
            continue;
        }
        rc = io->cas(kvs, k, p.slot, p.seen, kvs_slot_claim(p.meta, owner),
                     &seen);
        if (rc != MPIKVS_OK)
            return rc;
        if (seen != p.seen)
            continue;   /* another put changed the slot: pick again */
        rc = decide(kvs, k, io, &p, &w, value, present);
        if (rc != GAVE_WAY)
            return rc;
        /* gave way to a live claim before ours: wait for it (past the
         * bound, the next pick, which waits for that claim, says so) */
        (void)kvs_slot_busy_wait(&w);
    }
}

int kvs_put_absent_direct(mpikvs_t *kvs, const struct kvs_key *k,
                          const void *value, void *present)
{
    return put_absent(kvs, k, &shared_io, value, present);
}

/* Another node's key, under the mode's lock (ops.h, kvs_locked).  in:
 * the value; out: where a present value goes, or NULL. */
static int put_absent_far(mpikvs_t *kvs, const struct kvs_key *k,
                          const void *in, void *out)
{
    uint64_t torn = 0, meta = 0;
    unsigned char *b;
    int rc;

    if (kvs_shipped(kvs, k->node))
        return kvs_ship_one(kvs, k, KVS_SHIP_PUT_ABSENT, in, out);
    if (kvs->mode == KVSHM_MODE_LOCKFREE && kvs->tp->cpu_atomic)
        return put_absent(kvs, k, &far_io, in, out);
    /* under a lock, or lock-free without CPU atomics: look, then put */
    if ((rc = far_bucket(kvs, k, &b)) != MPIKVS_OK)
        return rc;
    if (kvs_slot_find(kvs, b, false, k, out, &torn, &meta) == SLOT_HIT)
        return SLOT_PRESENT;
    return kvs_put_unclaimed(kvs, k, in);
}

int mpikvs_put_if_absent(mpikvs_t *kvs, const void *key, const void *value,
                         void *present)
{
    struct kvs_key k;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_put_if_absent");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_put_if_absent: key and value must not be "
                        "NULL");
    kvs_key_make(kvs, key, &k);
    rc = kvs_direct(kvs, &k)
             ? kvs_put_absent_direct(kvs, &k, value, present)
             : kvs_locked(kvs, &k, true, put_absent_far, value, present);
    if (rc < 0)
        return rc;
    if (rc == SLOT_PRESENT)
        return MPIKVS_PRESENT;
    kvs_count_put(kvs, rc);
    return MPIKVS_OK;
}
