/*
 * options.h - the command line of mpikvs-reactive-transport.
 */
#ifndef MPIKVS_RT_OPTIONS_H
#define MPIKVS_RT_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "rt.h"

/* Which runs one invocation makes. */
enum rt_mode {
    RT_MODE_CACHED = 0,    /* the default: with the cache */
    RT_MODE_REFERENCE,     /* --no-cache: every cell through CVODE */
    RT_MODE_COMPARE        /* --compare: the reference, then the cached
                            * run (with --interpolate: the exact-only
                            * cached run, then the interpolating one) */
};

/* What a cache hit makes of the cached result (see cache.h). */
enum rt_reuse {
    RT_REUSE_CHANGE = 0,   /* the cell's own input plus the cached change */
    RT_REUSE_STATE         /* the cached state after dt, as it is */
};

struct rt_options {
    int           nx, ny;       /* cells; rows (y) are split over ranks */
    int           steps;
    double        dt;           /* seconds of chemistry per step */
    int           batch;        /* cells per mpikvs batch; 0: one row */
    enum rt_mode  mode;
    enum rt_reuse reuse;
    const char   *config;       /* job config; NULL: $MPIKVS_CONFIG or
                                 * the job's (Slurm --dht-config) */
    const char   *table;        /* NULL: the config's first table */
    const char   *csv;          /* run summary */
    const char   *plot;         /* picture, .svg or .png; NULL: none */
    const char   *fields;       /* final fields as text; NULL: none */
    bool          quiet;        /* no progress lines */
    bool          interpolate;  /* on an exact miss, interpolate the
                                 * changes of the key's neighbourhood */
    int           min_members;  /* --interpolate needs at least these */
    double        max_distance; /* ... within this distance (mpikvs's
                                 * metric); 0: any */
    double        verify;       /* fraction of hits to check with CVODE;
                                 * 0: none */
};

/* Parse argv.  Returns 0 to run, 1 when --help or --version was handled
 * (printed on out when print is true), or -1 on bad usage with the
 * message in err.  Only rank 0 passes print = true, so that a message is
 * not repeated by every rank. */
int rt_parse_options(int argc, char **argv, struct rt_options *o, bool print,
                     FILE *out, struct rt_err *err);

const char *rt_reuse_name(enum rt_reuse r);

#endif /* MPIKVS_RT_OPTIONS_H */
