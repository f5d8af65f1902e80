/*
 * key.h - a key, hashed once where it enters the library.
 *
 * Every later step of a get or put takes the record, not the key: the
 * home node and bucket, the node tier's lookup and the fence's
 * publication (the tier's entry hash), and the filter that keeps a rank
 * from recording one remote hit twice; the slot's tag, preferred slot and
 * checksum seed (key_hash.h).
 */
#ifndef MPIKVS_KEY_H
#define MPIKVS_KEY_H

#include <stdint.h>

#include "handle.h"
#include "key_hash.h"
#include "slot_read.h"

struct kvs_key {
    const unsigned char *bytes;  /* the caller's key_size bytes */
    uint64_t             hash;   /* low half: the bucket (its top bits),
                                  * the tier's entry hash, the filter */
    uint64_t             hash_hi;/* high half: the node (its top bits) */
    uint64_t             bucket; /* home bucket */
    uint64_t             seed;   /* of its slot's checksum (slot_read.h) */
    uint32_t             node;   /* home node */
    uint32_t             tag;    /* its slots' tag (format.h) in ... */
    uint32_t             generation; /* ... the table's generation
                                  * (key_hash.h) when the record was made */
    uint32_t             preferred; /* the slot a new key takes if free */
};

/* Multiply-shift: the top bits of h scaled onto n, no modulo bias, no
 * division. */
static inline uint64_t kvs_scale(uint64_t h, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)h * n) >> 64);
}

/* The record of a key whose hash is known (kvshm_key_hash of its bytes):
 * mpikvs_load hashes an entry where it reads it and sends the hash along
 * to the entry's home rank. */
static inline void kvs_key_from_hash(const mpikvs_t *kvs, const void *key,
                                     XXH128_hash_t h, struct kvs_key *k)
{
    k->bytes = key;
    k->hash = h.low64;
    k->hash_hi = h.high64;
    k->node = (uint32_t)kvs_scale(h.high64, kvs->nnodes);
    k->bucket = kvs_scale(h.low64, kvs->tab.nbuckets);
    k->seed = kvshm_slot_checksum_seed(h.low64);
    /* relaxed: only mpikvs_clear changes it, between collectives that
     * order it before every record made after the clear (clear.c) */
    k->generation = __atomic_load_n(&kvs->generation, __ATOMIC_RELAXED);
    k->tag = kvshm_key_tag(h, k->generation);
    k->preferred = kvshm_key_preferred_slot(h, kvs->tab.slots);
}

static inline void kvs_key_make(const mpikvs_t *kvs, const void *key,
                                struct kvs_key *k)
{
    if (__builtin_expect(kvs->tab.hash_size != kvs->tab.key_size, 0)) {
        /* a neighbourhood's member (near.h): placed by its coarse key,
         * its checksum seeded by all of it, as a scan's (slot_read.h) */
        kvs_key_from_hash(kvs, key,
                          kvshm_key_hash(key, kvs_table_hash_size(&kvs->tab)),
                          k);
        k->seed = kvshm_slot_checksum_seed(
            kvshm_key_hash(key, kvs->tab.key_size).low64);
        return;
    }
    kvs_key_from_hash(kvs, key, kvshm_key_hash(key, kvs->tab.key_size), k);
}

#endif /* MPIKVS_KEY_H */
