/*
 * index.h - the cache of one window, without MPI: an index of
 * (target, byte displacement, length) keys over a ring of data bytes.
 *
 * The data lives in one ring of `budget' bytes, written in order; a new
 * entry that needs room overwrites the oldest ones (each chunk in the
 * ring starts with a header naming its slot, so the overwritten entries
 * leave the index at once).  The index is set-associative: a key hashes
 * to one bucket of RC_WAYS slots, and a full bucket gives up its oldest
 * slot.  Neither a lookup nor an insertion ever probes more than one
 * bucket, so a full cache is as fast as an empty one.
 *
 * rc_index_clear is O(1) (a generation number); a range invalidation
 * scans the slots, but only when a per-target bound says some entry of
 * that target may overlap.  Not thread-safe: the caller holds a lock.
 */
#ifndef MPIKVS_RMACACHE_INDEX_H
#define MPIKVS_RMACACHE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define RC_WAYS 4

struct rc_slot {
    uint64_t disp;   /* byte displacement in the target's window */
    uint64_t pos;    /* ring position (absolute) of the chunk header */
    uint32_t len;    /* data bytes */
    int32_t  target;
    uint32_t gen;    /* valid when equal to the index's gen (never 0) */
    uint32_t pad;
};

struct rc_bound {
    uint64_t lo, hi; /* [lo, hi) covers every live entry of the target */
};

struct rc_index {
    struct rc_slot  *slots;    /* nbuckets * RC_WAYS */
    size_t           nbuckets; /* a power of two */
    unsigned char   *ring;
    size_t           ring_size;
    uint64_t         head;     /* next free ring position */
    uint64_t         tail;     /* oldest chunk still in the ring */
    uint32_t         gen;
    int              ntargets;
    struct rc_bound *bounds;   /* ntargets */
    uint64_t         evictions;
    uint64_t         entries;  /* live entries */
};

/* Header of a chunk in the ring: the slot that points at it and the
 * chunk's whole size (header + data, rounded to 8). */
struct rc_chunk {
    uint32_t slot;   /* RC_NO_SLOT for padding at the ring's end */
    uint32_t size;
};
#define RC_NO_SLOT UINT32_MAX

/* The largest entry a budget admits (a quarter of the ring). */
size_t rc_index_max_len(size_t budget);

/* 0, or -1 (errno ENOMEM; EINVAL for a budget below 4 KiB or ntargets
 * < 1). */
int rc_index_init(struct rc_index *ix, size_t budget, int ntargets);
void rc_index_fini(struct rc_index *ix);

/* The data of the entry, or NULL. */
const void *rc_index_lookup(const struct rc_index *ix, int target,
                            uint64_t disp, size_t len);

/* Copy len bytes in as the entry (target, disp, len), replacing an
 * existing one.  0, or -1 when len exceeds rc_index_max_len. */
int rc_index_insert(struct rc_index *ix, int target, uint64_t disp,
                    size_t len, const void *data);

/* Drop every entry. */
void rc_index_clear(struct rc_index *ix);

/* Drop the entries of target that overlap [disp, disp + len) (len
 * UINT64_MAX: all of the target's); returns how many. */
uint64_t rc_index_invalidate(struct rc_index *ix, int target, uint64_t disp,
                             uint64_t len);

#endif /* MPIKVS_RMACACHE_INDEX_H */
