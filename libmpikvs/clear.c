/*
 * clear.c - mpikvs_clear, and the generation every key record carries.
 *
 * Emptying a table by writing its slots would take time in proportion to
 * its size (a second for a few GiB a node).  Instead each node's data
 * region counts its table's clears (the control block's generation), a
 * slot's tag is its key's tag scrambled by the generation it was written
 * in (shm/key_hash.h), and a clear is one increment per node: every slot
 * written before it carries a tag its key no longer has, so lookups pass
 * it by, puts take it as free (slot.c), and scans leave it out
 * (kvshm_slot_scan: mpikvs_save, mpikvs_foreach_local, mpikvs_load's
 * question whether the table holds entries, mpikvs-stat).
 *
 * A rank tags the slots of every node with its handle's copy of the
 * generation, so all nodes must have the same one: the open agrees on the
 * largest (a region whose step was killed halfway through a clear, or
 * that an earlier step on fewer nodes cleared, is raised to it and reads
 * as empty), and a clear bumps every node's once, between collectives:
 *
 *   1. every rank: no batch in flight (agreed, else nobody clears), its
 *      own writes completed, its remote hits not published yet dropped;
 *   2. barrier: every operation before the clear is done, everywhere;
 *   3. each node's leader empties its node tier (whatever its caching
 *      mode: "always" means never dropped by invalidation, but a cleared
 *      table's values are gone) and increments its region's generation;
 *   4. allreduce (kvs_generation_agree): every rank takes the new
 *      generation into its handle, the leader's serving thread with it;
 *   5. the neighbourhoods' table, cleared alike (clear_neighbourhoods);
 *   6. allreduce of the outcome: no rank makes a key record of the new
 *      generation, or reads the tier, before every rank and every
 *      serving thread has the new generation and every tier is empty.
 *
 * Between 2 and 6 nobody reads or writes the table: the clear is
 * collective over the handle's communicator, and a shipped key waits for
 * its answer within its call.  Another handle open on the same regions
 * at the same time (another step of the job running concurrently, or a
 * second handle of the table in this process) keeps its generation until
 * it opens again (mpikvs_clear(3)).
 */
#include <stdio.h>

#include "async.h"
#include "clear.h"
#include "errors.h"
#include "handle.h"
#include "mpi_impl.h"
#include "near.h"
#include "node_tier.h"
#include "transport.h"

static uint32_t *region_generation(mpikvs_t *kvs)
{
    return &((struct kvshm_data_control *)((char *)kvs->region->base +
                                           KVSHM_DATA_CONTROL_OFFSET))
                ->generation;
}

int kvs_generation_agree(mpikvs_t *kvs, bool bump)
{
    uint32_t mine = 0, agreed = 0, *g = region_generation(kvs);
    int mpi_rc;

    /* only the leader writes the word; seq_cst: ordered with the tier's
     * emptying before it and the allreduce after it */
    if (kvs->local_rank == 0)
        mine = bump ? __atomic_add_fetch(g, 1, __ATOMIC_SEQ_CST)
                    : __atomic_load_n(g, __ATOMIC_SEQ_CST);
    mpi_rc = MPI_Allreduce(&mine, &agreed, 1, MPI_UINT32_T, MPI_MAX,
                           kvs->comm);
    if (mpi_rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Allreduce of the table's generation",
                            mpi_rc);
    if (kvs->local_rank == 0 && mine != agreed) {
        uint32_t seen = mine;
        /* a region behind the others: its slots are of a generation the
         * job has left, raised past them (never lowered) */
        while (seen < agreed &&
               !__atomic_compare_exchange_n(g, &seen, agreed, false,
                                            __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST))
            ;
    }
    /* read by the key records of this thread and of the leader's serving
     * thread (key.h); the collective after it orders it before them */
    __atomic_store_n(&kvs->generation, agreed, __ATOMIC_RELEASE);
    return MPIKVS_OK;
}

/* Step 5: the neighbourhoods' table, cleared as this one. */
static int clear_neighbourhoods(mpikvs_t *kvs)
{
    mpikvs_t *near = kvs_near_table(kvs);
    int rc = near ? mpikvs_clear(near) : MPIKVS_OK;

    return rc == MPIKVS_OK ? rc
                           : kvs_fail(kvs, rc, "mpikvs_clear: the "
                                               "neighbourhoods: %s",
                                      mpikvs_last_error(near));
}

/* Step 1 on this rank: MPIKVS_OK, or why it cannot clear. */
static int ready_to_clear(mpikvs_t *kvs)
{
    unsigned live = kvs_async_live(kvs);

    if (live)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_clear: rank %d has %u batch%s in flight "
                        "(started with mpikvs_get_batch_start or "
                        "mpikvs_put_batch_start, not yet waited for): "
                        "finish %s with mpikvs_wait first; nothing was "
                        "cleared",
                        kvs->rank, live, live == 1 ? "" : "es",
                        live == 1 ? "it" : "them");
    /* this rank's writes to other nodes have landed before the barrier */
    return kvs->tp->flush(kvs, KVS_ALL_NODES);
}

int mpikvs_clear(mpikvs_t *kvs)
{
    int rc, mpi_rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_clear");
    if ((rc = kvs_agree(kvs, ready_to_clear(kvs))) != MPIKVS_OK)
        return rc;
    /* hits of the old generation must not reach the tier at the next
     * fence */
    kvs_tier_drop_records(kvs);
    /* this rank's stores to its node's memory before the barrier */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    mpi_rc = MPI_Barrier(kvs->comm);
    if (mpi_rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Barrier in mpikvs_clear", mpi_rc);
    rc = kvs_tier_empty(kvs);
    /* every rank takes part, whatever the tier did, or the others hang */
    int grc = kvs_generation_agree(kvs, true);
    if (rc == MPIKVS_OK)
        rc = grc;
    if (rc == MPIKVS_OK)
        rc = clear_neighbourhoods(kvs);
    return kvs_agree(kvs, rc);
}
