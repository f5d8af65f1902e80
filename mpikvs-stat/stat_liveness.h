/*
 * stat_liveness.h - mpikvs-stat: is a region's job still alive?
 *
 * Two witnesses, asked in this order:
 *
 *  - the processes of the node: a job whose region some process maps is
 *    alive, whatever else says so (libmpikvs maps its node's data region
 *    from mpikvs_open() to mpikvs_close());
 *  - Slurm, for the regions the SPANK plugin made (a Slurm job id and a
 *    step in the header): slurmctld's state of the job, asked through
 *    libslurm.  Between two steps nobody maps a job's regions, so for
 *    these "no process maps it" proves nothing.
 *
 * A region libmpikvs made under plain mpirun has only the first witness:
 * its job is gone when no process of the region's owner maps it.  When a
 * witness cannot be heard (slurmctld does not answer, the caller may not
 * read the owner's /proc/PID/maps) the answer is "unknown", and --gc
 * keeps what is unknown.
 *
 * Each region is judged on its own evidence, never on another's: any
 * user may plant a valid region under any job's name, so a file of one
 * owner never makes a file of another owner "gone".  Slurm is asked
 * about a job whenever any of its regions carries a step.
 */
#ifndef MPIKVS_STAT_LIVENESS_H
#define MPIKVS_STAT_LIVENESS_H

#include "stat_regions.h"

#define STAT_SLURM_TIMEOUT_DEFAULT 10u   /* seconds */

/* Fill in the mappers and the liveness of every region (list sorted by
 * job, as stat_regions_find() returns it).  slurm_timeout: seconds
 * slurmctld may take to answer; 0: do not ask. */
void stat_liveness_judge(struct stat_region_list *list,
                         unsigned slurm_timeout);

/* The liveness of a job from its n judged regions: alive when one of
 * them is, else unknown when one is, else gone. */
void stat_liveness_of_job(const struct stat_region *regions, size_t n,
                          struct stat_liveness *out);

/* "alive", "gone" or "unknown". */
const char *stat_alive_name(enum stat_alive alive);

#endif /* MPIKVS_STAT_LIVENESS_H */
