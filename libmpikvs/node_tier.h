/*
 * node_tier.h - the node tier (tier.c; shm/tier.h is its shared memory).
 */
#ifndef MPIKVS_NODE_TIER_H
#define MPIKVS_NODE_TIER_H

#include "mpikvs.h"

struct kvs_key;

/* kvs_tier_open: collective over the node.  kvs_tier_lookup: MPIKVS_OK,
 * MPIKVS_MISS or an error.  kvs_tier_record: keep a remote hit for the
 * next fence, where kvs_tier_publish (collective over the node)
 * publishes the node's.
 * kvs_tier_unrecord: drop k's record, if any, before it is published
 * (mpikvs_forget).
 * kvs_tier_invalidate: mpikvs_tier_invalidate's work (collective).
 * kvs_tier_drop_records: forget the remote hits not published yet.
 * kvs_tier_empty: the leader (its writer) drops every entry of the
 * node's tier, whatever its caching mode, while no rank of the node
 * reads it (between barriers: mpikvs_tier_invalidate, mpikvs_clear);
 * the other ranks do nothing. */
int kvs_tier_open(mpikvs_t *kvs, const char *job, const char *node);
void kvs_tier_close(mpikvs_t *kvs);
int kvs_tier_lookup(mpikvs_t *kvs, const struct kvs_key *k, void *value);
void kvs_tier_record(mpikvs_t *kvs, const struct kvs_key *k,
                     const void *value);
void kvs_tier_unrecord(mpikvs_t *kvs, const struct kvs_key *k);
int kvs_tier_publish(mpikvs_t *kvs);
int kvs_tier_invalidate(mpikvs_t *kvs);
void kvs_tier_drop_records(mpikvs_t *kvs);
int kvs_tier_empty(mpikvs_t *kvs);

#endif /* MPIKVS_NODE_TIER_H */
