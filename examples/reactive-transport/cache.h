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
#include <stddef.h>
#include <stdint.h>

#include "chemistry.h"
#include "grid.h"
#include "options.h"
#include "rt.h"

#define CACHE_KEY_FIELDS   (CHEM_NSTATE + 1)
#define CACHE_VALUE_FIELDS (2 * CHEM_NSTATE)

/* What the chemistry of the cached run did, on one rank or summed. */
struct cache_counts {
    uint64_t lookups;     /* cells looked up in the DHT */
    uint64_t hits;        /* found there: no CVODE */
    uint64_t shared;      /* misses that took the solve of an equal key
                           * of the same batch */
    double   dht_seconds; /* in mpikvs_round_key, _get_batch, _put_batch */
};

struct rt_cache;

/* Open the DHT over comm (collective) with the job config (NULL:
 * $MPIKVS_CONFIG, or the job's under the SPANK plugin) and check that
 * its table has the key and value described above.  On failure every
 * rank returns -1 and nothing is left open. */
int cache_open(MPI_Comm comm, const char *config, const char *table,
               struct rt_cache **c, struct rt_err *err);

/* Replace each of the n cells by its state after dt, from the cache where
 * it can, else from CVODE (whose new results go into the cache).  Not
 * collective.  Returns 0, or -1 with err filled. */
int cache_chemistry(struct rt_cache *c, struct chem_solver *s, cell_t *cells,
                    size_t n, double dt, enum rt_reuse reuse,
                    struct cache_counts *counts, struct rt_err *err);

/* The transport the DHT reaches other nodes with ("ucx", "mpi"). */
const char *cache_transport(const struct rt_cache *c);

/* After it (collective), every rank's puts so far are visible.  Like a
 * failed MPI call, a failed fence ends the job (rt_abort). */
void cache_fence(struct rt_cache *c);

/* The DHT's own counters for the whole job (collective; a failure ends
 * the job). */
void cache_job_stats(struct rt_cache *c, uint64_t *evictions,
                     uint64_t *invalidations);

/* Close the DHT (collective) and remove its regions when this program
 * made them.  *c becomes NULL. */
int cache_close(struct rt_cache **c, struct rt_err *err);

#endif /* MPIKVS_RT_CACHE_H */
