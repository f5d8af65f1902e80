/*
 * persist.h - the config's persist.load at open (persist.c).
 */
#ifndef MPIKVS_PERSIST_H
#define MPIKVS_PERSIST_H

#include "mpikvs.h"

/* The config's persist.load at open (persist.c): mpikvs_load, but a
 * file that does not exist yet is a cold start, not an error, and a
 * table that holds entries already (a job-scope region an earlier step
 * filled) is left as it is; either way kvs->opened.persist says what it
 * did. */
int kvs_load_at_open(mpikvs_t *kvs, const char *path);

#endif /* MPIKVS_PERSIST_H */
