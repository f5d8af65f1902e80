/*
 * job_layout.h - the job layout region: what the SPANK plugin tells the
 * tasks of a step about the regions it made on their node.
 *
 * One per node and scope, tag "layout" (job scope) or "s<step>-layout"
 * (step scope).  Root writes it once, before it has a name, and never
 * again; tasks read it (root-owned, 0640, group of the job).  It holds
 * the job id, the scope and the step that made it, the step's nodes and
 * this node's place among them, the tasks on this node, the DHT size per
 * node, each table's region names and sizes, and the validated job config
 * as JSON.  A checksum over the body catches a damaged one.
 *
 *   header | control (256 B) | tables[ntables] | node list | config text
 */
#ifndef MPIKVS_SHM_JOB_LAYOUT_H
#define MPIKVS_SHM_JOB_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "mpikvs_errors.h"
#include "region.h"

#define KVSHM_JOB_LAYOUT_MAX_TABLES 64u
#define KVSHM_JOB_LAYOUT_MAX_TEXT   (1u << 20)  /* node list, config text */
#define KVSHM_TIER_PREFIX_MAX       24u         /* terminator included */

enum kvshm_scope {
    KVSHM_SCOPE_JOB = 1,     /* regions live until the job ends */
    KVSHM_SCOPE_STEP = 2     /* regions live for one step */
};

/* A table's regions on the node. */
struct kvshm_job_table {
    char     name[KVSHM_TABLE_TAG_MAX];
    char     data_tag[KVSHM_TAG_MAX];          /* "<table>-data" */
    char     tier_prefix[KVSHM_TIER_PREFIX_MAX]; /* "" without a tier */
    uint8_t  pad[7];
    uint64_t data_bytes;                       /* data region size */
    uint64_t tier_bytes;                       /* both tier regions */
};

/* The layout as a program sees it. */
struct kvshm_job_layout {
    char                    job[KVSHM_JOB_MAX];
    char                    node[KVSHM_NODE_MAX];
    enum kvshm_scope        scope;
    uint32_t                step;          /* the step that made it */
    uint32_t                nnodes;        /* of that step */
    uint32_t                node_index;    /* this node's place among them */
    uint32_t                tasks_on_node; /* that step's tasks here */
    uint64_t                dht_size;      /* bytes per node */
    uint64_t                request_hash;  /* kvshm_job_request_hash() */
    size_t                  ntables;
    struct kvshm_job_table *tables;
    char                   *nodelist;      /* Slurm's form: "n[1-4]" */
    char                   *config_text;   /* JSON, or NULL: no config */
};

/* Tags of a table's regions in a scope: "[s<step>-]<table>-data" and the
 * tier prefix "[s<step>-]<table>" (tier.h adds "-index"/"-entries"). */
int kvshm_job_table_tags(enum kvshm_scope scope, uint32_t step,
                         const char *table, struct kvshm_job_table *out,
                         mpikvs_error_t *err);

/* The layout region's tag in a scope: "layout" or "s<step>-layout". */
void kvshm_job_layout_tag(enum kvshm_scope scope, uint32_t step, char *buf,
                          size_t len);

/* What a step asked for, as one number: two steps of a job share the
 * job-scope regions only when theirs are equal. */
uint64_t kvshm_job_request_hash(uint64_t dht_size, const char *config_text);

/* Create the layout region (spec gives dir, job, node, tag, owner, mode,
 * step; size and kind are worked out) holding l, complete before anyone
 * can open it.  The region is closed again: nobody writes it later. */
int kvshm_job_layout_create(const struct kvshm_region_spec *spec,
                            const struct kvshm_job_layout *l,
                            mpikvs_error_t *err);

/* Open and check the layout region at path (as in MPIKVS_LAYOUT): owned
 * by root or by the caller, body checksum intact.  *out is malloc'd; free
 * it with kvshm_job_layout_free. */
int kvshm_job_layout_open(const char *path, struct kvshm_job_layout **out,
                          mpikvs_error_t *err);

void kvshm_job_layout_free(struct kvshm_job_layout *l);

#endif /* MPIKVS_SHM_JOB_LAYOUT_H */
