/*
 * win.c - the windows: their state made at creation (an attribute of
 * the window, freed by MPI at MPI_Win_free through the delete callback),
 * the mode each gets, MPI_Win_set_info and MPI_Win_set_name, and the
 * statistics at MPI_Finalize.
 */
#include "rmacache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RC_INFO_KEY "mpikvs_rmacache"

static int             keyval = MPI_KEYVAL_INVALID;
static pthread_once_t  keyval_once = PTHREAD_ONCE_INIT;
static _Atomic int     next_seq;
static struct rc_win  *live;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void win_destroy(struct rc_win *w)
{
    rc_node_close(w);
    if (w->node_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&w->node_comm);
    for (size_t i = 0; i < w->npend; i++)
        if (w->pend[i].kind == RC_P_VERIFY)
            free(w->pend[i].from);
    if (w->ix_ready)
        rc_index_fini(&w->ix);
    rc_repeat_fini(w);
    pthread_mutex_destroy(&w->lock);
    free(w->pend);
    free(w->ptab);
    free(w->disp_unit);
    free(w->lockmode);
    free(w->node_written);
    free(w);
}

static int delete_fn(MPI_Win win, int kv, void *val, void *extra)
{
    struct rc_win *w = val;

    (void)win, (void)kv, (void)extra;
    pthread_mutex_lock(&live_lock);
    for (struct rc_win **p = &live; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    pthread_mutex_unlock(&live_lock);
    rc_stats_keep(w);
    rc_advice_keep(w);
    win_destroy(w);
    return MPI_SUCCESS;
}

static void keyval_make(void)
{
    if (PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &keyval, NULL) != MPI_SUCCESS)
        keyval = MPI_KEYVAL_INVALID;
}

struct rc_win *rc_win_of(MPI_Win win)
{
    void *val;
    int   flag = 0;

    if (keyval == MPI_KEYVAL_INVALID || win == MPI_WIN_NULL ||
        PMPI_Win_get_attr(win, keyval, &val, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return val;
}

/* The mode the info key asks for: 1 and *mode, 0 when not asked, -1
 * (said on stderr) for a value that is no mode. */
static int info_mode(MPI_Info info, int *mode, int *invalidate)
{
    char value[64];
    int  flag = 0;

    *invalidate = 0;
    if (info == MPI_INFO_NULL ||
        PMPI_Info_get(info, RC_INFO_KEY, sizeof value - 1, value, &flag) != MPI_SUCCESS ||
        !flag)
        return 0;
    if (!strcmp(value, "invalidate")) {
        *invalidate = 1;
        return 0;
    }
    if (rc_mode_parse(value, mode)) {
        fprintf(stderr, "mpikvs-rmacache: info " RC_INFO_KEY "='%s' is not a mode "
                "(use transparent, readonly or off; or invalidate in MPI_Win_set_info)\n",
                value);
        return -1;
    }
    return 1;
}

static int gather_units(struct rc_win *w, MPI_Comm comm, int disp_unit)
{
    int  mine[2] = {disp_unit, w->mode == RC_READONLY && rc_cfg.node};
    int *all = malloc(2 * (size_t)w->nranks * sizeof *all);
    int  rc, node = 1;

    if (!all)
        return MPI_ERR_NO_MEM;
    rc = PMPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm);
    for (int t = 0; rc == MPI_SUCCESS && t < w->nranks; t++) {
        w->disp_unit[t] = all[2 * t];
        node &= all[2 * t + 1];
    }
    free(all);
    w->node_on = node;
    return rc;
}

int rc_win_setup(MPI_Win win, MPI_Comm comm, int disp_unit, int dynamic, MPI_Info info)
{
    struct rc_win *w;
    int            rc, mode, inv, given;

    rc_config_once();
    pthread_once(&keyval_once, keyval_make);
    if (keyval == MPI_KEYVAL_INVALID)
        return MPI_SUCCESS; /* no cache, the window works */
    if (!(w = calloc(1, sizeof *w)))
        return MPI_ERR_NO_MEM;
    pthread_mutex_init(&w->lock, NULL);
    w->st = &w->own_st;
    w->node_comm = MPI_COMM_NULL;
    w->win = win;
    w->dynamic = dynamic;
    w->seq = atomic_fetch_add(&next_seq, 1);
    PMPI_Comm_rank(comm, &w->rank);
    PMPI_Comm_size(comm, &w->nranks);
    w->disp_unit = malloc((size_t)w->nranks * sizeof *w->disp_unit);
    w->lockmode = calloc((size_t)w->nranks, 1);
    w->node_written = malloc((size_t)w->nranks * sizeof *w->node_written);
    if (!w->disp_unit || !w->lockmode || !w->node_written) {
        win_destroy(w);
        return MPI_ERR_NO_MEM;
    }
    given = info_mode(info, &mode, &inv);
    w->mode_from_info = given == 1;
    w->mode = given == 1 ? mode : rc_rule_mode(w->seq, NULL, RC_TRANSPARENT);
    w->node_gen = 1;
    for (int t = 0; t < w->nranks; t++)
        w->node_written[t] = (struct rc_bound){UINT64_MAX, 0};
    /* displacements are scaled by the target's unit, which only the
     * target knows: every rank gathers them once, with whether it wants
     * the node tier (all must: making it is collective) */
    if ((rc = gather_units(w, comm, dynamic ? 1 : disp_unit)) != MPI_SUCCESS ||
        (rc = rc_node_open(w, comm)) != MPI_SUCCESS) {
        win_destroy(w);
        return rc;
    }
    w->order_seen = atomic_load(&rc_order_gen);
    w->acquire_seen = atomic_load(&rc_acquire_gen);
    if ((rc = PMPI_Win_set_attr(win, keyval, w)) != MPI_SUCCESS) {
        win_destroy(w);
        return rc;
    }
    pthread_mutex_lock(&live_lock);
    w->next = live;
    live = w;
    pthread_mutex_unlock(&live_lock);
    return MPI_SUCCESS;
}

/* A bad info value is refused before the window exists. */
static int info_check(MPI_Info info)
{
    int mode, inv;

    return info_mode(info, &mode, &inv) < 0 ? MPI_ERR_INFO_VALUE : MPI_SUCCESS;
}

static int made(int rc, MPI_Win *win, MPI_Comm comm, int disp_unit, int dynamic,
                MPI_Info info)
{
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = rc_win_setup(*win, comm, disp_unit, dynamic, info)) != MPI_SUCCESS)
        PMPI_Win_free(win);
    return rc;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                   MPI_Comm comm, MPI_Win *win)
{
    int rc = info_check(info);

    if (rc != MPI_SUCCESS)
        return rc;
    return made(PMPI_Win_create(base, size, disp_unit, info, comm, win), win, comm,
                disp_unit, 0, info);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                     void *baseptr, MPI_Win *win)
{
    int rc = info_check(info);

    if (rc != MPI_SUCCESS)
        return rc;
    return made(PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win), win,
                comm, disp_unit, 0, info);
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    int rc = info_check(info);

    if (rc != MPI_SUCCESS)
        return rc;
    return made(PMPI_Win_create_dynamic(info, comm, win), win, comm, 1, 1, info);
}

/* Shared windows are read with loads and stores, which no one sees:
 * never cached.  Counted in the creation order all the same. */
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info,
                            MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    atomic_fetch_add(&next_seq, 1);
    return PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
}

/* attach and detach are local: this rank's alone (rc_user_invalidate) */
static void local_invalidate(MPI_Win win)
{
    struct rc_win *w = rc_win_of(win);

    if (w) {
        pthread_mutex_lock(&w->lock);
        rc_user_invalidate(w, 0);
        pthread_mutex_unlock(&w->lock);
    }
}

/* Memory attached or detached here may be what another rank cached by
 * address; this rank's own view changes too: drop all. */
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    local_invalidate(win);
    return PMPI_Win_attach(win, base, size);
}

int MPI_Win_detach(MPI_Win win, const void *base)
{
    local_invalidate(win);
    return PMPI_Win_detach(win, base);
}

int MPI_Win_set_info(MPI_Win win, MPI_Info info)
{
    struct rc_win *w = rc_win_of(win);
    int            mode, inv, given;

    if (w && (given = info_mode(info, &mode, &inv)) != 0) {
        if (given < 0)
            return MPI_ERR_INFO_VALUE;
    }
    if (w && (given == 1 || inv)) {
        pthread_mutex_lock(&w->lock);
        rc_user_invalidate(w, 1); /* MPI_Win_set_info is collective */
        if (given == 1) {
            w->mode = mode;
            w->mode_from_info = 1;
            rc_node_describe(w);
        }
        pthread_mutex_unlock(&w->lock);
    }
    return PMPI_Win_set_info(win, info);
}

int MPI_Win_set_name(MPI_Win win, const char *win_name)
{
    struct rc_win *w = rc_win_of(win);
    int            mode;

    if (w) {
        pthread_mutex_lock(&w->lock);
        snprintf(w->name, sizeof w->name, "%s", win_name);
        if (!w->mode_from_info && rc_rule_by_name(win_name, &mode) && mode != w->mode) {
            rc_user_invalidate(w, 0); /* MPI_Win_set_name is local */
            w->mode = mode;
        }
        rc_node_describe(w);
        pthread_mutex_unlock(&w->lock);
    }
    return PMPI_Win_set_name(win, win_name);
}

/* Windows the program never freed: their statistics, and their
 * regions' names go (MPI frees none of them). */
int MPI_Finalize(void)
{
    rc_config_once();
    pthread_mutex_lock(&live_lock);
    for (struct rc_win *w = live; w; w = w->next) {
        pthread_mutex_lock(&w->lock);
        rc_stats_keep(w);
        rc_advice_keep(w);
        rc_node_close(w);
        pthread_mutex_unlock(&w->lock);
    }
    pthread_mutex_unlock(&live_lock);
    if (rc_cfg.stats)
        rc_stats_print();
    rc_advice_print();
    rc_order_event();
    return PMPI_Finalize();
}
