/*
 * scan.h - reading a table's data region from outside its job, without
 * writing a byte: the control block, checked against the region, and how
 * full the buckets are.  For mpikvs-stat(1), which maps regions PROT_READ
 * while the job's ranks keep writing them.
 *
 * What a concurrent reader sees.  The control block's bucket geometry is
 * written once, before state becomes KVSHM_DATA_READY with release, so a
 * reader that loads READY with acquire sees all of it.  Slots change all
 * the time: a slot is read as libmpikvs reads one (kvshm_slot_read() of
 * slot_read.h: meta, then the checksum with acquire, then key and value,
 * hashed), so a slot caught in the middle of a write counts as
 * "unverified", never as used, and no value read from a slot is ever
 * trusted as an offset or a length.
 */
#ifndef MPIKVS_SHM_SCAN_H
#define MPIKVS_SHM_SCAN_H

#include <stdint.h>

#include "data_region.h"
#include "format.h"
#include "mpikvs_errors.h"

/* Slots of a data region by what a reader finds in them. */
struct kvshm_occupancy {
    uint64_t buckets;
    uint64_t slots;         /* buckets * slots per bucket */
    uint64_t used;          /* occupied, and key and value verify */
    uint64_t invalid;       /* marked invalid by a reader that saw them
                             * torn too often (lock-free mode) */
    uint64_t unverified;    /* occupied but the checksum does not match:
                             * a write in flight, or damage */
    uint64_t free;          /* never written, or before the table's
                             * latest clear (mpikvs_clear(3)) */
    uint64_t full_buckets;  /* buckets without a free or invalid slot: the
                             * next new key there evicts */
};

/* The control block is read and checked by kvshm_data_read_control()
 * of data_region.h, the one check libmpikvs uses too. */

/* Count the slots of every bucket of a region whose control block c was
 * read by kvshm_data_read_control() with state KVSHM_DATA_READY.  Never
 * writes to the region and tolerates writers.  Returns MPIKVS_OK,
 * MPIKVS_ERR_INVAL (c not READY) or -ENOMEM. */
int kvshm_data_occupancy(const void *base, const struct kvshm_data_control *c,
                         struct kvshm_occupancy *out);

/* Rank rank's counter block (rank < c->max_ranks; c checked as above). */
static inline const struct kvshm_rank_stats *kvshm_data_rank_stats(
    const void *base, const struct kvshm_data_control *c, uint64_t rank)
{
    return (const struct kvshm_rank_stats *)((const char *)base +
                                             c->stats_offset) +
           rank;
}

#endif /* MPIKVS_SHM_SCAN_H */
