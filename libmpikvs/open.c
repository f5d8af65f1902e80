/*
 * open.c - mpikvs_open, and what an open handle tells (mpikvs_key_size,
 * mpikvs_value_size, mpikvs_transport).  Its steps: the environment
 * (open_env.c), the job layout and what to open (open_resolve.c), the
 * node's region (open_region.c), locks, transport, warm start; a failed
 * open is undone as a close is (close.c).
 *
 * Opening is a sequence of steps that can fail on some ranks and not on
 * others (a config a node cannot read, a /dev/shm that is too small).
 * After each step the ranks agree on the outcome (kvs_agree: an
 * allreduce, and where a step failed a second one and a broadcast of the
 * text), so that either every rank goes on or every rank cleans up and
 * returns the same error: a collective call must never leave half the
 * job waiting.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "bucket_far.h"
#include "clear.h"
#include "close.h"
#include "describe.h"
#include "errors.h"
#include "handle.h"
#include "locks.h"
#include "mpi_impl.h"
#include "near.h"
#include "nodes.h"
#include "open_env.h"
#include "open_region.h"
#include "open_resolve.h"
#include "persist.h"
#include "route.h"
#include "stats.h"
#include "transport.h"
#include "unlink_names.h"
#include "verify.h"

size_t mpikvs_key_size(const mpikvs_t *kvs)
{
    return kvs ? kvs->tab.key_size : 0;
}

size_t mpikvs_value_size(const mpikvs_t *kvs)
{
    return kvs ? kvs->tab.value_size : 0;
}

/* kvs_transport_open resolved kvs->transport (never AUTO) when it set
 * kvs->tp */
const char *mpikvs_transport(const mpikvs_t *kvs)
{
    return kvs && kvs->tp ? kvshm_transport_name(kvs->transport) : NULL;
}

/* ---- the transport ---- */

/* Every node must have the same buckets, or homes would disagree; then
 * the transport to the other nodes' regions. */
static int open_transport(mpikvs_t *kvs)
{
    uint64_t mine[2], lo[2], hi[2];

    mine[0] = kvs->tab.nbuckets;
    mine[1] = kvs->tab.bucket_size;
    if (MPI_Allreduce(mine, lo, 2, MPI_UINT64_T, MPI_MIN, kvs->comm) ||
        MPI_Allreduce(mine, hi, 2, MPI_UINT64_T, MPI_MAX, kvs->comm))
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce of table shapes");
    if (lo[0] != hi[0] || lo[1] != hi[1])
        return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                        "the nodes' regions differ: %llu to %llu buckets of "
                        "%llu to %llu bytes",
                        (unsigned long long)lo[0], (unsigned long long)hi[0],
                        (unsigned long long)lo[1], (unsigned long long)hi[1]);
    return kvs_transport_open(kvs);
}

/* The buffers of remote reads and writes, once the routes say how each
 * node's buckets are read: a batch copies whole buckets and stages slot
 * images only where some route reads buckets whole, else the slot
 * path's probes (bucket_far.h). */
static int alloc_scratch(mpikvs_t *kvs)
{
    bool buckets = kvs_routes_read_buckets(kvs);

    kvs->copy_size = buckets ? kvs->tab.bucket_size : kvs_probe_size(kvs);
    kvs->scratch = malloc(kvs->tab.bucket_size);
    kvs->slot_image = malloc(kvs->tab.slot_size);
    kvs->batch_len = BATCH_CHUNK * kvs->copy_size;
    kvs->batch = malloc(kvs->batch_len);
    kvs->batch_images =
        buckets ? malloc(BATCH_CHUNK * kvs->tab.slot_size) : NULL;
    if (!kvs->scratch || !kvs->slot_image || !kvs->batch ||
        (buckets && !kvs->batch_images))
        return kvs_fail(kvs, -ENOMEM, "out of memory for %llu-byte buckets",
                        (unsigned long long)kvs->tab.bucket_size);
    return MPIKVS_OK;
}

/* Can this thread call MPI?  The library calls MPI in the calling thread
 * (a handle is used by one thread at a time: the caller's part), so under
 * MPI_THREAD_SINGLE or FUNNELED only the main thread may call it.  Each
 * call here is allowed in any thread; the first two also before MPI_Init
 * and after MPI_Finalize. */
static int check_mpi_thread(void)
{
    int flag = 0, provided = MPI_THREAD_SINGLE, is_main = 0;

    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag)
        return kvs_fail(NULL, MPIKVS_ERR_MPI,
                        "mpikvs_open: MPI is not initialized: call "
                        "MPI_Init or MPI_Init_thread first");
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag)
        return kvs_fail(NULL, MPIKVS_ERR_MPI,
                        "mpikvs_open: MPI is finalized: open (and close) "
                        "caches before MPI_Finalize");
    MPI_Query_thread(&provided);
    if (provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE)
        return MPIKVS_OK;
    MPI_Is_thread_main(&is_main);
    if (is_main)
        return MPIKVS_OK;
    return kvs_fail(NULL, MPIKVS_ERR_MPI,
                    "mpikvs_open: MPI provides %s, under which only the "
                    "main thread (the one that initialized MPI) may call "
                    "MPI, and this is another thread: call mpikvs from the "
                    "main thread, or initialize MPI with MPI_Init_thread "
                    "and MPI_THREAD_SERIALIZED (MPI_THREAD_MULTIPLE if "
                    "threads use distinct handles at the same time)",
                    provided == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE"
                                                  : "MPI_THREAD_FUNNELED");
}

static int open_neighbourhoods(mpikvs_t *kvs);

/* mpikvs_open, and the open of a handle's own second table (parent
 * not NULL, its neighbourhoods, near.h): that one takes no job layout, config, tier or warm
 * start, reads its buckets with RMA where the transport could ship keys,
 * and hashes only the first hash_prefix bytes of a key for its home. */
static int open_handle(MPI_Comm comm, const mpikvs_options_t *opt,
                       const mpikvs_t *parent, size_t hash_prefix,
                       mpikvs_t **out)
{
    mpikvs_options_t options;
    struct mpikvs_env env;
    char node[KVSHM_NODE_MAX];
    uint64_t size_per_node = 0, populate = 0;
    bool verbose = false;
    mpikvs_t *kvs;
    int rc;

    if (!out)
        return kvs_fail(NULL, MPIKVS_ERR_INVAL, "mpikvs_open: kvs is NULL");
    *out = NULL;
    if (comm == MPI_COMM_NULL)
        return kvs_fail(NULL, MPIKVS_ERR_INVAL,
                        "mpikvs_open: comm is MPI_COMM_NULL");
    if ((rc = check_mpi_thread()) != MPIKVS_OK ||
        (rc = kvs_check_mpi_impl()) != MPIKVS_OK)
        return rc;
    kvs = calloc(1, sizeof(*kvs));
    if (!kvs)
        return kvs_fail(NULL, -ENOMEM, "mpikvs_open: out of memory");
    kvs->node_comm = MPI_COMM_NULL;
    kvs->leaders_comm = MPI_COMM_NULL;
    kvs->tab.pid = (uint32_t)getpid();
    if (MPI_Comm_dup(comm, &kvs->comm) != MPI_SUCCESS) {
        free(kvs);
        return kvs_fail(NULL, MPIKVS_ERR_MPI, "MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(kvs->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(kvs->comm, &kvs->rank);
    MPI_Comm_size(kvs->comm, &kvs->size);
    kvs_env_read(&env);
    if (parent) {
        env.layout = env.config = env.verbose = NULL;
        env.ucx_ops = "rma";   /* a bucket read per query, not a key */
    }
    rc = kvs_apply_env(kvs, &env, &populate);
    if (rc == MPIKVS_OK)
        rc = kvs_verbose_parse(kvs, env.verbose, &verbose);
    kvs->opened.virtual_nodes = env.virtual_nodes > 0;

    rc = kvs_agree(kvs, rc == MPIKVS_OK ? kvs_open_layout(kvs, &env) : rc);
    if (rc == MPIKVS_OK)
        rc = kvs_agree_on_layout(kvs);
    if (rc == MPIKVS_OK) {
        rc = kvs_read_options(kvs, opt, &options);
        rc = kvs_agree(kvs, rc == MPIKVS_OK ? kvs_resolve(kvs, &options, &env,
                                                      &size_per_node)
                                            : rc);
        /* what places a key: all of it, or a member's coarse key */
        kvs->tab.hash_size = hash_prefix ? hash_prefix : kvs->tab.key_size;
    }
    if (rc == MPIKVS_OK)
        rc = kvs_agree_on_shape(kvs, size_per_node);
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, kvs_nodes(kvs, &env, node, sizeof(node)));
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, kvs_open_region(kvs, &env, node));
    if (rc == MPIKVS_OK)   /* before the next collective: nobody counts */
        kvs_stats_mark_open(kvs);
    if (rc == MPIKVS_OK)   /* before a key record is made (key.h) */
        rc = kvs_agree(kvs, kvs_generation_agree(kvs, false));
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, kvs_locks_open(kvs));
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, open_transport(kvs));
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, alloc_scratch(kvs));
    if (rc == MPIKVS_OK) {
        /* every rank holds its regions now; faulting the buckets in
         * waits until the names are gone, which a crash would leave */
        kvs_unlink_names(kvs);
        kvs_populate_buckets(kvs, populate);
        kvs_stats_set_transport(kvs);
        kvs->ncounters = kvs->table ? kvs->table->counters
                                    : KVSHM_COUNTERS_DEFAULT;
        kvs_verify_open(kvs, &options);
    }
    if (rc == MPIKVS_OK && !parent)   /* before the warm start enters */
        rc = open_neighbourhoods(kvs);
    /* the config's warm start: the entries a run before saved */
    if (rc == MPIKVS_OK && kvs->table && kvs->table->persist.load[0])
        rc = kvs_load_at_open(kvs, kvs->table->persist.load);
    if (rc != MPIKVS_OK) {
        kvs_fail(NULL, rc, "%s", kvs->err.text);
        kvs_teardown(kvs, false, false);
        return rc;
    }
    if (verbose && kvs->rank == 0)
        kvs_describe_print(kvs);
    *out = kvs;
    return MPIKVS_OK;
}

int mpikvs_open(MPI_Comm comm, const mpikvs_options_t *opt, mpikvs_t **out)
{
    return open_handle(comm, opt, NULL, 0, out);
}

/* The table's neighbourhoods, a table of the handle's own over its ranks
 * (collective): placed by a member's coarse key (kvs_table_hash_size),
 * its failure's text the handle's. */
static int open_neighbourhoods(mpikvs_t *kvs)
{
    mpikvs_options_t opt;
    size_t prefix = 0;
    mpikvs_t *near = NULL;
    int rc = kvs_near_prepare(kvs, &opt, &prefix);

    if (rc != MPIKVS_OK || !kvs->near)
        return rc;
    rc = open_handle(kvs->comm, &opt, kvs, prefix, &near);
    if (rc != MPIKVS_OK) {
        kvs_near_detach(kvs);
        return kvs_fail(kvs, rc, "the neighbourhoods of table %s (near): %s",
                        kvs->table->name, mpikvs_last_error(NULL));
    }
    kvs_near_attach(kvs, near);
    return MPIKVS_OK;
}

