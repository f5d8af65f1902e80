/*
 * bench_clear.c - "mpikvs-bench clear": how long mpikvs_clear takes
 * against an mpikvs_open of the same empty table, under mpirun.  A clear
 * bumps a generation per node (libmpikvs/clear.c) and should take the
 * same time whatever the table's size, where an open grows with it (its
 * region is made and its space reserved).
 *
 * --reps times: mpikvs_open of an empty table of --size bytes a node
 * (timed), --puts puts spread over the ranks (not timed), mpikvs_clear
 * (timed), then gets of the first keys each rank put, which must all
 * miss, and mpikvs_close (not timed); and, for scale, four barriers in
 * a row, as many collectives as a clear makes (timed).  Each timed part
 * starts at a barrier; a figure is the slowest rank's time of it (all
 * are collective), median over the reps.
 */
#include "bench.h"
#include "bench_dht.h"
#include "bench_subcommands.h"
#include "job_config.h"   /* the key and value limits */

#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpikvs.h"
#include "size.h"

#define SUB        "clear"
#define CHECKED    1000u    /* keys a rank gets after each clear */
#define CLEAR_COLLECTIVES 4 /* libmpikvs/clear.c: two allreduces of the
                             * outcome, a barrier, one of the generation */

struct opts {
    uint64_t size, key_size, value_size, puts, reps;
    bool     json;
};

static int usage(FILE *f, int status)
{
    fprintf(f,
            "Usage: mpirun ... %s %s [options]\n"
            "  --size BYTES        table bytes per node (default 1G)\n"
            "  --key-size N        key bytes (default 32)\n"
            "  --value-size N      value bytes (default 64)\n"
            "  --puts N            puts before each clear, over all ranks "
            "(default 100000; 0: clear an empty table)\n"
            "  --reps N            opens and clears (default 3)\n"
            "  --json              one JSON object instead of text\n",
            BENCH_PROG, SUB);
    return status;
}

static int parse(int argc, char **argv, struct opts *o, int rank)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"size", required_argument, NULL, 's'},
        {"key-size", required_argument, NULL, 'k'},
        {"value-size", required_argument, NULL, 'v'},
        {"puts", required_argument, NULL, 'p'},
        {"reps", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0}};
    mpikvs_error_t err;
    int c;

    *o = (struct opts){.size = UINT64_C(1) << 30, .key_size = 32,
                       .value_size = 64, .puts = 100000, .reps = 3};
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            if (rank == 0)
                usage(stdout, 0);
            return 1;
        case 's':
            if (kvshm_parse_size(optarg, "--size", 1, &o->size, &err) !=
                MPIKVS_OK) {
                fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, err.text);
                return -1;
            }
            break;
        case 'k':
            /* 8 bytes at least: a key holds its rank's counter */
            if (bench_parse_u64(SUB, "--key-size", optarg, 8,
                                KVSHM_KEY_SIZE_MAX, &o->key_size))
                return -1;
            break;
        case 'v':
            if (bench_parse_u64(SUB, "--value-size", optarg, 1,
                                KVSHM_VALUE_SIZE_MAX, &o->value_size))
                return -1;
            break;
        case 'p':
            if (bench_parse_u64(SUB, "--puts", optarg, 0, UINT64_C(1) << 32,
                                &o->puts))
                return -1;
            break;
        case 'r':
            if (bench_parse_u64(SUB, "--reps", optarg, 1, 1000, &o->reps))
                return -1;
            break;
        case 'j':
            o->json = true;
            break;
        default:
            return bench_bad_option(SUB, c, argv);
        }
    }
    return bench_no_operands(SUB, argc, argv);
}

static double slowest(double t)
{
    double max = 0;

    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

/* Key i of rank: its counter in the first 8 bytes, the rank in the next
 * (where there are 12). */
static void make_key(unsigned char *k, const struct opts *o, int rank,
                     uint64_t i)
{
    uint64_t x = i * UINT64_C(0x9e3779b97f4a7c15);
    uint32_t r = (uint32_t)rank;

    memset(k, 0, o->key_size);
    memcpy(k, &x, 8);
    if (o->key_size >= 12)
        memcpy(k + 8, &r, 4);
    else
        k[0] ^= (unsigned char)rank;
}

/* This rank's n puts. */
static void fill(mpikvs_t *kvs, const struct opts *o, int rank, uint64_t n)
{
    unsigned char *k = malloc(o->key_size), *v = calloc(1, o->value_size);
    int rc;

    if (!k || !v)
        dht_fail(kvs, rank, "malloc", -ENOMEM);
    for (uint64_t i = 0; i < n; i++) {
        make_key(k, o, rank, i);
        memcpy(v, k, o->value_size < 8 ? o->value_size : 8);
        if ((rc = mpikvs_put(kvs, k, v)) != MPIKVS_OK)
            dht_fail(kvs, rank, "mpikvs_put", rc);
    }
    free(k);
    free(v);
}

/* After the clear: how many of the first CHECKED keys of the ranks' n
 * still hit (a clear that works: none). */
static uint64_t hits_after(mpikvs_t *kvs, const struct opts *o, int rank,
                           uint64_t n)
{
    unsigned char *k = malloc(o->key_size), *v = malloc(o->value_size);
    uint64_t hits = 0, all = 0;
    int rc;

    if (!k || !v)
        dht_fail(kvs, rank, "malloc", -ENOMEM);
    for (uint64_t i = 0; i < n && i < CHECKED; i++) {
        make_key(k, o, rank, i);
        if ((rc = mpikvs_get(kvs, k, v)) == MPIKVS_OK)
            hits++;
        else if (rc != MPIKVS_MISS)
            dht_fail(kvs, rank, "mpikvs_get", rc);
    }
    free(k);
    free(v);
    MPI_Allreduce(&hits, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

int bench_clear_main(int argc, char **argv)
{
    struct opts o;
    int rank, np, nodes = 1, rc;
    bool virtual_nodes = false;
    uint64_t mine, checked = 0, hits = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rc = parse(argc, argv, &o, rank);
    if (rc != 0) {
        MPI_Finalize();
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    }
    mine = o.puts / (uint64_t)np + ((uint64_t)rank < o.puts % (uint64_t)np);
    double open_s[o.reps], clear_s[o.reps], coll_s[o.reps];
    for (uint64_t r = 0; r < o.reps; r++) {
        mpikvs_options_t mo = {.size = sizeof(mpikvs_options_t),
                               .key_size = o.key_size,
                               .value_size = o.value_size,
                               .size_per_node = o.size};
        mpikvs_t *kvs = NULL;
        uint64_t n = mine < CHECKED ? mine : CHECKED, all_n = 0;

        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if ((rc = mpikvs_open(MPI_COMM_WORLD, &mo, &kvs)) != MPIKVS_OK)
            dht_fail(NULL, rank, "mpikvs_open", rc);
        open_s[r] = slowest(MPI_Wtime() - t0);
        if (r == 0)
            dht_nodes(kvs, rank, &nodes, &virtual_nodes);
        fill(kvs, &o, rank, mine);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if ((rc = mpikvs_clear(kvs)) != MPIKVS_OK)
            dht_fail(kvs, rank, "mpikvs_clear", rc);
        clear_s[r] = slowest(MPI_Wtime() - t0);
        hits += hits_after(kvs, &o, rank, mine);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int c = 0; c < CLEAR_COLLECTIVES; c++)
            MPI_Barrier(MPI_COMM_WORLD);
        coll_s[r] = slowest(MPI_Wtime() - t0);
        MPI_Allreduce(&n, &all_n, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        checked += all_n;
        if ((rc = mpikvs_close(&kvs)) != MPIKVS_OK)
            dht_fail(NULL, rank, "mpikvs_close", rc);
    }
    bench_sort_double(open_s, o.reps);
    bench_sort_double(clear_s, o.reps);
    bench_sort_double(coll_s, o.reps);
    if (rank == 0) {
        double to = bench_median_double(open_s, o.reps),
               tc = bench_median_double(clear_s, o.reps),
               tb = bench_median_double(coll_s, o.reps);
        if (o.json)
            printf("{\"ranks\": %d, \"nodes\": %d, \"virtual_nodes\": %s, "
                   "\"size_per_node\": %llu, \"puts\": %llu, "
                   "\"reps\": %llu, \"open_s\": %.6f, \"clear_s\": %.6f, "
                   "\"open_over_clear\": %.1f, \"barriers_s\": %.6f, "
                   "\"checked\": %llu, \"hits_after_clear\": %llu}\n",
                   np, nodes, virtual_nodes ? "true" : "false",
                   (unsigned long long)o.size, (unsigned long long)o.puts,
                   (unsigned long long)o.reps, to, tc, to / tc, tb,
                   (unsigned long long)checked, (unsigned long long)hits);
        else
            printf("clear: %d ranks on %d %snodes, %llu bytes a node, %llu "
                   "puts before each clear, median of %llu\n"
                   "  open (empty table): %.6f s\n"
                   "  clear: %.6f s (the open takes %.1f times as long)\n"
                   "  %d barriers (a clear's collectives alone): %.6f s\n"
                   "  gets after the clears: %llu of %llu hit\n",
                   np, nodes, virtual_nodes ? "virtual " : "",
                   (unsigned long long)o.size, (unsigned long long)o.puts,
                   (unsigned long long)o.reps, to, tc, to / tc,
                   CLEAR_COLLECTIVES, tb, (unsigned long long)hits,
                   (unsigned long long)checked);
    }
    MPI_Finalize();
    return 0;
}
