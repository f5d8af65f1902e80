/*
 * bench_dht_tier.h - "mpikvs-bench dht --tier" (bench_dht_tier.c): epochs
 * of zipf reads over the node tier, started by bench_dht.c once the
 * options are parsed.
 */
#ifndef MPIKVS_BENCH_DHT_TIER_H
#define MPIKVS_BENCH_DHT_TIER_H

#include "bench_dht.h"

/* --tier: the whole run, after MPI_Init and the options (every rank).
 * Returns the exit status; MPI_Finalize is the caller's. */
int dht_tier_run(const struct dht_opts *o, int rank, int np);

#endif /* MPIKVS_BENCH_DHT_TIER_H */
