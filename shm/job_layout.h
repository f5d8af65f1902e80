/*
 * job_layout.h - the job layout region: what the SPANK plugin tells the
 * tasks of a step about the regions it made on their node.
 *
 * One per node and scope, tag "layout" (job scope) or "s<step>-layout"
 * (step scope).  Root writes it once, before it has a name, and never
 * again; tasks read it (root-owned, 0640, group of the job).  It holds
 * the job id, the scope and the step that made it, the step's nodes and
 * this node's place among them, the tasks on this node, the DHT size per
 * node, each table's region names and plan (plan.h: the shape of its
 * buckets, the sizes of its regions), and the validated job config as
 * JSON.  A checksum over the body catches a damaged one.  The bytes are
 * format.h's (struct kvshm_layout_control, struct kvshm_job_table).
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
/* KVSHM_TIER_PREFIX_MAX and enum kvshm_scope: region_name.h */

/* struct kvshm_job_table, a table's regions on the node and its plan:
 * format.h, as everything else the region holds. */

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

/* A table's entry with its name and its tags in a scope (kvshm_table_tags:
 * "[s<step>-]<table>-data" and the tier prefix "[s<step>-]<table>"), the
 * rest zero.  The layout's own tag: kvshm_job_layout_tag (region_name.h). */
int kvshm_job_table_tags(enum kvshm_scope scope, uint32_t step,
                         const char *table, struct kvshm_job_table *out,
                         mpikvs_error_t *err);

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
