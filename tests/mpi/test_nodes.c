/*
 * test_nodes.c - kvs_nodes (libmpikvs/nodes.c): which ranks form a node,
 * who leads it, and the order of the nodes, for every placement one
 * machine can give: MPIKVS_VIRTUAL_NODES from 1 to the ranks (blocks of
 * consecutive ranks), and none (the shared-memory domain: one node
 * here).  Each placement with no node names (nodes by rank) and with the
 * plugin's node names (nodes by name) in three orders: the blocks'
 * reverse, a permutation, and names longer than a sorting row that only
 * differ beyond it (ties: every rank must still agree).
 *
 * Built from the library's sources: it calls kvs_nodes on a handle of
 * its own, with a job layout that only names the node.  Run under mpirun
 * with up to 64 ranks on one machine (run-nodes-test.sh runs it);
 * see mpitest.h for the output.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "env.h"
#include "handle.h"
#include "mpitest.h"
#include "nodes.h"

enum naming { NAMES_NONE, NAMES_REVERSE, NAMES_PERMUTED, NAMES_LONG, NNAMINGS };
static const char *const naming_text[NNAMINGS] = {
    "no names", "names in reverse", "permuted names", "long names"};

/* at least the name part of a sorting row (nodes.c: KVSHM_NODE_MAX less
 * an int, less the NUL), with room for two digits in a node name */
#define LONG_PREFIX (KVSHM_NODE_MAX - 3)

static void node_label(enum naming how, int block, char *buf, size_t len)
{
    switch (how) {
    case NAMES_REVERSE:
        snprintf(buf, len, "n%03d", 500 - block);
        break;
    case NAMES_PERMUTED:
        snprintf(buf, len, "node%d", (block * 5 + 3) % 11);
        break;
    case NAMES_LONG:   /* the same first LONG_PREFIX bytes */
        snprintf(buf, len, "%.*s%c%c", LONG_PREFIX,
                 "llllllllllllllllllllllllllllllllllllllllllllllllllllllll"
                 "llllllllllllllllllll", '0' + block / 10, '0' + block % 10);
        break;
    default:
        buf[0] = '\0';
    }
}

/* The block (virtual node) of a rank; 0 on the one real node. */
static int block_of(int rank, int size, unsigned vnodes)
{
    return vnodes ? (int)(((int64_t)rank * vnodes) / size) : 0;
}

/* What kvs_nodes must give, worked out without it: blocks led by their
 * lowest rank, ordered by rank, or by name under the plugin. */
static int expected_leaders(int size, unsigned vnodes, enum naming how,
                            int *leaders)
{
    char names[64][KVSHM_NODE_MAX];
    int n = 0;

    for (int r = 0; r < size; r++)
        if (r == 0 || block_of(r, size, vnodes) !=
                          block_of(r - 1, size, vnodes)) {
            node_label(how, block_of(r, size, vnodes), names[n],
                       sizeof names[n]);
            leaders[n++] = r;
        }
    if (how == NAMES_NONE || how == NAMES_LONG)   /* long: ties, see run */
        return n;
    for (int i = 1; i < n; i++)   /* insertion sort by name */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[KVSHM_NODE_MAX];
            int tl = leaders[j];
            memcpy(t, names[j], sizeof t);
            memcpy(names[j], names[j - 1], sizeof t);
            memcpy(names[j - 1], t, sizeof t);
            leaders[j] = leaders[j - 1];
            leaders[j - 1] = tl;
        }
    return n;
}

static void run(int rank, int size, unsigned vnodes, enum naming how)
{
    struct mpikvs_env env = {.virtual_nodes = vnodes};
    struct kvshm_job_layout layout;
    mpikvs_t *kvs = calloc(1, sizeof(*kvs));
    char node_name[KVSHM_NODE_MAX], what[96];
    int want[64], nwant, rc, block = block_of(rank, size, vnodes);
    long sum = 0;

    snprintf(what, sizeof what, "np=%d vnodes=%u %s", size, vnodes,
             naming_text[how]);
    mt_phase(what);
    if (!kvs)
        mt_abort("out of memory");
    MPI_Comm_dup(MPI_COMM_WORLD, &kvs->comm);
    MPI_Comm_set_errhandler(kvs->comm, MPI_ERRORS_RETURN);
    kvs->rank = rank;
    kvs->size = size;
    kvs->node_comm = MPI_COMM_NULL;
    if (how != NAMES_NONE) {
        memset(&layout, 0, sizeof layout);
        node_label(how, block, layout.node, sizeof layout.node);
        kvs->layout = &layout;
    }
    nwant = expected_leaders(size, vnodes, how, want);

    rc = kvs_nodes(kvs, &env, node_name, sizeof node_name);
    EXPECT(rc == MPIKVS_OK, "%s: kvs_nodes: %s (%s)", what,
           mpikvs_strerror(rc), kvs->err.text);
    if (rc != MPIKVS_OK)
        mt_abort("kvs_nodes failed");
    EXPECT(kvs->nnodes == (uint32_t)nwant, "%s: %u nodes, expected %d",
           what, kvs->nnodes, nwant);
    EXPECT(kvs->node < kvs->nnodes &&
               block_of(kvs->leaders[kvs->node], size, vnodes) == block,
           "%s: rank %d (block %d) is in node %u, led by rank %d", what,
           rank, block, kvs->node,
           kvs->node < kvs->nnodes ? kvs->leaders[kvs->node] : -1);
    EXPECT(kvs->local_rank == rank - kvs->leaders[kvs->node] &&
               (kvs->local_rank == 0) ==
                   (rank == 0 ||
                    block_of(rank - 1, size, vnodes) != block),
           "%s: local rank %d", what, kvs->local_rank);
    for (uint32_t i = 0; i < kvs->nnodes && (int)i < nwant; i++) {
        if (how == NAMES_LONG)   /* ties: any order, each leader once */
            EXPECT(kvs->leaders[i] >= 0 && kvs->leaders[i] < size &&
                       (kvs->leaders[i] == 0 ||
                        block_of(kvs->leaders[i] - 1, size, vnodes) !=
                            block_of(kvs->leaders[i], size, vnodes)),
                   "%s: node %u led by rank %d, not a block's first",
                   what, i, kvs->leaders[i]);
        else
            EXPECT(kvs->leaders[i] == want[i],
                   "%s: node %u led by rank %d, expected %d", what, i,
                   kvs->leaders[i], want[i]);
        sum = sum * 31 + kvs->leaders[i] + 1;
    }
    EXPECT(mt_all_same(sum, MPI_COMM_WORLD),
           "%s: the ranks disagree on the nodes' order", what);
    if (vnodes && how == NAMES_NONE) {   /* the plugin has real nodes */
        char want_name[KVSHM_NODE_MAX + 16];
        snprintf(want_name, sizeof want_name, "-v%u", kvs->node);
        EXPECT(strlen(node_name) > strlen(want_name) &&
                   strcmp(node_name + strlen(node_name) - strlen(want_name),
                          want_name) == 0,
               "%s: node name '%s' does not end in '%s'", what, node_name,
               want_name);
    } else if (!vnodes && how != NAMES_NONE) {
        EXPECT(strcmp(node_name, layout.node) == 0,
               "%s: node name '%s', not the layout's '%s'", what,
               node_name, layout.node);
    }

    free(kvs->leaders);
    MPI_Comm_free(&kvs->node_comm);
    MPI_Comm_free(&kvs->comm);
    free(kvs);
}

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64)
        mt_abort("run with at most 64 ranks");
    for (unsigned vnodes = 0; vnodes <= (unsigned)size; vnodes++)
        for (int how = 0; how < NNAMINGS; how++)
            run(rank, size, vnodes, (enum naming)how);
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
