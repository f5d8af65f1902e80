/*
 * bench_persist.c - "mpikvs-bench persist": how fast mpikvs_save writes a
 * table and mpikvs_load reads it back, under mpirun.
 *
 * Every rank puts its share of keys until the table holds --fill of its
 * slots' worth of entries; then, --reps times: mpikvs_save to --file
 * (written, synced with MPI_File_sync, renamed), and mpikvs_load of it
 * into the same table reopened empty (the open and close are not timed).
 * The load reads a file just written: warm in the page cache.  A figure
 * is the file's bytes over the slowest rank's time of the call (the
 * calls are collective), median over the reps.
 */
#include "bench.h"
#include "bench_dht.h"
#include "bench_subcommands.h"
#include "job_config.h"   /* the key and value limits */

#include <getopt.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpikvs.h"
#include "size.h"

#define SUB "persist"

struct opts {
    uint64_t    size, key_size, value_size, reps;
    double      fill;
    const char *file;
    bool        json;
};

static int usage(FILE *f, int status)
{
    fprintf(f,
            "Usage: mpirun ... %s %s [options]\n"
            "  --size BYTES        table bytes per node (default 64M)\n"
            "  --key-size N        key bytes (default 32)\n"
            "  --value-size N      value bytes (default 64)\n"
            "  --fill F            entries put, as a share of the slots "
            "(default 0.5)\n"
            "  --file PATH         the save file (default "
            "/tmp/mpikvs-bench-persist.<pid of rank 0>; removed after)\n"
            "  --reps N            saves and loads (default 3)\n"
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
        {"fill", required_argument, NULL, 'f'},
        {"file", required_argument, NULL, 'F'},
        {"reps", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0}};
    mpikvs_error_t err;
    double fill[1];
    unsigned nfill;
    int c;

    *o = (struct opts){.size = UINT64_C(64) << 20, .key_size = 32,
                       .value_size = 64, .reps = 3, .fill = 0.5};
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
            if (bench_parse_u64(SUB, "--key-size", optarg, 1,
                                KVSHM_KEY_SIZE_MAX,
                                &o->key_size))
                return -1;
            break;
        case 'v':
            if (bench_parse_u64(SUB, "--value-size", optarg, 1,
                                KVSHM_VALUE_SIZE_MAX,
                                &o->value_size))
                return -1;
            break;
        case 'f':
            if (bench_parse_double_list(SUB, "--fill", optarg, 0.0, 1.0,
                                        fill, &nfill) || nfill != 1)
                return -1;
            o->fill = fill[0];
            break;
        case 'F':
            o->file = optarg;
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

static void fail(const char *what, int rc, const mpikvs_t *kvs)
{
    fprintf(stderr, "%s: %s: %s: %s: %s\n", BENCH_PROG, SUB, what,
            mpikvs_strerror(rc), mpikvs_last_error(kvs));
    MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
}

static mpikvs_t *open_table(const struct opts *o)
{
    mpikvs_options_t mo = {.size = sizeof(mpikvs_options_t),
                           .key_size = o->key_size,
                           .value_size = o->value_size,
                           .size_per_node = o->size};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, &mo, &kvs);

    if (rc != MPIKVS_OK)
        fail("mpikvs_open", rc, NULL);
    return kvs;
}

/* Keys of this rank: a counter and the rank, spread by a mix. */
static void fill_table(mpikvs_t *kvs, const struct opts *o, int rank,
                       int np, int nodes)
{
    uint64_t slot = (o->key_size + o->value_size + 15) & ~UINT64_C(7);
    uint64_t n = (uint64_t)(o->fill * (double)(o->size / slot) * nodes) /
                 (uint64_t)np;
    unsigned char *k = calloc(1, o->key_size), *v = calloc(1, o->value_size);

    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = (i * (uint64_t)np + (uint64_t)rank) *
                     UINT64_C(0x9e3779b97f4a7c15);
        memcpy(k, &x, o->key_size < 8 ? o->key_size : 8);
        if (o->key_size > 8)
            memcpy(k + 8, &i, o->key_size - 8 < 8 ? o->key_size - 8 : 8);
        memcpy(v, &x, o->value_size < 8 ? o->value_size : 8);
        int rc = mpikvs_put(kvs, k, v);
        if (rc != MPIKVS_OK)
            fail("mpikvs_put", rc, kvs);
    }
    free(k);
    free(v);
    mpikvs_fence(kvs);
}

static double slowest(double t)
{
    double max = 0;

    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

int bench_persist_main(int argc, char **argv)
{
    struct opts o;
    int rank, np, nodes = 1, rc;
    char file[1024];
    mpikvs_stats_t st;
    mpikvs_load_report_t rep = {0};
    struct stat sb;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rc = parse(argc, argv, &o, rank);
    if (rc != 0) {
        MPI_Finalize();
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    }
    {
        int pid = (int)getpid();
        MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (o.file)
            snprintf(file, sizeof(file), "%s", o.file);
        else
            snprintf(file, sizeof(file), "/tmp/mpikvs-bench-persist.%d",
                     pid);
    }

    mpikvs_t *kvs = open_table(&o);
    {   /* the nodes the handle formed */
        bool virtual_nodes;
        dht_nodes(kvs, rank, &nodes, &virtual_nodes);
    }
    fill_table(kvs, &o, rank, np, nodes);
    double save_s[o.reps], load_s[o.reps];
    for (uint64_t r = 0; r < o.reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if ((rc = mpikvs_save(kvs, file)) != MPIKVS_OK)
            fail("mpikvs_save", rc, kvs);
        save_s[r] = slowest(MPI_Wtime() - t0);
    }
    /* this handle's saves only, on a region that outlives it too */
    if ((rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN,
                           &st, sizeof st)) != MPIKVS_OK)
        fail("mpikvs_stats", rc, kvs);
    mpikvs_close(&kvs);
    for (uint64_t r = 0; r < o.reps; r++) {
        kvs = open_table(&o);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if ((rc = mpikvs_load(kvs, file, 0, &rep)) != MPIKVS_OK)
            fail("mpikvs_load", rc, kvs);
        load_s[r] = slowest(MPI_Wtime() - t0);
        mpikvs_close(&kvs);
    }
    if (rank == 0 && stat(file, &sb) != 0)
        sb.st_size = 0;
    bench_sort_double(save_s, o.reps);
    bench_sort_double(load_s, o.reps);
    if (rank == 0) {
        double bytes = (double)sb.st_size, ts = bench_median_double(save_s,
                                                                    o.reps),
               tl = bench_median_double(load_s, o.reps);
        uint64_t entries = rep.entries;
        if (o.json)
            printf("{\"ranks\": %d, \"nodes\": %d, \"size_per_node\": %llu, "
                   "\"entries\": %llu, \"file_bytes\": %.0f, "
                   "\"save_s\": %.6f, \"save_gbs\": %.3f, "
                   "\"load_s\": %.6f, \"load_gbs\": %.3f, "
                   "\"not_fitting\": %llu}\n",
                   np, nodes, (unsigned long long)o.size,
                   (unsigned long long)entries, bytes, ts, bytes / ts / 1e9,
                   tl, bytes / tl / 1e9,
                   (unsigned long long)rep.not_fitting);
        else
            printf("persist: %d ranks on %d nodes, %llu bytes a node, %llu "
                   "entries saved (%llu per save), file %.0f bytes\n"
                   "  save (synced, renamed): %.3f s, %.3f GB/s\n"
                   "  load (page cache warm): %.3f s, %.3f GB/s, %llu "
                   "did not fit\n",
                   np, nodes, (unsigned long long)o.size,
                   (unsigned long long)entries,
                   (unsigned long long)(st.saved / o.reps), bytes, ts,
                   bytes / ts / 1e9, tl, bytes / tl / 1e9,
                   (unsigned long long)rep.not_fitting);
        unlink(file);
    }
    MPI_Finalize();
    return 0;
}
