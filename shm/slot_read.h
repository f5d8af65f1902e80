/*
 * slot_read.h - reading a slot of a data region (format.h) while its
 * writers keep writing it: the one protocol libmpikvs (a get, own node
 * or a bucket copied by the transport) and the scanner of mpikvs-stat
 * (scan.c) both use.
 *
 * Why a torn slot cannot verify.  A writer on the own node stores the
 * slot's meta word, then key and value, then the checksum with release.
 * A reader loads meta with acquire (the tag in it says whether the slot
 * may hold its key), then the checksum with acquire, copies the value,
 * compares the key and hashes its copy of the value with the seed its
 * key gives.  If it loaded the checksum of a finished write, acquire
 * makes that write's key and value visible; bytes of a later write that
 * slip into the value change the hash, and into the key either the
 * compare or, through the seed, the hash.  Either way a read that mixes
 * two writes verifies only by a 64-bit accident.  Buckets copied by the
 * transport come with no order at all (shared false), and rely on the
 * checksum alone, as in the paper.
 *
 * How a lock-free writer claims a slot (libmpikvs/bucket.c): a
 * compare-and-swap of the meta word it saw, to one with BUSY, its key's
 * tag and its own pid where the stamp goes (0 from another node); it
 * writes key, value and checksum, then stores the meta word with the
 * bucket's next stamp and no BUSY.  Two puts that pick one free slot
 * cannot both win; a writer that finds a BUSY slot of its key's tag
 * waits for it, so two puts of one key leave one slot, and takes it
 * over only when its owner is dead.  Readers ignore BUSY.
 */
#ifndef MPIKVS_SHM_SLOT_READ_H
#define MPIKVS_SHM_SLOT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format.h"
#include "key_hash.h"   /* inlines xxhash */

/* A slot's checksum: of its value, seeded with the low half of its key's
 * hash. */
static inline uint64_t kvshm_slot_checksum_seed(uint64_t key_hash_low)
{
    return key_hash_low ^ KVSHM_SLOT_CHECKSUM_SEED;
}

static inline uint64_t kvshm_slot_checksum(const void *value, size_t len,
                                           uint64_t seed)
{
    return XXH3_64bits_withSeed(value, len, seed);
}

/* Slot i's meta word in a bucket, loaded as a reader must: with acquire
 * in shared memory, plain in a private copy. */
static inline uint64_t kvshm_meta_load(const unsigned char *bucket,
                                       uint64_t i, bool shared)
{
    const uint64_t *m =
        (const uint64_t *)(bucket + kvshm_bucket_meta_offset(i));

    return shared ? __atomic_load_n(m, __ATOMIC_ACQUIRE) : *m;
}

static inline bool kvshm_meta_live(uint64_t meta)
{
    return (meta & KVSHM_SLOT_OCCUPIED) && !(meta & KVSHM_SLOT_INVALID);
}

/*
 * The bytes of a slot that others may be writing.  A slot is read while
 * a writer may be rewriting it, and the checksum, not a lock, tells a
 * torn copy apart.  In C11 a plain read (memcpy, memcmp) that races a
 * write is a data race, undefined behaviour that a compiler may exploit;
 * relaxed atomic loads of whole aligned words are not, and cost a plain
 * load each on the CPUs mpikvs runs on.  So in shared memory every byte
 * of key and value is read through these, word by word from the slot's
 * start (8-aligned: buckets start lines, slot sizes are multiples of 8),
 * and written likewise (libmpikvs/slot.c).  A private copy is read
 * plainly.
 */
static inline uint64_t kvshm_slot_word(const unsigned char *slot, size_t w,
                                       bool shared)
{
    const uint64_t *p = (const uint64_t *)slot + w;

    return shared ? __atomic_load_n(p, __ATOMIC_RELAXED) : *p;
}

/* len bytes of the slot from byte from, into dst: a partial first
 * word, whole words, a partial last word. */
static inline void kvshm_slot_copy(void *dst, const unsigned char *slot,
                                   size_t from, size_t len, bool shared)
{
    unsigned char *d = dst;
    size_t w = from / 8, off = from % 8;
    uint64_t word;

    if (!shared) {
        memcpy(d, slot + from, len);
        return;
    }
    if (off && len) {
        size_t n = 8 - off < len ? 8 - off : len;
        word = kvshm_slot_word(slot, w++, true);
        memcpy(d, (const unsigned char *)&word + off, n);
        d += n;
        len -= n;
    }
    for (; len >= 8; w++, d += 8, len -= 8) {
        word = kvshm_slot_word(slot, w, true);
        memcpy(d, &word, 8);
    }
    if (len) {
        word = kvshm_slot_word(slot, w, true);
        memcpy(d, &word, len);
    }
}

/* Whether len bytes of the slot from byte from equal b (in the same
 * three parts). */
static inline bool kvshm_slot_equal(const unsigned char *slot, size_t from,
                                    size_t len, const void *b, bool shared)
{
    const unsigned char *p = b;
    size_t w = from / 8, off = from % 8;
    uint64_t word, mine;

    if (!shared)
        return memcmp(slot + from, p, len) == 0;
    if (off && len) {
        size_t n = 8 - off < len ? 8 - off : len;
        word = kvshm_slot_word(slot, w++, true);
        if (memcmp((const unsigned char *)&word + off, p, n) != 0)
            return false;
        p += n;
        len -= n;
    }
    for (; len >= 8; w++, p += 8, len -= 8) {
        memcpy(&mine, p, 8);
        if (kvshm_slot_word(slot, w, true) != mine)
            return false;
    }
    if (len) {
        word = kvshm_slot_word(slot, w, true);
        return memcmp(&word, p, len) == 0;
    }
    return true;
}

/* The checksum of a slot's value (kvshm_slot_checksum) hashed from
 * pieces of it copied as readers copy them: what a lookup that keeps no
 * copy of the value verifies with.  Out of line: the rare path, kept out
 * of the get's, which inlines kvshm_slot_read. */
#define KVSHM_SLOT_PIECE 256u
static __attribute__((noinline, unused)) uint64_t
kvshm_slot_checksum_pieces(const unsigned char *slot, size_t key_size,
                           size_t value_size, bool shared, uint64_t seed)
{
    XXH3_state_t state;
    unsigned char piece[KVSHM_SLOT_PIECE];
    size_t from = kvshm_slot_value_offset(key_size);

    XXH3_INITSTATE(&state);   /* what reset leaves unset when the seed is 0 */
    XXH3_64bits_reset_withSeed(&state, seed);
    for (size_t done = 0; done < value_size; done += KVSHM_SLOT_PIECE) {
        size_t n = value_size - done < KVSHM_SLOT_PIECE ? value_size - done
                                                        : KVSHM_SLOT_PIECE;
        kvshm_slot_copy(piece, slot, from + done, n, shared);
        XXH3_64bits_update(&state, piece, n);
    }
    return XXH3_64bits_digest(&state);
}

/* The hash of a slot's key (kvshm_key_hash), its bytes copied as readers
 * copy them (in pieces: keys may be 64 KiB).  Out of line: for the rare
 * paths that have no copy of the key, a put's pick that must evict
 * (libmpikvs/slot.c) and the question whether a table holds entries. */
static __attribute__((noinline, unused)) XXH128_hash_t
kvshm_slot_key_hash(const unsigned char *slot, size_t key_size, bool shared)
{
    XXH3_state_t state;
    unsigned char piece[KVSHM_SLOT_PIECE];

    if (key_size <= KVSHM_SLOT_PIECE) {
        kvshm_slot_copy(piece, slot, KVSHM_SLOT_KV_OFFSET, key_size, shared);
        return kvshm_key_hash(piece, key_size);
    }
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset_withSeed(&state, KVSHM_KEY_SEED);
    for (size_t done = 0; done < key_size; done += KVSHM_SLOT_PIECE) {
        size_t n = key_size - done < KVSHM_SLOT_PIECE ? key_size - done
                                                      : KVSHM_SLOT_PIECE;
        kvshm_slot_copy(piece, slot, KVSHM_SLOT_KV_OFFSET + done, n, shared);
        XXH3_128bits_update(&state, piece, n);
    }
    return XXH3_128bits_digest(&state);
}

/* What one read of a slot found. */
enum kvshm_slot_read {
    KVSHM_SLOT_READ_FREE,       /* never written */
    KVSHM_SLOT_READ_INVALID,    /* marked invalid by a reader */
    KVSHM_SLOT_READ_OTHER,      /* another key's (a lookup) */
    KVSHM_SLOT_READ_CLEARED,    /* of a generation before the region's
                                 * (a scan; key_hash.h) */
    KVSHM_SLOT_READ_VERIFIED,   /* copied, and it verifies */
    KVSHM_SLOT_READ_TORN        /* copied, and it does not: a write in
                                 * flight, or damage */
};

/*
 * Read the slot at slot (slot_size bytes, keys of key_size and values of
 * value_size bytes) whose meta word the caller loaded as meta
 * (kvshm_meta_load), for key: seed is kvshm_slot_checksum_seed() of its
 * hash, a live slot of another key is skipped on a compare in place,
 * before the checksum, and copy receives the value (value_size bytes).
 * The checksum is loaded with acquire in shared memory, plainly in a
 * private copy; the value is hashed in the copy, as the bytes in the slot
 * may change while the hash runs.  With copy NULL (a lookup that wants no
 * value), the value is hashed in pieces copied to the stack, so that a
 * large value needs no buffer of its size.  The key's tag was compared
 * with meta's by the caller, so a slot of another generation is never
 * the key's.  Never writes the slot.
 */
static inline __attribute__((always_inline)) enum kvshm_slot_read
kvshm_slot_read(
    uint64_t meta, const unsigned char *slot, uint64_t slot_size,
    size_t key_size, size_t value_size, bool shared, const void *key,
    uint64_t seed, unsigned char *copy)
{
    const uint64_t *sum_at =
        (const uint64_t *)(slot + kvshm_slot_checksum_offset(slot_size));
    uint64_t sum;
    bool verified;

    if (!(meta & KVSHM_SLOT_OCCUPIED))
        return KVSHM_SLOT_READ_FREE;
    if (meta & KVSHM_SLOT_INVALID)
        return KVSHM_SLOT_READ_INVALID;
    if (!kvshm_slot_equal(slot, KVSHM_SLOT_KV_OFFSET, key_size, key, shared))
        return KVSHM_SLOT_READ_OTHER;
    sum = shared ? __atomic_load_n(sum_at, __ATOMIC_ACQUIRE) : *sum_at;
    if (copy) {
        kvshm_slot_copy(copy, slot, kvshm_slot_value_offset(key_size),
                        value_size, shared);
        verified = kvshm_slot_checksum(copy, value_size, seed) == sum;
    } else {
        verified = kvshm_slot_checksum_pieces(slot, key_size, value_size,
                                              shared, seed) == sum;
    }
    if (verified &&
        kvshm_slot_equal(slot, KVSHM_SLOT_KV_OFFSET, key_size, key, shared))
        return KVSHM_SLOT_READ_VERIFIED;
    return KVSHM_SLOT_READ_TORN;
}

/*
 * A scan's read of slot i of bucket (slots slots of slot_size bytes), as
 * kvshm_slot_read reads a slot but with no key to look for, meta its
 * meta word as the caller loaded it: copy receives key and value
 * (key_size + value_size bytes), the checksum's seed comes from the
 * copied key, and a slot that verifies is the table's only if its tag is
 * its key's in generation, the region's (key_hash.h): else
 * KVSHM_SLOT_READ_CLEARED.  But meta was loaded before the copy, and a
 * write since (which always stores a new meta word first) may have put
 * another key there: where meta is not what it was, the read is torn, to
 * be read again, not a cleared slot.
 */
static inline enum kvshm_slot_read
kvshm_slot_scan(const unsigned char *bucket, uint64_t i, uint64_t meta,
                uint64_t slots, uint64_t slot_size, size_t key_size,
                size_t value_size, bool shared, uint32_t generation,
                unsigned char *copy)
{
    const unsigned char *slot =
        bucket + kvshm_bucket_slot_offset(slots, slot_size, i);
    const uint64_t *sum_at =
        (const uint64_t *)(slot + kvshm_slot_checksum_offset(slot_size));
    XXH128_hash_t h;
    uint64_t sum;

    if (!(meta & KVSHM_SLOT_OCCUPIED))
        return KVSHM_SLOT_READ_FREE;
    if (meta & KVSHM_SLOT_INVALID)
        return KVSHM_SLOT_READ_INVALID;
    sum = shared ? __atomic_load_n(sum_at, __ATOMIC_ACQUIRE) : *sum_at;
    kvshm_slot_copy(copy, slot, KVSHM_SLOT_KV_OFFSET, key_size + value_size,
                    shared);
    h = kvshm_key_hash(copy, key_size);
    if (kvshm_slot_checksum(copy + key_size, value_size,
                            kvshm_slot_checksum_seed(h.low64)) != sum)
        return KVSHM_SLOT_READ_TORN;
    if (kvshm_slot_of_generation(meta, h, generation))
        return KVSHM_SLOT_READ_VERIFIED;
    /* the copy's loads before the second look at meta */
    if (shared)
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return kvshm_meta_load(bucket, i, shared) == meta
               ? KVSHM_SLOT_READ_CLEARED
               : KVSHM_SLOT_READ_TORN;
}

#endif /* MPIKVS_SHM_SLOT_READ_H */
