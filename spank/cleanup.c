/*
 * cleanup.c - removing a job's regions: at step end (step scope), in the
 * job epilog (everything of the job on the node), and after a failed
 * launch.  Only names are trusted here: mpikvs.<job>.<node>.<tag> in the
 * site's directory, removed by name, never followed, never read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>   /* AT_REMOVEDIR */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"
#include "region.h"

int cleanup_regions(const char *dir, uint32_t job, const char *node,
                    const char *tag_prefix)
{
    char want[KVSHM_JOB_MAX], rjob[KVSHM_JOB_MAX], rnode[KVSHM_NODE_MAX],
        rtag[KVSHM_TAG_MAX];
    size_t prefix_len = strlen(tag_prefix);
    struct dirent *e;
    int removed = 0, failed = 0;
    DIR *d;

    kvshm_slurm_job_part(job, want, sizeof(want));
    d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)   /* a private /dev/shm already gone */
            return 0;
        plugin_error("job %u: cannot list %s to remove its regions: %s",
                     job, dir, strerror(errno));
        return -1;
    }
    /* errno tells the end of the list from a failure to read it */
    while ((errno = 0, e = readdir(d))) {
        if (kvshm_region_name_parse(e->d_name, rjob, rnode, rtag) !=
                MPIKVS_OK ||
            strcmp(rjob, want) != 0 ||
            (node && strcmp(rnode, node) != 0) ||
            strncmp(rtag, tag_prefix, prefix_len) != 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno == ENOENT) {
            removed++;
            continue;
        }
        /* A directory is never a region but a user's plant: an empty one
         * goes; one with something in it stays, unread (a failed epilog
         * would drain the node). */
        if (errno == EISDIR) {
            if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0 ||
                errno == ENOENT) {
                removed++;
                continue;
            }
            slurm_info("%s: job %u: left %s/%s, a directory under a region "
                       "name of the job that is not empty (%s)",
                       PLUGIN_NAME, job, dir, e->d_name, strerror(errno));
            continue;
        }
        plugin_error("job %u: cannot remove %s/%s: %s", job,
                     dir, e->d_name, strerror(errno));
        failed++;
    }
    if (errno) {
        plugin_error("job %u: cannot list %s to remove its regions: %s",
                     job, dir, strerror(errno));
        failed++;
    }
    closedir(d);
    if (removed)
        slurm_info("%s: job %u: removed %d region%s%s%s in %s", PLUGIN_NAME,
                   job, removed, removed == 1 ? "" : "s",
                   node ? " of node " : "", node ? node : "", dir);
    return failed ? -1 : removed;
}

int cleanup_step(void *plugin)
{
    const struct plugin *p = plugin;
    char prefix[KVSHM_TAG_MAX];

    kvshm_step_tag_prefix(p->here.step, prefix, sizeof(prefix));
    return cleanup_regions(p->site.shm_dir, p->here.job, p->here.node,
                           prefix) < 0
               ? -1 : 0;
}
