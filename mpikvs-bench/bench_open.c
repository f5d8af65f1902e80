/*
 * bench_open.c - "mpikvs-bench open": how long mpikvs_open and
 * mpikvs_close take, under mpirun or srun, and what an open is made of,
 * so that the time of an open on many more ranks can be estimated.
 *
 * Three parts, each repeated --reps times, every repetition started
 * together at a barrier:
 *   - mpikvs_open and mpikvs_close themselves;
 *   - the steps of an open, each the same MPI (or shm) call the library
 *     makes, timed alone: the communicator's dup, the split into nodes,
 *     the split off of the node leaders, the leaders' exchange, the
 *     broadcast in the node, one allreduce, the window's create and free,
 *     the node region's create (leader), attach (the others) and
 *     populate (every rank, as MPIKVS_POPULATE says: issue 16); and the
 *     exchange the library made before issue 14, an allgather over every
 *     rank, for comparison;
 *   - how many of each MPI call one open and one close make, and the
 *     bytes they bring to a rank: counted through the MPI profiling
 *     interface while the library's calls run (bench_mpi_count.h), so
 *     the counts are the library's own, of whichever libmpikvs is loaded.
 * A time is a rank's mean over the repetitions; the table gives the
 * minimum, median and maximum of it over the ranks that take part.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "bench_subcommands.h"

#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_dht.h"
#include "bench_mpi_count.h"
#include "mpikvs.h"
#include "names.h"
#include "populate.h"
#include "region.h"
#include "size.h"

#define SUB       "open"
#define MAX_REPS  UINT64_C(100000)
#define ROW_BYTES KVSHM_NODE_MAX   /* a leader's row in the exchange */

enum counted { COUNT_OPEN, COUNT_CLOSE, NCOUNTED };
static const char *const counted_name[NCOUNTED] = {"open", "close"};

/* The calls of every open, and of every close, summed over the reps. */
static struct bench_mpi_counts counted[NCOUNTED];

/* ---- the steps -------------------------------------------------------- */

#define STEPS(X)                                                          \
    X(COMM_DUP, "comm_dup", "MPI_Comm_dup of the communicator")           \
    X(NODE_SPLIT, "node_split",                                           \
      "MPI_Comm_split_type (virtual nodes: MPI_Comm_split)")              \
    X(LEADERS_SPLIT, "leaders_split",                                     \
      "MPI_Comm_split off of the node leaders")                           \
    X(LEADERS_ALLGATHER, "leaders_allgather",                             \
      "MPI_Allgather of a 64-byte row among the leaders")                 \
    X(NODE_BCAST, "node_bcast",                                           \
      "MPI_Bcast in the node: 3 ints, then the leaders")                  \
    X(ALLREDUCE, "allreduce", "one MPI_Allreduce of an int")              \
    X(OLD_ALLGATHER_INT, "old_allgather_int",                             \
      "before issue 14: MPI_Allgather of an int over every rank")         \
    X(OLD_ALLGATHER_NAME, "old_allgather_name",                           \
      "before issue 14, under the plugin: of a 64-byte name, every rank") \
    X(WIN_CREATE, "win_create",                                           \
      "MPI_Win_create, the leader exposing --size bytes")                 \
    X(WIN_FREE, "win_free", "MPI_Win_free of that window")                \
    X(REGION_CREATE, "region_create",                                     \
      "the leader creates a --size region (shm)")                         \
    X(REGION_ATTACH, "region_attach",                                     \
      "the others open and map it (shm)")                                 \
    X(REGION_POPULATE, "region_populate",                                 \
      "every rank faults it in, as MPIKVS_POPULATE says (shm)")

#define STEP_ENUM(id, name, what) STEP_##id,
enum step { STEPS(STEP_ENUM) NSTEPS };
#undef STEP_ENUM
#define STEP_NAME(id, name, what) name,
static const char *const step_name[NSTEPS] = {STEPS(STEP_NAME)};
#undef STEP_NAME
#define STEP_WHAT(id, name, what) what,
static const char *const step_what[NSTEPS] = {STEPS(STEP_WHAT)};
#undef STEP_WHAT

struct ctx {
    int          rank, np, nodes, local_rank, local_size;
    uint32_t     node_index;       /* this rank's node: the nodes are the
                                    * library's (mpikvs_info), learnt
                                    * from the first open */
    bool         virtual_nodes, json;
    uint64_t     reps, size;
    const char  *mode;
    MPI_Comm     node, leaders;    /* as the library makes them */
    unsigned char *rows;           /* the exchanges' receive buffers */
    unsigned char *window;         /* the leader's exposed memory */
    char         job[KVSHM_JOB_MAX], node_name[KVSHM_NODE_MAX];
    const char  *shm_dir;          /* MPIKVS_SHM_DIR, or NULL */
    uint64_t     populate;         /* MPIKVS_POPULATE's bound */
    struct kvshm_populated populated; /* by the last region_populate */
};

/* What a rank's repetition leaves for the next untimed part. */
struct rep {
    MPI_Comm             comm;
    MPI_Win              win;
    struct kvshm_region *region;
};

static void die(const struct ctx *c, const char *what, const char *why)
{
    fprintf(stderr, "%s: %s: rank %d: %s: %s\n", BENCH_PROG, SUB, c->rank,
            what, why);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
    exit(BENCH_EXIT_FAIL);
}

static void mpi_check(const struct ctx *c, const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;

    if (rc == MPI_SUCCESS)
        return;
    MPI_Error_string(rc, text, &len);
    die(c, what, text);
}

static struct kvshm_region_spec region_spec(const struct ctx *c)
{
    struct kvshm_region_spec s = {
        .dir = c->shm_dir, .job = c->job, .node = c->node_name,
        .tag = "bench-open", .kind = KVSHM_KIND_DATA, .size = c->size,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .step = KVSHM_NO_STEP};
    return s;
}

static void region_create(const struct ctx *c, struct rep *r)
{
    struct kvshm_region_spec spec = region_spec(c);
    mpikvs_error_t err;

    if (kvshm_region_create(&spec, &r->region, &err) != MPIKVS_OK)
        die(c, "creating a region", err.text);
}

static void region_attach(const struct ctx *c, struct rep *r)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA, .writable = true,
                                 .expect_uid = geteuid()};
    char name[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err;

    if (kvshm_region_name(name, sizeof name, c->job, c->node_name,
                          "bench-open", &err) != MPIKVS_OK ||
        kvshm_region_open(c->shm_dir, name, &oo, &r->region, &err) !=
            MPIKVS_OK)
        die(c, "opening the node's region", err.text);
}

/* Every rank of the node closes the region, then the leader removes it. */
static void region_remove(const struct ctx *c, struct rep *r)
{
    char name[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err;

    if (r->region)
        kvshm_region_close(&r->region);
    PMPI_Barrier(c->node);
    if (c->local_rank == 0 &&
        kvshm_region_name(name, sizeof name, c->job, c->node_name,
                          "bench-open", &err) == MPIKVS_OK)
        kvshm_region_unlink(c->shm_dir, name);
}

/* False when this MPI cannot make the window (Open MPI's osc rdma at one
 * rank): the window steps are then not measured, as the library makes
 * none there in the lockfree mode. */
static bool win_create(const struct ctx *c, struct rep *r)
{
    bool leader = c->local_rank == 0;

    if (PMPI_Win_create(leader ? c->window : NULL,
                        leader ? (MPI_Aint)c->size : 0, 1, MPI_INFO_NULL,
                        MPI_COMM_WORLD, &r->win) == MPI_SUCCESS)
        return true;
    r->win = MPI_WIN_NULL;
    return false;
}

/* Before the timed part of a repetition (every rank). */
static void prepare(const struct ctx *c, enum step s, struct rep *r)
{
    if (s == STEP_WIN_FREE)
        win_create(c, r);   /* none: timed() takes no part */
    if (s == STEP_REGION_ATTACH || s == STEP_REGION_POPULATE) {
        if (c->local_rank == 0)
            region_create(c, r);
        PMPI_Barrier(c->node);
    }
    if (s == STEP_REGION_POPULATE) {
        if (c->local_rank != 0)
            region_attach(c, r);
        PMPI_Barrier(c->node);
    }
}

/* The timed part; false when this rank takes no part in the step. */
static bool timed(struct ctx *c, enum step s, struct rep *r)
{
    int v = c->rank, facts[3] = {0, 0, 0};
    bool leader = c->local_rank == 0;
    unsigned char row[ROW_BYTES] = "";

    switch (s) {
    case STEP_COMM_DUP:
        mpi_check(c, "MPI_Comm_dup", PMPI_Comm_dup(MPI_COMM_WORLD, &r->comm));
        return true;
    case STEP_NODE_SPLIT:
        if (c->virtual_nodes)
            mpi_check(c, "MPI_Comm_split",
                      PMPI_Comm_split(MPI_COMM_WORLD, (int)c->node_index,
                                      c->rank, &r->comm));
        else
            mpi_check(c, "MPI_Comm_split_type",
                      PMPI_Comm_split_type(MPI_COMM_WORLD,
                                           MPI_COMM_TYPE_SHARED, c->rank,
                                           MPI_INFO_NULL, &r->comm));
        return true;
    case STEP_LEADERS_SPLIT:
        mpi_check(c, "MPI_Comm_split",
                  PMPI_Comm_split(MPI_COMM_WORLD,
                                  leader ? 0 : MPI_UNDEFINED, c->rank,
                                  &r->comm));
        return true;
    case STEP_LEADERS_ALLGATHER:
        if (!leader)
            return false;
        mpi_check(c, "MPI_Allgather",
                  PMPI_Allgather(row, ROW_BYTES, MPI_BYTE, c->rows,
                                 ROW_BYTES, MPI_BYTE, c->leaders));
        return true;
    case STEP_NODE_BCAST:
        mpi_check(c, "MPI_Bcast",
                  PMPI_Bcast(facts, 3, MPI_INT, 0, c->node));
        mpi_check(c, "MPI_Bcast",
                  PMPI_Bcast(c->rows, c->nodes, MPI_INT, 0, c->node));
        return true;
    case STEP_ALLREDUCE:
        mpi_check(c, "MPI_Allreduce",
                  PMPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN,
                                 MPI_COMM_WORLD));
        return true;
    case STEP_OLD_ALLGATHER_INT:
        mpi_check(c, "MPI_Allgather",
                  PMPI_Allgather(&v, 1, MPI_INT, c->rows, 1, MPI_INT,
                                 MPI_COMM_WORLD));
        return true;
    case STEP_OLD_ALLGATHER_NAME:
        mpi_check(c, "MPI_Allgather",
                  PMPI_Allgather(row, ROW_BYTES, MPI_CHAR, c->rows,
                                 ROW_BYTES, MPI_CHAR, MPI_COMM_WORLD));
        return true;
    case STEP_WIN_CREATE:
        return win_create(c, r);
    case STEP_WIN_FREE:
        if (r->win == MPI_WIN_NULL)
            return false;
        mpi_check(c, "MPI_Win_free", PMPI_Win_free(&r->win));
        return true;
    case STEP_REGION_CREATE:
        if (!leader)
            return false;
        region_create(c, r);
        return true;
    case STEP_REGION_ATTACH:
        if (leader)
            return false;
        region_attach(c, r);
        return true;
    case STEP_REGION_POPULATE:
        /* the whole region, where the library takes its buckets */
        c->populated = kvshm_populate(r->region->base, c->size,
                                      (unsigned)c->local_rank,
                                      (unsigned)c->local_size, c->populate);
        return true;
    default:
        return false;
    }
}

/* After the timed part (every rank). */
static void undo(const struct ctx *c, enum step s, struct rep *r)
{
    if (r->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&r->comm);
    if (s == STEP_WIN_CREATE && r->win != MPI_WIN_NULL)
        PMPI_Win_free(&r->win);
    if (s == STEP_REGION_CREATE || s == STEP_REGION_ATTACH ||
        s == STEP_REGION_POPULATE)
        region_remove(c, r);
}

/* A rank's mean time of a step over the repetitions, in ms; negative
 * when it takes no part. */
static double run_step(struct ctx *c, enum step s)
{
    uint64_t total = 0;
    bool part = false;

    for (uint64_t i = 0; i < c->reps; i++) {
        struct rep r = {.comm = MPI_COMM_NULL, .win = MPI_WIN_NULL};
        prepare(c, s, &r);
        PMPI_Barrier(MPI_COMM_WORLD);
        uint64_t t0 = bench_now_ns();
        part = timed(c, s, &r);
        total += bench_now_ns() - t0;
        undo(c, s, &r);
    }
    return part ? (double)total / (double)c->reps * 1e-6 : -1.0;
}

/* ---- open and close --------------------------------------------------- */

/* A rank's mean times of mpikvs_open and mpikvs_close, in ms, and the
 * nodes the first open formed (c->nodes, node_index, virtual_nodes),
 * which the steps split into.  Returns false when the open failed (on
 * every rank: the library says so). */
static bool run_open_close(struct ctx *c, double *open_ms,
                           double *close_ms)
{
    mpikvs_options_t opt = {.size = sizeof(mpikvs_options_t),
                            .key_size = 16, .value_size = 16,
                            .size_per_node = (size_t)c->size,
                            .mode = c->mode};
    uint64_t topen = 0, tclose = 0;

    for (uint64_t i = 0; i < c->reps; i++) {
        mpikvs_t *kvs = NULL;
        PMPI_Barrier(MPI_COMM_WORLD);
        bench_mpi_count_into(&counted[COUNT_OPEN]);
        uint64_t t0 = bench_now_ns();
        int rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
        topen += bench_now_ns() - t0;
        bench_mpi_count_into(NULL);
        if (rc != MPIKVS_OK) {
            if (c->rank == 0)
                fprintf(stderr, "%s: %s: mpikvs_open (%s, size_per_node "
                                "%llu): %s (%s)\n",
                        BENCH_PROG, SUB, c->mode,
                        (unsigned long long)c->size, mpikvs_strerror(rc),
                        mpikvs_last_error(NULL));
            return false;
        }
        if (i == 0) {   /* untimed */
            mpikvs_info_t in = {.size = sizeof in};
            if ((rc = mpikvs_info(kvs, &in)) != MPIKVS_OK)
                die(c, "mpikvs_info", mpikvs_last_error(kvs));
            c->nodes = (int)in.nodes;
            c->node_index = in.node;
            c->virtual_nodes = in.virtual_nodes != 0;
        }
        PMPI_Barrier(MPI_COMM_WORLD);
        bench_mpi_count_into(&counted[COUNT_CLOSE]);
        t0 = bench_now_ns();
        rc = mpikvs_close(&kvs);
        tclose += bench_now_ns() - t0;
        bench_mpi_count_into(NULL);
        if (rc != MPIKVS_OK)
            die(c, "mpikvs_close", mpikvs_last_error(NULL));
    }
    *open_ms = (double)topen / (double)c->reps * 1e-6;
    *close_ms = (double)tclose / (double)c->reps * 1e-6;
    return true;
}

/* ---- figures ------------------------------------------------------------ */

/* min, median, max of the ranks' values that are >= 0; ranks: how many. */
struct spread {
    int    ranks;
    double min, median, max;
};

/* Collective; the result is rank 0's. */
static struct spread spread_of(const struct ctx *c, double mine,
                               double *all)
{
    struct spread s = {0, 0, 0, 0};
    int n = 0;

    PMPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (c->rank != 0)
        return s;
    for (int i = 0; i < c->np; i++)
        if (all[i] >= 0)
            all[n++] = all[i];
    if (!n)
        return s;
    bench_sort_double(all, (size_t)n);
    s.ranks = n;
    s.min = all[0];
    s.median = bench_median_double(all, (size_t)n);
    s.max = all[n - 1];
    return s;
}

/* Calls and bytes of one open or close: max over the ranks (a leader
 * makes more calls), and bytes summed over the ranks. */
struct call_row {
    double calls_max, bytes_max, bytes_sum;
};

static void reduce_calls(const struct ctx *c,
                         struct call_row rows[NCOUNTED][BENCH_MPI_NCALLS])
{
    double mine[NCOUNTED][BENCH_MPI_NCALLS][2], max[NCOUNTED][BENCH_MPI_NCALLS][2],
        sum[NCOUNTED][BENCH_MPI_NCALLS][2];

    for (int o = 0; o < NCOUNTED; o++)
        for (int k = 0; k < BENCH_MPI_NCALLS; k++) {
            mine[o][k][0] = (double)counted[o].calls[k] / (double)c->reps;
            mine[o][k][1] = (double)counted[o].bytes[k] / (double)c->reps;
        }
    PMPI_Reduce(mine, max, NCOUNTED * BENCH_MPI_NCALLS * 2, MPI_DOUBLE, MPI_MAX, 0,
                MPI_COMM_WORLD);
    PMPI_Reduce(mine, sum, NCOUNTED * BENCH_MPI_NCALLS * 2, MPI_DOUBLE, MPI_SUM, 0,
                MPI_COMM_WORLD);
    for (int o = 0; o < NCOUNTED; o++)
        for (int k = 0; k < BENCH_MPI_NCALLS; k++)
            rows[o][k] = (struct call_row){max[o][k][0], max[o][k][1],
                                           sum[o][k][1]};
}

/* ---- output ------------------------------------------------------------- */

struct result {
    struct spread   open, close, step[NSTEPS];
    struct call_row calls[NCOUNTED][BENCH_MPI_NCALLS];
};

static void print_table(const struct ctx *c, const struct result *res)
{
    char size[48], bound[32], done[32], share[32];

    dht_size_text(c->size, size, sizeof size);
    printf("# %s %s open: np=%d nodes=%d%s mode=%s size_per_node=%s "
           "populate=%s reps=%llu\n",
           BENCH_PROG, PACKAGE_VERSION, c->np, c->nodes,
           c->virtual_nodes ? " (virtual)" : "", c->mode, size,
           kvshm_populate_text(c->populate, bound, sizeof bound),
           (unsigned long long)c->reps);
    printf("# ms: each rank's mean over the repetitions; min, median and "
           "max over the ranks that take part\n");
    printf("%-20s %5s %10s %10s %10s  %s\n", "operation", "ranks", "min_ms",
           "median_ms", "max_ms", "what");
    printf("%-20s %5d %10.3f %10.3f %10.3f  %s\n", "mpikvs_open",
           res->open.ranks, res->open.min, res->open.median, res->open.max,
           "the library's open");
    printf("%-20s %5d %10.3f %10.3f %10.3f  %s\n", "mpikvs_close",
           res->close.ranks, res->close.min, res->close.median,
           res->close.max, "the library's close");
    for (int s = 0; s < NSTEPS; s++)
        if (res->step[s].ranks)
            printf("%-20s %5d %10.3f %10.3f %10.3f  %s\n", step_name[s],
                   res->step[s].ranks, res->step[s].min,
                   res->step[s].median, res->step[s].max, step_what[s]);
        else
            printf("%-20s %5d %10s %10s %10s  %s (not made here)\n",
                   step_name[s], 0, "-", "-", "-", step_what[s]);
    snprintf(done, sizeof done, "%.1f MiB",
             (double)c->populated.bytes / 1048576.0);
    snprintf(share, sizeof share, "%.1f MiB",
             (double)c->populated.share / 1048576.0);
    printf("# region_populate: rank 0 faulted in %s (its share %s first) "
           "%s%s%s\n", done, share,
           c->populated.touched ? "by touching a word a page"
                                : "by MADV_POPULATE",
           c->populated.error ? ", stopped by: " : "",
           c->populated.error ? strerror(c->populated.error) : "");
    printf("# MPI calls of one open and one close (max over the ranks) "
           "and the bytes they bring (max over the ranks, sum over them)\n");
    printf("%-20s %6s %6s %12s %12s\n", "call", "open", "close",
           "open_B_max", "open_B_sum");
    for (int k = 0; k < BENCH_MPI_NCALLS; k++)
        printf("%-20s %6.1f %6.1f %12.0f %12.0f\n", bench_mpi_call_name[k],
               res->calls[COUNT_OPEN][k].calls_max,
               res->calls[COUNT_CLOSE][k].calls_max,
               res->calls[COUNT_OPEN][k].bytes_max,
               res->calls[COUNT_OPEN][k].bytes_sum);
}

static void json_spread(const char *name, const struct spread *s,
                        const char *what, bool comma)
{
    if (s->ranks)
        printf("    {\"name\": \"%s\", \"ranks\": %d, \"min_ms\": %.6f, "
               "\"median_ms\": %.6f, \"max_ms\": %.6f, \"what\": \"%s\"}"
               "%s\n", name, s->ranks, s->min, s->median, s->max, what,
               comma ? "," : "");
    else   /* no rank made it (the window at one rank) */
        printf("    {\"name\": \"%s\", \"ranks\": 0, \"min_ms\": null, "
               "\"median_ms\": null, \"max_ms\": null, \"what\": \"%s\"}"
               "%s\n", name, what, comma ? "," : "");
}

static void print_json(const struct ctx *c, const struct result *res)
{
    char bound[32];

    printf("{\n  \"benchmark\": \"open\",\n  \"version\": \"%s\",\n",
           PACKAGE_VERSION);
    printf("  \"np\": %d,\n  \"nodes\": %d,\n  \"virtual_nodes\": %s,\n",
           c->np, c->nodes, c->virtual_nodes ? "true" : "false");
    printf("  \"mode\": \"%s\",\n  \"size_per_node\": %llu,\n"
           "  \"populate\": \"%s\",\n"
           "  \"reps\": %llu,\n  \"timer\": {\"source\": "
           "\"clock_monotonic\"},\n",
           c->mode, (unsigned long long)c->size,
           kvshm_populate_text(c->populate, bound, sizeof bound),
           (unsigned long long)c->reps);
    printf("  \"operations\": [\n");
    json_spread("mpikvs_open", &res->open, "the library's open", true);
    json_spread("mpikvs_close", &res->close, "the library's close", false);
    printf("  ],\n  \"steps\": [\n");
    for (int s = 0; s < NSTEPS; s++)
        json_spread(step_name[s], &res->step[s], step_what[s],
                    s + 1 < NSTEPS);
    printf("  ],\n  \"mpi_calls\": [\n");
    for (int k = 0; k < BENCH_MPI_NCALLS; k++) {
        printf("    {\"call\": \"%s\"", bench_mpi_call_name[k]);
        for (int o = 0; o < NCOUNTED; o++)
            printf(", \"%s\": %.1f, \"%s_bytes_max\": %.0f, "
                   "\"%s_bytes_sum\": %.0f",
                   counted_name[o], res->calls[o][k].calls_max,
                   counted_name[o], res->calls[o][k].bytes_max,
                   counted_name[o], res->calls[o][k].bytes_sum);
        printf("}%s\n", k + 1 < BENCH_MPI_NCALLS ? "," : "");
    }
    printf("  ]\n}\n");
}

/* ---- options ------------------------------------------------------------ */

static void open_usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun [-np N] %s open [options]\n"
"Times mpikvs_open and mpikvs_close, the steps an open is made of (the\n"
"same MPI and shm calls, timed alone), and counts the MPI calls of one\n"
"open and one close, so that an open on more ranks can be estimated.\n"
"\n"
"  --reps R         repetitions of each (default 20)\n"
"  --size BYTES     size_per_node of the cache, and the size of the\n"
"                   window and region steps (default 64M)\n"
"  --mode MODE      lockfree, fine-lock or coarse-lock (default lockfree)\n"
"  --json           print one JSON document instead of the table\n"
"  -h, --help       print this and exit\n"
"\nMPIKVS_POPULATE (mpikvs(3)) bounds what the library's open and the\n"
"region_populate step fault in; compare with MPIKVS_POPULATE=0.\n"
"Across nodes (or MPIKVS_VIRTUAL_NODES) and in the lock modes, Open MPI\n"
"needs OMPI_MCA_osc=pt2pt or ucx.  See mpikvs-bench(1).\n", BENCH_PROG);
}

enum { OPT_REPS = 256, OPT_SIZE, OPT_MODE, OPT_JSON };

/* 0: run, 1: --help was printed, -1: bad usage (said). */
static int open_options(int argc, char **argv, struct ctx *c, bool speak)
{
    static const struct option longopts[] = {
        {"reps", required_argument, NULL, OPT_REPS},
        {"size", required_argument, NULL, OPT_SIZE},
        {"mode", required_argument, NULL, OPT_MODE},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mpikvs_error_t err;
    int o, bad = 0;

    c->reps = 20;
    c->size = UINT64_C(64) << 20;
    c->mode = "lockfree";
    optind = 1;
    opterr = 0;
    while (!bad && (o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (o) {
        case OPT_REPS:
            bad = bench_parse_u64(SUB, "--reps", optarg, 1, MAX_REPS,
                                  &c->reps);
            break;
        case OPT_SIZE:
            if (kvshm_parse_size(optarg, "--size", 0, &c->size, &err) !=
                    MPIKVS_OK ||
                c->size < 4096) {
                fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB,
                        c->size < 4096 ? "--size: at least 4096 bytes"
                                       : err.text);
                bad = -1;
            }
            break;
        case OPT_MODE:
            c->mode = optarg;
            if (kvshm_mode_parse(optarg, &(enum kvshm_mode){0}) != MPIKVS_OK) {
                char list[64];
                fprintf(stderr, "%s: %s: invalid value '%s' for --mode: "
                                "expected one of %s\n", BENCH_PROG, SUB,
                        optarg, kvshm_mode_list(list, sizeof(list)));
                bad = -1;
            }
            break;
        case OPT_JSON:
            c->json = true;
            break;
        case 'h':
            if (speak)
                open_usage(stdout);
            return 1;
        default:
            return bench_bad_option(SUB, o, argv);
        }
    }
    if (bad || bench_no_operands(SUB, argc, argv))
        return -1;
    return 0;
}

/* ---- the subcommand ----------------------------------------------------- */

/* The node and leaders' communicators the steps run in (of the nodes
 * run_open_close learnt), the buffers, and the names of the regions
 * (untimed). */
static void set_up(struct ctx *c)
{
    mpikvs_error_t err;
    const char *v;
    int leader;

    if (c->virtual_nodes)
        PMPI_Comm_split(MPI_COMM_WORLD, (int)c->node_index, c->rank,
                        &c->node);
    else
        PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank,
                             MPI_INFO_NULL, &c->node);
    PMPI_Comm_rank(c->node, &c->local_rank);
    PMPI_Comm_size(c->node, &c->local_size);
    PMPI_Comm_split(MPI_COMM_WORLD, c->local_rank == 0 ? 0 : MPI_UNDEFINED,
                    c->rank, &c->leaders);
    c->rows = calloc((size_t)c->np, ROW_BYTES);
    c->window = c->local_rank == 0 ? calloc(1, (size_t)c->size) : NULL;
    if (!c->rows || (c->local_rank == 0 && !c->window))
        die(c, "allocating the buffers", strerror(ENOMEM));
    c->shm_dir = getenv("MPIKVS_SHM_DIR");
    if (c->shm_dir && !*c->shm_dir)
        c->shm_dir = NULL;
    /* as the library reads it; the library's open refuses a bad one
     * next, and says why */
    if (!(v = getenv("MPIKVS_POPULATE")) || !*v ||
        kvshm_populate_parse(v, "MPIKVS_POPULATE", &c->populate, &err) !=
            MPIKVS_OK)
        c->populate = KVSHM_POPULATE_DEFAULT;
    if (c->rank == 0)
        kvshm_unique_id(c->job, sizeof c->job);
    PMPI_Bcast(c->job, sizeof c->job, MPI_CHAR, 0, MPI_COMM_WORLD);
    leader = c->rank;
    PMPI_Bcast(&leader, 1, MPI_INT, 0, c->node);
    snprintf(c->node_name, sizeof c->node_name, "bench%d", leader);
}

static void tear_down(struct ctx *c)
{
    if (c->leaders != MPI_COMM_NULL)
        PMPI_Comm_free(&c->leaders);
    PMPI_Comm_free(&c->node);
    free(c->rows);
    free(c->window);
}

int bench_open_main(int argc, char **argv)
{
    struct ctx c = {.node = MPI_COMM_NULL, .leaders = MPI_COMM_NULL};
    struct result res;
    double open_ms = 0, close_ms = 0, *all;
    int rc, status = 0, saved;

    rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "%s: %s: MPI_Init failed (error %d): run it under "
                        "mpirun or srun\n", BENCH_PROG, SUB, rc);
        return BENCH_EXIT_FAIL;
    }
    PMPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &c.np);
    /* a window MPI cannot make is a row without figures (win_create) */
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    saved = bench_stderr_mute(c.rank != 0);
    rc = open_options(argc, argv, &c, c.rank == 0);
    bench_stderr_restore(saved);
    if (rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    }
    memset(&res, 0, sizeof res);
    if (!run_open_close(&c, &open_ms, &close_ms)) {
        MPI_Finalize();
        return BENCH_EXIT_FAIL;
    }
    set_up(&c);
    all = malloc(sizeof(*all) * (size_t)c.np);
    if (!all)
        die(&c, "allocating the buffers", strerror(ENOMEM));
    res.open = spread_of(&c, open_ms, all);
    res.close = spread_of(&c, close_ms, all);
    for (int s = 0; s < NSTEPS; s++)
        res.step[s] = spread_of(&c, run_step(&c, (enum step)s), all);
    reduce_calls(&c, res.calls);

    if (c.rank == 0) {
        if (c.json)
            print_json(&c, &res);
        else
            print_table(&c, &res);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "%s: %s: cannot write the results: %s\n",
                    BENCH_PROG, SUB, strerror(errno));
            status = BENCH_EXIT_FAIL;
        }
    }
    free(all);
    tear_down(&c);
    MPI_Finalize();
    return status;
}
