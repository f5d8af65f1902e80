/*
 * errors.h - the failures of libmpikvs' calls (errors.c): the detail of the
 * last one, and the ranks' agreement on a step of open.
 */
#ifndef MPIKVS_LIB_ERRORS_H
#define MPIKVS_LIB_ERRORS_H

#include "mpikvs.h"

/* Set kvs->err (which mpikvs_last_error() shows) and return code; with
 * kvs NULL, the thread's detail (mpikvs_last_error(NULL)). */
int kvs_fail(mpikvs_t *kvs, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A public call given a NULL handle: MPIKVS_ERR_INVAL, with a detail
 * naming call in the thread's (errors.c). */
int kvs_no_handle(const char *call);

/* A step that may fail on some ranks only (of open, of a load): every
 * rank learns the worst outcome by kvs_agreed's rule (collective over
 * kvs->comm, unbounded).  A save's steps agree by the same rule within
 * MPIKVS_TIMEOUT (kvs_bcomm_agree, bounded_comm.h). */
int kvs_agree(mpikvs_t *kvs, int rc);

/* The rule of agreement, applied once the ranks have exchanged their
 * outcomes: worst (the most negative of them, or 0) and text (that of
 * the lowest rank with it).  Returns rc if worst is 0, else worst with
 * text in kvs->err. */
int kvs_agreed(mpikvs_t *kvs, int rc, int worst, const char *text);

#endif /* MPIKVS_LIB_ERRORS_H */
