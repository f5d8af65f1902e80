/*
 * open.c - mpikvs_open and mpikvs_close, and what an open handle tells
 * (mpikvs_key_size, mpikvs_value_size, mpikvs_transport).
 *
 * Opening is a sequence of steps that can fail on some ranks and not on
 * others (a config a node cannot read, a /dev/shm that is too small).
 * After each step the ranks agree on the outcome (kvs_agree: an
 * allreduce, and where a step failed a second one and a broadcast of the
 * text), so that either every rank goes on or every rank cleans up and
 * returns the same error: a collective call must never leave half the
 * job waiting.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "clock.h"
#include "describe.h"
#include "errors_internal.h"
#include "handle.h"
#include "locks.h"
#include "node_tier.h"
#include "populate.h"
#include "transport.h"
#include "unlink_names.h"

size_t mpikvs_key_size(const mpikvs_t *kvs)
{
    return kvs ? kvs->key_size : 0;
}

size_t mpikvs_value_size(const mpikvs_t *kvs)
{
    return kvs ? kvs->value_size : 0;
}

/* kvs_transport_open resolved kvs->transport (never AUTO) when it set
 * kvs->tp */
const char *mpikvs_transport(const mpikvs_t *kvs)
{
    return kvs && kvs->tp ? kvshm_transport_name(kvs->transport) : NULL;
}

/* ---- options, config and environment ---- */

/* The first sized options (mpikvs.h) end with transport: a caller has at
 * least these bytes. */
#define OPTIONS_FIRST_SIZE                                              \
    (offsetof(mpikvs_options_t, transport) +                            \
     sizeof(((const mpikvs_options_t *)0)->transport))

/* The caller's options into own: its size bytes of them, and the
 * default (0, NULL) of every field past them.  opt NULL: all defaults. */
static int read_options(mpikvs_t *kvs, const mpikvs_options_t *opt,
                        mpikvs_options_t *own)
{
    const unsigned char *past;

    memset(own, 0, sizeof(*own));
    own->size = sizeof(*own);
    if (!opt)
        return MPIKVS_OK;
    if (opt->size < OPTIONS_FIRST_SIZE)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_open: options.size is %zu, smaller than "
                        "the first sized options (%zu bytes): start the "
                        "options from MPIKVS_OPTIONS_INIT, or set size to "
                        "sizeof(mpikvs_options_t) (a binding: to the size "
                        "of its own declaration of the struct)",
                        opt->size, (size_t)OPTIONS_FIRST_SIZE);
    /* a newer header's fields this library does not know: fine at
     * their defaults, refused when set (the program wants what this
     * library cannot do) */
    past = (const unsigned char *)opt + sizeof(*own);
    for (size_t i = 0; opt->size > sizeof(*own) && i < opt->size - sizeof(*own);
         i++)
        if (past[i])
            return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                            "mpikvs_open: options.size is %zu and byte %zu "
                            "is set, past the %zu bytes of options this "
                            "libmpikvs %s knows: the program was built "
                            "against a newer mpikvs.h and sets an option "
                            "this library does not have; run it with the "
                            "library it was built against",
                            opt->size, sizeof(*own) + i, sizeof(*own),
                            mpikvs_version());
    memcpy(own, opt, opt->size < sizeof(*own) ? opt->size : sizeof(*own));
    return MPIKVS_OK;
}

static int parse_mode(mpikvs_t *kvs, const char *s, enum kvshm_mode *mode)
{
    char list[64];

    if (kvshm_mode_parse(s, mode) == MPIKVS_OK)
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_INVAL, "mode '%s' is not one of %s", s,
                    kvshm_mode_list(list, sizeof(list)));
}

/* The transport asked for: options.transport, else MPIKVS_TRANSPORT,
 * else the table's in the config (checked when it was parsed), else
 * auto, which kvs_transport_open resolves. */
static int pick_transport(mpikvs_t *kvs, const mpikvs_options_t *opt,
                          const struct mpikvs_env *env,
                          const struct kvshm_table_config *t)
{
    const char *s = opt->transport ? opt->transport : env->transport;
    char list[64];

    kvs->transport = t ? t->transport : KVSHM_TRANSPORT_AUTO;
    kvs->opened.transport_from =
        opt->transport ? "options.transport"
        : s            ? "MPIKVS_TRANSPORT"
        : kvs->transport != KVSHM_TRANSPORT_AUTO ? "the config"
                                                 : "the default";
    if (!s || kvshm_transport_parse(s, &kvs->transport) == MPIKVS_OK)
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                    "%s '%s' is not a transport (accepted: %s)",
                    opt->transport ? "options.transport" : "MPIKVS_TRANSPORT",
                    s, kvshm_transport_list(list, sizeof(list)));
}

/* Under the plugin, a config given to mpikvs_open (what names where:
 * options.config or MPIKVS_CONFIG) must be the job's, the one the plugin
 * checked at submission and made the regions for: the same content with
 * every default filled in (the path was the submit host's). */
static int check_job_config(mpikvs_t *kvs, const char *path, const char *what,
                            const struct mpikvs_env *env)
{
    const char *job = kvs->layout->config_text;
    const char *undo = strcmp(what, "MPIKVS_CONFIG") == 0
                           ? "unset MPIKVS_CONFIG"
                           : "leave options.config NULL";
    char job_name[300];
    char *mine;
    bool same;

    if (env->job_config_path)
        snprintf(job_name, sizeof(job_name), "--dht-config=%s",
                 env->job_config_path);
    else
        snprintf(job_name, sizeof(job_name), "its --dht-config");
    if (!job)
        return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                        "%s (%s) is not the job's config: the job has none "
                        "(it was submitted without --dht-config); %s, or "
                        "submit the job with --dht-config=%s",
                        path, what, undo, path);
    mine = kvshm_config_dump(kvs->config);
    if (!mine)
        return kvs_fail(kvs, -ENOMEM, "out of memory comparing %s with the "
                                      "job's config", path);
    same = strcmp(mine, job) == 0;
    free(mine);
    if (same)
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                    "%s (%s) is not the job's config (%s, checked at "
                    "submission), for which spank_mpikvs made the job's "
                    "regions: %s to use the job's, or submit the job with "
                    "--dht-config=%s",
                    path, what, job_name, undo, path);
}

/* "'chem', 'interp'": the names of n tables, each the first member of an
 * element of stride bytes from first (the config's or the layout's), for
 * the message that names a table they do not have. */
static const char *table_names(char *buf, size_t len, const void *first,
                               size_t n, size_t stride)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s'%s'", i ? ", " : "",
                               (const char *)first + i * stride);
    return buf;
}

/* The config, parsed once: the options', else MPIKVS_CONFIG, else the one
 * the plugin validated at submit time and put in the job layout.  Under
 * the plugin a given one must be that one (check_job_config). */
static int load_config(mpikvs_t *kvs, const mpikvs_options_t *opt,
                       const struct mpikvs_env *env)
{
    const char *path = opt->config ? opt->config : env->config;
    const char *text = kvs->layout ? kvs->layout->config_text : NULL;
    struct kvshm_diag diag;
    char names[256];
    int rc;

    /* a table is a config's (under the plugin without one, its table) */
    if (!path && !text && opt->table &&
        !(kvs->layout && !strcmp(opt->table, KVSHM_PLAN_DEFAULT_TABLE)))
        return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                        "options.table '%s' names a table of a job config, "
                        "and no config was given: name the JSON file in "
                        "options.config or MPIKVS_CONFIG (mpikvs.json(5)), "
                        "or submit the job with --dht-config; or leave "
                        "options.table NULL and give options.key_size and "
                        "options.value_size", opt->table);
    if (!path && !text)
        return MPIKVS_OK;
    kvs->opened.config_from = opt->config ? "options.config"
                              : path      ? "MPIKVS_CONFIG"
                                          : "the job's --dht-config";
    snprintf(kvs->opened.config, sizeof(kvs->opened.config), "%s",
             path ? path : env->job_config_path ? env->job_config_path : "");
    rc = path ? kvshm_config_load(path, &kvs->config, &diag)
              : kvshm_config_parse(text, strlen(text), "the job's config",
                                   &kvs->config, &diag);
    if (rc != MPIKVS_OK) {
        kvs_fail(kvs, MPIKVS_ERR_CONFIG, "%s%s",
                 diag.text ? diag.text : "cannot load the config",
                 diag.count > 1 ? "(see mpikvs-config check)" : "");
        kvshm_diag_free(&diag);
        return MPIKVS_ERR_CONFIG;
    }
    if (path && kvs->layout &&
        (rc = check_job_config(kvs, path,
                               opt->config ? "options.config"
                                           : "MPIKVS_CONFIG",
                               env)) != MPIKVS_OK)
        return rc;
    if (opt->table) {
        kvs->table = kvshm_config_table(kvs->config, opt->table);
        if (!kvs->table)
            return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                            "%s has no table '%s'; its tables: %s (name one "
                            "in options.table, or leave it NULL for the "
                            "first)",
                            path ? path : "the job's config", opt->table,
                            table_names(names, sizeof(names),
                                        kvs->config->tables,
                                        kvs->config->ntables,
                                        sizeof(kvs->config->tables[0])));
    } else {
        kvs->table = &kvs->config->tables[0];
    }
    return MPIKVS_OK;
}

/* An option, else the config's value, else a default; an option that
 * contradicts the config is an error. */
static int pick_size(mpikvs_t *kvs, const char *what, size_t option,
                     size_t from_config, size_t *out)
{
    if (option && from_config && option != from_config)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s %zu contradicts the config's %zu", what, option,
                        from_config);
    *out = option ? option : from_config;
    if (*out == 0 && !kvs->config)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "options.%s is 0 and no job config was given to "
                        "take it from: set options.%s, or name a config "
                        "in options.config or MPIKVS_CONFIG "
                        "(mpikvs.json(5))",
                        what, what);
    if (*out == 0 || *out > 65536)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s %zu is out of range 1..65536 (give it in the "
                        "options or in a config)",
                        what, *out);
    return MPIKVS_OK;
}

static struct kvshm_data_shape kvs_shape(const mpikvs_t *kvs)
{
    struct kvshm_data_shape s = {kvs->key_size, kvs->value_size, kvs->slots,
                                 (uint32_t)kvs->mode};
    return s;
}

/* Under the plugin: the layout's entry of the table, whose plan the
 * plugin worked out. */
static int find_job_table(mpikvs_t *kvs)
{
    const char *table = kvs->table ? kvs->table->name
                                   : KVSHM_PLAN_DEFAULT_TABLE;
    char names[256];

    for (size_t i = 0; i < kvs->layout->ntables; i++)
        if (strcmp(kvs->layout->tables[i].name, table) == 0) {
            kvs->job_table = &kvs->layout->tables[i];
            return MPIKVS_OK;
        }
    return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                    "the job has no table '%s' on node %s; its tables: "
                    "%s (the plugin made the tables of --dht-config, or "
                    "one table 'kvs' without it)",
                    table, kvs->layout->node,
                    table_names(names, sizeof(names), kvs->layout->tables,
                                kvs->layout->ntables,
                                sizeof(kvs->layout->tables[0])));
}

/* Without the plugin: the table's plan, from the same function the
 * plugin uses (shm/plan.h), for the shape the options and the config
 * ask for and size_per_node. */
static int plan_own_table(mpikvs_t *kvs, uint64_t size_per_node,
                          const char *size_what)
{
    struct kvshm_table_shape want = {
        .key_size = kvs->key_size, .value_size = kvs->value_size,
        .slots_per_bucket = kvs->slots, .mode = (uint32_t)kvs->mode};
    struct kvshm_plan_input in = {
        .dht_size = size_per_node, .config = kvs->config, .own_table = true,
        .table = kvs->table ? kvs->table->name : NULL, .shape = &want,
        .size_what = size_what};
    struct kvshm_diag diag;
    struct kvshm_plan plan;
    int rc = kvshm_plan_make(&in, &plan, &diag);

    if (rc != MPIKVS_OK) {
        size_t len = diag.text ? strcspn(diag.text, "\n") : 0;
        kvs_fail(kvs, rc, "%.*s", (int)len,
                 diag.text ? diag.text : "out of memory");
        kvshm_diag_free(&diag);
        return rc;
    }
    kvs->slot_size = plan.tables[0].shape.slot_size;
    kvs->bucket_size = plan.tables[0].shape.bucket_size;
    kvs->nbuckets = plan.tables[0].shape.nbuckets;
    /* the table's memory holds its node tier too */
    kvs->tier_bytes = plan.tables[0].tier_bytes;
    kvshm_plan_free(&plan);
    return MPIKVS_OK;
}

/* Under the plugin: the shape from the layout's plan, where the options
 * ask for it (else the region refuses them when it is attached), and the
 * buckets from the region. */
static void take_job_plan(mpikvs_t *kvs)
{
    const struct kvshm_table_shape *plan = &kvs->job_table->shape;
    struct kvshm_table_shape want = {
        .key_size = kvs->key_size, .value_size = kvs->value_size,
        .slots_per_bucket = kvs->slots, .mode = (uint32_t)kvs->mode};

    if (plan->key_size && want.key_size == plan->key_size &&
        want.value_size == plan->value_size &&
        want.slots_per_bucket == plan->slots_per_bucket &&
        want.mode == plan->mode) {
        kvs->slot_size = plan->slot_size;
        kvs->bucket_size = plan->bucket_size;
        kvs->nbuckets = plan->nbuckets;
        return;
    }
    /* no plan of the shape (no job config): these buckets, as many as
     * the region holds (attach_region) */
    kvshm_shape_sizes(&want);
    kvs->slot_size = want.slot_size;
    kvs->bucket_size = want.bucket_size;
    kvs->nbuckets = 0;
}

static int resolve(mpikvs_t *kvs, const mpikvs_options_t *opt,
                   const struct mpikvs_env *env, uint64_t *size_per_node)
{
    const struct kvshm_table_config *t;
    const struct kvshm_table_shape *plan = NULL;
    char what[sizeof(kvs->config->source) + 64];
    int rc = load_config(kvs, opt, env);

    if (rc != MPIKVS_OK)
        return rc;
    t = kvs->table;
    if (kvs->layout) {
        if ((rc = find_job_table(kvs)) != MPIKVS_OK)
            return rc;
        if (kvs->job_table->shape.key_size)
            plan = &kvs->job_table->shape;
    }
    /* the layout's plan is the job config's shape */
    if ((rc = pick_size(kvs, "key_size", opt->key_size,
                        plan ? plan->key_size : t ? t->key.size : 0,
                        &kvs->key_size)) ||
        (rc = pick_size(kvs, "value_size", opt->value_size,
                        plan ? plan->value_size : t ? t->value.size : 0,
                        &kvs->value_size)))
        return rc;
    kvs->mode = plan ? (enum kvshm_mode)plan->mode
                : t  ? t->mode
                     : KVSHM_MODE_LOCKFREE;
    if (opt->mode && (rc = parse_mode(kvs, opt->mode, &kvs->mode)))
        return rc;
    if ((rc = pick_transport(kvs, opt, env, t)) != MPIKVS_OK)
        return rc;
    kvs->slots = opt->slots_per_bucket ? opt->slots_per_bucket
                 : plan                ? plan->slots_per_bucket
                 : t                   ? t->slots_per_bucket
                                       : KVSHM_SLOTS_DEFAULT;
    if (kvs->slots > KVSHM_SLOTS_MAX)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "slots_per_bucket %llu is out of range 1..%u",
                        (unsigned long long)kvs->slots, KVSHM_SLOTS_MAX);
    if (kvs->layout) {
        *size_per_node = opt->size_per_node ? opt->size_per_node
                                            : kvs->job_table->data_bytes;
        take_job_plan(kvs);
        return MPIKVS_OK;
    }
    *size_per_node = opt->size_per_node  ? opt->size_per_node
                     : t && t->size.bytes ? t->size.bytes
                                          : MPIKVS_DEFAULT_SIZE;
    /* a size below the smallest usable one is refused naming where it
     * came from */
    if (opt->size_per_node)
        snprintf(what, sizeof(what), "options.size_per_node");
    else if (t && t->size.bytes)
        snprintf(what, sizeof(what), "%s: tables.%s.size",
                 kvs->config->source, t->name);
    else
        snprintf(what, sizeof(what), "the default size_per_node");
    return plan_own_table(kvs, *size_per_node, what);
}

/* Every rank must have asked for the same table: a rank with other sizes
 * would compute other homes, and a rank in another mode would skip the
 * locks (or the window) the others wait in.  The same transport too, as
 * asked (auto on one rank and mpi on another is refused): the transports
 * open collectively, each its own way, so the ranks must agree before
 * any of them opens one. */
static int agree_on_shape(mpikvs_t *kvs, uint64_t size_per_node)
{
    static const char *const what[] = {"key_size", "value_size",
                                       "slots_per_bucket", "size_per_node",
                                       "mode"};
    uint64_t mine[6] = {kvs->key_size, kvs->value_size, kvs->slots,
                        size_per_node, (uint64_t)kvs->mode,
                        (uint64_t)kvs->transport};
    uint64_t lo[6], hi[6];
    char modes[64], key[96];

    snprintf(key, sizeof(key), "; the modes from 0: %s",
             kvshm_mode_list(modes, sizeof(modes)));
    if (MPI_Allreduce(mine, lo, 6, MPI_UINT64_T, MPI_MIN, kvs->comm) ||
        MPI_Allreduce(mine, hi, 6, MPI_UINT64_T, MPI_MAX, kvs->comm))
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "MPI_Allreduce of the table's shape failed");
    for (int i = 0; i < 5; i++)
        if (lo[i] != hi[i])
            return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                            "the ranks disagree on %s (%llu here, %llu to "
                            "%llu over the ranks%s): open with the same "
                            "options and config everywhere",
                            what[i], (unsigned long long)mine[i],
                            (unsigned long long)lo[i],
                            (unsigned long long)hi[i],
                            i == 4 ? key : "");
    if (lo[5] != hi[5])
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "the ranks disagree on the transport (%s here, "
                        "%s to %s over the ranks): give the same "
                        "options.transport, MPIKVS_TRANSPORT or config "
                        "transport to every rank",
                        kvshm_transport_name(kvs->transport),
                        kvshm_transport_name((enum kvshm_transport)lo[5]),
                        kvshm_transport_name((enum kvshm_transport)hi[5]));
    return MPIKVS_OK;
}

/* ---- the node's data region ---- */

struct new_region {
    mpikvs_t   *kvs;
    const char *table;
};

/* Lay out a region this library makes, before it has a name. */
static int fill_new_region(void *base, uint64_t size, void *arg,
                           mpikvs_error_t *err)
{
    const struct new_region *n = arg;
    struct kvshm_data_shape shape = kvs_shape(n->kvs);

    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, (uint64_t)n->kvs->local_size, &shape,
                           n->table, err);
}

static int create_region(mpikvs_t *kvs, const char *job, const char *node,
                         const char *tag)
{
    struct new_region arg = {kvs, kvs->table ? kvs->table->name : KVSHM_PLAN_DEFAULT_TABLE};
    struct kvshm_region_spec spec = {
        .dir = kvs->shm_dir[0] ? kvs->shm_dir : NULL,
        .job = job, .node = node, .tag = tag,
        .kind = KVSHM_KIND_DATA,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1,
        .step = KVSHM_NO_STEP,
        .fill = fill_new_region, .fill_arg = &arg,
    };
    mpikvs_error_t err;
    int rc;

    spec.size = kvshm_data_buckets_offset((uint64_t)kvs->local_size) +
                kvs->nbuckets * kvs->bucket_size;
    rc = kvshm_region_create(&spec, &kvs->region, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    kvs->created = true;
    kvs->buckets_offset = kvshm_data_buckets_offset(
        (uint64_t)kvs->local_size);
    return MPIKVS_OK;
}

/* A region another process made (the leader, or the plugin): its buckets
 * must have this rank's shape.  The first opener of a region the plugin
 * made without a config lays them out. */
static int attach_region(mpikvs_t *kvs)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA, .writable = true,
                                 .expect_uid = geteuid()};
    struct kvshm_data_shape shape = kvs_shape(kvs);
    struct kvshm_data_control *c, seen;
    mpikvs_error_t err;
    int rc;

    rc = kvshm_region_open(kvs->shm_dir[0] ? kvs->shm_dir : NULL,
                           kvs->region_name, &oo, &kvs->region, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    c = (struct kvshm_data_control *)((char *)kvs->region->base +
                                      KVSHM_DATA_CONTROL_OFFSET);
    /* The control block is data: check it (the counters before they lay
     * out buckets after them, the buckets once laid out) and take offsets
     * and counts only from the checked copy, never an unchecked one. */
    rc = kvshm_data_read_control(kvs->region->base, kvs->region->size,
                                 kvs->region_name, &seen, &err);
    if (rc == MPIKVS_OK)
        rc = kvshm_data_format(c, kvs->region->size, &shape,
                               kvs->region_name, &err);
    if (rc == MPIKVS_ERR_TOOSMALL && !kvs->job_table->shape.key_size) {
        /* the plugin made the job's --dht-size of memory without a
         * config: these buckets are this program's choice */
        char have[32];
        kvshm_format_bytes(have, sizeof(have), kvs->region->size);
        return kvs_fail(kvs, rc,
                        "the job's --dht-size, %s, is below the smallest "
                        "usable size for this program's buckets, %llu "
                        "bytes (%s): submit with a larger --dht-size",
                        have,
                        (unsigned long long)kvshm_data_min_size(seen.max_ranks,
                                                                &shape),
                        err.text);
    }
    if (rc == MPIKVS_OK)
        rc = kvshm_data_read_control(kvs->region->base, kvs->region->size,
                                     kvs->region_name, &seen, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    if (seen.bucket_size != kvs->bucket_size)
        return kvs_fail(kvs, MPIKVS_ERR_CORRUPT,
                        "region %s changed its buckets from %llu to %llu "
                        "bytes while this rank opened it",
                        kvs->region_name,
                        (unsigned long long)kvs->bucket_size,
                        (unsigned long long)seen.bucket_size);
    if ((uint64_t)kvs->local_rank >= seen.max_ranks)
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "region %s has counters for %llu ranks and %llu "
                        "buckets; this node has %d ranks",
                        kvs->region_name, (unsigned long long)seen.max_ranks,
                        (unsigned long long)seen.nbuckets, kvs->local_size);
    /* The region's size wins over the size this rank computed. */
    kvs->nbuckets = seen.nbuckets;
    kvs->buckets_offset = seen.buckets_offset;
    return MPIKVS_OK;
}

static void point_into_region(mpikvs_t *kvs)
{
    char *base = kvs->region->base;
    struct kvshm_data_control *c =
        (struct kvshm_data_control *)(base + KVSHM_DATA_CONTROL_OFFSET);

    kvs->buckets = (unsigned char *)base + kvs->buckets_offset;
    /* where kvshm_data_init put them and the check found them */
    kvs->stats = (struct kvshm_rank_stats *)(base + KVSHM_DATA_STATS_OFFSET) +
                 kvs->local_rank;
    if (kvs->local_rank == 0) {   /* for the tools: how the job sees it */
        c->nnodes = kvs->nnodes;
        c->node_index = kvs->node;
    }
}

/* The table's data region tag: the layout's (find_job_table found the
 * table's entry), or "<table>-data". */
static int data_tag(mpikvs_t *kvs, char *tag, size_t len)
{
    const char *table = kvs->table ? kvs->table->name
                                   : KVSHM_PLAN_DEFAULT_TABLE;

    if (!kvs->layout) {   /* the job-scope tag, as the plugin's would be */
        char prefix[KVSHM_TIER_PREFIX_MAX], data[KVSHM_TAG_MAX];
        mpikvs_error_t err;
        int rc = kvshm_table_tags(KVSHM_SCOPE_JOB, 0, table, prefix, data,
                                  &err);
        if (rc != MPIKVS_OK)
            return kvs_fail(kvs, rc, "%s", err.text);
        snprintf(tag, len, "%s", data);
        return MPIKVS_OK;
    }
    snprintf(tag, len, "%s", kvs->job_table->data_tag);
    return MPIKVS_OK;
}

static int open_region(mpikvs_t *kvs, const struct mpikvs_env *env,
                       const char *node)
{
    char job[KVSHM_JOB_MAX], tag[KVSHM_TAG_MAX];
    mpikvs_error_t err;
    int rc = MPIKVS_OK;

    /* A job id everyone shares: the plugin's, or one rank 0 makes. */
    if (kvs->layout)
        snprintf(job, sizeof(job), "%s", kvs->layout->job);
    else if (kvs->rank == 0)
        kvshm_unique_id(job, sizeof(job));
    if (!kvs->layout &&
        MPI_Bcast(job, sizeof(job), MPI_CHAR, 0, kvs->comm) != MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast of the job id");
    snprintf(kvs->opened.job, sizeof(kvs->opened.job), "%s", job);
    snprintf(kvs->opened.node, sizeof(kvs->opened.node), "%s", node);
    if ((rc = data_tag(kvs, tag, sizeof(tag))) != MPIKVS_OK)
        return rc;
    rc = kvshm_job_dir(kvs->layout ? env->layout : NULL, env->shm_dir,
                       kvs->shm_dir, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    rc = kvshm_region_name(kvs->region_name, sizeof(kvs->region_name), job,
                           node, tag, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);

    /* The leader makes the node's region (unless the plugin did), then
     * the others open it. */
    if (kvs->local_rank == 0)
        rc = kvs->layout ? attach_region(kvs)
                         : create_region(kvs, job, node, tag);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, kvs->node_comm) != MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast in the node");
    if (rc == MPIKVS_OK && kvs->local_rank != 0)
        rc = attach_region(kvs);
    else if (rc != MPIKVS_OK && kvs->local_rank != 0)
        kvs_fail(kvs, rc, "the node's first rank could not set up %s: %s",
                 kvs->region_name, mpikvs_strerror(rc));
    if (rc == MPIKVS_OK)
        point_into_region(kvs);
    /* The tier's set-up is collective in the node: it starts only when
     * every rank of the node attached (one may be refused, e.g. by a
     * region made for fewer ranks). */
    int node_rc = rc;
    if (MPI_Allreduce(&rc, &node_rc, 1, MPI_INT, MPI_MIN, kvs->node_comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce in the node");
    if (node_rc != MPIKVS_OK)
        return rc != MPIKVS_OK
                   ? rc
                   : kvs_fail(kvs, node_rc, "another rank of the node "
                                            "could not open %s: %s",
                              kvs->region_name, mpikvs_strerror(node_rc));
    return kvs_tier_open(kvs, job, node);
}

/* The plugin's job layout, when this is a step it set up. */
static int open_layout(mpikvs_t *kvs, const struct mpikvs_env *env)
{
    mpikvs_error_t err;
    int rc;

    if (!env->layout)
        return MPIKVS_OK;
    if (env->virtual_nodes)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "MPIKVS_VIRTUAL_NODES cannot be used in a step that "
                        "spank_mpikvs set up (MPIKVS_LAYOUT=%s): the nodes "
                        "are real there",
                        env->layout);
    rc = kvshm_job_layout_open(env->layout, &kvs->layout, &err);
    return rc == MPIKVS_OK ? rc : kvs_fail(kvs, rc, "%s", err.text);
}

/* Every rank runs under the plugin's layout or none does: mpirun in a
 * batch script starts the ranks of its own node without one. */
static int agree_on_layout(mpikvs_t *kvs)
{
    int mine = kvs->layout != NULL, lo, hi;

    if (MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, kvs->comm) ||
        MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, kvs->comm))
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "MPI_Allreduce of the job layout failed");
    if (lo != hi)
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "some ranks run in a step that spank_mpikvs set up "
                        "(MPIKVS_LAYOUT) and others do not (this one %s): "
                        "start every rank with srun",
                        mine ? "does" : "does not");
    return MPIKVS_OK;
}

/* ---- the transport ---- */

/* Every node must have the same buckets, or homes would disagree; then
 * the transport to the other nodes' regions. */
static int open_transport(mpikvs_t *kvs)
{
    uint64_t mine[2], lo[2], hi[2];

    mine[0] = kvs->nbuckets;
    mine[1] = kvs->bucket_size;
    if (MPI_Allreduce(mine, lo, 2, MPI_UINT64_T, MPI_MIN, kvs->comm) ||
        MPI_Allreduce(mine, hi, 2, MPI_UINT64_T, MPI_MAX, kvs->comm))
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce of table shapes");
    if (lo[0] != hi[0] || lo[1] != hi[1])
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "the nodes' regions differ: %llu to %llu buckets of "
                        "%llu to %llu bytes",
                        (unsigned long long)lo[0], (unsigned long long)hi[0],
                        (unsigned long long)lo[1], (unsigned long long)hi[1]);
    return kvs_transport_open(kvs);
}

/* ---- open and close ---- */

/* A whole number of seconds from the environment variable name (value v,
 * or NULL for dflt) into *secs; what: what it bounds, for the error. */
static int set_seconds(mpikvs_t *kvs, const char *name, const char *v,
                       unsigned dflt, const char *what, unsigned *secs)
{
    char *end;
    unsigned long n;

    *secs = dflt;
    if (!v)
        return MPIKVS_OK;
    errno = 0;
    n = strtoul(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || n < 1 || n > 86400)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s='%s' is not a number of seconds from 1 to 86400 "
                        "(%s); unset it for the default of %u s",
                        name, v, what, dflt);
    *secs = (unsigned)n;
    return MPIKVS_OK;
}

/* MPIKVS_CLOSE_TIMEOUT and MPIKVS_TIMEOUT. */
static int set_timeouts(mpikvs_t *kvs, const struct mpikvs_env *env)
{
    int rc = set_seconds(kvs, "MPIKVS_CLOSE_TIMEOUT", env->close_timeout,
                         MPIKVS_CLOSE_TIMEOUT_S,
                         "how long mpikvs_close waits for the other ranks",
                         &kvs->close_timeout);

    return rc != MPIKVS_OK
               ? rc
               : set_seconds(kvs, "MPIKVS_TIMEOUT", env->timeout,
                             MPIKVS_TIMEOUT_S,
                             "how long an operation waits for another "
                             "node's answer",
                             &kvs->timeout);
}

/* MPIKVS_UCX_OPS: how the ucx transport reaches another host's node. */
static int set_ucx_ops(mpikvs_t *kvs, const struct mpikvs_env *env)
{
    static const char *const names[] = {
        [KVS_UCX_OPS_AUTO] = "auto",
        [KVS_UCX_OPS_RMA] = "rma",
        [KVS_UCX_OPS_SHIP] = "ship"};
    const char *v = env->ucx_ops;

    kvs->ucx_ops = KVS_UCX_OPS_AUTO;
    if (!v)
        return MPIKVS_OK;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(v, names[i])) {
            kvs->ucx_ops = (enum kvs_ucx_ops)i;
            return MPIKVS_OK;
        }
    return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                    "MPIKVS_UCX_OPS='%s' is not auto, rma or ship (how the "
                    "ucx transport reaches another host's node); unset it "
                    "for auto", v);
}

/* MPIKVS_POPULATE: how much of the node's buckets each rank faults in at
 * open (populate_buckets). */
static int set_populate(mpikvs_t *kvs, const struct mpikvs_env *env,
                        uint64_t *bound)
{
    mpikvs_error_t err;

    *bound = KVSHM_POPULATE_DEFAULT;
    if (env->populate &&
        kvshm_populate_parse(env->populate, "MPIKVS_POPULATE", bound,
                             &err) != MPIKVS_OK)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s", err.text);
    return MPIKVS_OK;
}

/*
 * Fault the node's buckets in now, not in the first puts and gets: this
 * rank's share of the pages, which the node's ranks allocate and zero
 * together, then more of them for its own page table, up to bound
 * (shm/populate.h).  The default bound, 1 GiB a rank, maps a table of up
 * to 1 GiB whole in every rank, and caps what a rank spends on a larger
 * one: 2 MiB of page table (4 KiB pages), 0.1 to 0.3 s here; 128 ranks
 * mapping all of an 8 GiB table would hold 2 GiB of page tables.  It
 * never fails the open: a page left out faults in when it is first used.
 */
static void populate_buckets(mpikvs_t *kvs, uint64_t bound)
{
    (void)kvshm_populate(kvs->buckets, kvs->nbuckets * kvs->bucket_size,
                         (unsigned)kvs->local_rank,
                         (unsigned)kvs->local_size, bound);
}

/* A barrier over the handle's ranks that gives up after
 * MPIKVS_CLOSE_TIMEOUT (of this rank's looking: clock.h): no rank
 * waits forever for one that died or does not call mpikvs_close.  One
 * given up on stays posted: MPI cannot cancel a collective. */
static int bounded_barrier(mpikvs_t *kvs)
{
    MPI_Request req;
    struct kvshm_deadline deadline;
    int done = 0, rc = MPI_Ibarrier(kvs->comm, &req);

    kvshm_deadline_start(&deadline, kvs->close_timeout * 1000ull);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Ibarrier in mpikvs_close", rc);
    for (;;) {
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return kvs_mpi_fail(kvs, "MPI_Test in mpikvs_close", rc);
        if (done)
            return MPIKVS_OK;
        if (kvshm_deadline_passed(&deadline))
            return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                            "mpikvs_close: not every rank of the "
                            "communicator came to mpikvs_close within %u s "
                            "(MPIKVS_CLOSE_TIMEOUT): a rank died or does "
                            "not call it; this rank gave up waiting and "
                            "did not free the cache's MPI objects",
                            kvs->close_timeout);
        /* the others may be busy for long: poll, do not spin */
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200000};
        nanosleep(&ts, NULL);
    }
}

/* Every rank of the handle is here, each within the timeout.  Twice:
 * after the first every rank has come, and no RMA is in flight; after
 * the second every rank knows that, so either all of them go on to a
 * collective that waits for every rank (freeing the window, the config's
 * save) or, but for one that is descheduled for a whole timeout between
 * the two, none does. */
static int all_at_close(mpikvs_t *kvs)
{
    int rc = bounded_barrier(kvs);

    if (rc == MPIKVS_OK)
        rc = bounded_barrier(kvs);
    return rc;
}

/* Undo whatever open did; collective only where every rank got as far.
 * The waits for the other ranks are bounded (all_at_close); a rank that
 * gives up, or had given up already (stalled), frees nothing that
 * another rank could still be waiting for, and returns
 * MPIKVS_ERR_STALLED.  report: its error also goes to
 * mpikvs_last_error(NULL), as kvs is gone. */
static int teardown(mpikvs_t *kvs, bool report, bool stalled)
{
    int rc = stalled ? MPIKVS_ERR_STALLED : MPIKVS_OK;
    bool together = !stalled, exposed;

    if (kvs->tp && kvs->tp->release)
        kvs->tp->release(kvs);
    if (!stalled && kvs->comm != MPI_COMM_NULL) {
        rc = all_at_close(kvs);
        together = rc == MPIKVS_OK;
    }
    /* a region the transport still exposes to the others stays mapped
     * until the process ends */
    exposed = kvs->tp && kvs->tp->close(kvs, together);
    /* no lock is taken now; after a timeout a late rank still may, and
     * the lease stays ours until this process ends (locks.c) */
    if (together)
        kvs_locks_close(kvs);
    kvs_tier_close(kvs);
    if (kvs->created)
        kvshm_region_unlink(kvs->shm_dir[0] ? kvs->shm_dir : NULL,
                            kvs->region_name);
    if (!exposed)
        kvshm_region_close(&kvs->region);
    kvshm_config_free(kvs->config);
    kvshm_job_layout_free(kvs->layout);
    free(kvs->leaders);
    free(kvs->routes);
    free(kvs->scratch);
    free(kvs->slot_image);
    free(kvs->batch);
    free(kvs->batch_images);
    /* the communicators too stay allocated after a timeout: the posted
     * barrier refers to them */
    if (together && kvs->node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&kvs->node_comm);
    if (together && kvs->leaders_comm != MPI_COMM_NULL)
        MPI_Comm_free(&kvs->leaders_comm);
    if (together && kvs->comm != MPI_COMM_NULL)
        MPI_Comm_free(&kvs->comm);
    if (rc != MPIKVS_OK && report)
        kvs_fail(NULL, rc, "%s", kvs->err.text);
    free(kvs);
    return rc;
}

/* Can this thread call MPI?  The library calls MPI in the calling thread
 * (a handle is used by one thread at a time: the caller's part), so under
 * MPI_THREAD_SINGLE or FUNNELED only the main thread may call it.  Each
 * call here is allowed in any thread; the first two also before MPI_Init
 * and after MPI_Finalize. */
static int check_mpi_thread(void)
{
    int flag = 0, provided = MPI_THREAD_SINGLE, is_main = 0;

    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag)
        return kvs_fail(NULL, MPIKVS_ERR_MPI,
                        "mpikvs_open: MPI is not initialized: call "
                        "MPI_Init or MPI_Init_thread first");
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag)
        return kvs_fail(NULL, MPIKVS_ERR_MPI,
                        "mpikvs_open: MPI is finalized: open (and close) "
                        "caches before MPI_Finalize");
    MPI_Query_thread(&provided);
    if (provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE)
        return MPIKVS_OK;
    MPI_Is_thread_main(&is_main);
    if (is_main)
        return MPIKVS_OK;
    return kvs_fail(NULL, MPIKVS_ERR_MPI,
                    "mpikvs_open: MPI provides %s, under which only the "
                    "main thread (the one that initialized MPI) may call "
                    "MPI, and this is another thread: call mpikvs from the "
                    "main thread, or initialize MPI with MPI_Init_thread "
                    "and MPI_THREAD_SERIALIZED (MPI_THREAD_MULTIPLE if "
                    "threads use distinct handles at the same time)",
                    provided == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE"
                                                  : "MPI_THREAD_FUNNELED");
}

int mpikvs_open(MPI_Comm comm, const mpikvs_options_t *opt, mpikvs_t **out)
{
    mpikvs_options_t options;
    struct mpikvs_env env;
    char node[KVSHM_NODE_MAX];
    uint64_t size_per_node = 0, populate = 0;
    bool verbose = false;
    mpikvs_t *kvs;
    int rc;

    if (!out)
        return kvs_fail(NULL, MPIKVS_ERR_INVAL, "mpikvs_open: kvs is NULL");
    *out = NULL;
    if (comm == MPI_COMM_NULL)
        return kvs_fail(NULL, MPIKVS_ERR_INVAL,
                        "mpikvs_open: comm is MPI_COMM_NULL");
    if ((rc = check_mpi_thread()) != MPIKVS_OK ||
        (rc = kvs_check_mpi_impl()) != MPIKVS_OK)
        return rc;
    kvs = calloc(1, sizeof(*kvs));
    if (!kvs)
        return kvs_fail(NULL, -ENOMEM, "mpikvs_open: out of memory");
    kvs->node_comm = MPI_COMM_NULL;
    kvs->leaders_comm = MPI_COMM_NULL;
    kvs->pid = (uint32_t)getpid();
    if (MPI_Comm_dup(comm, &kvs->comm) != MPI_SUCCESS) {
        free(kvs);
        return kvs_fail(NULL, MPIKVS_ERR_MPI, "MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(kvs->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(kvs->comm, &kvs->rank);
    MPI_Comm_size(kvs->comm, &kvs->size);
    kvs_env_read(&env);
    rc = set_timeouts(kvs, &env);
    if (rc == MPIKVS_OK)
        rc = set_ucx_ops(kvs, &env);
    if (rc == MPIKVS_OK)
        rc = set_populate(kvs, &env, &populate);
    if (rc == MPIKVS_OK)
        rc = kvs_verbose_parse(kvs, env.verbose, &verbose);
    kvs->opened.virtual_nodes = env.virtual_nodes > 0;

    rc = kvs_agree(kvs, rc == MPIKVS_OK ? open_layout(kvs, &env) : rc);
    if (rc == MPIKVS_OK)
        rc = agree_on_layout(kvs);
    if (rc == MPIKVS_OK) {
        rc = read_options(kvs, opt, &options);
        rc = kvs_agree(kvs, rc == MPIKVS_OK ? resolve(kvs, &options, &env,
                                                      &size_per_node)
                                            : rc);
    }
    if (rc == MPIKVS_OK)
        rc = agree_on_shape(kvs, size_per_node);
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, kvs_nodes(kvs, &env, node, sizeof(node)));
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, open_region(kvs, &env, node));
    if (rc == MPIKVS_OK)   /* before the next collective: nobody counts */
        kvs_stats_mark_open(kvs);
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, kvs_locks_open(kvs));
    if (rc == MPIKVS_OK) {
        kvs->scratch = malloc(kvs->bucket_size);
        kvs->slot_image = malloc(kvs->slot_size);
        kvs->batch_len = BATCH_CHUNK * kvs->bucket_size;
        kvs->batch = malloc(kvs->batch_len);
        kvs->batch_images = malloc(BATCH_CHUNK * kvs->slot_size);
        rc = kvs_agree(kvs, kvs->scratch && kvs->slot_image && kvs->batch &&
                                kvs->batch_images
                            ? MPIKVS_OK
                            : kvs_fail(kvs, -ENOMEM, "out of memory"));
    }
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, open_transport(kvs));
    if (rc == MPIKVS_OK) {
        /* every rank holds its regions now; faulting the buckets in
         * waits until the names are gone, which a crash would leave */
        kvs_unlink_names(kvs);
        populate_buckets(kvs, populate);
        kvs_stats_set_transport(kvs);
        kvs->ncounters = kvs->table ? kvs->table->counters
                                    : KVSHM_COUNTERS_DEFAULT;
    }
    /* the config's warm start: the entries a run before saved */
    if (rc == MPIKVS_OK && kvs->table && kvs->table->persist.load[0])
        rc = kvs_load_at_open(kvs, kvs->table->persist.load);
    if (rc != MPIKVS_OK) {
        kvs_fail(NULL, rc, "%s", kvs->err.text);
        teardown(kvs, false, false);
        return rc;
    }
    if (verbose && kvs->rank == 0)
        kvs_describe_print(kvs);
    *out = kvs;
    return MPIKVS_OK;
}

/* The config's save at close.  The save is collective, and MPI-IO
 * cannot give up on a rank that never comes: so every rank must be at
 * close first, within MPIKVS_CLOSE_TIMEOUT, or none saves and the close
 * goes on as after a timeout (MPIKVS_ERR_STALLED). */
static int close_save(mpikvs_t *kvs, const char *path, bool *stalled)
{
    char why[sizeof(kvs->err.text)];
    int rc = all_at_close(kvs);

    *stalled = rc != MPIKVS_OK;
    if (rc != MPIKVS_OK) {
        snprintf(why, sizeof(why), "%s", kvs->err.text);
        return kvs_fail(kvs, rc, "mpikvs_close: the table was not saved to "
                        "%s (persist.save): %s", path, why);
    }
    rc = mpikvs_save(kvs, path);
    if (rc != MPIKVS_OK)
        kvs_fail(NULL, rc, "%s", kvs->err.text);
    return rc;
}

int mpikvs_close(mpikvs_t **kvsp)
{
    const struct kvshm_table_config *t;
    int saved = MPIKVS_OK, rc;
    bool stalled = false;
    unsigned unwaited;

    if (!kvsp || !*kvsp)
        return kvs_fail(NULL, MPIKVS_ERR_INVAL,
                        "mpikvs_close: no open handle");
    /* completed, so that nothing writes into the caller's buffers any
     * more; the close goes on, as the other ranks' does */
    unwaited = kvs_async_close(*kvsp);
    /* the config's save for the next run; the close goes on if it fails,
     * and returns its error */
    t = (*kvsp)->table;
    if (t && t->persist.save[0])
        saved = close_save(*kvsp, t->persist.save, &stalled);
    rc = teardown(*kvsp, true, stalled);
    if (rc == MPIKVS_OK)
        rc = saved;
    *kvsp = NULL;
    if (rc == MPIKVS_OK && unwaited)
        rc = kvs_fail(NULL, MPIKVS_ERR_INVAL,
                      "mpikvs_close: %u batch requests were never waited "
                      "for (completed, and the cache closed): wait for "
                      "every request before mpikvs_close", unwaited);
    return rc;
}
