/*
 * close.c - mpikvs_close, and the teardown an open that failed shares
 * with it (close.h): every wait for the other ranks bounded by
 * MPIKVS_CLOSE_TIMEOUT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "async.h"
#include "clock.h"
#include "close.h"
#include "errors.h"
#include "handle.h"
#include "locks.h"
#include "mpi_impl.h"
#include "near.h"
#include "node_tier.h"
#include "transport.h"
#include "verify.h"
/* A barrier over the handle's ranks that gives up after
 * MPIKVS_CLOSE_TIMEOUT (of this rank's looking: clock.h): no rank
 * waits forever for one that died or does not call mpikvs_close.  One
 * given up on stays posted: MPI cannot cancel a collective. */
static int bounded_barrier(mpikvs_t *kvs)
{
    MPI_Request req;
    struct kvshm_deadline deadline;
    int done = 0, rc = MPI_Ibarrier(kvs->comm, &req);

    kvshm_deadline_start(&deadline, kvs->close_timeout * 1000ull);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Ibarrier in mpikvs_close", rc);
    for (;;) {
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return kvs_mpi_fail(kvs, "MPI_Test in mpikvs_close", rc);
        if (done)
            return MPIKVS_OK;
        if (kvshm_deadline_passed(&deadline))
            return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                            "mpikvs_close: not every rank of the "
                            "communicator came to mpikvs_close within %u s "
                            "(MPIKVS_CLOSE_TIMEOUT): a rank died or does "
                            "not call it; this rank gave up waiting and "
                            "did not free the cache's MPI objects",
                            kvs->close_timeout);
        /* the others may be busy for long: poll, do not spin */
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200000};
        nanosleep(&ts, NULL);
    }
}

/* Every rank of the handle is here, each within the timeout.  Twice:
 * after the first every rank has come, and no RMA is in flight; after
 * the second every rank knows that, so either all of them go on to a
 * collective that waits for every rank (freeing the window, the config's
 * save) or, but for one that is descheduled for a whole timeout between
 * the two, none does. */
static int all_at_close(mpikvs_t *kvs)
{
    int rc = bounded_barrier(kvs);

    if (rc == MPIKVS_OK)
        rc = bounded_barrier(kvs);
    return rc;
}

static int close_neighbourhoods(mpikvs_t *kvs, bool stalled)
{
    mpikvs_t *near = kvs_near_detach(kvs);

    if (!near)
        return MPIKVS_OK;
    return stalled ? kvs_teardown(near, false, true) : mpikvs_close(&near);
}

/* Undo whatever open did; collective only where every rank got as far.
 * The waits for the other ranks are bounded (all_at_close); a rank that
 * gives up, or had given up already (stalled), frees nothing that
 * another rank could still be waiting for, and returns
 * MPIKVS_ERR_STALLED.  report: its error also goes to
 * mpikvs_last_error(NULL), as kvs is gone. */
int kvs_teardown(mpikvs_t *kvs, bool report, bool stalled)
{
    int rc = stalled ? MPIKVS_ERR_STALLED : MPIKVS_OK;
    /* the neighbourhoods' table first: its close is collective too */
    int near = close_neighbourhoods(kvs, stalled);
    bool together = !stalled, exposed;

    if (kvs->tp && kvs->tp->release)
        kvs->tp->release(kvs);
    if (!stalled && kvs->comm != MPI_COMM_NULL) {
        rc = all_at_close(kvs);
        together = rc == MPIKVS_OK;
    }
    /* a region the transport still exposes to the others stays mapped
     * until the process ends */
    exposed = kvs->tp && kvs->tp->close(kvs, together);
    /* no lock is taken now; after a timeout a late rank still may, and
     * the lease stays ours until this process ends (locks.c) */
    if (together)
        kvs_locks_close(kvs);
    kvs_tier_close(kvs);
    if (kvs->created)
        kvshm_region_unlink(kvs->shm_dir[0] ? kvs->shm_dir : NULL,
                            kvs->region_name);
    if (!exposed)
        kvshm_region_close(&kvs->region);
    kvshm_config_free(kvs->config);
    kvshm_job_layout_free(kvs->layout);
    free(kvs->leaders);
    free(kvs->routes);
    free(kvs->scratch);
    free(kvs->slot_image);
    free(kvs->batch);
    free(kvs->batch_images);
    kvs_verify_close(kvs);
    /* the communicators too stay allocated after a timeout: the posted
     * barrier refers to them */
    if (together && kvs->node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&kvs->node_comm);
    if (together && kvs->leaders_comm != MPI_COMM_NULL)
        MPI_Comm_free(&kvs->leaders_comm);
    if (together && kvs->comm != MPI_COMM_NULL)
        MPI_Comm_free(&kvs->comm);
    if (rc == MPIKVS_OK && near != MPIKVS_OK)
        rc = kvs_fail(kvs, near, "closing the neighbourhoods: %s",
                      mpikvs_last_error(NULL));
    if (rc != MPIKVS_OK && report)
        kvs_fail(NULL, rc, "%s", kvs->err.text);
    free(kvs);
    return rc;
}

/* The config's save at close.  The save is collective, and MPI-IO
 * cannot give up on a rank that never comes: so every rank must be at
 * close first, within MPIKVS_CLOSE_TIMEOUT, or none saves and the close
 * goes on as after a timeout (MPIKVS_ERR_STALLED). */
static int close_save(mpikvs_t *kvs, const char *path, bool *stalled)
{
    char why[sizeof(kvs->err.text)];
    int rc = all_at_close(kvs);

    *stalled = rc != MPIKVS_OK;
    if (rc != MPIKVS_OK) {
        snprintf(why, sizeof(why), "%s", kvs->err.text);
        return kvs_fail(kvs, rc, "mpikvs_close: the table was not saved to "
                        "%s (persist.save): %s", path, why);
    }
    rc = mpikvs_save(kvs, path);
    if (rc != MPIKVS_OK)
        kvs_fail(NULL, rc, "%s", kvs->err.text);
    return rc;
}

int mpikvs_close(mpikvs_t **kvsp)
{
    const struct kvshm_table_config *t;
    int saved = MPIKVS_OK, rc;
    bool stalled = false;
    unsigned unwaited;

    if (!kvsp || !*kvsp)
        return kvs_fail(NULL, MPIKVS_ERR_INVAL,
                        "mpikvs_close: no open handle");
    /* completed, so that nothing writes into the caller's buffers any
     * more; the close goes on, as the other ranks' does */
    unwaited = kvs_async_close(*kvsp);
    /* the config's save for the next run; the close goes on if it fails,
     * and returns its error */
    t = (*kvsp)->table;
    if (t && t->persist.save[0])
        saved = close_save(*kvsp, t->persist.save, &stalled);
    rc = kvs_teardown(*kvsp, true, stalled);
    if (rc == MPIKVS_OK)
        rc = saved;
    *kvsp = NULL;
    if (rc == MPIKVS_OK && unwaited)
        rc = kvs_fail(NULL, MPIKVS_ERR_INVAL,
                      "mpikvs_close: %u batch requests were never waited "
                      "for (completed, and the cache closed): wait for "
                      "every request before mpikvs_close", unwaited);
    return rc;
}
