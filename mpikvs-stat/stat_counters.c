/*
 * stat_counters.c - mpikvs-stat: the counter groups of a data region and
 * of a libmpikvs-rmacache window's region.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rma_region.h"
#include "scan.h"
#include "stat_counters.h"

/* A counter of MPIKVS_STATISTICS (mpikvs_statistics.h): its label, its field's
 * name as the JSON member, its place in the rank's block. */
#define COUNTER(name, label, text)                                       \
    {label, #name, offsetof(struct kvshm_rank_stats, name), KIND(name)},

/* The statistics that hold doubles (mpikvs_statistics.h), by place. */
#define KIND(name)                                                      \
    (offsetof(struct kvshm_rank_stats, name) ==                         \
             offsetof(struct kvshm_rank_stats, verify_error_sum)        \
         ? STAT_DOUBLE_SUM                                              \
     : offsetof(struct kvshm_rank_stats, name) ==                       \
             offsetof(struct kvshm_rank_stats, verify_error_max)        \
         ? STAT_DOUBLE_MAX                                              \
         : STAT_COUNT)

/* The DHT's counters, as libmpikvs counts them (mpikvs(3), mpikvs_stats). */
static const struct stat_counter dht_counters[] = {
    MPIKVS_STATISTICS_DHT(COUNTER)
};

/* indices into dht_counters[], for the ratios: DHT_gets, ... */
#define COUNTER_INDEX(name, label, text) DHT_##name,
enum { MPIKVS_STATISTICS_DHT(COUNTER_INDEX) };
#undef COUNTER_INDEX

static const struct stat_ratio dht_ratios[] = {
    {"hit%", "hit_rate", DHT_hits, DHT_gets, false},
    {"direct%", "direct_share", DHT_direct, DHT_gets, false},
};

static const void *dht_block(const void *base, const void *control,
                             uint64_t rank)
{
    return kvshm_data_rank_stats(base, control, rank);
}

static int64_t dht_mpi_rank(const void *block)
{
    /* the rank plus one, written at each open; 0: none yet */
    uint64_t v = __atomic_load_n(
        &((const struct kvshm_rank_stats *)block)->comm_rank,
        __ATOMIC_RELAXED);

    return v ? (int64_t)(v - 1) : -1;
}

static const struct stat_counter_group dht_group = {
    .key = "dht",
    .title = "DHT",
    .counters = dht_counters,
    .ncounters = sizeof(dht_counters) / sizeof(dht_counters[0]),
    .ratios = dht_ratios,
    .nratios = sizeof(dht_ratios) / sizeof(dht_ratios[0]),
    .block = dht_block,
    .mpi_rank = dht_mpi_rank,
};

/* The node tier's counters: other nodes' keys the tier answered or not,
 * entries published (the node's first rank), remote hits dropped, and
 * lookups that found the tier unreadable (a writer gone in mid-publication,
 * or damage). */
static const struct stat_counter tier_counters[] = {
    MPIKVS_STATISTICS_TIER(COUNTER)
};

static const struct stat_counter_group tier_group = {
    .key = "tier",
    .title = "node tier",
    .counters = tier_counters,
    .ncounters = sizeof(tier_counters) / sizeof(tier_counters[0]),
    .block = dht_block,   /* the same block of the rank */
    .mpi_rank = dht_mpi_rank,
};

/* Saves and loads (mpikvs_save, mpikvs_load): entries written, slots
 * left out as they did not verify, entries put, and those that did not
 * fit. */
static const struct stat_counter persist_counters[] = {
    MPIKVS_STATISTICS_PERSIST(COUNTER)
};

static const struct stat_counter_group persist_group = {
    .key = "persist",
    .title = "save and load",
    .counters = persist_counters,
    .ncounters = sizeof(persist_counters) / sizeof(persist_counters[0]),
    .block = dht_block,   /* the same block of the rank */
    .mpi_rank = dht_mpi_rank,
};

/* What remote lookups moved: bytes brought here, and copies of values
 * made here (the transfer included). */
static const struct stat_counter transfer_counters[] = {
    MPIKVS_STATISTICS_TRANSFER(COUNTER)
};

static const struct stat_counter_group transfer_group = {
    .key = "transfer",
    .title = "remote lookups' transfers",
    .counters = transfer_counters,
    .ncounters = sizeof(transfer_counters) / sizeof(transfer_counters[0]),
    .block = dht_block,   /* the same block of the rank */
    .mpi_rank = dht_mpi_rank,
};

/* Surrogates: keys forgotten, neighbourhood queries and their members,
 * and the sampled accuracy of hits (verify hits, the errors reported:
 * their sum and largest as doubles, their mean, and how many fell in
 * each bin). */
static const struct stat_counter surrogate_counters[] = {
    MPIKVS_STATISTICS_SURROGATE(COUNTER)
};

#define SURROGATE_INDEX(name, label, text) SURROGATE_##name,
enum { MPIKVS_STATISTICS_SURROGATE(SURROGATE_INDEX) };
#undef SURROGATE_INDEX

static const struct stat_ratio surrogate_ratios[] = {
    {"err_mean", "verify_error_mean", SURROGATE_verify_error_sum,
     SURROGATE_verify_reports, true},
};

static const struct stat_counter_group surrogate_group = {
    .key = "surrogate",
    .title = "surrogates",
    .counters = surrogate_counters,
    .ncounters = sizeof(surrogate_counters) / sizeof(surrogate_counters[0]),
    .ratios = surrogate_ratios,
    .nratios = sizeof(surrogate_ratios) / sizeof(surrogate_ratios[0]),
    .block = dht_block,   /* the same block of the rank */
    .mpi_rank = dht_mpi_rank,
};

const struct stat_counter_group *const stat_counter_groups[] = {
    &dht_group,
    &tier_group,
    &persist_group,
    &transfer_group,
    &surrogate_group,
};

const size_t stat_ncounter_groups =
    sizeof(stat_counter_groups) / sizeof(stat_counter_groups[0]);

/* A window of libmpikvs-rmacache: a rank's use of it (format.h). */
#define RMA_COUNTER(name, label, text) \
    {label, #name, offsetof(struct kvshm_rma_rank, counters.name),      \
     STAT_COUNT},

static const struct stat_counter rma_counters[] = {
    KVSHM_RMA_COUNTERS(RMA_COUNTER)
};

#define RMA_INDEX(name, label, text) RMA_##name,
enum { KVSHM_RMA_COUNTERS(RMA_INDEX) };
#undef RMA_INDEX

static const struct stat_ratio rma_ratios[] = {
    {"hit%", "hit_rate", RMA_hits, RMA_gets, false},
    {"node%", "node_share", RMA_node_hits, RMA_gets, false},
};

static const void *rma_block(const void *base, const void *control,
                             uint64_t rank)
{
    return kvshm_rma_rank(base, control, rank);
}

static int64_t rma_mpi_rank(const void *block)
{
    const struct kvshm_rma_rank *k = block;

    return __atomic_load_n(&k->pid, __ATOMIC_RELAXED)
               ? (int64_t)__atomic_load_n(&k->win_rank, __ATOMIC_RELAXED)
               : -1;
}

static const struct stat_counter_group rma_group = {
    .key = "rmacache",
    .title = "window",
    .counters = rma_counters,
    .ncounters = sizeof(rma_counters) / sizeof(rma_counters[0]),
    .ratios = rma_ratios,
    .nratios = sizeof(rma_ratios) / sizeof(rma_ratios[0]),
    .block = rma_block,
    .mpi_rank = rma_mpi_rank,
};

static uint64_t load_counter(const void *block, size_t offset)
{
    /* relaxed: each counter is written by its own rank with a relaxed
     * store (KVS_COUNT); a reader wants a value it had, nothing more */
    return __atomic_load_n((const uint64_t *)((const char *)block + offset),
                           __ATOMIC_RELAXED);
}

/* Make room in v for rows 0 .. rows - 1 (of n counters), the new ones
 * zero; the room grows by doubling.  Returns 0, or -1 when out of
 * memory. */
static int room_for_rows(struct stat_counter_values *v, uint64_t *cap,
                         uint64_t rows, size_t n)
{
    uint64_t grown = *cap ? *cap : 8;
    uint64_t *p;
    int64_t *m;

    if (rows <= *cap)
        return 0;
    while (grown < rows)
        grown *= 2;
    p = realloc(v->ranks, grown * n * sizeof(*p));
    if (!p)
        return -1;
    memset(p + *cap * n, 0, (grown - *cap) * n * sizeof(*p));
    v->ranks = p;
    m = realloc(v->mpi_ranks, grown * sizeof(*m));
    if (!m)
        return -1;
    for (uint64_t r = *cap; r < grown; r++)
        m[r] = -1;
    v->mpi_ranks = m;
    *cap = grown;
    return 0;
}

int stat_counters_read(const void *base, const struct kvshm_data_control *c,
                       struct stat_counter_values *values)
{
    uint64_t shown = 0, caps[stat_ncounter_groups];

    memset(values, 0, stat_ncounter_groups * sizeof(*values));
    for (size_t g = 0; g < stat_ncounter_groups; g++) {
        const struct stat_counter_group *group = stat_counter_groups[g];
        struct stat_counter_values *v = &values[g];
        size_t n = group->ncounters;
        uint64_t row[n];

        v->group = group;
        caps[g] = 0;
        v->total = calloc(n, sizeof(*v->total));
        if (!v->total)
            goto oom;
        /* rows are kept up to the last rank with a counter that is not
         * 0, not for every rank the region has room for */
        for (uint64_t r = 0; r < c->max_ranks; r++) {
            const void *block = group->block(base, c, r);
            bool any = false;
            for (size_t i = 0; block && i < n; i++) {
                row[i] = load_counter(block, group->counters[i].offset);
                stat_counter_combine(&group->counters[i], &v->total[i],
                                     row[i]);
                any |= row[i] != 0;
            }
            if (!any)
                continue;
            if (room_for_rows(v, &caps[g], r + 1, n) != 0)
                goto oom;
            memcpy(&v->ranks[r * n], row, n * sizeof(*row));
            if (r + 1 > shown)
                shown = r + 1;
        }
    }
    /* every group shows the same ranks, so their rows line up */
    for (size_t g = 0; g < stat_ncounter_groups; g++) {
        const struct stat_counter_group *group = values[g].group;
        if (room_for_rows(&values[g], &caps[g], shown, group->ncounters) != 0)
            goto oom;
        values[g].nranks = shown;
        for (uint64_t r = 0; r < shown; r++) {
            const void *block = group->block(base, c, r);
            values[g].mpi_ranks[r] = block ? group->mpi_rank(block) : -1;
        }
    }
    return 0;

oom:
    stat_counters_free(values);
    return -1;
}

void stat_counters_free(struct stat_counter_values *values)
{
    for (size_t g = 0; g < stat_ncounter_groups; g++)
        stat_counters_free_one(&values[g]);
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

void stat_counter_combine(const struct stat_counter *c, uint64_t *total,
                          uint64_t x)
{
    switch (c->kind) {
    case STAT_DOUBLE_SUM:
        *total = bits_of(mpikvs_stat_double(*total) + mpikvs_stat_double(x));
        break;
    case STAT_DOUBLE_MAX:
        if (mpikvs_stat_double(x) > mpikvs_stat_double(*total))
            *total = x;
        break;
    default:
        *total += x;
    }
}

double stat_counter_number(const struct stat_counter *c, uint64_t v)
{
    return c->kind == STAT_COUNT ? (double)v : mpikvs_stat_double(v);
}

void stat_counter_format(const struct stat_counter *c, uint64_t v, char *buf,
                         size_t len)
{
    if (c->kind == STAT_COUNT)
        snprintf(buf, len, "%llu", (unsigned long long)v);
    else
        snprintf(buf, len, "%.3g", mpikvs_stat_double(v));
}

bool stat_counter_rate(const struct stat_counter *c, uint64_t grown,
                       double seconds, double *rate)
{
    if (c->kind == STAT_DOUBLE_MAX)
        return false;
    *rate = stat_counter_number(c, grown) / seconds;
    return true;
}

double stat_ratio_value(const struct stat_ratio *ratio, const uint64_t *row)
{
    if (row[ratio->den] == 0)
        return -1.0;
    return (ratio->mean ? mpikvs_stat_double(row[ratio->num])
                        : (double)row[ratio->num]) /
           (double)row[ratio->den];
}

int stat_counters_read_rma(const void *base, const struct kvshm_rma_control *c,
                           struct stat_counter_values *v)
{
    size_t n = rma_group.ncounters;

    memset(v, 0, sizeof(*v));
    v->group = &rma_group;
    v->nranks = c->nranks;
    v->ranks = calloc(c->nranks * n, sizeof(*v->ranks));
    v->mpi_ranks = calloc(c->nranks, sizeof(*v->mpi_ranks));
    v->total = calloc(n, sizeof(*v->total));
    if (!v->ranks || !v->mpi_ranks || !v->total) {
        stat_counters_free_one(v);
        return -1;
    }
    for (uint64_t r = 0; r < c->nranks; r++) {
        const void *block = rma_group.block(base, c, r);
        v->mpi_ranks[r] = rma_group.mpi_rank(block);
        for (size_t i = 0; i < n; i++) {
            v->ranks[r * n + i] = load_counter(block, rma_counters[i].offset);
            stat_counter_combine(&rma_counters[i], &v->total[i],
                                 v->ranks[r * n + i]);
        }
    }
    return 0;
}

void stat_counters_free_one(struct stat_counter_values *v)
{
    free(v->ranks);
    free(v->mpi_ranks);
    free(v->total);
    v->ranks = v->total = NULL;
    v->mpi_ranks = NULL;
    v->nranks = 0;
}
