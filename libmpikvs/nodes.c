/*
 * nodes.c - which ranks form a node, and who leads it.
 *
 * A node is the ranks that share memory (MPI_Comm_split_type), or, with
 * MPIKVS_VIRTUAL_NODES=N, N blocks of consecutive ranks that act as nodes
 * so that the remote path can be tested on one machine.  A node's leader
 * is its lowest rank: it creates the node's region and exposes it in the
 * window.  Under the SPANK plugin the node's name is Slurm's, from the
 * job layout.
 *
 * Only the leaders exchange anything across nodes (one allgather among
 * them); each tells its node's ranks the outcome by a broadcast in the
 * node.  No rank receives data from every rank: what a rank receives
 * grows with the nodes, not with the ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#include "env.h"
#include "errors.h"
#include "handle.h"
#include "mpi_impl.h"
#include "nodes.h"
#include "virtual_nodes.h"

static void short_hostname(char *buf, size_t len)
{
    char host[256] = "node";

    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    host[40] = '\0';
    kvshm_name_part_from(host, buf, len);
}

/* A leader's row of the leaders' exchange: its node's name under the
 * plugin (empty otherwise; leaders' names are unique), and its rank in
 * comm. */
struct named_leader {
    char name[KVSHM_NODE_MAX - sizeof(int)];
    int  rank;
};

_Static_assert(sizeof(struct named_leader) == KVSHM_NODE_MAX,
               "a leader's name and rank fill one row of the exchange");

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct named_leader *)a)->name,
                  ((const struct named_leader *)b)->name);
}

/* What a leader tells its node's ranks before the leaders array. */
enum { FACT_RC, FACT_NNODES, FACT_NODE, NFACTS };

/* The leaders' exchange (leaders only, collective over leaders): fill
 * kvs->nnodes and kvs->leaders (comm rank of each node's leader, in node
 * order) and the own node's index.  Under the plugin the nodes are
 * ordered by name, so that every step of a job on the same nodes gives a
 * key the same home however its ranks are placed; otherwise by rank. */
static int order_leaders(mpikvs_t *kvs, MPI_Comm leaders, const char *my_node,
                         int *node)
{
    struct named_leader mine = {.rank = kvs->rank}, *rows;
    int n, rc;

    MPI_Comm_size(leaders, &n);
    rows = malloc(sizeof(*rows) * (size_t)n);
    kvs->leaders = malloc(sizeof(int) * (size_t)n);
    if (!rows || !kvs->leaders) {
        free(rows);
        return kvs_fail(kvs, -ENOMEM, "out of memory grouping ranks");
    }
    if (kvs->layout)   /* what fits a row; longer names only tie */
        memcpy(mine.name, my_node,
               strnlen(my_node, sizeof(mine.name) - 1));
    rc = MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, rows, sizeof(mine),
                       MPI_BYTE, leaders);
    if (rc != MPI_SUCCESS) {
        free(rows);
        return kvs_mpi_fail(kvs, "MPI_Allgather among the node leaders",
                            rc);
    }
    /* The rows come in comm's rank order (the split's key): the nodes'
     * order without the plugin; under it they are sorted by name. */
    if (kvs->layout)
        qsort(rows, (size_t)n, sizeof(*rows), by_name);
    for (int i = 0; i < n; i++) {
        kvs->leaders[i] = rows[i].rank;
        if (rows[i].rank == kvs->rank)
            *node = i;
    }
    kvs->nnodes = (uint32_t)n;
    free(rows);
    return MPIKVS_OK;
}

/* The leaders find the nodes; every rank learns them from its leader. */
static int learn_nodes(mpikvs_t *kvs, const char *my_node)
{
    int facts[NFACTS] = {MPIKVS_OK, 0, 0};
    int rc;

    /* kept: the transports exchange their addresses among the leaders */
    rc = MPI_Comm_split(kvs->comm, kvs->local_rank == 0 ? 0 : MPI_UNDEFINED,
                        kvs->rank, &kvs->leaders_comm);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "splitting off the node leaders", rc);
    if (kvs->local_rank == 0) {
        facts[FACT_RC] = order_leaders(kvs, kvs->leaders_comm, my_node,
                                       &facts[FACT_NODE]);
        facts[FACT_NNODES] = (int)kvs->nnodes;
    }
    rc = MPI_Bcast(facts, NFACTS, MPI_INT, 0, kvs->node_comm);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Bcast of the nodes in the node", rc);
    if (facts[FACT_RC] != MPIKVS_OK)
        return kvs->local_rank == 0
                   ? facts[FACT_RC]
                   : kvs_fail(kvs, facts[FACT_RC],
                              "the node's first rank could not learn the "
                              "other nodes: %s",
                              mpikvs_strerror(facts[FACT_RC]));
    if (kvs->local_rank != 0) {
        kvs->leaders = malloc(sizeof(int) * (size_t)facts[FACT_NNODES]);
        if (!kvs->leaders)
            return kvs_fail(kvs, -ENOMEM, "out of memory grouping ranks");
        kvs->nnodes = (uint32_t)facts[FACT_NNODES];
    }
    rc = MPI_Bcast(kvs->leaders, facts[FACT_NNODES], MPI_INT, 0,
                   kvs->node_comm);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Bcast of the node leaders", rc);
    kvs->node = (uint32_t)facts[FACT_NODE];
    return MPIKVS_OK;
}

int kvs_nodes(mpikvs_t *kvs, const struct mpikvs_env *env, char *node_name,
              size_t len)
{
    int rc, color;
    unsigned virtual_nodes = env->virtual_nodes, n;   /* UINT32_MAX: bad */
    char host[64];
    mpikvs_error_t err;

    /* at most one node a rank, so that every virtual node has its
     * leader: the count read (env.c) against the ranks, the message the
     * parser's */
    if (virtual_nodes == UINT32_MAX || virtual_nodes > (unsigned)kvs->size) {
        kvshm_virtual_nodes_parse(getenv(KVSHM_VIRTUAL_NODES_VAR),
                                  (unsigned)kvs->size, &n, &err);
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s: at most the %d ranks",
                        err.text, kvs->size);
    }
    if (virtual_nodes) {
        color = kvshm_virtual_node_of(kvs->rank, kvs->size, virtual_nodes);
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

    if ((rc = learn_nodes(kvs, host)) != MPIKVS_OK)
        return rc;

    /* kvs->node is the block (kvshm_virtual_node_of): without a layout,
     * the only case open allows, the leaders are numbered in rank order */
    if (virtual_nodes)
        kvshm_virtual_node_name(node_name, len, host, (int)kvs->node);
    else
        snprintf(node_name, len, "%s", host);
    return MPIKVS_OK;
}
