/*
 * bench_near.c - "mpikvs-bench near": neighbourhood queries
 * (mpikvs_get_near) against exact gets in the same run, under mpirun.
 *
 * The table is the benchmark's own (a temporary config on every rank):
 * --fields double key fields of --digits digits, values of --value-size
 * bytes, and "near": {"coarser": C, "members": M}.
 *
 *   fill      every rank makes its share of --points points (point i is
 *             rank i % np's) from a normal distribution around 5 in every
 *             field, narrow enough that a neighbourhood gets about twice
 *             its members (the points' density is what makes neighbours),
 *             rounds each with mpikvs_round_key and puts them in batches
 *             (mpikvs_put_batch); then mpikvs_fence;
 *   passes    rank 0 alone times --queries calls of each kind, one by
 *             one, after WARM untimed ones:
 *               get         mpikvs_get of points' own keys;
 *               get_batch   mpikvs_get_batch of --batch of them;
 *               near        mpikvs_get_near (max --max) of a point moved by
 *                           up to MOVE fine steps in every field: a query
 *                           near stored points, rarely on one;
 *               near_batch  mpikvs_get_near_batch of --batch of those;
 *               locations   mpikvs_get_near, then mpikvs_get of every
 *                           member's key: what a neighbourhood of
 *                           locations (POET's) instead of copies would
 *                           cost, a dependent second read per member.
 *             Every answer is checked outside the timed code: a member's
 *             value carries its point's fields, so its key, its inputs
 *             and its value must round to one key.  Rank 0's statistics
 *             (near_queries, near_members, direct, remote) are read
 *             around each pass, to cross-check members per query.
 *
 * While rank 0 measures, every other rank waits in dht_quiet_barrier,
 * not spinning: on a host of few cores a rank that spins takes the core
 * the measured one needs (bench_dht_large.c does the same).
 *
 * The nodes are the job's, as for "mpikvs-bench dht": one node, or
 * MPIKVS_VIRTUAL_NODES=2 at np 2 for two.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "bench_dht.h"
#include "bench_keys.h"
#include "bench_subcommands.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpikvs.h"
#include "size.h"

#define SUB          "near"
#define TABLE        "near"
#define CENTER       5.0        /* of every field: [1, 10) has one exponent */
#define SIGMA_MAX    0.5        /* 8 sigma still inside [1, 10) */
#define ENTROPY_SIDE 4.1327     /* sqrt(2 pi e): a normal's cells per sigma */
#define FILL_FACTOR  2.0        /* points per neighbourhood over members */
#define MOVE         2.0        /* a query's offset: fine steps, at most */
#define PUT_BATCH    256u
#define WARM         16u        /* untimed calls before a pass */
#define LOCATION_BYTES 16u      /* a member's location: node, slot, tag */
#define CHECKSUM_BYTES 8u       /* a copy's XXH3 of key and value */
#define FIELDS_MAX   16u
#define MEMBERS_MAX  64u        /* the config's bound (mpikvs.json(5)) */
#define BATCH_MAX    4096u
#define WHY_LEN      1024u

enum pass { PASS_GET, PASS_GET_BATCH, PASS_NEAR, PASS_NEAR_BATCH,
            PASS_LOCATIONS, NPASSES };
static const char *const pass_name[NPASSES] = {
    "get", "get_batch", "near", "near_batch", "locations"};

struct near_opts {
    uint64_t    points, queries, fields, digits, coarser, members, max,
                batch, value_size, size, seed;
    bool        json;
    const char *transport;
};

/* What rank 0 measured in one pass. */
struct result {
    uint64_t calls, queries, found, misses, wrong;
    uint64_t member_gets, member_misses;       /* locations only */
    double   per_s, median_ns, mean_ns;        /* per query */
    mpikvs_stats_t st;                         /* rank 0's, over the pass */
};

struct nctx {
    const struct near_opts *o;
    int        rank, np;
    mpikvs_t  *kvs;
    mpikvs_info_t info;
    size_t     ksize, vsize, nin;  /* key and value bytes, member inputs */
    double     sigma, fine_step;
    struct bench_timer timer;
    double     overhead;           /* ticks of one timing */
    /* rank 0: the queries' keys and the outputs of a batch */
    unsigned char *gkeys, *nkeys;  /* exact keys, near keys: queries each */
    uint64_t      *samples;        /* ticks per call */
    mpikvs_near_t *near;           /* batch of them */
    double        *dist, *inputs;
    unsigned char *mvals, *mkeys, *gvals, *lvals;
    int           *status, *lstatus; /* a batch's; the member gets' */
    /* the fill */
    uint64_t       puts, updates, evictions;
    double         fill_s;
};

/* ---- failing, waiting ---------------------------------------------------- */

/* A failed call on one rank leaves the others in a collective: print it
 * and end the job. */
static void fail(const struct nctx *c, const char *call, int rc)
    __attribute__((noreturn));

static void fail(const struct nctx *c, const char *call, int rc)
{
    const char *more = mpikvs_last_error(c->kvs);

    fprintf(stderr, "%s: %s: rank %d: %s: %s%s%s%s\n", BENCH_PROG, SUB,
            c->rank, call, mpikvs_strerror(rc), more && *more ? " (" : "",
            more && *more ? more : "", more && *more ? ")" : "");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
    exit(BENCH_EXIT_FAIL);
}

/* ---- points, keys and values --------------------------------------------- */

static inline double unit(uint64_t x)
{
    return (double)(x >> 11) * 0x1p-53;            /* [0, 1) */
}

/* Field f of point i: normal around CENTER (Box-Muller of two draws),
 * the same on every rank. */
static double point_field(const struct nctx *c, uint64_t i, unsigned f)
{
    uint64_t base = bench_stream_base(c->o->seed, 0, BENCH_STREAM_PAIRS);
    uint64_t d = (i * c->o->fields + f) * 2;
    double u1 = 1.0 - unit(bench_draw(base, d));    /* (0, 1] */
    double u2 = unit(bench_draw(base, d + 1));

    return CENTER + c->sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static void point(const struct nctx *c, uint64_t i, double *x)
{
    for (unsigned f = 0; f < c->o->fields; f++)
        x[f] = point_field(c, i, f);
}

/* Query q: a point at random, every field moved by up to MOVE fine steps
 * either way. */
static void query_point(const struct nctx *c, uint64_t q, double *x)
{
    uint64_t pick = bench_stream_base(c->o->seed, 0, BENCH_STREAM_MIX_KEY);
    uint64_t move = bench_stream_base(c->o->seed, 0, BENCH_STREAM_MIX_OP);

    point(c, bench_below(bench_draw(pick, q), c->o->points), x);
    for (unsigned f = 0; f < c->o->fields; f++)
        x[f] += MOVE * c->fine_step *
                (2.0 * unit(bench_draw(move, q * c->o->fields + f)) - 1.0);
}

/* A value: the point's fields (unrounded), then words mixed from their
 * bits, so that a reader checks that key, inputs and value belong
 * together and that no byte of the value is another's. */
static void make_value(const struct nctx *c, const double *x,
                       unsigned char *v)
{
    size_t head = c->o->fields * sizeof(double), i;
    uint64_t h = BENCH_GOLDEN, w;

    memcpy(v, x, head);
    for (unsigned f = 0; f < c->o->fields; f++) {
        memcpy(&w, &x[f], 8);
        h = bench_mix64(h ^ w);
    }
    for (i = head; i < c->vsize; i += 8) {
        w = bench_mix64(h + i);
        memcpy(v + i, &w, c->vsize - i < 8 ? c->vsize - i : 8);
    }
}

static void round_key(const struct nctx *c, const double *x,
                      unsigned char *key)
{
    int rc = mpikvs_round_key(c->kvs, x, c->o->fields, key);

    if (rc != MPIKVS_OK)
        fail(c, "mpikvs_round_key", rc);
}

/* 1 unless value is the value of a point whose key is key. */
static int value_wrong(const struct nctx *c, const unsigned char *key,
                       const unsigned char *value)
{
    double x[FIELDS_MAX];
    unsigned char k[FIELDS_MAX * 16], v[c->vsize];

    memcpy(x, value, c->o->fields * sizeof(double));
    for (unsigned f = 0; f < c->o->fields; f++)
        if (!isfinite(x[f]))
            return 1;
    round_key(c, x, k);
    make_value(c, x, v);
    return memcmp(k, key, c->ksize) != 0 || memcmp(v, value, c->vsize) != 0;
}

/* Wrong members of one answer: a value that is not its key's, inputs
 * that do not round to its key, distances out of order, found > max. */
static uint64_t near_wrong(const struct nctx *c, const mpikvs_near_t *n)
{
    unsigned char k[FIELDS_MAX * 16];
    uint64_t bad = 0;

    if (n->found > n->max)
        return 1;
    for (size_t m = 0; m < n->found; m++) {
        const unsigned char *key = (const unsigned char *)n->keys +
                                   m * c->ksize;
        int w = value_wrong(c, key, (const unsigned char *)n->values +
                                        m * c->vsize);
        if (!w && c->nin == c->o->fields) {
            round_key(c, n->inputs + m * c->nin, k);
            w = memcmp(k, key, c->ksize) != 0;
        }
        if (!w && (!(n->distances[m] >= 0) ||
                   (m && n->distances[m] < n->distances[m - 1])))
            w = 1;
        bad += (uint64_t)w;
    }
    return bad;
}

/* ---- the table -------------------------------------------------------------- */

/* This rank's temporary config (the ranks of another node could not read
 * rank 0's /tmp): path filled, or why.  Only numbers and fixed names go
 * in: nothing needs JSON escaping. */
static const char *write_config(const struct nctx *c, char *path,
                                size_t plen, char *why, size_t len)
{
    const struct near_opts *o = c->o;
    FILE *f;
    int w = 0, saved;

    if (!(f = dht_temp_config("mpikvs-bench-near", path, plen, why, len)))
        return why;
    w |= fprintf(f, "{ \"version\": 1, \"tables\": { \"%s\": {\n"
                    "  \"size\": %llu,\n  \"key\": { \"fields\": [",
                 TABLE, (unsigned long long)o->size) < 0;
    for (unsigned i = 0; i < o->fields; i++)
        w |= fprintf(f, "%s\n    { \"name\": \"x%u\", \"type\": \"double\", "
                        "\"digits\": %llu }",
                     i ? "," : "", i, (unsigned long long)o->digits) < 0;
    w |= fprintf(f, " ] },\n  \"value\": { \"value_size\": %llu },\n"
                    "  \"near\": { \"coarser\": %llu, \"members\": %llu }"
                    " } } }\n",
                 (unsigned long long)o->value_size,
                 (unsigned long long)o->coarser,
                 (unsigned long long)o->members) < 0;
    saved = errno;
    if (fclose(f) != 0 || w) {
        snprintf(why, len, "cannot write the temporary config %.900s: %s",
                 path, strerror(w ? saved : errno));
        return why;
    }
    return NULL;
}

/* Open the table on every rank, or on none.  0 or BENCH_EXIT_FAIL
 * (reported). */
static int open_table(struct nctx *c)
{
    char path[4096] = "", why[WHY_LEN];
    const char *bad = write_config(c, path, sizeof path, why, sizeof why);
    int rc;

    if (dht_agree(c->rank, c->np, SUB, bad)) {
        if (path[0])
            unlink(path);
        return BENCH_EXIT_FAIL;
    }
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    opt.config = path;
    opt.table = TABLE;
    opt.transport = c->o->transport;
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
        snprintf(why, sizeof why, "mpikvs_open (%llu double fields of %llu "
                                  "digits, near coarser %llu members %llu, "
                                  "%llu bytes per node): %s%s%s%s",
                 (unsigned long long)c->o->fields,
                 (unsigned long long)c->o->digits,
                 (unsigned long long)c->o->coarser,
                 (unsigned long long)c->o->members,
                 (unsigned long long)c->o->size, mpikvs_strerror(rc),
                 *more ? " (" : "", more, *more ? ")" : "");
        bad = why;
    }
    if (dht_agree(c->rank, c->np, SUB, bad)) {
        /* the library promises no handle on any rank then */
        if (c->kvs) {
            MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
            exit(BENCH_EXIT_FAIL);
        }
        return BENCH_EXIT_FAIL;
    }
    c->info = (mpikvs_info_t){.size = sizeof c->info};
    if ((rc = mpikvs_info(c->kvs, &c->info)) != MPIKVS_OK)
        fail(c, "mpikvs_info", rc);
    c->ksize = (size_t)c->info.key_size;
    c->vsize = (size_t)c->info.value_size;
    c->nin = mpikvs_near_inputs(c->kvs);
    if (c->nin != c->o->fields) {
        snprintf(why, sizeof why, "mpikvs_near_inputs says %zu inputs, the "
                                  "table has %llu fields (a library without "
                                  "neighbourhoods?)",
                 c->nin, (unsigned long long)c->o->fields);
        bad = why;
    }
    return dht_agree(c->rank, c->np, SUB, bad);
}

static void rank_stats(const struct nctx *c, mpikvs_stats_t *st)
{
    int rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_RANK, st, sizeof *st);

    if (rc != MPIKVS_OK)
        fail(c, "mpikvs_stats", rc);
}

static void stats_diff(const mpikvs_stats_t *a, const mpikvs_stats_t *b,
                       mpikvs_stats_t *d)
{
#define NEAR_DIFF(name, label, text) d->name = b->name - a->name;
    MPIKVS_STATISTICS(NEAR_DIFF)
#undef NEAR_DIFF
}

/* Every rank puts its points (i % np == rank), then mpikvs_fence; the
 * job's puts, updates and evictions of the fill. */
static void fill(struct nctx *c)
{
    unsigned char *keys = malloc(PUT_BATCH * c->ksize);
    unsigned char *vals = malloc(PUT_BATCH * c->vsize);
    double x[FIELDS_MAX];
    mpikvs_stats_t a, b, d;
    uint64_t n = 0;
    int rc;

    if (!keys || !vals)
        fail(c, "malloc (the put batches)", -ENOMEM);
    if ((rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_JOB, &a, sizeof a)))
        fail(c, "mpikvs_stats", rc);
    double t0 = MPI_Wtime();
    for (uint64_t i = (uint64_t)c->rank; i < c->o->points;
         i += (uint64_t)c->np) {
        point(c, i, x);
        round_key(c, x, keys + n * c->ksize);
        make_value(c, x, vals + n * c->vsize);
        if (++n == PUT_BATCH) {
            if ((rc = mpikvs_put_batch(c->kvs, n, keys, vals)) != MPIKVS_OK)
                fail(c, "mpikvs_put_batch", rc);
            n = 0;
        }
    }
    if (n && (rc = mpikvs_put_batch(c->kvs, n, keys, vals)) != MPIKVS_OK)
        fail(c, "mpikvs_put_batch", rc);
    if ((rc = mpikvs_fence(c->kvs)) != MPIKVS_OK)
        fail(c, "mpikvs_fence", rc);
    c->fill_s = MPI_Wtime() - t0;
    if ((rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_JOB, &b, sizeof b)))
        fail(c, "mpikvs_stats", rc);
    stats_diff(&a, &b, &d);
    c->puts = d.puts;
    c->updates = d.updates;
    c->evictions = d.evictions;
    free(keys);
    free(vals);
}

/* ---- rank 0's passes ------------------------------------------------------ */

/* Rank 0's buffers: the queries' keys, samples, and a batch of answers
 * (max members each). */
static void alloc_rank0(struct nctx *c)
{
    const struct near_opts *o = c->o;
    size_t b = (size_t)o->batch, m = (size_t)o->max;

    c->gkeys = malloc(o->queries * c->ksize);
    c->nkeys = malloc(o->queries * c->ksize);
    c->samples = malloc(o->queries * sizeof *c->samples);
    c->near = calloc(b, sizeof *c->near);
    c->dist = malloc(b * m * sizeof *c->dist);
    c->inputs = malloc(b * m * c->nin * sizeof *c->inputs);
    c->mvals = malloc(b * m * c->vsize);
    c->mkeys = malloc(b * m * c->ksize);
    c->gvals = malloc(b * c->vsize);
    c->lvals = malloc(m * c->vsize);
    c->status = malloc(b * sizeof *c->status);
    c->lstatus = malloc(m * sizeof *c->lstatus);
    if (!c->gkeys || !c->nkeys || !c->samples || !c->near || !c->dist ||
        !c->inputs || !c->mvals || !c->mkeys || !c->gvals || !c->lvals ||
        !c->status || !c->lstatus)
        fail(c, "malloc (rank 0's queries and answers)", -ENOMEM);
    for (size_t i = 0; i < b; i++)
        c->near[i] = (mpikvs_near_t){
            .max = m,
            .distances = c->dist + i * m,
            .inputs = c->inputs + i * m * c->nin,
            .inputs_len = m * c->nin,
            .values = c->mvals + i * m * c->vsize,
            .values_len = m * c->vsize,
            .keys = c->mkeys + i * m * c->ksize,
            .keys_len = m * c->ksize,
        };
    double x[FIELDS_MAX];
    uint64_t pick = bench_stream_base(o->seed, 1, BENCH_STREAM_MIX_KEY);
    for (uint64_t q = 0; q < o->queries; q++) {
        point(c, bench_below(bench_draw(pick, q), o->points), x);
        round_key(c, x, c->gkeys + q * c->ksize);
        query_point(c, q, x);
        round_key(c, x, c->nkeys + q * c->ksize);
    }
}

static void free_rank0(struct nctx *c)
{
    free(c->gkeys);
    free(c->nkeys);
    free(c->samples);
    free(c->near);
    free(c->dist);
    free(c->inputs);
    free(c->mvals);
    free(c->mkeys);
    free(c->gvals);
    free(c->lvals);
    free(c->status);
    free(c->lstatus);
}

/* One call of a pass on queries [q, q + n): the call timed, its answers
 * checked after.  Returns the ticks. */
static uint64_t call(struct nctx *c, enum pass p, uint64_t q, size_t n,
                     struct result *r)
{
    const struct bench_timer *t = &c->timer;
    const unsigned char *gk = c->gkeys + q * c->ksize;
    const unsigned char *nk = c->nkeys + q * c->ksize;
    mpikvs_near_t *nr = c->near;
    uint64_t a, b, lmiss = 0;
    size_t lgets = 0;
    int rc = MPIKVS_OK;

    switch (p) {
    case PASS_GET:
        a = bench_tick_start(t);
        rc = mpikvs_get(c->kvs, gk, c->gvals);
        b = bench_tick_stop(t);
        if (rc < 0)
            fail(c, "mpikvs_get", rc);
        c->status[0] = rc;
        break;
    case PASS_GET_BATCH:
        a = bench_tick_start(t);
        rc = mpikvs_get_batch(c->kvs, n, gk, c->gvals, c->status);
        b = bench_tick_stop(t);
        if (rc < 0)
            fail(c, "mpikvs_get_batch", rc);
        break;
    case PASS_NEAR:
        a = bench_tick_start(t);
        rc = mpikvs_get_near(c->kvs, nk, nr);
        b = bench_tick_stop(t);
        if (rc < 0)
            fail(c, "mpikvs_get_near", rc);
        c->status[0] = rc;
        break;
    case PASS_NEAR_BATCH:
        a = bench_tick_start(t);
        rc = mpikvs_get_near_batch(c->kvs, n, nk, nr, c->status);
        b = bench_tick_stop(t);
        if (rc < 0)
            fail(c, "mpikvs_get_near_batch", rc);
        break;
    default: /* PASS_LOCATIONS */
        a = bench_tick_start(t);
        rc = mpikvs_get_near(c->kvs, nk, nr);
        if (rc == MPIKVS_OK)
            for (; lgets < nr->found; lgets++) {
                int g = mpikvs_get(c->kvs, (unsigned char *)nr->keys +
                                               lgets * c->ksize,
                                   c->lvals + lgets * c->vsize);
                if (g < 0) {
                    rc = g;
                    break;
                }
                c->lstatus[lgets] = g;
                lmiss += g == MPIKVS_MISS;
            }
        b = bench_tick_stop(t);
        if (rc < 0)
            fail(c, "mpikvs_get_near, then mpikvs_get of a member", rc);
        c->status[0] = rc;
        break;
    }
    if (!r)     /* warming up */
        return b - a;

    r->calls++;
    r->queries += n;
    for (size_t i = 0; i < n; i++) {
        if (c->status[i] == MPIKVS_MISS) {
            r->misses++;
            continue;
        }
        if (c->status[i] != MPIKVS_OK) {
            r->wrong++;
            continue;
        }
        if (p == PASS_GET || p == PASS_GET_BATCH) {
            r->wrong += (uint64_t)value_wrong(c, gk + i * c->ksize,
                                              c->gvals + i * c->vsize);
            continue;
        }
        r->found += nr[i].found;
        r->wrong += near_wrong(c, &nr[i]);
    }
    if (p == PASS_LOCATIONS) {
        r->member_gets += lgets;
        r->member_misses += lmiss;
        /* a member read again that is still there has the copy's value,
         * unless a put replaced it in between (none does here); one that
         * is gone is a member_miss, not wrong */
        for (size_t m = 0; c->status[0] == MPIKVS_OK && m < lgets; m++)
            if (c->lstatus[m] == MPIKVS_OK &&
                memcmp(c->lvals + m * c->vsize,
                       (unsigned char *)nr->values + m * c->vsize,
                       c->vsize) != 0 &&
                value_wrong(c, (unsigned char *)nr->keys + m * c->ksize,
                            c->lvals + m * c->vsize))
                r->wrong++;
    }
    return b - a;
}

static bool batched(enum pass p)
{
    return p == PASS_GET_BATCH || p == PASS_NEAR_BATCH;
}

/* Rank 0: WARM untimed calls, then every query, each call timed. */
static void run_pass(struct nctx *c, enum pass p, struct result *r)
{
    const uint64_t nq = c->o->queries;
    const size_t per = batched(p) ? (size_t)c->o->batch : 1;
    mpikvs_stats_t before, after;
    double sum = 0;

    memset(r, 0, sizeof *r);
    for (uint64_t w = 0; w < WARM; w++) {
        uint64_t q = (w * per) % nq;
        call(c, p, q, nq - q < per ? (size_t)(nq - q) : per, NULL);
    }
    rank_stats(c, &before);
    for (uint64_t q = 0; q < nq; q += per) {
        size_t n = nq - q < per ? (size_t)(nq - q) : per;
        double ticks = (double)call(c, p, q, n, r) - c->overhead;
        ticks = ticks > 0 ? ticks : 0;
        sum += ticks;
        /* per query: a batch's time shared by its queries */
        c->samples[r->calls - 1] = (uint64_t)(ticks / (double)n + 0.5);
    }
    rank_stats(c, &after);
    stats_diff(&before, &after, &r->st);
    bench_sort_u64(c->samples, r->calls);
    r->median_ns = (double)bench_percentile_u64(c->samples, r->calls, 0.5) *
                   c->timer.ns_per_tick;
    r->per_s = sum > 0 ? (double)r->queries /
                             (sum * c->timer.ns_per_tick * 1e-9)
                       : 0;
    r->mean_ns = sum * c->timer.ns_per_tick / (double)r->queries;
}

/* ---- output ----------------------------------------------------------------- */

/* Members per query: answered queries only (a miss has none). */
static double members_per_query(const struct result *r)
{
    uint64_t answered = r->queries - r->misses;
    return answered ? (double)r->found / (double)answered : 0;
}

/* The library's count: members over queries, misses included (it cannot
 * tell), so over answered ones as above; -1 when it counted none. */
static double stat_members_per_query(const struct result *r)
{
    uint64_t answered = r->st.near_queries > r->misses
                            ? r->st.near_queries - r->misses : 0;
    return answered ? (double)r->st.near_members / (double)answered : -1;
}

/* Remote share of rank 0's lookups in the pass, -1 when none counted. */
static double remote_share(const struct result *r)
{
    uint64_t all = r->st.direct + r->st.remote;
    return all ? (double)r->st.remote / (double)all : -1;
}

static bool near_pass(enum pass p)
{
    return p == PASS_NEAR || p == PASS_NEAR_BATCH || p == PASS_LOCATIONS;
}

struct memory {
    uint64_t copy_member, copies, locations;
};

/* A neighbourhood of members: copies hold the coarser key, the key, the
 * value and a checksum a member; locations LOCATION_BYTES a member.  The
 * coarser key is as wide as the key: fewer digits, same field widths
 * (mpikvs.json(5), Widths and placement). */
static struct memory memory(const struct nctx *c)
{
    struct memory m;

    m.copy_member = 2 * c->ksize + c->vsize + CHECKSUM_BYTES;
    m.copies = c->o->members * m.copy_member;
    m.locations = c->o->members * LOCATION_BYTES;
    return m;
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static void print_header(const struct nctx *c)
{
    const struct near_opts *o = c->o;
    char tdesc[160];

    bench_timer_describe(&c->timer, tdesc, sizeof tdesc);
    printf("# %s %s near: np=%d nodes=%u%s mode=%s transport=%s seed %llu\n",
           BENCH_PROG, PACKAGE_VERSION, c->np, (unsigned)c->info.nodes,
           c->info.virtual_nodes ? " (virtual)" : "", c->info.mode,
           mpikvs_transport(c->kvs), (unsigned long long)o->seed);
    printf("# table: %llu double fields of %llu digits (%zu-byte keys), "
           "%zu-byte values, a region of %llu bytes and %llu buckets a node; "
           "near: coarser %llu (%llu digits), members %llu\n",
           (unsigned long long)o->fields, (unsigned long long)o->digits,
           c->ksize, c->vsize, (unsigned long long)c->info.region_size,
           (unsigned long long)c->info.buckets,
           (unsigned long long)o->coarser,
           (unsigned long long)(o->digits - o->coarser),
           (unsigned long long)o->members);
    printf("# points: %llu, every field normal around %g with sigma %.4g "
           "(about %g points a neighbourhood), mpikvs_round_key, "
           "mpikvs_put_batch of %u by every rank, then mpikvs_fence\n",
           (unsigned long long)o->points, CENTER, c->sigma,
           FILL_FACTOR * (double)o->members, PUT_BATCH);
    printf("# queries: %llu a pass, rank 0 alone, each call timed after %u "
           "untimed; the other ranks wait in MPI_Ibarrier tested every %ld "
           "us (nanosleep)\n",
           (unsigned long long)o->queries, WARM,
           DHT_QUIET_WAIT_NS / 1000);
    printf("# get: mpikvs_get of points' keys; get_batch: mpikvs_get_batch "
           "of %llu; near: mpikvs_get_near (max %llu) of a point moved up to "
           "%g fine steps (%g) in every field; near_batch: "
           "mpikvs_get_near_batch of %llu; locations: mpikvs_get_near, then "
           "mpikvs_get of every member's key\n",
           (unsigned long long)o->batch, (unsigned long long)o->max, MOVE,
           c->fine_step, (unsigned long long)o->batch);
    printf("# median_ns: per query (a batch's time over its queries); "
           "mean_ns: per query, the pass's time over its queries (on 2 "
           "nodes a query is local or remote: compare means, a median falls "
           "on one or the other); "
           "members/q: of answered queries; stat_members/q: rank 0's "
           "near_members over near_queries (mpikvs_stats); remote: rank "
           "0's remote share of direct+remote\n");
    printf("# timer: %s; its own cost, %.1f ns, is subtracted\n", tdesc,
           c->overhead * c->timer.ns_per_tick);
}

static void fmt_or_dash(char *buf, size_t len, const char *fmt, double v)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, fmt, v);
}

static void print_text(const struct nctx *c, const struct result *r)
{
    const struct result *get = &r[PASS_GET], *near = &r[PASS_NEAR];
    struct memory m = memory(c);

    print_header(c);
    printf("fill: points %llu puts %llu updates %llu evictions %llu "
           "seconds %.3f\n",
           (unsigned long long)c->o->points, (unsigned long long)c->puts,
           (unsigned long long)c->updates,
           (unsigned long long)c->evictions, c->fill_s);
    printf("%-10s %7s %8s %13s %10s %10s %9s %14s %7s %7s %6s\n", "pass",
           "calls", "queries", "queries/s", "median_ns", "mean_ns",
           "members/q",
           "stat_members/q", "remote", "misses", "wrong");
    for (int p = 0; p < NPASSES; p++) {
        char mq[32], smq[32], rem[32];
        fmt_or_dash(mq, sizeof mq, "%.2f",
                    near_pass((enum pass)p) ? members_per_query(&r[p]) : -1);
        fmt_or_dash(smq, sizeof smq, "%.2f",
                    near_pass((enum pass)p) ? stat_members_per_query(&r[p])
                                            : -1);
        fmt_or_dash(rem, sizeof rem, "%.2f", remote_share(&r[p]));
        printf("%-10s %7llu %8llu %13.1f %10.1f %10.1f %9s %14s %7s %7llu "
               "%6llu\n",
               pass_name[p], (unsigned long long)r[p].calls,
               (unsigned long long)r[p].queries, r[p].per_s, r[p].median_ns,
               r[p].mean_ns, mq, smq, rem, (unsigned long long)r[p].misses,
               (unsigned long long)r[p].wrong);
    }
    printf("locations: member_gets %llu member_misses %llu\n",
           (unsigned long long)r[PASS_LOCATIONS].member_gets,
           (unsigned long long)r[PASS_LOCATIONS].member_misses);
    printf("ratio: near/get %.2f near_batch/get_batch %.2f "
           "locations/copies %.2f (medians per query)\n",
           ratio(near->median_ns, get->median_ns),
           ratio(r[PASS_NEAR_BATCH].median_ns, r[PASS_GET_BATCH].median_ns),
           ratio(r[PASS_LOCATIONS].median_ns, near->median_ns));
    printf("ratio_mean: near/get %.2f near_batch/get_batch %.2f "
           "locations/copies %.2f (means per query)\n",
           ratio(near->mean_ns, get->mean_ns),
           ratio(r[PASS_NEAR_BATCH].mean_ns, r[PASS_GET_BATCH].mean_ns),
           ratio(r[PASS_LOCATIONS].mean_ns, near->mean_ns));
    printf("memory: members %llu copies_bytes %llu (%llu a member: coarser "
           "key %zu, key %zu, value %zu, checksum %u) locations_bytes %llu "
           "(%u a member) copies/locations %.2f\n",
           (unsigned long long)c->o->members, (unsigned long long)m.copies,
           (unsigned long long)m.copy_member, c->ksize, c->ksize, c->vsize,
           CHECKSUM_BYTES, (unsigned long long)m.locations, LOCATION_BYTES,
           ratio((double)m.copies, (double)m.locations));
}

static void json_number(const char *name, double v, const char *end)
{
    if (v < 0)
        printf("\"%s\": null%s", name, end);
    else
        printf("\"%s\": %.4f%s", name, v, end);
}

static void print_json(const struct nctx *c, const struct result *r)
{
    const struct near_opts *o = c->o;
    struct memory m = memory(c);

    printf("{\n  \"benchmark\": \"near\",\n  \"version\": \"%s\",\n",
           PACKAGE_VERSION);
    printf("  \"np\": %d,\n  \"nodes\": %u,\n  \"virtual_nodes\": %s,\n"
           "  \"mode\": \"%s\",\n  \"transport\": \"%s\",\n"
           "  \"seed\": %llu,\n",
           c->np, (unsigned)c->info.nodes,
           c->info.virtual_nodes ? "true" : "false", c->info.mode,
           mpikvs_transport(c->kvs), (unsigned long long)o->seed);
    printf("  \"table\": {\"fields\": %llu, \"digits\": %llu, "
           "\"key_bytes\": %zu, \"value_bytes\": %zu, "
           "\"region_bytes\": %llu, \"buckets\": %llu, "
           "\"near\": {\"coarser\": %llu, \"members\": %llu}},\n",
           (unsigned long long)o->fields, (unsigned long long)o->digits,
           c->ksize, c->vsize, (unsigned long long)c->info.region_size,
           (unsigned long long)c->info.buckets,
           (unsigned long long)o->coarser, (unsigned long long)o->members);
    printf("  \"fill\": {\"points\": %llu, \"sigma\": %.6g, \"puts\": %llu, "
           "\"updates\": %llu, \"evictions\": %llu, \"seconds\": %.6f},\n",
           (unsigned long long)o->points, c->sigma,
           (unsigned long long)c->puts, (unsigned long long)c->updates,
           (unsigned long long)c->evictions, c->fill_s);
    printf("  \"queries\": %llu,\n  \"max\": %llu,\n  \"batch\": %llu,\n"
           "  \"move_fine_steps\": %g,\n",
           (unsigned long long)o->queries, (unsigned long long)o->max,
           (unsigned long long)o->batch, MOVE);
    printf("  \"timer\": {\"source\": \"%s\", \"ns_per_tick\": %.6f, "
           "\"overhead_ns\": %.1f},\n",
           c->timer.kind == BENCH_TIMER_TSC ? "tsc" : "clock_monotonic",
           c->timer.ns_per_tick, c->overhead * c->timer.ns_per_tick);
    printf("  \"results\": [\n");
    for (int p = 0; p < NPASSES; p++) {
        bool np = near_pass((enum pass)p);
        printf("    {\"pass\": \"%s\", \"calls\": %llu, \"queries\": %llu, "
               "\"queries_per_s\": %.1f, \"median_ns\": %.1f, "
               "\"mean_ns\": %.1f, ",
               pass_name[p], (unsigned long long)r[p].calls,
               (unsigned long long)r[p].queries, r[p].per_s,
               r[p].median_ns, r[p].mean_ns);
        json_number("members_per_query", np ? members_per_query(&r[p]) : -1,
                    ", ");
        json_number("stat_members_per_query",
                    np ? stat_members_per_query(&r[p]) : -1, ", ");
        json_number("remote_share", remote_share(&r[p]), ", ");
        printf("\"near_queries\": %llu, \"near_members\": %llu, "
               "\"misses\": %llu, \"wrong\": %llu",
               (unsigned long long)r[p].st.near_queries,
               (unsigned long long)r[p].st.near_members,
               (unsigned long long)r[p].misses,
               (unsigned long long)r[p].wrong);
        if (p == PASS_LOCATIONS)
            printf(", \"member_gets\": %llu, \"member_misses\": %llu",
                   (unsigned long long)r[p].member_gets,
                   (unsigned long long)r[p].member_misses);
        printf("}%s\n", p + 1 < NPASSES ? "," : "");
    }
    printf("  ],\n  \"ratios\": {\"near_over_get\": %.4f, "
           "\"near_batch_over_get_batch\": %.4f, "
           "\"locations_over_copies\": %.4f},\n",
           ratio(r[PASS_NEAR].median_ns, r[PASS_GET].median_ns),
           ratio(r[PASS_NEAR_BATCH].median_ns, r[PASS_GET_BATCH].median_ns),
           ratio(r[PASS_LOCATIONS].median_ns, r[PASS_NEAR].median_ns));
    printf("  \"ratios_mean\": {\"near_over_get\": %.4f, "
           "\"near_batch_over_get_batch\": %.4f, "
           "\"locations_over_copies\": %.4f},\n",
           ratio(r[PASS_NEAR].mean_ns, r[PASS_GET].mean_ns),
           ratio(r[PASS_NEAR_BATCH].mean_ns, r[PASS_GET_BATCH].mean_ns),
           ratio(r[PASS_LOCATIONS].mean_ns, r[PASS_NEAR].mean_ns));
    printf("  \"memory\": {\"members\": %llu, \"copy_member_bytes\": %llu, "
           "\"copies_bytes\": %llu, \"location_member_bytes\": %u, "
           "\"locations_bytes\": %llu}\n}\n",
           (unsigned long long)o->members,
           (unsigned long long)m.copy_member, (unsigned long long)m.copies,
           LOCATION_BYTES, (unsigned long long)m.locations);
}

/* ---- options ------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun ... %s %s [options]\n"
"Neighbourhood queries (mpikvs_get_near) against mpikvs_get, on a table of\n"
"double key fields with a \"near\" setting; rank 0 measures.\n"
"\n"
"  --points N       points put, all ranks together (default 100000)\n"
"  --queries N      timed queries a pass (default 20000)\n"
"  --fields N       double key fields (default 4, at most %u)\n"
"  --digits D       their digits (default 4, 2 to 15)\n"
"  --coarser C      digits fewer in the coarser key (default 1)\n"
"  --members M      members a neighbourhood keeps (default 20, at most %u)\n"
"  --max M          members a query asks for (default: --members)\n"
"  --batch K        queries of a batch call (default 64)\n"
"  --value-size N   value bytes (default 64, at least 8 * --fields)\n"
"  --size BYTES     table bytes per node (default 64M)\n"
"  --transport NAME auto, mpi or ucx (default: the library's choice)\n"
"  --seed N         seed of the points and queries (default 1)\n"
"  --json           one JSON document instead of the text\n"
"  -h, --help       print this and exit\n"
"\nSee mpikvs-bench(1).\n", BENCH_PROG, SUB, FIELDS_MAX, MEMBERS_MAX);
}

enum { OPT_POINTS = 256, OPT_QUERIES, OPT_FIELDS, OPT_DIGITS, OPT_COARSER,
       OPT_MEMBERS, OPT_MAX, OPT_BATCH, OPT_VALUE_SIZE, OPT_SIZE,
       OPT_TRANSPORT, OPT_SEED, OPT_JSON };

/* 0: run, 1: --help was printed, -1: bad usage (reported). */
static int near_options(int argc, char **argv, struct near_opts *o)
{
    static const struct option longopts[] = {
        {"points", required_argument, NULL, OPT_POINTS},
        {"queries", required_argument, NULL, OPT_QUERIES},
        {"fields", required_argument, NULL, OPT_FIELDS},
        {"digits", required_argument, NULL, OPT_DIGITS},
        {"coarser", required_argument, NULL, OPT_COARSER},
        {"members", required_argument, NULL, OPT_MEMBERS},
        {"max", required_argument, NULL, OPT_MAX},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"value-size", required_argument, NULL, OPT_VALUE_SIZE},
        {"size", required_argument, NULL, OPT_SIZE},
        {"transport", required_argument, NULL, OPT_TRANSPORT},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mpikvs_error_t err;
    bool max_given = false, value_given = false;
    int c, bad = 0;

    *o = (struct near_opts){
        .points = 100000, .queries = 20000, .fields = 4, .digits = 4,
        .coarser = 1, .members = 20, .batch = 64, .value_size = 64,
        .size = UINT64_C(64) << 20, .seed = 1,
    };
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_POINTS:
            bad = bench_parse_u64(SUB, "--points", optarg, 1,
                                  UINT64_C(1) << 32, &o->points);
            break;
        case OPT_QUERIES:
            bad = bench_parse_u64(SUB, "--queries", optarg, 1, 10000000,
                                  &o->queries);
            break;
        case OPT_FIELDS:
            bad = bench_parse_u64(SUB, "--fields", optarg, 1, FIELDS_MAX,
                                  &o->fields);
            break;
        case OPT_DIGITS:
            bad = bench_parse_u64(SUB, "--digits", optarg, 2, 15,
                                  &o->digits);
            break;
        case OPT_COARSER:
            bad = bench_parse_u64(SUB, "--coarser", optarg, 1, 14,
                                  &o->coarser);
            break;
        case OPT_MEMBERS:
            bad = bench_parse_u64(SUB, "--members", optarg, 1, MEMBERS_MAX,
                                  &o->members);
            break;
        case OPT_MAX:
            bad = bench_parse_u64(SUB, "--max", optarg, 1, MEMBERS_MAX,
                                  &o->max);
            max_given = true;
            break;
        case OPT_BATCH:
            bad = bench_parse_u64(SUB, "--batch", optarg, 1, BATCH_MAX,
                                  &o->batch);
            break;
        case OPT_VALUE_SIZE:
            bad = bench_parse_u64(SUB, "--value-size", optarg, 8, 65536,
                                  &o->value_size);
            value_given = true;
            break;
        case OPT_SIZE:
            if (kvshm_parse_size(optarg, "--size", 1, &o->size, &err) !=
                MPIKVS_OK) {
                fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, err.text);
                bad = -1;
            }
            break;
        case OPT_TRANSPORT:
            o->transport = optarg;
            break;
        case OPT_SEED:
            bad = bench_parse_u64(SUB, "--seed", optarg, 0, UINT64_MAX,
                                  &o->seed);
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            return bench_bad_option(SUB, c, argv);
        }
    }
    if (bad || bench_no_operands(SUB, argc, argv))
        return -1;
    if (o->coarser >= o->digits) {
        fprintf(stderr, "%s: %s: invalid value '%llu' for --coarser: the "
                        "coarser key keeps at least 1 of --digits %llu\n",
                BENCH_PROG, SUB, (unsigned long long)o->coarser,
                (unsigned long long)o->digits);
        return -1;
    }
    if (!max_given)
        o->max = o->members;
    if (o->value_size < 8 * o->fields) {
        if (value_given) {
            fprintf(stderr, "%s: %s: invalid value '%llu' for --value-size: "
                            "a value holds its point's %llu fields, at "
                            "least %llu bytes\n",
                    BENCH_PROG, SUB, (unsigned long long)o->value_size,
                    (unsigned long long)o->fields,
                    (unsigned long long)(8 * o->fields));
            return -1;
        }
        o->value_size = 8 * o->fields;
    }
    return 0;
}

/* ---- the subcommand ---------------------------------------------------------- */

/* The normal's width: about FILL_FACTOR * members points in every cell
 * of the coarser key that it covers.  A normal covers (sigma *
 * ENTROPY_SIDE / step)^fields cells (its entropy's volume). */
static double sigma_for(const struct near_opts *o, double coarse_step)
{
    double cells = (double)o->points / (FILL_FACTOR * (double)o->members);
    double s = coarse_step * pow(cells < 1 ? 1 : cells,
                                 1.0 / (double)o->fields) / ENTROPY_SIDE;

    return s < SIGMA_MAX ? s : SIGMA_MAX;
}

int bench_near_main(int argc, char **argv)
{
    struct near_opts o;
    struct nctx c = {.o = &o};
    struct result r[NPASSES];
    const char *layout = getenv("MPIKVS_LAYOUT");
    char why[160];
    int rc, status = 0;

    rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "%s: %s: MPI_Init failed (error %d): run it under "
                        "mpirun or srun\n", BENCH_PROG, SUB, rc);
        return BENCH_EXIT_FAIL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.np);
    {   /* every rank parses; rank 0 alone says what is wrong */
        int saved = bench_stderr_mute(c.rank != 0);
        rc = near_options(argc, argv, &o);
        bench_stderr_restore(saved);
    }
    if (rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    }
    if (dht_agree(c.rank, c.np, SUB,
                  layout && *layout
                      ? "the benchmark makes its own table, and under "
                        "spank_mpikvs (MPIKVS_LAYOUT is set) the job's "
                        "regions are made for its config: run it under "
                        "plain mpirun"
                      : NULL)) {
        MPI_Finalize();
        return BENCH_EXIT_FAIL;
    }
    if (bench_timer_init(&c.timer, "auto", why, sizeof why))
        bench_timer_init(&c.timer, "clock", why, sizeof why);
    /* values in [1, 10): a step of the last of d digits is 10^(1-d) */
    c.fine_step = pow(10.0, 1.0 - (double)o.digits);
    c.sigma = sigma_for(&o, pow(10.0, 1.0 - (double)(o.digits - o.coarser)));

    if (open_table(&c)) {
        MPI_Finalize();
        return BENCH_EXIT_FAIL;
    }
    fill(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    if (c.rank == 0) {
        alloc_rank0(&c);
        c.overhead = bench_timer_overhead(&c.timer);
        for (int p = 0; p < NPASSES; p++)
            run_pass(&c, (enum pass)p, &r[p]);
    }
    dht_quiet_barrier();

    if (c.rank == 0) {
        if (o.json)
            print_json(&c, r);
        else
            print_text(&c, r);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "%s: %s: cannot write the results: %s\n",
                    BENCH_PROG, SUB, strerror(errno));
            status = BENCH_EXIT_FAIL;
        }
        free_rank0(&c);
    }
    if ((rc = mpikvs_close(&c.kvs)) != MPIKVS_OK)
        fail(&c, "mpikvs_close", rc);
    MPI_Finalize();
    return status;
}
