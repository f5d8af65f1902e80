/*
 * errors_internal.h - filling an mpikvs_error_t, shared by shm/ and its users.
 */
#ifndef MPIKVS_SHM_ERRORS_INTERNAL_H
#define MPIKVS_SHM_ERRORS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "mpikvs_errors.h"

/* Set err (if not NULL) to code and the formatted text; returns code, so
 * that "return kvshm_fail(err, ...);" reads as what it does. */
int kvshm_fail(mpikvs_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same with a va_list, for wrappers such as libmpikvs' kvs_fail. */
int kvshm_vfail(mpikvs_error_t *err, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* "8.0 GiB", "512 B": byte counts as people read them. */
void kvshm_format_bytes(char *buf, size_t len, uint64_t bytes);

#endif /* MPIKVS_SHM_ERRORS_INTERNAL_H */
