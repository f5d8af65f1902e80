/*
 * handle.h - what an open mpikvs handle holds, shared by libmpikvs' files.
 */
#ifndef MPIKVS_HANDLE_H
#define MPIKVS_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"
#include "data_region.h"
#include "job_config.h"
#include "job_layout.h"
#include "plan.h"
#include "mpikvs.h"
#include "region.h"
#include "bucket.h"

#define MPIKVS_DEFAULT_SIZE     (UINT64_C(64) << 20)
#define MPIKVS_LOCK_TIMEOUT_MS  30000u /* a bucket lock held longer: stalled */
#define MPIKVS_CLOSE_TIMEOUT_S  60u    /* for the other ranks in mpikvs_close */
#define MPIKVS_TIMEOUT_S        30u    /* for another node's answer */
#define BATCH_CHUNK             64u    /* buckets a batch reads at once */

/* How the ucx transport reaches another host's node: MPIKVS_UCX_OPS
 * (transport.h, ships; mpikvs(3)). */
enum kvs_ucx_ops {
    KVS_UCX_OPS_AUTO,   /* keys shipped where UCX has no RMA to the node */
    KVS_UCX_OPS_RMA,    /* buckets read and slots written */
    KVS_UCX_OPS_SHIP    /* keys shipped whole */
};

/* What open chose that the handle keeps for mpikvs_info and
 * mpikvs_describe (describe.c) and nothing else reads: the rest is in
 * struct mpikvs already.  Set by open.c, transport.c and persist.c. */
struct kvs_opened {
    char        job[KVSHM_JOB_MAX];    /* of the regions' names */
    char        node[KVSHM_NODE_MAX];  /* this node's, in the names */
    bool        virtual_nodes;         /* MPIKVS_VIRTUAL_NODES */
    const char *config_from;           /* "options.config", ..., or NULL */
    char        config[4096];          /* its path, "" for the job's */
    const char *transport_from;        /* who asked for the transport */
    char        transport_why[sizeof(mpikvs_error_t) + 64]; /* what auto
                                        * chose and why, or "" */
    int         persist;               /* enum mpikvs_persist */
    mpikvs_load_report_t persist_report; /* MPIKVS_PERSIST_LOADED */
};

struct mpikvs {
    MPI_Comm                  comm;        /* a dup of the user's */
    MPI_Comm                  node_comm;   /* the ranks of my node */
    MPI_Comm                  leaders_comm;/* the nodes' leaders; NULL on
                                            * the other ranks (nodes.c) */
    int                       rank, size, local_rank, local_size;
    uint32_t                  node, nnodes;
    int                      *leaders;     /* [nnodes]: comm rank of each
                                            * node's leader */
    enum kvshm_mode           mode;
    enum kvshm_transport      transport;   /* asked for (option, env or
                                            * config: open.c), maybe AUTO;
                                            * the one in use once tp is set */
    const struct kvs_transport *tp;        /* in use (transport.c) */
    struct kvs_route         *routes;      /* [nnodes]: the way to each
                                            * node, set as tp opens
                                            * (route.h) */
    enum kvs_ucx_ops          ucx_ops;     /* MPIKVS_UCX_OPS (open.c) */
    void                     *tp_state;    /* the transport's own */

    /* the table: its shape, the node's buckets, my stats block, my pid
     * (bucket.h) */
    struct kvs_table          tab;
    struct kvshm_config      *config;      /* NULL without one */
    struct kvshm_job_layout  *layout;      /* the plugin's, or NULL */
    const struct kvshm_table_config *table;
    const struct kvshm_job_table *job_table; /* the layout's entry of the
                                              * table: its plan */

    /* this node's data region */
    struct kvshm_region      *region;
    uint32_t                  generation;  /* every node's region's, the
                                            * same (clear.c): the key
                                            * records' (key.h); read by
                                            * the leader's serving thread */
    bool                      created;     /* by us: removed at close */
    char                      shm_dir[KVSHM_DIR_MAX + 1];
    char                      region_name[KVSHM_NAME_MAX + 1];
    /* the counters when this handle opened: of my block, and summed over
     * the node's (MPIKVS_SINCE_OPEN; stats.c) */
    mpikvs_stats_t            stats_at_open;
    mpikvs_stats_t            node_stats_at_open;

    /* the fine-lock mode (locks.c) */
    uint32_t                  lock_epoch;  /* stamped into every lock word */
    uint64_t                  lease;       /* the leader: the lease it holds */

    /* scratch for remote buckets and slot images */
    unsigned char            *scratch;     /* one bucket */
    unsigned char            *slot_image;
    uint64_t                  put_sum;     /* a put's checksum in flight
                                            * (the slot path) */
    size_t                    copy_size;   /* a batch's copy of a bucket:
                                            * whole, or a probe where no
                                            * route reads buckets whole */
    unsigned char            *batch;       /* BATCH_CHUNK copies */
    size_t                    batch_len;
    unsigned char            *batch_images;/* BATCH_CHUNK slot images */
    struct kvs_async         *async;       /* batches in flight (async.c),
                                            * from the first one */

    /* the node tier (tier.c); NULL when the table's caching is off */
    struct kvshm_tier        *tier;        /* leader: the writer */
    enum kvshm_caching        caching;
    bool                      tier_writer; /* this rank publishes */
    bool                      tier_created;/* by us: removed at close */
    bool                      tier_skip;   /* it stalled: misses until the
                                            * next fence (tier.c) */
    uint64_t                  tier_bytes;  /* the plan's (no plugin) */
    char                      tier_prefix[KVSHM_TAG_MAX];
    char                      tier_job[KVSHM_JOB_MAX];
    char                      tier_node[KVSHM_NODE_MAX];
    unsigned char            *records;     /* remote hits: key|value each */
    size_t                    records_count, records_cap;
    uint64_t                 *recorded;    /* filter of recorded key hashes */
    int                      *gather_counts, *gather_displs; /* leader */

    /* the neighbourhoods (near.c): NULL without the table's "near" */
    struct kvs_near          *near;
    uint64_t                  near_bytes;  /* the plan's (no plugin) or
                                            * the layout's */

    unsigned                  ncounters;   /* global counters (counters.c) */
    /* sampled accuracy (verify.c) */
    unsigned                  flags;       /* options.flags, MPIKVS_OPEN_* */
    uint64_t                  verify_below;/* hits whose key's selector is
                                            * below it: MPIKVS_VERIFY; 0:
                                            * none */
    struct kvs_verify_set    *verify_set;  /* outstanding ones, from the
                                            * first */
    uint64_t                  saves;       /* begun: each save's tag */

    unsigned                  close_timeout; /* s mpikvs_close waits */
    unsigned                  timeout;     /* s an operation waits for
                                            * another node (ucx), a
                                            * save's step for the other
                                            * ranks */
    struct kvs_opened         opened;      /* for mpikvs_info */
    mpikvs_error_t            err;
};

#endif /* MPIKVS_HANDLE_H */
