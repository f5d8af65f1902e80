/*
 * open_resolve.c - what mpikvs_open opens (open_resolve.h): the
 * caller's options, the job's or the caller's config, the table's shape
 * and size, and the ranks' agreement on all of it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "open_resolve.h"
#include "verify.h"

/* The first sized options (mpikvs.h) end with transport: a caller has at
 * least these bytes. */
#define OPTIONS_FIRST_SIZE                                              \
    (offsetof(mpikvs_options_t, transport) +                            \
     sizeof(((const mpikvs_options_t *)0)->transport))

/* The caller's options into own: its size bytes of them, and the
 * default (0, NULL) of every field past them.  opt NULL: all defaults. */
int kvs_read_options(mpikvs_t *kvs, const mpikvs_options_t *opt,
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
    for (size_t i = 0;
         opt->size > sizeof(*own) && i < opt->size - sizeof(*own); i++)
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
    return kvs_verify_check_options(kvs, own);
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
 * contradicts the config is an error, and so is one above max (the
 * largest key or value, job_config.h). */
static int pick_size(mpikvs_t *kvs, const char *what, size_t option,
                     size_t from_config, size_t max, size_t *out)
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
    if (*out == 0 || *out > max)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s %zu is out of range 1..%zu (the library's "
                        "limit; give it in the options or in a config)",
                        what, *out, max);
    return MPIKVS_OK;
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
        .key_size = kvs->tab.key_size, .value_size = kvs->tab.value_size,
        .slots_per_bucket = kvs->tab.slots, .mode = (uint32_t)kvs->mode};
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
    kvs->tab.slot_size = plan.tables[0].shape.slot_size;
    kvs->tab.bucket_size = plan.tables[0].shape.bucket_size;
    kvs->tab.nbuckets = plan.tables[0].shape.nbuckets;
    /* the table's memory holds its node tier too */
    kvs->tier_bytes = plan.tables[0].tier_bytes;
    kvs->near_bytes = plan.tables[0].near_bytes;
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
        .key_size = kvs->tab.key_size, .value_size = kvs->tab.value_size,
        .slots_per_bucket = kvs->tab.slots, .mode = (uint32_t)kvs->mode};

    if (plan->key_size && want.key_size == plan->key_size &&
        want.value_size == plan->value_size &&
        want.slots_per_bucket == plan->slots_per_bucket &&
        want.mode == plan->mode) {
        kvs->tab.slot_size = plan->slot_size;
        kvs->tab.bucket_size = plan->bucket_size;
        kvs->tab.nbuckets = plan->nbuckets;
        return;
    }
    /* no plan of the shape (no job config): these buckets, as many as
     * the region holds (attach_region) */
    kvshm_shape_sizes(&want);
    kvs->tab.slot_size = want.slot_size;
    kvs->tab.bucket_size = want.bucket_size;
    kvs->tab.nbuckets = 0;
}

/* Options, config and environment into the table this rank opens: its
 * mode, transport, key and value sizes, slots, and (where the plugin
 * did not plan it) the size a node holds, in *size_per_node. */
int kvs_resolve(mpikvs_t *kvs, const mpikvs_options_t *opt,
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
                        KVSHM_KEY_SIZE_MAX, &kvs->tab.key_size)) ||
        (rc = pick_size(kvs, "value_size", opt->value_size,
                        plan ? plan->value_size : t ? t->value.size : 0,
                        KVSHM_VALUE_SIZE_MAX, &kvs->tab.value_size)))
        return rc;
    kvs->mode = plan ? (enum kvshm_mode)plan->mode
                : t  ? t->mode
                     : KVSHM_MODE_LOCKFREE;
    if (opt->mode && (rc = parse_mode(kvs, opt->mode, &kvs->mode)))
        return rc;
    if ((rc = pick_transport(kvs, opt, env, t)) != MPIKVS_OK)
        return rc;
    kvs->tab.slots = opt->slots_per_bucket ? opt->slots_per_bucket
                 : plan                ? plan->slots_per_bucket
                 : t                   ? t->slots_per_bucket
                                       : KVSHM_SLOTS_DEFAULT;
    if (kvs->tab.slots > KVSHM_SLOTS_MAX)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "slots_per_bucket %llu is out of range 1..%u",
                        (unsigned long long)kvs->tab.slots, KVSHM_SLOTS_MAX);
    if (kvs->layout) {
        *size_per_node = opt->size_per_node ? opt->size_per_node
                                            : kvs->job_table->data_bytes;
        kvs->near_bytes = kvs->job_table->near_bytes;
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
int kvs_agree_on_shape(mpikvs_t *kvs, uint64_t size_per_node)
{
    static const char *const what[] = {"key_size", "value_size",
                                       "slots_per_bucket", "size_per_node",
                                       "mode"};
    uint64_t mine[6] = {kvs->tab.key_size, kvs->tab.value_size, kvs->tab.slots,
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
