/*
 * rma_region.h - the region of a libmpikvs-rmacache window on a node
 * (format.h: struct kvshm_rma_control and what follows it): its size
 * rule, laying it out, and the checked reads mpikvs-stat makes of it.
 * The segments' lock-free protocol is rmacache/node.c's.
 */
#ifndef MPIKVS_SHM_RMA_REGION_H
#define MPIKVS_SHM_RMA_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "mpikvs_errors.h"

/* Bounds a reader holds a control block to (a writer never exceeds
 * them: a node's ranks, a ring of MPIKVS_RMACACHE_BYTES). */
#define KVSHM_RMA_MAX_RANKS (UINT64_C(1) << 16)
#define KVSHM_RMA_MAX_RING  (UINT64_C(1) << 40)
#define KVSHM_RMA_PAGE      4096u

/* Where things go in the region of nranks segments of ring_size bytes
 * of data each. */
struct kvshm_rma_layout {
    uint64_t ranks_offset;
    uint64_t segments_offset;
    uint64_t segment_size;
    uint64_t region_size;      /* header included */
};

/* The layout, or MPIKVS_ERR_INVAL (with a message) when nranks is 0 or
 * above KVSHM_RMA_MAX_RANKS, or ring_size is not a multiple of 8 from 8
 * to KVSHM_RMA_MAX_RING. */
int kvshm_rma_layout(uint64_t nranks, uint64_t ring_size,
                     struct kvshm_rma_layout *out, mpikvs_error_t *err);

/* Lay out a new region mapped at base (the body zero, as a new region's
 * is): its control block and every segment's header. */
void kvshm_rma_init(void *base, const struct kvshm_rma_layout *l,
                    uint64_t nranks, uint64_t win_ranks, uint64_t ring_size);

/* Copy the control block of the region mapped at base (size bytes in
 * the file) into *out and check it: the offsets must be the layout's for
 * its nranks and ring_size, and the rank blocks must end in the file.
 * Use only the copy.  MPIKVS_OK or MPIKVS_ERR_CORRUPT, naming the
 * field. */
int kvshm_rma_read_control(const void *base, uint64_t size, const char *name,
                           struct kvshm_rma_control *out,
                           mpikvs_error_t *err);

/* Rank r's block and segment (r < c->nranks of a checked control). */
struct kvshm_rma_rank *kvshm_rma_rank(const void *base,
                                      const struct kvshm_rma_control *c,
                                      uint64_t r);
void *kvshm_rma_segment(const void *base, const struct kvshm_rma_control *c,
                        uint64_t r);

/* The window's name: set by the node's first rank, read by anyone (a
 * name being changed reads as the old or the new one, or, after a few
 * tries, as what was there, cut at len - 1). */
void kvshm_rma_set_name(void *base, const char *name);
void kvshm_rma_name(const void *base, char *out, size_t len);

/* "off", "transparent", "readonly", or "?". */
const char *kvshm_rma_mode_name(uint64_t mode);

#endif /* MPIKVS_SHM_RMA_REGION_H */
