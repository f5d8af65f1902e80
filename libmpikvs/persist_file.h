/*
 * persist_file.h - the files of mpikvs_save and mpikvs_load as the file
 * system sees them (persist_file.c): a save's partial file, which only
 * this save can have made, and a load path that is a regular file.
 * persist.c writes and reads what is in them.
 */
#ifndef MPIKVS_PERSIST_FILE_H
#define MPIKVS_PERSIST_FILE_H

#include <stdint.h>
#include <sys/types.h>

#include "handle.h"

/* "<path>.partial.XXXXXX": the suffix a save adds to its path. */
#define KVS_PARTIAL_SUFFIX     ".partial.XXXXXX"
#define KVS_PARTIAL_SUFFIX_LEN (sizeof(KVS_PARTIAL_SUFFIX) - 1)

/* A save's partial file: its name and, on the rank that made it, an
 * open descriptor and its identity. */
struct kvs_partial {
    char  name[KVSHM_PERSIST_PATH_MAX];
    int   fd;             /* -1 where not made here */
    dev_t dev;
    ino_t ino;
};

/* Make a new partial file next to path, mode 0600, under a name no other
 * save uses (mkostemp: O_CREAT|O_EXCL, so never through a link another
 * user planted, never into a file another user made).  On error p->fd is
 * -1 and kvs's error names the file. */
int kvs_partial_create(mpikvs_t *kvs, const char *path,
                       struct kvs_partial *p);

/* The save is whole and synced: p, if its name still is our file, is
 * renamed to path and the directory synced; else it is discarded.  p is
 * closed. */
int kvs_partial_commit(mpikvs_t *kvs, struct kvs_partial *p,
                       const char *path);

/* The save failed: p's name is removed if it still names our file (never
 * what someone else put there), and p closed.  Harmless where p->fd is
 * -1. */
void kvs_partial_discard(struct kvs_partial *p);

/* path names a regular file (not a FIFO, device or directory, whose
 * open could block or read something else); errno-like codes for a path
 * that is not there or not readable. */
int kvs_load_check_file(mpikvs_t *kvs, const char *path);

#endif
