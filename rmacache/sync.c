/*
 * sync.c - the synchronization calls: each forwards to MPI, then tells
 * the window's cache what ended (rc_sync in cache.c).
 */
#include "rmacache.h"

static int after(MPI_Win win, int rc, int what, int target)
{
    struct rc_win *w = rc_win_of(win);

    if (w) {
        rc_sync(w, what, target);
    } else {
        rc_sync_event(what);
    }
    return rc;
}

int MPI_Win_fence(int assert, MPI_Win win)
{
    return after(win, PMPI_Win_fence(assert, win), RC_S_FENCE, -1);
}

int MPI_Win_flush(int rank, MPI_Win win)
{
    return after(win, PMPI_Win_flush(rank, win), RC_S_FLUSH, rank);
}

int MPI_Win_flush_all(MPI_Win win)
{
    return after(win, PMPI_Win_flush_all(win), RC_S_FLUSH, -1);
}

/* a get is complete once it is complete locally */
int MPI_Win_flush_local(int rank, MPI_Win win)
{
    return after(win, PMPI_Win_flush_local(rank, win), RC_S_FLUSH, rank);
}

int MPI_Win_flush_local_all(MPI_Win win)
{
    return after(win, PMPI_Win_flush_local_all(win), RC_S_FLUSH, -1);
}

int MPI_Win_sync(MPI_Win win)
{
    return after(win, PMPI_Win_sync(win), RC_S_ORDER, -1);
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    int            rc = PMPI_Win_lock(lock_type, rank, assert, win);
    struct rc_win *w = rc_win_of(win);

    if (rc == MPI_SUCCESS && w && rank >= 0 && rank < w->nranks) {
        pthread_mutex_lock(&w->lock);
        w->lockmode[rank] = lock_type == MPI_LOCK_EXCLUSIVE ? RC_EXCLUSIVE : RC_SHARED;
        if (lock_type == MPI_LOCK_EXCLUSIVE)
            w->nexclusive++;
        pthread_mutex_unlock(&w->lock);
    }
    return after(win, rc, RC_S_ORDER, rank);
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    int            rc = PMPI_Win_lock_all(assert, win);
    struct rc_win *w = rc_win_of(win);

    if (rc == MPI_SUCCESS && w) {
        pthread_mutex_lock(&w->lock);
        for (int t = 0; t < w->nranks; t++)
            w->lockmode[t] = RC_SHARED;
        pthread_mutex_unlock(&w->lock);
    }
    return after(win, rc, RC_S_ORDER, -1);
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    return after(win, PMPI_Win_unlock(rank, win), RC_S_UNLOCK, rank);
}

int MPI_Win_unlock_all(MPI_Win win)
{
    return after(win, PMPI_Win_unlock_all(win), RC_S_UNLOCK, -1);
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    return after(win, PMPI_Win_start(group, assert, win), RC_S_ORDER, -1);
}

int MPI_Win_complete(MPI_Win win)
{
    return after(win, PMPI_Win_complete(win), RC_S_COMPLETE, -1);
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    return after(win, PMPI_Win_post(group, assert, win), RC_S_ORDER, -1);
}

int MPI_Win_wait(MPI_Win win)
{
    return after(win, PMPI_Win_wait(win), RC_S_ORDER, -1);
}

int MPI_Win_test(MPI_Win win, int *flag)
{
    return after(win, PMPI_Win_test(win, flag), RC_S_ORDER, -1);
}
