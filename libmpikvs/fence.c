/*
 * fence.c - the boundaries of the cache's epochs: mpikvs_fence and
 * mpikvs_tier_invalidate.  Both first complete the batches in flight
 * (async.c): a remote hit enters the node tier before the barrier that
 * publishes it, and before the tier is emptied, never after.
 */
#include "async.h"
#include "errors.h"
#include "mpi_impl.h"
#include "near.h"
#include "node_tier.h"
#include "transport.h"

int mpikvs_fence(mpikvs_t *kvs)
{
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_fence");
    kvs_async_complete(kvs);
    /* Stores to the own node's memory before the barrier are seen by the
     * node's ranks after it. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if ((rc = kvs->tp->flush(kvs, KVS_ALL_NODES)) != MPIKVS_OK ||
        (rc = kvs_near_flush(kvs)) != MPIKVS_OK)
        return rc;
    /* The node's remote hits into its tier, before the barrier that lets
     * the next epoch read them. */
    int tier_rc = kvs_tier_publish(kvs);
    rc = MPI_Barrier(kvs->comm);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Barrier in mpikvs_fence", rc);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return tier_rc;
}

int mpikvs_tier_invalidate(mpikvs_t *kvs)
{
    if (!kvs)
        return kvs_no_handle("mpikvs_tier_invalidate");
    kvs_async_complete(kvs);
    return kvs_tier_invalidate(kvs);
}
