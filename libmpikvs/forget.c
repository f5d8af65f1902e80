/*
 * forget.c - mpikvs_forget: remove a key (a value the program's own
 * check rejected) from its home bucket, on every route a put takes
 * (route.h), and from this rank's remote hits not yet published to the
 * node tier.
 *
 * A slot is removed by setting its meta word to FORGOTTEN, the word of a
 * slot never written: readers skip it (slot_read.h), a put's pick takes
 * it as free (kvs_slot_pick), and the scanner of mpikvs-stat and save
 * see no entry.  How the word changes follows the route's puts:
 *   - lock-free, the own node's shared memory, and another node's
 *     buckets through a transport whose atomics are the CPU's (ucx: a
 *     mapped region, or RMA): a compare-and-swap from the meta word the
 *     look saw.  A put that claimed the slot since (another key evicting
 *     it, or the key written again) changed the word, so the swap fails
 *     and the bucket is looked at again: a put into the slot is never
 *     lost.  A slot of the key's tag that a writer has claimed (BUSY) is
 *     waited for as a put waits (slot.h, Claims), never removed under its
 *     writer; in shared memory, the claim of an owner known dead is
 *     removed if it holds the key (readers ignore BUSY: it could hit).
 *   - a lock mode: the bucket's (fine-lock) or the node's (coarse-lock)
 *     lock keeps every other writer out; the word is written plainly.
 *   - lock-free through the mpi transport (no compare-and-swap atomic
 *     with the home node's): written plainly, as that route's puts are;
 *     a put of the home node into that very slot racing the forget may
 *     then be lost (a later miss, never a wrong value: mpikvs_forget(3)).
 *   - keys shipped whole (ucx without RMA): the key's node runs this
 *     protocol on its shared memory (KVS_SHIP_FORGET) and answers with
 *     the status.
 * Every slot holding the key goes (there is one, but for the mpi
 * transport's lost races, which can leave two).
 */
#include "errors.h"
#include "forget.h"
#include "mpikvs.h"
#include "near.h"
#include "node_tier.h"
#include "ops.h"
#include "slot.h"
#include "slot_read.h"

#define FORGOTTEN UINT64_C(0)   /* a slot as never written */

/* What a look at the bucket says: remove slot *i (its meta *seen), wait
 * for a claim of the key's tag (*i, *seen: the claim), or done. */
enum forget_step { FORGET_REMOVE, FORGET_WAIT, FORGET_DONE };

static bool holds_key(const struct kvs_access *a, unsigned char *b,
                      uint64_t i)
{
    return kvshm_slot_equal(kvs_slot_at(a->t, b, i), KVSHM_SLOT_KV_OFFSET,
                            a->t->key_size, a->k->bytes, a->io->shared);
}

/* The bucket as read (b): a slot that holds the key and is not being
 * written first, else a claim of its tag to wait for, else done.  The
 * meta word is loaded before the key is compared: a slot rewritten
 * after the load changed its word, and the removal's swap fails. */
static enum forget_step look(const struct kvs_access *a, unsigned char *b,
                             enum slot_takeover takeover, uint64_t *i,
                             uint64_t *seen)
{
    enum forget_step step = FORGET_DONE;

    for (uint64_t s = 0; s < a->t->slots; s++) {
        uint64_t meta = kvshm_meta_load(b, s, a->io->shared);

        if (!kvshm_meta_live(meta) || kvshm_meta_tag(meta) != a->k->tag)
            continue;
        if ((meta & KVSHM_SLOT_BUSY) && takeover != TAKEOVER_ANY &&
            !(takeover == TAKEOVER_DEAD && kvs_slot_owner_dead(meta))) {
            if (step == FORGET_DONE) {   /* a live writer, maybe of k */
                step = FORGET_WAIT;
                *i = s;
                *seen = meta;
            }
            continue;
        }
        if (holds_key(a, b, s)) {
            *i = s;
            *seen = meta;
            return FORGET_REMOVE;
        }
    }
    return step;
}

/* Slot i's meta word, seen as seen, to FORGOTTEN: 1 if it was removed,
 * 0 if the word had changed (look again), or an error.  Without a
 * compare-and-swap (a lock held, or the mpi transport lock-free) one
 * plain write of the word, completed before the call returns. */
static int remove_slot(struct kvs_access *a, uint64_t i, uint64_t seen)
{
    mpikvs_t *kvs = a->kvs;
    uint64_t word = FORGOTTEN, was = 0;
    int rc;

    if (a->io->cas) {
        rc = a->io->cas(a, i, seen, FORGOTTEN, &was, false);
        return rc != MPIKVS_OK ? rc : was == seen;
    }
    rc = kvs->tp->write(kvs, a->k->node,
                        kvs_meta_disp(kvs, a->k->bucket, i), &word,
                        sizeof(word));
    if (rc == MPIKVS_OK)   /* before word goes out of scope */
        rc = kvs->tp->flush(kvs, a->k->node);
    return rc == MPIKVS_OK ? 1 : rc;
}

int kvs_bucket_forget(struct kvs_access *a)
{
    const struct kvs_bucket_io *io = a->io;
    struct kvs_busy w = {0};
    bool removed = false;

    for (;;) {
        uint64_t i = 0, seen = 0;
        unsigned char *b;
        int rc = io->bucket(a, &b);

        if (rc != MPIKVS_OK)
            return rc;
        switch (look(a, b, kvs_slot_takeover(&w, io->shared, io->locked),
                     &i, &seen)) {
        case FORGET_DONE:
            return removed ? MPIKVS_OK : MPIKVS_MISS;
        case FORGET_WAIT:
            if (!kvs_slot_busy_wait(&w)) {
                a->stall_slot = i;
                a->stall_meta = seen;
                a->claim_stalled = true;
                return MPIKVS_ERR_STALLED;
            }
            break;
        case FORGET_REMOVE:
            if ((rc = remove_slot(a, i, seen)) < 0)
                return rc;
            removed |= rc == 1;
            break;
        }
    }
}

static int forget_direct(mpikvs_t *kvs, const struct kvs_key *k)
{
    struct kvs_access a = {&kvs->tab, &kvs_shared_io, k, kvs, 0, 0, false};
    int rc = kvs_bucket_forget(&a);

    return rc == MPIKVS_ERR_STALLED ? kvs_put_stalled(kvs, &a, "mpikvs_forget")
                                    : rc;
}

/* Another node's key, or any under a lock mode (ops.h, kvs_locked). */
static int forget_far(mpikvs_t *kvs, const struct kvs_key *k, const void *in,
                      void *out)
{
    const struct kvs_route *r = kvs_route(kvs, k->node);
    struct kvs_access a = {&kvs->tab, r->io, k, kvs, 0, 0, false};
    int rc;

    (void)in;
    (void)out;
    if (r->kind == KVS_ROUTE_SHIPPED)
        return kvs_ship_one(kvs, k, KVS_SHIP_FORGET, NULL, NULL);
    rc = kvs_bucket_forget(&a);
    return rc == MPIKVS_ERR_STALLED ? kvs_put_stalled(kvs, &a, "mpikvs_forget")
                                    : rc;
}

int mpikvs_forget(mpikvs_t *kvs, const void *key)
{
    struct kvs_key k;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_forget");
    if (!key)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_forget: key must not be NULL");
    kvs_key_make(kvs, key, &k);
    rc = kvs_route(kvs, k.node)->kind == KVS_ROUTE_SHARED
             ? forget_direct(kvs, &k)
             : kvs_locked(kvs, &k, true, forget_far, NULL, NULL);
    /* The rejected value is not published by this rank at the next
     * fence, wherever the key was; what the node tiers published already
     * stays (mpikvs_forget(3), NOTES). */
    if (kvs->tier && k.node != kvs->node)
        kvs_tier_unrecord(kvs, &k);
    if (rc < 0)
        return rc;
    if (rc == MPIKVS_OK)
        KVS_COUNT(&kvs->tab, forgotten, 1);
    /* the rejected value leaves its neighbourhood too, whether or not
     * the table still had it (it may have been evicted from there) */
    const unsigned char *entry;
    int near = kvs_near_entry(kvs, "mpikvs_forget", key, &entry);
    if (near == MPIKVS_OK && entry)
        near = mpikvs_forget(kvs_near_table(kvs), entry);
    if (near < 0)
        return kvs_fail(kvs, near, "mpikvs_forget: its neighbourhood: %s",
                        mpikvs_last_error(kvs_near_table(kvs)));
    return rc;
}
