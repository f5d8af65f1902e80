/*
 * test_counters.c - the global counters of libmpikvs
 * (mpikvs_counter_add, mpikvs_counter_cas), in the mode given as argv[1]
 * (lockfree | fine-lock | coarse-lock): N ranks x M increments (argv[2],
 * default 300) by add on three counters and by compare-and-swap on the
 * fourth, each counter N x M after; a counter beyond the last refused;
 * one winner of a race of compare-and-swaps from one value.  argv[2]
 * "refused": under Open MPI's osc rdma every counter call is refused
 * with the remedy, and a put and a get work.
 *
 * run-counters-test.sh runs it over the mpi and ucx transports, on one
 * node and two.  See mpitest.h for the output, mt_table.h for what the
 * table tests share.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"

static void check_counters(mpikvs_t *kvs, int m)
{
    unsigned nc = mpikvs_counters(kvs);
    uint64_t v = 0, seen = 0;
    int rc, wins = 0, all = 0;

    EXPECT(nc == 4, "mpikvs_counters: %u, default 4", nc);
    rc = mpikvs_counter_add(kvs, nc, 1, NULL);
    EXPECT(rc == MPIKVS_ERR_INVAL, "counter %u beyond the last: %s", nc,
           mpikvs_strerror(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < m; i++)
        for (unsigned c = 0; c < 3; c++) {
            rc = mpikvs_counter_add(kvs, c, 1, NULL);
            if (rc != MPIKVS_OK) {
                EXPECT(0, "add to counter %u: %s: %s", c,
                       mpikvs_strerror(rc), mpikvs_last_error(kvs));
                goto out;
            }
        }
    /* counter 3 by compare-and-swap increments */
    for (int i = 0; i < m; i++) {
        uint64_t cur = 0;
        for (;;) {
            rc = mpikvs_counter_cas(kvs, 3, cur, cur + 1, &seen);
            if (rc != MPIKVS_OK || seen == cur)
                break;
            cur = seen;
        }
        EXPECT(rc == MPIKVS_OK, "cas: %s", mpikvs_strerror(rc));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (unsigned c = 0; c < 4; c++) {
        rc = mpikvs_counter_add(kvs, c, 0, &v);
        EXPECT(rc == MPIKVS_OK && v == (uint64_t)T.size * (uint64_t)m,
               "counter %u: %llu after %d x %d increments", c,
               (unsigned long long)v, T.size, m);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* one winner of a race of compare-and-swaps from one value */
    rc = mpikvs_counter_cas(kvs, 2, (uint64_t)T.size * (uint64_t)m,
                            UINT64_C(1) << 40 | (uint64_t)T.rank, &seen);
    wins = rc == MPIKVS_OK && seen == (uint64_t)T.size * (uint64_t)m;
    MPI_Allreduce(&wins, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT(all == 1, "%d ranks won one compare-and-swap", all);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = mpikvs_counter_add(kvs, 2, 0, &v);
    EXPECT(rc == MPIKVS_OK && v >> 40 == 1 &&
               (v & 0xffffff) < (uint64_t)T.size,
           "counter 2 after the race: %llu", (unsigned long long)v);
    if (T.rank == 0)
        mt_note("counters: %d ranks x %d increments = %llu", T.size, m,
                (unsigned long long)(uint64_t)T.size * (uint64_t)m);
out:
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Open MPI's rdma one-sided component, which crashes on atomics: each
 * counter call refused with the remedy, a put and a get working. */
static void check_refused(mpikvs_t *kvs)
{
    unsigned char k[32] = {7}, v[64] = {9}, got[64];
    uint64_t seen;
    int rc;

    for (unsigned c = 0; c < mpikvs_counters(kvs); c++) {
        rc = mpikvs_counter_add(kvs, c, 1, NULL);
        EXPECT(rc == MPIKVS_ERR_MPI &&
                   strstr(mpikvs_last_error(kvs), "OMPI_MCA_osc=pt2pt or ucx"),
               "add to counter %u under osc rdma: %s: %s", c,
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
        rc = mpikvs_counter_cas(kvs, c, 0, 1, &seen);
        EXPECT(rc == MPIKVS_ERR_MPI, "cas of counter %u under osc rdma: %s",
               c, mpikvs_strerror(rc));
    }
    k[1] = (unsigned char)T.rank;
    EXPECT(mpikvs_put(kvs, k, v) == MPIKVS_OK, "a put under osc rdma");
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "a fence under osc rdma");
    rc = mpikvs_get(kvs, k, got);
    EXPECT(rc == MPIKVS_OK && !memcmp(got, v, sizeof v),
           "a get under osc rdma: %s", mpikvs_strerror(rc));
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    mpikvs_options_t o;
    mpikvs_t        *kvs;

    table_test_start(argc, argv);
    /* the table of the counters' old home, test_persist */
    o = opts(32, 64, 1u << 20, T.mode);
    kvs = open_ok(&o, "counters: open");
    if (kvs && argc > 2 && strcmp(argv[2], "refused") == 0)
        check_refused(kvs);
    else if (kvs)
        check_counters(kvs, argc > 2 ? atoi(argv[2]) : 300);
    if (kvs)
        close_ok(&kvs, "counters: close");
    return table_test_finish();
}
