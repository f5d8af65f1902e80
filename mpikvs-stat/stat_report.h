/*
 * stat_report.h - mpikvs-stat: what one job holds on the node.
 *
 * The report is read from the regions themselves: each is opened
 * O_RDONLY and mapped PROT_READ (shm/region.c), read while the job keeps
 * running, and closed again before the report is printed, so a watching
 * mpikvs-stat holds no region between two refreshes.  Nothing in a
 * region is trusted before it is checked: the header by
 * kvshm_region_open(), a data region's control block by
 * kvshm_data_read_control(), a job layout by kvshm_job_layout_open().
 * A region that cannot be read becomes a problem of the report; the
 * others are still shown.
 */
#ifndef MPIKVS_STAT_REPORT_H
#define MPIKVS_STAT_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "job_layout.h"
#include "rma_region.h"
#include "scan.h"
#include "stat_counters.h"
#include "stat_regions.h"
#include "stat_totals.h"
#include "tier.h"

/* A table's data region. */
struct stat_table_report {
    const struct stat_region   *region;
    struct kvshm_data_control   control;     /* checked copy */
    /* control.table as it is printed (stat_escape): any user may write
     * their region's table name */
    char                        table[4 * KVSHM_TABLE_TAG_MAX + 1];
    bool                        scanned;     /* occupancy is filled in */
    struct kvshm_occupancy      occupancy;
    struct stat_counter_values *counters;    /* stat_ncounter_groups */
    /* the transports the ranks' latest opens use, "mpi" (several joined
     * by ", "; "" when no open has said yet) */
    char                        transport[64];
};

/* A read-only lookup tier (its index and entries regions). */
struct stat_tier_report {
    const struct stat_region *index;     /* in the list, or NULL */
    const struct stat_region *entries;   /* in the list, or NULL */
    char                      prefix[KVSHM_TAG_MAX];
    struct kvshm_tier_stats   stats;
};

/* What a rank of the node says of itself in a window's region. */
struct stat_rma_rank {
    uint64_t pid;               /* 0: not attached (any more) */
    uint64_t win_rank;
    uint64_t mode;              /* enum kvshm_rma_mode */
    uint64_t published_bytes;   /* its segment's head */
};

/* A libmpikvs-rmacache window with the node tier. */
struct stat_rma_report {
    const struct stat_region  *region;
    struct kvshm_rma_control   control;   /* checked copy */
    char                       name[4 * sizeof(((struct kvshm_rma_control *)0)->name) + 1];
    struct stat_rma_rank      *ranks;     /* control.nranks */
    struct stat_counter_values counters;
};

struct stat_layout_report {
    const struct stat_region *region;
    struct kvshm_job_layout  *layout;
};

/* A region that could not be read, and why. */
struct stat_problem {
    const struct stat_region *region;
    int                       code;      /* MPIKVS_ERR_* or -errno */
    char                      text[600];
};

struct stat_node_report {
    char                       node[KVSHM_NODE_MAX];
    struct stat_layout_report *layouts;
    size_t                     nlayouts;
    struct stat_table_report  *tables;
    size_t                     ntables;
    struct stat_tier_report   *tiers;
    size_t                     ntiers;
    struct stat_rma_report    *rma;
    size_t                     nrma;
};

struct stat_job_report {
    char                     job[KVSHM_JOB_MAX];
    struct stat_liveness     liveness;
    struct stat_node_report *nodes;
    size_t                   nnodes;
    struct stat_problem     *problems;
    size_t                   nproblems;
    struct stat_job_totals   totals;     /* of the nodes' tables */
};

struct stat_report_opts {
    const char *dir;          /* the shm directory */
    const char *only_name;    /* report this region only; NULL: all */
    bool        scan;         /* count the slots of the data regions */
};

/* The report of the regions of one job in list (as stat_regions_find()
 * and stat_liveness_judge() left them; list must outlive the report).
 * Returns 0, or -1 when out of memory (*out is then empty). */
int stat_report_build(const struct stat_region_list *list,
                      const struct stat_report_opts *opts,
                      struct stat_job_report *out);

void stat_report_free(struct stat_job_report *report);

/* The table report of a tier's prefix on the node, or NULL. */
const struct stat_table_report *stat_report_table_of_tier(
    const struct stat_node_report *node, const struct stat_tier_report *t);

#endif /* MPIKVS_STAT_REPORT_H */
