/*
 * counters.c - the job's global counters: 64-bit words in the data
 * regions' control blocks (format.h), counter i in counters[i / nnodes]
 * of node i % nnodes, so that a job's counters are spread over its nodes.
 *
 * Every change is one atomic operation where the word is.  The node's
 * own ranks use the CPU's atomics when the transport's are the same ones
 * (transport.h, cpu_atomic: ucx); otherwise every rank, the own node's
 * too, goes through the transport, so that one word never sees two kinds
 * of atomics that are not atomic with each other.
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

int mpikvs_counter_add(mpikvs_t *kvs, unsigned counter, int64_t add,
                       uint64_t *before)
{
    uint64_t disp = 0, old = 0;
    uint32_t node = 0;
    int rc;

    if (!kvs)
        return MPIKVS_ERR_INVAL;
    if ((rc = where(kvs, "mpikvs_counter_add", counter, &node, &disp)) !=
        MPIKVS_OK)
        return rc;
    if (node == kvs->node && kvs->tp->cpu_atomic) {
        old = __atomic_fetch_add(own_word(kvs, disp), (uint64_t)add,
                                 __ATOMIC_SEQ_CST);
    } else {
        rc = kvs->tp->fetch_add64(kvs, node, disp, add, &old);
        if (rc == MPIKVS_OK)
            rc = kvs->tp->flush(kvs, node);
        if (rc != MPIKVS_OK)
            return rc;
    }
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
        return MPIKVS_ERR_INVAL;
    if ((rc = where(kvs, "mpikvs_counter_cas", counter, &node, &disp)) !=
        MPIKVS_OK)
        return rc;
    if (node == kvs->node && kvs->tp->cpu_atomic) {
        /* old gets the word when it was not expect */
        __atomic_compare_exchange_n(own_word(kvs, disp), &old, desired,
                                    false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    } else {
        rc = kvs->tp->cas64(kvs, node, disp, expect, desired, &old);
        if (rc == MPIKVS_OK)
            rc = kvs->tp->flush(kvs, node);
        if (rc != MPIKVS_OK)
            return rc;
    }
    if (seen)
        *seen = old;
    return MPIKVS_OK;
}
