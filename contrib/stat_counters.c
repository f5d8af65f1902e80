/*
 * stat_counters.c - mpikvs-stat: the counter groups of a data region.
 */
#include <stdlib.h>
#include <string.h>

#include "scan.h"
#include "stat_counters.h"

#define COUNTER(label, field) \
    {label, #field, offsetof(struct kvshm_rank_stats, field)}

/* The DHT's counters, as libmpikvs counts them (mpikvs(3), mpikvs_stats). */
static const struct stat_counter dht_counters[] = {
    COUNTER("gets", gets),
    COUNTER("hits", hits),
    COUNTER("misses", misses),
    COUNTER("direct", direct),
    COUNTER("remote", remote),
    COUNTER("retries", checksum_retries),
    COUNTER("invalidated", invalidations),
    COUNTER("puts", puts),
    COUNTER("updates", updates),
    COUNTER("evictions", evictions),
};

/* indices into dht_counters[], for the ratios */
enum { DHT_GETS, DHT_HITS, DHT_MISSES, DHT_DIRECT };

static const struct stat_ratio dht_ratios[] = {
    {"hit%", "hit_rate", DHT_HITS, DHT_GETS},
    {"direct%", "direct_share", DHT_DIRECT, DHT_GETS},
};

static const void *dht_block(const void *base,
                             const struct kvshm_data_control *c,
                             uint64_t rank)
{
    return kvshm_data_rank_stats(base, c, rank);
}

static const struct stat_counter_group dht_group = {
    .key = "dht",
    .title = "DHT",
    .counters = dht_counters,
    .ncounters = sizeof(dht_counters) / sizeof(dht_counters[0]),
    .ratios = dht_ratios,
    .nratios = sizeof(dht_ratios) / sizeof(dht_ratios[0]),
    .block = dht_block,
};

/* The node tier's counters: other nodes' keys the tier answered or not,
 * entries published (the node's first rank) and remote hits dropped. */
static const struct stat_counter tier_counters[] = {
    COUNTER("tier_hits", tier_hits),
    COUNTER("tier_misses", tier_misses),
    COUNTER("published", tier_published),
    COUNTER("dropped", tier_dropped),
};

static const struct stat_counter_group tier_group = {
    .key = "tier",
    .title = "node tier",
    .counters = tier_counters,
    .ncounters = sizeof(tier_counters) / sizeof(tier_counters[0]),
    .block = dht_block,   /* the same block of the rank */
};

const struct stat_counter_group *const stat_counter_groups[] = {
    &dht_group,
    &tier_group,
};

const size_t stat_ncounter_groups =
    sizeof(stat_counter_groups) / sizeof(stat_counter_groups[0]);

static uint64_t load_counter(const void *block, size_t offset)
{
    /* relaxed: each counter is written by its own rank with a relaxed
     * store (KVS_COUNT); a reader wants a value it had, nothing more */
    return __atomic_load_n((const uint64_t *)((const char *)block + offset),
                           __ATOMIC_RELAXED);
}

int stat_counters_read(const void *base, const struct kvshm_data_control *c,
                       struct stat_counter_values *values)
{
    uint64_t shown = 0;

    memset(values, 0, stat_ncounter_groups * sizeof(*values));
    for (size_t g = 0; g < stat_ncounter_groups; g++) {
        const struct stat_counter_group *group = stat_counter_groups[g];
        struct stat_counter_values *v = &values[g];
        size_t n = group->ncounters;

        v->group = group;
        v->total = calloc(n, sizeof(*v->total));
        v->ranks = calloc(c->max_ranks * n, sizeof(*v->ranks));
        if (!v->total || !v->ranks) {
            stat_counters_free(values);
            return -1;
        }
        for (uint64_t r = 0; r < c->max_ranks; r++) {
            const void *block = group->block(base, c, r);
            for (size_t i = 0; block && i < n; i++) {
                uint64_t x = load_counter(block, group->counters[i].offset);
                v->ranks[r * n + i] = x;
                v->total[i] += x;
                if (x && r + 1 > shown)
                    shown = r + 1;
            }
        }
    }
    /* every group shows the same ranks, so their rows line up */
    for (size_t g = 0; g < stat_ncounter_groups; g++)
        values[g].nranks = shown;
    return 0;
}

void stat_counters_free(struct stat_counter_values *values)
{
    for (size_t g = 0; g < stat_ncounter_groups; g++) {
        free(values[g].ranks);
        free(values[g].total);
        values[g].ranks = values[g].total = NULL;
        values[g].nranks = 0;
    }
}

double stat_ratio_value(const struct stat_ratio *ratio, const uint64_t *row)
{
    if (row[ratio->den] == 0)
        return -1.0;
    return (double)row[ratio->num] / (double)row[ratio->den];
}
