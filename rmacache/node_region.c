/*
 * node_region.c - the region that holds a window's node tier and its
 * ranks' counters (format.h: struct kvshm_rma_control), named
 * mpikvs.<job>.<node>.<window id>-rma in the shm directory, where
 * mpikvs-stat finds it and the SPANK plugin's epilog removes what a
 * crashed job left.  <job> is the Slurm job id under Slurm, else the
 * window id, which the window's first rank makes.
 */
#include "rmacache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors_internal.h"
#include "rma_region.h"
#include "virtual_nodes.h"

struct fill_args {
    const struct kvshm_rma_layout *layout;
    uint64_t nranks, win_ranks, ring_size;
};

static int fill(void *base, uint64_t size, void *arg, mpikvs_error_t *err)
{
    const struct fill_args *a = arg;

    (void)size, (void)err;
    kvshm_rma_init(base, a->layout, a->nranks, a->win_ranks, a->ring_size);
    return MPIKVS_OK;
}

/* The job part of the region's name and its step. */
static void job_of(const char *window_id, char *job, size_t len, uint32_t *step)
{
    const char *id = getenv("SLURM_JOB_ID"), *s = getenv("SLURM_STEP_ID");
    char       *end;
    unsigned long v;

    if (id && kvshm_slurm_job_id(id, NULL))
        snprintf(job, len, "%s", id);
    else
        snprintf(job, len, "%s", window_id);
    *step = KVSHM_NO_STEP;
    if (s && *s && (v = strtoul(s, &end, 10), !*end) && v < KVSHM_NO_STEP)
        *step = (uint32_t)v;
}

/* The node's first rank makes the region; the others open it once it
 * has.  MPIKVS_OK, or an error with err set. */
static int make_or_open(struct rc_win *w, const char *window_id, mpikvs_error_t *err)
{
    char                    job[KVSHM_JOB_MAX], host[40], node[KVSHM_NODE_MAX],
                            tag[KVSHM_TAG_MAX];
    uint64_t                ring = rc_cfg.budget & ~(uint64_t)7;
    struct kvshm_rma_layout l;
    int                     rc;

    struct kvshm_region_spec spec = {
        .dir = rc_cfg.shm_dir, .job = job, .node = node, .tag = tag,
        .kind = KVSHM_KIND_RMA_WINDOW, .uid = KVSHM_ANY_UID, .gid = (gid_t)-1,
        .fill = fill,
    };
    struct fill_args args = {&l, (uint64_t)w->node_n, (uint64_t)w->nranks, ring};
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_RMA_WINDOW, .writable = true,
                                 .expect_uid = getuid()};

    if (rc_cfg.shm_dir_rc != MPIKVS_OK) {
        *err = rc_cfg.shm_dir_err;
        return rc_cfg.shm_dir_rc;
    }
    job_of(window_id, job, sizeof job, &spec.step);
    kvshm_this_node_part(host, 40);
    if (rc_cfg.virtual_nodes) /* the node part libmpikvs gives them */
        kvshm_virtual_node_name(node, sizeof node, host, w->node_color);
    else
        snprintf(node, sizeof node, "%s", host);
    if ((rc = kvshm_rma_tag(window_id, tag, err)) != MPIKVS_OK ||
        (rc = kvshm_region_name(w->node_name, sizeof w->node_name, job, node, tag,
                                err)) != MPIKVS_OK ||
        (rc = kvshm_rma_layout(args.nranks, ring, &l, err)) != MPIKVS_OK)
        return rc;
    spec.size = spec.max_size = l.region_size;
    spec.fill_arg = &args;
    if (w->node_me == 0)
        rc = kvshm_region_create(&spec, &w->node_region, err);
    if (PMPI_Bcast(&rc, 1, MPI_INT, 0, w->node_comm) != MPI_SUCCESS)
        return kvshm_fail(err, MPIKVS_ERR_MPI, "MPI_Bcast in the node failed");
    if (rc != MPIKVS_OK)
        return w->node_me == 0 ? rc
                               : kvshm_fail(err, rc, "the node's first rank could not "
                                                     "make %s", w->node_name);
    if (w->node_me != 0)
        rc = kvshm_region_open(rc_cfg.shm_dir, w->node_name, &oo, &w->node_region, err);
    return rc;
}

/* This rank's place in the region, once every rank of the node has
 * it. */
static int attach(struct rc_win *w, mpikvs_error_t *err)
{
    const void              *base = w->node_region->base;
    struct kvshm_rma_control c;
    struct kvshm_rma_rank   *me;
    int                      rc;

    rc = kvshm_rma_read_control(base, w->node_region->size, w->node_name, &c, err);
    if (rc != MPIKVS_OK)
        return rc;
    if (c.nranks != (uint64_t)w->node_n)
        return kvshm_fail(err, MPIKVS_ERR_MISMATCH, "%s is for %llu ranks, not %d",
                          w->node_name, (unsigned long long)c.nranks, w->node_n);
    if (!(w->node_seg = calloc((size_t)w->node_n, sizeof *w->node_seg)))
        return kvshm_fail(err, -ENOMEM, "out of memory");
    for (int n = 0; n < w->node_n; n++)
        w->node_seg[n] = kvshm_rma_segment(base, &c, (uint64_t)n);
    me = kvshm_rma_rank(base, &c, (uint64_t)w->node_me);
    me->counters = *w->st;
    __atomic_store_n(&me->win_rank, (uint64_t)w->rank, __ATOMIC_RELAXED);
    __atomic_store_n(&me->pid, (uint64_t)getpid(), __ATOMIC_RELAXED);
    w->st = &me->counters;
    w->node_rank = me;
    rc_node_describe(w);
    return MPIKVS_OK;
}

void rc_node_close(struct rc_win *w)
{
    w->node_on = 0;
    if (w->node_rank) {
        w->own_st = *w->st;
        w->st = &w->own_st;
        __atomic_store_n(&w->node_rank->pid, 0, __ATOMIC_RELAXED);
        w->node_rank = NULL;
    }
    free(w->node_seg);
    w->node_seg = NULL;
    if (w->node_region) {
        /* the name went at open, but for a node whose set-up failed:
         * the first rank to leave removes it; the others find it gone,
         * and everyone's mapping stays valid until it closes */
        kvshm_region_unlink(rc_cfg.shm_dir, w->node_name);
        kvshm_region_close(&w->node_region);
    }
}

int rc_node_open(struct rc_win *w, MPI_Comm comm)
{
    char           window_id[KVSHM_JOB_MAX] = "";
    mpikvs_error_t err;
    int            rc, mine, all;

    if (!w->node_on)
        return MPI_SUCCESS;
    w->node_on = 0;
    if (rc_cfg.virtual_nodes) {
        w->node_color = kvshm_virtual_node_of(w->rank, w->nranks,
                                              rc_cfg.virtual_nodes);
        rc = PMPI_Comm_split(comm, w->node_color, 0, &w->node_comm);
    } else {
        rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                  &w->node_comm);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Comm_size(w->node_comm, &w->node_n);
    PMPI_Comm_rank(w->node_comm, &w->node_me);
    /* one id for the window on every node: its first rank's (a bcast
     * over comm, so every rank takes part, a node of one rank too: one
     * that left it out would take a later bcast of the program's for
     * this one) */
    if (w->rank == 0)
        kvshm_unique_id(window_id, sizeof window_id);
    if ((rc = PMPI_Bcast(window_id, sizeof window_id, MPI_CHAR, 0, comm)) != MPI_SUCCESS)
        return rc;
    if (w->node_n == 1)
        return MPI_SUCCESS; /* no neighbours (node_comm freed with w) */
    mine = make_or_open(w, window_id, &err);
    if (mine == MPIKVS_OK)
        mine = attach(w, &err);
    if (mine != MPIKVS_OK)
        fprintf(stderr, "mpikvs-rmacache: window %d has no node tier: %s\n", w->seq,
                err.text);
    /* all of the node or none: a neighbour reads every segment */
    if ((rc = PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, w->node_comm)) != MPI_SUCCESS)
        return rc;
    if (all != MPIKVS_OK) {
        rc_node_close(w);
        return MPI_SUCCESS;
    }
    w->node_on = 1;
    /* every rank of the node holds the region now: its name goes, so
     * that a job that dies (MPI_Abort, a kill) leaves nothing behind;
     * mpikvs-stat finds it through the ranks (shm/held.h) */
    if (w->node_me == 0)
        kvshm_region_unlink(rc_cfg.shm_dir, w->node_name);
    return MPI_SUCCESS;
}

void rc_node_describe(struct rc_win *w)
{
    if (!w->node_rank)
        return;
    __atomic_store_n(&w->node_rank->mode, (uint64_t)w->mode, __ATOMIC_RELAXED);
    if (w->node_me == 0)
        kvshm_rma_set_name(w->node_region->base, w->name);
}
