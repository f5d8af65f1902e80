/*
 * key_hash.h - the hash of a key, computed once from its bytes.
 *
 * Everything mpikvs derives from a key comes from this one 128-bit XXH3:
 * the DHT's home node and bucket (libmpikvs/key.h), a slot's tag (with
 * its region's generation), its preferred slot and its checksum seed (format.h, slot_read.h), and the
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

#include <stdbool.h>
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

/*
 * Generations (mpikvs_clear(3)).  A data region's control block counts
 * its table's clears (struct kvshm_data_control, generation), and a
 * slot's tag is its key's tag of the generation it was written in: the
 * low KVSHM_SLOT_TAG_BITS of the high half of the key's hash, XOR the
 * generation's scramble.  For one generation that is a bijection of
 * tags, and two generations' scrambles differ (an odd multiplier is
 * invertible modulo 2^29), so a slot written before a clear never
 * carries its key's tag of the generation after it: a lookup passes it
 * by its meta word as another key's slot, a put may take it (and counts
 * it as a free slot where it can tell, libmpikvs/slot.c), and a scan
 * tells it apart with its key's hash (kvshm_slot_scan, slot_read.h).
 * Clearing is one increment, whatever the table's size.  The scrambles
 * repeat after 2^29 clears, when a slot not written since may come back.
 * Generation 0, a new region's, scrambles nothing.  Every tag value is a
 * key's tag in some generation: none has a meaning of its own.
 */
#define KVSHM_GENERATION_MULTIPLIER UINT32_C(0x9e3779b9)   /* odd */
#define KVSHM_SLOT_TAG_VALUES ((UINT64_C(1) << KVSHM_SLOT_TAG_BITS) - 1u)

static inline uint32_t kvshm_generation_scramble(uint32_t generation)
{
    return (uint32_t)((generation * KVSHM_GENERATION_MULTIPLIER) &
                      KVSHM_SLOT_TAG_VALUES);
}

/* The tag of the key whose hash is h in a region of generation
 * generation (format.h: KVSHM_SLOT_TAG_BITS of meta). */
static inline uint32_t kvshm_key_tag(XXH128_hash_t h, uint32_t generation)
{
    return (uint32_t)(h.high64 & KVSHM_SLOT_TAG_VALUES) ^
           kvshm_generation_scramble(generation);
}

/* Whether a live slot whose meta word is meta and whose key hashes to h
 * was written in generation generation (the region's, for a slot of its
 * table; any other is of a table cleared since). */
static inline bool kvshm_slot_of_generation(uint64_t meta, XXH128_hash_t h,
                                            uint32_t generation)
{
    return kvshm_meta_tag(meta) == kvshm_key_tag(h, generation);
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
