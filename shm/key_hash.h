/*
 * key_hash.h - the hash of a key, computed once from its bytes.
 *
 * Everything mpikvs derives from a key comes from this one 128-bit XXH3:
 * the DHT's home node and bucket (libmpikvs/key.h) and the node tier's
 * entry hash (format.h, struct kvshm_tier_entry), so a get that goes
 * through the DHT and the tier hashes its key once.
 */
#ifndef MPIKVS_SHM_KEY_HASH_H
#define MPIKVS_SHM_KEY_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Also stored in every tier's control block (hash_seed).  0, XXH3's
 * default: the DHT's homes stay where they were before the tier shared
 * the hash. */
#define KVSHM_KEY_SEED UINT64_C(0)

static inline XXH128_hash_t kvshm_key_hash(const void *key, size_t len)
{
    return XXH3_128bits_withSeed(key, len, KVSHM_KEY_SEED);
}

/* A tier entry's hash: the low half. */
static inline uint64_t kvshm_tier_key_hash(const void *key, size_t len)
{
    return kvshm_key_hash(key, len).low64;
}

#endif /* MPIKVS_SHM_KEY_HASH_H */
