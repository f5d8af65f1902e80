/*
 * slot_read.h - reading a slot of a data region (format.h) while its
 * writers keep writing it: the one protocol libmpikvs (a get, own node
 * or a bucket copied by MPI_Get) and the scanner of mpikvs-stat (scan.c)
 * both use.
 *
 * Why a torn slot cannot verify.  A writer on the own node stores meta,
 * then key and value, then the checksum with release.  A reader loads
 * meta, then the checksum with acquire, copies key and value, and hashes
 * its copy.  If it loaded the checksum of a finished write, acquire makes
 * that write's key and value visible to its copy; bytes of a later write
 * that slip into the copy change the hash.  Either way a copy that mixes
 * two writes hashes to its checksum only by a 64-bit accident.  Slots
 * copied by MPI_Get come with no order at all (shared false), and rely
 * on the checksum alone, as in the paper.
 *
 * The includer picks how xxhash is linked (XXH_INLINE_ALL or not) before
 * it includes this.
 */
#ifndef MPIKVS_SHM_SLOT_READ_H
#define MPIKVS_SHM_SLOT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#include "format.h"

/* The checksum of a slot's key and value (kv_len bytes, side by side). */
static inline uint64_t kvshm_slot_checksum(const void *kv, size_t kv_len)
{
    return XXH3_64bits_withSeed(kv, kv_len, KVSHM_SLOT_CHECKSUM_SEED);
}

/* What one read of a slot found. */
enum kvshm_slot_read {
    KVSHM_SLOT_READ_FREE,       /* never written */
    KVSHM_SLOT_READ_INVALID,    /* marked invalid by a reader */
    KVSHM_SLOT_READ_OTHER,      /* another key's (only when a key is given) */
    KVSHM_SLOT_READ_VERIFIED,   /* key and value copied, and they verify */
    KVSHM_SLOT_READ_TORN        /* copied, and they do not: a write in
                                 * flight, or damage */
};

/*
 * Read the slot at slot (slot_size bytes, keys of key_size and values of
 * value_size bytes) into copy (key_size + value_size bytes): meta, then
 * the checksum, then key and value, hashed in the private copy (the bytes
 * in the slot may change while the hash runs).  In shared memory (shared)
 * the loads of meta and checksum are acquire; in a private copy of a
 * bucket they are plain.  With a key, a live slot of another key is
 * skipped on a compare in place, before the checksum (most slots are
 * other keys), and a copy must hold that key to verify.  *meta gets the
 * meta word read, the one to invalidate against.  Never writes the slot.
 */
static inline enum kvshm_slot_read kvshm_slot_read(
    const unsigned char *slot, uint64_t slot_size, size_t key_size,
    size_t value_size, bool shared, const void *key, unsigned char *copy,
    uint64_t *meta)
{
    const struct kvshm_slot *s = (const struct kvshm_slot *)slot;
    const uint64_t *sum_at =
        (const uint64_t *)(slot + kvshm_slot_checksum_offset(slot_size));
    size_t kv_len = key_size + value_size;
    uint64_t m, sum;

    m = shared ? __atomic_load_n(&s->meta, __ATOMIC_ACQUIRE) : s->meta;
    *meta = m;
    if (!(m & KVSHM_SLOT_OCCUPIED))
        return KVSHM_SLOT_READ_FREE;
    if (m & KVSHM_SLOT_INVALID)
        return KVSHM_SLOT_READ_INVALID;
    if (key && memcmp(s->kv, key, key_size) != 0)
        return KVSHM_SLOT_READ_OTHER;
    sum = shared ? __atomic_load_n(sum_at, __ATOMIC_ACQUIRE) : *sum_at;
    memcpy(copy, s->kv, kv_len);
    if (kvshm_slot_checksum(copy, kv_len) == sum &&
        (!key || memcmp(copy, key, key_size) == 0))
        return KVSHM_SLOT_READ_VERIFIED;
    return KVSHM_SLOT_READ_TORN;
}

#endif /* MPIKVS_SHM_SLOT_READ_H */
