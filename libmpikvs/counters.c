/*
 * counters.c - the job's global counters: 64-bit words in the data
 * regions' control blocks (format.h), counter i in counters[i / nnodes]
 * of node i % nnodes, so that a job's counters are spread over its nodes.
 *
 * Every change is one atomic operation where the word is.  The node's
 * own ranks use the CPU's atomics when the transport's are the same ones
 * (transport.h, cpu_atomic: ucx), or when the job is one node (every
 * rank then does, and the mpi transport has no window); otherwise every
 * rank, the own node's too, goes through the transport, so that one word
 * never sees two kinds of atomics that are not atomic with each other.
 * The coarse-lock mode holds no handle-long epoch on the mpi window: an
 * operation there takes the node's lock around it, as a get or put does.
 */
#include <stddef.h>

#include "transport.h"

unsigned mpikvs_counters(const mpikvs_t *kvs)
{
    return kvs ? kvs->ncounters : 0;
}

static int where(mpikvs_t *kvs, const char *call, unsigned i,
                 uint32_t *node, uint64_t *disp)
{
    if (i >= kvs->ncounters)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: counter %u does not exist: this table has %u "
                        "(its \"counters\" in the job config, at most %u)",
                        call, i, kvs->ncounters, KVSHM_COUNTERS_MAX);
    *node = i % kvs->nnodes;
    *disp = KVSHM_DATA_CONTROL_OFFSET +
            offsetof(struct kvshm_data_control, counters) +
            (uint64_t)(i / kvs->nnodes) * sizeof(uint64_t);
    return MPIKVS_OK;
}

static uint64_t *own_word(mpikvs_t *kvs, uint64_t disp)
{
    return (uint64_t *)((char *)kvs->region->base + disp);
}

static bool cpu_atomics(const mpikvs_t *kvs, uint32_t node)
{
    return node == kvs->node && (kvs->tp->cpu_atomic || kvs->nnodes == 1);
}

/* One atomic of the transport at node: cas (expect, desired) or
 * fetch-and-add (add), completed, *old the word before. */
static int far_atomic(mpikvs_t *kvs, uint32_t node, uint64_t disp, bool cas,
                      uint64_t expect, uint64_t desired, int64_t add,
                      uint64_t *old)
{
    bool lock = kvs->mode == KVSHM_MODE_COARSE_LOCK && kvs->tp->lock_node;
    int rc = lock ? kvs->tp->lock_node(kvs, node, true) : MPIKVS_OK, un;

    if (rc != MPIKVS_OK)
        return rc;
    rc = cas ? kvs->tp->cas64(kvs, node, disp, expect, desired, old)
             : kvs->tp->fetch_add64(kvs, node, disp, add, old);
    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, node);
    if (lock && (un = kvs->tp->unlock_node(kvs, node)) != MPIKVS_OK &&
        rc == MPIKVS_OK)
        rc = un;
    return rc;
}

int mpikvs_counter_add(mpikvs_t *kvs, unsigned counter, int64_t add,
                       uint64_t *before)
{
    uint64_t disp = 0, old = 0;
    uint32_t node = 0;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_counter_add");
    if ((rc = where(kvs, "mpikvs_counter_add", counter, &node, &disp)) !=
        MPIKVS_OK)
        return rc;
    if (cpu_atomics(kvs, node))
        old = __atomic_fetch_add(own_word(kvs, disp), (uint64_t)add,
                                 __ATOMIC_SEQ_CST);
    else if ((rc = far_atomic(kvs, node, disp, false, 0, 0, add, &old)) !=
             MPIKVS_OK)
        return rc;
    if (before)
        *before = old;
    return MPIKVS_OK;
}

int mpikvs_counter_cas(mpikvs_t *kvs, unsigned counter, uint64_t expect,
                       uint64_t desired, uint64_t *seen)
{
    uint64_t disp = 0, old = expect;
    uint32_t node = 0;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_counter_cas");
    if ((rc = where(kvs, "mpikvs_counter_cas", counter, &node, &disp)) !=
        MPIKVS_OK)
        return rc;
    if (cpu_atomics(kvs, node))   /* old gets the word if not expect */
        __atomic_compare_exchange_n(own_word(kvs, disp), &old, desired,
                                    false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    else if ((rc = far_atomic(kvs, node, disp, true, expect, desired, 0,
                              &old)) != MPIKVS_OK)
        return rc;
    if (seen)
        *seen = old;
    return MPIKVS_OK;
}
