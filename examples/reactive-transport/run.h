/*
 * run.h - one simulation run (transport, then chemistry, step after
 * step), its timing, and the comparison of two runs' final fields.
 */
#ifndef MPIKVS_RT_RUN_H
#define MPIKVS_RT_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "chemistry.h"
#include "grid.h"
#include "options.h"
#include "rt.h"

/* Set by the SIGINT/SIGTERM handler; a run stops at the end of the step,
 * on every rank at once, so that the cache is still closed. */
extern volatile sig_atomic_t rt_stop_signal;

/* A run as the report shows it.  Times are the largest of any rank (the
 * run waits for its slowest rank); counts are sums over the ranks. */
struct run_result {
    bool     cached;
    bool     interpolating;    /* cached, with --interpolate */
    int      steps;            /* steps made */
    double   total_s;          /* wall time of the whole run */
    double   chemistry_s;      /* keys, DHT, CVODE: the part the cache cuts */
    double   transport_s;      /* halo rows and advection */
    double   sync_s;           /* waiting for the others (the fence) */
    double   dht_s;            /* in mpikvs calls, part of chemistry_s */
    uint64_t cell_steps;       /* cells times steps */
    struct cache_counts counts;   /* cached run; the reference solves all */
    struct chem_work    work;
    uint64_t evictions, invalidations;   /* the DHT's, during the run */
    struct cache_stats dht;    /* the DHT's, during the run (its
                                * verify_error_max: since the open) */
};

/* Run o->steps steps from the initial state (collective).  cache NULL
 * is the reference run: every cell goes through CVODE; interpolate: a
 * cached run that interpolates its exact misses.  A failure on
 * any rank stops every rank after the step; the failing rank's err says
 * why, the others' that another rank failed.  Returns 0 or -1. */
int run_simulation(const struct rt_options *o, struct grid *g,
                   struct chem_solver *s, struct rt_cache *cache,
                   bool interpolate, struct run_result *r,
                   struct rt_err *err);

/* The difference of two runs' final fields (rows of this rank). */
struct run_error {
    double max_rel;            /* the largest of per_field */
    int    field;              /* where: chem_field index */
    int    x, y;               /* and cell */
    double per_field[CHEM_NSTATE];  /* max |run - ref| / max |ref| */
};

/* Compare this rank's cells of g with ref (the same rows of the
 * reference run), over every rank (collective). */
void run_compare(const struct grid *g, const cell_t *ref,
                 struct run_error *e);

#endif /* MPIKVS_RT_RUN_H */
