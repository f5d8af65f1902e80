/*
 * virtual_nodes.c - MPIKVS_VIRTUAL_NODES, parsed and applied one way
 * (virtual_nodes.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "errors_internal.h"
#include "virtual_nodes.h"

int kvshm_virtual_nodes_parse(const char *s, unsigned max, unsigned *nodes,
                              mpikvs_error_t *err)
{
    char *end = (char *)s;
    unsigned long n = 0;

    if (!s || !*s) {
        *nodes = 0;
        return MPIKVS_OK;
    }
    /* digits only: strtoul would take a sign or leading spaces */
    if (*s < '0' || *s > '9' || (n = strtoul(s, &end, 10), *end) || n > max)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          KVSHM_VIRTUAL_NODES_VAR ": '%s' is not a node "
                          "count from 1 to %u (0: none)",
                          s, max);
    *nodes = (unsigned)n;
    return MPIKVS_OK;
}

int kvshm_virtual_node_of(int rank, int nranks, unsigned nodes)
{
    return (int)((int64_t)rank * nodes / nranks);
}

void kvshm_virtual_node_name(char *buf, size_t len, const char *host,
                             int node)
{
    snprintf(buf, len, "%s-v%d", host, node);
}
