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

/* What the ranks of a job agree on: the shape of a bucket. */
struct kvshm_data_shape {
    uint64_t key_size;
    uint64_t value_size;
    uint64_t slots_per_bucket;
    uint32_t mode;              /* enum kvshm_mode */
};

static inline uint64_t kvshm_slot_size(const struct kvshm_data_shape *s)
{
    return 8 + kvshm_align8(s->key_size + s->value_size) + 8;
}

static inline uint64_t kvshm_bucket_size(const struct kvshm_data_shape *s)
{
    return 8 + s->slots_per_bucket * kvshm_slot_size(s);
}

/* Where the buckets start in a region with counters for max_ranks ranks:
 * on a page boundary, so that a bucket never straddles more pages than it
 * must. */
uint64_t kvshm_data_buckets_offset(uint64_t max_ranks);

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

#endif /* MPIKVS_SHM_DATA_REGION_H */
