/*
 * test_absent.c - mpikvs_put_if_absent, in the mode given as argv[1]
 * (lockfree | fine-lock | coarse-lock): every rank offers its own value
 * for the same new keys at once; each key must have exactly one winner,
 * whose value every loser is shown and every get returns, and a second
 * offer finds it present.  (test_absent_stopped races two callers while
 * one is stopped.)
 *
 * Run under mpirun with any number of ranks; MPIKVS_VIRTUAL_NODES=N makes
 * N blocks of consecutive ranks act as nodes.  See mpitest.h for the
 * output, mt_table.h for what the table tests share.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mt_table.h"

#define TAG_ONCE 9u             /* the put-if-absent keys */

/* Rounds of nkeys_once new keys, the same on every rank, each offered by
 * every rank at once with mpikvs_put_if_absent and the rank's own version
 * of the value, into a table they all fit (8 buckets of 64 slots a node):
 * per key exactly one MPIKVS_OK; every MPIKVS_PRESENT shows the winner's
 * value; afterwards a get returns it and a second offer is PRESENT. */
static void once_phase(const char *mode, unsigned rounds, unsigned nkeys_once)
{
    unsigned char  key[KS], val[VS], seen[VS];
    int           *won = calloc(nkeys_once, sizeof *won);
    int           *winners = calloc(nkeys_once, sizeof *winners);
    uint64_t      *shown = calloc(nkeys_once, sizeof *shown);
    uint64_t       bad = 0, errors = 0, keys = 0, split = 0;
    const char    *tp = "";

    if (!won || !winners || !shown)
        mt_abort("out of memory");
    for (unsigned r = 0; r < rounds; r++) {
        mpikvs_t *kvs = open_small(mode, "put-if-absent");
        int rc;

        tp = mpikvs_transport(kvs);
        mt_phase("put-if-absent");
        MPI_Barrier(MPI_COMM_WORLD);
        for (unsigned i = 0; i < nkeys_once; i++) {
            mt_make_key(TAG_ONCE, r, i, key, KS);
            mt_make_value(key, KS, (uint64_t)T.rank + 1, val, VS);
            memset(seen, 0, VS);
            rc = mpikvs_put_if_absent(kvs, key, val, seen);
            won[i] = rc == MPIKVS_OK;
            shown[i] = 0;
            if (rc == MPIKVS_PRESENT && !mt_value_ok(key, KS, seen, VS,
                                                     &shown[i]))
                bad++;
            else if (rc != MPIKVS_OK && rc != MPIKVS_PRESENT)
                errors++;
        }
        MPI_Allreduce(won, winners, (int)nkeys_once, MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
        mt_phase("read back (put-if-absent)");
        for (unsigned i = 0; i < nkeys_once; i++) {
            int64_t mine = won[i] ? T.rank + 1 : 0, winner = 0;
            uint64_t ver = 0;
            MPI_Allreduce(&mine, &winner, 1, MPI_INT64_T, MPI_MAX,
                          MPI_COMM_WORLD);
            keys++;
            if (winners[i] != 1) {
                split++;
                continue;
            }
            /* a loser was shown the winner's value */
            if (!won[i] && shown[i] != (uint64_t)winner)
                bad++;
            mt_make_key(TAG_ONCE, r, i, key, KS);
            if (mpikvs_get(kvs, key, val) != MPIKVS_OK ||
                !mt_value_ok(key, KS, val, VS, &ver) ||
                ver != (uint64_t)winner)
                bad++;
            mt_make_value(key, KS, 1000 + (uint64_t)T.rank, val, VS);
            if (mpikvs_put_if_absent(kvs, key, val, NULL) != MPIKVS_PRESENT)
                bad++;
        }
        rc = mpikvs_put_if_absent(kvs, NULL, val, NULL);
        EXPECT(rc == MPIKVS_ERR_INVAL, "put-if-absent of a NULL key: %d", rc);
        mt_phase("close (put-if-absent)");
        rc = mpikvs_close(&kvs);
        EXPECT(rc == MPIKVS_OK, "put-if-absent: mpikvs_close = %d (%s)", rc,
               mpikvs_strerror(rc));
    }
    uint64_t sums[3] = {bad, errors, split}, all[3];
    MPI_Allreduce(sums, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* every rank counted every key's split once */
    all[2] /= (uint64_t)T.size;
    EXPECT(all[1] == 0, "put-if-absent: %llu calls failed",
           (unsigned long long)all[1]);
    if (claims(mode, tp)) {
        EXPECT(all[2] == 0, "put-if-absent: %llu of %llu keys without "
               "exactly one winner", (unsigned long long)all[2],
               (unsigned long long)keys);
        EXPECT(all[0] == 0, "put-if-absent: %llu wrong answers or values",
               (unsigned long long)all[0]);
    }
    if (T.rank == 0) {
        printf("torture (put-if-absent): mode %s, transport %s, %d ranks, "
               "%u rounds of %u keys offered by every rank: %llu keys "
               "without exactly one winner, %llu wrong answers%s\n",
               mode, tp, T.size, rounds, nkeys_once,
               (unsigned long long)all[2], (unsigned long long)all[0],
               claims(mode, tp) ? "" : " (not asserted: unclaimed remote "
                                       "puts)");
        fflush(stdout);
    }
    free(won);
    free(winners);
    free(shown);
}

static void absent_area(void)
{
    once_phase(T.mode, 4, 64);
}

TABLE_TEST_MAIN(absent_area)
