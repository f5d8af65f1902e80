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

/* A step of open that may fail on some ranks only: every rank learns the
 * worst outcome (collective over kvs->comm; errors.c). */
int kvs_agree(mpikvs_t *kvs, int rc);

#endif /* MPIKVS_LIB_ERRORS_H */
