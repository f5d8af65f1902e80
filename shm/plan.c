/*
 * plan.c - the table plan: the site's limits, the DHT size per node and
 * the job config made into each table's shape and region sizes, here and
 * nowhere else.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_region.h"
#include "errors_internal.h"
#include "plan.h"
#include "size.h"

/* Sizes tried for the smallest usable one: none above this works, if
 * none below it does. */
#define MIN_SIZE_CEILING (UINT64_C(1) << 60)

/* The smallest bucket a program can ask for: 1-byte keys and values in
 * buckets of one slot. */
static const struct kvshm_data_shape smallest_shape = {1, 1, 1,
                                                       KVSHM_MODE_LOCKFREE};

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

/* ---- each table's bytes of the node: the config resolved ---- */

/* The problems of a resolution, each a line of diag as the config's own
 * ("<source>: <path>: <message>", job_config.h). */
struct problems {
    const char        *source;
    struct kvshm_diag *diag;
    bool               failed;
};

static void problem(struct problems *c, const char *path, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));

static void problem(struct problems *c, const char *path, const char *fmt,
                    ...)
{
    char msg[400], line[800];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "%s: %s: %s", c->source, path, msg);
    c->failed = true;
    kvshm_diag_line(c->diag, line);
}

/* fraction (0, 1] of whole, rounded down; at most whole even where the
 * double product rounds up to 2^64, which no uint64_t holds. */
static uint64_t share_of(double fraction, uint64_t whole)
{
    double bytes = fraction * (double)whole;

    return bytes >= (double)whole ? whole : (uint64_t)bytes;
}

int kvshm_config_resolve(struct kvshm_config *cfg, uint64_t node_bytes,
                         struct kvshm_diag *diag)
{
    struct problems c = {.source = cfg->source, .diag = diag};
    uint64_t used = 0;
    size_t rest = 0;
    bool wrapped = false;
    char need[32], have[32];

    if (diag)
        memset(diag, 0, sizeof(*diag));
    kvshm_format_bytes(have, sizeof(have), node_bytes);
    for (size_t i = 0; i < cfg->ntables; i++) {
        struct kvshm_table_config *t = &cfg->tables[i];
        if (t->size.bytes)
            t->bytes = t->size.bytes;
        else if (t->size.fraction > 0)
            t->bytes = share_of(t->size.fraction, node_bytes);
        else {
            t->bytes = 0;
            rest++;
        }
        if (t->bytes > node_bytes) {
            char path[KVSHM_TABLE_NAME_MAX + 16];
            snprintf(path, sizeof(path), "tables.%s.size", t->name);
            kvshm_format_bytes(need, sizeof(need), t->bytes);
            problem(&c, path, "%s is more than the %s of DHT memory per node",
                    need, have);
        }
        /* checked before adding: sizes near 2^64 must not wrap to a sum
         * that fits */
        if (t->bytes > UINT64_MAX - used)
            wrapped = true;
        else
            used += t->bytes;
    }
    if (wrapped || used > node_bytes) {
        kvshm_format_bytes(need, sizeof(need), wrapped ? UINT64_MAX : used);
        problem(&c, "tables", "the tables need %s%s, more than the %s of DHT "
                              "memory per node",
                need, wrapped ? " or more" : "", have);
        return MPIKVS_ERR_INVAL;
    }
    if (c.failed)
        return MPIKVS_ERR_INVAL;
    for (size_t i = 0; i < cfg->ntables; i++) {
        struct kvshm_table_config *t = &cfg->tables[i];
        char path[KVSHM_TABLE_NAME_MAX + 16];
        if (!kvshm_share_given(&t->size))
            t->bytes = (node_bytes - used) / rest;
        snprintf(path, sizeof(path), "tables.%s.size", t->name);
        if (t->bytes == 0 && kvshm_share_given(&t->size))
            problem(&c, path, "comes to 0 bytes of the node's %llu",
                    (unsigned long long)node_bytes);
        else if (t->bytes == 0)
            problem(&c, path, "not given, and nothing is left for this "
                              "table");
        t->tier.bytes = kvshm_tier_bytes(t, t->bytes);
        t->near.bytes = kvshm_near_bytes(t, t->bytes);
    }
    return c.failed ? MPIKVS_ERR_INVAL : MPIKVS_OK;
}

uint64_t kvshm_tier_bytes(const struct kvshm_table_config *t,
                          uint64_t table_bytes)
{
    /* caching "off" keeps nothing: no memory goes to a tier */
    if (!t->tier.enabled || t->tier.caching == KVSHM_CACHING_OFF)
        return 0;
    if (t->tier.size.bytes)
        return t->tier.size.bytes;
    return share_of(t->tier.size.fraction, table_bytes);
}

uint64_t kvshm_near_bytes(const struct kvshm_table_config *t,
                          uint64_t table_bytes)
{
    if (!t->near.enabled)
        return 0;
    if (t->near.size.bytes)
        return t->near.size.bytes;
    return share_of(t->near.size.fraction, table_bytes);
}

/* What a table's buckets come after, for a message: "" or " after its
 * tier", " after its neighbourhoods", " after its tier and
 * neighbourhoods". */
static const char *after_shares(const struct kvshm_table_plan *tp)
{
    if (tp->tier_bytes && tp->near_bytes)
        return " after its tier and neighbourhoods";
    if (tp->near_bytes)
        return " after its neighbourhoods";
    return tp->tier_bytes ? " after its tier" : "";
}

/* ---- the plan ---- */

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
    tp->near_bytes = t ? kvshm_near_bytes(t, size) : 0;
    if (tp->tier_bytes >= size || tp->near_bytes >= size - tp->tier_bytes) {
        snprintf(line, sizeof(line),
                 "table '%s': its %s take%s all of the %llu bytes per node",
                 tp->name,
                 !tp->near_bytes ? "tier"
                 : tp->tier_bytes ? "tier and neighbourhoods"
                                  : "neighbourhoods",
                 tp->near_bytes ? "" : "s", (unsigned long long)size);
        kvshm_diag_line(diag, line);
        return MPIKVS_ERR_TOOSMALL;
    }
    tp->shape.nbuckets = (size - tp->tier_bytes - tp->near_bytes) /
                         tp->shape.bucket_size;
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
        char tier[32], near[32], table[32], path[64], line[512];

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
        if (t->near.bytes && t->near.bytes >= t->bytes - t->tier.bytes) {
            kvshm_format_bytes(near, sizeof(near), t->near.bytes);
            kvshm_format_bytes(table, sizeof(table), t->bytes);
            kvshm_format_bytes(tier, sizeof(tier), t->tier.bytes);
            snprintf(path, sizeof(path), "tables.%s.near.size", t->name);
            snprintf(line, sizeof(line), "%s: %s: %s leaves nothing of the "
                                         "table's %s%s%s%s for its buckets",
                     cfg->source, path, near, table,
                     t->tier.bytes ? " (less its tier's " : "",
                     t->tier.bytes ? tier : "", t->tier.bytes ? ")" : "");
            kvshm_diag_line(diag, line);
            rc = MPIKVS_ERR_INVAL;
            continue;
        }
        shape_of(t, &tp->shape);
        tp->shape.max_ranks = in->max_ranks;
        tp->tier_bytes = t->tier.bytes;   /* 0: no tier */
        tp->near_bytes = t->near.bytes;   /* 0: no neighbourhoods */
        tp->data_bytes = t->bytes - t->tier.bytes - t->near.bytes;
        tp->shape.nbuckets = buckets_in(&tp->shape, tp->data_bytes,
                                        in->max_ranks);
    }
    return rc;
}

static struct kvshm_data_shape data_shape(const struct kvshm_table_shape *t)
{
    struct kvshm_data_shape s = {t->key_size, t->value_size,
                                 t->slots_per_bucket, t->mode};
    return s;
}

/* Each data region of the node's plan holds its counters and one bucket
 * of its shape, or of the smallest where the shape is its opener's to
 * choose: the plan's half of the rule of the smallest usable size. */
static int check_room(const struct kvshm_plan_input *in,
                      const struct kvshm_plan *p, struct kvshm_diag *diag)
{
    int rc = MPIKVS_OK;

    if (!in->max_ranks)   /* not known: the node checks */
        return MPIKVS_OK;
    for (size_t i = 0; i < p->ntables; i++) {
        const struct kvshm_table_plan *tp = &p->tables[i];
        struct kvshm_data_shape s = tp->shape.key_size
                                        ? data_shape(&tp->shape)
                                        : smallest_shape;
        uint64_t need = kvshm_data_min_size(in->max_ranks, &s);
        char have[32], line[800];

        if (tp->data_bytes >= need)
            continue;
        kvshm_format_bytes(have, sizeof(have), tp->data_bytes);
        /* the bucket's sizes, so that a table of large values sees why */
        if (in->config)
            snprintf(line, sizeof(line),
                     "%s: tables.%s.size: %s%s cannot hold counters for %llu "
                     "ranks and one bucket of %llu bytes (%llu slots of "
                     "%llu-byte keys and %llu-byte values): it needs %llu "
                     "bytes",
                     in->config->source, tp->name, have, after_shares(tp),
                     (unsigned long long)in->max_ranks,
                     (unsigned long long)kvshm_bucket_size(&s),
                     (unsigned long long)s.slots_per_bucket,
                     (unsigned long long)s.key_size,
                     (unsigned long long)s.value_size,
                     (unsigned long long)need);
        else
            snprintf(line, sizeof(line),
                     "%s of DHT memory cannot hold counters for %llu ranks "
                     "and one bucket: it needs %llu bytes",
                     have, (unsigned long long)in->max_ranks,
                     (unsigned long long)need);
        kvshm_diag_line(diag, line);
        rc = MPIKVS_ERR_INVAL;
    }
    return rc;
}

/* The plan of in for size bytes per node. */
static int plan_at(const struct kvshm_plan_input *in, uint64_t size,
                   struct kvshm_plan *out, struct kvshm_diag *diag)
{
    struct kvshm_plan_input at = *in;
    size_t n = in->own_table || !in->config ? 1 : in->config->ntables;
    int rc;

    at.dht_size = size;
    memset(out, 0, sizeof(*out));
    if (diag)
        memset(diag, 0, sizeof(*diag));
    out->tables = calloc(n, sizeof(*out->tables));
    if (!out->tables)
        return -ENOMEM;
    out->ntables = n;
    out->dht_size = size;
    rc = at.own_table ? plan_own_table(&at, &out->tables[0], diag)
                      : plan_node(&at, out, diag);
    if (rc == MPIKVS_OK && !at.own_table)
        rc = check_room(&at, out, diag);
    if (rc != MPIKVS_OK)
        kvshm_plan_free(out);
    return rc;
}

/* 1: the plan of in works with size bytes; 0: it does not; -ENOMEM. */
static int fits(const struct kvshm_plan_input *in, uint64_t size)
{
    struct kvshm_plan p;
    int rc;

    if (size == 0)
        return 0;
    rc = plan_at(in, size, &p, NULL);
    if (rc == -ENOMEM)
        return rc;
    kvshm_plan_free(&p);
    return rc == MPIKVS_OK;
}

/* The smallest size above refused (where the plan of in does not work)
 * with which it does: doubled until it works, then halved back, so that
 * *min works and *min - 1 does not.  The plan grows with the size (a
 * share of more is never less, nor is what a tier leaves of it). */
static int search_min(const struct kvshm_plan_input *in, uint64_t refused,
                      uint64_t *min)
{
    uint64_t lo = refused, hi = refused < 4096 ? 4096 : refused;
    int ok;

    while ((ok = fits(in, hi)) == 0) {
        if (hi >= MIN_SIZE_CEILING)
            return MPIKVS_ERR_TOOBIG;
        lo = hi;
        hi *= 2;
    }
    while (ok >= 0 && hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((ok = fits(in, mid)) > 0)
            hi = mid;
        else if (ok == 0)
            lo = mid;
    }
    if (ok < 0)
        return ok;
    *min = hi;
    return MPIKVS_OK;
}

int kvshm_plan_min_size(const struct kvshm_plan_input *in, uint64_t *min)
{
    int rc = search_min(in, 0, min);

    if (in->config)   /* the tries resolved it for other sizes */
        kvshm_config_resolve(in->config, in->dht_size, NULL);
    return rc;
}

/* What the smallest usable size holds, for the refusal: from the plan
 * made for it. */
static void describe_min(const struct kvshm_plan_input *in,
                         const struct kvshm_plan *p, char *buf, size_t len)
{
    const struct kvshm_table_shape *t = &p->tables[0].shape;
    size_t used;

    if (in->own_table) {
        snprintf(buf, len,
                 "one bucket of %llu bytes (%llu slots of %llu-byte keys "
                 "and %llu-byte values)%s",
                 (unsigned long long)t->bucket_size,
                 (unsigned long long)t->slots_per_bucket,
                 (unsigned long long)t->key_size,
                 (unsigned long long)t->value_size,
                 !p->tables[0].near_bytes
                     ? (p->tables[0].tier_bytes ? " after the tier's share"
                                                : "")
                 : p->tables[0].tier_bytes
                     ? " after the tier's and the neighbourhoods' shares"
                     : " after the neighbourhoods' share");
        return;
    }
    if (!in->config) {
        snprintf(buf, len,
                 "counters for %llu ranks and one bucket of the smallest "
                 "shape, %llu bytes (the program's keys and values may "
                 "need more)",
                 (unsigned long long)in->max_ranks,
                 (unsigned long long)kvshm_bucket_size(&smallest_shape));
        return;
    }
    bool near = false;
    for (size_t i = 0; i < p->ntables; i++)
        near |= p->tables[i].near_bytes != 0;
    used = (size_t)snprintf(buf, len,
                            "counters for %llu ranks and one bucket in each "
                            "table, after its tier%s (buckets of",
                            (unsigned long long)in->max_ranks,
                            near ? " and neighbourhoods" : "");
    for (size_t i = 0; i < p->ntables && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s %s: %llu bytes",
                                 i ? "," : "", p->tables[i].name,
                                 (unsigned long long)
                                     p->tables[i].shape.bucket_size);
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

/* The refusal of a size below the smallest usable one, as diag's first
 * line, followed by the lines of the plan's own problems (problems). */
static int refuse_below(const struct kvshm_plan_input *in, uint64_t min,
                        struct kvshm_diag *problems, struct kvshm_diag *diag)
{
    struct kvshm_plan p;
    char given[32], smallest[32], why[600], line[900];
    int rc = plan_at(in, min, &p, NULL);

    if (rc != MPIKVS_OK)
        return rc;
    describe_min(in, &p, why, sizeof(why));
    kvshm_plan_free(&p);
    if (in->size_text)
        snprintf(given, sizeof(given), "%s", in->size_text);
    else
        kvshm_size_like(given, sizeof(given), in->dht_size, NULL);
    kvshm_size_like(smallest, sizeof(smallest), min, in->size_text);
    if (strcmp(smallest, kvshm_size_like(line, sizeof(line), min, NULL)))
        snprintf(smallest + strlen(smallest),
                 sizeof(smallest) - strlen(smallest), " (%llu bytes)",
                 (unsigned long long)min);
    snprintf(line, sizeof(line),
             "%s%s%s is below the smallest usable size, %s: %s",
             in->size_what ? in->size_what : "a DHT size of",
             in->size_what ? "=" : " ", given, smallest, why);
    kvshm_diag_line(diag, line);
    for (const char *l = problems->text; l && *l;) {
        size_t n = strcspn(l, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)n, l);
        kvshm_diag_line(diag, line);
        l += n + (l[n] == '\n');
    }
    return MPIKVS_ERR_TOOSMALL;
}

int kvshm_plan_make(const struct kvshm_plan_input *in,
                    struct kvshm_plan *out, struct kvshm_diag *diag)
{
    struct kvshm_diag problems = {0};
    uint64_t min;
    int rc = plan_at(in, in->dht_size, out, &problems);

    if (diag)
        memset(diag, 0, sizeof(*diag));
    if (rc == MPIKVS_OK || rc == -ENOMEM ||
        search_min(in, in->dht_size, &min) != MPIKVS_OK ||
        (rc = refuse_below(in, min, &problems, diag)) != MPIKVS_ERR_TOOSMALL) {
        /* as it was: no larger size would do, or it worked */
        if (diag) {
            kvshm_diag_free(diag);
            *diag = problems;
        } else {
            kvshm_diag_free(&problems);
        }
        if (in->config && rc != MPIKVS_OK)
            kvshm_config_resolve(in->config, in->dht_size, NULL);
        return rc;
    }
    kvshm_diag_free(&problems);
    if (in->config)   /* the tries resolved it for other sizes */
        kvshm_config_resolve(in->config, in->dht_size, NULL);
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
