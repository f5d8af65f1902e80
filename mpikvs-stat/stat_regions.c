/*
 * stat_regions.c - mpikvs-stat: finding the regions of a shm directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors_internal.h"
#include "held.h"
#include "stat_regions.h"

uint32_t stat_region_kind(const struct stat_region *r)
{
    if (r->header_read && r->error == MPIKVS_OK)
        return r->header.kind;
    return kvshm_tag_kind(r->tag);
}

const char *stat_kind_name(uint32_t kind)
{
    return kind >= 1 && kind <= KVSHM_KIND_MAX ? kvshm_kind_name(kind) : "?";
}

bool stat_region_is_slurm(const struct stat_region *r)
{
    if (r->header_read && r->error == MPIKVS_OK)
        return r->header.step != KVSHM_NO_STEP;
    return kvshm_job_part_is_slurm(r->job);
}

time_t stat_region_created(const struct stat_region *r)
{
    if (r->header_read && r->error == MPIKVS_OK)
        return (time_t)r->header.created;
    return r->st.st_mtime;
}

static void read_open_header(int fd, struct stat_region *r, const char *dir);

/* Read and check the header of the file name in the directory dfd. */
static void read_header(int dfd, struct stat_region *r, const char *dir)
{
    mpikvs_error_t err = {0, ""};
    int fd;

    if (S_ISLNK(r->st.st_mode) || !S_ISREG(r->st.st_mode)) {
        r->error = kvshm_fail(&err, MPIKVS_ERR_FOREIGN,
                              "%s/%s is %s, not an mpikvs region", dir,
                              r->name,
                              S_ISLNK(r->st.st_mode) ? "a symbolic link"
                                                     : "not a regular file");
        goto out;
    }
    /* O_NONBLOCK: a FIFO planted under a region's name must not block */
    fd = openat(dfd, r->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM) {
            const struct passwd *pw = getpwuid(r->st.st_uid);
            char owner[64];
            if (pw)
                snprintf(owner, sizeof(owner), "%s", pw->pw_name);
            else
                snprintf(owner, sizeof(owner), "uid %u",
                         (unsigned)r->st.st_uid);
            r->error = kvshm_fail(&err, -e,
                                  "permission denied reading %s/%s (owner "
                                  "%s, mode %03o): run as root or as the "
                                  "job's user (%s)",
                                  dir, r->name, owner,
                                  (unsigned)(r->st.st_mode & 0777), owner);
        } else {
            r->error = kvshm_fail(&err, -e, "cannot open %s/%s: %s", dir,
                                  r->name, strerror(e));
        }
        goto out;
    }
    read_open_header(fd, r, dir);
    return;
out:
    snprintf(r->error_text, sizeof(r->error_text), "%s",
             r->error == MPIKVS_OK ? "" : err.text);
}

/* Read and check the header of r, open on fd (closed here). */
static void read_open_header(int fd, struct stat_region *r, const char *dir)
{
    mpikvs_error_t err = {0, ""};
    struct stat now = {0};
    ssize_t got;

    /* The descriptor decides, not the listing: the name may lead to
     * another file now (a FIFO, a file of another owner), a holder's
     * descriptor number to another file. */
    if (fstat(fd, &now) != 0) {
        r->error = kvshm_fail(&err, -errno, "cannot stat %s/%s: %s", dir,
                              r->name, strerror(errno));
        close(fd);
        goto out;
    }
    if (!S_ISREG(now.st_mode)) {
        r->error = kvshm_fail(&err, MPIKVS_ERR_FOREIGN,
                              "%s/%s is not a regular file, not an mpikvs "
                              "region",
                              dir, r->name);
        close(fd);
        goto out;
    }
    if (r->unlinked && (now.st_dev != r->st.st_dev ||
                        now.st_ino != r->st.st_ino)) {
        r->error = kvshm_fail(&err, MPIKVS_ERR_FOREIGN,
                              "%s/%s (unlinked) was closed by pid %d while "
                              "it was listed",
                              dir, r->name, (int)r->holder);
        close(fd);
        goto out;
    }
    r->st = now;
    memset(&r->header, 0, sizeof(r->header));
    got = pread(fd, &r->header, sizeof(r->header), 0);
    int read_errno = errno;
    close(fd);
    if (got < 0) {
        r->error = kvshm_fail(&err, -read_errno, "cannot read %s/%s: %s",
                              dir, r->name, strerror(read_errno));
        goto out;
    }
    r->header_read = true;
    if ((size_t)got < sizeof(r->header)) {
        bool has_magic = (size_t)got >= sizeof(r->header.magic) &&
                         memcmp(r->header.magic, KVSHM_MAGIC,
                                sizeof(r->header.magic)) == 0;
        r->error = kvshm_fail(&err,
                              has_magic ? MPIKVS_ERR_TRUNCATED
                                        : MPIKVS_ERR_FOREIGN,
                              "%s/%s is %s: %zd bytes, shorter than a "
                              "region header",
                              dir, r->name,
                              has_magic ? "truncated"
                                        : "not an mpikvs region",
                              got);
        goto out;
    }
    /* as libmpikvs checks it on open: magic, version, checksum, layout
     * id, fields, name, size and owner; any kind, any user */
    r->error = kvshm_header_check(&r->header, (uint64_t)r->st.st_size,
                                  r->st.st_uid, r->name, NULL, &err);
out:
    snprintf(r->error_text, sizeof(r->error_text), "%s",
             r->error == MPIKVS_OK ? "" : err.text);
}

/* A stray file's name as it is shown: bytes that are not printable
 * ASCII become '?', so that text and JSON output stay readable and
 * valid.  Such a name is never opened (it is no region name). */
static void printable(char *name)
{
    for (; *name; name++)
        if (*name < 0x21 || *name > 0x7e)
            *name = '?';
}

static int compare_jobs(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    /* Slurm job ids in numeric order */
    if (kvshm_job_part_is_slurm(a) && kvshm_job_part_is_slurm(b) &&
        la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}

static int by_job_node_tag(const void *pa, const void *pb)
{
    const struct stat_region *a = pa, *b = pb;
    int c;

    if ((c = compare_jobs(a->job, b->job)) != 0 ||
        (c = strcmp(a->node, b->node)) != 0 ||
        (c = strcmp(a->tag, b->tag)) != 0)
        return c;
    return strcmp(a->name, b->name);
}

static bool wanted(const struct stat_region *r,
                   const struct stat_filter *filter)
{
    if (!filter)
        return true;
    if (filter->name && strcmp(filter->name, r->name) != 0)
        return false;
    if (filter->job && strcmp(filter->job, r->job) != 0)
        return false;
    return true;
}

/* The regions listed so far. */
struct found {
    struct stat_region *regions;
    size_t              count, cap;
    const char         *dir;
    const struct stat_filter *filter;
};

/* Room for one more (zeroed, not yet counted), or NULL. */
static struct stat_region *one_more(struct found *f)
{
    if (f->count == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        struct stat_region *grown = realloc(f->regions,
                                            cap * sizeof(*grown));
        if (!grown)
            return NULL;
        f->regions = grown;
        f->cap = cap;
    }
    memset(&f->regions[f->count], 0, sizeof(f->regions[0]));
    return &f->regions[f->count];
}

/* A region whose name is gone, held open by h->pid: read through the
 * holder's descriptor, which the kernel opens only for a caller that may
 * read that process (shm/held.h). */
static int add_held(const struct kvshm_held *h, void *arg)
{
    struct found *f = arg;
    struct stat_region *r = one_more(f);
    char path[64];
    int fd;

    if (!r)
        return -ENOMEM;
    snprintf(r->name, sizeof(r->name), "%s", h->name);
    if (kvshm_region_name_parse(r->name, r->job, r->node, r->tag) !=
            MPIKVS_OK ||
        !wanted(r, f->filter))
        return 0;
    r->st = h->st;
    r->unlinked = true;
    r->holder = h->pid;
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h->pid, h->fd);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        mpikvs_error_t err;
        r->error = kvshm_fail(&err, -errno, "cannot open %s/%s (unlinked) "
                              "through pid %d: %s", f->dir, r->name,
                              (int)h->pid, strerror(errno));
        snprintf(r->error_text, sizeof(r->error_text), "%s", err.text);
    } else {
        read_open_header(fd, r, f->dir);
    }
    f->count++;
    return 0;
}

int stat_regions_find(const char *dir, const struct stat_filter *filter,
                      struct stat_region_list *out, mpikvs_error_t *err)
{
    struct stat_region *regions = NULL, *grown, *r;
    size_t count = 0, cap = 0;
    struct dirent *e;
    DIR *d;

    out->regions = NULL;
    out->count = 0;
    d = opendir(dir);
    if (!d) {
        kvshm_fail(err, -errno, "cannot read the shm directory %s: %s", dir,
                   strerror(errno));
        return -1;
    }
    while ((errno = 0, e = readdir(d))) {
        if (!kvshm_name_has_prefix(e->d_name))
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            grown = realloc(regions, cap * sizeof(*regions));
            if (!grown) {
                kvshm_fail(err, -ENOMEM, "out of memory listing %s", dir);
                goto fail;
            }
            regions = grown;
        }
        r = &regions[count];
        memset(r, 0, sizeof(*r));
        if (strlen(e->d_name) >= sizeof(r->name))
            continue;   /* longer than any region name: not ours */
        memcpy(r->name, e->d_name, strlen(e->d_name) + 1);
        if (kvshm_region_name_parse(r->name, r->job, r->node, r->tag) !=
            MPIKVS_OK) {
            r->job[0] = r->node[0] = r->tag[0] = '\0';
            printable(r->name);
        }
        if (!wanted(r, filter))
            continue;
        if (fstatat(dirfd(d), e->d_name, &r->st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;   /* removed since readdir: not there any more */
        if (!r->job[0]) {
            mpikvs_error_t why;
            r->error = kvshm_fail(&why, MPIKVS_ERR_NAME,
                                  "%s/%s is not named like an mpikvs region "
                                  "(mpikvs.JOB.NODE.TAG)",
                                  dir, r->name);
            snprintf(r->error_text, sizeof(r->error_text), "%s", why.text);
        } else {
            read_header(dirfd(d), r, dir);
        }
        count++;
    }
    if (errno != 0) {
        kvshm_fail(err, -errno, "cannot read the shm directory %s: %s", dir,
                   strerror(errno));
        goto fail;
    }
    closedir(d);
    {
        struct found f = {regions, count, cap, dir, filter};
        if (kvshm_held_scan(dir, add_held, &f) == -ENOMEM) {
            free(f.regions);
            kvshm_fail(err, -ENOMEM, "out of memory listing %s", dir);
            return -1;
        }
        regions = f.regions;
        count = f.count;
    }
    if (count)
        qsort(regions, count, sizeof(*regions), by_job_node_tag);
    out->regions = regions;
    out->count = count;
    return 0;

fail:
    closedir(d);
    free(regions);
    return -1;
}

void stat_regions_free(struct stat_region_list *list)
{
    free(list->regions);
    list->regions = NULL;
    list->count = 0;
}
