/*
 * held.c - regions whose names are gone, found through the processes
 * that keep them open (held.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "held.h"

#define DELETED " (deleted)"

uid_t kvshm_process_euid(pid_t pid)
{
    char path[64], line[256];
    unsigned real, effective;
    uid_t uid = (uid_t)-1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return uid;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Uid: %u %u", &real, &effective) == 2) {
            uid = (uid_t)effective;
            break;
        }
    fclose(f);
    return uid;
}

bool kvshm_proc_pid_name(const char *name)
{
    const char *s = name;

    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return s - name <= 9;
}

/* The files already passed to the callback. */
struct seen {
    dev_t *dev;
    ino_t *ino;
    size_t count, cap;
};

/* Whether st was seen; adds it if not (out of memory: it counts as new,
 * the callback may see a file twice). */
static bool seen_before(struct seen *s, const struct stat *st)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->dev[i] == st->st_dev && s->ino[i] == st->st_ino)
            return true;
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        dev_t *dev = realloc(s->dev, cap * sizeof(*dev));
        if (dev)
            s->dev = dev;
        ino_t *ino = dev ? realloc(s->ino, cap * sizeof(*ino)) : NULL;
        if (!ino)
            return false;
        s->ino = ino;
        s->cap = cap;
    }
    s->dev[s->count] = st->st_dev;
    s->ino[s->count++] = st->st_ino;
    return false;
}

/* The region name in link, a descriptor's target "DIR/NAME (deleted)",
 * into name; false when it is not that. */
static bool held_name(const char *link, const char *dir, char *name)
{
    size_t dl = strlen(dir), ll = strlen(link), dn = strlen(DELETED), nl;
    char job[KVSHM_JOB_MAX], node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];

    if (ll <= dl + 1 + dn || strncmp(link, dir, dl) != 0 ||
        link[dl] != '/' || strcmp(link + ll - dn, DELETED) != 0)
        return false;
    nl = ll - dl - 1 - dn;
    if (nl > KVSHM_NAME_MAX)
        return false;
    memcpy(name, link + dl + 1, nl);
    name[nl] = '\0';
    return kvshm_region_name_parse(name, job, node, tag) == 0;
}

/* The descriptors of process pid (its /proc directory entry): each one
 * held as held.h says goes to fn, unless seen before (seen NULL: every
 * holder of a file, so that an open can try the next one). */
static int scan_process(pid_t pid, const char *dir,
                        const char *only, struct seen *seen,
                        kvshm_held_fn fn, void *arg)
{
    char path[64], link[PATH_MAX + sizeof(DELETED)];
    uid_t euid = (uid_t)-1;
    bool euid_read = false;
    struct dirent *e;
    int rc = 0;
    DIR *fds;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    fds = opendir(path);   /* EACCES: not ours to read */
    if (!fds)
        return 0;
    while (rc == 0 && (e = readdir(fds))) {
        struct kvshm_held h;
        ssize_t n;

        if (!kvshm_proc_pid_name(e->d_name))
            continue;
        h.fd = atoi(e->d_name);
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, h.fd);
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        if (!held_name(link, dir, h.name) || (only && strcmp(only, h.name)))
            continue;
        /* stat follows the link to the file without opening it */
        if (stat(path, &h.st) != 0 || !S_ISREG(h.st.st_mode) ||
            h.st.st_nlink != 0)
            continue;
        if (!euid_read) {
            euid = kvshm_process_euid(pid);
            euid_read = true;
        }
        if (h.st.st_uid != euid || (seen && seen_before(seen, &h.st)))
            continue;
        h.pid = pid;
        rc = fn(&h, arg);
    }
    closedir(fds);
    return rc;
}

/* The scan of held.h, of only one name if only is not NULL. */
static int scan(const char *dir, const char *only, kvshm_held_fn fn,
                void *arg)
{
    char real[PATH_MAX];
    struct seen seen = {NULL, NULL, 0, 0};
    struct dirent *e;
    DIR *proc;
    int rc = 0;

    /* the links name the directory as the kernel resolved it */
    if (!realpath(dir ? dir : "/dev/shm", real))
        snprintf(real, sizeof(real), "%s", dir ? dir : "/dev/shm");
    proc = opendir("/proc");
    if (!proc)
        return -errno;
    while (rc == 0 && (e = readdir(proc)))
        if (kvshm_proc_pid_name(e->d_name))
            rc = scan_process((pid_t)atol(e->d_name), real, only, only ? NULL : &seen,
                              fn, arg);
    closedir(proc);
    free(seen.dev);
    free(seen.ino);
    return rc;
}

int kvshm_held_scan(const char *dir, kvshm_held_fn fn, void *arg)
{
    return scan(dir, NULL, fn, arg);
}

struct opening {
    int flags;
    int fd;       /* the descriptor, or the -errno of the last refusal */
};

static int open_one(const struct kvshm_held *h, void *arg)
{
    struct opening *o = arg;
    char path[64];
    struct stat st;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h->pid, h->fd);
    fd = open(path, o->flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        o->fd = -errno;
        return 0;   /* another process may hold it too */
    }
    /* the descriptor decides: the process may have closed it and opened
     * another file under the same number meanwhile */
    if (fstat(fd, &st) != 0 || st.st_dev != h->st.st_dev ||
        st.st_ino != h->st.st_ino || !S_ISREG(st.st_mode) ||
        st.st_nlink != 0) {
        close(fd);
        return 0;
    }
    o->fd = fd;
    return 1;
}

int kvshm_held_open(const char *dir, const char *name, int flags)
{
    struct opening o = {flags, -ENOENT};
    int rc = scan(dir, name, open_one, &o);

    return rc < 0 ? rc : o.fd;
}
