/*
 * report.h - what rank 0 makes of the runs: the summary on standard
 * output, the CSV of the runs, the final fields as text, and the picture
 * of the final fields (gnuplot, run as a child process).
 */
#ifndef MPIKVS_RT_REPORT_H
#define MPIKVS_RT_REPORT_H

#include <stdio.h>

#include "grid.h"
#include "options.h"
#include "rt.h"
#include "run.h"

struct report {
    const struct rt_options *o;
    int         nranks;
    const char *config;          /* how the job config was given */
    const char *transport;       /* the cache's, to other nodes */
    const struct run_result *reference;   /* NULL unless run */
    const struct run_result *cached;      /* exact-only; NULL unless run */
    const struct run_result *interpolating; /* --interpolate; NULL unless
                                             * run */
    const struct run_error  *error;       /* --compare only: cached's */
    const struct run_error  *interpolating_error;  /* ... interpolating's */
    const cell_t *fields;        /* the last run's final grid, or NULL */
};

/* The summary for people. */
void report_summary(FILE *out, const struct report *r);

/* The runs as CSV: a header and one line per run.  0 or -1. */
int report_csv(const struct report *r, const char *path,
               struct rt_err *err);

/* The final fields as text, one cell a line, every digit kept, so that
 * two runs can be compared with cmp(1).  0 or -1. */
int report_fields(const struct report *r, const char *path,
                  struct rt_err *err);

/* The picture: gnuplot ($GNUPLOT, else gnuplot in PATH) draws the six
 * final fields into path (.svg or .png).  0 or -1 (gnuplot missing or
 * failed: err says what to do). */
int report_plot(const struct report *r, const char *path,
                struct rt_err *err);

#endif /* MPIKVS_RT_REPORT_H */
