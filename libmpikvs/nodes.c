/*
 * nodes.c - which ranks form a node, and who leads it.
 *
 * A node is the ranks that share memory (MPI_Comm_split_type), or, with
 * MPIKVS_VIRTUAL_NODES=N, N blocks of consecutive ranks that act as nodes
 * so that the remote path can be tested on one machine.  A node's leader
 * is its lowest rank: it creates the node's region and exposes it in the
 * window.  Under the SPANK plugin the node's name is Slurm's, from the
 * job layout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#include "handle.h"

static void short_hostname(char *buf, size_t len)
{
    char host[256] = "node";

    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    host[40] = '\0';
    kvshm_name_part_from(host, buf, len);
}

/* A leader's row of the gathered names, once sorting starts: the name
 * first (leaders' names are unique), its rank in the spare bytes. */
struct named_leader {
    char name[KVSHM_NODE_MAX - sizeof(int)];
    int  rank;
};

_Static_assert(sizeof(struct named_leader) == KVSHM_NODE_MAX,
               "a leader's name and rank fill one row of the names");

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct named_leader *)a)->name,
                  ((const struct named_leader *)b)->name);
}

/* Ranks of the leaders in node order.  Under the plugin the nodes are
 * ordered by name, so that every step of a job on the same nodes gives a
 * key the same home however its ranks are placed; otherwise by rank. */
static int order_leaders(mpikvs_t *kvs, const char *my_node)
{
    int rc, is_leader = kvs->local_rank == 0, *all;
    char (*names)[KVSHM_NODE_MAX] = NULL;

    all = malloc(sizeof(int) * (size_t)kvs->size);
    if (kvs->layout)
        names = calloc((size_t)kvs->size, KVSHM_NODE_MAX);
    if (!all || (kvs->layout && !names)) {
        free(all);
        free(names);
        return kvs_fail(kvs, -ENOMEM, "out of memory grouping ranks");
    }
    rc = MPI_Allgather(&is_leader, 1, MPI_INT, all, 1, MPI_INT, kvs->comm);
    if (rc == MPI_SUCCESS && names) {
        char mine[KVSHM_NODE_MAX] = "";
        /* what fits a sorting row; longer names only tie */
        memcpy(mine, my_node,
               strnlen(my_node, sizeof(((struct named_leader *)0)->name) - 1));
        rc = MPI_Allgather(mine, KVSHM_NODE_MAX, MPI_CHAR, names,
                           KVSHM_NODE_MAX, MPI_CHAR, kvs->comm);
    }
    if (rc != MPI_SUCCESS) {
        free(all);
        free(names);
        return kvs_mpi_fail(kvs, "MPI_Allgather of node leaders", rc);
    }
    /* Leaders in rank order; under the plugin each row of names becomes
     * its leader's name and rank, sorted by name. */
    kvs->nnodes = 0;
    for (int r = 0; r < kvs->size; r++) {
        if (!all[r])
            continue;
        if (names) {
            struct named_leader *l =
                (struct named_leader *)names[kvs->nnodes];
            memmove(l->name, names[r], sizeof(l->name));
            l->rank = r;
        }
        kvs->leaders[kvs->nnodes++] = r;
    }
    if (names) {
        qsort(names, kvs->nnodes, sizeof(*names), by_name);
        for (uint32_t n = 0; n < kvs->nnodes; n++)
            kvs->leaders[n] = ((struct named_leader *)names[n])->rank;
    }
    free(all);
    free(names);
    return MPIKVS_OK;
}

int kvs_nodes(mpikvs_t *kvs, const struct mpikvs_env *env, char *node_name,
              size_t len)
{
    int rc, color;
    char host[64];

    if (env->virtual_nodes == UINT32_MAX ||
        env->virtual_nodes > (unsigned)kvs->size)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "MPIKVS_VIRTUAL_NODES='%s' is not a node count from "
                        "1 to the %d ranks",
                        getenv("MPIKVS_VIRTUAL_NODES"), kvs->size);
    if (env->virtual_nodes) {
        color = (int)(((int64_t)kvs->rank * env->virtual_nodes) / kvs->size);
        rc = MPI_Comm_split(kvs->comm, color, kvs->rank, &kvs->node_comm);
    } else {
        rc = MPI_Comm_split_type(kvs->comm, MPI_COMM_TYPE_SHARED, kvs->rank,
                                 MPI_INFO_NULL, &kvs->node_comm);
    }
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "splitting the ranks into nodes", rc);
    MPI_Comm_rank(kvs->node_comm, &kvs->local_rank);
    MPI_Comm_size(kvs->node_comm, &kvs->local_size);

    if (kvs->layout)   /* Slurm's node name: the plugin named regions so */
        snprintf(host, sizeof(host), "%s", kvs->layout->node);
    else
        short_hostname(host, sizeof(host));

    kvs->leaders = malloc(sizeof(int) * (size_t)kvs->size);
    if (!kvs->leaders)
        return kvs_fail(kvs, -ENOMEM, "out of memory grouping ranks");
    if ((rc = order_leaders(kvs, host)) != MPIKVS_OK)
        return rc;
    /* My node is the one whose leader my node's rank 0 is. */
    int my_leader = kvs->rank;
    rc = MPI_Bcast(&my_leader, 1, MPI_INT, 0, kvs->node_comm);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Bcast of the node leader", rc);
    for (uint32_t n = 0; n < kvs->nnodes; n++)
        if (kvs->leaders[n] == my_leader)
            kvs->node = n;

    if (env->virtual_nodes)
        snprintf(node_name, len, "%s-v%u", host, kvs->node);
    else
        snprintf(node_name, len, "%s", host);
    return MPIKVS_OK;
}
