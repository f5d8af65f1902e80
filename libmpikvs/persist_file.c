/*
 * persist_file.c - the files of mpikvs_save and mpikvs_load as the file
 * system sees them.
 *
 * A save directory may be shared (a group's project directory, a sticky
 * scratch directory), so a name there is not proof of whose file it is.
 * The save's partial file is made by rank 0 with mkostemp (O_CREAT |
 * O_EXCL, mode 0600, a random name): another user's link or file at a
 * name is never followed or written, and two saves of one path at once
 * (job arrays, concurrent steps) each have their own.  Rank 0 keeps the
 * descriptor, and before the rename checks that the name still is that
 * file and that it holds every byte the save wrote; a failed save
 * removes only that file.
 */
#define _GNU_SOURCE /* mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "persist_file.h"
#include "errors.h"

int kvs_partial_create(mpikvs_t *kvs, const char *path,
                       struct kvs_partial *p)
{
    struct stat st;

    p->fd = -1;
    snprintf(p->name, sizeof(p->name), "%s%s", path, KVS_PARTIAL_SUFFIX);
    /* mode 0600 whatever the umask: the table's contents are the user's,
     * as its regions are */
    p->fd = mkostemp(p->name, O_CLOEXEC);
    if (p->fd < 0)
        return kvs_fail(kvs, -errno,
                        "mpikvs_save: cannot create %s: %s (the directory "
                        "of %s must exist and be writable)", p->name,
                        strerror(errno), path);
    if (fstat(p->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid() || st.st_nlink != 1) {
        int e = errno;
        close(p->fd);
        p->fd = -1;
        return kvs_fail(kvs, MPIKVS_ERR_OWNER,
                        "mpikvs_save: %s is not the new file of this "
                        "user that was just created (%s): not written",
                        p->name, e ? strerror(e) : "another file");
    }
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    return MPIKVS_OK;
}

/* The name still is the file we made and hold open. */
static bool still_ours(const struct kvs_partial *p)
{
    struct stat st;

    return lstat(p->name, &st) == 0 && st.st_dev == p->dev &&
           st.st_ino == p->ino;
}

/* Sync the directory that holds path, so the rename is durable too. */
static void sync_dir(const char *path)
{
    char copy[KVSHM_PERSIST_PATH_MAX];
    int fd;

    snprintf(copy, sizeof(copy), "%s", path);
    fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int kvs_partial_commit(mpikvs_t *kvs, struct kvs_partial *p,
                       const char *path)
{
    int rc = MPIKVS_OK;

    if (!still_ours(p))
        rc = kvs_fail(kvs, MPIKVS_ERR_OWNER,
                      "mpikvs_save: %s is no longer the file this save "
                      "wrote (someone renamed or replaced it in the "
                      "directory): %s was left as it was", p->name, path);
    else if (rename(p->name, path) != 0)
        rc = kvs_fail(kvs, -errno,
                      "mpikvs_save: cannot rename %s to %s: %s", p->name,
                      path, strerror(errno));
    if (rc != MPIKVS_OK) {
        kvs_partial_discard(p);
        return rc;
    }
    close(p->fd);
    p->fd = -1;
    sync_dir(path);
    return MPIKVS_OK;
}

void kvs_partial_discard(struct kvs_partial *p)
{
    if (p->fd < 0)
        return;
    if (still_ours(p))
        unlink(p->name);
    close(p->fd);
    p->fd = -1;
}

int kvs_load_check_file(mpikvs_t *kvs, const char *path)
{
    struct stat st;
    int fd;

    if (stat(path, &st) != 0)
        return kvs_fail(kvs, -errno, "mpikvs_load: cannot open %s: %s", path,
                        strerror(errno));
    /* O_NONBLOCK: should a FIFO take the name since the stat, the open
     * does not wait for a writer */
    if (S_ISREG(st.st_mode)) {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return kvs_fail(kvs, -errno, "mpikvs_load: cannot open %s: %s",
                            path, strerror(errno));
        if (fstat(fd, &st) != 0)
            st.st_mode = 0;
        close(fd);
    }
    if (!S_ISREG(st.st_mode))
        return kvs_fail(kvs, MPIKVS_ERR_FOREIGN,
                        "mpikvs_load: %s is %s, not a regular file: not an "
                        "mpikvs save file (name the file mpikvs_save wrote)",
                        path,
                        S_ISFIFO(st.st_mode)  ? "a FIFO"
                        : S_ISDIR(st.st_mode) ? "a directory"
                        : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                            ? "a device"
                        : S_ISSOCK(st.st_mode) ? "a socket"
                                               : "of another type");
    return MPIKVS_OK;
}
