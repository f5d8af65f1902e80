/*
 * stat_regions.h - mpikvs-stat: finding the regions of a shm directory.
 *
 * Every file named mpikvs.* is a region as far as its name goes.  Its
 * header is read with pread from a descriptor opened O_RDONLY (never
 * mapped here) and checked as libmpikvs checks it; a file the caller may
 * not read is still listed, with what its name and stat(2) say.
 */
#ifndef MPIKVS_STAT_REGIONS_H
#define MPIKVS_STAT_REGIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "format.h"
#include "mpikvs_errors.h"
#include "region.h"

/* How alive a region's job is (stat_liveness.h fills it in). */
enum stat_alive {
    STAT_ALIVE_UNKNOWN = 0,
    STAT_ALIVE_YES,
    STAT_ALIVE_NO
};

struct stat_liveness {
    enum stat_alive alive;
    char            why[160];   /* "slurm: RUNNING", "mapped by pid 42" */
};

/* One file of the shm directory. */
struct stat_region {
    char                 name[KVSHM_NAME_MAX + 1];
    /* from the name; empty when the name is not mpikvs.<job>.<node>.<tag> */
    char                 job[KVSHM_JOB_MAX];
    char                 node[KVSHM_NODE_MAX];
    char                 tag[KVSHM_TAG_MAX];
    struct stat          st;            /* fstat(2) of the file read, else
                                         * lstat(2) of the name */
    /* its name is gone (libmpikvs unlinks the names of the regions it
     * makes once its ranks hold them): found, and read, through a
     * process that holds it open (shm/held.h) */
    bool                 unlinked;
    pid_t                holder;
    /* the header, if it could be read (header_read) and it is valid
     * (error == MPIKVS_OK) */
    bool                 header_read;
    struct kvshm_header  header;
    int                  error;         /* MPIKVS_OK, a region code, -errno */
    char                 error_text[512];
    /* processes that map the file (stat_liveness.c) */
    unsigned             mappers;
    pid_t                first_mapper;
    /* whether its job is alive, judged on this region's own evidence
     * (stat_liveness.h) */
    struct stat_liveness liveness;
};

struct stat_region_list {
    struct stat_region *regions;        /* sorted by job, node, tag */
    size_t              count;
};

/* Which files stat_regions_find() keeps. */
struct stat_filter {
    const char *job;      /* only this job's regions; NULL: every job */
    const char *name;     /* only this region; NULL: any */
};

/* Read the directory dir (its mpikvs.* files, and the regions of dir
 * whose names are gone that a process this one may read holds open)
 * into *out.  Returns 0, or
 * -1 with a message in err (the directory cannot be read: it does not
 * exist, or permission). */
int stat_regions_find(const char *dir, const struct stat_filter *filter,
                      struct stat_region_list *out, mpikvs_error_t *err);

void stat_regions_free(struct stat_region_list *list);

/* The region's kind: its header's, else what its tag says
 * (kvshm_tag_kind: "data" for "<table>-data", ...), else 0. */
uint32_t stat_region_kind(const struct stat_region *r);

/* "data", "layout", "tier-index", "tier-entries", "rmacache" or "?". */
const char *stat_kind_name(uint32_t kind);

/* Whether the region was made by the SPANK plugin for a Slurm job (its
 * header carries a step; without a readable header, a job id of digits
 * only says so), rather than by libmpikvs under plain mpirun. */
bool stat_region_is_slurm(const struct stat_region *r);

/* Its creation time: the header's, else the file's modification time. */
time_t stat_region_created(const struct stat_region *r);

#endif /* MPIKVS_STAT_REGIONS_H */
