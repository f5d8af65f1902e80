/*
 * rmacache.h - the state libmpikvs-rmacache keeps per window, and the
 * operations on it that the wrappers (win.c, rma.c, sync.c and the
 * generated ordering.c) share; they live in cache.c.  See
 * mpikvs-rmacache(7) for the rules these implement.
 */
#ifndef MPIKVS_RMACACHE_H
#define MPIKVS_RMACACHE_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "index.h"
#include "node.h"
#include "region.h"

enum rc_mode {
    RC_OFF = KVSHM_RMA_OFF,
    RC_TRANSPARENT = KVSHM_RMA_TRANSPARENT,
    RC_READONLY = KVSHM_RMA_READONLY
};

/* lock state of a target */
enum { RC_UNLOCKED, RC_SHARED, RC_EXCLUSIVE };

/* Causes of invalidation, counted apart (rc_count_dropped). */
enum rc_cause {
    RC_INV_OWN_WRITE, /* a put, accumulate or atomic of this process */
    RC_INV_EPOCH,     /* an epoch ended (fence, complete, unlock) */
    RC_INV_ORDER,     /* a call that can order this process after a write */
    RC_INV_USER,      /* MPI_Win_set_info, attach/detach, a mode change */
    RC_NCAUSES
};

/* A window's counters (format.h: KVSHM_RMA_COUNTERS) are written by
 * their rank alone, under the window's lock: a plain increment, made
 * visible to mpikvs-stat, which reads them in the window's region, with
 * a relaxed store. */
#define RC_COUNT(w, field, n) \
    __atomic_store_n(&(w)->st->field, (w)->st->field + (n), __ATOMIC_RELAXED)

/* A get issued to MPI and not yet complete. */
struct rc_pend {
    uint64_t disp;
    size_t   len;
    int      target;
    int      kind;    /* RC_P_PRIMARY, RC_P_REPEAT, RC_P_VERIFY */
    int      stale;   /* may not enter the cache nor serve a repeat */
    void    *buf;     /* where the data arrives (the user's buffer) */
    void    *from;    /* REPEAT: the primary's buffer; VERIFY: the cached copy */
};
enum { RC_P_PRIMARY, RC_P_REPEAT, RC_P_VERIFY };

struct rc_win {
    pthread_mutex_t  lock;
    MPI_Win          win;
    int              mode;
    int              mode_from_info; /* the application chose: env rules by name do not apply */
    int              rank, nranks;
    int              dynamic;        /* displacements are addresses */
    int              seq;            /* creation order in this process */
    int             *disp_unit;      /* nranks */
    unsigned char   *lockmode;       /* nranks: RC_UNLOCKED... */
    int              nexclusive;
    struct rc_index  ix;
    int              ix_ready;
    uint64_t         order_seen, acquire_seen;
    struct rc_pend  *pend;
    size_t           npend, cap;
    uint32_t        *ptab;           /* pending primaries by key: index + 1 */
    size_t           ptab_size;
    /* the counters: in the rank's block of the window's region when the
     * window has the node tier, else own_st */
    struct kvshm_rma_counters *st;
    struct kvshm_rma_counters  own_st;
    char             name[64];
    /* the node tier (readonly windows): the window's region on the node
     * (node_region.c), with the segments of the node's ranks,
     * node_seg[node_me] this rank's own */
    int              node_on, node_n, node_me;
    int              node_color;     /* MPIKVS_VIRTUAL_NODES: its node */
    MPI_Comm         node_comm;
    struct kvshm_region *node_region;
    struct kvshm_rma_rank *node_rank; /* this rank's block in it */
    char             node_name[KVSHM_NAME_MAX + 1];
    void           **node_seg;
    /* What the node's ranks agree on: the collective invalidations only
     * (MPI_Win_set_info), + 1.  A neighbour's entry is taken when its gen
     * is the reader's, so a local invalidation (attach, detach, a mode
     * change by name) must not move it: the ranks would drift apart, and
     * one rank's gen after MPI_Win_set_info could equal what another's
     * was before. */
    uint32_t         node_gen;
    /* A local invalidation since the last collective one: this rank
     * dropped what its neighbours still hold, so it neither takes nor
     * publishes node-tier entries until the next MPI_Win_set_info. */
    int              node_blind;
    /* nranks: per target, a range covering this rank's own writes since
     * the last collective invalidation (empty: lo >= hi).  A neighbour
     * may hold what was there before them, so this rank takes no
     * node-tier entry that overlaps it.  Coarse (one range a target):
     * a miss too many, never a stale hit. */
    struct rc_bound *node_written;
    /* transparent windows: data fetched again, unchanged or not, since
     * this rank's previous get of it (repeats.c) */
    struct rc_seen  *seen;
    uint32_t        *seen_writes;    /* nranks: own writes per target */
    uint32_t         seen_gen;
    uint64_t         refetched_same, refetched_changed;
    struct rc_win   *next;           /* the live windows (stats at finalize) */
};

/* Settings from the environment (read once, at the first window). */
struct rc_config {
    size_t budget;   /* MPIKVS_RMACACHE_BYTES */
    size_t max_get;  /* MPIKVS_RMACACHE_MAX_GET */
    int    verify;   /* MPIKVS_RMACACHE_VERIFY */
    int    stats;    /* MPIKVS_RMACACHE_STATS */
    int    node;     /* MPIKVS_RMACACHE_NODE */
    unsigned virtual_nodes; /* MPIKVS_VIRTUAL_NODES; 0: the real ones */
    char   shm_dir[KVSHM_DIR_MAX + 1]; /* where node tiers go (kvshm_job_dir) */
    int    shm_dir_rc;    /* and MPIKVS_OK, or why there is none */
    mpikvs_error_t shm_dir_err;
};
extern struct rc_config rc_cfg;

/* Two counts of events, bumped after the call; a window that sees one
 * changed drops what such an event ends (rc_order_check).
 *
 * rc_acquire_gen: the calls that can order this process after a write
 * of another process: the calls of ordering.list, MPI_Win_sync, lock,
 * fence and PSCW.  In MPI's unified model such a write need not be an
 * RMA call on this window: the target's own store (made visible by its
 * MPI_Win_sync, then ordered by a barrier or a message) or a put through
 * another window over the same memory.  An exclusive lock keeps out only
 * the RMA of this window, so these end even an exclusive target's
 * entries.
 * rc_order_gen: those and the calls that only complete this process's
 * own operations (flush, unlock); they end the pending gets of targets
 * not held exclusively (rc_ordered). */
extern _Atomic uint64_t rc_order_gen, rc_acquire_gen;

static inline void rc_order_event(void)
{
    atomic_fetch_add_explicit(&rc_acquire_gen, 1, memory_order_release);
    atomic_fetch_add_explicit(&rc_order_gen, 1, memory_order_release);
}

static inline void rc_complete_event(void)
{
    atomic_fetch_add_explicit(&rc_order_gen, 1, memory_order_release);
}

/* The window's state, NULL when none (not made through us, shared). */
struct rc_win *rc_win_of(MPI_Win win);

/* Make the state of a new window (collective over comm: gathers the
 * disp units; comm may be MPI_COMM_NULL for dynamic windows, which have
 * none).  Returns an MPI error code. */
int rc_win_setup(MPI_Win win, MPI_Comm comm, int disp_unit, int dynamic,
                 MPI_Info info);

/* Mode by name: 0 and *mode, or -1. */
int rc_mode_parse(const char *text, int *mode);
const char *rc_mode_name(int mode);

/* The mode the env rules give the window of creation order seq (name:
 * NULL at creation), dflt when none matches. */
int rc_rule_mode(int seq, const char *name, int dflt);

/* 1 and *mode when a rule by name matches name (MPI_Win_set_name). */
int rc_rule_by_name(const char *name, int *mode);

/* Drop every entry and mark every pending get stale.  Caller locks. */
void rc_drop_all(struct rc_win *w, enum rc_cause cause);

/* The program's invalidation of the window (rc_drop_all for
 * RC_INV_USER).  collective: MPI_Win_set_info, made by every rank, which
 * moves node_gen and brings the rank back into the node tier; else a
 * call of this rank alone (attach, detach, a mode change by name), after
 * which it stays out of the node tier (node_blind).  Caller locks. */
void rc_user_invalidate(struct rc_win *w, int collective);

/* Whether a node-tier entry of [disp, disp + len) of target may serve
 * this rank: not blind, and not over its own writes (node_written). */
int rc_node_may_take(const struct rc_win *w, int target, uint64_t disp,
                     uint64_t len);

/* Pending gets to target (-1: all) are complete: fill repeats, compare
 * verified ones, and keep the primaries' data if keep (and they are not
 * stale).  Caller locks. */
void rc_complete(struct rc_win *w, int target, int keep);

/* A synchronization call on w returned.  target: -1 for all.
 * what: RC_S_FLUSH (flush, flush_local: the target's gets are complete),
 * RC_S_UNLOCK, RC_S_FENCE, RC_S_COMPLETE (PSCW access epoch ends),
 * RC_S_ORDER (Win_sync, lock, post, wait, test, start: no completion).
 * Locks w itself. */
enum { RC_S_FLUSH, RC_S_UNLOCK, RC_S_FENCE, RC_S_COMPLETE, RC_S_ORDER };
void rc_sync(struct rc_win *w, int what, int target);

/* The event of a synchronization call of that kind (on any window):
 * flush and unlock only complete; the others can order. */
static inline void rc_sync_event(int what)
{
    if (what == RC_S_FLUSH || what == RC_S_UNLOCK)
        rc_complete_event();
    else
        rc_order_event();
}

/* Own write of target bytes [disp, disp + len): drop what overlaps. */
void rc_own_write(struct rc_win *w, int target, uint64_t disp, uint64_t len);

/* Byte range of count elements of type at disp on target: 0, or -1 when
 * the window state cannot say (then everything of the target is
 * dropped). */
int rc_target_range(const struct rc_win *w, int target, MPI_Aint disp,
                    int count, MPI_Datatype type, uint64_t *off, uint64_t *len);

/* Count n entries or pending gets dropped for cause. */
void rc_count_dropped(struct rc_win *w, enum rc_cause cause, uint64_t n);

/* Enter a completed get into w's index (counting what it evicts).
 * Caller locks. */
void rc_cache_insert(struct rc_win *w, int target, uint64_t disp, size_t len,
                     const void *data);

/* The node tier of a new window whose ranks all asked for it (node_on):
 * the window's region on the node, made by the node's first rank and
 * opened by the others (collective over comm).  Without it (one rank on
 * the node, no room in the shm directory: said on stderr) the window
 * works without the tier.  Returns an MPI error code. */
int rc_node_open(struct rc_win *w, MPI_Comm comm);

/* The window's name and this rank's mode, for mpikvs-stat (after a
 * change).  Caller locks. */
void rc_node_describe(struct rc_win *w);

/* Leave the region (removing its name: the first to leave does). */
void rc_node_close(struct rc_win *w);

/* Statistics of a window that ends (or of all live ones at finalize). */
void rc_stats_keep(const struct rc_win *w);
void rc_stats_print(void);

/* Lazy check of rc_order_gen and rc_acquire_gen.  Caller locks. */
void rc_order_check(struct rc_win *w);

/* The pending primary get of exactly this data that may serve a repeat,
 * or NULL.  Caller locks. */
struct rc_pend *rc_pend_find(struct rc_win *w, int target, uint64_t disp,
                             size_t len);

/* Record a pending get; 0, or -1 (no memory: then the caller does not
 * cache this one).  Caller locks. */
int rc_pend_add(struct rc_win *w, int kind, int target, uint64_t disp,
                size_t len, void *buf, void *from);

/* The index of w, made at the first cacheable get; NULL when it cannot
 * be (the window then passes through).  Caller locks. */
struct rc_index *rc_win_index(struct rc_win *w);

/* repeats.c: a completed primary get of a transparent window brought
 * data: compare it with what this rank's previous get of the key
 * brought (refetched_same, refetched_changed).  Caller locks. */
void rc_repeat_note(struct rc_win *w, int target, uint64_t disp, size_t len,
                    const void *data);
/* An own write to target: its earlier data is not compared again. */
void rc_repeat_written(struct rc_win *w, int target);
/* The program's invalidation: nothing earlier is compared again. */
void rc_repeat_forget(struct rc_win *w);
void rc_repeat_fini(struct rc_win *w);

/* advice.c: a window's figures for the advice at MPI_Finalize (when it
 * is freed, or then), and the advice itself: collective over
 * MPI_COMM_WORLD, so every rank calls it. */
void rc_advice_keep(const struct rc_win *w);
void rc_advice_print(void);

/* Read the environment once (the first window, or MPI_Finalize). */
void rc_config_once(void);

#endif /* MPIKVS_RMACACHE_H */
