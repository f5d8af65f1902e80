/*
 * close.h - mpikvs_close, and undoing an open (close.c).
 */
#ifndef MPIKVS_CLOSE_H
#define MPIKVS_CLOSE_H

#include <stdbool.h>

#include "mpikvs.h"

/* Undo whatever open did, waiting for the other ranks only within
 * MPIKVS_CLOSE_TIMEOUT; stalled: this rank gave up on them already.
 * report: its error also goes to mpikvs_last_error(NULL).  Frees kvs. */
int kvs_teardown(mpikvs_t *kvs, bool report, bool stalled);

#endif /* MPIKVS_CLOSE_H */
