/*
 * data_region.h - laying out a table's data region (format.h): where the
 * per-rank counters and the buckets go, shared by the library (which
 * makes the region itself under plain mpirun) and the SPANK plugin (which
 * makes it at step launch, before any rank runs).
 */
#ifndef MPIKVS_SHM_DATA_REGION_H
#define MPIKVS_SHM_DATA_REGION_H

#include <stdint.h>

#include "format.h"
#include "mpikvs_errors.h"

/* The per-rank counters start right after the control block. */
#define KVSHM_DATA_STATS_OFFSET \
    (KVSHM_DATA_CONTROL_OFFSET + sizeof(struct kvshm_data_control))

/* What the ranks of a job agree on: the shape of a bucket. */
struct kvshm_data_shape {
    uint64_t key_size;
    uint64_t value_size;
    uint64_t slots_per_bucket;
    uint32_t mode;              /* enum kvshm_mode */
};

/* A slot: key and value, padded to 8 bytes, then the checksum; a bucket:
 * its header and its slots, in whole cache lines (format.h). */
static inline uint64_t kvshm_slot_size(const struct kvshm_data_shape *s)
{
    return kvshm_align8(s->key_size + s->value_size) +
           KVSHM_SLOT_CHECKSUM_SIZE;
}

static inline uint64_t kvshm_bucket_size(const struct kvshm_data_shape *s)
{
    return kvshm_align_line(kvshm_bucket_slot_offset(
        s->slots_per_bucket, kvshm_slot_size(s), s->slots_per_bucket));
}

/* Where the buckets start in a region with counters for max_ranks ranks:
 * on a page boundary, so that a bucket never straddles more pages than it
 * must. */
uint64_t kvshm_data_buckets_offset(uint64_t max_ranks);

/* The smallest data region with counters for max_ranks ranks and one
 * bucket of shape s: kvshm_data_init and kvshm_data_format refuse less,
 * and the smallest usable DHT size (plan.h) is built on it. */
static inline uint64_t kvshm_data_min_size(uint64_t max_ranks,
                                           const struct kvshm_data_shape *s)
{
    return kvshm_data_buckets_offset(max_ranks) + kvshm_bucket_size(s);
}

/* The control block of a new region of region_size bytes, with counters
 * for max_ranks ranks.  With a shape, the buckets fill the rest of the
 * region (MPIKVS_ERR_TOOSMALL if not one fits); without one, the region
 * is left for its first opener to lay out (kvshm_data_format). */
int kvshm_data_init(struct kvshm_data_control *c, uint64_t region_size,
                    uint64_t max_ranks, const struct kvshm_data_shape *shape,
                    const char *table, mpikvs_error_t *err);

/* Make sure the region's buckets have this shape: lay them out if nobody
 * has (waiting a bounded time for another opener doing it now), or check
 * that the shape already there is the same (MPIKVS_ERR_MISMATCH, naming
 * both).  c must be mapped writable. */
int kvshm_data_format(struct kvshm_data_control *c, uint64_t region_size,
                      const struct kvshm_data_shape *shape,
                      const char *region_name, mpikvs_error_t *err);

/* Check a private copy c of the control block of a data region of
 * region_size bytes, the one check of a control block that every reader
 * (libmpikvs when it attaches, mpikvs-stat) trusts: the counters must be
 * where they go and end before the buckets, and once c->state is
 * KVSHM_DATA_READY the bucket geometry must be the one the key and value
 * sizes give, and every bucket must lie inside the region.  Sums and
 * products of the fields are bounded before they are formed, so no value
 * can wrap into one that passes.  A region not laid out yet
 * (KVSHM_DATA_UNFORMATTED or _FORMATTING) passes on its counters alone.
 * name is for messages.  Returns MPIKVS_OK or MPIKVS_ERR_CORRUPT, err
 * naming the field and its value. */
int kvshm_data_control_check(const struct kvshm_data_control *c,
                             uint64_t region_size, const char *name,
                             mpikvs_error_t *err);

/* Copy the control block of the data region mapped at base (size bytes
 * in the file) into *out, loading state with acquire first, and check
 * the copy with kvshm_data_control_check().  Use only the copy: the
 * region may change after the check.  Returns what the check returns. */
int kvshm_data_read_control(const void *base, uint64_t size,
                            const char *name,
                            struct kvshm_data_control *out,
                            mpikvs_error_t *err);

#endif /* MPIKVS_SHM_DATA_REGION_H */
