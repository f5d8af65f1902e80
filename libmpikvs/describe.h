/*
 * describe.h - MPIKVS_VERBOSE and what it prints (describe.c).
 */
#ifndef MPIKVS_DESCRIBE_H
#define MPIKVS_DESCRIBE_H

#include <stdbool.h>
#include "mpikvs.h"

/* MPIKVS_VERBOSE (v, or NULL) into *on: "1" or "0", else
 * MPIKVS_ERR_INVAL naming it (describe.c). */
int kvs_verbose_parse(mpikvs_t *kvs, const char *v, bool *on);
/* What mpikvs_describe writes, to stderr: rank 0's at an open under
 * MPIKVS_VERBOSE=1. */
void kvs_describe_print(const mpikvs_t *kvs);

#endif /* MPIKVS_DESCRIBE_H */
