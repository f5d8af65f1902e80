/*
 * describe.c - what this library is and what a handle opened:
 * mpikvs_version, mpikvs_info, mpikvs_describe, and MPIKVS_VERBOSE's
 * print at open.
 *
 * Everything comes from the handle as open left it (handle.h, struct
 * kvs_opened for what only these calls read): no communication, so any
 * rank may ask at any time, and a tool or a benchmark learns what the
 * library chose instead of working it out again.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "near.h"
#include "describe.h"
#include "route.h"
#include "transport.h"
#include "region_name.h"

const char *mpikvs_version(void)
{
    return MPIKVS_VERSION;
}

int kvs_verbose_parse(mpikvs_t *kvs, const char *v, bool *on)
{
    *on = false;
    if (!v || strcmp(v, "0") == 0)
        return MPIKVS_OK;
    if (strcmp(v, "1") == 0) {
        *on = true;
        return MPIKVS_OK;
    }
    return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                    "MPIKVS_VERBOSE='%s' is not 1 (rank 0 prints what "
                    "mpikvs_open chose) or 0; unset it for 0", v);
}

/* src into a field of len bytes, cut at len - 1 (mpikvs.h says so) */
static void cut(char *field, size_t len, const char *src)
{
    size_t n = strlen(src);

    if (n >= len)
        n = len - 1;
    memcpy(field, src, n);
    field[n] = '\0';
}
#define COPY(field, src) cut(field, sizeof(field), src)

/* The whole struct of this library's header. */
static void fill(const mpikvs_t *kvs, mpikvs_info_t *in)
{
    const struct kvs_opened *o = &kvs->opened;

    memset(in, 0, sizeof(*in));
    in->size = sizeof(*in);
    COPY(in->job, o->job);
    in->plugin = kvs->layout != NULL;
    in->ranks = kvs->size;
    in->nodes = kvs->nnodes;
    in->node = kvs->node;
    in->node_ranks = kvs->local_size;
    in->virtual_nodes = o->virtual_nodes;
    COPY(in->node_name, o->node);
    COPY(in->shm_dir, kvs->shm_dir[0] ? kvs->shm_dir : KVSHM_DEFAULT_DIR);
    COPY(in->data_region, kvs->region_name);
    if (kvs->tier) {
        char index[KVSHM_NAME_MAX + 1], entries[KVSHM_NAME_MAX + 1];
        if (kvshm_tier_region_names(kvs->tier_job, kvs->tier_node,
                                    kvs->tier_prefix, index, entries,
                                    NULL) == MPIKVS_OK) {
            COPY(in->tier_index, index);
            COPY(in->tier_entries, entries);
        }
    }
    COPY(in->tier_caching, kvshm_caching_name(kvs->tier ? kvs->caching
                                                        : KVSHM_CACHING_OFF));
    COPY(in->table, kvs->table ? kvs->table->name : KVSHM_PLAN_DEFAULT_TABLE);
    COPY(in->mode, kvshm_mode_name(kvs->mode));
    COPY(in->transport, kvshm_transport_name(kvs->transport));
    if (o->transport_why[0])
        snprintf(in->transport_why, sizeof(in->transport_why),
                 "auto, from %s: %s", o->transport_from, o->transport_why);
    else
        snprintf(in->transport_why, sizeof(in->transport_why),
                 "asked for by %s", o->transport_from);
    in->key_size = kvs->tab.key_size;
    in->value_size = kvs->tab.value_size;
    in->slots_per_bucket = kvs->tab.slots;
    in->buckets = kvs->tab.nbuckets;
    in->bucket_size = kvs->tab.bucket_size;
    in->region_size = kvs->region ? kvs->region->size : 0;
    if (o->config_from && o->config[0])
        COPY(in->config, o->config);
    else if (o->config_from)
        COPY(in->config, o->config_from);   /* the job's, path unknown */
    in->persist = o->persist;
    if (kvs->table && kvs->table->persist.load[0])
        COPY(in->persist_path, kvs->table->persist.load);
    in->persist_entries = o->persist_report.entries;
    in->persist_loaded = o->persist_report.loaded;
}

int mpikvs_info(const mpikvs_t *kvs, mpikvs_info_t *info)
{
    mpikvs_info_t all;
    size_t n;

    if (!kvs || !info)
        return MPIKVS_ERR_INVAL;
    /* the first version's fields, which every caller's struct has */
    if (info->size < sizeof(all))
        return kvs_fail((mpikvs_t *)kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_info: info->size %zu is smaller than the "
                        "first mpikvs_info_t (%zu bytes): set it to "
                        "sizeof(mpikvs_info_t)",
                        info->size, sizeof(all));
    fill(kvs, &all);
    /* a newer program's larger struct: what this library knows */
    n = info->size < sizeof(all) ? info->size : sizeof(all);
    memcpy(info, &all, n);
    info->size = n;
    return MPIKVS_OK;
}

/* ---- the text ---- */

struct text {
    char  *buf;
    size_t len, used;   /* used: the whole text's length, cut or not */
};

__attribute__((format(printf, 2, 3)))
static void add(struct text *t, const char *fmt, ...)
{
    size_t room = t->used < t->len ? t->len - t->used : 0;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(room ? t->buf + t->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->used += (size_t)n;
}

/* "64.0 MiB" */
static void add_bytes(struct text *t, uint64_t b)
{
    if (b >= (UINT64_C(1) << 30))
        add(t, "%.1f GiB", (double)b / (double)(UINT64_C(1) << 30));
    else if (b >= (UINT64_C(1) << 20))
        add(t, "%.1f MiB", (double)b / (double)(UINT64_C(1) << 20));
    else
        add(t, "%llu bytes", (unsigned long long)b);
}

/* How the buckets of other nodes read through the transport are read,
 * those of nodes mapped here and the others ("-": none of them). */
static void describe_far_read(const mpikvs_t *kvs, struct text *t)
{
    const char *path[2] = {"-", "-"};   /* mapped, not */

    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        const struct kvs_route *r = kvs_route(kvs, n);
        if (r->kind == KVS_ROUTE_FAR)   /* so a transport is open */
            path[kvs->tp->mapped && kvs->tp->mapped(kvs, n) ? 0 : 1] =
                r->far_slot ? "slot" : "bucket";
    }
    add(t, "far read: %s to mapped nodes, %s to others (far_read %s, "
           "%llu-byte slots)\n",
        path[0], path[1],
        kvshm_far_read_name(kvs->table ? kvs->table->far_read
                                       : KVSHM_FAR_READ_AUTO),
        (unsigned long long)kvs->tab.slot_size);
}

/* The neighbourhoods' table and the verify fraction (mpikvs(7),
 * "Surrogates"). */
static void describe_surrogates(const mpikvs_t *kvs, struct text *t)
{
    const mpikvs_t *near = kvs_near_table(kvs);

    if (near)
        add(t, "near: %u members a neighbourhood, %zu-byte coarse keys, "
               "%llu buckets a node, region %s/%s\n",
            (unsigned)near->tab.slots, near->tab.hash_size,
            (unsigned long long)near->tab.nbuckets, near->shm_dir,
            near->region_name);
    else
        add(t, "near: off\n");
    if (kvs->verify_below)
        add(t, "verify: %.4g of hits (MPIKVS_OPEN_VERIFY)\n",
            (double)kvs->verify_below / 4294967296.0);
    else
        add(t, "verify: off\n");
}

static void describe(const mpikvs_t *kvs, const mpikvs_info_t *in,
                     struct text *t)
{
    const struct kvs_opened *o = &kvs->opened;

    add(t, "mpikvs %s\n", mpikvs_version());
    add(t, "job: %s (%s)\n", in->job,
        in->plugin ? "spank_mpikvs's regions, kept after close"
                   : "regions this open made, their names gone once every "
                     "rank held them");
    add(t, "ranks: %d\n", in->ranks);
    add(t, "nodes: %u%s\n", in->nodes,
        in->virtual_nodes ? " (virtual: MPIKVS_VIRTUAL_NODES)" : "");
    add(t, "node: %u (%s), %d ranks\n", in->node, in->node_name,
        in->node_ranks);
    add(t, "region: %s/%s (", in->shm_dir, in->data_region);
    add_bytes(t, in->region_size);
    add(t, ")\n");
    add(t, "table: %s: %llu-byte keys, %llu-byte values, %llu slots a "
           "bucket, %llu buckets of %llu bytes a node\n",
        in->table, (unsigned long long)in->key_size,
        (unsigned long long)in->value_size,
        (unsigned long long)in->slots_per_bucket,
        (unsigned long long)in->buckets,
        (unsigned long long)in->bucket_size);
    add(t, "mode: %s\n", in->mode);
    add(t, "transport: %s (%s)\n", in->transport, in->transport_why);
    describe_far_read(kvs, t);
    if (!o->config_from)
        add(t, "config: none\n");
    else if (o->config[0])
        add(t, "config: %s (%s)\n", o->config, o->config_from);
    else
        add(t, "config: %s\n", o->config_from);   /* path unknown */
    if (in->tier_index[0])
        add(t, "tier: %s, regions %s, %s\n", in->tier_caching,
            in->tier_index, in->tier_entries);
    else
        add(t, "tier: off\n");
    describe_surrogates(kvs, t);
    switch (in->persist) {
    case MPIKVS_PERSIST_LOADED:
        add(t, "persist: loaded %llu of %llu entries from %s\n",
            (unsigned long long)in->persist_loaded,
            (unsigned long long)in->persist_entries,
            kvs->table->persist.load);
        break;
    case MPIKVS_PERSIST_NO_FILE:
        add(t, "persist: no file at %s yet (a cold start)\n",
            kvs->table->persist.load);
        break;
    case MPIKVS_PERSIST_KEPT:
        add(t, "persist: %s not loaded: the table held entries (an "
               "earlier step's)\n",
            kvs->table->persist.load);
        break;
    default:
        add(t, "persist: off\n");
    }
}

int mpikvs_describe(const mpikvs_t *kvs, char *buf, size_t len)
{
    struct text t = {buf, len, 0};
    mpikvs_info_t in;

    if (!kvs || (!buf && len))
        return MPIKVS_ERR_INVAL;
    if (len)
        buf[0] = '\0';
    fill(kvs, &in);
    describe(kvs, &in, &t);
    return t.used > (size_t)INT32_MAX ? INT32_MAX : (int)t.used;
}

void kvs_describe_print(const mpikvs_t *kvs)
{
    char buf[4096];
    int n = mpikvs_describe(kvs, buf, sizeof(buf));
    char *big = NULL;

    /* a long config path or UCX message: the whole text all the same */
    if (n >= (int)sizeof(buf) && (big = malloc((size_t)n + 1)))
        mpikvs_describe(kvs, big, (size_t)n + 1);
    /* one write: the lines stay together among the other ranks' output */
    fprintf(stderr, "%s", big ? big : buf);
    fflush(stderr);
    free(big);
}
