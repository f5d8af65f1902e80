/*
 * stats.h - what open puts in the rank's stats block (stats.c).
 */
#ifndef MPIKVS_STATS_H
#define MPIKVS_STATS_H

#include <stdint.h>
#include <string.h>

#include "mpikvs.h"

/* A double as the bits a statistic holds it in (mpikvs_stat_double is
 * the way back). */
static inline uint64_t kvs_stat_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

/* Put the transport this open uses (kvs->transport, once
 * kvs_transport_open has set kvs->tp) in the rank's stats block, where
 * mpikvs-stat reads it (stats.c). */
void kvs_stats_set_transport(mpikvs_t *kvs);

/* At open, once this rank's block is mapped and before any rank can
 * count (the node's ranks must all call it before the next collective
 * of open): name this open's rank in the block, for mpikvs-stat, and
 * keep the counters the figures MPIKVS_SINCE_OPEN start from
 * (stats.c). */
void kvs_stats_mark_open(mpikvs_t *kvs);

#endif /* MPIKVS_STATS_H */
