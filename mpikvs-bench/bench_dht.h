/*
 * bench_dht.h - what the two runs of "mpikvs-bench dht" share: the
 * options (parsed in bench_dht.c), and the helpers both use around
 * libmpikvs (bench_dht_common.c).  bench_dht.c runs the paper's
 * write/read/mixed benchmark, bench_dht_tier.c the --tier mode (epochs
 * of zipf reads over the node tier, bench_dht_tier.h).
 */
#ifndef MPIKVS_CONTRIB_BENCH_DHT_H
#define MPIKVS_CONTRIB_BENCH_DHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mpikvs.h"
#include "names.h"   /* enum kvshm_far_read */

#define DHT_SUB "dht"

enum dht_dist { DIST_UNIFORM, DIST_ZIPF };

#define DHT_LARGE_SIZES 8u    /* sizes of one --value-size list */

struct dht_opts {
    uint64_t    pairs, ops, batch, size, seed;
    bool        size_given, json;
    enum dht_dist dist;
    const char *mode;
    bool        mode_given;
    /* --tier: epochs of zipf reads; the options below only apply there */
    bool        tier;
    uint64_t    epochs, keys, latency;
    const char *tier_size;    /* as given: "25%", "16M" */
    bool        tier_size_given;
    double      tier_fraction;    /* of --tier-size: a share, or */
    uint64_t    tier_bytes;       /* an absolute size */
    const char *config;       /* --config, or NULL */
    const char *table;        /* --table, else NULL: the config's first */
    const char *transport;    /* --transport, else NULL: the library's
                               * choice (MPIKVS_TRANSPORT, config, auto) */
    /* without --tier only */
    uint64_t    work_us;      /* busy loop before each mixed op, or 0 */
    bool        async;        /* --async: batches started, the work done
                               * while they are in flight, then waited */
    uint64_t    remote_gets;  /* rank 0's timed remote gets, or 0 */
    bool        pairs_given, remote_gets_given;
    /* --value-size: large values, one table per size
     * (bench_dht_large.h); nvalue_sizes 0 without */
    uint64_t    value_sizes[DHT_LARGE_SIZES];
    unsigned    nvalue_sizes;
    uint64_t    slots;        /* --slots: slots per bucket */
    enum kvshm_far_read far_read; /* --far-read: the table's far_read
                                   * (auto: left out of the config) */
};

/* A failed call on one rank leaves the others in a collective: print the
 * call, its code's text and the library's message, then MPI_Abort the
 * whole job with status 1. */
void dht_fail(const mpikvs_t *kvs, int rank, const char *call, int rc)
    __attribute__((noreturn));

/* The nodes a table is sized for before it is open (collective): the
 * valid MPIKVS_VIRTUAL_NODES, else the shared-memory domains.  Only an
 * estimate for a default size, which needs it before there is a handle
 * to ask (a virtual node sized for its whole host would take that many
 * times the memory of the host); what the open formed is dht_nodes'. */
int dht_nodes_to_size_for(int np);

/* The nodes an open handle formed, virtual ones included, as the
 * library says (mpikvs_info); a failure ends the job. */
void dht_nodes(const mpikvs_t *kvs, int rank, int *nodes,
               bool *virtual_nodes);

/* The counters of the job (collective); a failure ends the job. */
void dht_job_stats(mpikvs_t *kvs, int rank, mpikvs_stats_t *st);

/* d = b - a, counter by counter (all of them). */
void dht_stats_diff(const mpikvs_stats_t *a, const mpikvs_stats_t *b,
                    mpikvs_stats_t *d);

/* "64.0 MiB", "1000 bytes" or "the job's size" (bytes 0). */
void dht_size_text(uint64_t bytes, char *buf, size_t len);

/* A new temporary file for a rank's own config, open for writing:
 * $TMPDIR (else /tmp)/STEM.XXXXXX into path, or NULL with why said (and
 * path "" when no file was made). */
FILE *dht_temp_config(const char *stem, char *path, size_t plen, char *why,
                      size_t len);

/* 0 when why is NULL on every rank; else the lowest rank with a reason
 * prints it after "mpikvs-bench WHAT: rank R: " and every rank gets
 * BENCH_EXIT_FAIL (collective). */
int dht_agree(int rank, int np, const char *what, const char *why);

/* Wait for every rank without spinning: a nonblocking barrier tested
 * every DHT_QUIET_WAIT_NS with a sleep in between (the test also
 * progresses MPI for the mpi transport).  On a host of few cores a waiting rank that spins
 * takes the core a measured one needs. */
#define DHT_QUIET_WAIT_NS 50000L
void dht_quiet_barrier(void);

#endif /* MPIKVS_CONTRIB_BENCH_DHT_H */
