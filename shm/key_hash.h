/*
 * key_hash.h - the hash of a key, computed once from its bytes.
 *
 * Everything mpikvs derives from a key comes from this one 128-bit XXH3:
 * the DHT's home node and bucket (libmpikvs/key.h), a slot's tag, its
 * preferred slot and its checksum seed (format.h, slot_read.h), and the
 * node tier's entry hash (format.h, struct kvshm_tier_entry), so a get
 * that goes through the DHT and the tier hashes its key once.
 *
 * Which bits: the node is scaled from the top bits of the high half and
 * the bucket from the top bits of the low half (multiply-shift), so the
 * tag and the preferred slot take low bits of the high half, which
 * neither depends on.
 */
#ifndef MPIKVS_SHM_KEY_HASH_H
#define MPIKVS_SHM_KEY_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "format.h"   /* KVSHM_SLOT_TAG_BITS */

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

/* A slot's tag (format.h: KVSHM_SLOT_TAG_BITS of meta): the low bits of
 * the high half. */
static inline uint32_t kvshm_key_tag(XXH128_hash_t h)
{
    return (uint32_t)(h.high64 & ((UINT64_C(1) << KVSHM_SLOT_TAG_BITS) - 1u));
}

/* The slot a new key takes when it is free, so that a lookup can fetch
 * it with the bucket's header: 16 bits above the tag's, scaled onto
 * slots. */
static inline uint32_t kvshm_key_preferred_slot(XXH128_hash_t h,
                                                uint64_t slots)
{
    return (uint32_t)((((h.high64 >> KVSHM_SLOT_TAG_BITS) & 0xffffu) * slots) >>
                      16);
}

#endif /* MPIKVS_SHM_KEY_HASH_H */
