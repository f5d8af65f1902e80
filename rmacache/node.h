/*
 * node.h - the node tier of readonly windows: each rank publishes what
 * it fetched in a segment of its own, in memory the ranks of its node
 * share (an MPI shared window made through PMPI); the neighbours read
 * it without a lock.  One writer per segment: a slot is guarded by a
 * sequence number (odd while written), the data lives in a ring whose
 * tail the writer moves before it overwrites, and a reader checks both
 * after its copy.  An entry carries the window's invalidation count
 * (gen): a reader takes only entries of its own gen.
 */
#ifndef MPIKVS_RMACACHE_NODE_H
#define MPIKVS_RMACACHE_NODE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RC_NODE_SLOTS 4096u

struct rc_nslot {
    _Atomic uint32_t seq;
    int32_t          target;
    uint32_t         len;
    uint32_t         gen;
    uint64_t         disp;
    uint64_t         pos;
};

struct rc_nhdr {
    _Atomic uint64_t tail;      /* ring bytes before this are being reused */
    uint64_t         head;      /* the writer's own */
    uint64_t         ring_size;
    uint64_t         ready;     /* the writer initialised the segment */
};

/* The bytes of a segment with a ring of ring_size bytes. */
size_t rc_node_seg_size(size_t ring_size);

/* Make seg (of rc_node_seg_size(ring_size) bytes) an empty segment. */
void rc_node_seg_init(void *seg, size_t ring_size);

/* The writer publishes an entry (len at most a quarter of the ring). */
void rc_node_publish(void *seg, int target, uint64_t disp, size_t len,
                     uint32_t gen, const void *data);

/* The writer withdraws what overlaps [disp, disp + len) of target. */
void rc_node_withdraw(void *seg, int target, uint64_t disp, uint64_t len);

/* A reader: 1 when out holds the entry (of gen), else 0 (out may have
 * been written). */
int rc_node_read(const void *seg, int target, uint64_t disp, size_t len,
                 uint32_t gen, void *out);

#endif /* MPIKVS_RMACACHE_NODE_H */
