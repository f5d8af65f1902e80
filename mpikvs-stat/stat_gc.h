/*
 * stat_gc.h - mpikvs-stat --gc: removing the regions of jobs that are gone.
 *
 * A region is removed only when its job is judged gone on the region's
 * own evidence (stat_liveness.h): never because of another region of the
 * job, never a region of a live job, nor one whose job cannot be judged,
 * nor a file that is not a valid mpikvs region (that is for a person to
 * look at).  Removing is unlinking the name: a process that still had the
 * region mapped would keep its memory until it unmaps it.  The caller
 * must be root or own the region (the shm directory is sticky); anything
 * else is refused before it is tried, naming the owner.
 */
#ifndef MPIKVS_STAT_GC_H
#define MPIKVS_STAT_GC_H

#include <stdbool.h>
#include <stdio.h>

#include "stat_regions.h"

/* Remove (or with dry_run, name) the regions of dir whose job is gone,
 * as judged in list.  What is removed, and what is kept and why, goes to
 * out, one line a region or job, then a summary; a refusal or a failure
 * to err.  Returns 0 when everything that should go went (or would go),
 * 1 when something was refused or failed. */
int stat_gc(FILE *out, FILE *err, const char *dir,
            const struct stat_region_list *list, bool dry_run);

#endif /* MPIKVS_STAT_GC_H */
