/*
 * verify.h - sampled accuracy (verify.c): which hits are returned as
 * MPIKVS_VERIFY, and what mpikvs_verify_report records.
 *
 * A hit is a verify hit when the handle opted in (MPIKVS_OPEN_VERIFY),
 * the table's verify fraction is above 0, and the key's selector (the low
 * 32 bits of its hash's high half: neither its node nor its bucket
 * depends on them) is below verify * 2^32.  Every rank computes the same
 * selector of a key, so every rank picks the same keys.
 */
#ifndef MPIKVS_VERIFY_H
#define MPIKVS_VERIFY_H

#include <stddef.h>

#include "handle.h"
#include "key.h"

/* The flags mpikvs_open knows. */
#define KVS_OPEN_FLAGS_KNOWN MPIKVS_OPEN_VERIFY

/* MPIKVS_ERR_INVAL naming flag bits mpikvs_open does not know, or an
 * options.verify outside (0, 1] (0: the table's). */
int kvs_verify_check_options(mpikvs_t *kvs, const mpikvs_options_t *opt);

/* At open, once the table is known: keep the flags, and the threshold
 * of the selector (kvs->verify_below; 0: no hit is a verify hit) from
 * options.verify, else the table's verify. */
void kvs_verify_open(mpikvs_t *kvs, const mpikvs_options_t *opt);

/* At close: the set of outstanding verify hits goes. */
void kvs_verify_close(mpikvs_t *kvs);

/* A hit of k that is a verify hit: counted, remembered for its report. */
int kvs_verify_take(mpikvs_t *kvs, const struct kvs_key *k);

/* What a get of k that returned rc returns to the caller: MPIKVS_VERIFY
 * for a verify hit, else rc.  Inline: without verify it is one test. */
static inline int kvs_verify_hit(mpikvs_t *kvs, const struct kvs_key *k,
                                 int rc)
{
    if (rc != MPIKVS_OK || !kvs->verify_below)
        return rc;
    return kvs_verify_take(kvs, k);
}

/* The same over a batch's keys (n of key_size bytes) and their statuses
 * (a finished chunk without error). */
void kvs_verify_batch(mpikvs_t *kvs, size_t n, const unsigned char *keys,
                      int *status);

#endif /* MPIKVS_VERIFY_H */
