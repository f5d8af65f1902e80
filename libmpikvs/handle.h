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

/* The environment libmpikvs reads, in one place (env.c). */
struct mpikvs_env {
    const char *shm_dir;        /* MPIKVS_SHM_DIR, or NULL */
    const char *layout;         /* MPIKVS_LAYOUT: the SPANK plugin's */
    const char *config;         /* MPIKVS_CONFIG: a file path */
    const char *job_config_path;/* SLURM_SPANK_MPIKVS_JOB_CONFIG_PATH: the
                                 * job's --dht-config, for messages */
    unsigned    virtual_nodes;  /* MPIKVS_VIRTUAL_NODES, 0 if unset */
    const char *close_timeout;  /* MPIKVS_CLOSE_TIMEOUT, or NULL */
    const char *timeout;        /* MPIKVS_TIMEOUT, or NULL */
    const char *transport;      /* MPIKVS_TRANSPORT, or NULL */
    const char *ucx_ops;        /* MPIKVS_UCX_OPS, or NULL */
    const char *populate;       /* MPIKVS_POPULATE, or NULL */
    const char *verbose;        /* MPIKVS_VERBOSE, or NULL */
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
     * (bucket.h); each field also by its own name, kvs->slots */
    union {
        struct kvs_table      tab;
        struct {
            KVS_TABLE_FIELDS
        };
    };
    struct kvshm_config      *config;      /* NULL without one */
    struct kvshm_job_layout  *layout;      /* the plugin's, or NULL */
    const struct kvshm_table_config *table;
    const struct kvshm_job_table *job_table; /* the layout's entry of the
                                              * table: its plan */

    /* this node's data region */
    struct kvshm_region      *region;
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
    unsigned char            *batch;       /* buckets of a batch */
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

    unsigned                  ncounters;   /* global counters (counters.c) */
    uint64_t                  saves;       /* begun: each save's tag */

    unsigned                  close_timeout; /* s mpikvs_close waits */
    unsigned                  timeout;     /* s an operation waits for
                                            * another node (ucx), a
                                            * save's step for the other
                                            * ranks */
    struct kvs_opened         opened;      /* for mpikvs_info */
    mpikvs_error_t            err;
};

/* Set kvs->err (which mpikvs_last_error() shows) and return code; with
 * kvs NULL, the thread's detail (mpikvs_last_error(NULL)). */
int kvs_fail(mpikvs_t *kvs, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A public call given a NULL handle: MPIKVS_ERR_INVAL, with a detail
 * naming call in the thread's (errors.c). */
int kvs_no_handle(const char *call);

void kvs_env_read(struct mpikvs_env *env);

/* A step of open that may fail on some ranks only: every rank learns the
 * worst outcome (collective over kvs->comm; errors.c). */
int kvs_agree(mpikvs_t *kvs, int rc);

/* Put the transport this open uses (kvs->transport, once
 * kvs_transport_open has set kvs->tp) in the rank's stats block, where
 * mpikvs-stat reads it (stats.c). */
void kvs_stats_set_transport(mpikvs_t *kvs);

/* At open, once this rank's block is mapped and before any rank can
 * count (the node's ranks must all call it before the next collective
 * of open): name this open's rank in the block, for mpikvs-stat, and
 * keep the counters the figures MPIKVS_SINCE_OPEN start from
 * (stats.c). */
void kvs_stats_mark_open(mpikvs_t *kvs);

/* MPIKVS_VERBOSE (v, or NULL) into *on: "1" or "0", else
 * MPIKVS_ERR_INVAL naming it (describe.c). */
int kvs_verbose_parse(mpikvs_t *kvs, const char *v, bool *on);
/* What mpikvs_describe writes, to stderr: rank 0's at an open under
 * MPIKVS_VERBOSE=1. */
void kvs_describe_print(const mpikvs_t *kvs);

/* Group comm's ranks into nodes (MPIKVS_VIRTUAL_NODES or shared memory)
 * and fill node_comm, leaders_comm, local_rank/size, node, nnodes and
 * leaders. */
int kvs_nodes(mpikvs_t *kvs, const struct mpikvs_env *env,
                  char *node_name, size_t len);

/* What differs between MPI implementations (mpi_impl.c). */
enum kvs_mpi_family { KVS_MPI_OPENMPI, KVS_MPI_MPICH, KVS_MPI_OTHER };

/* The running MPI library: its version's first line, and its family. */
const char *kvs_mpi_library(void);
enum kvs_mpi_family kvs_mpi_family(void);
/* mpikvs_open's first step: MPIKVS_ERR_MPI, naming the mismatch, when
 * the process runs another MPI than the library was built for, or was
 * started by another MPI's launcher. */
int kvs_check_mpi_impl(void);
/* A failed MPI call: its error string in kvs->err, with this MPI's
 * remedy where there is one, MPIKVS_ERR_MPI. */
int kvs_mpi_fail(mpikvs_t *kvs, const char *what, int mpi_rc);
/* MPIKVS_ERR_MPI, with the remedy, when this MPI cannot run kvs->mode. */
int kvs_check_osc(mpikvs_t *kvs);

/* The fine-lock mode's share of open (collective, after the node's data
 * region is attached): the node leaders take the table's lease, refusing
 * while another live open holds it, and every rank agrees on a new lock
 * epoch.  kvs_locks_close gives the lease back (once no rank of the open
 * can take a lock any more). */
int kvs_locks_open(mpikvs_t *kvs);
void kvs_locks_close(mpikvs_t *kvs);

/* The node tier (tier.c).  kvs_tier_open: collective
 * over the node.  kvs_tier_lookup: MPIKVS_OK, MPIKVS_MISS or an error.
 * kvs_tier_record: keep a remote hit for the next fence, where
 * kvs_tier_publish (collective over the node) publishes the node's.
 * kvs_tier_invalidate: mpikvs_tier_invalidate's work (collective). */
int kvs_tier_open(mpikvs_t *kvs, const char *job, const char *node);
void kvs_tier_close(mpikvs_t *kvs);
struct kvs_key;
int kvs_tier_lookup(mpikvs_t *kvs, const struct kvs_key *k, void *value);
void kvs_tier_record(mpikvs_t *kvs, const struct kvs_key *k,
                     const void *value);
int kvs_tier_publish(mpikvs_t *kvs);
int kvs_tier_invalidate(mpikvs_t *kvs);

/* Remove the names of the regions this rank made (without the plugin),
 * once every rank of the open holds them (unlink_names.c). */
void kvs_unlink_names(mpikvs_t *kvs);

/* The config's persist.load at open (persist.c): mpikvs_load, but a
 * file that does not exist yet is a cold start, not an error, and a
 * table that holds entries already (a job-scope region an earlier step
 * filled) is left as it is; either way kvs->opened.persist says what it
 * did. */
int kvs_load_at_open(mpikvs_t *kvs, const char *path);

#endif /* MPIKVS_HANDLE_H */
