/*
 * counters.c - the job's global counters: 64-bit words in the data
 * regions' control blocks (format.h), counter i in counters[i / nnodes]
 * of node i % nnodes, so that a job's counters are spread over its nodes.
 *
 * Every change is one atomic operation where the word is: with the
 * CPU's atomics or through the transport, as the node's route says
 * (route.c says which and why).
 */
#include <stddef.h>

#include "errors.h"
#include "route.h"
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

/* One atomic of the transport at node: cas (expect, desired) or
 * fetch-and-add (add), completed, *old the word before. */
static int far_atomic(mpikvs_t *kvs, uint32_t node, uint64_t disp, bool cas,
                      uint64_t expect, uint64_t desired, int64_t add,
                      uint64_t *old)
{
    bool lock = kvs_route(kvs, node)->counters_locked;
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
    if (kvs_route(kvs, node)->counters_cpu)
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
    /* old gets the word if not expect */
    if (kvs_route(kvs, node)->counters_cpu)
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
