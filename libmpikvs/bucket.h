/*
 * bucket.h - the bucket protocol: one get, one put and one put-if-absent
 * of a key in its bucket (bucket.c), over a table (its shape, the own
 * node's buckets, the stats block counted into) and a bucket I/O (where
 * the bucket is and how its words change: shared memory here, or the
 * transport, bucket_far.c).  No MPI: a node's serving thread runs it on
 * the leader's table with a stats block of its own, and tests run it on a
 * private mapping.
 */
#ifndef MPIKVS_BUCKET_H
#define MPIKVS_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "mpikvs_errors.h"

/* The table's shape and where this process reaches it: the handle's
 * (handle.h, kvs->tab), or the serving thread's copy of it with its own
 * stats block (transport_ucx_serve.c). */
struct kvs_table {
    size_t                   key_size, value_size;
    size_t                   hash_size; /* the key's first bytes that place
                                         * it (key.h): all of them, or a
                                         * neighbourhood member's coarse
                                         * key (near.h); 0: all */
    uint64_t                 slots, slot_size, bucket_size, nbuckets;
    uint64_t                 buckets_offset; /* in a node's region */
    unsigned char           *buckets;   /* the own node's, in shared
                                         * memory (region base +
                                         * buckets_offset) */
    struct kvshm_rank_stats *stats;     /* the block counted into */
    uint32_t                 pid;       /* getpid(): the owner of this
                                         * process's claims (slot.h) */
};

/* The bytes of a key its hash, and so its home, bucket and tag, is of. */
static inline size_t kvs_table_hash_size(const struct kvs_table *t)
{
    return t->hash_size ? t->hash_size : t->key_size;
}

/* Counters are written by their block's one writer only: a plain
 * increment, made visible to readers of the region without a locked
 * instruction.  t: a table. */
#define KVS_COUNT(t, field, n)                                          \
    __atomic_store_n(&(t)->stats->field, (t)->stats->field + (n),       \
                     __ATOMIC_RELAXED)

struct kvs_key;
struct mpikvs;
struct kvs_access;

/* Where a bucket is and how its words change. */
struct kvs_bucket_io {
    /* The bucket is this process's memory, where its writers are: loads
     * ordered against them, claims carry the pid, dead owners seen. */
    bool shared;
    /* Nobody else writes the bucket meanwhile (a lock modes' lock is
     * held): no claim is waited for, a torn slot is read again at once. */
    bool locked;
    /* The bucket as it is now: in place, or a fresh copy (where the I/O
     * reads single slots, a copy of its header and of the slots of the
     * key's tag: all that a pick or a look reads). */
    int (*bucket)(struct kvs_access *a, unsigned char **b);
    /* The get's look-up of the key (enum slot_found, or an error), its
     * value into value as kvs_slot_find does; NULL: find it in the
     * bucket (above).  Where the I/O reads single slots, only the
     * header and the slots of the key's tag travel, the value straight
     * into value. */
    int (*find)(struct kvs_access *a, void *value, uint64_t *torn_slot,
                uint64_t *torn_meta);
    /* Compare-and-swap of slot i's meta word, completed; *seen: the word
     * before; fence: also a full fence after it (put-if-absent's next
     * look must come after its claim).  NULL where it would not be
     * atomic with the slot's other writers (a transport whose atomics
     * are not the CPU's): slots are then written unclaimed. */
    int (*cas)(struct kvs_access *a, uint64_t i, uint64_t expect,
               uint64_t desired, uint64_t *seen, bool fence);
    /* Key, value and checksum into slot i of b (the bucket as read),
     * completed: a claimed slot's (meta NULL), or, unclaimed, its meta
     * word first. */
    int (*write)(struct kvs_access *a, unsigned char *b, uint64_t i,
                 const uint64_t *meta, const void *value);
    /* A slot that did not verify, meta the word its read saw: mark it
     * invalid if it is still that.  1 if marked, 0 if not, or an error. */
    int (*invalidate)(struct kvs_access *a, unsigned char *b, uint64_t i,
                      uint64_t meta);
};

/* One operation of the protocol: a key of a table, through an I/O. */
struct kvs_access {
    const struct kvs_table     *t;
    const struct kvs_bucket_io *io;
    const struct kvs_key       *k;
    struct mpikvs              *kvs;   /* the handle whose call this is
                                        * (the transport's I/O, the test
                                        * hook), NULL for a serving thread */
    /* on MPIKVS_ERR_STALLED from a claim in the way (claim_stalled; a
     * stall of the transport's I/O leaves it false): the claim a put
     * waited for */
    uint64_t                    stall_slot, stall_meta;
    bool                        claim_stalled;
};

/* The bucket in this process's shared memory (bucket.c). */
extern const struct kvs_bucket_io kvs_shared_io;

/* The get: MPIKVS_OK with the value, MPIKVS_MISS, or an error.  A slot
 * that does not verify is read again (MPIKVS_CHECKSUM_RETRIES reads),
 * then given up on as a miss and marked invalid where the I/O can. */
#define MPIKVS_CHECKSUM_RETRIES 3
int kvs_bucket_get(struct kvs_access *a, void *value);

/* The put: pick a slot, then claim, write and release it (an I/O with
 * cas), or write it as picked (without).  The slot choice (enum
 * slot_choice, slot.h), not counted, or an error: MPIKVS_ERR_STALLED
 * after KVS_SLOT_STALL_MS of a live claim in the way (stall_slot and
 * stall_meta name it). */
int kvs_bucket_put(struct kvs_access *a, const void *value);

/* The put-if-absent: the slot choice, SLOT_PRESENT with the present
 * value in present (if not NULL), or an error as the put's.  One winner
 * per key where the I/O has cas; without, a lookup and then a put,
 * which a racing put can beat (mpikvs(3)). */
int kvs_bucket_put_absent(struct kvs_access *a, const void *value,
                          void *present);

/* Count a put that took a slot (enum slot_choice) in t's block. */
void kvs_count_put(const struct kvs_table *t, int choice);

#endif /* MPIKVS_BUCKET_H */
