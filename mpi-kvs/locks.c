/*
 * locks.c - the fine-lock mode's reader/writer lock word per bucket.
 *
 * The word is the first 8 bytes of the bucket.  A reader adds 1 and has
 * the lock if no writer held it (the value before was below EXCL), else it
 * takes its 1 back and tries again; a writer swaps 0 for EXCL.  Release
 * subtracts what was added.  All through MPI atomics, so that ranks of
 * every node, the own one included, see one lock.
 *
 * A holder that died leaves the word set for good: after
 * MPIKVS_LOCK_TIMEOUT_MS of trying, the caller gets MPIKVS_ERR_STALLED
 * instead of waiting forever.
 */
#include <sched.h>
#include <time.h>

#include "handle.h"

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int fetch_add(mpikvs_t *kvs, int target, uint64_t disp, int64_t add,
                     int64_t *before)
{
    int rc = MPI_Fetch_and_op(&add, before, MPI_INT64_T, target,
                              (MPI_Aint)disp, MPI_SUM, kvs->win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_flush(target, kvs->win);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "MPI_Fetch_and_op on a "
                                                 "bucket lock", rc);
}

static int swap_if_free(mpikvs_t *kvs, int target, uint64_t disp,
                        int64_t *before)
{
    const int64_t want = MPIKVS_EXCL_LOCK, expect = 0;
    int rc = MPI_Compare_and_swap(&want, &expect, before, MPI_INT64_T, target,
                                  (MPI_Aint)disp, kvs->win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_flush(target, kvs->win);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "MPI_Compare_and_swap on a "
                                                 "bucket lock", rc);
}

/* Between attempts: spin a little, then give the core away (a holder on
 * an oversubscribed node needs it), and give up after the timeout. */
static int back_off(mpikvs_t *kvs, unsigned attempt, uint64_t *deadline)
{
    if (attempt < 16) {
        kvs_cpu_relax();
        return MPIKVS_OK;
    }
    sched_yield();
    if (attempt % 64 == 0) {
        uint64_t now = now_ms();
        if (!*deadline)
            *deadline = now + MPIKVS_LOCK_TIMEOUT_MS;
        else if (now > *deadline)
            return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                            "a bucket lock has been held for %u s: did a "
                            "rank die while holding it?",
                            MPIKVS_LOCK_TIMEOUT_MS / 1000);
    }
    return MPIKVS_OK;
}

int kvs_bucket_lock(mpikvs_t *kvs, int target, uint64_t disp, bool exclusive)
{
    uint64_t deadline = 0;
    int64_t before;
    int rc;

    for (unsigned attempt = 0;; attempt++) {
        if (exclusive) {
            rc = swap_if_free(kvs, target, disp, &before);
            if (rc != MPIKVS_OK || before == 0)
                return rc;
        } else {
            rc = fetch_add(kvs, target, disp, 1, &before);
            if (rc != MPIKVS_OK || before < MPIKVS_EXCL_LOCK)
                return rc;
            rc = fetch_add(kvs, target, disp, -1, &before);
            if (rc != MPIKVS_OK)
                return rc;
        }
        rc = back_off(kvs, attempt, &deadline);
        if (rc != MPIKVS_OK)
            return rc;
    }
}

int kvs_bucket_unlock(mpikvs_t *kvs, int target, uint64_t disp,
                      bool exclusive)
{
    int64_t before;

    return fetch_add(kvs, target, disp, exclusive ? -MPIKVS_EXCL_LOCK : -1,
                     &before);
}
