/*
 * stat_totals.h - mpikvs-stat: a job's counters summed over the nodes of
 * its report, one total per table, and, with --watch, what they grew by
 * since the previous printing (the rates of the interval).
 *
 * The job's total is the sum of the nodes whose regions this machine
 * holds: all of them for virtual nodes or a node that is the job's only
 * one; on a cluster, mpikvs-stat on each node sees its own.
 */
#ifndef MPIKVS_STAT_TOTALS_H
#define MPIKVS_STAT_TOTALS_H

#include <stddef.h>

#include "stat_counters.h"

struct stat_job_report;

struct stat_table_total {
    char                        table[4 * KVSHM_TABLE_TAG_MAX + 1];
    size_t                      nnodes;     /* whose regions it sums */
    /* stat_ncounter_groups groups of totals (no ranks) */
    struct stat_counter_values *counters;
    /* the seconds since the previous printing, and what each counter
     * grew by in them (a group of totals again), or 0 and NULL when
     * there is no previous printing to compare with */
    double                      seconds;
    struct stat_counter_values *interval;
};

struct stat_job_totals {
    struct stat_table_total *tables;
    size_t                   ntables;
};

/* The totals of the tables of rep (their counters read), in the order
 * they first appear.  Returns 0, or -1 when out of memory (*out is then
 * empty). */
int stat_totals_build(const struct stat_job_report *rep,
                      struct stat_job_totals *out);

/* Give each table of now its interval: what it grew by since prev,
 * taken seconds earlier.  A table prev lacks, or one whose counters went
 * down (a region made anew), gets none.  Returns 0, or -1 when out of
 * memory. */
int stat_totals_interval(struct stat_job_totals *now,
                         const struct stat_job_totals *prev, double seconds);

void stat_totals_free(struct stat_job_totals *totals);

#endif /* MPIKVS_STAT_TOTALS_H */
