/*
 * stat_text.c - mpikvs-stat: the listing and a job's report as text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors_internal.h"
#include "stat_liveness.h"
#include "stat_output.h"

/* ---- the listing ---- */

enum { COL_JOB, COL_NODE, COL_TAG, COL_KIND, COL_OWNER, COL_SIZE, COL_AGE,
       COL_STATE, NCOLS };

static const char *const list_heads[NCOLS] = {
    "JOB", "NODE", "TAG", "KIND", "OWNER", "SIZE", "AGE", "JOB STATE"};

static void list_row(const struct stat_region *r, time_t now,
                     char cells[NCOLS][200])
{
    const struct stat_liveness *l = &r->liveness;

    snprintf(cells[COL_JOB], 200, "%s", r->job[0] ? r->job : "?");
    snprintf(cells[COL_NODE], 200, "%s", r->node[0] ? r->node : "?");
    snprintf(cells[COL_TAG], 200, "%s", r->tag[0] ? r->tag : r->name);
    snprintf(cells[COL_KIND], 200, "%s",
             stat_kind_name(stat_region_kind(r)));
    stat_user_name(r->st.st_uid, cells[COL_OWNER], 200);
    kvshm_format_bytes(cells[COL_SIZE], 200, (uint64_t)r->st.st_size);
    stat_format_age(cells[COL_AGE], 200, stat_region_created(r), now);
    snprintf(cells[COL_STATE], 200, "%s (%s)", stat_alive_name(l->alive),
             l->why);
}

/* Columns padded to their width, sizes right-aligned, the last one as
 * it is. */
static void print_row(FILE *f, const char *const cells[NCOLS],
                      const size_t width[NCOLS])
{
    for (int c = 0; c + 1 < NCOLS; c++)
        fprintf(f, c == COL_SIZE ? "%*s  " : "%-*s  ", (int)width[c],
                cells[c]);
    fprintf(f, "%s\n", cells[NCOLS - 1]);
}

static size_t count_jobs(const struct stat_region_list *list)
{
    size_t jobs = 0;

    for (size_t i = 0; i < list->count; i++)
        if (!list->regions[i].job[0] ||
            i == 0 || strcmp(list->regions[i].job, list->regions[i - 1].job))
            jobs++;
    return jobs;
}

void stat_text_list(FILE *f, const char *dir,
                    const struct stat_region_list *list, time_t now)
{
    char cells[NCOLS][200], when[32];
    size_t width[NCOLS], problems = 0;

    stat_format_time(when, sizeof(when), now);
    if (!list->count) {
        fprintf(f, "no mpikvs regions in %s at %s\n", dir, when);
        return;
    }
    fprintf(f, "%zu region%s of %zu job%s in %s at %s\n", list->count,
            list->count == 1 ? "" : "s", count_jobs(list),
            count_jobs(list) == 1 ? "" : "s", dir, when);
    for (int c = 0; c < NCOLS; c++)
        width[c] = strlen(list_heads[c]);
    for (size_t i = 0; i < list->count; i++) {
        list_row(&list->regions[i], now, cells);
        for (int c = 0; c < NCOLS; c++)
            if (strlen(cells[c]) > width[c])
                width[c] = strlen(cells[c]);
    }
    print_row(f, list_heads, width);
    for (size_t i = 0; i < list->count; i++) {
        const char *row[NCOLS];
        list_row(&list->regions[i], now, cells);
        for (int c = 0; c < NCOLS; c++)
            row[c] = cells[c];
        print_row(f, row, width);
        problems += list->regions[i].error != MPIKVS_OK;
    }
    if (!problems)
        return;
    fprintf(f, "\nregions that cannot be read:\n");
    for (size_t i = 0; i < list->count; i++)
        if (list->regions[i].error != MPIKVS_OK)
            fprintf(f, "  %s\n", list->regions[i].error_text);
}

/* ---- a job's report ---- */

static void print_region_line(FILE *f, const struct stat_region *r,
                              time_t now)
{
    const struct kvshm_header *h = &r->header;
    char size[32], max[32], owner[64], group[64], when[32], age[32];

    kvshm_format_bytes(size, sizeof(size), h->size);
    kvshm_format_bytes(max, sizeof(max), h->max_size);
    stat_user_name((uid_t)h->uid, owner, sizeof(owner));
    stat_group_name((gid_t)h->gid, group, sizeof(group));
    stat_format_time(when, sizeof(when), (time_t)h->created);
    stat_format_age(age, sizeof(age), (time_t)h->created, now);
    fprintf(f, "    region:    %s, %s, %s", r->name,
            stat_kind_name(h->kind), size);
    if (h->flags & KVSHM_FLAG_GROWABLE)
        fprintf(f, " (grows to %s)", max);
    fprintf(f, ", owner %s:%s mode %03o, format %u\n", owner, group,
            (unsigned)(r->st.st_mode & 0777), h->format_version);
    fprintf(f, "    created:   %s (%s ago)", when, age);
    if (h->kind == KVSHM_KIND_RMA_WINDOW && h->step != KVSHM_NO_STEP)
        fprintf(f, " by libmpikvs-rmacache in step %u\n", h->step);
    else if (h->kind == KVSHM_KIND_RMA_WINDOW)
        fprintf(f, " by libmpikvs-rmacache, outside a Slurm step\n");
    else if (h->step == KVSHM_NO_STEP)
        fprintf(f, " by libmpikvs, outside a Slurm step\n");
    else
        fprintf(f, " by spank_mpikvs for step %u\n", h->step);
}

static void print_layout(FILE *f, const struct stat_layout_report *l)
{
    const struct kvshm_job_layout *j = l->layout;
    size_t len = 4 * strlen(j->nodelist) + 1;
    char size[32], *nodes = malloc(len);

    kvshm_format_bytes(size, sizeof(size), j->dht_size);
    if (nodes)
        stat_escape(nodes, len, j->nodelist, len);
    fprintf(f, "  layout %s: %s scope, made by step %u; node %u of %u "
               "(%s), %u task%s here; %s of DHT memory per node; %s\n",
            l->region->name, stat_scope_name(j->scope), j->step,
            j->node_index, j->nnodes, nodes && nodes[0] ? nodes : "?",
            j->tasks_on_node, j->tasks_on_node == 1 ? "" : "s", size,
            j->config_text ? "with a job config" : "no job config");
    free(nodes);
    for (size_t i = 0; i < j->ntables; i++) {
        const struct kvshm_job_table *t = &j->tables[i];
        char data[32], tier[32], name[4 * sizeof(t->name) + 1],
            tag[4 * sizeof(t->data_tag) + 1],
            prefix[4 * sizeof(t->tier_prefix) + 1];
        kvshm_format_bytes(data, sizeof(data), t->data_bytes);
        kvshm_format_bytes(tier, sizeof(tier), t->tier_bytes);
        fprintf(f, "    table %s: data %s in %s",
                stat_escape(name, sizeof(name), t->name, sizeof(t->name)),
                data,
                stat_escape(tag, sizeof(tag), t->data_tag,
                            sizeof(t->data_tag)));
        if (t->tier_prefix[0])
            fprintf(f, ", tier %s in %s-index/-entries", tier,
                    stat_escape(prefix, sizeof(prefix), t->tier_prefix,
                                sizeof(t->tier_prefix)));
        fprintf(f, "\n");
    }
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_occupancy(FILE *f, const struct stat_table_report *t)
{
    const struct kvshm_occupancy *o = &t->occupancy;

    if (t->control.state != KVSHM_DATA_READY) {
        fprintf(f, "    occupancy: none: the buckets are %s (no rank has "
                   "opened the table yet)\n",
                stat_data_state_name(t->control.state));
        return;
    }
    if (!t->scanned) {
        fprintf(f, "    occupancy: not scanned (--no-scan)\n");
        return;
    }
    fprintf(f, "    occupancy: %llu slots: %llu used (%.1f%%), %llu "
               "invalid, %llu unverified, %llu free; %llu of %llu buckets "
               "full\n",
            (unsigned long long)o->slots, (unsigned long long)o->used,
            share(o->used, o->slots), (unsigned long long)o->invalid,
            (unsigned long long)o->unverified, (unsigned long long)o->free,
            (unsigned long long)o->full_buckets,
            (unsigned long long)o->buckets);
}

static void format_ratio(char *buf, size_t len, const struct stat_ratio *ratio,
                         double r)
{
    if (r < 0)
        snprintf(buf, len, "-");
    else if (ratio->mean)
        snprintf(buf, len, "%.3g", r);
    else
        snprintf(buf, len, "%.1f%%", 100.0 * r);
}

/* A group's columns: their headings and widths, each at least 7 wide
 * and as wide as the widest of the totals given (rows of counters). */
static void column_widths(const struct stat_counter_group *g,
                          const uint64_t *const *totals, size_t ntotals,
                          int *width)
{
    size_t n = g->ncounters;
    char cell[32];

    for (size_t c = 0; c < n + g->nratios; c++) {
        const char *head = c < n ? g->counters[c].label
                                 : g->ratios[c - n].label;
        width[c] = strlen(head) < 7 ? 7 : (int)strlen(head);
        for (size_t t = 0; c < n && t < ntotals; t++) {
            int digits;
            stat_counter_format(&g->counters[c], totals[t][c], cell,
                                sizeof(cell));
            digits = (int)strlen(cell);
            if (digits > width[c])
                width[c] = digits;
        }
    }
}

static void print_heads(FILE *f, const struct stat_counter_group *g,
                        const int *width)
{
    size_t n = g->ncounters;

    for (size_t c = 0; c < n + g->nratios; c++)
        fprintf(f, " %*s", width[c],
                c < n ? g->counters[c].label : g->ratios[c - n].label);
    fprintf(f, "\n");
}

/* The cells of a row of counters and its ratios; per > 0: the row is
 * what the counters grew by in per seconds, shown per second. */
static void print_cells(FILE *f, const struct stat_counter_group *g,
                        const uint64_t *row, const int *width, double per)
{
    size_t n = g->ncounters;
    char cell[32];
    double rate;

    for (size_t c = 0; c < n + g->nratios; c++) {
        if (c >= n)
            format_ratio(cell, sizeof(cell), &g->ratios[c - n],
                         stat_ratio_value(&g->ratios[c - n], row));
        else if (per > 0 && !stat_counter_rate(&g->counters[c], row[c], per,
                                               &rate))
            snprintf(cell, sizeof(cell), "-");
        else if (per > 0)
            snprintf(cell, sizeof(cell),
                     g->counters[c].kind == STAT_COUNT ? "%.1f" : "%.3g",
                     rate);
        else
            stat_counter_format(&g->counters[c], row[c], cell, sizeof(cell));
        fprintf(f, " %*s", width[c], cell);
    }
    fprintf(f, "\n");
}

/* One group's table: a row per rank (its MPI rank, when its block names
 * one, and its place on the node), then the node's total. */
static void print_group(FILE *f, const struct stat_counter_values *v)
{
    const struct stat_counter_group *g = v->group;
    const uint64_t *total = v->total;
    int width[g->ncounters + g->nratios];
    char rank[24];

    if (v->nranks == 0) {
        fprintf(f, "    %s counters: none yet (nothing counted)\n",
                g->title);
        return;
    }
    column_widths(g, &total, 1, width);
    fprintf(f, "    %s counters:\n      %5s %5s", g->title, "rank", "local");
    print_heads(f, g, width);
    for (uint64_t r = 0; r < v->nranks; r++) {
        if (v->mpi_ranks && v->mpi_ranks[r] >= 0)
            snprintf(rank, sizeof(rank), "%lld", (long long)v->mpi_ranks[r]);
        else
            snprintf(rank, sizeof(rank), "-");
        fprintf(f, "      %5s %5llu", rank, (unsigned long long)r);
        print_cells(f, g, &v->ranks[r * g->ncounters], width, 0);
    }
    fprintf(f, "      %11s", "node");
    print_cells(f, g, v->total, width, 0);
}

/* The job's total of a table, a line per group, and under --watch the
 * rates since the previous printing. */
static void print_total(FILE *f, const struct stat_table_total *t)
{
    for (size_t gi = 0; gi < stat_ncounter_groups; gi++) {
        const struct stat_counter_values *v = &t->counters[gi];
        const struct stat_counter_group *g = v->group;
        int width[g->ncounters + g->nratios];
        const uint64_t *totals[1] = {v->total};

        column_widths(g, totals, 1, width);
        fprintf(f, "    %s counters:\n      %11s", g->title, "");
        print_heads(f, g, width);
        fprintf(f, "      %11s", "job");
        print_cells(f, g, v->total, width, 0);
        if (t->interval) {
            char per[24];
            snprintf(per, sizeof(per), "/s (%.1fs)", t->seconds);
            fprintf(f, "      %11s", per);
            print_cells(f, g, t->interval[gi].total, width, t->seconds);
        }
    }
}

static void print_tier(FILE *f, const char *indent,
                       const struct stat_tier_report *t)
{
    const struct kvshm_tier_stats *s = &t->stats;
    char live[32], dead[32], used[32], region[32], max[32], writer[48];

    kvshm_format_bytes(live, sizeof(live), s->live_bytes);
    kvshm_format_bytes(dead, sizeof(dead), s->dead_bytes);
    kvshm_format_bytes(used, sizeof(used), s->entries_top);
    kvshm_format_bytes(region, sizeof(region), s->entries_size);
    kvshm_format_bytes(max, sizeof(max),
                       t->entries && t->entries->error == MPIKVS_OK
                           ? t->entries->header.max_size
                           : s->entries_size);
    if (s->writer_pid)
        snprintf(writer, sizeof(writer), "written by pid %llu",
                 (unsigned long long)s->writer_pid);
    else
        snprintf(writer, sizeof(writer), "no writer");
    fprintf(f, "%stier %s: %llu entries in %llu buckets, load factor "
               "%.2f; %s live, %s dead; %s used of an entries region of %s "
               "(at most %s); %llu updates, %llu rebuilds (%llu skipped), "
               "%llu growths, %llu clears; %llu entries dropped, %llu "
               "repairs; %s\n",
            indent, t->prefix, (unsigned long long)s->entries,
            (unsigned long long)s->nbuckets, s->load_factor, live, dead,
            used, region, max, (unsigned long long)s->updates,
            (unsigned long long)s->rebuilds,
            (unsigned long long)s->rebuild_failures,
            (unsigned long long)s->growths, (unsigned long long)s->clears,
            (unsigned long long)s->dropped, (unsigned long long)s->repairs,
            writer);
}

static void print_table(FILE *f, const struct stat_node_report *n,
                        const struct stat_table_report *t, time_t now)
{
    const struct kvshm_data_control *c = &t->control;

    fprintf(f, "  table %s\n", t->table[0] ? t->table : "?");
    print_region_line(f, t->region, now);
    if (c->state == KVSHM_DATA_READY) {
        fprintf(f, "    config:    %llu-byte keys, %llu-byte values; %llu "
                   "slots of %llu B per bucket; %llu buckets; mode %s; "
                   "counters for %llu ranks\n",
                (unsigned long long)c->key_size,
                (unsigned long long)c->value_size,
                (unsigned long long)c->slots_per_bucket,
                (unsigned long long)c->slot_size,
                (unsigned long long)c->nbuckets, stat_mode_name(c->mode),
                (unsigned long long)c->max_ranks);
    } else {
        fprintf(f, "    config:    %s; counters for %llu ranks\n",
                stat_data_state_name(c->state),
                (unsigned long long)c->max_ranks);
    }
    /* written by the node's first rank when it opens the table */
    if (c->nnodes)
        fprintf(f, "    job:       this is node %u of the %u nodes of the "
                   "job's last opening\n",
                c->node_index, c->nnodes);
    /* written by each rank when its open has its transport */
    if (t->transport[0])
        fprintf(f, "    transport: %s (to other nodes, as the ranks' "
                   "latest opens use it)\n",
                t->transport);
    print_occupancy(f, t);
    for (size_t g = 0; g < stat_ncounter_groups; g++)
        print_group(f, &t->counters[g]);
    for (size_t i = 0; i < n->ntiers; i++)
        if (stat_report_table_of_tier(n, &n->tiers[i]) == t)
            print_tier(f, "    ", &n->tiers[i]);
}

static void print_rma(FILE *f, const struct stat_rma_report *t, time_t now)
{
    const struct kvshm_rma_control *c = &t->control;
    char ring[32], used[32];

    kvshm_format_bytes(ring, sizeof(ring), c->ring_size);
    fprintf(f, "  rmacache window %s%s%s\n", t->name[0] ? "'" : "",
            t->name[0] ? t->name : "(no name)", t->name[0] ? "'" : "");
    print_region_line(f, t->region, now);
    fprintf(f, "    config:    %llu of the window's %llu ranks on this node; "
               "a segment of %s a rank\n",
            (unsigned long long)c->nranks, (unsigned long long)c->win_ranks,
            ring);
    for (uint64_t r = 0; r < c->nranks; r++) {
        const struct stat_rma_rank *k = &t->ranks[r];
        kvshm_format_bytes(used, sizeof(used), k->published_bytes);
        if (k->pid)
            fprintf(f, "    rank %-4llu  window rank %llu, pid %llu, mode %s; "
                       "%s published\n",
                    (unsigned long long)r, (unsigned long long)k->win_rank,
                    (unsigned long long)k->pid, kvshm_rma_mode_name(k->mode),
                    used);
        else
            fprintf(f, "    rank %-4llu  not attached\n",
                    (unsigned long long)r);
    }
    print_group(f, &t->counters);
}

void stat_text_report(FILE *f, const char *dir,
                      const struct stat_job_report *rep, time_t now)
{
    char when[32];

    stat_format_time(when, sizeof(when), now);
    fprintf(f, "job %s: %s (%s); %zu node%s in %s at %s\n", rep->job,
            stat_alive_name(rep->liveness.alive), rep->liveness.why,
            rep->nnodes, rep->nnodes == 1 ? "" : "s", dir, when);
    for (size_t i = 0; i < rep->nnodes; i++) {
        const struct stat_node_report *n = &rep->nodes[i];
        fprintf(f, "\nnode %s\n", n->node);
        for (size_t j = 0; j < n->nlayouts; j++)
            print_layout(f, &n->layouts[j]);
        for (size_t j = 0; j < n->ntables; j++)
            print_table(f, n, &n->tables[j], now);
        for (size_t j = 0; j < n->ntiers; j++)
            if (!stat_report_table_of_tier(n, &n->tiers[j]))
                print_tier(f, "  ", &n->tiers[j]);
        for (size_t j = 0; j < n->nrma; j++)
            print_rma(f, &n->rma[j], now);
    }
    for (size_t i = 0; i < rep->totals.ntables; i++) {
        const struct stat_table_total *t = &rep->totals.tables[i];
        fprintf(f, "\njob total of table %s: %zu node%s\n",
                t->table[0] ? t->table : "?", t->nnodes,
                t->nnodes == 1 ? "" : "s");
        print_total(f, t);
    }
    /* the regions that could not be read are the caller's to say, on
     * standard error */
}
