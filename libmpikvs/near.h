/*
 * near.h - a table's neighbourhoods (its "near" setting, mpikvs.json(5)):
 * every put of a key also enters it, with its value, into the
 * neighbourhood of its coarser key; mpikvs_get_near reads them back.
 *
 * The neighbourhoods are a second table of the handle (near.c): keys
 * "coarse key | key", values the table's, one bucket of "members" slots
 * per coarse key, found by the hash of the coarse key alone
 * (kvs_key_make, kvs->tab.hash_size), so that a neighbourhood is one bucket
 * and its members are the slots of the coarse key's tag.  A member is a
 * slot like any other: written and verified by the table's protocol, so
 * never torn or mixed; the oldest leaves a full bucket.
 */
#ifndef MPIKVS_NEAR_H
#define MPIKVS_NEAR_H

#include <stddef.h>

#include "handle.h"

/* This file never calls another operation of a table (no circle of
 * calls: tests/call-circles.sh): the callers put, forget, clear, open
 * and close the neighbourhoods' table themselves, with the member keys
 * and options made here. */

/* The neighbourhoods' own table, or NULL without them. */
mpikvs_t *kvs_near_table(const mpikvs_t *kvs);

/* At open, before the neighbourhoods' table opens (collective): the
 * state of kvs's neighbourhoods, if its table has "near", and the
 * options and hash prefix of their table into opt and *hash_prefix.
 * MPIKVS_OK with kvs_near_table() still NULL and kvs->near set when
 * there are neighbourhoods to open, MPIKVS_OK with kvs->near NULL when
 * there are none, or an error agreed by every rank. */
int kvs_near_prepare(mpikvs_t *kvs, mpikvs_options_t *opt,
                     size_t *hash_prefix);

/* Their table once open; kvs_near_detach: the table (NULL if none), the
 * state freed, for the caller to close it. */
void kvs_near_attach(mpikvs_t *kvs, mpikvs_t *table);
mpikvs_t *kvs_near_detach(mpikvs_t *kvs);

/* The member keys of key (one) and of n keys (n <= BATCH_CHUNK): coarse
 * key | key, in the handle's buffers, valid until the next call.  *entry
 * NULL without neighbourhoods.  MPIKVS_OK, or MPIKVS_ERR_INVAL for a key
 * whose fields cannot make a coarse key (kvs's error names call). */
int kvs_near_entry(mpikvs_t *kvs, const char *call, const void *key,
                   const unsigned char **entry);
int kvs_near_entries(mpikvs_t *kvs, const char *call, size_t n,
                     const void *keys, const unsigned char **entries);

/* Complete this rank's writes to the neighbourhoods (mpikvs_fence,
 * before its barrier: members put before a fence are read after it). */
int kvs_near_flush(mpikvs_t *kvs);

#endif /* MPIKVS_NEAR_H */
