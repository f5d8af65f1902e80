/*
 * rma.c - the communication calls: MPI_Get served from the cache where
 * it may be, and the own writes that drop what they overlap.  MPI_Rget
 * passes through (its request would complete data we never fetched).
 */
#include "rmacache.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of count elements of type when they are one contiguous block,
 * its offset from the buffer's address in *lb; 0 when they are not. */
static size_t contiguous_bytes(int count, MPI_Datatype type, MPI_Aint *lb)
{
    int      size;
    MPI_Aint tlb, text, elb, ext;

    if (count <= 0 || PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0 ||
        PMPI_Type_get_true_extent(type, &tlb, &text) != MPI_SUCCESS || text != size)
        return 0;
    if (count > 1 && (PMPI_Type_get_extent(type, &elb, &ext) != MPI_SUCCESS || ext != size))
        return 0;
    *lb = tlb;
    return (size_t)size * (size_t)count;
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, MPI_Win win)
{
    struct rc_win *w = rc_win_of(win);
    size_t         len, tlen;
    MPI_Aint       olb, tlb;
    int            rc;

    if (!w)
        goto pass;
    len = contiguous_bytes(origin_count, origin_datatype, &olb);
    tlen = contiguous_bytes(target_count, target_datatype, &tlb);
    pthread_mutex_lock(&w->lock);
    RC_COUNT(w, gets, 1);
    if (w->mode == RC_OFF ||
        target_rank == w->rank || target_rank < 0 || target_rank >= w->nranks ||
        len == 0 || len != tlen || len > rc_cfg.max_get || !rc_win_index(w)) {
        RC_COUNT(w, passed, 1);
        pthread_mutex_unlock(&w->lock);
        goto pass;
    }
    rc_order_check(w);

    int64_t base = w->dynamic ? (int64_t)target_disp
                              : (int64_t)target_disp * w->disp_unit[target_rank];
    uint64_t        disp = (uint64_t)(base + tlb);
    unsigned char  *buf = (unsigned char *)origin_addr + olb;
    const void     *hit = rc_index_lookup(&w->ix, target_rank, disp, len);
    struct rc_pend *p;

    if (hit && !rc_cfg.verify) {
        memcpy(buf, hit, len);
        RC_COUNT(w, hits, 1);
        pthread_mutex_unlock(&w->lock);
        return MPI_SUCCESS;
    }
    if (hit) {
        /* verify: the real get fills the buffer; the cached copy is
         * compared with it at completion */
        void *copy = malloc(len);

        RC_COUNT(w, hits, 1);
        rc = PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank,
                      target_disp, target_count, target_datatype, win);
        if (copy) {
            memcpy(copy, hit, len);
            if (rc != MPI_SUCCESS || rc_pend_add(w, RC_P_VERIFY, target_rank, disp, len, buf, copy))
                free(copy);
        }
        pthread_mutex_unlock(&w->lock);
        return rc;
    }
    if (w->node_on && w->mode == RC_READONLY && !rc_cfg.verify &&
        rc_node_may_take(w, target_rank, disp, len)) {
        /* what a neighbour of this node fetched, when the window is
         * readonly there too and not invalidated since */
        for (int n = 0; n < w->node_n; n++)
            if (n != w->node_me &&
                rc_node_read(w->node_seg[n], target_rank, disp, len, w->node_gen, buf)) {
                rc_cache_insert(w, target_rank, disp, len, buf);
                RC_COUNT(w, node_hits, 1);
                pthread_mutex_unlock(&w->lock);
                return MPI_SUCCESS;
            }
    }
    if (!rc_cfg.verify && (p = rc_pend_find(w, target_rank, disp, len)) &&
        !rc_pend_add(w, RC_P_REPEAT, target_rank, disp, len, buf, p->buf)) {
        /* p may have moved (rc_pend_add grows the array): buf of the
         * new entry was taken before */
        RC_COUNT(w, pending_hits, 1);
        pthread_mutex_unlock(&w->lock);
        return MPI_SUCCESS;
    }
    rc = PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank,
                  target_disp, target_count, target_datatype, win);
    if (rc == MPI_SUCCESS) {
        RC_COUNT(w, misses, 1);
        rc_pend_add(w, RC_P_PRIMARY, target_rank, disp, len, buf, NULL);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;

pass:
    return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank,
                    target_disp, target_count, target_datatype, win);
}

/* An own write to target through (disp, count, type): drop what it
 * overlaps, all of the target's entries when its range is unknown. */
static void own_write(MPI_Win win, int target, MPI_Aint disp, int count,
                      MPI_Datatype type)
{
    struct rc_win *w = rc_win_of(win);
    uint64_t       off, len;

    if (!w || target < 0 || target >= w->nranks)
        return;
    if (rc_target_range(w, target, disp, count, type, &off, &len)) {
        off = 0;
        len = UINT64_MAX;
    }
    rc_own_write(w, target, off, len);
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, MPI_Win win)
{
    own_write(win, target_rank, target_disp, target_count, target_datatype);
    return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank,
                    target_disp, target_count, target_datatype, win);
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count,
             MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    own_write(win, target_rank, target_disp, target_count, target_datatype);
    return PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank,
                     target_disp, target_count, target_datatype, win, request);
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    own_write(win, target_rank, target_disp, target_count, target_datatype);
    return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank,
                           target_disp, target_count, target_datatype, op, win);
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                    MPI_Request *request)
{
    own_write(win, target_rank, target_disp, target_count, target_datatype);
    return PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank,
                            target_disp, target_count, target_datatype, op, win,
                            request);
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count,
                       MPI_Datatype origin_datatype, void *result_addr,
                       int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    own_write(win, target_rank, target_disp, target_count, target_datatype);
    return PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype,
                               result_addr, result_count, result_datatype,
                               target_rank, target_disp, target_count,
                               target_datatype, op, win);
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count,
                        MPI_Datatype origin_datatype, void *result_addr,
                        int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                        MPI_Request *request)
{
    own_write(win, target_rank, target_disp, target_count, target_datatype);
    return PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype,
                                result_addr, result_count, result_datatype,
                                target_rank, target_disp, target_count,
                                target_datatype, op, win, request);
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr,
                     MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                     MPI_Op op, MPI_Win win)
{
    own_write(win, target_rank, target_disp, 1, datatype);
    return PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank,
                             target_disp, op, win);
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
                         void *result_addr, MPI_Datatype datatype, int target_rank,
                         MPI_Aint target_disp, MPI_Win win)
{
    own_write(win, target_rank, target_disp, 1, datatype);
    return PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype,
                                 target_rank, target_disp, win);
}
