/*
 * held.h - regions whose names are gone, found through the processes
 * that keep them open.
 *
 * libmpikvs removes the names of the regions it makes itself (outside
 * the SPANK plugin) as soon as every rank that needs them has them open
 * (mpikvs(7), LIFETIME OF REGIONS): the memory then lives exactly as long
 * as a process holds it, and nothing is left once the last one ends,
 * however it ends.  Each process that opened such a region keeps a
 * descriptor of it; /proc/PID/fd/N of that descriptor reads
 * "DIR/mpikvs.JOB.NODE.TAG (deleted)", and opening the link opens the
 * file itself.  The kernel allows that only to a caller that may read
 * the process (proc(5): a ptrace access mode PTRACE_MODE_READ_FSCREDS
 * check, that is the same uid or CAP_SYS_PTRACE), and then checks the
 * file's own permissions as for any open.  (/proc/PID/map_files would
 * need CAP_SYS_ADMIN, or CAP_CHECKPOINT_RESTORE since Linux 5.9.)
 *
 * A held file is taken only when the link reads exactly DIR/NAME
 * (deleted), NAME a region name; the file, as stat(2) sees it through
 * the link before anything opens it, is a regular file with no name left
 * (st_nlink 0: a file really named "NAME (deleted)" reads the same) and
 * owned by the process's effective uid (a rank holds its own user's
 * region); and the descriptor opened through the link has that same
 * device and inode.  The name in the link says nothing more than the
 * header will (kvshm_region_open checks it against the name).
 */
#ifndef MPIKVS_SHM_HELD_H
#define MPIKVS_SHM_HELD_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "region_name.h"

struct kvshm_held {
    char        name[KVSHM_NAME_MAX + 1];
    pid_t       pid;      /* a process that holds it open */
    int         fd;       /* that process's descriptor of it */
    struct stat st;       /* the file, seen through that descriptor */
};

/* Called once per held file; a non-zero return stops the scan. */
typedef int (*kvshm_held_fn)(const struct kvshm_held *held, void *arg);

/* Call fn once for each file (device and inode) of the directory dir
 * (NULL: /dev/shm) held as above by a process this one may read, its own
 * included.  Returns 0, what fn returned to stop, or -errno when /proc
 * cannot be read. */
int kvshm_held_scan(const char *dir, kvshm_held_fn fn, void *arg);

/* Open the held file of region name of dir with flags (O_RDONLY or
 * O_RDWR; O_NONBLOCK, O_NOCTTY and O_CLOEXEC are added): a descriptor,
 * -ENOENT when no process holds one, or the -errno of the open that was
 * refused. */
int kvshm_held_open(const char *dir, const char *name, int flags);

/* The effective uid of process pid, from /proc/PID/status (readable by
 * anyone); (uid_t)-1 when it cannot be told. */
uid_t kvshm_process_euid(pid_t pid);

/* Whether an entry of /proc names a process: digits only, at most 9. */
bool kvshm_proc_pid_name(const char *name);

#endif /* MPIKVS_SHM_HELD_H */
