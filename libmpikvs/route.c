/*
 * route.c - each node's route (route.h), set once when the transport
 * opens.
 *
 * Lock-free, the own node's buckets are this process's shared memory;
 * another node's keys are shipped whole where the transport ships them,
 * else its buckets are read and written through the transport, a slot
 * claimed with the target's compare-and-swap where the transport's
 * atomics are the CPU's (cpu_atomic) and written unclaimed where not.
 * The lock modes take every bucket, the own node's too, through the
 * transport under the mode's lock, so that its lock words see one kind
 * of atomics only.
 *
 * A global counter's word changes with the CPU's atomics on its own node
 * where the transport's are the same ones, or where the job is one node
 * (every rank then does, and the mpi transport has no window); otherwise
 * every rank, the own node's too, goes through the transport, so that one
 * word never sees two kinds of atomics that are not atomic with each
 * other.  The coarse-lock mode holds no handle-long epoch on the mpi
 * window: an atomic there takes the node's lock around it.
 */
#include <errno.h>
#include <stdlib.h>

#include "bucket_far.h"
#include "errors.h"
#include "route.h"

bool kvs_routes_need_transport(const mpikvs_t *kvs)
{
    return !(kvs->nnodes == 1 && kvs->mode == KVSHM_MODE_LOCKFREE);
}

bool kvs_routes_may_ship(const mpikvs_t *kvs)
{
    return kvs->mode == KVSHM_MODE_LOCKFREE;
}

bool kvs_routes_read_buckets(const mpikvs_t *kvs)
{
    for (uint32_t n = 0; n < kvs->nnodes; n++)
        if (kvs->routes[n].kind == KVS_ROUTE_FAR && !kvs->routes[n].far_slot)
            return true;
    return false;
}

int kvs_routes_set(mpikvs_t *kvs)
{
    const struct kvs_transport *tp = kvs->tp;
    bool lockfree = kvs->mode == KVSHM_MODE_LOCKFREE;
    bool cpu_atomic = !tp || tp->cpu_atomic;
    struct kvs_route *routes = calloc(kvs->nnodes, sizeof(*routes));

    if (!routes)
        return kvs_fail(kvs, -ENOMEM, "out of memory for %u routes",
                        kvs->nnodes);
    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        struct kvs_route *r = &routes[n];
        if (lockfree && n == kvs->node) {
            r->kind = KVS_ROUTE_SHARED;
            r->io = &kvs_shared_io;
        } else if (lockfree && tp->ships && tp->ships(kvs, n)) {
            r->kind = KVS_ROUTE_SHIPPED;
        } else {
            r->kind = KVS_ROUTE_FAR;
            r->io = !lockfree    ? &kvs_far_locked_io
                    : cpu_atomic ? &kvs_far_claimed_io
                                 : &kvs_far_unclaimed_io;
            r->far_slot = kvs_far_slot_choose(
                kvs->table ? kvs->table->far_read : KVSHM_FAR_READ_AUTO,
                kvs->tab.slot_size, tp->mapped && tp->mapped(kvs, n));
        }
        r->locked = !lockfree;
        r->counters_cpu = n == kvs->node && (cpu_atomic || kvs->nnodes == 1);
        r->counters_locked = !r->counters_cpu &&
                             kvs->mode == KVSHM_MODE_COARSE_LOCK &&
                             tp->lock_node;
    }
    free(kvs->routes);
    kvs->routes = routes;
    return MPIKVS_OK;
}
