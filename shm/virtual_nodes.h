/*
 * virtual_nodes.h - MPIKVS_VIRTUAL_NODES: the ranks as blocks that act as
 * nodes, so that the paths between nodes can be run on one machine.
 *
 * One rule for libmpikvs (libmpikvs/nodes.c) and libmpikvs-rmacache
 * (rmacache/node_region.c): the value is a count V from 1, decimal
 * digits only, or 0 or empty for none (the real nodes, as unset); of n
 * ranks, rank r is in virtual node r * V / n (blocks of
 * consecutive ranks, the lowest rank of each first); a virtual node's
 * part in region names is the host's followed by "-v<node>", so the two
 * libraries name the same node's regions alike.
 */
#ifndef MPIKVS_SHM_VIRTUAL_NODES_H
#define MPIKVS_SHM_VIRTUAL_NODES_H

#include <stddef.h>

#include "mpikvs_errors.h"

#define KVSHM_VIRTUAL_NODES_VAR "MPIKVS_VIRTUAL_NODES"
#define KVSHM_VIRTUAL_NODES_MAX (1u << 20)

/* The value of MPIKVS_VIRTUAL_NODES, s (NULL, "" or "0": none, *nodes =
 * 0), as a count from 1 to max.  MPIKVS_OK, or MPIKVS_ERR_INVAL with err
 * naming the variable and the value (*nodes untouched). */
int kvshm_virtual_nodes_parse(const char *s, unsigned max, unsigned *nodes,
                              mpikvs_error_t *err);

/* The virtual node of rank out of nranks ranks in nodes virtual nodes. */
int kvshm_virtual_node_of(int rank, int nranks, unsigned nodes);

/* The node part of a virtual node's regions' names: host's, then
 * "-v<node>". */
void kvshm_virtual_node_name(char *buf, size_t len, const char *host,
                             int node);

#endif /* MPIKVS_SHM_VIRTUAL_NODES_H */
