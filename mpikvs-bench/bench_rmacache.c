/*
 * bench_rmacache.c - mpikvs-bench rmacache: libmpikvs-rmacache against
 * plain MPI_Get (mpikvs-rmacache(7)).  Run under mpirun with the library
 * preloaded; the plain gets go to PMPI_Get, past the cache.
 *
 * The micro-benchmark is CLaMPI's: for each size from 1 B to 64 KiB, a
 * set of distinct gets at random offsets of the last rank's window, read
 * by rank 0 within fence epochs on a readonly window: the time of a get
 * uncached (PMPI_Get), missed (the first epoch after an invalidation:
 * the get plus the copy into the cache) and hit; each time per get
 * includes the share of the closing fence.  The application-shaped run:
 * every rank reads 1 KiB blocks of the others' windows, popular blocks
 * more often, in batches of 16 gets completed by one MPI_Win_flush_all,
 * and the owners change the data (and say so, MPI_Win_set_info) every
 * phase.  With 3 ranks or more, the node tier: rank 1 reads what rank 0
 * (of the same node) fetched of the last rank.  Between virtual nodes
 * (MPIKVS_VIRTUAL_NODES=2: blocks of consecutive ranks) rank 0 and the
 * last rank are on different nodes, and ranks 0 and 1 share one from 3
 * ranks on.
 */
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#include <dlfcn.h>
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_subcommands.h"

#define SUB "rmacache"

struct rc_opts {
    uint64_t gets;     /* distinct gets of one size */
    uint64_t reps;
    uint64_t app_gets; /* per rank */
    uint64_t phases;
};

static void rc_usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun -np N -x LD_PRELOAD=.../libmpikvs-rmacache.so %s rmacache [options]\n"
"Times MPI_Get served by libmpikvs-rmacache against plain gets: hits and\n"
"misses of 1 B to 64 KiB in readonly mode within fence epochs, then an\n"
"application-shaped run over a read-mostly window (N >= 2).\n"
"\n"
"  --gets K       distinct gets of each size (default 256)\n"
"  --reps R       repetitions of each measurement (default 5)\n"
"  --app-gets G   gets per rank in the application run (default 20000)\n"
"  --phases P     changes of the data in it (default 4)\n"
"Run across nodes, or between virtual ones with OMPI_MCA_osc=pt2pt,\n"
"OMPI_MCA_btl=self,tcp (else Open MPI reads the window in shared memory)\n"
"and MPIKVS_VIRTUAL_NODES=2 (the node tier shares within a node only).\n"
"  -h, --help     print this and exit\n", BENCH_PROG);
}

static int rc_options(int argc, char **argv, struct rc_opts *o, int speak)
{
    static const struct option longopts[] = {
        {"gets", required_argument, NULL, 'g'},
        {"reps", required_argument, NULL, 'r'},
        {"app-gets", required_argument, NULL, 'a'},
        {"phases", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    *o = (struct rc_opts){256, 5, 20000, 4};
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': bad = bench_parse_u64(SUB, "--gets", optarg, 1, 100000, &o->gets); break;
        case 'r': bad = bench_parse_u64(SUB, "--reps", optarg, 1, 1000, &o->reps); break;
        case 'a': bad = bench_parse_u64(SUB, "--app-gets", optarg, 1, 100000000, &o->app_gets); break;
        case 'p': bad = bench_parse_u64(SUB, "--phases", optarg, 1, 1000, &o->phases); break;
        case 'h':
            if (speak)
                rc_usage(stdout);
            return 1;
        default:
            return bench_bad_option(SUB, c, argv);
        }
    }
    if (bad || bench_no_operands(SUB, argc, argv))
        return -1;
    return 0;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void set_mode(MPI_Win win, const char *value)
{
    MPI_Info info;

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpikvs_rmacache", value);
    MPI_Win_set_info(win, info);
    MPI_Info_free(&info);
}

/* Is MPI_Get the library's?  (Else the cached figures would be MPI's.) */
static int preloaded(void)
{
    Dl_info     di;
    void       *f = dlsym(RTLD_DEFAULT, "MPI_Get");

    return f && dladdr(f, &di) && di.dli_fname && strstr(di.dli_fname, "rmacache");
}

#define WIN_BYTES (8u << 20)

/* One epoch of k gets of size s at offs by rank 0, closed by a fence that
 * every rank calls; nanoseconds per get on rank 0. */
static double epoch(MPI_Win win, int rank, int target, int plain,
                    const uint64_t *offs, uint64_t k, int s, unsigned char *buf)
{
    uint64_t t0 = bench_now_ns();

    if (rank == 0)
        for (uint64_t i = 0; i < k; i++) {
            if (plain)
                PMPI_Get(buf + i * (uint64_t)s, s, MPI_BYTE, target, (MPI_Aint)offs[i], s,
                         MPI_BYTE, win);
            else
                MPI_Get(buf + i * (uint64_t)s, s, MPI_BYTE, target, (MPI_Aint)offs[i], s,
                        MPI_BYTE, win);
        }
    MPI_Win_fence(0, win);
    return (double)(bench_now_ns() - t0) / (double)k;
}

static void micro(const struct rc_opts *o, int rank, int np)
{
    static const int sizes[] = {1, 8, 64, 512, 4096, 32768, 65536};
    unsigned char   *base, *buf = NULL;
    MPI_Win          win;
    MPI_Info         info;
    uint64_t        *offs = malloc(o->gets * sizeof *offs);

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpikvs_rmacache", "readonly");
    MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    memset(base, rank + 1, WIN_BYTES);
    if (rank == 0)
        printf("%8s %6s %12s %12s %12s %9s %9s\n", "size", "gets", "plain_us",
               "hit_us", "miss_us", "hit_x", "miss_%");
    MPI_Win_fence(0, win);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int      s = sizes[z];
        /* the set fits the default budget (16 MiB) with room to spare */
        uint64_t k = o->gets;
        double   plain = 0, hit = 0, miss = 0;

        if (k * (uint64_t)s > (4u << 20))
            k = (4u << 20) / (uint64_t)s;
        buf = realloc(buf, k * (uint64_t)s);
        /* distinct offsets: one random offset in each of k slices */
        for (uint64_t i = 0; i < k; i++) {
            uint64_t slice = WIN_BYTES / k;
            offs[i] = i * slice + mix(i * 131 + (uint64_t)s) % (slice - (uint64_t)s + 1);
        }
        for (uint64_t r = 0; r < o->reps; r++) {
            plain += epoch(win, rank, np - 1, 1, offs, k, s, buf);
            set_mode(win, "invalidate");
            MPI_Win_fence(0, win);
            miss += epoch(win, rank, np - 1, 0, offs, k, s, buf);
            hit += epoch(win, rank, np - 1, 0, offs, k, s, buf);
        }
        if (rank == 0) {
            plain /= 1e3 * (double)o->reps;
            hit /= 1e3 * (double)o->reps;
            miss /= 1e3 * (double)o->reps;
            printf("%8d %6llu %12.3f %12.3f %12.3f %9.1f %+9.1f\n", s,
                   (unsigned long long)k, plain, hit, miss, plain / hit,
                   100.0 * (miss - plain) / plain);
        }
    }
    free(buf);
    free(offs);
    MPI_Win_free(&win);
}

/* The node tier: rank 0 fetches k distinct 4 KiB blocks of the last
 * rank in one epoch; in the next, rank 1 (same node) reads the same set.
 * Per get on rank 1, with the closing fence's share (np >= 3). */
static void node_run(const struct rc_opts *o, int rank, int np, double *plain,
                     double *second)
{
    enum { S = 4096 };
    unsigned char *base, *buf;
    MPI_Win        win;
    MPI_Info       info;
    uint64_t       k = o->gets, *offs = malloc(k * sizeof *offs);

    *plain = *second = 0;
    buf = malloc(k * S);
    for (uint64_t i = 0; i < k; i++)
        offs[i] = i * (WIN_BYTES / k) + mix(i * 7) % (WIN_BYTES / k - S);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpikvs_rmacache", "readonly");
    MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    MPI_Win_fence(0, win);
    for (uint64_t r = 0; r < o->reps; r++) {
        uint64_t t0 = bench_now_ns();
        if (rank == 1)
            for (uint64_t i = 0; i < k; i++)
                PMPI_Get(buf + i * S, S, MPI_BYTE, np - 1, (MPI_Aint)offs[i], S, MPI_BYTE,
                         win);
        MPI_Win_fence(0, win);
        *plain += (double)(bench_now_ns() - t0) / (double)k;
        set_mode(win, "invalidate");
        MPI_Win_fence(0, win);
        if (rank == 0)
            for (uint64_t i = 0; i < k; i++)
                MPI_Get(buf + i * S, S, MPI_BYTE, np - 1, (MPI_Aint)offs[i], S, MPI_BYTE,
                        win);
        MPI_Win_fence(0, win);
        MPI_Barrier(MPI_COMM_WORLD); /* rank 0 has published (at its fence) */
        t0 = bench_now_ns();
        if (rank == 1)
            for (uint64_t i = 0; i < k; i++)
                MPI_Get(buf + i * S, S, MPI_BYTE, np - 1, (MPI_Aint)offs[i], S, MPI_BYTE,
                        win);
        MPI_Win_fence(0, win);
        *second += (double)(bench_now_ns() - t0) / (double)k;
    }
    *plain /= (double)o->reps;
    *second /= (double)o->reps;
    MPI_Win_free(&win);
    free(buf);
    free(offs);
}

/* The application-shaped run: skewed reads of 1 KiB blocks of the other
 * ranks, 16 gets to a flush_all; a change of the data (and its
 * invalidation) every phase. */
static double app_run(const struct rc_opts *o, int rank, int np, int cached,
                      double *hit_rate)
{
    enum { BLOCK = 1024, NBLOCKS = 2048, BATCH = 16 };
    unsigned char *base, buf[BATCH][BLOCK];
    MPI_Win        win;
    MPI_Info       info;
    uint64_t       per = o->app_gets / o->phases, distinct = 0, total = 0;
    unsigned char *seen = calloc((size_t)np * NBLOCKS, 1);
    double         t = 0;

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpikvs_rmacache", cached ? "readonly" : "off");
    MPI_Win_allocate(BLOCK * NBLOCKS, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    for (uint64_t ph = 0; ph < o->phases; ph++) {
        memset(base, (int)(ph + 1), BLOCK * NBLOCKS);
        memset(seen, 0, (size_t)np * NBLOCKS);
        MPI_Barrier(MPI_COMM_WORLD);
        set_mode(win, "invalidate");
        MPI_Win_lock_all(0, win);
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < per; i++) {
            uint64_t x = mix((uint64_t)rank << 40 ^ ph << 32 ^ i);
            double   u = (double)(x >> 11) / 9007199254740992.0;
            int      blk = (int)(NBLOCKS * u * u * u); /* popular blocks first */
            int      tgt = (rank + 1 + (int)((x & 0xffff) % (uint64_t)(np - 1))) % np;

            (cached ? MPI_Get : PMPI_Get)(buf[i % BATCH], BLOCK, MPI_BYTE, tgt,
                                          (MPI_Aint)blk * BLOCK, BLOCK, MPI_BYTE, win);
            if (i % BATCH == BATCH - 1 || i == per - 1)
                MPI_Win_flush_all(win);
            if (!seen[tgt * NBLOCKS + blk]++)
                distinct++;
            total++;
        }
        t += (double)(bench_now_ns() - t0);
        MPI_Win_unlock_all(win);
    }
    MPI_Win_free(&win);
    free(seen);
    /* readonly keeps all within the budget: every get but the first of a
     * block in a phase hits */
    *hit_rate = total ? 1.0 - (double)distinct / (double)total : 0;
    return t / (double)total;
}

int bench_rmacache_main(int argc, char **argv)
{
    struct rc_opts o;
    int            rank, np, rc;
    double         plain, cached, hr;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int saved = bench_stderr_mute(rank != 0);
    rc = rc_options(argc, argv, &o, rank == 0);
    bench_stderr_restore(saved);
    if (rc == 0 && np < 2) {
        if (rank == 0)
            fprintf(stderr, "%s: %s: needs at least 2 ranks (mpirun -np 2)\n", BENCH_PROG, SUB);
        rc = -1;
    }
    if (rc == 0 && !preloaded()) {
        if (rank == 0)
            fprintf(stderr, "%s: %s: libmpikvs-rmacache is not loaded: run with "
                    "-x LD_PRELOAD=<libdir>/libmpikvs-rmacache.so\n", BENCH_PROG, SUB);
        rc = -1;
    }
    if (rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    }
    if (rank == 0)
        printf("# rmacache micro-benchmark: rank 0 reads rank %d, readonly window, "
               "fence epochs, %d ranks\n", np - 1, np);
    micro(&o, rank, np);
    if (np >= 3) {
        double np_plain, np_second;

        node_run(&o, rank, np, &np_plain, &np_second);
        /* rank 1's figures, said by rank 0 */
        if (rank == 1) {
            double v[2] = {np_plain, np_second};
            MPI_Send(v, 2, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        } else if (rank == 0) {
            double v[2];
            MPI_Recv(v, 2, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("# node tier: rank 1 reads the %llu blocks of 4 KiB rank 0 fetched\n"
                   "%12s %12s %9s\n%12.3f %12.3f %9.1f\n", (unsigned long long)o.gets,
                   "plain_us", "second_us", "x", v[0] / 1e3, v[1] / 1e3, v[0] / v[1]);
        }
    }
    plain = app_run(&o, rank, np, 0, &hr);
    cached = app_run(&o, rank, np, 1, &hr);
    if (rank == 0)
        printf("# application-shaped run: %llu gets of 1 KiB per rank, 16 to a flush_all, %llu phases\n"
               "%12s %12s %9s %9s\n%12.3f %12.3f %9.2f %9.3f\n",
               (unsigned long long)o.app_gets, (unsigned long long)o.phases,
               "plain_us", "cached_us", "speedup", "hit_rate", plain / 1e3,
               cached / 1e3, plain / cached, hr);
    MPI_Finalize();
    return 0;
}
