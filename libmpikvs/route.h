/*
 * route.h - the way from this rank to each node's buckets and counters,
 * set once when the transport opens (route.c): the one place that
 * combines the mode, the own node, the transport's shipping and whether
 * its atomics are the CPU's.  The transports ask it what to open; the
 * get, the put, put-if-absent, batches and the global counters read it.
 */
#ifndef MPIKVS_ROUTE_H
#define MPIKVS_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "bucket.h"
#include "handle.h"

enum kvs_route_kind {
    KVS_ROUTE_SHARED,   /* the own node's buckets in shared memory,
                         * lock-free */
    KVS_ROUTE_SHIPPED,  /* keys shipped whole to the node, whose serving
                         * thread runs the protocol (transport.h, ship) */
    KVS_ROUTE_FAR       /* buckets read and slots written through the
                         * transport (bucket_far.c) */
};

struct kvs_route {
    enum kvs_route_kind         kind;
    const struct kvs_bucket_io *io;     /* SHARED and FAR: the buckets' */
    bool                        far_slot; /* FAR: single slots read, not
                                         * the whole bucket (bucket_far.c) */
    bool                        locked; /* the mode's lock is taken around
                                         * each operation (kvs_locked) */
    bool                        counters_cpu;   /* the node's counter
                                         * words change with this CPU's
                                         * atomics (counters.c) ... */
    bool                        counters_locked;/* ... or the transport's,
                                         * under the node's lock */
};

/* What a transport sets up as it opens, before the routes are set:
 * whether any route goes through it (none where the job is one node and
 * lock-free: shared memory only), and whether it may ship keys whole
 * (the lock-free protocol only: a serving thread takes no locks). */
bool kvs_routes_need_transport(const mpikvs_t *kvs);
bool kvs_routes_may_ship(const mpikvs_t *kvs);

/* Set kvs->routes[nnodes] from the mode and the transport (kvs->tp;
 * NULL: none, one node, lock-free).  MPIKVS_OK or -ENOMEM. */
int kvs_routes_set(mpikvs_t *kvs);

/* Whether some node's buckets are read whole (a batch's copies must hold
 * buckets, not only probes: bucket_far.h). */
bool kvs_routes_read_buckets(const mpikvs_t *kvs);

/* The route to node, and whether its keys are shipped. */
static inline const struct kvs_route *kvs_route(const mpikvs_t *kvs,
                                                uint32_t node)
{
    return &kvs->routes[node];
}

static inline bool kvs_shipped(const mpikvs_t *kvs, uint32_t node)
{
    return kvs_route(kvs, node)->kind == KVS_ROUTE_SHIPPED;
}

#endif /* MPIKVS_ROUTE_H */
