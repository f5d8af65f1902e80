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

/* The largest --value-size: the library's limit where its header says
 * it, else the 1 MiB (a larger one is the library's to refuse). */
#ifdef KVSHM_VALUE_SIZE_MAX
#define DHT_LARGE_VALUE_MAX ((uint64_t)KVSHM_VALUE_SIZE_MAX)
#else
#define DHT_LARGE_VALUE_MAX (UINT64_C(1) << 20)
#endif
#define DHT_LARGE_GETS     UINT64_C(2000)  /* --remote-gets by default */
#define DHT_LARGE_SLOTS    UINT64_C(4)     /* --slots by default */

/* --far-read: the table setting "far_read" of mpikvs.json(5); auto
 * leaves it out of the config, so the library chooses. */
enum dht_far_read { DHT_FAR_AUTO, DHT_FAR_BUCKET, DHT_FAR_SLOT };
extern const char *const dht_far_read_name[3];

/* Parse "16K,64K": 1 to DHT_LARGE_SIZES sizes from 1 to
 * DHT_LARGE_VALUE_MAX, with the K/M/G suffixes of --size.  0, or -1 with
 * the message on stderr. */
int dht_large_parse_sizes(const char *arg, uint64_t *sizes, unsigned *n);

/* Every size, one table after another (collective over MPI_COMM_WORLD).
 * Returns 0 or BENCH_EXIT_FAIL (reported). */
int dht_large_run(const struct dht_opts *o, int rank, int np);

#endif /* MPIKVS_CONTRIB_BENCH_DHT_LARGE_H */
