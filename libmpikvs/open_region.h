/*
 * open_region.h - the node's data region for mpikvs_open (open_region.c).
 */
#ifndef MPIKVS_OPEN_REGION_H
#define MPIKVS_OPEN_REGION_H

#include "env.h"
#include "mpikvs.h"

/* The plugin's job layout, when this is a step it set up. */
int kvs_open_layout(mpikvs_t *kvs, const struct mpikvs_env *env);

/* Collective: every rank runs under the layout, or none does. */
int kvs_agree_on_layout(mpikvs_t *kvs);

/* The node's data region of the table (node: this node's name). */
int kvs_open_region(mpikvs_t *kvs, const struct mpikvs_env *env,
                    const char *node);

#endif /* MPIKVS_OPEN_REGION_H */
