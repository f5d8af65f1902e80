/*
 * stat_json.c - mpikvs-stat: the listing and a job's report as JSON.
 *
 * Every builder returns a new reference or NULL when out of memory; a
 * NULL anywhere makes the whole document NULL (json_pack's "o" refuses a
 * NULL value, json_array_append_new and json_object_set_new free the
 * value they fail to take).  Counts are JSON integers, the statistics
 * that hold doubles (err_sum, err_max) and ratios reals (ratios null
 * when there is nothing to divide by, a largest double's rate null),
 * times seconds since the
 * epoch, sizes bytes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stat_liveness.h"
#include "stat_output.h"

#define INT(x) ((json_int_t)(x))

/* Append item (a new reference, or NULL) to *array; on failure drop the
 * whole array, so that whoever packs it fails too. */
static void append(json_t **array, json_t *item)
{
    if (!*array) {
        json_decref(item);
    } else if (json_array_append_new(*array, item) != 0) {
        json_decref(*array);
        *array = NULL;
    }
}

static json_t *header_json(const struct stat_region *r, time_t now)
{
    const struct kvshm_header *h = &r->header;
    char owner[64], group[64], mode[8];

    stat_user_name((uid_t)h->uid, owner, sizeof(owner));
    stat_group_name((gid_t)h->gid, group, sizeof(group));
    snprintf(mode, sizeof(mode), "%03o", (unsigned)(r->st.st_mode & 0777));
    return json_pack("{s:s, s:s, s:i, s:I, s:I, s:b, s:I, s:I, s:s, s:I, "
                     "s:s, s:I, s:o, s:s}",
                     "name", r->name, "kind", stat_kind_name(h->kind),
                     "format_version", (int)h->format_version,
                     "size", INT(h->size), "max_size", INT(h->max_size),
                     "growable", (h->flags & KVSHM_FLAG_GROWABLE) != 0,
                     "created", INT(h->created),
                     "age", INT((long long)now - h->created),
                     "owner", owner, "uid", INT(h->uid), "group", group,
                     "gid", INT(h->gid),
                     "step", h->step == KVSHM_NO_STEP ? json_null()
                                                      : json_integer(h->step),
                     "mode", mode);
}

static int set_liveness(json_t *obj, const struct stat_liveness *l)
{
    return json_object_set_new(obj, "job_state",
                               json_string(stat_alive_name(l->alive))) ||
           json_object_set_new(obj, "job_state_why", json_string(l->why));
}

/* ---- the listing ---- */

static json_t *list_entry(const struct stat_region *r, time_t now)
{
    char owner[64];
    json_t *o;

    stat_user_name(r->st.st_uid, owner, sizeof(owner));
    o = json_pack("{s:s, s:s?, s:s?, s:s?, s:s, s:s, s:I, s:I, s:I, s:I, "
                  "s:I, s:b, s:o}",
                  "name", r->name, "job", r->job[0] ? r->job : NULL,
                  "node", r->node[0] ? r->node : NULL,
                  "tag", r->tag[0] ? r->tag : NULL,
                  "kind", stat_kind_name(stat_region_kind(r)),
                  "owner", owner, "uid", INT(r->st.st_uid),
                  "size", INT(r->st.st_size),
                  "created", INT(stat_region_created(r)),
                  "age", INT((long long)now - stat_region_created(r)),
                  "mappers", INT(r->mappers),
                  "unlinked", (int)r->unlinked,
                  "error", r->error == MPIKVS_OK
                               ? json_null()
                               : json_string(r->error_text));
    if (o && set_liveness(o, &r->liveness) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* -1: the document could not be built (memory, or a text that is not
 * UTF-8, such as a shm directory's name); -2: f failed (errno). */
static int dump(FILE *f, json_t *doc, bool one_line)
{
    int rc;

    if (!doc)
        return -1;
    rc = json_dumpf(doc, f, one_line ? JSON_COMPACT : JSON_INDENT(2));
    json_decref(doc);
    if (rc != 0 || fputc('\n', f) == EOF || fflush(f) != 0)
        return -2;
    return 0;
}

int stat_json_list(FILE *f, const char *dir,
                   const struct stat_region_list *list, time_t now,
                   bool one_line)
{
    json_t *regions = json_array(), *doc;

    for (size_t i = 0; i < list->count; i++)
        append(&regions, list_entry(&list->regions[i], now));
    doc = json_pack("{s:s, s:I, s:o}", "shm_dir", dir, "time", INT(now),
                    "regions", regions);
    return dump(f, doc, one_line);
}

/* ---- a job's report ---- */

static json_t *layout_json(const struct stat_layout_report *l)
{
    const struct kvshm_job_layout *j = l->layout;
    json_t *tables = json_array(), *doc;
    size_t len = 4 * strlen(j->nodelist) + 1;
    char *nodes = malloc(len);

    for (size_t i = 0; i < j->ntables; i++) {
        const struct kvshm_job_table *t = &j->tables[i];
        char name[4 * sizeof(t->name) + 1], tag[4 * sizeof(t->data_tag) + 1],
            prefix[4 * sizeof(t->tier_prefix) + 1];
        stat_escape(name, sizeof(name), t->name, sizeof(t->name));
        stat_escape(tag, sizeof(tag), t->data_tag, sizeof(t->data_tag));
        stat_escape(prefix, sizeof(prefix), t->tier_prefix,
                    sizeof(t->tier_prefix));
        append(&tables,
               json_pack("{s:s, s:s, s:I, s:s?, s:I}", "name", name,
                         "data_tag", tag, "data_bytes",
                         INT(t->data_bytes), "tier_prefix",
                         prefix[0] ? prefix : NULL,
                         "tier_bytes", INT(t->tier_bytes)));
    }
    if (!nodes) {
        json_decref(tables);
        return NULL;
    }
    stat_escape(nodes, len, j->nodelist, len);
    doc = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:b, s:o}",
                     "region", l->region->name,
                     "scope", stat_scope_name(j->scope), "step", INT(j->step),
                     "nnodes", INT(j->nnodes), "node_index",
                     INT(j->node_index), "tasks_on_node",
                     INT(j->tasks_on_node), "dht_size", INT(j->dht_size),
                     "nodelist", nodes, "has_config",
                     j->config_text != NULL, "tables", tables);
    free(nodes);
    return doc;
}

static json_t *ratio_json(const struct stat_ratio *r, const uint64_t *row)
{
    double v = stat_ratio_value(r, row);

    return v < 0 ? json_null() : json_real(v);
}

/* A row of a group: its counters and ratios, by their JSON names, after
 * the rank's place on the node and its MPI rank (null: unknown) (rank <
 * 0: a total, neither). */
static json_t *row_json(const struct stat_counter_group *g,
                        const uint64_t *row, long long rank,
                        long long mpi_rank)
{
    json_t *o = json_object();

    if (o && rank >= 0 &&
        (json_object_set_new(o, "rank", json_integer(INT(rank))) != 0 ||
         json_object_set_new(o, "mpi_rank",
                             mpi_rank >= 0 ? json_integer(INT(mpi_rank))
                                           : json_null()) != 0)) {
        json_decref(o);
        o = NULL;
    }

    for (size_t i = 0; o && i < g->ncounters; i++)
        if (json_object_set_new(o, g->counters[i].key,
                                g->counters[i].kind == STAT_COUNT
                                    ? json_integer(INT(row[i]))
                                    : json_real(stat_counter_number(
                                          &g->counters[i], row[i]))) != 0) {
            json_decref(o);
            o = NULL;
        }
    for (size_t i = 0; o && i < g->nratios; i++)
        if (json_object_set_new(o, g->ratios[i].key,
                                ratio_json(&g->ratios[i], row)) != 0) {
            json_decref(o);
            o = NULL;
        }
    return o;
}

static json_t *group_json(const struct stat_counter_values *v)
{
    size_t n = v->group->ncounters;
    json_t *ranks = json_array();

    for (uint64_t r = 0; r < v->nranks; r++)
        append(&ranks, row_json(v->group, &v->ranks[r * n], (long long)r,
                                v->mpi_ranks ? (long long)v->mpi_ranks[r]
                                             : -1));
    return json_pack("{s:o, s:o}", "ranks", ranks, "node",
                     row_json(v->group, v->total, -1, -1));
}

/* What the counters of a group grew by in seconds, per second, and the
 * ratios of that growth. */
static json_t *rates_json(const struct stat_counter_group *g,
                          const uint64_t *grown, double seconds)
{
    json_t *o = json_object();
    double rate;

    for (size_t i = 0; o && i < g->ncounters; i++)
        if (json_object_set_new(o, g->counters[i].key,
                                stat_counter_rate(&g->counters[i], grown[i],
                                                  seconds, &rate)
                                    ? json_real(rate)
                                    : json_null()) != 0) {
            json_decref(o);
            o = NULL;
        }
    for (size_t i = 0; o && i < g->nratios; i++)
        if (json_object_set_new(o, g->ratios[i].key,
                                ratio_json(&g->ratios[i], grown)) != 0) {
            json_decref(o);
            o = NULL;
        }
    return o;
}

/* A table's total over the nodes, and its rates since the previous
 * printing (null when none). */
static json_t *total_json(const struct stat_table_total *t)
{
    json_t *counters = json_object(), *rates = NULL;

    for (size_t g = 0; counters && g < stat_ncounter_groups; g++)
        if (json_object_set_new(counters, t->counters[g].group->key,
                                row_json(t->counters[g].group,
                                         t->counters[g].total, -1, -1)) !=
            0) {
            json_decref(counters);
            counters = NULL;
        }
    if (t->interval) {
        rates = json_pack("{s:f}", "seconds", t->seconds);
        for (size_t g = 0; rates && g < stat_ncounter_groups; g++)
            if (json_object_set_new(rates, t->interval[g].group->key,
                                    rates_json(t->interval[g].group,
                                               t->interval[g].total,
                                               t->seconds)) != 0) {
                json_decref(rates);
                rates = NULL;
            }
    } else {
        rates = json_null();
    }
    if (!counters || !rates) {
        json_decref(counters);
        json_decref(rates);
        return NULL;
    }
    return json_pack("{s:s, s:I, s:o, s:o}", "table", t->table, "nnodes",
                     INT(t->nnodes), "counters", counters, "rates", rates);
}

static json_t *occupancy_json(const struct stat_table_report *t)
{
    const struct kvshm_occupancy *o = &t->occupancy;

    if (!t->scanned)
        return json_null();
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "buckets",
                     INT(o->buckets), "slots", INT(o->slots), "used",
                     INT(o->used), "invalid", INT(o->invalid), "unverified",
                     INT(o->unverified), "free", INT(o->free),
                     "full_buckets", INT(o->full_buckets));
}

static json_t *config_json(const struct kvshm_data_control *c)
{
    if (c->state != KVSHM_DATA_READY)
        return json_null();
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:I}",
                     "key_size", INT(c->key_size), "value_size",
                     INT(c->value_size), "slots_per_bucket",
                     INT(c->slots_per_bucket), "slot_size",
                     INT(c->slot_size), "bucket_size", INT(c->bucket_size),
                     "buckets", INT(c->nbuckets), "mode",
                     stat_mode_name(c->mode), "nnodes", INT(c->nnodes),
                     "node_index", INT(c->node_index));
}

static json_t *table_json(const struct stat_table_report *t, time_t now)
{
    json_t *counters = json_object();

    for (size_t g = 0; counters && g < stat_ncounter_groups; g++)
        if (json_object_set_new(counters, t->counters[g].group->key,
                                group_json(&t->counters[g])) != 0) {
            json_decref(counters);
            counters = NULL;
        }
    return json_pack("{s:s, s:o, s:s, s:I, s:o, s:s?, s:o, s:o}",
                     "table", t->table, "region",
                     header_json(t->region, now), "state",
                     stat_data_state_name(t->control.state), "max_ranks",
                     INT(t->control.max_ranks), "config",
                     config_json(&t->control), "transport",
                     t->transport[0] ? t->transport : NULL, "occupancy",
                     occupancy_json(t), "counters", counters);
}

static json_t *tier_json(const struct stat_node_report *n,
                         const struct stat_tier_report *t)
{
    const struct stat_table_report *table = stat_report_table_of_tier(n, t);
    const struct kvshm_tier_stats *s = &t->stats;

    return json_pack("{s:s, s:s?, s:s?, s:s?, s:I, s:I, s:f, s:I, s:I, "
                     "s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
                     "s:o}",
                     "prefix", t->prefix, "table",
                     table ? table->table : NULL, "index_region",
                     t->index ? t->index->name : NULL, "entries_region",
                     t->entries ? t->entries->name : NULL, "entries",
                     INT(s->entries), "buckets", INT(s->nbuckets),
                     "load_factor", s->load_factor, "live_bytes",
                     INT(s->live_bytes), "dead_bytes", INT(s->dead_bytes),
                     "used_bytes", INT(s->entries_top), "region_bytes",
                     INT(s->entries_size), "max_region_bytes",
                     t->entries && t->entries->error == MPIKVS_OK
                         ? json_integer(INT(t->entries->header.max_size))
                         : json_null(),
                     "updates", INT(s->updates), "rebuilds",
                     INT(s->rebuilds), "rebuild_failures",
                     INT(s->rebuild_failures), "growths", INT(s->growths),
                     "clears", INT(s->clears), "dropped",
                     INT(s->dropped), "repairs", INT(s->repairs),
                     "writer_pid",
                     s->writer_pid ? json_integer(INT(s->writer_pid))
                                   : json_null());
}

static json_t *rma_json(const struct stat_rma_report *t, time_t now)
{
    const struct kvshm_rma_control *c = &t->control;
    json_t *ranks = json_array();

    for (uint64_t r = 0; r < c->nranks; r++) {
        const struct stat_rma_rank *k = &t->ranks[r];
        append(&ranks,
               k->pid ? json_pack("{s:I, s:I, s:I, s:s, s:I}", "rank",
                                  INT(r), "window_rank", INT(k->win_rank),
                                  "pid", INT(k->pid), "mode",
                                  kvshm_rma_mode_name(k->mode),
                                  "published_bytes",
                                  INT(k->published_bytes))
                      : json_pack("{s:I, s:n}", "rank", INT(r), "pid"));
    }
    return json_pack("{s:s?, s:o, s:I, s:I, s:I, s:o, s:o}", "window",
                     t->name[0] ? t->name : NULL, "region",
                     header_json(t->region, now), "nranks", INT(c->nranks),
                     "window_ranks", INT(c->win_ranks), "segment_bytes",
                     INT(c->ring_size), "ranks", ranks, "counters",
                     group_json(&t->counters));
}

static json_t *node_json(const struct stat_node_report *n, time_t now)
{
    json_t *layouts = json_array(), *tables = json_array(),
           *tiers = json_array(), *rma = json_array();

    for (size_t i = 0; i < n->nlayouts; i++)
        append(&layouts, layout_json(&n->layouts[i]));
    for (size_t i = 0; i < n->ntables; i++)
        append(&tables, table_json(&n->tables[i], now));
    for (size_t i = 0; i < n->ntiers; i++)
        append(&tiers, tier_json(n, &n->tiers[i]));
    for (size_t i = 0; i < n->nrma; i++)
        append(&rma, rma_json(&n->rma[i], now));
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "node", n->node,
                     "layouts", layouts, "tables", tables, "tiers", tiers,
                     "rmacache", rma);
}

static json_t *problem_json(const struct stat_problem *p)
{
    return json_pack("{s:s?, s:s, s:s}", "region",
                     p->region ? p->region->name : NULL, "error",
                     mpikvs_strerror(p->code), "text", p->text);
}

int stat_json_report(FILE *f, const char *dir,
                     const struct stat_job_report *rep, time_t now,
                     bool one_line)
{
    json_t *nodes = json_array(), *problems = json_array(),
           *totals = json_array(), *doc;

    for (size_t i = 0; i < rep->nnodes; i++)
        append(&nodes, node_json(&rep->nodes[i], now));
    for (size_t i = 0; i < rep->nproblems; i++)
        append(&problems, problem_json(&rep->problems[i]));
    for (size_t i = 0; i < rep->totals.ntables; i++)
        append(&totals, total_json(&rep->totals.tables[i]));
    doc = json_pack("{s:s, s:I, s:s, s:o, s:o, s:o}", "shm_dir", dir, "time",
                    INT(now), "job", rep->job, "nodes", nodes, "totals",
                    totals, "problems", problems);
    if (doc && set_liveness(doc, &rep->liveness) != 0) {
        json_decref(doc);
        doc = NULL;
    }
    return dump(f, doc, one_line);
}
