/*
 * node.h - the node tier of readonly windows: each rank publishes what
 * it fetched in a segment of its own (format.h: struct
 * kvshm_rma_segment), in the window's region that the ranks of its node
 * share (node_region.c); the neighbours read it without a lock.  One
 * writer per segment: a slot is guarded by a sequence number (odd while
 * written), the data lives in a ring whose tail the writer moves before
 * it overwrites, and a reader checks both after its copy.  An entry
 * carries the window's invalidation count (gen): a reader takes only
 * entries of its own gen.
 */
#ifndef MPIKVS_RMACACHE_NODE_H
#define MPIKVS_RMACACHE_NODE_H

#include <stddef.h>
#include <stdint.h>

/* The writer publishes an entry (len at most a quarter of the ring):
 * 1, or 0 when it does not fit. */
int rc_node_publish(void *seg, int target, uint64_t disp, size_t len,
                    uint32_t gen, const void *data);

/* The writer withdraws what overlaps [disp, disp + len) of target. */
void rc_node_withdraw(void *seg, int target, uint64_t disp, uint64_t len);

/* A reader: 1 when out holds the entry (of gen), else 0 (out may have
 * been written). */
int rc_node_read(const void *seg, int target, uint64_t disp, size_t len,
                 uint32_t gen, void *out);

#endif /* MPIKVS_RMACACHE_NODE_H */
