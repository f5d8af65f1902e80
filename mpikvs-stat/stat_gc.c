/*
 * stat_gc.c - mpikvs-stat --gc: removing the regions of jobs that are gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors_internal.h"
#include "stat_gc.h"
#include "stat_liveness.h"
#include "stat_output.h"

struct gc_counts {
    unsigned removed, jobs_removed, kept_alive, kept_unknown, kept_invalid,
             refused, failed;
    uint64_t bytes;
};

/* A file whose name and header say nothing trustworthy about a job: gc
 * leaves it to a person.  One the caller may not read is judged by its
 * name and owner like any other. */
static bool invalid(const struct stat_region *r)
{
    return r->error != MPIKVS_OK && r->error != -EACCES && r->error != -EPERM;
}

/* Whether the caller may unlink the file: root, its owner, the owner of
 * the directory, or anyone who may write a directory that is not sticky. */
static bool may_remove(const struct stat_region *r, const char *dir,
                       const struct stat *dir_st)
{
    uid_t me = geteuid();

    if (me == 0 || r->st.st_uid == me || dir_st->st_uid == me)
        return true;
    return !(dir_st->st_mode & S_ISVTX) &&
           faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
}

static void refuse(FILE *err, const char *dir, const struct stat_region *r,
                   bool dry_run)
{
    char owner[64], remedy[96];

    stat_user_name(r->st.st_uid, owner, sizeof(owner));
    if (r->st.st_uid == 0)
        snprintf(remedy, sizeof(remedy), "run as root");
    else
        snprintf(remedy, sizeof(remedy), "run as root or as %s", owner);
    fprintf(err, "mpikvs-stat: --gc: %s %s/%s (job %s %s: %s): it belongs "
                 "to %s (uid %u), not to uid %u; %s\n",
            dry_run ? "would not be allowed to remove"
                    : "not allowed to remove",
            dir, r->name, r->job, stat_alive_name(r->liveness.alive),
            r->liveness.why, owner, (unsigned)r->st.st_uid,
            (unsigned)geteuid(), remedy);
}

/* Remove one region, if the name still leads to the file that was judged
 * (a new file under the name is not ours to remove). */
static int remove_region(FILE *err, int dfd, const char *dir,
                         const struct stat_region *r)
{
    struct stat now;

    if (fstatat(dfd, r->name, &now, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return 0;   /* someone else removed it: gone is gone */
    } else if (now.st_dev != r->st.st_dev || now.st_ino != r->st.st_ino) {
        fprintf(err, "mpikvs-stat: --gc: %s/%s was replaced while it was "
                     "judged; not removing it\n",
                dir, r->name);
        return -1;
    } else if (unlinkat(dfd, r->name, 0) == 0) {
        return 0;
    }
    if (errno == EPERM || errno == EACCES)
        fprintf(err, "mpikvs-stat: --gc: cannot remove %s/%s: %s; run as "
                     "root or as the region's owner\n",
                dir, r->name, strerror(errno));
    else
        fprintf(err, "mpikvs-stat: --gc: cannot remove %s/%s: %s\n", dir,
                r->name, strerror(errno));
    return -1;
}

/* Handle the regions of one job (first .. first + n - 1), each by its
 * own liveness: another region of the job (another user's, perhaps)
 * never decides for it. */
static void gc_job(FILE *out, FILE *err, const char *dir, int dfd,
                   const struct stat *dir_st, const struct stat_region *first,
                   size_t n, bool dry_run, struct gc_counts *c)
{
    bool told[n];   /* an unknown region already in a "keeping" line */
    unsigned removed = 0;
    char size[32];

    for (size_t i = 0; i < n; i++) {
        const struct stat_region *r = &first[i];
        told[i] = false;
        /* an unlinked region has no name to remove; it is alive anyway,
         * held by a process */
        if (r->liveness.alive == STAT_ALIVE_YES || r->unlinked) {
            c->kept_alive++;
        } else if (!may_remove(r, dir, dir_st)) {
            /* What the caller may not remove is refused, even when its
             * job cannot be judged: the remedy is the same (root, who may
             * remove it, can also see whether its job is alive). */
            refuse(err, dir, r, dry_run);
            c->refused++;
            told[i] = true;
        } else if (r->liveness.alive == STAT_ALIVE_NO) {
            if (!dry_run && remove_region(err, dfd, dir, r) != 0) {
                c->failed++;
                continue;
            }
            kvshm_format_bytes(size, sizeof(size), (uint64_t)r->st.st_size);
            fprintf(out, "%s %s/%s (%s; job %s gone: %s)\n",
                    dry_run ? "would remove" : "removed", dir, r->name,
                    size, r->job, r->liveness.why);
            c->bytes += (uint64_t)r->st.st_size;
            removed++;
        }
    }
    /* the regions kept because they cannot be judged: one line per
     * reason */
    for (size_t i = 0; i < n; i++) {
        const char *why = first[i].liveness.why;
        size_t same = 0;

        if (first[i].liveness.alive != STAT_ALIVE_UNKNOWN || told[i])
            continue;
        for (size_t j = i; j < n; j++)
            if (first[j].liveness.alive == STAT_ALIVE_UNKNOWN && !told[j] &&
                strcmp(first[j].liveness.why, why) == 0) {
                told[j] = true;
                same++;
            }
        fprintf(out, "keeping %zu region%s of job %s: cannot tell whether "
                     "it is alive (%s)\n",
                same, same == 1 ? "" : "s", first->job[0] ? first->job : "?",
                why);
        c->kept_unknown += same;
    }
    c->removed += removed;
    c->jobs_removed += removed > 0;
}

int stat_gc(FILE *out, FILE *err, const char *dir,
            const struct stat_region_list *list, bool dry_run)
{
    struct gc_counts c = {0};
    struct stat dir_st;
    char bytes[32];
    int dfd;

    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fstat(dfd, &dir_st) != 0) {
        fprintf(err, "mpikvs-stat: --gc: cannot open %s: %s\n", dir,
                strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return 1;
    }
    for (size_t i = 0; i < list->count;) {
        const struct stat_region *first = &list->regions[i];
        size_t n = 1;

        if (invalid(first)) {
            fprintf(out, "keeping what is not a valid region: %s (remove "
                         "it by hand if it is junk)\n",
                    first->error_text);
            c.kept_invalid++;
            i++;
            continue;
        }
        while (i + n < list->count && !invalid(&list->regions[i + n]) &&
               strcmp(list->regions[i + n].job, first->job) == 0)
            n++;
        gc_job(out, err, dir, dfd, &dir_st, first, n, dry_run, &c);
        i += n;
    }
    close(dfd);
    kvshm_format_bytes(bytes, sizeof(bytes), c.bytes);
    fprintf(out, "gc%s: %s %u region%s (%s) of %u job%s; kept %u region%s "
                 "of live jobs, %u of jobs that cannot be judged, %u "
                 "invalid file%s; %u refused, %u failed\n",
            dry_run ? " (dry run)" : "", dry_run ? "would remove" : "removed",
            c.removed, c.removed == 1 ? "" : "s", bytes, c.jobs_removed,
            c.jobs_removed == 1 ? "" : "s", c.kept_alive,
            c.kept_alive == 1 ? "" : "s", c.kept_unknown, c.kept_invalid,
            c.kept_invalid == 1 ? "" : "s", c.refused, c.failed);
    return c.refused || c.failed ? 1 : 0;
}
