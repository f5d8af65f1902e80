/*
 * ops.c - one get and one put.
 *
 * A get (kvs_get), top to bottom: the key's record, made once where the
 * key came in; then, for a key of the own node in the lock-free mode, its
 * bucket in shared memory; for another node's key, the node tier; else
 * the key's bucket through the transport, under the lock the mode takes;
 * the slot verified against its checksum; the answer counted, and a
 * remote hit kept for the node tier.
 *
 * A put (kvs_put): the own node's bucket in shared memory (lock-free: a
 * slot claimed with a compare-and-swap and written in place), or under
 * the mode's lock the bucket read through the transport, a slot chosen
 * on that copy, and the slot's meta word and image written back.
 *
 * Where the transport ships keys whole (transport.h, ships), a lock-free
 * get or put of another node's key is sent to that node, which runs the
 * own-node steps above on its region and answers.
 *
 * A batch (batch.c) runs the same steps over many records.
 */
#include <string.h>

#include "ops.h"
#include "slot.h"

static void count_get(mpikvs_t *kvs, int rc)
{
    KVS_COUNT(kvs, gets, 1);
    if (rc == MPIKVS_OK)
        KVS_COUNT(kvs, hits, 1);
    else if (rc == MPIKVS_MISS)
        KVS_COUNT(kvs, misses, 1);
}

void kvs_count_put(mpikvs_t *kvs, int choice)
{
    KVS_COUNT(kvs, puts, 1);
    if (choice == SLOT_UPDATE)
        KVS_COUNT(kvs, updates, 1);
    else if (choice == SLOT_EVICT)
        KVS_COUNT(kvs, evictions, 1);
}

/* ---- the own node, lock-free ---- */

int kvs_get_direct(mpikvs_t *kvs, const struct kvs_key *k, void *value)
{
    unsigned char *b = kvs_bucket_prefetch(kvs, k);

    KVS_COUNT(kvs, direct, 1);
    for (int attempt = 0;; attempt++) {
        uint64_t torn = 0, meta = 0;
        enum slot_found f = kvs_slot_find(kvs, b, true, k, value, &torn,
                                          &meta);
        if (f == SLOT_HIT)
            return MPIKVS_OK;
        if (f == SLOT_MISS)
            return MPIKVS_MISS;
        KVS_COUNT(kvs, checksum_retries, 1);
        if (attempt + 1 >= MPIKVS_CHECKSUM_RETRIES) {
            KVS_TORN_HOOK(kvs, k->bucket, torn);
            /* Against the meta of the read that failed, not a fresh load:
             * a slot rewritten since is another write, and valid. */
            if (kvs_slot_invalidate(b, torn, meta))
                KVS_COUNT(kvs, invalidations, 1);
            return MPIKVS_MISS;
        }
        /* A writer of this slot may be halfway: let it finish. */
        kvs_slot_backoff(attempt);
    }
}

int kvs_put_direct(mpikvs_t *kvs, const struct kvs_key *k,
                   const void *value)
{
    int c = kvs_slot_put_shared(kvs, kvs_bucket_prefetch(kvs, k), k, value);

    if (c >= 0)
        kvs_count_put(kvs, c);
    return c;
}

/* ---- through the transport ---- */

int kvs_read_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *into)
{
    return kvs->tp->read(kvs, k->node, kvs_bucket_disp(kvs, k->bucket), into,
                         kvs->bucket_size);
}

int kvs_write_slot(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                   const uint64_t *meta, const unsigned char *image)
{
    int rc = kvs->tp->write(kvs, k->node, kvs_meta_disp(kvs, k->bucket, i),
                            meta, sizeof(*meta));

    if (rc != MPIKVS_OK)
        return rc;
    return kvs->tp->write(kvs, k->node, kvs_slot_disp(kvs, k->bucket, i),
                          image, kvs->slot_size);
}

int kvs_fetch_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *into)
{
    int rc = kvs_read_bucket(kvs, k, into);

    /* The bucket must be in our buffer before we read it. */
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

/* A slot of the key's bucket that did not verify, read through the
 * transport.  In the lock modes the caller's lock keeps every writer out
 * of the bucket, so meta is still as read and one write of the meta word
 * marks the slot invalid; there every access to the slot goes through
 * the transport.
 *
 * Lock-free, the slot stays as it is: marking it would take a remote
 * compare-and-swap on the meta word, which the home node's ranks change
 * with CPU atomics, and the transport's atomics are not atomic with those
 * (transport.h, cpu_atomic).  A put of the key overwrites the slot, and a
 * reader on the home node invalidates it.  Returns MPIKVS_MISS or an
 * error. */
static int invalidate_far(mpikvs_t *kvs, const struct kvs_key *k,
                          uint64_t i, uint64_t meta)
{
    uint64_t word = meta | KVSHM_SLOT_INVALID;
    int rc;

    if (kvs->mode == KVSHM_MODE_LOCKFREE)
        return MPIKVS_MISS;
    KVS_COUNT(kvs, invalidations, 1);
    rc = kvs->tp->write(kvs, k->node, kvs_meta_disp(kvs, k->bucket, i),
                        &word, sizeof(word));
    if (rc == MPIKVS_OK)   /* before word goes out of scope */
        rc = kvs->tp->flush(kvs, k->node);
    return rc == MPIKVS_OK ? MPIKVS_MISS : rc;
}

int kvs_ship_one(mpikvs_t *kvs, const struct kvs_key *k,
                 enum kvs_ship_kind kind, const void *in, void *out)
{
    int status = MPIKVS_OK;
    int rc = kvs->tp->ship(kvs, k, kind, in, out, &status);

    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    if (rc != MPIKVS_OK)
        return rc;
    /* the node's own message stays in its serving view: say it here */
    if (status == MPIKVS_ERR_STALLED)
        return kvs_fail(kvs, status,
                        "node %u: a put of a key shipped to it waited %u ms "
                        "for another writer's claim of a slot of bucket "
                        "%llu (a writer of that node stopped or stuck)",
                        k->node, KVS_SLOT_STALL_MS,
                        (unsigned long long)k->bucket);
    return status;
}

/* Read the key from its bucket through the transport (the caller holds
 * whatever lock the mode needs): retry a slot that does not verify, then
 * give up with a miss. */
static int get_far(mpikvs_t *kvs, const struct kvs_key *k, const void *in,
                   void *value)
{
    unsigned char *b = kvs->scratch;

    (void)in;
    KVS_COUNT(kvs, remote, 1);
    if (kvs_shipped(kvs, k->node))
        return kvs_ship_one(kvs, k, KVS_SHIP_GET, NULL, value);
    for (int attempt = 0;; attempt++) {
        uint64_t torn = 0, meta = 0;
        int rc = kvs_fetch_bucket(kvs, k, b);
        if (rc != MPIKVS_OK)
            return rc;
        enum slot_found f = kvs_slot_find(kvs, b, false, k, value, &torn,
                                          &meta);
        if (f == SLOT_HIT)
            return MPIKVS_OK;
        if (f == SLOT_MISS)
            return MPIKVS_MISS;
        KVS_COUNT(kvs, checksum_retries, 1);
        if (attempt + 1 >= MPIKVS_CHECKSUM_RETRIES) {
            KVS_TORN_HOOK(kvs, k->bucket, torn);
            return invalidate_far(kvs, k, torn, meta);
        }
        /* Under a lock no writer is halfway: the slot stays as it is. */
        if (kvs->mode == KVSHM_MODE_LOCKFREE)
            kvs_slot_backoff(attempt);
    }
}

/* Read k's bucket and pick its slot on the copy.  Lock-free, the home
 * node's puts may be writing a slot of k's tag (BUSY): wait for them as
 * they wait for each other (kvs_slot_put_shared), reading the bucket
 * again; a claim is never taken over from here (its owner's liveness is
 * the home node's to see), and after KVS_SLOT_STALL_MS the put fails. */
static int pick_far(mpikvs_t *kvs, const struct kvs_key *k,
                    struct slot_pick *p)
{
    struct kvs_busy w = {0};

    for (;;) {
        int rc = kvs_fetch_bucket(kvs, k, kvs->scratch);
        if (rc != MPIKVS_OK)
            return rc;
        if (kvs_slot_pick(kvs, kvs->scratch, false, k,
                          kvs_slot_takeover(kvs, &w, false), p))
            return MPIKVS_OK;
        if (!kvs_slot_busy_wait(&w))
            return kvs_slot_stalled(kvs, k, "mpikvs_put", p->slot, p->seen);
    }
}

int kvs_put_claimed(mpikvs_t *kvs, const struct kvs_key *k,
                    const void *value)
{
    uint64_t disp, claim, seen = 0;
    struct slot_pick p;
    int rc;

    do {   /* until the claim finds the meta word the pick saw */
        if ((rc = pick_far(kvs, k, &p)) != MPIKVS_OK)
            return rc;
        disp = kvs_meta_disp(kvs, k->bucket, p.slot);
        claim = kvs_slot_claim(p.meta, kvs_slot_owner(kvs, false));
        rc = kvs->tp->cas64(kvs, k->node, disp, p.seen, claim, &seen);
        if (rc == MPIKVS_OK)
            rc = kvs->tp->flush(kvs, k->node);
        if (rc != MPIKVS_OK)
            return rc;
    } while (seen != p.seen);
    kvs_slot_image(kvs, k, value, kvs->slot_image);
    rc = kvs->tp->write(kvs, k->node, kvs_slot_disp(kvs, k->bucket, p.slot),
                        kvs->slot_image, kvs->slot_size);
    /* The slot written before BUSY goes: one flush between. */
    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    if (rc == MPIKVS_OK)
        rc = kvs->tp->cas64(kvs, k->node, disp, claim, p.meta, &seen);
    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    if (rc == MPIKVS_OK)
        kvs_count_put(kvs, p.choice);
    return rc;
}

int kvs_put_unclaimed(mpikvs_t *kvs, const struct kvs_key *k,
                      const void *value)
{
    struct slot_pick p;
    int rc;

    if ((rc = pick_far(kvs, k, &p)) != MPIKVS_OK)
        return rc;
    kvs_slot_image(kvs, k, value, kvs->slot_image);
    rc = kvs_write_slot(kvs, k, p.slot, &p.meta, kvs->slot_image);
    /* Complete at the target before the image is reused or another rank
     * may read the slot. */
    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    return rc == MPIKVS_OK ? (int)p.choice : rc;
}

/* A put through the transport.  Lock-free with the CPU's atomics, the
 * slot is claimed; under a lock nobody else writes the bucket, and
 * lock-free without them (the mpi transport) the slot is written as
 * picked: two puts that pick one free slot at once, one here and one on
 * the key's node, may then lose one key (a later miss, never a wrong
 * value; mpikvs(7)). */
static int put_far(mpikvs_t *kvs, const struct kvs_key *k, const void *value,
                   void *out)
{
    int rc;

    (void)out;
    if (kvs->mode == KVSHM_MODE_LOCKFREE && kvs->tp->cpu_atomic &&
        !kvs_shipped(kvs, k->node))
        return kvs_put_claimed(kvs, k, value);
    rc = kvs_shipped(kvs, k->node)
             ? kvs_ship_one(kvs, k, KVS_SHIP_PUT, value, NULL)
             : kvs_put_unclaimed(kvs, k, value);
    if (rc >= 0)
        kvs_count_put(kvs, rc);
    return rc < 0 ? rc : MPIKVS_OK;
}

/* ---- the get and the put ---- */

bool kvs_get_tier(mpikvs_t *kvs, const struct kvs_key *k, void *value,
                  int *rc)
{
    if (!kvs->tier || k->node == kvs->node)
        return false;
    *rc = kvs_tier_lookup(kvs, k, value);
    if (*rc == MPIKVS_OK)
        count_get(kvs, *rc);
    return *rc != MPIKVS_MISS;
}

int kvs_get_far(mpikvs_t *kvs, const struct kvs_key *k, void *value)
{
    return kvs_locked(kvs, k, false, get_far, NULL, value);
}

int kvs_get_done(mpikvs_t *kvs, const struct kvs_key *k, const void *value,
                 int rc)
{
    if (rc < 0)
        return rc;
    count_get(kvs, rc);
    if (rc == MPIKVS_OK && kvs->tier && k->node != kvs->node)
        kvs_tier_record(kvs, k, value);
    return rc;
}

int kvs_get(mpikvs_t *kvs, const struct kvs_key *k, void *value)
{
    int rc;

    if (kvs_direct(kvs, k))
        rc = kvs_get_direct(kvs, k, value);
    else if (kvs_get_tier(kvs, k, value, &rc))
        return rc;   /* another node's key, in this node's tier */
    else
        rc = kvs_get_far(kvs, k, value);
    return kvs_get_done(kvs, k, value, rc);
}

int kvs_put(mpikvs_t *kvs, const struct kvs_key *k, const void *value)
{
    if (kvs_direct(kvs, k)) {
        int rc = kvs_put_direct(kvs, k, value);
        return rc < 0 ? rc : MPIKVS_OK;
    }
    return kvs_locked(kvs, k, true, put_far, value, NULL);
}

/* ---- the public single operations ---- */

int mpikvs_get(mpikvs_t *kvs, const void *key, void *value)
{
    struct kvs_key k;

    if (!kvs)
        return kvs_no_handle("mpikvs_get");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_get: key and value must not be NULL");
    kvs_key_make(kvs, key, &k);
    return kvs_get(kvs, &k, value);
}

int mpikvs_put(mpikvs_t *kvs, const void *key, const void *value)
{
    struct kvs_key k;

    if (!kvs)
        return kvs_no_handle("mpikvs_put");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_put: key and value must not be NULL");
    kvs_key_make(kvs, key, &k);
    return kvs_put(kvs, &k, value);
}
