/*
 * nodes.h - the ranks grouped into nodes (nodes.c).
 */
#ifndef MPIKVS_NODES_H
#define MPIKVS_NODES_H

#include <stddef.h>
#include "env.h"
#include "mpikvs.h"

/* Group comm's ranks into nodes (MPIKVS_VIRTUAL_NODES or shared memory)
 * and fill node_comm, leaders_comm, local_rank/size, node, nnodes and
 * leaders. */
int kvs_nodes(mpikvs_t *kvs, const struct mpikvs_env *env,
                  char *node_name, size_t len);

#endif /* MPIKVS_NODES_H */
