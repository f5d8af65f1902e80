/*
 * bench_dht_large.c - "mpikvs-bench dht --value-size N[,N...]": what one
 * remote get of a large value costs, what it moved and how often it
 * copied the value, against two references of the same bytes.
 *
 * For each size, one table after another (80-byte keys, values of the
 * size, --slots slots a bucket, "far_read" as --far-read says):
 *
 *   fill     every rank puts its pairs (batches), then mpikvs_fence;
 *   keys     the first rank of another node than rank 0's (the target)
 *            lists keys of its node (mpikvs_foreach_local) and sends
 *            them to rank 0, which puts them in a random order;
 *   get      rank 0 alone times single mpikvs_get calls of those keys,
 *            each between two clock reads, every value checked outside
 *            the timed code; its statistics "moved" and "copies"
 *            (mpikvs_stats, this rank) are read around the timed loop;
 *   pingpong rank 0 sends the target an 80-byte request and the target
 *            answers with the size's bytes: what a get moves, one way;
 *   memcpy   rank 0 copies the size from random places of a buffer
 *            larger than the caches (MEMCPY_BUFFER), so that every copy
 *            reads cold memory, as a get of a random key does.
 *
 * While one rank measures, every rank not in the measurement waits in a
 * nonblocking barrier tested every DHT_QUIET_WAIT_NS with nanosleep in
 * between (dht_quiet_barrier), not spinning: on a host of few cores a waiting rank
 * that spins takes the core the measured one needs, and the figure would
 * be how two cores are shared, not what a get moves.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_dht.h"
#include "bench_dht_large.h"
#include "bench_keys.h"
#include "data_region.h"
#include "job_config.h"   /* KVSHM_VALUE_SIZE_MAX */
#include "mpikvs.h"
#include "size.h"

#define SUB           DHT_SUB
#define KEY_LEN       BENCH_KEY_LEN
#define MIB           (UINT64_C(1) << 20)
#define DEFAULT_SIZE  (UINT64_C(256) << 20)  /* buckets per node */
#define MIN_BUCKETS   UINT64_C(16)           /* of each node, by default */
#define FILL_SHARE    4u         /* default pairs: 1 slot in 4 of the job */
#define PUT_BYTES     (UINT64_C(8) << 20)    /* values of one put batch */
#define PUT_BATCH_MAX UINT64_C(256)
#define WARM_GETS     10u        /* untimed, first: endpoints, page tables */
#define KEYS_MAX      UINT64_C(262144)      /* listed of the target's node */
#define MEMCPY_BUFFER (UINT64_C(256) << 20)  /* larger than any cache */
#define MEMCPY_PIECES UINT64_C(262144)      /* copies of a walk, at most */
#define TAG_PING      3401
#define TAG_PONG      3402
#define TAG_KEYS      3403
#define TEMP_TABLE    "large"
#define WHY_LEN       1024u

/* One size's run. */
struct lctx {
    const struct dht_opts *o;
    int        rank, np, target;   /* target: -1 on one node */
    uint64_t   vsize, size_per_node;
    mpikvs_t  *kvs;
    mpikvs_info_t info;
    unsigned char *memcpy_buf;     /* rank 0's MEMCPY_BUFFER */
};

/* What rank 0 measured for one size. */
struct lres {
    uint64_t pairs, keys, gets, misses, wrong, copies_n, rounds;
    double   get_mean, get_median, get_p99;    /* microseconds */
    double   moved, copies;                    /* per timed get */
    double   memcpy_mean, pp_mean, pp_median, pp_p99;
};

/* ---- options ------------------------------------------------------------ */

int dht_large_parse_sizes(const char *arg, uint64_t *sizes, unsigned *n)
{
    char buf[512], *save = NULL, *item;
    mpikvs_error_t err;
    unsigned k = 0;

    if (strlen(arg) >= sizeof buf || !*arg || arg[strlen(arg) - 1] == ',')
        goto bad;
    strcpy(buf, arg);
    for (item = strtok_r(buf, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        if (k == DHT_LARGE_SIZES)
            goto bad;
        if (kvshm_parse_size(item, "--value-size", 1, &sizes[k], &err) !=
            MPIKVS_OK) {
            fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, err.text);
            return -1;
        }
        if (sizes[k] > (uint64_t)KVSHM_VALUE_SIZE_MAX)
            goto bad;
        k++;
    }
    if (!k)
        goto bad;
    *n = k;
    return 0;
bad:
    fprintf(stderr, "%s: %s: invalid value '%s' for --value-size: expected "
                    "1 to %u comma-separated sizes from 1 to %llu bytes "
                    "(K, M suffixes: 16K, 1M)\n",
            BENCH_PROG, SUB, arg, DHT_LARGE_SIZES,
            (unsigned long long)(uint64_t)KVSHM_VALUE_SIZE_MAX);
    return -1;
}

/* ---- every rank, or none ------------------------------------------------ */

static void fail(const struct lctx *c, const char *call, int rc)
{
    dht_fail(c->kvs, c->rank, call, rc);
}

/* ---- keys and values ---------------------------------------------------- */

/* The value of a key, n bytes: words mixed from the key's first two, so
 * a reader that knows the key checks every byte it got. */
static void make_value(const unsigned char *key, unsigned char *v, size_t n)
{
    uint64_t h[2], w;
    size_t i;

    memcpy(h, key, sizeof h);
    uint64_t base = bench_mix64(h[0] ^ bench_mix64(h[1]));
    for (i = 0; i + 8 <= n; i += 8) {
        w = bench_mix64(base + (i / 8 + 1) * BENCH_GOLDEN);
        memcpy(v + i, &w, 8);
    }
    if (i < n) {
        w = bench_mix64(base + (i / 8 + 1) * BENCH_GOLDEN);
        memcpy(v + i, &w, n - i);
    }
}

/* ---- the table ---------------------------------------------------------- */

/* Bucket memory per node: --size, else DEFAULT_SIZE or MIN_BUCKETS
 * buckets, whichever is more, in whole MiB. */
static uint64_t table_size(const struct lctx *c)
{
    struct kvshm_data_shape s = {.key_size = KEY_LEN,
                                 .value_size = c->vsize,
                                 .slots_per_bucket = c->o->slots};
    uint64_t b;

    if (c->o->size_given && c->o->size)
        return c->o->size;
    b = kvshm_bucket_size(&s) * MIN_BUCKETS;
    b = (b + MIB - 1) / MIB * MIB;
    return b > DEFAULT_SIZE ? b : DEFAULT_SIZE;
}

/* This rank's temporary config (the ranks of another node could not read
 * rank 0's /tmp): path filled, or why.  Every value in it is a number or
 * a name checked already: nothing needs JSON escaping. */
static const char *write_config(const struct lctx *c, char *path,
                                size_t plen, char *why, size_t len)
{
    char far[48] = "";
    FILE *f;
    int w, saved;

    if (!(f = dht_temp_config("mpikvs-bench", path, plen, why, len)))
        return why;
    /* auto: the key left out, the library's default (and a library
     * without the setting still opens the table) */
    if (c->o->far_read != KVSHM_FAR_READ_AUTO)
        snprintf(far, sizeof far, ",\n  \"far_read\": \"%s\"",
                 kvshm_far_read_name(c->o->far_read));
    w = fprintf(f,
                "{ \"version\": 1, \"tables\": { \"%s\": {\n"
                "  \"size\": %llu, \"mode\": \"%s\",\n"
                "  \"key\": { \"key_size\": %u },\n"
                "  \"value\": { \"value_size\": %llu },\n"
                "  \"slots_per_bucket\": %llu%s } } }\n",
                TEMP_TABLE, (unsigned long long)c->size_per_node,
                c->o->mode, KEY_LEN, (unsigned long long)c->vsize,
                (unsigned long long)c->o->slots, far);
    saved = errno;
    if (fclose(f) != 0 || w < 0) {
        snprintf(why, len, "cannot write the temporary config %.900s: %s",
                 path, strerror(w < 0 ? saved : errno));
        return why;
    }
    return NULL;
}

/* Open the size's table on every rank, or on none.  0 or BENCH_EXIT_FAIL
 * (reported). */
static int open_table(struct lctx *c)
{
    char path[4096] = "", why[WHY_LEN];
    const char *bad = write_config(c, path, sizeof path, why, sizeof why);
    int rc = MPIKVS_OK;

    if (dht_agree(c->rank, c->np, SUB " --value-size", bad)) {
        if (path[0])
            unlink(path);
        return BENCH_EXIT_FAIL;
    }
    mpikvs_options_t opt = {
        .size = sizeof(mpikvs_options_t),
        .key_size = KEY_LEN,
        .value_size = (size_t)c->vsize,
        .size_per_node = (size_t)c->size_per_node,
        .mode = c->o->mode,
        .config = path,
        .slots_per_bucket = (unsigned)c->o->slots,
        .transport = c->o->transport,
    };
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &c->kvs);
    unlink(path);
    bad = NULL;
    if (rc != MPIKVS_OK) {
        char more[WHY_LEN / 2];
        const char *last = mpikvs_last_error(NULL);
        /* a config's diagnostics end their lines: not inside ( ) */
        size_t n = (size_t)snprintf(more, sizeof more, "%s",
                                    last ? last : "");
        while (n && n < sizeof more && more[n - 1] == '\n')
            more[--n] = '\0';
        snprintf(why, sizeof why, "mpikvs_open (%u-byte keys, %llu-byte "
                                  "values, %llu slots a bucket, far_read "
                                  "%s, %llu bytes per node): %s%s%s%s",
                 KEY_LEN, (unsigned long long)c->vsize,
                 (unsigned long long)c->o->slots,
                 kvshm_far_read_name(c->o->far_read),
                 (unsigned long long)c->size_per_node, mpikvs_strerror(rc),
                 *more ? " (" : "", more, *more ? ")" : "");
        bad = why;
    }
    if (dht_agree(c->rank, c->np, SUB " --value-size", bad) == 0) {
        c->info = (mpikvs_info_t){.size = sizeof c->info};
        if ((rc = mpikvs_info(c->kvs, &c->info)) != MPIKVS_OK)
            fail(c, "mpikvs_info", rc);
        return 0;
    }
    /* the library promises no handle on any rank then */
    if (c->kvs) {
        MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
        exit(BENCH_EXIT_FAIL);
    }
    return BENCH_EXIT_FAIL;
}

/* The first rank whose node is not rank 0's, or -1. */
static int find_target(const struct lctx *c)
{
    uint32_t *node = malloc((size_t)c->np * sizeof *node);
    int t = -1;

    if (!node) {
        fprintf(stderr, "%s: %s: rank %d: %s\n", BENCH_PROG, SUB, c->rank,
                strerror(ENOMEM));
        MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
        exit(BENCH_EXIT_FAIL);
    }
    MPI_Allgather(&c->info.node, 1, MPI_UINT32_T, node, 1, MPI_UINT32_T,
                  MPI_COMM_WORLD);
    for (int r = 1; r < c->np && t < 0; r++)
        if (node[r] != node[0])
            t = r;
    free(node);
    return t;
}

/* Every rank puts its pairs, in batches of PUT_BYTES of values, then
 * mpikvs_fence. */
static void fill(struct lctx *c, uint64_t pairs)
{
    uint64_t b = PUT_BYTES / c->vsize;
    b = b < 1 ? 1 : b > PUT_BATCH_MAX ? PUT_BATCH_MAX : b;
    unsigned char *keys = malloc(b * KEY_LEN), *vals = malloc(b * c->vsize);
    uint64_t base = bench_stream_base(c->o->seed, (uint64_t)c->rank,
                                      BENCH_STREAM_PAIRS);
    int rc;

    if (!keys || !vals)
        fail(c, "malloc (the put batches)", -ENOMEM);
    for (uint64_t i = 0; i < pairs; i += b) {
        uint64_t n = pairs - i < b ? pairs - i : b;
        for (uint64_t j = 0; j < n; j++) {
            bench_make_key(bench_draw(base, i + j), keys + j * KEY_LEN);
            make_value(keys + j * KEY_LEN, vals + j * c->vsize, c->vsize);
        }
        if ((rc = mpikvs_put_batch(c->kvs, n, keys, vals)) != MPIKVS_OK)
            fail(c, "mpikvs_put_batch", rc);
    }
    free(keys);
    free(vals);
    if ((rc = mpikvs_fence(c->kvs)) != MPIKVS_OK)
        fail(c, "mpikvs_fence", rc);
}

/* The target's keys, gathered by mpikvs_foreach_local. */
struct key_list {
    unsigned char *keys;
    uint64_t n, cap;
};

static int collect_key(const void *key, const void *value, void *arg)
{
    struct key_list *l = arg;

    (void)value;
    memcpy(l->keys + l->n * KEY_LEN, key, KEY_LEN);
    return ++l->n == l->cap;   /* nonzero: enough, stop the walk */
}

/* Up to cap keys homed on the target's node, on rank 0 in a random
 * order (the seed's); *n their number.  Collective.  The walk goes
 * through the buckets in order: cap well above the gets, so that the
 * gets read keys from all over the region, not from its first part. */
static unsigned char *target_keys(struct lctx *c, uint64_t cap, uint64_t *n)
{
    struct key_list l = {malloc(cap * KEY_LEN), 0, cap};
    int rc;

    if (!l.keys)
        fail(c, "malloc (the keys)", -ENOMEM);
    if (c->rank == c->target) {
        rc = mpikvs_foreach_local(c->kvs, collect_key, &l);
        if (rc < 0)
            fail(c, "mpikvs_foreach_local", rc);
        MPI_Send(&l.n, 1, MPI_UINT64_T, 0, TAG_KEYS, MPI_COMM_WORLD);
        MPI_Send(l.keys, (int)(l.n * KEY_LEN), MPI_UNSIGNED_CHAR, 0,
                 TAG_KEYS, MPI_COMM_WORLD);
    } else if (c->rank == 0) {
        MPI_Recv(&l.n, 1, MPI_UINT64_T, c->target, TAG_KEYS, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Recv(l.keys, (int)(l.n * KEY_LEN), MPI_UNSIGNED_CHAR, c->target,
                 TAG_KEYS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* Fisher-Yates: the walk's order is the buckets' order */
        uint64_t base = bench_stream_base(c->o->seed, 0,
                                          BENCH_STREAM_MIX_KEY);
        unsigned char tmp[KEY_LEN];
        for (uint64_t i = l.n; i > 1; i--) {
            uint64_t j = bench_below(bench_draw(base, i), i);
            memcpy(tmp, l.keys + (i - 1) * KEY_LEN, KEY_LEN);
            memcpy(l.keys + (i - 1) * KEY_LEN, l.keys + j * KEY_LEN,
                   KEY_LEN);
            memcpy(l.keys + j * KEY_LEN, tmp, KEY_LEN);
        }
    }
    MPI_Bcast(&l.n, 1, MPI_UINT64_T, c->target, MPI_COMM_WORLD);
    *n = l.n;
    return l.keys;
}

/* ---- the measurements --------------------------------------------------- */

static void summarize(double *us, uint64_t n, double *mean, double *median,
                      double *p99)
{
    double sum = 0;

    for (uint64_t i = 0; i < n; i++)
        sum += us[i];
    bench_sort_double(us, n);
    *mean = sum / (double)n;
    *median = bench_median_double(us, n);
    size_t p = (size_t)ceil(0.99 * (double)n);
    *p99 = us[p ? p - 1 : 0];
}

/* Rank 0: single gets of the keys, WARM_GETS untimed first, then
 * gets timed; moved and copies of this rank around the timed loop. */
static void time_gets(struct lctx *c, const unsigned char *keys,
                      uint64_t nkeys, uint64_t gets, double *us,
                      struct lres *r)
{
    unsigned char *got = malloc(c->vsize), *want = malloc(c->vsize);
    mpikvs_stats_t before, after;
    int rc;

    if (!got || !want)
        fail(c, "malloc (a value)", -ENOMEM);
    for (uint64_t i = 0; i < WARM_GETS && i < nkeys; i++)
        if ((rc = mpikvs_get(c->kvs, keys + i * KEY_LEN, got)) < 0)
            fail(c, "mpikvs_get", rc);
    if ((rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_RANK, &before,
                           sizeof before)) != MPIKVS_OK)
        fail(c, "mpikvs_stats", rc);
    for (uint64_t i = 0; i < gets; i++) {
        const unsigned char *key = keys + (i % nkeys) * KEY_LEN;
        memset(got, 0, c->vsize);
        uint64_t t0 = bench_now_ns();
        rc = mpikvs_get(c->kvs, key, got);
        uint64_t t1 = bench_now_ns();
        if (rc < 0)
            fail(c, "mpikvs_get", rc);
        us[i] = (double)(t1 - t0) * 1e-3;
        if (rc == MPIKVS_MISS) {
            r->misses++;
            continue;
        }
        make_value(key, want, c->vsize);
        if (memcmp(got, want, c->vsize) != 0)
            r->wrong++;
    }
    /* the checks between the gets call no mpikvs function: the
     * difference is the timed gets' */
    if ((rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_RANK, &after,
                           sizeof after)) != MPIKVS_OK)
        fail(c, "mpikvs_stats", rc);
    r->gets = gets;
    r->moved = (double)(after.moved - before.moved) / (double)gets;
    r->copies = (double)(after.copies - before.copies) / (double)gets;
    summarize(us, gets, &r->get_mean, &r->get_median, &r->get_p99);
    free(got);
    free(want);
}

/* Rank 0 and the target: rank 0 sends an 80-byte request, the target
 * answers with vsize bytes; WARM_GETS rounds untimed, then rounds
 * timed one by one (on rank 0). */
static void ping_pong(struct lctx *c, uint64_t rounds, double *us,
                      struct lres *r)
{
    unsigned char req[KEY_LEN] = {0};
    unsigned char *buf = malloc(c->vsize);

    if (!buf)
        fail(c, "malloc (a value)", -ENOMEM);
    memset(buf, 0x5a, c->vsize);
    for (uint64_t i = 0; i < WARM_GETS + rounds; i++) {
        if (c->rank == c->target) {
            MPI_Recv(req, KEY_LEN, MPI_UNSIGNED_CHAR, 0, TAG_PING,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)c->vsize, MPI_UNSIGNED_CHAR, 0, TAG_PONG,
                     MPI_COMM_WORLD);
            continue;
        }
        uint64_t t0 = bench_now_ns();
        MPI_Send(req, KEY_LEN, MPI_UNSIGNED_CHAR, c->target, TAG_PING,
                 MPI_COMM_WORLD);
        MPI_Recv(buf, (int)c->vsize, MPI_UNSIGNED_CHAR, c->target, TAG_PONG,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        uint64_t t1 = bench_now_ns();
        if (i >= WARM_GETS)
            us[i - WARM_GETS] = (double)(t1 - t0) * 1e-3;
    }
    if (c->rank == 0) {
        r->rounds = rounds;
        summarize(us, rounds, &r->pp_mean, &r->pp_median, &r->pp_p99);
    }
    free(buf);
}

/* Rank 0: one walk over MEMCPY_BUFFER, vsize bytes at a time from its
 * pieces in a random order (so that the prefetcher cannot stream ahead
 * of the next copy); the mean of a copy.  Small sizes copy from the
 * start of MEMCPY_PIECES pieces spread over the whole buffer. */
static void time_memcpy(struct lctx *c, struct lres *r)
{
    uint64_t pieces = MEMCPY_BUFFER / c->vsize;
    pieces = pieces < MEMCPY_PIECES ? pieces : MEMCPY_PIECES;
    uint64_t stride = MEMCPY_BUFFER / pieces;
    uint32_t *order = malloc(pieces * sizeof *order);
    unsigned char *dst = malloc(c->vsize);
    uint64_t base = bench_stream_base(c->o->seed, 0, BENCH_STREAM_MIX_OP);

    if (!order || !dst)
        fail(c, "malloc (the memcpy reference)", -ENOMEM);
    for (uint64_t i = 0; i < pieces; i++)
        order[i] = (uint32_t)i;
    for (uint64_t i = pieces; i > 1; i--) {
        uint64_t j = bench_below(bench_draw(base, i), i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    memset(dst, 0, c->vsize);
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < pieces; i++) {
        memcpy(dst, c->memcpy_buf + (uint64_t)order[i] * stride, c->vsize);
        /* the copy is used: it cannot be left out */
        __asm__ __volatile__("" : : "r"(dst) : "memory");
    }
    uint64_t t1 = bench_now_ns();
    r->copies_n = pieces;
    r->memcpy_mean = (double)(t1 - t0) * 1e-3 / (double)pieces;
    free(order);
    free(dst);
}

/* ---- output ------------------------------------------------------------- */

static void print_header(const struct lctx *c, uint64_t gets)
{
    const struct dht_opts *o = c->o;
    char size[48];

    printf("# %s %s dht --value-size: np=%d nodes=%u%s mode=%s "
           "transport=%s seed %llu\n",
           BENCH_PROG, PACKAGE_VERSION, c->np, (unsigned)c->info.nodes,
           c->info.virtual_nodes ? " (virtual)" : "", o->mode,
           mpikvs_transport(c->kvs), (unsigned long long)o->seed);
    if (o->size_given && o->size)
        dht_size_text(o->size, size, sizeof size);
    else
        snprintf(size, sizeof size, "%llu MiB or %llu buckets, the more",
                 (unsigned long long)(DEFAULT_SIZE / MIB),
                 (unsigned long long)MIN_BUCKETS);
    printf("# each size: a table of %u-byte keys and values of the size, "
           "%llu slots a bucket, far_read %s, buckets per node: %s; every "
           "rank puts its pairs (batches), then mpikvs_fence\n",
           KEY_LEN, (unsigned long long)o->slots,
           kvshm_far_read_name(o->far_read), size);
    if (c->target < 0) {
        printf("# get: none: on one node no key has another home\n");
        return;
    }
    printf("# get: rank 0 alone, %llu single mpikvs_get of keys homed on "
           "rank %d's node (listed there by mpikvs_foreach_local, in a "
           "random order) after %u untimed, each timed on its own; every "
           "other rank waits in MPI_Ibarrier tested every %ld us "
           "(nanosleep), not spinning\n",
           (unsigned long long)gets, c->target, WARM_GETS,
           DHT_QUIET_WAIT_NS / 1000);
    printf("# moved, copies: rank 0's statistics (mpikvs_stats, "
           "MPIKVS_SCOPE_RANK) over the timed gets, per get; read_path: "
           "bucket when a get moved a whole bucket or more, value when "
           "less, - when the library counted nothing\n");
    printf("# memcpy: rank 0 copies the size from random places of a %llu "
           "MiB buffer (colder than the caches), the mean of one walk over "
           "it\n", (unsigned long long)(MEMCPY_BUFFER / MIB));
    printf("# pingpong: rank 0 sends rank %d an %u-byte request (MPI_Send), "
           "rank %d answers with the size's bytes (what a get moves, one "
           "way), each round timed on its own\n",
           c->target, KEY_LEN, c->target);
    printf("# ratio: the get's median over the memcpy's mean and over the "
           "pingpong's median\n");
}

static const char *read_path(const struct lctx *c, const struct lres *r)
{
    if (r->moved <= 0)
        return "-";
    return r->moved >= (double)c->info.bucket_size ? "bucket" : "value";
}

static void print_size(const struct lctx *c, const struct lres *r)
{
    struct kvshm_data_shape s = {.key_size = KEY_LEN,
                                 .value_size = c->vsize,
                                 .slots_per_bucket =
                                     c->info.slots_per_bucket};
    unsigned long long v = (unsigned long long)c->vsize;

    printf("table: value_bytes %llu slot_bytes %llu slots_per_bucket %llu "
           "bucket_bytes %llu buckets %llu far_read %s pairs %llu keys "
           "%llu\n",
           v, (unsigned long long)kvshm_slot_size(&s),
           (unsigned long long)c->info.slots_per_bucket,
           (unsigned long long)c->info.bucket_size,
           (unsigned long long)c->info.buckets,
           kvshm_far_read_name(c->o->far_read), (unsigned long long)r->pairs,
           (unsigned long long)r->keys);
    if (!r->gets) {
        printf("get: value_bytes %llu - (%s)\n", v,
               c->target < 0 ? "one node: no key has another home"
               : r->keys ? "--remote-gets 0"
                         : "no key homed on the other node");
        return;
    }
    printf("get: value_bytes %llu gets %llu gets_per_s %.1f mean_us %.3f "
           "median_us %.3f p99_us %.3f moved_per_get %.1f copies_per_get "
           "%.2f read_path %s misses %llu wrong %llu\n",
           v, (unsigned long long)r->gets, 1e6 / r->get_mean, r->get_mean,
           r->get_median, r->get_p99, r->moved, r->copies, read_path(c, r),
           (unsigned long long)r->misses, (unsigned long long)r->wrong);
    printf("memcpy: value_bytes %llu copies %llu mean_us %.3f\n", v,
           (unsigned long long)r->copies_n, r->memcpy_mean);
    printf("pingpong: value_bytes %llu rounds %llu mean_us %.3f median_us "
           "%.3f p99_us %.3f\n",
           v, (unsigned long long)r->rounds, r->pp_mean, r->pp_median,
           r->pp_p99);
    printf("ratio: value_bytes %llu get/memcpy %.2f get/pingpong %.2f\n", v,
           r->get_median / r->memcpy_mean, r->get_median / r->pp_median);
}

/* ---- one size ----------------------------------------------------------- */

static int run_size(struct lctx *c, bool first)
{
    const struct dht_opts *o = c->o;
    uint64_t gets = o->remote_gets_given ? o->remote_gets : DHT_LARGE_GETS;
    struct lres r = {0};
    double *us = NULL;
    int rc;

    c->size_per_node = table_size(c);
    if ((rc = open_table(c)))
        return rc;
    c->target = find_target(c);
    r.pairs = o->pairs_given
                  ? o->pairs
                  : c->info.buckets * c->info.nodes *
                        c->info.slots_per_bucket /
                        ((uint64_t)FILL_SHARE * (uint64_t)c->np);
    if (!r.pairs)
        r.pairs = 1;
    fill(c, r.pairs);

    if (c->target >= 0 && gets) {
        unsigned char *keys = target_keys(c, gets > KEYS_MAX ? gets
                                                             : KEYS_MAX,
                                          &r.keys);
        if (c->rank == 0 && !(us = malloc(gets * sizeof *us)))
            fail(c, "malloc (the samples)", -ENOMEM);
        if (r.keys) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (c->rank == 0) {
                time_gets(c, keys, r.keys, gets, us, &r);
                time_memcpy(c, &r);
            }
            dht_quiet_barrier();
            if (c->rank == 0 || c->rank == c->target)
                ping_pong(c, gets, us, &r);
            dht_quiet_barrier();
        }
        free(keys);
    }
    if (c->rank == 0) {
        if (first)
            print_header(c, gets);
        print_size(c, &r);
        fflush(stdout);
    }
    free(us);
    if ((rc = mpikvs_close(&c->kvs)) != MPIKVS_OK)
        fail(c, "mpikvs_close", rc);
    return 0;
}

int dht_large_run(const struct dht_opts *o, int rank, int np)
{
    struct lctx c = {.o = o, .rank = rank, .np = np};
    const char *layout = getenv("MPIKVS_LAYOUT");
    const char *bad = NULL;
    int status = 0;

    if (layout && *layout)
        bad = "--value-size makes a table for each size, and under "
              "spank_mpikvs (MPIKVS_LAYOUT is set) the job's regions are "
              "made for its config: run it under plain mpirun";
    else if (rank == 0 && !(c.memcpy_buf = malloc(MEMCPY_BUFFER)))
        bad = "cannot allocate the memcpy reference's 256 MiB";
    if (dht_agree(rank, np, SUB " --value-size", bad)) {
        free(c.memcpy_buf);
        return BENCH_EXIT_FAIL;
    }
    if (c.memcpy_buf)   /* its pages exist before anything is timed */
        memset(c.memcpy_buf, 0xa5, MEMCPY_BUFFER);
    for (unsigned i = 0; i < o->nvalue_sizes && !status; i++) {
        c.vsize = o->value_sizes[i];
        status = run_size(&c, i == 0);
    }
    free(c.memcpy_buf);
    return status;
}
