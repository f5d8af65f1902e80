/*
 * region.c - named shared-memory regions: create, open, grow, close, unlink.
 *
 * Regions are plain files in a tmpfs directory rather than shm_open()
 * objects, so that the directory is configurable (a site's private
 * /dev/shm, a test's own tmpfs) and every call can use O_NOFOLLOW and
 * O_EXCL against links planted in a world-writable /dev/shm.
 *
 * The directory may be a hugetlbfs mount (a site's way to huge pages,
 * mpikvs(7)): its files are allocated and mapped in whole huge pages, and
 * cannot be written with write(2); regions are only ever written through
 * their mapping.
 */
#define _GNU_SOURCE /* O_TMPFILE, AT_EMPTY_PATH */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "errors_internal.h"
#include "held.h"
#include "region.h"
#include "region_name.h"

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + 1 + strlen(name) + 1;
    char *path = malloc(n);

    if (path)
        snprintf(path, n, "%s/%s", dir, name);
    return path;
}

static int no_space(mpikvs_error_t *err, int fd, const char *dir,
                    uint64_t size)
{
    char want[32], have[32];
    struct statvfs vfs;
    struct statfs fs;

    kvshm_format_bytes(want, sizeof(want), size);
    /* hugetlbfs takes its pages from the kernel's pool, whatever the
     * mount's size says */
    if (fstatfs(fd, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC)
        return kvshm_fail(err, MPIKVS_ERR_NOSPACE,
                          "cannot reserve %s in %s: not enough free huge "
                          "pages of %ld KiB (HugePages_Free in "
                          "/proc/meminfo; ask for less, or raise "
                          "vm.nr_hugepages)",
                          want, dir, (long)(fs.f_bsize / 1024));
    if (fstatvfs(fd, &vfs) != 0)
        return kvshm_fail(err, MPIKVS_ERR_NOSPACE,
                          "cannot reserve %s in %s: %s", want, dir,
                          strerror(ENOSPC));
    kvshm_format_bytes(have, sizeof(have),
                       (uint64_t)vfs.f_bavail * vfs.f_frsize);
    return kvshm_fail(err, MPIKVS_ERR_NOSPACE,
                      "cannot reserve %s in %s: %s free (ask for less, or "
                      "make %s larger)",
                      want, dir, have, dir);
}

/* posix_fallocate returns the error instead of setting errno, and may be
 * interrupted by a signal while it allocates a large region. */
static int reserve(int fd, uint64_t offset, uint64_t len)
{
    int rc;

    do
        rc = posix_fallocate(fd, (off_t)offset, (off_t)len);
    while (rc == EINTR);
    return rc;
}

/*
 * The size a region's file must have on its file system: hugetlbfs
 * allocates and maps whole huge pages (its f_bsize), a munmap of a part
 * of one fails, and a writable mapping extends the file to the mapping's
 * end, so a region there is made of whole huge pages, its header saying
 * so.  Elsewhere the size stays as asked.
 */
static uint64_t whole_blocks(int fd, uint64_t size)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), block;
    struct statfs fs;

    if (fstatfs(fd, &fs) != 0 || fs.f_bsize <= 0 ||
        (uint64_t)fs.f_bsize <= page)
        return size;
    block = (uint64_t)fs.f_bsize;
    return (size + block - 1) / block * block;
}

/* Huge pages for the mapping, where the mount leaves the choice to it
 * (huge=advise).  posix_fallocate gave the pages out small before any
 * mapping asked, so this only lets khugepaged merge them later;
 * huge=within_size gives a region huge pages at creation (mpikvs(7)).
 * Only advice: a refusal (hugetlbfs, no THP) changes nothing. */
static void advise_huge(void *base, uint64_t len)
{
    (void)madvise(base, len, MADV_HUGEPAGE);
}

static int exists(mpikvs_error_t *err, const char *name, const char *dir)
{
    return kvshm_fail(err, MPIKVS_ERR_EXISTS,
                      "region %s already exists in %s (its job is still "
                      "running, or it was left behind)",
                      name, dir);
}

/*
 * A region appears under its name only when it is complete: it is made as
 * an unnamed O_TMPFILE, reserved and given its header, then linked in.  A
 * creator that dies halfway leaves nothing, and nobody ever opens a
 * region whose header is not written yet.  Filesystems without O_TMPFILE
 * get the named file at once (*named), exclusively.
 */
static int create_file(const char *dir, const char *path, bool *named)
{
    struct stat st;
    int fd;

    /* Fail early on a taken name, before reserving gigabytes; the link
     * at the end is what decides. */
    if (lstat(path, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
        *named = false;
        return fd;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -1;
    *named = true;
    return open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
}

/* Give the finished O_TMPFILE its name; EEXIST if the name was taken
 * meanwhile (linkat never replaces). */
static int publish_file(int fd, const char *path)
{
    char proc[64];

    if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
        return 0;
    if (errno != EPERM && errno != ENOENT)
        return -1;
    /* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc works for anyone. */
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

/*
 * Keep the region open through its name, not through the O_TMPFILE it
 * was made as: /proc/PID/fd of that reads "DIR/#INODE (deleted)" for
 * good, and once libmpikvs unlinks the name, the descriptor's
 * "DIR/NAME (deleted)" is how mpikvs-stat finds it (held.h).  Only the
 * very file we linked is taken; otherwise the first descriptor stays.
 */
static void hold_by_name(struct kvshm_region *r, const char *path)
{
    struct stat mine, named;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
                            O_CLOEXEC);

    if (fd < 0)
        return;
    if (fstat(r->fd, &mine) == 0 && fstat(fd, &named) == 0 &&
        mine.st_dev == named.st_dev && mine.st_ino == named.st_ino) {
        close(r->fd);
        r->fd = fd;
        return;
    }
    close(fd);
}

/*
 * A test's look at a region the moment it gets its name (check_tier
 * truncates it there, as a hostile owner could).  Only a test program
 * defines it; in the library and the plugin the weak reference is NULL.
 */
extern void kvshm_region_linked_hook(const char *path)
    __attribute__((weak));

int kvshm_region_create(const struct kvshm_region_spec *spec,
                        struct kvshm_region **out, mpikvs_error_t *err)
{
    char name[KVSHM_NAME_MAX + 1];
    const char *dir = spec->dir ? spec->dir : KVSHM_DEFAULT_DIR;
    uint64_t max_size = spec->max_size > spec->size ? spec->max_size
                                                    : spec->size;
    struct kvshm_region *r = NULL;
    struct kvshm_header *h;
    char *path = NULL;
    bool named = false;
    bool growable = max_size > spec->size;
    uint64_t size = spec->size;
    int fd = -1, rc;

    *out = NULL;
    if (spec->kind == 0 || spec->kind > KVSHM_KIND_MAX)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "invalid region kind %u",
                          spec->kind);
    if (spec->size < KVSHM_HEADER_SIZE || max_size > (UINT64_C(1) << 46))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "invalid region size %llu (from %u bytes to 64 TiB)",
                          (unsigned long long)max_size, KVSHM_HEADER_SIZE);
    rc = kvshm_region_name(name, sizeof(name), spec->job, spec->node,
                           spec->tag, err);
    if (rc != MPIKVS_OK)
        return rc;
    path = join_path(dir, name);
    r = calloc(1, sizeof(*r));
    if (!path || !r) {
        rc = kvshm_fail(err, -ENOMEM, "out of memory creating %s", name);
        goto fail;
    }

    fd = create_file(dir, path, &named);
    if (fd < 0) {
        int e = errno;
        /* Nothing of ours to remove: do not unlink what we did not make. */
        rc = e == EEXIST ? exists(err, name, dir)
                         : kvshm_fail(err, -e, "cannot create %s: %s", path,
                                      strerror(e));
        free(path);
        free(r);
        return rc;
    }
    /* Owner and mode before the first byte is reserved, so the job user's
     * memory accounting and the permissions hold from the start. */
    if ((spec->uid != KVSHM_ANY_UID || spec->gid != (gid_t)-1) &&
        fchown(fd, spec->uid, spec->gid) != 0) {
        rc = kvshm_fail(err, -errno, "cannot give %s to uid %d gid %d: %s",
                        path, (int)spec->uid, (int)spec->gid,
                        strerror(errno));
        goto fail;
    }
    if (fchmod(fd, spec->mode ? spec->mode : 0600) != 0) {
        rc = kvshm_fail(err, -errno, "cannot set mode of %s: %s", path,
                        strerror(errno));
        goto fail;
    }
    size = whole_blocks(fd, size);
    max_size = whole_blocks(fd, max_size);
    rc = reserve(fd, 0, size);
    if (rc == ENOSPC || rc == EFBIG) {
        rc = no_space(err, fd, dir, size);
        goto fail;
    } else if (rc != 0) {
        rc = kvshm_fail(err, -rc, "cannot reserve space for %s: %s", path,
                        strerror(rc));
        goto fail;
    }

    r->base = mmap(NULL, max_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r->base == MAP_FAILED) {
        rc = kvshm_fail(err, -errno, "cannot map %s: %s", path,
                        strerror(errno));
        r->base = NULL;
        goto fail;
    }
    advise_huge(r->base, max_size);
    r->fd = fd;
    r->map_len = max_size;
    r->size = size;
    r->writable = true;
    r->path = path;

    h = r->base;
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, KVSHM_MAGIC, sizeof(h->magic));
    h->format_version = KVSHM_FORMAT_VERSION;
    h->kind = spec->kind;
    h->format_id = kvshm_format_id();
    h->size = size;
    h->max_size = max_size;
    h->header_size = KVSHM_HEADER_SIZE;
    h->flags = growable ? KVSHM_FLAG_GROWABLE : 0;
    h->created = (int64_t)time(NULL);
    h->uid = spec->uid != KVSHM_ANY_UID ? (uint32_t)spec->uid
                                        : (uint32_t)geteuid();
    h->gid = spec->gid != (gid_t)-1 ? (uint32_t)spec->gid
                                    : (uint32_t)getegid();
    h->step = spec->step;
    strcpy(h->job, spec->job);
    strcpy(h->node, spec->node);
    strcpy(h->tag, spec->tag);
    h->checksum = kvshm_header_checksum(h);
    /* the body the caller asked for: a huge page's slack after it stays
     * zero (the buckets a data region holds follow from this size) */
    if (spec->fill && (rc = spec->fill(r->base, spec->size, spec->fill_arg,
                                       err)) != MPIKVS_OK)
        goto fail;
    if (!named && publish_file(fd, path) != 0) {
        rc = errno == EEXIST ? exists(err, name, dir)
                             : kvshm_fail(err, -errno, "cannot link %s: %s",
                                          path, strerror(errno));
        named = false;   /* whatever is at path is not ours */
        goto fail;
    }
    if (!named)
        hold_by_name(r, path);
    /* Named now: the owner may truncate it from here on, so nothing
     * below (nor any caller) writes through the mapping as someone else. */
    if (kvshm_region_linked_hook)
        kvshm_region_linked_hook(path);
    *out = r;
    return MPIKVS_OK;

fail:
    if (r && r->base)
        munmap(r->base, max_size);
    if (fd >= 0) {
        if (named)
            unlink(path);
        close(fd);
    }
    free(path);
    free(r);
    return rc;
}

static bool header_string_ok(const char *s, size_t max)
{
    return memchr(s, '\0', max) != NULL && kvshm_name_part_ok(s, max);
}

int kvshm_header_check(const struct kvshm_header *h, uint64_t file_size,
                       uid_t file_uid, const char *name,
                       const struct kvshm_open_opts *opts,
                       mpikvs_error_t *err)
{
    const char *what = name ? name : "region";
    bool growable;

    if (memcmp(h->magic, KVSHM_MAGIC, sizeof(h->magic)) != 0)
        return kvshm_fail(err, MPIKVS_ERR_FOREIGN,
                          "%s is not an mpikvs region (no mpikvs magic at "
                          "its start)", what);
    if (h->format_version != KVSHM_FORMAT_VERSION)
        return kvshm_fail(err, MPIKVS_ERR_VERSION,
                          "%s has region format version %u, this mpikvs "
                          "reads version %u (%s)",
                          what, h->format_version, KVSHM_FORMAT_VERSION,
                          h->format_version > KVSHM_FORMAT_VERSION
                              ? "use the newer mpikvs that made it"
                              : "it was left by an older mpikvs: remove it");
    if (h->checksum != kvshm_header_checksum(h))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s has a corrupt header (checksum %016llx, "
                          "computed %016llx)", what,
                          (unsigned long long)h->checksum,
                          (unsigned long long)kvshm_header_checksum(h));
    if (h->format_id != kvshm_format_id())
        return kvshm_fail(err, MPIKVS_ERR_VERSION,
                          "%s has format id %016llx, this mpikvs expects "
                          "%016llx (made by an incompatible build)",
                          what, (unsigned long long)h->format_id,
                          (unsigned long long)kvshm_format_id());

    growable = h->flags & KVSHM_FLAG_GROWABLE;
    if (h->kind == 0 || h->kind > KVSHM_KIND_MAX ||
        h->header_size != KVSHM_HEADER_SIZE ||
        (h->flags & ~KVSHM_FLAG_GROWABLE) || h->size < KVSHM_HEADER_SIZE ||
        h->max_size < h->size || (!growable && h->max_size != h->size) ||
        !header_string_ok(h->job, KVSHM_JOB_MAX) ||
        !header_string_ok(h->node, KVSHM_NODE_MAX) ||
        !header_string_ok(h->tag, KVSHM_TAG_MAX))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s has an impossible header (kind %u, flags %#x, "
                          "size %llu, max size %llu)",
                          what, h->kind, h->flags,
                          (unsigned long long)h->size,
                          (unsigned long long)h->max_size);
    if (name) {
        char expect[KVSHM_NAME_MAX + 1];
        if (kvshm_region_name(expect, sizeof(expect), h->job, h->node, h->tag,
                              NULL) != MPIKVS_OK ||
            strcmp(expect, name) != 0)
            return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                              "the file %s holds the header of region %s: "
                              "renamed or copied, refusing it",
                              name, expect);
    }
    if (opts && opts->kind && h->kind != opts->kind)
        return kvshm_fail(err, MPIKVS_ERR_KIND,
                          "%s is a %s region, expected a %s region", what,
                          kvshm_kind_name(h->kind),
                          kvshm_kind_name(opts->kind));
    if (file_size < h->size)
        return kvshm_fail(err, MPIKVS_ERR_TRUNCATED,
                          "%s is truncated: %llu bytes, its header says %llu",
                          what, (unsigned long long)file_size,
                          (unsigned long long)h->size);
    if (file_size > h->max_size)
        return kvshm_fail(err, MPIKVS_ERR_SIZE,
                          "%s has %llu bytes, its header allows %llu", what,
                          (unsigned long long)file_size,
                          (unsigned long long)h->max_size);
    /* The plugin creates regions as root for the job user, and the layout
     * stays root's; any other owner means someone planted the file. */
    if (file_uid != (uid_t)h->uid && file_uid != 0)
        return kvshm_fail(err, MPIKVS_ERR_OWNER,
                          "%s is owned by uid %u but made for uid %u: "
                          "refusing a region planted by another user",
                          what, (unsigned)file_uid, h->uid);
    if (opts && opts->expect_uid != KVSHM_ANY_UID &&
        (uid_t)h->uid != opts->expect_uid)
        return kvshm_fail(err, MPIKVS_ERR_OWNER,
                          "%s belongs to uid %u, not to uid %u", what, h->uid,
                          (unsigned)opts->expect_uid);
    return MPIKVS_OK;
}

const char *kvshm_file_type(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG:  return "a regular file";
    case S_IFDIR:  return "a directory";
    case S_IFLNK:  return "a symbolic link";
    case S_IFIFO:  return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFCHR:  return "a character device";
    case S_IFBLK:  return "a block device";
    default:       return "of an unknown type";
    }
}

static int open_failed(mpikvs_error_t *err, int e, const char *path,
                       const char *name, const char *dir)
{
    struct stat st;

    if (e == ENOENT)
        return kvshm_fail(err, MPIKVS_ERR_NOTFOUND, "no region %s in %s",
                          name, dir);
    if (e == ELOOP)
        return kvshm_fail(err, MPIKVS_ERR_FOREIGN,
                          "%s is a symbolic link, not an mpikvs region", path);
    if ((e == EACCES || e == EPERM) &&
        fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return kvshm_fail(err, -e,
                          "permission denied opening %s (owner uid %u, mode "
                          "%03o): run as root or as the job's user",
                          path, (unsigned)st.st_uid,
                          (unsigned)(st.st_mode & 0777));
    return kvshm_fail(err, -e, "cannot open %s: %s", path, strerror(e));
}

int kvshm_region_open(const char *dir, const char *name,
                      const struct kvshm_open_opts *opts,
                      struct kvshm_region **out, mpikvs_error_t *err)
{
    struct kvshm_open_opts defaults = {.expect_uid = geteuid()};
    struct kvshm_region *r = NULL;
    struct kvshm_header h;
    struct stat st;
    char *path;
    int fd = -1, rc, prot;
    ssize_t got;

    *out = NULL;
    if (!opts)
        opts = &defaults;
    if (!dir)
        dir = KVSHM_DEFAULT_DIR;
    if (!name || strchr(name, '/'))
        return kvshm_fail(err, MPIKVS_ERR_NAME, "invalid region name '%s'",
                          name ? name : "(null)");
    path = join_path(dir, name);
    if (!path)
        return kvshm_fail(err, -ENOMEM, "out of memory opening %s", name);

    /* Anyone may plant a FIFO or a device under a region name: O_NONBLOCK
     * so that opening one never waits (a FIFO would wait for a writer
     * forever), and the type and owner are checked on what was opened,
     * before a byte is read.  On a regular file O_NONBLOCK changes
     * nothing. */
    fd = open(path, (opts->writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
                        O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && opts->held) {
        /* checked below like any other file */
        fd = kvshm_held_open(dir, name, opts->writable ? O_RDWR : O_RDONLY);
        errno = fd < 0 ? -fd : 0;
    }
    if (fd < 0) {
        rc = open_failed(err, errno, path, name, dir);
        goto fail;
    }
    if (fstat(fd, &st) != 0) {
        rc = kvshm_fail(err, -errno, "cannot stat %s: %s", path,
                        strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = kvshm_fail(err, MPIKVS_ERR_FOREIGN,
                        "%s is not a regular file (%s), not an mpikvs "
                        "region: refusing it",
                        path, kvshm_file_type(st.st_mode));
        goto fail;
    }
    /* A region is its user's or root's (the plugin's layout): a file of
     * anyone else is refused unread and unmapped, so its owner cannot
     * truncate it under our mapping. */
    if (opts->expect_uid != KVSHM_ANY_UID && st.st_uid != opts->expect_uid &&
        st.st_uid != 0) {
        rc = kvshm_fail(err, MPIKVS_ERR_OWNER,
                        "%s is owned by uid %u, not by uid %u or root: "
                        "refusing a region planted by another user",
                        path, (unsigned)st.st_uid,
                        (unsigned)opts->expect_uid);
        goto fail;
    }
    /* Read the header with pread, not through a mapping: a file shorter
     * than its header would SIGBUS a mapped read. */
    memset(&h, 0, sizeof(h));
    got = pread(fd, &h, sizeof(h), 0);
    if (got < 0) {
        rc = kvshm_fail(err, -errno, "cannot read %s: %s", path,
                        strerror(errno));
        goto fail;
    }
    if ((size_t)got < sizeof(h)) {
        bool has_magic = (size_t)got >= sizeof(h.magic) &&
                         memcmp(h.magic, KVSHM_MAGIC, sizeof(h.magic)) == 0;
        rc = kvshm_fail(err,
                        has_magic || got == 0 ? MPIKVS_ERR_TRUNCATED
                                              : MPIKVS_ERR_FOREIGN,
                        "%s is %s: %zd bytes, shorter than a region header",
                        path, has_magic || got == 0 ? "truncated"
                                                     : "not an mpikvs region",
                        got);
        goto fail;
    }
    rc = kvshm_header_check(&h, (uint64_t)st.st_size, st.st_uid, name, opts,
                            err);
    if (rc != MPIKVS_OK)
        goto fail;

    r = calloc(1, sizeof(*r));
    if (!r) {
        rc = kvshm_fail(err, -ENOMEM, "out of memory opening %s", name);
        goto fail;
    }
    /* Readers map PROT_READ: a stray store faults at the culprit instead
     * of corrupting what every rank of the node reads. */
    prot = opts->writable ? PROT_READ | PROT_WRITE : PROT_READ;
    r->base = mmap(NULL, h.max_size, prot, MAP_SHARED, fd, 0);
    if (r->base == MAP_FAILED) {
        rc = kvshm_fail(err, -errno, "cannot map %s: %s", path,
                        strerror(errno));
        free(r);
        r = NULL;
        goto fail;
    }
    advise_huge(r->base, h.max_size);
    r->fd = fd;
    r->map_len = h.max_size;
    r->size = (uint64_t)st.st_size;
    r->writable = opts->writable;
    r->path = path;
    *out = r;
    return MPIKVS_OK;

fail:
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

int kvshm_region_grow(struct kvshm_region *r, uint64_t new_size,
                      mpikvs_error_t *err)
{
    const struct kvshm_header *h = kvshm_region_header(r);
    int rc;

    if (!r->writable || !(h->flags & KVSHM_FLAG_GROWABLE))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "%s is not a growable region opened for writing",
                          r->path);
    if (new_size <= r->size)
        return MPIKVS_OK;
    if (new_size > r->map_len)
        return kvshm_fail(err, MPIKVS_ERR_FULL,
                          "%s cannot grow to %llu bytes: its maximum is %llu",
                          r->path, (unsigned long long)new_size,
                          (unsigned long long)r->map_len);
    rc = reserve(r->fd, r->size, new_size - r->size);
    if (rc != 0) {
        /* Give back whatever a partial reservation extended. */
        if (ftruncate(r->fd, (off_t)r->size) != 0)
            (void)0; /* the size we keep using is still r->size */
        if (rc == ENOSPC || rc == EFBIG) {
            const char *slash = strrchr(r->path, '/');
            char dir[4096];
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - r->path),
                     r->path);
            return no_space(err, r->fd, dir, new_size - r->size);
        }
        return kvshm_fail(err, -rc, "cannot grow %s: %s", r->path,
                          strerror(rc));
    }
    r->size = new_size;
    return MPIKVS_OK;
}

int kvshm_region_refresh(struct kvshm_region *r)
{
    struct stat st;

    if (fstat(r->fd, &st) != 0)
        return -errno;
    r->size = (uint64_t)st.st_size < r->map_len ? (uint64_t)st.st_size
                                                : r->map_len;
    return MPIKVS_OK;
}

void kvshm_region_close(struct kvshm_region **rp)
{
    struct kvshm_region *r = rp ? *rp : NULL;

    if (!r)
        return;
    if (r->base)
        munmap(r->base, r->map_len);
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r);
    *rp = NULL;
}

int kvshm_job_dir(const char *layout, const char *shm_dir,
                  char buf[KVSHM_DIR_MAX + 1], mpikvs_error_t *err)
{
    const char *slash = layout ? strrchr(layout, '/') : NULL;
    const char *dir = shm_dir && *shm_dir ? shm_dir : KVSHM_DEFAULT_DIR;
    size_t n = slash ? (slash == layout ? 1 : (size_t)(slash - layout))
                     : strlen(dir);

    buf[0] = '\0';
    if (n > KVSHM_DIR_MAX)
        return kvshm_fail(err, MPIKVS_ERR_NAME,
                          "%s is %zu bytes long, more than %d: "
                          "choose a shorter directory",
                          slash ? "the directory of MPIKVS_LAYOUT"
                                : "MPIKVS_SHM_DIR",
                          n, KVSHM_DIR_MAX);
    memcpy(buf, slash ? layout : dir, n);
    buf[n] = '\0';
    return MPIKVS_OK;
}

int kvshm_region_unlink(const char *dir, const char *name)
{
    char *path;
    int rc = MPIKVS_OK;

    if (!name || strchr(name, '/'))
        return MPIKVS_ERR_NAME;
    path = join_path(dir ? dir : KVSHM_DEFAULT_DIR, name);
    if (!path)
        return -ENOMEM;
    if (unlink(path) != 0)
        rc = errno == ENOENT ? MPIKVS_ERR_NOTFOUND : -errno;
    free(path);
    return rc;
}
