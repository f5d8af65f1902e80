/*
 * stats.c - the counters of a rank, its node, or the whole job.
 */
#include <string.h>

#include "handle.h"

#define NCOUNTERS (sizeof(mpikvs_stats_t) / sizeof(uint64_t))

static void read_block(const struct kvshm_rank_stats *s, mpikvs_stats_t *o)
{
    o->gets = __atomic_load_n(&s->gets, __ATOMIC_RELAXED);
    o->hits = __atomic_load_n(&s->hits, __ATOMIC_RELAXED);
    o->misses = __atomic_load_n(&s->misses, __ATOMIC_RELAXED);
    o->direct = __atomic_load_n(&s->direct, __ATOMIC_RELAXED);
    o->remote = __atomic_load_n(&s->remote, __ATOMIC_RELAXED);
    o->checksum_retries = __atomic_load_n(&s->checksum_retries,
                                          __ATOMIC_RELAXED);
    o->invalidations = __atomic_load_n(&s->invalidations, __ATOMIC_RELAXED);
    o->puts = __atomic_load_n(&s->puts, __ATOMIC_RELAXED);
    o->updates = __atomic_load_n(&s->updates, __ATOMIC_RELAXED);
    o->evictions = __atomic_load_n(&s->evictions, __ATOMIC_RELAXED);
    o->tier_hits = __atomic_load_n(&s->tier_hits, __ATOMIC_RELAXED);
    o->tier_misses = __atomic_load_n(&s->tier_misses, __ATOMIC_RELAXED);
    o->tier_published = __atomic_load_n(&s->tier_published,
                                        __ATOMIC_RELAXED);
    o->tier_dropped = __atomic_load_n(&s->tier_dropped, __ATOMIC_RELAXED);
    o->tier_stalls = __atomic_load_n(&s->tier_stalls, __ATOMIC_RELAXED);
}

static void add(mpikvs_stats_t *sum, const mpikvs_stats_t *x)
{
    uint64_t *a = (uint64_t *)sum;
    const uint64_t *b = (const uint64_t *)x;

    for (size_t i = 0; i < NCOUNTERS; i++)
        a[i] += b[i];
}

int mpikvs_stats(mpikvs_t *kvs, int scope, mpikvs_stats_t *out)
{
    _Static_assert(sizeof(mpikvs_stats_t) % sizeof(uint64_t) == 0,
                   "stats are 64-bit counters only");
    mpikvs_stats_t mine;
    int rc;

    if (!kvs)
        return MPIKVS_ERR_INVAL;
    if (!out)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "mpikvs_stats: out is NULL");
    read_block(kvs->stats, &mine);
    switch (scope) {
    case MPIKVS_SCOPE_RANK:
        *out = mine;
        return MPIKVS_OK;
    case MPIKVS_SCOPE_NODE:
        /* The node's blocks sit side by side in its region. */
        memset(out, 0, sizeof(*out));
        for (int r = 0; r < kvs->local_size; r++) {
            mpikvs_stats_t other;
            read_block(kvs->stats - kvs->local_rank + r, &other);
            add(out, &other);
        }
        return MPIKVS_OK;
    case MPIKVS_SCOPE_JOB:
        rc = MPI_Allreduce(&mine, out, (int)NCOUNTERS, MPI_UINT64_T, MPI_SUM,
                           kvs->comm);
        return rc == MPI_SUCCESS ? MPIKVS_OK
                                 : kvs_mpi_fail(kvs, "MPI_Allreduce of "
                                                     "stats", rc);
    default:
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_stats: scope %d is not rank (0), node (1) "
                        "or job (2)", scope);
    }
}
