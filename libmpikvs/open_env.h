/*
 * open_env.h - the environment settings mpikvs_open reads (open_env.c).
 */
#ifndef MPIKVS_OPEN_ENV_H
#define MPIKVS_OPEN_ENV_H

#include <stdint.h>

#include "env.h"
#include "mpikvs.h"

/* MPIKVS_CLOSE_TIMEOUT, MPIKVS_TIMEOUT and MPIKVS_UCX_OPS into the
 * handle; MPIKVS_POPULATE's bound into *populate. */
int kvs_apply_env(mpikvs_t *kvs, const struct mpikvs_env *env,
                  uint64_t *populate);

/* Fault this rank's part of the node's buckets in, up to bound bytes;
 * never fails. */
void kvs_populate_buckets(mpikvs_t *kvs, uint64_t bound);

#endif /* MPIKVS_OPEN_ENV_H */
