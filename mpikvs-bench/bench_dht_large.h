/*
 * bench_dht_large.h - "mpikvs-bench dht --value-size N[,N...]": the
 * latency of one remote get of a large value, and what it moved and
 * copied, against a memcpy and an MPI ping-pong of the same bytes
 * (bench_dht_large.c).  Its options are parsed with the others in
 * bench_dht.c (struct dht_opts).
 */
#ifndef MPIKVS_CONTRIB_BENCH_DHT_LARGE_H
#define MPIKVS_CONTRIB_BENCH_DHT_LARGE_H

#include <stdint.h>

#include "bench_dht.h"

#define DHT_LARGE_GETS     UINT64_C(2000)  /* --remote-gets by default */
#define DHT_LARGE_SLOTS    UINT64_C(4)     /* --slots by default */


/* Parse "16K,64K": 1 to DHT_LARGE_SIZES sizes from 1 to
 * DHT_LARGE_VALUE_MAX, with the K/M/G suffixes of --size.  0, or -1 with
 * the message on stderr. */
int dht_large_parse_sizes(const char *arg, uint64_t *sizes, unsigned *n);

/* Every size, one table after another (collective over MPI_COMM_WORLD).
 * Returns 0 or BENCH_EXIT_FAIL (reported). */
int dht_large_run(const struct dht_opts *o, int rank, int np);

#endif /* MPIKVS_CONTRIB_BENCH_DHT_LARGE_H */
