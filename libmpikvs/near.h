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

/* The neighbourhoods' own table (mpikvs_describe), or NULL. */
const mpikvs_t *kvs_near_table(const mpikvs_t *kvs);

/* Open the neighbourhoods of kvs's table, if it has "near" (collective,
 * at the end of mpikvs_open).  MPIKVS_OK or an error in kvs. */
int kvs_near_open(mpikvs_t *kvs);

/* Close them (collective; stalled: as kvs_teardown's). */
int kvs_near_close(mpikvs_t *kvs, bool stalled);

/* Enter key, whose value a put just stored, into its neighbourhood; n
 * keys and values of a batch.  MPIKVS_OK without neighbourhoods. */
int kvs_near_enter(mpikvs_t *kvs, const void *key, const void *value);
int kvs_near_enter_batch(mpikvs_t *kvs, size_t n, const void *keys,
                         const void *values);

/* Complete this rank's writes to the neighbourhoods (mpikvs_fence,
 * before its barrier: members put before a fence are read after it). */
int kvs_near_flush(mpikvs_t *kvs);

/* Remove key from its neighbourhood (mpikvs_forget); MPIKVS_OK or
 * MPIKVS_MISS as mpikvs_forget's, MPIKVS_OK without neighbourhoods. */
int kvs_near_forget(mpikvs_t *kvs, const void *key);

/* Empty every neighbourhood (mpikvs_clear; collective). */
int kvs_near_clear(mpikvs_t *kvs);

#endif /* MPIKVS_NEAR_H */
