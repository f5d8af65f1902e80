/*
 * stat_totals.c - mpikvs-stat: a job's totals per table, and their
 * growth between two printings of --watch.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stat_report.h"
#include "stat_totals.h"

/* Groups of totals only, all zero; NULL when out of memory. */
static struct stat_counter_values *new_groups(void)
{
    struct stat_counter_values *v = calloc(stat_ncounter_groups, sizeof(*v));

    for (size_t g = 0; v && g < stat_ncounter_groups; g++) {
        v[g].group = stat_counter_groups[g];
        v[g].total = calloc(v[g].group->ncounters, sizeof(uint64_t));
        if (!v[g].total) {
            stat_counters_free(v);
            free(v);
            return NULL;
        }
    }
    return v;
}

static void free_groups(struct stat_counter_values *v)
{
    if (v)
        stat_counters_free(v);
    free(v);
}

static struct stat_table_total *total_of(struct stat_job_totals *t,
                                         const char *table)
{
    struct stat_table_total *p;

    for (size_t i = 0; i < t->ntables; i++)
        if (strcmp(t->tables[i].table, table) == 0)
            return &t->tables[i];
    p = realloc(t->tables, (t->ntables + 1) * sizeof(*p));
    if (!p)
        return NULL;
    t->tables = p;
    p = &t->tables[t->ntables];
    memset(p, 0, sizeof(*p));
    snprintf(p->table, sizeof(p->table), "%s", table);
    if (!(p->counters = new_groups()))
        return NULL;
    t->ntables++;
    return p;
}

int stat_totals_build(const struct stat_job_report *rep,
                      struct stat_job_totals *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < rep->nnodes; i++) {
        const struct stat_node_report *n = &rep->nodes[i];
        for (size_t j = 0; j < n->ntables; j++) {
            const struct stat_table_report *t = &n->tables[j];
            struct stat_table_total *sum;
            if (!t->counters)   /* not laid out: nothing counted */
                continue;
            if (!(sum = total_of(out, t->table))) {
                stat_totals_free(out);
                return -1;
            }
            sum->nnodes++;
            for (size_t g = 0; g < stat_ncounter_groups; g++)
                for (size_t c = 0; c < sum->counters[g].group->ncounters; c++)
                    stat_counter_combine(&sum->counters[g].group->counters[c],
                                         &sum->counters[g].total[c],
                                         t->counters[g].total[c]);
        }
    }
    return 0;
}

/* What now's counters grew by since prev's, into d; false when one went
 * down.  A sum of doubles grows as a double; a largest double is now's
 * (a rate of it is shown as none). */
static bool growth(const struct stat_counter_values *now,
                   const struct stat_counter_values *prev,
                   struct stat_counter_values *d)
{
    for (size_t g = 0; g < stat_ncounter_groups; g++)
        for (size_t c = 0; c < now[g].group->ncounters; c++) {
            const struct stat_counter *k = &now[g].group->counters[c];
            double grown;
            switch (k->kind) {
            case STAT_DOUBLE_MAX:
                d[g].total[c] = now[g].total[c];
                break;
            case STAT_DOUBLE_SUM:
                grown = stat_counter_number(k, now[g].total[c]) -
                        stat_counter_number(k, prev[g].total[c]);
                if (grown < 0)
                    return false;
                memcpy(&d[g].total[c], &grown, sizeof(grown));
                break;
            default:
                if (now[g].total[c] < prev[g].total[c])
                    return false;
                d[g].total[c] = now[g].total[c] - prev[g].total[c];
            }
        }
    return true;
}

int stat_totals_interval(struct stat_job_totals *now,
                         const struct stat_job_totals *prev, double seconds)
{
    if (seconds <= 0)
        return 0;
    for (size_t i = 0; i < now->ntables; i++) {
        struct stat_table_total *t = &now->tables[i];
        const struct stat_table_total *p = NULL;
        for (size_t j = 0; !p && j < prev->ntables; j++)
            if (strcmp(prev->tables[j].table, t->table) == 0)
                p = &prev->tables[j];
        if (!p)
            continue;
        if (!(t->interval = new_groups()))
            return -1;
        if (growth(t->counters, p->counters, t->interval)) {
            t->seconds = seconds;
        } else {
            free_groups(t->interval);
            t->interval = NULL;
        }
    }
    return 0;
}

void stat_totals_free(struct stat_job_totals *totals)
{
    for (size_t i = 0; i < totals->ntables; i++) {
        free_groups(totals->tables[i].counters);
        free_groups(totals->tables[i].interval);
    }
    free(totals->tables);
    memset(totals, 0, sizeof(*totals));
}
