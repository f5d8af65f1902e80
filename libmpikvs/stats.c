/*
 * stats.c - the statistics of a rank, its node, or the whole job, since
 * the region's creation or since the handle's open; and what the rank's
 * open was (its transport, its rank), which its block shows to
 * mpikvs-stat.
 *
 * The blocks live in the region, which may outlive the handle (the
 * plugin's job scope): the figures since open are the blocks' statistics
 * less what they held when the handle opened.
 *
 * How the statistics of ranks combine is said once (combine, and
 * less_at_open for a block's figures since open): counts add up,
 * verify_error_sum adds up as doubles, verify_error_max is the largest
 * double, and since open it is the largest of the blocks'
 * verify_error_max_open, which each open sets to 0.  The node's blocks
 * are combined here, the job's by MPI with the same function (job_op).
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "mpi_impl.h"
#include "stats.h"

#define NCOUNTERS MPIKVS_NSTATISTICS

/* The region's block and the public struct are both MPIKVS_STATISTICS:
 * the same fields in the same places. */
#define SAME_PLACE(name, label, text)                                   \
    _Static_assert(offsetof(struct kvshm_rank_stats, name) ==           \
                       offsetof(mpikvs_stats_t, name),                  \
                   "statistic " #name " has one place in both");
MPIKVS_STATISTICS(SAME_PLACE)
#undef SAME_PLACE
_Static_assert(sizeof(mpikvs_stats_t) == NCOUNTERS * sizeof(uint64_t),
               "mpikvs_stats_t is MPIKVS_STATISTICS and nothing else");

static double larger(double a, double b)
{
    return b > a ? b : a;
}

/* The statistics of two sets of ranks as those of them together. */
static void combine(mpikvs_stats_t *sum, const mpikvs_stats_t *x)
{
    double esum = mpikvs_stat_double(sum->verify_error_sum) +
                  mpikvs_stat_double(x->verify_error_sum);
    double emax = larger(mpikvs_stat_double(sum->verify_error_max),
                         mpikvs_stat_double(x->verify_error_max));

#define ADD_COUNTER(name, label, text) sum->name += x->name;
    MPIKVS_STATISTICS(ADD_COUNTER)
#undef ADD_COUNTER
    sum->verify_error_sum = kvs_stat_bits(esum);
    sum->verify_error_max = kvs_stat_bits(emax);
}

/* x, read with its largest error since open, less base, what it held at
 * open: its figures since open. */
static void less_at_open(mpikvs_stats_t *x, const mpikvs_stats_t *base)
{
    double esum = mpikvs_stat_double(x->verify_error_sum) -
                  mpikvs_stat_double(base->verify_error_sum);
    uint64_t emax = x->verify_error_max;

#define SUB_COUNTER(name, label, text) x->name -= base->name;
    MPIKVS_STATISTICS(SUB_COUNTER)
#undef SUB_COUNTER
    x->verify_error_sum = kvs_stat_bits(esum);
    x->verify_error_max = emax;
}

/* A block's statistics; since_open: with the largest error since the
 * latest open in place of the largest ever. */
static void read_block(const struct kvshm_rank_stats *s, bool since_open,
                       mpikvs_stats_t *o)
{
#define LOAD_COUNTER(name, label, text)                                 \
    o->name = __atomic_load_n(&s->name, __ATOMIC_RELAXED);
    MPIKVS_STATISTICS(LOAD_COUNTER)
#undef LOAD_COUNTER
    if (since_open)
        o->verify_error_max =
            __atomic_load_n(&s->verify_error_max_open, __ATOMIC_RELAXED);
}

/* The node's blocks sit side by side in its region. */
static void read_node(const mpikvs_t *kvs, bool since_open,
                      mpikvs_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    for (int r = 0; r < kvs->local_size; r++) {
        mpikvs_stats_t other;
        read_block(kvs->tab.stats - kvs->local_rank + r, since_open, &other);
        combine(out, &other);
    }
}

/* MPI's side of combine: len elements of one mpikvs_stats_t each. */
static void job_combine(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++)
        combine((mpikvs_stats_t *)inout + i, (const mpikvs_stats_t *)in + i);
}

/* The job's statistics: every rank's combined by MPI, one whole struct
 * an element, so that the operation never sees a part of one. */
static int job_op(mpikvs_t *kvs, const mpikvs_stats_t *mine,
                  mpikvs_stats_t *all)
{
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    int rc = MPI_Type_contiguous((int)NCOUNTERS, MPI_UINT64_T, &type);

    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Op_create(job_combine, 1, &op);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(mine, all, 1, type, op, kvs->comm);
    if (op != MPI_OP_NULL)
        MPI_Op_free(&op);
    if (type != MPI_DATATYPE_NULL)
        MPI_Type_free(&type);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "MPI_Allreduce of stats", rc);
}

void kvs_stats_mark_open(mpikvs_t *kvs)
{
    /* relaxed, as the statistics: mpikvs-stat wants a value it had */
    __atomic_store_n(&kvs->tab.stats->comm_rank, (uint64_t)kvs->rank + 1,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&kvs->tab.stats->verify_error_max_open, 0,
                     __ATOMIC_RELAXED);
    read_block(kvs->tab.stats, false, &kvs->stats_at_open);
    read_node(kvs, false, &kvs->node_stats_at_open);
}

void kvs_stats_set_transport(mpikvs_t *kvs)
{
    /* relaxed, as the statistics: mpikvs-stat wants a value it had */
    if (kvs->tab.stats && kvs->tp)
        __atomic_store_n(&kvs->tab.stats->transport, (uint64_t)kvs->transport,
                         __ATOMIC_RELAXED);
}

/* The first sized mpikvs_stats_t (mpikvs.h) ends with load_unfit: a
 * caller has at least these bytes. */
#define STATS_FIRST_SIZE                                                \
    (offsetof(mpikvs_stats_t, load_unfit) + sizeof(uint64_t))

/* The statistics of scope into all, the library's whole struct. */
static int gather(mpikvs_t *kvs, int scope, mpikvs_stats_t *all)
{
    bool since_open = (scope & MPIKVS_SINCE_OPEN) != 0;
    mpikvs_stats_t mine;

    read_block(kvs->tab.stats, since_open, &mine);
    if (since_open)
        less_at_open(&mine, &kvs->stats_at_open);
    switch (scope & ~MPIKVS_SINCE_OPEN) {
    case MPIKVS_SCOPE_RANK:
        *all = mine;
        return MPIKVS_OK;
    case MPIKVS_SCOPE_NODE:
        read_node(kvs, since_open, all);
        if (since_open)
            less_at_open(all, &kvs->node_stats_at_open);
        return MPIKVS_OK;
    case MPIKVS_SCOPE_JOB:
        return job_op(kvs, &mine, all);
    default:
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_stats: scope %d is not rank (0), node (1) "
                        "or job (2), alone or with MPIKVS_SINCE_OPEN (0x%x)",
                        scope, (unsigned)MPIKVS_SINCE_OPEN);
    }
}

int mpikvs_stats(mpikvs_t *kvs, int scope, mpikvs_stats_t *out, size_t size)
{
    mpikvs_stats_t all;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_stats");
    if (!out)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "mpikvs_stats: out is NULL");
    if (size < STATS_FIRST_SIZE)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_stats: size is %zu, smaller than the first "
                        "sized mpikvs_stats_t (%zu bytes): pass "
                        "sizeof(mpikvs_stats_t) (a binding: the size of its "
                        "own declaration of the struct)",
                        size, (size_t)STATS_FIRST_SIZE);
    rc = gather(kvs, scope, &all);
    if (rc != MPIKVS_OK)
        return rc;
    /* only the caller's bytes; statistics of a newer header are 0 here */
    if (size > sizeof(all)) {
        memset((char *)out + sizeof(all), 0, size - sizeof(all));
        size = sizeof(all);
    }
    memcpy(out, &all, size);
    return MPIKVS_OK;
}
