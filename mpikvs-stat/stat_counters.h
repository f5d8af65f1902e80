/*
 * stat_counters.h - mpikvs-stat: the counter groups of a data region,
 * and the counters of a libmpikvs-rmacache window's region.
 *
 * A counter group is a set of 64-bit counters that every local rank of a
 * node keeps in a block of its own (format.h: struct kvshm_rank_stats),
 * shown per rank and summed for the node.  The text and JSON outputs
 * know nothing of particular counters: they walk stat_counter_groups[].
 * The counters of a group are a list of mpikvs_statistics.h (a new counter
 * there shows up here by itself); a new group is such a list, a block()
 * that finds a rank's block, and one more entry in stat_counter_groups[]
 * (stat_counters.c).
 */
#ifndef MPIKVS_STAT_COUNTERS_H
#define MPIKVS_STAT_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

/* What a counter's 64 bits are, and so how ranks' values combine and
 * how it is shown. */
enum stat_kind {
    STAT_COUNT,         /* a count: they add up */
    STAT_DOUBLE_SUM,    /* a double's bits (mpikvs_stat_double): a sum */
    STAT_DOUBLE_MAX     /* a double's bits: the largest */
};

struct stat_counter {
    const char    *label;    /* column heading in text */
    const char    *key;      /* member name in JSON */
    size_t         offset;   /* of its uint64_t in the rank's block */
    enum stat_kind kind;
};

/* A figure derived from two counters of the group: num / den. */
struct stat_ratio {
    const char *label;
    const char *key;
    size_t      num, den;    /* indices into the group's counters */
    bool        mean;        /* num is a STAT_DOUBLE_SUM: the ratio is a
                              * mean, not a share */
};

struct stat_counter_group {
    const char                *key;      /* JSON member: "dht" */
    const char                *title;    /* text heading */
    const struct stat_counter *counters;
    size_t                     ncounters;
    const struct stat_ratio   *ratios;
    size_t                     nratios;
    /* rank's block in the region mapped at base, whose checked control
     * block is control (a data region's: rank < max_ranks), or NULL if
     * the region has no such group */
    const void *(*block)(const void *base, const void *control,
                         uint64_t rank);
    /* the MPI rank a block of the group says it belongs to (in the
     * communicator of its latest open, or its window), or -1 when it
     * says none */
    int64_t (*mpi_rank)(const void *block);
};

extern const struct stat_counter_group *const stat_counter_groups[];
extern const size_t stat_ncounter_groups;

/* A group's values in one region: ranks[r * ncounters + i] is counter i
 * of local rank r, for the ranks shown (0 to the last rank with a
 * counter that is not zero, in any group), mpi_ranks[r] its MPI rank
 * (-1: unknown); total[i] sums all ranks.  A sum over nodes (the job's
 * total) has no ranks: nranks 0, ranks and mpi_ranks NULL. */
struct stat_counter_values {
    const struct stat_counter_group *group;
    uint64_t                         nranks;
    uint64_t                        *ranks;
    int64_t                         *mpi_ranks;
    uint64_t                        *total;
};

/* Read every group of the region mapped at base: values[] gets one entry
 * per group of stat_counter_groups[] (caller's array of
 * stat_ncounter_groups).  Each counter is loaded once, atomically: a
 * rank writes only its own counters, so what is read is a value each
 * counter had, not a snapshot of the whole block.  Returns 0, or -1 when
 * out of memory. */
int stat_counters_read(const void *base, const struct kvshm_data_control *c,
                       struct stat_counter_values *values);

void stat_counters_free(struct stat_counter_values *values);

/* The counters of a libmpikvs-rmacache window (format.h:
 * KVSHM_RMA_COUNTERS), a row for each of the c->nranks ranks of the
 * node (a checked control block), loaded as stat_counters_read() loads
 * them, into *v (one group; free it with stat_counters_free_one()).
 * Returns 0, or -1 when out of memory. */
int stat_counters_read_rma(const void *base, const struct kvshm_rma_control *c,
                           struct stat_counter_values *v);

void stat_counters_free_one(struct stat_counter_values *v);

/* *total with x, a rank's or a node's value of counter c, combined in
 * (by c's kind). */
void stat_counter_combine(const struct stat_counter *c, uint64_t *total,
                          uint64_t x);

/* A counter's value as a number (a double's bits as that double). */
double stat_counter_number(const struct stat_counter *c, uint64_t v);

/* The counter's value as text: a count in digits, a double with %.3g. */
void stat_counter_format(const struct stat_counter *c, uint64_t v, char *buf,
                         size_t len);

/* A counter's rate: grown (what it grew by, stat_totals_interval) per
 * second in seconds; false for a largest double, which has none. */
bool stat_counter_rate(const struct stat_counter *c, uint64_t grown,
                       double seconds, double *rate);

/* The ratio for a row of counters, or -1 when its denominator is 0. */
double stat_ratio_value(const struct stat_ratio *ratio, const uint64_t *row);

#endif /* MPIKVS_STAT_COUNTERS_H */
