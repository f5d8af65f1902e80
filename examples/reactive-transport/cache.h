/*
 * cache.h - libmpikvs as the surrogate cache of the chemistry.
 *
 * The key of a cell is its input, rounded by mpikvs_round_key() with the
 * digits of the job config: the six amounts of the cell and the time
 * step, in this order (CACHE_KEY_FIELDS doubles):
 *
 *   Ca, Mg, Cl, C, Calcite, Dolomite, dt
 *
 * The value is what CVODE made of the input it was computed from, that
 * input included (CACHE_VALUE_FIELDS doubles, 96 bytes):
 *
 *   Ca, Mg, Cl, C, Calcite, Dolomite        after dt
 *   Ca_in, Mg_in, Cl_in, C_in, Calcite_in, Dolomite_in
 *
 * Keeping the input lets a hit apply the cached change to the cell's own
 * input (--reuse change) instead of copying a state computed from inputs
 * that only agree to the digits kept (--reuse state); see
 * mpikvs-reactive-transport(1).
 *
 * One step's chemistry of a rank is one mpikvs_get_batch() of all its
 * cells, CVODE for the misses (once per distinct key: cells of the batch
 * that share a key share the solve), and one mpikvs_put_batch() of the
 * new results.  The first rank to miss a key provides the value later
 * hits use; a rank that missed the same key at the same time puts its
 * own result over it, which is just as valid (libmpikvs has no
 * put-if-absent, and needs none here).
 */
#ifndef MPIKVS_RT_CACHE_H
#define MPIKVS_RT_CACHE_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chemistry.h"
#include "grid.h"
#include "options.h"
#include "rt.h"

#define CACHE_KEY_FIELDS   (CHEM_NSTATE + 1)
#define CACHE_VALUE_FIELDS (2 * CHEM_NSTATE)

/* What the chemistry of the cached run did, on one rank or summed.
 * Every cell looked up ends in one of: an exact hit, an accepted
 * interpolation, a rejected one (then CVODE), or CVODE straight away
 * (cvode_misses):
 *   lookups = hits + interpolated + rejected_balance + rejected_negative
 *             + cvode_misses
 * and the solves CVODE made are
 *   solves = rejected + cvode_misses - shared + verified. */
struct cache_counts {
    uint64_t lookups;     /* cells looked up in the DHT */
    uint64_t hits;        /* found there (verified ones included) */
    uint64_t shared;      /* misses that took the solve of an equal key
                           * of the same batch */
    uint64_t verified;    /* hits returned as MPIKVS_VERIFY: CVODE too */
    uint64_t interpolated;       /* misses interpolated and accepted */
    uint64_t rejected_balance;   /* ... rejected: Ca, Mg or C moved */
    uint64_t rejected_negative;  /* ... rejected: an amount below 0 */
    uint64_t cvode_misses;       /* misses without an interpolation (no
                                  * neighbourhood, too few members, or
                                  * not interpolating) */
    uint64_t near_members;       /* members the neighbourhoods returned */
    uint64_t mass_violations;    /* accepted interpolations whose cell,
                                  * checked again as stored, is off
                                  * balance: must stay 0 */
    double   verify_max[CHEM_NSTATE];  /* per field, of verified hits */
    double   verify_sum[CHEM_NSTATE];
    double   dht_seconds; /* in mpikvs_round_key, _get_batch, _put_batch,
                           * _get_near_batch, _verify_report */
};

/* The library's own figures for the job (mpikvs_stats). */
struct cache_stats {
    uint64_t evictions, invalidations;
    uint64_t near_queries, near_members;
    uint64_t verify_hits, verify_reports;
    double   verify_error_sum, verify_error_max;
    uint64_t verify_histogram[5];   /* <1e-12, <1e-9, <1e-6, <1e-3, >= */
};

/* The error of a verified hit, per field: |cached - CVODE| over
 * max(|CVODE|, CACHE_VERIFY_FLOOR) (mol/kgw, the example config's
 * zero_below: amounts below it are zero to the key).  What the hit is
 * reported with to mpikvs_verify_report is the largest over the fields. */
#define CACHE_VERIFY_FLOOR 1e-8

struct rt_cache;

/* Open the DHT over comm (collective) with the job config (NULL:
 * $MPIKVS_CONFIG, or the job's under the SPANK plugin) and check that
 * its table has the key and value described above (and, for
 * o->interpolate, a "near" setting; for o->verify, the handle opts in to
 * MPIKVS_VERIFY with that fraction).  On failure every rank returns -1
 * and nothing is left open. */
int cache_open(MPI_Comm comm, const struct rt_options *o,
               struct rt_cache **c, struct rt_err *err);

/* Replace each of the n cells by its state after o->dt, from the cache
 * where it can, else (interpolate) from an interpolation of its
 * neighbourhood that conserves mass, else from CVODE (whose new results,
 * and only those, go into the cache).  A hit returned as MPIKVS_VERIFY
 * is solved too, its error reported, and CVODE's result used.  Not
 * collective.  Returns 0, or -1 with err filled. */
int cache_chemistry(struct rt_cache *c, struct chem_solver *s,
                    const struct rt_options *o, bool interpolate,
                    cell_t *cells, size_t n, struct cache_counts *counts,
                    struct rt_err *err);

/* The transport the DHT reaches other nodes with ("ucx", "mpi"). */
const char *cache_transport(const struct rt_cache *c);

/* After it (collective), every rank's puts so far are visible.  Like a
 * failed MPI call, a failed fence ends the job (rt_abort). */
void cache_fence(struct rt_cache *c);

/* The DHT's own counters for the whole job since the open (collective;
 * a failure ends the job). */
void cache_job_stats(struct rt_cache *c, struct cache_stats *st);

/* Empty the table (collective), so that the next run starts on a fresh
 * one; a failure ends the job. */
void cache_clear(struct rt_cache *c);

/* Close the DHT (collective) and remove its regions when this program
 * made them.  *c becomes NULL. */
int cache_close(struct rt_cache **c, struct rt_err *err);

#endif /* MPIKVS_RT_CACHE_H */
