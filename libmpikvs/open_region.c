/*
 * open_region.c - the node's data region for mpikvs_open
 * (open_region.h): the plugin's job layout where there is one, else a
 * region this library makes or attaches to, and the handle pointed into
 * it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "errors_internal.h"
#include "handle.h"
#include "node_tier.h"
#include "open_region.h"

static struct kvshm_data_shape kvs_shape(const mpikvs_t *kvs)
{
    struct kvshm_data_shape s = {kvs->tab.key_size, kvs->tab.value_size,
                                 kvs->tab.slots, (uint32_t)kvs->mode};
    return s;
}

struct new_region {
    mpikvs_t   *kvs;
    const char *table;
};

/* Lay out a region this library makes, before it has a name. */
static int fill_new_region(void *base, uint64_t size, void *arg,
                           mpikvs_error_t *err)
{
    const struct new_region *n = arg;
    struct kvshm_data_shape shape = kvs_shape(n->kvs);

    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, (uint64_t)n->kvs->local_size, &shape,
                           n->table, err);
}

static int create_region(mpikvs_t *kvs, const char *job, const char *node,
                         const char *tag)
{
    struct new_region arg = {kvs, kvs->table ? kvs->table->name
                                             : KVSHM_PLAN_DEFAULT_TABLE};
    struct kvshm_region_spec spec = {
        .dir = kvs->shm_dir[0] ? kvs->shm_dir : NULL,
        .job = job, .node = node, .tag = tag,
        .kind = KVSHM_KIND_DATA,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1,
        .step = KVSHM_NO_STEP,
        .fill = fill_new_region, .fill_arg = &arg,
    };
    mpikvs_error_t err;
    int rc;

    spec.size = kvshm_data_buckets_offset((uint64_t)kvs->local_size) +
                kvs->tab.nbuckets * kvs->tab.bucket_size;
    rc = kvshm_region_create(&spec, &kvs->region, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    kvs->created = true;
    kvs->tab.buckets_offset = kvshm_data_buckets_offset(
        (uint64_t)kvs->local_size);
    return MPIKVS_OK;
}

/* A region another process made (the leader, or the plugin): its buckets
 * must have this rank's shape.  The first opener of a region the plugin
 * made without a config lays them out. */
static int attach_region(mpikvs_t *kvs)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA, .writable = true,
                                 .expect_uid = geteuid()};
    struct kvshm_data_shape shape = kvs_shape(kvs);
    struct kvshm_data_control *c, seen;
    mpikvs_error_t err;
    int rc;

    rc = kvshm_region_open(kvs->shm_dir[0] ? kvs->shm_dir : NULL,
                           kvs->region_name, &oo, &kvs->region, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    c = (struct kvshm_data_control *)((char *)kvs->region->base +
                                      KVSHM_DATA_CONTROL_OFFSET);
    /* The control block is data: check it (the counters before they lay
     * out buckets after them, the buckets once laid out) and take offsets
     * and counts only from the checked copy, never an unchecked one. */
    rc = kvshm_data_read_control(kvs->region->base, kvs->region->size,
                                 kvs->region_name, &seen, &err);
    if (rc == MPIKVS_OK)
        rc = kvshm_data_format(c, kvs->region->size, &shape,
                               kvs->region_name, &err);
    if (rc == MPIKVS_ERR_TOOSMALL && !kvs->job_table->shape.key_size) {
        /* the plugin made the job's --dht-size of memory without a
         * config: these buckets are this program's choice */
        char have[32];
        kvshm_format_bytes(have, sizeof(have), kvs->region->size);
        return kvs_fail(kvs, rc,
                        "the job's --dht-size, %s, is below the smallest "
                        "usable size for this program's buckets, %llu "
                        "bytes (%s): submit with a larger --dht-size",
                        have,
                        (unsigned long long)kvshm_data_min_size(seen.max_ranks,
                                                                &shape),
                        err.text);
    }
    if (rc == MPIKVS_OK)
        rc = kvshm_data_read_control(kvs->region->base, kvs->region->size,
                                     kvs->region_name, &seen, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    if (seen.bucket_size != kvs->tab.bucket_size)
        return kvs_fail(kvs, MPIKVS_ERR_CORRUPT,
                        "region %s changed its buckets from %llu to %llu "
                        "bytes while this rank opened it",
                        kvs->region_name,
                        (unsigned long long)kvs->tab.bucket_size,
                        (unsigned long long)seen.bucket_size);
    if ((uint64_t)kvs->local_rank >= seen.max_ranks)
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "region %s has counters for %llu ranks and %llu "
                        "buckets; this node has %d ranks",
                        kvs->region_name, (unsigned long long)seen.max_ranks,
                        (unsigned long long)seen.nbuckets, kvs->local_size);
    /* The region's size wins over the size this rank computed. */
    kvs->tab.nbuckets = seen.nbuckets;
    kvs->tab.buckets_offset = seen.buckets_offset;
    return MPIKVS_OK;
}

static void point_into_region(mpikvs_t *kvs)
{
    char *base = kvs->region->base;
    struct kvshm_data_control *c =
        (struct kvshm_data_control *)(base + KVSHM_DATA_CONTROL_OFFSET);

    kvs->tab.buckets = (unsigned char *)base + kvs->tab.buckets_offset;
    /* where kvshm_data_init put them and the check found them */
    kvs->tab.stats =
        (struct kvshm_rank_stats *)(base + KVSHM_DATA_STATS_OFFSET) +
        kvs->local_rank;
    if (kvs->local_rank == 0) {   /* for the tools: how the job sees it */
        c->nnodes = kvs->nnodes;
        c->node_index = kvs->node;
    }
}

/* The table's data region tag: the layout's (find_job_table found the
 * table's entry), or "<table>-data". */
static int data_tag(mpikvs_t *kvs, char *tag, size_t len)
{
    const char *table = kvs->table ? kvs->table->name
                                   : KVSHM_PLAN_DEFAULT_TABLE;

    if (!kvs->layout) {   /* the job-scope tag, as the plugin's would be */
        char prefix[KVSHM_TIER_PREFIX_MAX], data[KVSHM_TAG_MAX];
        mpikvs_error_t err;
        int rc = kvshm_table_tags(KVSHM_SCOPE_JOB, 0, table, prefix, data,
                                  &err);
        if (rc != MPIKVS_OK)
            return kvs_fail(kvs, rc, "%s", err.text);
        snprintf(tag, len, "%s", data);
        return MPIKVS_OK;
    }
    snprintf(tag, len, "%s", kvs->job_table->data_tag);
    return MPIKVS_OK;
}

/* The node's data region of the table: the plugin's, or one this
 * library makes (the node's first rank) or attaches to; the handle's
 * pointers into it. */
int kvs_open_region(mpikvs_t *kvs, const struct mpikvs_env *env,
                    const char *node)
{
    char job[KVSHM_JOB_MAX], tag[KVSHM_TAG_MAX];
    mpikvs_error_t err;
    int rc = MPIKVS_OK;

    /* A job id everyone shares: the plugin's, or one rank 0 makes. */
    if (kvs->layout)
        snprintf(job, sizeof(job), "%s", kvs->layout->job);
    else if (kvs->rank == 0)
        kvshm_unique_id(job, sizeof(job));
    if (!kvs->layout &&
        MPI_Bcast(job, sizeof(job), MPI_CHAR, 0, kvs->comm) != MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast of the job id");
    snprintf(kvs->opened.job, sizeof(kvs->opened.job), "%s", job);
    snprintf(kvs->opened.node, sizeof(kvs->opened.node), "%s", node);
    if ((rc = data_tag(kvs, tag, sizeof(tag))) != MPIKVS_OK)
        return rc;
    rc = kvshm_job_dir(kvs->layout ? env->layout : NULL, env->shm_dir,
                       kvs->shm_dir, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    rc = kvshm_region_name(kvs->region_name, sizeof(kvs->region_name), job,
                           node, tag, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);

    /* The leader makes the node's region (unless the plugin did), then
     * the others open it. */
    if (kvs->local_rank == 0)
        rc = kvs->layout ? attach_region(kvs)
                         : create_region(kvs, job, node, tag);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, kvs->node_comm) != MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast in the node");
    if (rc == MPIKVS_OK && kvs->local_rank != 0)
        rc = attach_region(kvs);
    else if (rc != MPIKVS_OK && kvs->local_rank != 0)
        kvs_fail(kvs, rc, "the node's first rank could not set up %s: %s",
                 kvs->region_name, mpikvs_strerror(rc));
    if (rc == MPIKVS_OK)
        point_into_region(kvs);
    /* The tier's set-up is collective in the node: it starts only when
     * every rank of the node attached (one may be refused, e.g. by a
     * region made for fewer ranks). */
    int node_rc = rc;
    if (MPI_Allreduce(&rc, &node_rc, 1, MPI_INT, MPI_MIN, kvs->node_comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce in the node");
    if (node_rc != MPIKVS_OK)
        return rc != MPIKVS_OK
                   ? rc
                   : kvs_fail(kvs, node_rc, "another rank of the node "
                                            "could not open %s: %s",
                              kvs->region_name, mpikvs_strerror(node_rc));
    return kvs_tier_open(kvs, job, node);
}

/* The plugin's job layout, when this is a step it set up. */
int kvs_open_layout(mpikvs_t *kvs, const struct mpikvs_env *env)
{
    mpikvs_error_t err;
    int rc;

    if (!env->layout)
        return MPIKVS_OK;
    if (env->virtual_nodes)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "MPIKVS_VIRTUAL_NODES cannot be used in a step that "
                        "spank_mpikvs set up (MPIKVS_LAYOUT=%s): the nodes "
                        "are real there",
                        env->layout);
    rc = kvshm_job_layout_open(env->layout, &kvs->layout, &err);
    return rc == MPIKVS_OK ? rc : kvs_fail(kvs, rc, "%s", err.text);
}

/* Every rank runs under the plugin's layout or none does: mpirun in a
 * batch script starts the ranks of its own node without one. */
int kvs_agree_on_layout(mpikvs_t *kvs)
{
    int mine = kvs->layout != NULL, lo, hi;

    if (MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, kvs->comm) ||
        MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, kvs->comm))
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "MPI_Allreduce of the job layout failed");
    if (lo != hi)
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "some ranks run in a step that spank_mpikvs set up "
                        "(MPIKVS_LAYOUT) and others do not (this one %s): "
                        "start every rank with srun",
                        mine ? "does" : "does not");
    return MPIKVS_OK;
}
