/*
 * cache.c - the rules of libmpikvs-rmacache: when data enters a window's
 * cache, what each synchronization ends, pending gets (rmacache.h).
 */
#include "rmacache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic uint64_t rc_order_gen, rc_acquire_gen;

/* Pending primaries are found by key through ptab while there are at
 * most this many of them; beyond, a repeat simply goes to MPI. */
#define RC_PTAB_SIZE 1024u
#define RC_PTAB_MAX  512u

void rc_count_dropped(struct rc_win *w, enum rc_cause cause, uint64_t n)
{
    switch (cause) {
    case RC_INV_OWN_WRITE: RC_COUNT(w, own_write, n); break;
    case RC_INV_EPOCH:     RC_COUNT(w, epoch, n); break;
    case RC_INV_ORDER:     RC_COUNT(w, order, n); break;
    case RC_INV_USER:      RC_COUNT(w, user, n); break;
    case RC_NCAUSES:       break;
    }
}

void rc_cache_insert(struct rc_win *w, int target, uint64_t disp, size_t len,
                     const void *data)
{
    uint64_t before = w->ix.evictions;

    rc_index_insert(&w->ix, target, disp, len, data);
    RC_COUNT(w, evictions, w->ix.evictions - before);
}

struct rc_index *rc_win_index(struct rc_win *w)
{
    if (!w->ix_ready) {
        if (rc_index_init(&w->ix, rc_cfg.budget, w->nranks)) {
            fprintf(stderr, "mpikvs-rmacache: no memory for a cache of %zu bytes: "
                    "window %d passes through (set MPIKVS_RMACACHE_BYTES lower)\n",
                    rc_cfg.budget, w->seq);
            w->mode = RC_OFF;
            return NULL;
        }
        w->ix_ready = 1;
    }
    return &w->ix;
}

static size_t ptab_hash(int target, uint64_t disp, size_t len)
{
    uint64_t h = (disp * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(uint32_t)target << 20) ^ len;

    h ^= h >> 29;
    return (size_t)(h & (RC_PTAB_SIZE - 1));
}

static void ptab_put(struct rc_win *w, size_t i)
{
    const struct rc_pend *p = &w->pend[i];
    size_t                h = ptab_hash(p->target, p->disp, p->len);

    while (w->ptab[h])
        h = (h + 1) & (RC_PTAB_SIZE - 1);
    w->ptab[h] = (uint32_t)i + 1;
}

struct rc_pend *rc_pend_find(struct rc_win *w, int target, uint64_t disp,
                             size_t len)
{
    if (!w->ptab)
        return NULL;
    for (size_t h = ptab_hash(target, disp, len); w->ptab[h];
         h = (h + 1) & (RC_PTAB_SIZE - 1)) {
        struct rc_pend *p = &w->pend[w->ptab[h] - 1];

        if (p->target == target && p->disp == disp && p->len == len && !p->stale)
            return p;
    }
    return NULL;
}

int rc_pend_add(struct rc_win *w, int kind, int target, uint64_t disp,
                size_t len, void *buf, void *from)
{
    if (w->npend == w->cap) {
        size_t          cap = w->cap ? 2 * w->cap : 64;
        struct rc_pend *p = realloc(w->pend, cap * sizeof *p);

        if (!p)
            return -1;
        w->pend = p;
        w->cap = cap;
    }
    if (!w->ptab && !(w->ptab = calloc(RC_PTAB_SIZE, sizeof *w->ptab)))
        return -1;
    w->pend[w->npend] = (struct rc_pend){.disp = disp, .len = len, .target = target,
                                         .kind = kind, .buf = buf, .from = from};
    if (kind == RC_P_PRIMARY && w->npend < RC_PTAB_MAX)
        ptab_put(w, w->npend);
    w->npend++;
    return 0;
}

static void ptab_rebuild(struct rc_win *w)
{
    if (!w->ptab)
        return;
    memset(w->ptab, 0, RC_PTAB_SIZE * sizeof *w->ptab);
    for (size_t i = 0; i < w->npend && i < RC_PTAB_MAX; i++)
        if (w->pend[i].kind == RC_P_PRIMARY && !w->pend[i].stale)
            ptab_put(w, i);
}

/* A flush or an unlock (rc_complete_event): pending gets of targets w
 * does not hold exclusively can no longer enter the cache nor serve
 * repeats (conservative: such a call orders nothing after another
 * process; kept as the rule mpikvs-rmacache(7) states).  Entries of a
 * transparent window exist only for exclusive targets, whom no RMA of
 * this window but ours writes while we hold the lock. */
static void rc_ordered(struct rc_win *w)
{
    if (w->mode != RC_TRANSPARENT)
        return;
    for (size_t i = 0; i < w->npend; i++) {
        struct rc_pend *p = &w->pend[i];

        if (!p->stale && p->kind == RC_P_PRIMARY &&
            w->lockmode[p->target] != RC_EXCLUSIVE) {
            p->stale = 1;
            rc_count_dropped(w, RC_INV_ORDER, 1);
        }
    }
}

void rc_order_check(struct rc_win *w)
{
    uint64_t a = atomic_load_explicit(&rc_acquire_gen, memory_order_acquire);
    uint64_t g = atomic_load_explicit(&rc_order_gen, memory_order_acquire);

    if (a != w->acquire_seen) {
        /* the process may now be ordered after any write, an exclusive
         * target's own store too (rc_acquire_gen): a transparent window
         * keeps nothing from before */
        w->acquire_seen = a;
        w->order_seen = g;
        if (w->mode == RC_TRANSPARENT)
            rc_drop_all(w, RC_INV_ORDER);
    } else if (g != w->order_seen) {
        w->order_seen = g;
        rc_ordered(w);
    }
}

void rc_drop_all(struct rc_win *w, enum rc_cause cause)
{
    if (w->ix_ready) {
        rc_count_dropped(w, cause, w->ix.entries);
        rc_index_clear(&w->ix);
    }
    for (size_t i = 0; i < w->npend; i++)
        if (w->pend[i].kind == RC_P_PRIMARY && !w->pend[i].stale) {
            w->pend[i].stale = 1;
            rc_count_dropped(w, cause, 1);
        }
}

static void written_clear(struct rc_win *w)
{
    for (int t = 0; t < w->nranks; t++)
        w->node_written[t] = (struct rc_bound){UINT64_MAX, 0};
}

void rc_user_invalidate(struct rc_win *w, int collective)
{
    rc_drop_all(w, RC_INV_USER);
    rc_repeat_forget(w);
    if (!collective) {
        w->node_blind = 1;
        return;
    }
    /* every rank of the node drops here too: what the neighbours
     * published before is not for us any more, nor ours for them, and
     * what any of them holds from now on was fetched after our writes */
    if (++w->node_gen == 0)
        w->node_gen = 1;
    w->node_blind = 0;
    written_clear(w);
}

int rc_node_may_take(const struct rc_win *w, int target, uint64_t disp,
                     uint64_t len)
{
    const struct rc_bound *b = &w->node_written[target];

    return !w->node_blind &&
           (b->lo >= b->hi || disp >= b->hi || (disp < b->lo && b->lo - disp >= len));
}

void rc_complete(struct rc_win *w, int target, int keep)
{
    size_t j = 0;

    for (size_t i = 0; i < w->npend; i++) {
        struct rc_pend *p = &w->pend[i];

        if (target >= 0 && p->target != target) {
            w->pend[j++] = *p;
            continue;
        }
        switch (p->kind) {
        case RC_P_PRIMARY:
            /* what readonly would have kept: was it fetched before? */
            if (!p->stale && w->mode == RC_TRANSPARENT)
                rc_repeat_note(w, p->target, p->disp, p->len, p->buf);
            if (keep && !p->stale && w->ix_ready &&
                (w->mode == RC_READONLY ||
                 (w->mode == RC_TRANSPARENT && w->lockmode[p->target] == RC_EXCLUSIVE))) {
                rc_cache_insert(w, p->target, p->disp, p->len, p->buf);
                if (w->node_on && w->mode == RC_READONLY && !w->node_blind &&
                    rc_node_publish(w->node_seg[w->node_me], p->target, p->disp,
                                    p->len, w->node_gen, p->buf))
                    RC_COUNT(w, published, 1);
            }
            break;
        case RC_P_REPEAT:
            if (p->buf != p->from)
                memcpy(p->buf, p->from, p->len);
            break;
        case RC_P_VERIFY:
            RC_COUNT(w, verified, 1);
            if (memcmp(p->buf, p->from, p->len))
                RC_COUNT(w, mismatches, 1);
            free(p->from);
            break;
        }
    }
    if (j != w->npend) {
        w->npend = j;
        ptab_rebuild(w);
    }
}

void rc_sync(struct rc_win *w, int what, int target)
{
    pthread_mutex_lock(&w->lock);
    rc_order_check(w);
    switch (what) {
    case RC_S_FLUSH:
        rc_complete(w, target, 1);
        break;
    case RC_S_UNLOCK:
        if (target >= w->nranks)
            break; /* MPI refused it */
        /* the lock's entries end with it; readonly ones stay */
        rc_complete(w, target, w->mode == RC_READONLY);
        if (w->mode == RC_TRANSPARENT && w->ix_ready) {
            if (target < 0)
                rc_drop_all(w, RC_INV_EPOCH);
            else
                rc_count_dropped(w, RC_INV_EPOCH,
                                 rc_index_invalidate(&w->ix, target, 0, UINT64_MAX));
        }
        for (int t = target < 0 ? 0 : target; t < (target < 0 ? w->nranks : target + 1); t++) {
            if (w->lockmode[t] == RC_EXCLUSIVE)
                w->nexclusive--;
            w->lockmode[t] = RC_UNLOCKED;
        }
        break;
    case RC_S_FENCE:
    case RC_S_COMPLETE:
        /* fence and PSCW: entries live within one epoch, and this one
         * ends here, so a transparent window keeps none */
        rc_complete(w, -1, w->mode == RC_READONLY);
        if (w->mode == RC_TRANSPARENT)
            rc_drop_all(w, RC_INV_EPOCH);
        break;
    case RC_S_ORDER:
        break;
    }
    /* for this window and for all others */
    rc_sync_event(what);
    rc_order_check(w);
    pthread_mutex_unlock(&w->lock);
}

int rc_target_range(const struct rc_win *w, int target, MPI_Aint disp,
                    int count, MPI_Datatype type, uint64_t *off, uint64_t *len)
{
    MPI_Aint tlb, text, lb, ext;

    if (count <= 0 || target < 0 || target >= w->nranks ||
        PMPI_Type_get_true_extent(type, &tlb, &text) != MPI_SUCCESS ||
        PMPI_Type_get_extent(type, &lb, &ext) != MPI_SUCCESS || ext < 0 || text < 0)
        return -1;
    int64_t base = w->dynamic ? (int64_t)disp : (int64_t)disp * w->disp_unit[target];
    int64_t o = base + tlb;
    if (o < 0)
        return -1;
    *off = (uint64_t)o;
    *len = (uint64_t)(count - 1) * (uint64_t)ext + (uint64_t)text;
    return 0;
}

void rc_own_write(struct rc_win *w, int target, uint64_t disp, uint64_t len)
{
    uint64_t end = len > UINT64_MAX - disp ? UINT64_MAX : disp + len;

    pthread_mutex_lock(&w->lock);
    rc_order_check(w);
    if (w->ix_ready)
        rc_count_dropped(w, RC_INV_OWN_WRITE,
                         rc_index_invalidate(&w->ix, target, disp, len));
    rc_repeat_written(w, target);
    if (w->node_on) {
        struct rc_bound *b = &w->node_written[target];

        rc_node_withdraw(w->node_seg[w->node_me], target, disp, len);
        if (disp < b->lo)
            b->lo = disp;
        if (end > b->hi)
            b->hi = end;
    }
    for (size_t i = 0; i < w->npend; i++) {
        struct rc_pend *p = &w->pend[i];

        if (p->target == target && p->kind == RC_P_PRIMARY && !p->stale &&
            p->disp < end && disp < p->disp + p->len) {
            p->stale = 1;
            rc_count_dropped(w, RC_INV_OWN_WRITE, 1);
        }
    }
    pthread_mutex_unlock(&w->lock);
}
