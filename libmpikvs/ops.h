/*
 * ops.h - the steps of a get and a put (ops.c), which a single call runs
 * for one key and a batch (batch.c) for many, and the bracket of the
 * lock modes (locks.c).
 */
#ifndef MPIKVS_OPS_H
#define MPIKVS_OPS_H

#include <stdbool.h>

#include "handle.h"
#include "key.h"
#include "transport.h"

/* Displacement of a bucket in its node's region, of slot i of the
 * bucket and of its meta word, ... */
static inline uint64_t kvs_bucket_disp(const mpikvs_t *kvs, uint64_t bucket)
{
    return kvs->buckets_offset + bucket * kvs->bucket_size;
}

static inline uint64_t kvs_slot_disp(const mpikvs_t *kvs, uint64_t bucket,
                                     uint64_t i)
{
    return kvs_bucket_disp(kvs, bucket) +
           kvshm_bucket_slot_offset(kvs->slots, kvs->slot_size, i);
}

static inline uint64_t kvs_meta_disp(const mpikvs_t *kvs, uint64_t bucket,
                                     uint64_t i)
{
    return kvs_bucket_disp(kvs, bucket) + kvshm_bucket_meta_offset(i);
}

/* ... and of its lock word (the fine-lock mode's). */
static inline uint64_t kvs_lock_disp(const mpikvs_t *kvs, uint64_t bucket)
{
    return kvs_bucket_disp(kvs, bucket) + KVSHM_BUCKET_LOCK_OFFSET;
}

/* The own node's lock-free get and put, in shared memory; also what a
 * node's serving process runs for the keys shipped to it (transport.h).
 * kvs_put_direct returns the slot choice (enum slot_choice). */
int kvs_get_direct(mpikvs_t *kvs, const struct kvs_key *k, void *value);
int kvs_put_direct(mpikvs_t *kvs, const struct kvs_key *k,
                   const void *value);

/* Whether k is served from this node's shared memory: its own key in the
 * lock-free mode. */
static inline bool kvs_direct(const mpikvs_t *kvs, const struct kvs_key *k)
{
    return kvs->mode == KVSHM_MODE_LOCKFREE && k->node == kvs->node;
}

/* Whether node's keys are shipped whole to it (transport.h). */
static inline bool kvs_shipped(const mpikvs_t *kvs, uint32_t node)
{
    return kvs->mode == KVSHM_MODE_LOCKFREE && kvs->tp->ships &&
           kvs->tp->ships(kvs, node);
}

/* One get and one put of a key record, in the handle's mode. */
int kvs_get(mpikvs_t *kvs, const struct kvs_key *k, void *value);
int kvs_put(mpikvs_t *kvs, const struct kvs_key *k, const void *value);

/* The steps of a get after the own node's bucket.  kvs_get_tier: another
 * node's key in this node's tier: true, with the answer in *rc (a hit,
 * or an error); false: ask the key's home.  kvs_get_far: the key's bucket
 * through the transport, under the mode's lock.  kvs_get_done: count what
 * the key's home answered (rc) and keep a remote hit for the node tier;
 * returns rc. */
bool kvs_get_tier(mpikvs_t *kvs, const struct kvs_key *k, void *value,
                  int *rc);
int kvs_get_far(mpikvs_t *kvs, const struct kvs_key *k, void *value);
int kvs_get_done(mpikvs_t *kvs, const struct kvs_key *k, const void *value,
                 int rc);

/* Issue the read of a key's bucket into into, or the writes of slot i
 * of its bucket: its meta word *meta and its image (kvs_slot_image);
 * complete after the transport's flush, until which meta and image must
 * stay as they are. */
int kvs_read_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *into);
int kvs_write_slot(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                   const uint64_t *meta, const unsigned char *image);

/* kvs_read_bucket and the flush that completes it: the bucket is in
 * into on MPIKVS_OK. */
int kvs_fetch_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *into);

/* The lock-free put of another node's key where the transport's atomics
 * are the CPU's (transport.h, cpu_atomic): the slot claimed, written and
 * released as a put on its node does (slot_read.h), and counted.
 * Returns MPIKVS_OK or an error. */
int kvs_put_claimed(mpikvs_t *kvs, const struct kvs_key *k,
                    const void *value);

/* The put of another node's key where nobody else writes its bucket (the
 * lock modes), or lock-free without the CPU's atomics (the mpi transport,
 * which may lose a racing insert: mpikvs(7)): the slot picked from a copy
 * of the bucket and written.  Returns the slot choice, not counted, or an
 * error. */
int kvs_put_unclaimed(mpikvs_t *kvs, const struct kvs_key *k,
                      const void *value);

/* One operation shipped whole to k's home node (transport.h, ship) and
 * flushed.  Returns its status, or an error. */
int kvs_ship_one(mpikvs_t *kvs, const struct kvs_key *k,
                 enum kvs_ship_kind kind, const void *in, void *out);

/* The put-if-absent of an own key in shared memory (absent.c), also what
 * a node's serving process runs for one shipped to it: the slot choice,
 * or SLOT_PRESENT with the present value in present (if not NULL). */
int kvs_put_absent_direct(mpikvs_t *kvs, const struct kvs_key *k,
                          const void *value, void *present);

/* Count a put that took a slot (enum slot_choice). */
void kvs_count_put(mpikvs_t *kvs, int choice);

/* Run op on k's bucket under the lock the mode takes: none (lock-free),
 * the bucket's lock word (fine-lock), the node's whole region
 * (coarse-lock); exclusive for a write.  The result: op's error, else the
 * unlock's error, else op's result. */
typedef int (*kvs_locked_op)(mpikvs_t *kvs, const struct kvs_key *k,
                             const void *in, void *out);
int kvs_locked(mpikvs_t *kvs, const struct kvs_key *k, bool exclusive,
               kvs_locked_op op, const void *in, void *out);

/* The fine-lock mode's lock word of a bucket (locks.c); its displacement
 * in the node's region. */
int kvs_bucket_lock(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                    bool exclusive);
int kvs_bucket_unlock(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                      bool exclusive);

#endif /* MPIKVS_OPS_H */
