/*
 * open_resolve.h - what mpikvs_open opens: options, config, shape
 * (open_resolve.c).
 */
#ifndef MPIKVS_OPEN_RESOLVE_H
#define MPIKVS_OPEN_RESOLVE_H

#include <stdint.h>

#include "env.h"
#include "mpikvs.h"

/* The caller's options into own: its size bytes of them, and the
 * default (0, NULL) of every field past them.  opt NULL: all defaults. */
int kvs_read_options(mpikvs_t *kvs, const mpikvs_options_t *opt,
                     mpikvs_options_t *own);

/* Options, config and environment into the table this rank opens: its
 * mode, transport, key and value sizes, slots, and (where the plugin
 * did not plan it) the size a node holds, in *size_per_node. */
int kvs_resolve(mpikvs_t *kvs, const mpikvs_options_t *opt,
                const struct mpikvs_env *env, uint64_t *size_per_node);

/* Collective: every rank asked for the same table, mode and transport. */
int kvs_agree_on_shape(mpikvs_t *kvs, uint64_t size_per_node);

#endif /* MPIKVS_OPEN_RESOLVE_H */
