/*
 * ops.h - the steps of a get and a put (ops.c), which a single call runs
 * for one key and a batch (batch.c) for many.
 */
#ifndef MPIKVS_OPS_H
#define MPIKVS_OPS_H

#include <stdbool.h>

#include "bucket_far.h"
#include "handle.h"
#include "key.h"
#include "locks.h"   /* kvs_locked */
#include "route.h"
#include "transport.h"

/* MPIKVS_ERR_STALLED for a put (what) whose wait for the claim a names
 * (stall_slot, stall_meta) lasted KVS_SLOT_STALL_MS, with a message; a
 * stall of the transport (a->claim_stalled false) keeps its own. */
int kvs_put_stalled(mpikvs_t *kvs, const struct kvs_access *a,
                    const char *what);

/* One get and one put of a key record, in the handle's mode. */
int kvs_get(mpikvs_t *kvs, const struct kvs_key *k, void *value);
int kvs_put(mpikvs_t *kvs, const struct kvs_key *k, const void *value);

/* Enter key, whose value call just stored, into its neighbourhood
 * (near.h); MPIKVS_OK without neighbourhoods. */
int kvs_near_put(mpikvs_t *kvs, const char *call, const void *key,
                 const void *value);

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

/* One operation shipped whole to k's home node (transport.h, ship) and
 * flushed.  Returns its status, or an error. */
int kvs_ship_one(mpikvs_t *kvs, const struct kvs_key *k,
                 enum kvs_ship_kind kind, const void *in, void *out);

#endif /* MPIKVS_OPS_H */
