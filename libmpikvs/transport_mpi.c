/*
 * transport_mpi.c - the transport over MPI one-sided communication.
 *
 * One window over every node's data region: a node's leader exposes the
 * whole region, the other ranks nothing, so a node is reached at its
 * leader's rank.  The lock-free and fine-lock modes hold one passive
 * epoch (MPI_Win_lock_all) for the handle's life and only flush; the
 * coarse-lock mode opens an epoch per operation with MPI_Win_lock, which
 * is its whole point (it reproduces the paper's comparison).
 *
 * cpu_atomic is false, under every MPI: MPI-3.1 (11.7) makes its
 * accumulate operations atomic with each other only, not with the target
 * node's own loads, stores and CPU atomics.  What the implementations do
 * agrees: Open MPI's osc pt2pt applies them in software at the target,
 * rdma and ucx with the network's atomics; MPICH's ch4 (MPICH, Intel MPI,
 * Cray MPICH) on a window of MPI_Win_create memory with the netmod's
 * atomics (UCX's, done by the target's worker on memory UCX did not
 * allocate) or as active messages the target process applies; none with
 * the target CPU's locked instructions.
 *
 * The window's calls are the profiling interface's (PMPI_): a tool that
 * wraps the MPI_ calls of the program, libmpikvs-rmacache above all
 * (mpikvs-rmacache(7)), does not take the library's own window for the
 * program's.  Messages name the MPI_ call.
 */
#include <errno.h>
#include <stdlib.h>

#include "errors.h"
#include "mpi_impl.h"
#include "route.h"
#include "transport.h"
#include "transport_mpi.h"

struct mpi_transport {
    MPI_Win win;         /* MPI_WIN_NULL: no node is ever remote */
    bool    locked_all;  /* the handle-long epoch is open */
    bool    atomics_ok;  /* kvs_check_osc passed: at open for the
                          * fine-lock mode, else at the first atomic
                          * (a counter's) */
};

static struct mpi_transport *state(const mpikvs_t *kvs)
{
    return kvs->tp_state;
}

static int target(const mpikvs_t *kvs, uint32_t node)
{
    return kvs->leaders[node];
}

static int checked(mpikvs_t *kvs, int rc, const char *what)
{
    return rc == MPI_SUCCESS ? MPIKVS_OK : kvs_mpi_fail(kvs, what, rc);
}

static int mpi_read(mpikvs_t *kvs, uint32_t node, uint64_t disp, void *buf,
                    size_t len)
{
    return checked(kvs,
                   PMPI_Get(buf, (int)len, MPI_BYTE, target(kvs, node),
                           (MPI_Aint)disp, (int)len, MPI_BYTE,
                           state(kvs)->win),
                   "MPI_Get");
}

static int mpi_write(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                     const void *buf, size_t len)
{
    return checked(kvs,
                   PMPI_Put(buf, (int)len, MPI_BYTE, target(kvs, node),
                           (MPI_Aint)disp, (int)len, MPI_BYTE,
                           state(kvs)->win),
                   "MPI_Put");
}

static int mpi_flush(mpikvs_t *kvs, uint32_t node)
{
    struct mpi_transport *s = state(kvs);

    if (node != KVS_ALL_NODES)
        return checked(kvs, PMPI_Win_flush(target(kvs, node), s->win),
                       "MPI_Win_flush");
    /* Without the handle-long epoch there is nothing outstanding: the
     * coarse-lock mode's MPI_Win_unlock completed it. */
    if (!s->locked_all)
        return MPIKVS_OK;
    /* One flush per node's leader rather than MPI_Win_flush_all, which
     * Open MPI 4.1's ucx component returned from with gets still
     * outstanding (batches then read stale buckets; seen in tests/mpi
     * with OMPI_MCA_osc=ucx). */
    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        int rc = PMPI_Win_flush(target(kvs, n), s->win);
        if (rc != MPI_SUCCESS)
            return kvs_mpi_fail(kvs, "MPI_Win_flush", rc);
    }
    return MPIKVS_OK;
}

/* Whether this MPI's atomics can be used, checked once: a counter call
 * under a one-sided component that crashes on them is refused, with the
 * remedy, instead. */
static int atomics_usable(mpikvs_t *kvs)
{
    struct mpi_transport *s = state(kvs);
    int rc;

    if (s->atomics_ok)
        return MPIKVS_OK;
    rc = kvs_check_osc(kvs, "the global counters over the mpi transport");
    s->atomics_ok = rc == MPIKVS_OK;
    return rc;
}

/* The atomics complete before they return: their callers (the bucket
 * locks) need the word they saw at once, and MPI needs the operand
 * buffers until completion. */
static int mpi_cas64(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                     uint64_t expect, uint64_t desired, uint64_t *seen)
{
    int64_t e = (int64_t)expect, w = (int64_t)desired, got = 0;
    int rc = atomics_usable(kvs);

    *seen = 0;
    if (rc != MPIKVS_OK)
        return rc;
    rc = PMPI_Compare_and_swap(&w, &e, &got, MPI_INT64_T, target(kvs, node),
                               (MPI_Aint)disp, state(kvs)->win);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Win_flush(target(kvs, node), state(kvs)->win);
    *seen = (uint64_t)got;
    return checked(kvs, rc, "MPI_Compare_and_swap");
}

static int mpi_fetch_add64(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                           int64_t add, uint64_t *before)
{
    int64_t got = 0;
    int rc = atomics_usable(kvs);

    *before = 0;
    if (rc != MPIKVS_OK)
        return rc;
    rc = PMPI_Fetch_and_op(&add, &got, MPI_INT64_T, target(kvs, node),
                           (MPI_Aint)disp, add ? MPI_SUM : MPI_NO_OP,
                           state(kvs)->win);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Win_flush(target(kvs, node), state(kvs)->win);
    *before = (uint64_t)got;
    return checked(kvs, rc, "MPI_Fetch_and_op");
}

static int mpi_lock_node(mpikvs_t *kvs, uint32_t node, bool exclusive)
{
    return checked(kvs,
                   PMPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE
                                          : MPI_LOCK_SHARED,
                                target(kvs, node), 0, state(kvs)->win),
                   "MPI_Win_lock");
}

static int mpi_unlock_node(mpikvs_t *kvs, uint32_t node)
{
    return checked(kvs, PMPI_Win_unlock(target(kvs, node), state(kvs)->win),
                   "MPI_Win_unlock");
}

static bool mpi_close(mpikvs_t *kvs, bool together)
{
    struct mpi_transport *s = state(kvs);

    if (!s)
        return false;
    if (s->win != MPI_WIN_NULL) {
        /* MPI_Win_free waits for every rank: only when all came */
        if (!together)
            return true;
        if (s->locked_all)
            PMPI_Win_unlock_all(s->win);
        PMPI_Win_free(&s->win);
    }
    free(s);
    kvs->tp_state = NULL;
    return false;
}

static const struct kvs_transport mpi_transport = {
    .cpu_atomic = false,
    .read = mpi_read,
    .write = mpi_write,
    .cas64 = mpi_cas64,
    .fetch_add64 = mpi_fetch_add64,
    .flush = mpi_flush,
    .mapped = NULL,   /* every node through the window */
    .lock_node = mpi_lock_node,
    .unlock_node = mpi_unlock_node,
    .close = mpi_close,
};

int kvs_transport_mpi_open(mpikvs_t *kvs)
{
    struct mpi_transport *s = calloc(1, sizeof(*s));
    int rc;

    if (!s)
        return kvs_fail(kvs, -ENOMEM, "out of memory for the MPI transport");
    s->win = MPI_WIN_NULL;
    kvs->tp_state = s;
    kvs->tp = &mpi_transport;
    /* On one node the lock-free mode reads and writes shared memory only:
     * no window, and none of the one-sided components' troubles. */
    if (!kvs_routes_need_transport(kvs))
        return MPIKVS_OK;
    if (kvs->mode == KVSHM_MODE_FINE_LOCK) {
        if ((rc = kvs_check_osc(kvs, "the fine-lock mode")) != MPIKVS_OK)
            return rc;
        s->atomics_ok = true;
    }
    rc = PMPI_Win_create(kvs->local_rank == 0 ? kvs->region->base : NULL,
                        kvs->local_rank == 0 ? (MPI_Aint)kvs->region->size
                                             : 0,
                        1, MPI_INFO_NULL, kvs->comm, &s->win);
    if (rc != MPI_SUCCESS) {
        s->win = MPI_WIN_NULL;
        return kvs_mpi_fail(kvs, "MPI_Win_create", rc);
    }
    PMPI_Win_set_errhandler(s->win, MPI_ERRORS_RETURN);
    if (kvs->mode != KVSHM_MODE_COARSE_LOCK) {
        /* One passive epoch for the handle's life: the lock-free and
         * fine-lock paths then only flush. */
        rc = PMPI_Win_lock_all(MPI_MODE_NOCHECK, s->win);
        if (rc != MPI_SUCCESS)
            return kvs_mpi_fail(kvs, "MPI_Win_lock_all", rc);
        s->locked_all = true;
    }
    return MPIKVS_OK;
}
