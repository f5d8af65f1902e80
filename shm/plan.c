/*
 * plan.c - the table plan: the site's limits, the DHT size per node and
 * the job config made into each table's shape and region sizes, here and
 * nowhere else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_region.h"
#include "errors_internal.h"
#include "plan.h"

int kvshm_limits_check(const struct kvshm_limits *limits, const char *what,
                       uint64_t size, uint64_t node_memory,
                       mpikvs_error_t *err)
{
    uint64_t limit = limits->max_size;
    char want[32], most[32];

    if (limits->max_fraction > 0 && node_memory)
        limit = (uint64_t)(limits->max_fraction * (double)node_memory);
    if (!limit || size <= limit)
        return MPIKVS_OK;
    kvshm_format_bytes(want, sizeof(want), size);
    kvshm_format_bytes(most, sizeof(most), limit);
    if (limits->max_fraction > 0)
        return kvshm_fail(err, MPIKVS_ERR_TOOBIG,
                          "%s=%s is more than this site allows: %s (%g%% of "
                          "the node's memory)",
                          what, want, most, limits->max_fraction * 100.0);
    return kvshm_fail(err, MPIKVS_ERR_TOOBIG,
                      "%s=%s is more than this site allows: %s", what, want,
                      most);
}

void kvshm_shape_sizes(struct kvshm_table_shape *shape)
{
    struct kvshm_data_shape s = {shape->key_size, shape->value_size,
                                 shape->slots_per_bucket, shape->mode};

    shape->slot_size = kvshm_slot_size(&s);
    shape->bucket_size = kvshm_bucket_size(&s);
}

static void shape_of(const struct kvshm_table_config *t,
                     struct kvshm_table_shape *shape)
{
    memset(shape, 0, sizeof(*shape));
    shape->key_size = t->key.size;
    shape->value_size = t->value.size;
    shape->slots_per_bucket = t->slots_per_bucket;
    shape->mode = (uint32_t)t->mode;
    kvshm_shape_sizes(shape);
}

/* The buckets a data region of data_bytes holds after max_ranks
 * counters, as kvshm_data_init lays them out; 0 where either is not
 * known. */
static uint64_t buckets_in(const struct kvshm_table_shape *shape,
                           uint64_t data_bytes, uint64_t max_ranks)
{
    uint64_t offset;

    if (!shape->bucket_size || !max_ranks)
        return 0;
    offset = kvshm_data_buckets_offset(max_ranks);
    return data_bytes > offset ? (data_bytes - offset) / shape->bucket_size
                               : 0;
}

/* The library's own table: all of dht_size is its buckets' and its
 * tier's, the counters come on top. */
static int plan_own_table(const struct kvshm_plan_input *in,
                          struct kvshm_table_plan *tp,
                          struct kvshm_diag *diag)
{
    const struct kvshm_table_config *t =
        !in->config ? NULL
        : in->table ? kvshm_config_table(in->config, in->table)
                    : &in->config->tables[0];
    uint64_t size = in->dht_size;
    char line[400];

    snprintf(tp->name, sizeof(tp->name), "%s",
             t ? t->name : KVSHM_PLAN_DEFAULT_TABLE);
    tp->shape = *in->shape;
    tp->shape.max_ranks = in->max_ranks;
    kvshm_shape_sizes(&tp->shape);
    tp->tier_bytes = t ? kvshm_tier_bytes(t, size) : 0;
    if (tp->tier_bytes >= size) {
        snprintf(line, sizeof(line),
                 "table '%s': its tier takes all of the %llu bytes per node",
                 tp->name, (unsigned long long)size);
        kvshm_diag_line(diag, line);
        return MPIKVS_ERR_TOOSMALL;
    }
    tp->shape.nbuckets = (size - tp->tier_bytes) / tp->shape.bucket_size;
    if (tp->shape.nbuckets == 0) {
        snprintf(line, sizeof(line),
                 "%llu bytes per node cannot hold one bucket of %llu bytes "
                 "(%llu slots of %llu-byte keys and %llu-byte values)",
                 (unsigned long long)size,
                 (unsigned long long)tp->shape.bucket_size,
                 (unsigned long long)tp->shape.slots_per_bucket,
                 (unsigned long long)tp->shape.key_size,
                 (unsigned long long)tp->shape.value_size);
        kvshm_diag_line(diag, line);
        return MPIKVS_ERR_TOOSMALL;
    }
    tp->data_bytes = kvshm_data_buckets_offset(in->max_ranks) +
                     tp->shape.nbuckets * tp->shape.bucket_size;
    return MPIKVS_OK;
}

/* The node's tables: dht_size divided by the config. */
static int plan_node(const struct kvshm_plan_input *in, struct kvshm_plan *p,
                     struct kvshm_diag *diag)
{
    struct kvshm_config *cfg = in->config;
    int rc = MPIKVS_OK;

    if (!cfg) {   /* one table, laid out by its first opener */
        struct kvshm_table_plan *tp = &p->tables[0];
        snprintf(tp->name, sizeof(tp->name), "%s", KVSHM_PLAN_DEFAULT_TABLE);
        tp->shape.max_ranks = in->max_ranks;
        tp->data_bytes = in->dht_size;
        return MPIKVS_OK;
    }
    rc = kvshm_config_resolve(cfg, in->dht_size, diag);
    if (rc != MPIKVS_OK)
        return rc;
    for (size_t i = 0; i < cfg->ntables; i++) {
        const struct kvshm_table_config *t = &cfg->tables[i];
        struct kvshm_table_plan *tp = &p->tables[i];
        char tier[32], table[32], path[64], line[512];

        snprintf(tp->name, sizeof(tp->name), "%s", t->name);
        if (t->tier.bytes && t->tier.bytes >= t->bytes) {
            kvshm_format_bytes(tier, sizeof(tier), t->tier.bytes);
            kvshm_format_bytes(table, sizeof(table), t->bytes);
            snprintf(path, sizeof(path), "tables.%s.tier.size", t->name);
            snprintf(line, sizeof(line), "%s: %s: %s leaves nothing of the "
                                         "table's %s for its buckets",
                     cfg->source, path, tier, table);
            kvshm_diag_line(diag, line);
            rc = MPIKVS_ERR_INVAL;
            continue;
        }
        shape_of(t, &tp->shape);
        tp->shape.max_ranks = in->max_ranks;
        tp->tier_bytes = t->tier.bytes;   /* 0: no tier */
        tp->data_bytes = t->bytes - t->tier.bytes;
        tp->shape.nbuckets = buckets_in(&tp->shape, tp->data_bytes,
                                        in->max_ranks);
    }
    return rc;
}

int kvshm_plan_make(const struct kvshm_plan_input *in,
                    struct kvshm_plan *out, struct kvshm_diag *diag)
{
    size_t n = in->own_table || !in->config ? 1 : in->config->ntables;
    int rc;

    memset(out, 0, sizeof(*out));
    if (diag)
        memset(diag, 0, sizeof(*diag));
    out->tables = calloc(n, sizeof(*out->tables));
    if (!out->tables)
        return -ENOMEM;
    out->ntables = n;
    out->dht_size = in->dht_size;
    rc = in->own_table ? plan_own_table(in, &out->tables[0], diag)
                       : plan_node(in, out, diag);
    if (rc != MPIKVS_OK)
        kvshm_plan_free(out);
    return rc;
}

const struct kvshm_table_plan *kvshm_plan_table(const struct kvshm_plan *p,
                                                const char *name)
{
    for (size_t i = 0; p && i < p->ntables; i++)
        if (strcmp(p->tables[i].name, name) == 0)
            return &p->tables[i];
    return NULL;
}

void kvshm_plan_free(struct kvshm_plan *p)
{
    if (!p)
        return;
    free(p->tables);
    p->tables = NULL;
    p->ntables = 0;
}
