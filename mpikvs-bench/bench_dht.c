/*
 * bench_dht.c - "mpikvs-bench dht": the synthetic benchmark of the DHT
 * paper (Luebke et al., ICCS 2025, section 4.2) against libmpikvs, run
 * under mpirun or srun, and its options; the --tier mode is
 * bench_dht_tier.c, the helpers both share bench_dht_common.c.
 *
 * Keys, values and random numbers are those of bench_keys.h: 80-byte
 * keys made from 64-bit numbers, 104-byte values made from the keys, so
 * every value read is checked.  Numbers are uniform over all 64-bit
 * integers, or zipfian with skew 0.99 over 1..712500 (exactly, by
 * Hoermann and Derflinger's rejection-inversion).
 * Number i of rank r is a pure function of (seed, r, i), so any rank can
 * make any other rank's keys.
 *
 * Three phases, each started together at a barrier:
 *   write  every rank puts --pairs pairs; then mpikvs_fence;
 *   read   every rank gets the same keys again, in the same order;
 *   mixed  --ops operations, 95% gets and 5% puts; with --work-us N,
 *          N us of computation before each (run_chunk_work), and the
 *          phase's efficiency.
 * Keys and values are made outside the timed code, a chunk of ops at a
 * time; a rank's phase time is the sum of its timed chunks, i.e. its time
 * inside mpikvs calls.  Then, with --remote-gets, rank 0 alone times
 * single gets of other nodes' keys (remote_get_pass).  Rank 0 prints the
 * table (or --json).
 */
#define _GNU_SOURCE
#include "bench.h"
#include "bench_subcommands.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_dht.h"
#include "bench_dht_large.h"
#include "bench_dht_tier.h"
#include "bench_keys.h"
#include "mpikvs.h"
#include "job_config.h"
#include "names.h"
#include "size.h"

#define SUB          DHT_SUB
#define KEY_LEN      BENCH_KEY_LEN
#define VALUE_LEN    BENCH_VALUE_LEN
#define ZIPF_N       BENCH_ZIPF_N
#define ZIPF_THETA   BENCH_ZIPF_THETA
#define CHUNK        4096u                 /* ops made, then timed */
#define MAX_PAIRS    UINT64_C(1000000000)
#define MAX_OPS      UINT64_C(10000000000)
#define MAX_BATCH    UINT64_C(65536)
#define MAX_EPOCHS   UINT64_C(1000)
#define MAX_LATENCY  UINT64_C(10000000)
#define MAX_WORK_US  UINT64_C(1000000)         /* a second per op */
#define WRITE_EVERY  20u                   /* 1 op in 20 is a put: 5% */
#define SLOT_GUESS   200u                  /* bytes of a slot, about */
#define MIN_SIZE     (UINT64_C(64) << 20)

static const char *const dist_name[] = {"uniform", "zipf"};

enum phase { PHASE_WRITE, PHASE_READ, PHASE_MIXED, NPHASES };
static const char *const phase_name[NPHASES] = {"write", "read", "mixed"};

struct ctx {
    const struct dht_opts *o;
    mpikvs_t   *kvs;
    int         rank, np, nodes;
    bool        virtual_nodes;
    uint64_t    size_per_node;
    struct bench_zipf zipf;
    /* one chunk of ops: reads and writes apart, each group of --batch ops
     * has its reads, then its writes, contiguous */
    size_t         cap;                  /* ops in a chunk, k * batch */
    unsigned char *rkeys, *rexp, *rgot, *wkeys, *wvals;
    int           *status;
    uint32_t      *group_nr, *group_nw;
    uint64_t       mix_writes;           /* puts made so far in mixed */
};

/* What one rank measured in one phase. */
struct local {
    uint64_t ops, reads, writes, hits, misses, wrong;
    uint64_t busy_ns, wall_ns;
    uint64_t app_ns;      /* --work-us: timed chunks, work and calls */
};

/* What rank 0 prints for one phase. */
struct row {
    uint64_t       ops, reads, writes, hits, misses, wrong;
    double         seconds, wall_seconds, agg_ops_s, rank_ops_s;
    double         app_seconds;  /* --work-us: slowest rank's app_ns */
    double         efficiency;   /* --work-us: a fraction; -1: none */
    mpikvs_stats_t st;
};

/* ---- numbers ------------------------------------------------------------ */

/* Number i of rank r's pairs: what the write and read phases use. */
static inline uint64_t pair_number(const struct ctx *c, uint64_t r,
                                   uint64_t i)
{
    uint64_t d = bench_draw(bench_stream_base(c->o->seed, r,
                                              BENCH_STREAM_PAIRS), i);
    return c->o->dist == DIST_ZIPF ? bench_zipf_next(&c->zipf, d) : d;
}

static void fail(const struct ctx *c, const char *call, int rc)
{
    dht_fail(c->kvs, c->rank, call, rc);
}

/* ---- one phase ---------------------------------------------------------- */

/* Op j of a phase: is it a put, and of which number. */
static void next_op(struct ctx *c, enum phase ph, uint64_t j, bool *put,
                    uint64_t *x)
{
    const struct dht_opts *o = c->o;

    if (ph != PHASE_MIXED) {
        *put = ph == PHASE_WRITE;
        *x = pair_number(c, (uint64_t)c->rank, j);
        return;
    }
    uint64_t d = bench_draw(bench_stream_base(o->seed, (uint64_t)c->rank,
                                              BENCH_STREAM_MIX_OP), j);
    uint64_t k = bench_draw(bench_stream_base(o->seed, (uint64_t)c->rank,
                                              BENCH_STREAM_MIX_KEY), j);
    *put = bench_below(d, WRITE_EVERY) == 0;
    if (o->dist == DIST_ZIPF) {
        /* the paper's mixed load: fresh zipf draws, hot keys hit */
        *x = bench_zipf_next(&c->zipf, k);
    } else if (*put) {
        /* new pairs, continuing the rank's sequence */
        *x = pair_number(c, (uint64_t)c->rank, o->pairs + c->mix_writes++);
    } else {
        /* a pair some rank wrote in the write phase, uniformly: a fresh
         * 64-bit number would never be found */
        uint64_t r = bench_below(k, (uint64_t)c->np);
        *x = pair_number(c, r, bench_below(bench_mix64(k ^ BENCH_GOLDEN),
                                           o->pairs));
    }
}

/* Make ops j0 .. j0+n-1 into the chunk buffers (untimed). */
static size_t make_chunk(struct ctx *c, enum phase ph, uint64_t j0, size_t n,
                         size_t *nreads, size_t *nwrites)
{
    size_t b = (size_t)c->o->batch, ng = 0, nr = 0, nw = 0;

    for (size_t g0 = 0; g0 < n; g0 += b, ng++) {
        size_t end = g0 + b < n ? g0 + b : n;
        uint32_t gr = 0, gw = 0;
        for (size_t i = g0; i < end; i++) {
            bool put;
            uint64_t x;
            next_op(c, ph, j0 + i, &put, &x);
            if (put) {
                bench_make_key(x, c->wkeys + (nw + gw) * KEY_LEN);
                bench_make_value(c->wkeys + (nw + gw) * KEY_LEN,
                                 c->wvals + (nw + gw) * VALUE_LEN);
                gw++;
            } else {
                bench_make_key(x, c->rkeys + (nr + gr) * KEY_LEN);
                bench_make_value(c->rkeys + (nr + gr) * KEY_LEN,
                                 c->rexp + (nr + gr) * VALUE_LEN);
                gr++;
            }
        }
        c->group_nr[ng] = gr;
        c->group_nw[ng] = gw;
        nr += gr;
        nw += gw;
    }
    /* a hit must write its value: nothing of an earlier chunk stays */
    memset(c->rgot, 0, nr * VALUE_LEN);
    *nreads = nr;
    *nwrites = nw;
    return ng;
}

/* Group g's calls: its gets, then its puts; one op per group when
 * --batch is 1, through mpikvs_get or mpikvs_put. */
static inline void run_group(struct ctx *c, size_t g, size_t *ri, size_t *wi)
{
    size_t nr = c->group_nr[g], nw = c->group_nw[g];
    int rc;

    if (c->o->batch == 1) {
        if (nr) {
            rc = mpikvs_get(c->kvs, c->rkeys + *ri * KEY_LEN,
                            c->rgot + *ri * VALUE_LEN);
            if (rc < 0)
                fail(c, "mpikvs_get", rc);
            c->status[(*ri)++] = rc;
        } else {
            rc = mpikvs_put(c->kvs, c->wkeys + *wi * KEY_LEN,
                            c->wvals + *wi * VALUE_LEN);
            if (rc != MPIKVS_OK)
                fail(c, "mpikvs_put", rc);
            (*wi)++;
        }
        return;
    }
    if (nr) {
        rc = mpikvs_get_batch(c->kvs, nr, c->rkeys + *ri * KEY_LEN,
                              c->rgot + *ri * VALUE_LEN, c->status + *ri);
        if (rc != MPIKVS_OK)
            fail(c, "mpikvs_get_batch", rc);
        *ri += nr;
    }
    if (nw) {
        rc = mpikvs_put_batch(c->kvs, nw, c->wkeys + *wi * KEY_LEN,
                              c->wvals + *wi * VALUE_LEN);
        if (rc != MPIKVS_OK)
            fail(c, "mpikvs_put_batch", rc);
        *wi += nw;
    }
}

/* Group g with --async: its batches started, the group's work_ns per op
 * done while they are in flight (none without --work-us), then waited
 * for.  Returns the time inside the calls; *t: the clock after them. */
static uint64_t run_group_async(struct ctx *c, size_t g, size_t *ri,
                                size_t *wi, uint64_t work_ns, uint64_t *t)
{
    size_t nr = c->group_nr[g], nw = c->group_nw[g];
    mpikvs_request_t rq = {0}, wq = {0};
    uint64_t t0 = bench_now_ns(), calls, until;
    int rc;

    if (nr && (rc = mpikvs_get_batch_start(c->kvs, nr,
                                           c->rkeys + *ri * KEY_LEN,
                                           c->rgot + *ri * VALUE_LEN,
                                           c->status + *ri, &rq)) < 0)
        fail(c, "mpikvs_get_batch_start", rc);
    if (nw && (rc = mpikvs_put_batch_start(c->kvs, nw,
                                           c->wkeys + *wi * KEY_LEN,
                                           c->wvals + *wi * VALUE_LEN,
                                           &wq)) < 0)
        fail(c, "mpikvs_put_batch_start", rc);
    *t = bench_now_ns();
    calls = *t - t0;
    until = *t + work_ns * (nr + nw);
    while ((*t = bench_now_ns()) < until)
        ;
    t0 = *t;
    if (nr && (rc = mpikvs_wait(c->kvs, &rq)) != MPIKVS_OK)
        fail(c, "mpikvs_wait (get batch)", rc);
    if (nw && (rc = mpikvs_wait(c->kvs, &wq)) != MPIKVS_OK)
        fail(c, "mpikvs_wait (put batch)", rc);
    *t = bench_now_ns();
    *ri += nr;
    *wi += nw;
    return calls + (*t - t0);
}

/* The timed part: every group's calls; their time. */
static uint64_t run_chunk(struct ctx *c, size_t ngroups)
{
    size_t ri = 0, wi = 0;

    uint64_t t0 = bench_now_ns(), t;
    for (size_t g = 0; g < ngroups; g++) {
        if (c->o->async)
            run_group_async(c, g, &ri, &wi, 0, &t);
        else
            run_group(c, g, &ri, &wi);
    }
    return bench_now_ns() - t0;
}

/* The timed part with --work-us: before each group, work_ns of
 * computation per op of the group, a busy loop on the clock that calls
 * neither MPI nor the library (what a rank between two lookups does).
 * Returns the time of the calls alone; *all gets the chunk's time, work
 * included.  The clock read that ends a loop starts the calls' timing,
 * and the one after the calls starts the next loop. */
static uint64_t run_chunk_work(struct ctx *c, size_t ngroups,
                               uint64_t work_ns, uint64_t *all)
{
    size_t ri = 0, wi = 0;
    uint64_t calls = 0, t0 = bench_now_ns(), t = t0;

    for (size_t g = 0; g < ngroups; g++) {
        if (c->o->async) {
            calls += run_group_async(c, g, &ri, &wi, work_ns, &t);
            continue;
        }
        uint64_t until = t + work_ns * (c->group_nr[g] + c->group_nw[g]);
        while ((t = bench_now_ns()) < until)
            ;
        run_group(c, g, &ri, &wi);
        uint64_t after = bench_now_ns();
        calls += after - t;
        t = after;
    }
    *all = t - t0;
    return calls;
}

/* Count hits, misses and wrong values of the chunk's gets (untimed). */
static void check_chunk(const struct ctx *c, size_t nreads, struct local *l)
{
    for (size_t i = 0; i < nreads; i++) {
        if (c->status[i] == MPIKVS_OK) {
            l->hits++;
            if (memcmp(c->rgot + i * VALUE_LEN, c->rexp + i * VALUE_LEN,
                       VALUE_LEN) != 0)
                l->wrong++;
        } else if (c->status[i] == MPIKVS_MISS) {
            l->misses++;
        } else {
            fail(c, "mpikvs_get_batch (status of a key)", c->status[i]);
        }
    }
}

static void run_phase(struct ctx *c, enum phase ph, struct local *l)
{
    uint64_t n = ph == PHASE_MIXED ? c->o->ops : c->o->pairs;

    memset(l, 0, sizeof *l);
    c->mix_writes = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t start = bench_now_ns();
    for (uint64_t j = 0; j < n; j += c->cap) {
        size_t len = n - j < c->cap ? (size_t)(n - j) : c->cap;
        size_t nr, nw;
        size_t ng = make_chunk(c, ph, j, len, &nr, &nw);
        if (ph == PHASE_MIXED && c->o->work_us) {
            uint64_t all;
            l->busy_ns += run_chunk_work(c, ng, c->o->work_us * 1000u, &all);
            l->app_ns += all;
        } else {
            l->busy_ns += run_chunk(c, ng);
        }
        check_chunk(c, nr, l);
        l->reads += nr;
        l->writes += nw;
    }
    l->wall_ns = bench_now_ns() - start;
    l->ops = n;
}

/* ---- figures of the job ------------------------------------------------- */

static void job_stats(struct ctx *c, mpikvs_stats_t *st)
{
    dht_job_stats(c->kvs, c->rank, st);
}

/* Combine the ranks' figures of a phase on rank 0. */
static void reduce_phase(const struct ctx *c, const struct local *l,
                         struct row *r)
{
    uint64_t sums[6] = {l->ops, l->reads, l->writes, l->hits, l->misses,
                        l->wrong};
    uint64_t tot[6], times[3] = {l->busy_ns, l->wall_ns, l->app_ns};
    uint64_t tmax[3];
    double rate = l->busy_ns ? (double)l->ops * 1e9 / (double)l->busy_ns
                             : 0.0, rate_sum;

    MPI_Reduce(sums, tot, 6, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(times, tmax, 3, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rate, &rate_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (c->rank != 0)
        return;
    r->ops = tot[0];
    r->reads = tot[1];
    r->writes = tot[2];
    r->hits = tot[3];
    r->misses = tot[4];
    r->wrong = tot[5];
    r->seconds = (double)tmax[0] * 1e-9;
    r->wall_seconds = (double)tmax[1] * 1e-9;
    r->app_seconds = (double)tmax[2] * 1e-9;
    r->efficiency = -1.0;
    r->agg_ops_s = tmax[0] ? (double)r->ops / r->seconds : 0.0;
    r->rank_ops_s = rate_sum / (double)c->np;
}

/* Bucket memory per node: twice the bytes of every pair the run may
 * store, spread over the nodes (dht_nodes_to_size_for before the open);
 * at least 64 MiB, in whole MiB. */
static uint64_t default_size(const struct ctx *c)
{
    const struct dht_opts *o = c->o;
    uint64_t per_rank = o->pairs +
                        (o->ops + WRITE_EVERY - 1) / WRITE_EVERY;
    uint64_t keys = per_rank * (uint64_t)c->np;

    if (o->dist == DIST_ZIPF && keys > ZIPF_N)
        keys = ZIPF_N;
    uint64_t bytes = keys * SLOT_GUESS * 2 / (uint64_t)c->nodes;
    bytes = (bytes + (UINT64_C(1) << 20) - 1) & ~((UINT64_C(1) << 20) - 1);
    return bytes < MIN_SIZE ? MIN_SIZE : bytes;
}

/* --work-us: the share of the slowest rank's time that the job spent
 * computing, ops x N / (ranks x that time), a fraction; -1 without. */
static double efficiency(const struct ctx *c, const struct row *r)
{
    if (!c->o->work_us || r->app_seconds <= 0)
        return -1.0;
    return (double)r->ops * (double)c->o->work_us * 1e-6 /
           ((double)c->np * r->app_seconds);
}

/* ---- the latency of one remote get -------------------------------------- */

/* What rank 0 measured in the remote-get pass. */
struct remote_lat {
    bool     one_node;        /* no key has another home: not run */
    uint64_t gets, tried, misses, wrong;
    double   mean_us, median_us, p99_us;
};

/* --remote-gets N: rank 0 alone gets pairs of the write phase (any
 * rank's, drawn after the mixed phase's draws) one mpikvs_get at a time,
 * each between two clock reads, until N of them went to another node
 * (the rank's "remote" counter moved; the counters are read outside the
 * timed code; its own node's gets are left out).  The other ranks wait
 * in MPI_Barrier meanwhile: idle, as in MPI, not computing (--work-us
 * measures that).  Collective; 0 or BENCH_EXIT_FAIL (reported). */
static int remote_get_pass(struct ctx *c, struct remote_lat *out)
{
    uint64_t n = c->o->remote_gets, cap = n * 64 + 1000;
    double *us = NULL;
    int ok = 1, all_ok;

    memset(out, 0, sizeof *out);
    if (c->nodes < 2) {
        out->one_node = true;
        return 0;
    }
    if (c->rank == 0 && !(us = malloc(n * sizeof *us)))
        ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "%s: %s: rank 0: cannot allocate %llu latency "
                            "samples: %s (use a smaller --remote-gets)\n",
                    BENCH_PROG, SUB, (unsigned long long)n,
                    strerror(ENOMEM));
        return BENCH_EXIT_FAIL;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0) {
        uint64_t base = bench_stream_base(c->o->seed, 0,
                                          BENCH_STREAM_MIX_KEY);
        unsigned char key[KEY_LEN], want[VALUE_LEN], got[VALUE_LEN];
        mpikvs_stats_t before, after;
        int rc;

        if ((rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_RANK, &before,
                               sizeof before)) !=
            MPIKVS_OK)
            fail(c, "mpikvs_stats", rc);
        for (uint64_t i = 0; out->gets < n && i < cap; i++) {
            uint64_t k = bench_draw(base, c->o->ops + i);
            uint64_t r = bench_below(k, (uint64_t)c->np);
            bench_make_key(pair_number(c, r, bench_below(
                               bench_mix64(k ^ BENCH_GOLDEN), c->o->pairs)),
                           key);
            bench_make_value(key, want);
            memset(got, 0, sizeof got);
            uint64_t t0 = bench_now_ns();
            int got_rc = mpikvs_get(c->kvs, key, got);
            uint64_t t1 = bench_now_ns();
            if (got_rc < 0)
                fail(c, "mpikvs_get", got_rc);
            if ((rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_RANK, &after,
                                   sizeof after)) !=
                MPIKVS_OK)
                fail(c, "mpikvs_stats", rc);
            bool remote = after.remote != before.remote;
            before = after;
            out->tried++;
            if (!remote)
                continue;
            us[out->gets++] = (double)(t1 - t0) * 1e-3;
            if (got_rc == MPIKVS_MISS)      /* evicted */
                out->misses++;
            else if (memcmp(got, want, VALUE_LEN) != 0)
                out->wrong++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0 && out->gets) {
        double sum = 0;
        for (uint64_t i = 0; i < out->gets; i++)
            sum += us[i];
        bench_sort_double(us, out->gets);
        out->mean_us = sum / (double)out->gets;
        out->median_us = bench_median_double(us, out->gets);
        size_t p = (size_t)ceil(0.99 * (double)out->gets);
        out->p99_us = us[p ? p - 1 : 0];
    }
    free(us);
    return 0;
}

/* ---- output ------------------------------------------------------------- */

static double direct_fraction(const mpikvs_stats_t *s)
{
    uint64_t n = s->direct + s->remote;
    return n ? (double)s->direct / (double)n : -1.0;
}

static void print_table(const struct ctx *c, const struct row *rows,
                        const struct remote_lat *lat)
{
    const struct dht_opts *o = c->o;
    char size[48];

    dht_size_text(c->size_per_node, size, sizeof size);
    printf("# %s %s dht: np=%d nodes=%d%s mode=%s transport=%s dist=%s "
           "batch=%llu%s\n",
           BENCH_PROG, PACKAGE_VERSION, c->np, c->nodes,
           c->virtual_nodes ? " (virtual)" : "", o->mode,
           mpikvs_transport(c->kvs), dist_name[o->dist],
           (unsigned long long)o->batch, o->async ? " async" : "");
    printf("# per rank: %llu pairs written and read back, %llu mixed ops "
           "(95%% gets, 5%% puts); %u-byte keys, %u-byte values; buckets "
           "per node: %s; seed %llu\n",
           (unsigned long long)o->pairs, (unsigned long long)o->ops,
           KEY_LEN, VALUE_LEN, size, (unsigned long long)o->seed);
    if (o->dist == DIST_ZIPF)
        printf("# keys: zipf, skew %.2f over 1..%llu\n", ZIPF_THETA,
               (unsigned long long)ZIPF_N);
    else
        printf("# keys: uniform 64-bit numbers; mixed gets draw from the "
               "pairs of all ranks\n");
    printf("# time: each rank's time inside mpikvs calls; agg = all ops / "
           "slowest rank's time, rank = mean of the ranks' ops/s\n");
    if (o->work_us)
        printf("# work: %llu us of computation (a busy loop on the clock, "
               "no MPI or mpikvs call) before each mixed op; efficiency = "
               "ops x %llu us / (ranks x slowest rank's time of work and "
               "calls), in percent\n",
               (unsigned long long)o->work_us,
               (unsigned long long)o->work_us);
    printf("# probes: slots a lookup read past its bucket's header (their "
           "tag was the key's) per lookup; a lookup reads the header's "
           "cache line and the lines of each slot it probes\n");
    printf("%-5s %12s %9s %10s %11s %9s %6s %8s %8s %10s %7s%s %6s\n",
           "phase", "ops", "seconds", "agg_Mop/s", "rank_Mop/s", "hit_rate",
           "wrong", "retries", "invalid", "evictions", "direct",
           o->work_us ? " efficiency" : "", "probes");
    for (int p = 0; p < NPHASES; p++) {
        const struct row *r = &rows[p];
        char hit[16], wrong[24], direct[16], probes[16];
        double df = direct_fraction(&r->st);
        if (r->reads) {
            snprintf(hit, sizeof hit, "%.2f%%",
                     100.0 * (double)r->hits / (double)r->reads);
            snprintf(wrong, sizeof wrong, "%llu",
                     (unsigned long long)r->wrong);
        } else {
            snprintf(hit, sizeof hit, "-");
            snprintf(wrong, sizeof wrong, "-");
        }
        if (df >= 0)
            snprintf(direct, sizeof direct, "%.1f%%", 100.0 * df);
        else
            snprintf(direct, sizeof direct, "-");
        printf("%-5s %12llu %9.3f %10.3f %11.3f %9s %6s %8llu %8llu %10llu "
               "%7s", phase_name[p], (unsigned long long)r->ops,
               r->seconds, r->agg_ops_s * 1e-6, r->rank_ops_s * 1e-6, hit,
               wrong, (unsigned long long)r->st.checksum_retries,
               (unsigned long long)r->st.invalidations,
               (unsigned long long)r->st.evictions, direct);
        if (o->work_us && r->efficiency >= 0)
            printf(" %9.1f%%", 100.0 * r->efficiency);
        else if (o->work_us)
            printf(" %10s", "-");
        if (r->st.gets)
            snprintf(probes, sizeof probes, "%.3f",
                     (double)r->st.probes / (double)r->st.gets);
        else
            snprintf(probes, sizeof probes, "-");
        printf(" %6s\n", probes);
    }
    if (!lat)
        return;
    printf("# remote get: rank 0 alone, one mpikvs_get at a time of a key "
           "homed on another node, each timed on its own; the other ranks "
           "wait in MPI_Barrier\n");
    if (lat->one_node)
        printf("remote_get: - (one node: no key has another home)\n");
    else if (!lat->gets)
        printf("remote_get: - (none of %llu gets went to another node)\n",
               (unsigned long long)lat->tried);
    else
        printf("remote_get: gets %llu mean_us %.3f median_us %.3f p99_us "
               "%.3f misses %llu wrong %llu\n",
               (unsigned long long)lat->gets, lat->mean_us, lat->median_us,
               lat->p99_us, (unsigned long long)lat->misses,
               (unsigned long long)lat->wrong);
}

static void json_u64(const char *name, uint64_t v, bool comma)
{
    printf("      \"%s\": %llu%s\n", name, (unsigned long long)v,
           comma ? "," : "");
}

static void print_json(const struct ctx *c, const struct row *rows,
                       const struct remote_lat *lat)
{
    const struct dht_opts *o = c->o;

    printf("{\n  \"benchmark\": \"dht\",\n  \"version\": \"%s\",\n",
           PACKAGE_VERSION);
    printf("  \"np\": %d,\n  \"nodes\": %d,\n  \"virtual_nodes\": %s,\n",
           c->np, c->nodes, c->virtual_nodes ? "true" : "false");
    printf("  \"mode\": \"%s\",\n  \"transport\": \"%s\",\n"
           "  \"dist\": \"%s\",\n",
           o->mode, mpikvs_transport(c->kvs), dist_name[o->dist]);
    if (o->dist == DIST_ZIPF)
        printf("  \"zipf\": {\"skew\": %.2f, \"n\": %llu},\n", ZIPF_THETA,
               (unsigned long long)ZIPF_N);
    else
        printf("  \"zipf\": null,\n");
    printf("  \"batch\": %llu,\n  \"async\": %s,\n  \"pairs\": %llu,\n"
           "  \"ops\": %llu,\n"
           "  \"key_bytes\": %u,\n  \"value_bytes\": %u,\n"
           "  \"size_per_node\": %llu,\n  \"seed\": %llu,\n",
           (unsigned long long)o->batch, o->async ? "true" : "false",
           (unsigned long long)o->pairs,
           (unsigned long long)o->ops, KEY_LEN, VALUE_LEN,
           (unsigned long long)c->size_per_node,
           (unsigned long long)o->seed);
    printf("  \"timer\": {\"source\": \"clock_monotonic\"},\n");
    printf("  \"work_us\": %llu,\n", (unsigned long long)o->work_us);
    printf("  \"phases\": [\n");
    for (int p = 0; p < NPHASES; p++) {
        const struct row *r = &rows[p];
        double df = direct_fraction(&r->st);
        printf("    {\n      \"phase\": \"%s\",\n", phase_name[p]);
        json_u64("ops", r->ops, true);
        json_u64("gets", r->reads, true);
        json_u64("puts", r->writes, true);
        printf("      \"seconds\": %.6f,\n      \"wall_seconds\": %.6f,\n"
               "      \"aggregate_ops_per_s\": %.1f,\n"
               "      \"rank_ops_per_s\": %.1f,\n",
               r->seconds, r->wall_seconds, r->agg_ops_s, r->rank_ops_s);
        json_u64("hits", r->hits, true);
        json_u64("misses", r->misses, true);
        if (r->reads)
            printf("      \"hit_rate\": %.6f,\n",
                   (double)r->hits / (double)r->reads);
        else
            printf("      \"hit_rate\": null,\n");
        json_u64("wrong", r->wrong, true);
        /* the DHT's counters (mpikvs_statistics.h), by their field names */
        const char *sep = "";
        printf("      \"stats\": {");
#define JSON_COUNTER(name, label, text)                                 \
        printf("%s\"" #name "\": %llu", sep,                            \
               (unsigned long long)r->st.name);                         \
        sep = ", ";
        MPIKVS_STATISTICS_DHT(JSON_COUNTER)
#undef JSON_COUNTER
        printf("},\n");
        if (df >= 0)
            printf("      \"direct_fraction\": %.6f,\n", df);
        else
            printf("      \"direct_fraction\": null,\n");
        /* --work-us, mixed phase: a fraction, as hit_rate */
        if (r->efficiency >= 0)
            printf("      \"efficiency\": %.6f\n", r->efficiency);
        else
            printf("      \"efficiency\": null\n");
        printf("    }%s\n", p + 1 < NPHASES ? "," : "");
    }
    printf("  ],\n");
    if (lat && lat->gets)
        printf("  \"remote_get\": {\"gets\": %llu, \"mean_us\": %.3f, "
               "\"median_us\": %.3f, \"p99_us\": %.3f, \"misses\": %llu, "
               "\"wrong\": %llu}\n}\n",
               (unsigned long long)lat->gets, lat->mean_us, lat->median_us,
               lat->p99_us, (unsigned long long)lat->misses,
               (unsigned long long)lat->wrong);
    else
        printf("  \"remote_get\": null\n}\n");
}

/* ---- options ------------------------------------------------------------ */

static void dht_usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun [-np N] %s dht [options]\n"
"The DHT paper's synthetic benchmark on libmpikvs: every rank writes its\n"
"pairs, reads them back, then runs a mixed load of 95%% gets, 5%% puts.\n"
"80-byte keys, 104-byte values derived from the keys and checked.\n"
"\n"
"  --pairs N        pairs each rank writes and reads (default 100000)\n"
"  --ops M          operations of each rank's mixed phase (default: N)\n"
"  --mode MODE      lockfree, fine-lock or coarse-lock (default lockfree)\n"
"  --dist DIST      keys uniform or zipf (skew 0.99 over 1..712500);\n"
"                   default uniform\n"
"  --batch K        K keys per mpikvs_get_batch/put_batch call; 1 (the\n"
"                   default) uses mpikvs_get and mpikvs_put\n"
"  --size BYTES     bucket memory per node, e.g. 256M or 2G; 0 takes the\n"
"                   job's (default: twice what the pairs need, >= 64M)\n"
"  --seed N         seed of the random numbers (default 1)\n"
"  --work-us N      N microseconds of computation (a busy loop, no MPI\n"
"                   or mpikvs call) before each mixed op, and the\n"
"                   phase's efficiency: ops x N / (ranks x wall time)\n"
"                   (default 0: none)\n"
"  --async          start each batch (mpikvs_get_batch_start and\n"
"                   mpikvs_put_batch_start), do --work-us work while it\n"
"                   is in flight, then mpikvs_wait; needs --batch K >= 2\n"
"  --remote-gets G  after the phases, rank 0 alone times G single gets\n"
"                   of keys homed on another node while the others wait\n"
"                   in MPI_Barrier; mean, median, p99 (default 0: none)\n"
"  --transport T    auto, mpi or ucx: options.transport (default: the\n"
"                   library's choice, see mpikvs(3))\n"
"  --json           print one JSON document instead of the table\n"
"  -h, --help       print this and exit\n"
"\n"
"With --value-size: large values.  For each size, a table of its own,\n"
"filled by every rank; then rank 0 alone times single gets of keys of\n"
"another node while the others wait without spinning, and prints the\n"
"bytes moved and the copies per get (the library's statistics), a\n"
"memcpy of the size from cold memory and an MPI ping-pong that moves\n"
"the size one way, and the get's ratios to them.\n"
"  --value-size N[,N...]  value sizes, e.g. 1K,16K,64K,1M\n"
"  --slots S        slots per bucket (default 4)\n"
"  --far-read R     auto, bucket or slot: the table's far_read (default\n"
"                   auto: left to the library)\n"
"  --pairs N        pairs each rank puts (default: a quarter of the slots)\n"
"  --remote-gets G  timed gets and ping-pong rounds (default 2000)\n"
"  --size BYTES     bucket memory per node (default 256M, or 16 buckets)\n"
"  --mode, --seed, --transport  as above\n"
"\n"
"With --tier: the node tier.  Every key 1..K is written once, then\n"
"epochs of zipf gets (skew 0.99 over 1..K) with mpikvs_fence between\n"
"them; per epoch: remote gets, tier hits, published entries; then the\n"
"latency of a tier hit against a remote get.  --pairs, --batch and\n"
"--dist uniform do not apply.\n"
"  --tier           run the node tier benchmark\n"
"  --epochs E       epochs of reads (default 5)\n"
"  --ops M          zipf gets of each rank in each epoch (default 100000)\n"
"  --keys K         keys written, and the zipf range (default 712500)\n"
"  --latency L      gets of each rank timed one by one after the last\n"
"                   epoch (default 20000; 0: none)\n"
"  --tier-size S    the tier's share of the table, e.g. 25%% or 64M\n"
"                   (default 25%%; temporary config only)\n"
"  --config FILE    a job config whose table has 80-byte keys, 104-byte\n"
"                   values and a tier (default: $MPIKVS_CONFIG, else a\n"
"                   temporary one; under spank_mpikvs the job's)\n"
"  --table NAME     the config's table (default: its first)\n"
"  --size BYTES     the table's memory per node, tier included (default:\n"
"                   four slots of room per key, >= 64M)\n"
"  --transport T    as without --tier\n"
"\nAcross nodes (or MPIKVS_VIRTUAL_NODES) and in the lock modes, the mpi\n"
"transport needs, under Open MPI, OMPI_MCA_osc=pt2pt or ucx.  See\n"
"mpikvs-bench(1).\n",
            BENCH_PROG);
}

enum { OPT_PAIRS = 256, OPT_OPS, OPT_MODE, OPT_DIST, OPT_BATCH, OPT_SIZE,
       OPT_SEED, OPT_JSON, OPT_TIER, OPT_EPOCHS, OPT_KEYS, OPT_LATENCY,
       OPT_TIER_SIZE, OPT_CONFIG, OPT_TABLE, OPT_TRANSPORT, OPT_WORK_US,
       OPT_REMOTE_GETS, OPT_ASYNC, OPT_VALUE_SIZE, OPT_SLOTS, OPT_FAR_READ,
       OPT_LAST = OPT_FAR_READ };

/* Options that mean something in one of the two runs only. */
static int dht_check_combination(struct dht_opts *o, const bool *given)
{
    static const struct { int opt; const char *name; } tier_only[] = {
        {OPT_EPOCHS, "--epochs"}, {OPT_KEYS, "--keys"},
        {OPT_LATENCY, "--latency"}, {OPT_TIER_SIZE, "--tier-size"},
        {OPT_CONFIG, "--config"}, {OPT_TABLE, "--table"},
    };
    static const struct { int opt; const char *name, *why; } not_tier[] = {
        {OPT_PAIRS, "--pairs", "every key 1..K is written once: use --keys"},
        {OPT_BATCH, "--batch", "the gets are single mpikvs_get calls, so "
                               "that each can be timed and classified"},
        {OPT_WORK_US, "--work-us", "it applies to the mixed phase"},
        {OPT_REMOTE_GETS, "--remote-gets", "--latency times the remote "
                                           "gets there"},
        {OPT_ASYNC, "--async", "its gets are single calls"},
    };

    static const struct { int opt; const char *name; } large_only[] = {
        {OPT_SLOTS, "--slots"}, {OPT_FAR_READ, "--far-read"},
    };
    static const struct { int opt; const char *name, *why; } not_large[] = {
        {OPT_TIER, "--tier", "it has its own table"},
        {OPT_OPS, "--ops", "there is no mixed phase"},
        {OPT_BATCH, "--batch", "the gets are single mpikvs_get calls, so "
                               "that each can be timed"},
        {OPT_DIST, "--dist", "the gets read keys of another node"},
        {OPT_WORK_US, "--work-us", "there is no mixed phase"},
        {OPT_ASYNC, "--async", "its gets are single calls"},
        {OPT_JSON, "--json", "it prints lines of names and numbers"},
    };

    if (o->nvalue_sizes) {
        for (size_t i = 0; i < sizeof not_large / sizeof not_large[0]; i++)
            if (given[not_large[i].opt - OPT_PAIRS]) {
                fprintf(stderr, "%s: %s: %s does not apply with "
                                "--value-size: %s\n", BENCH_PROG, SUB,
                        not_large[i].name, not_large[i].why);
                return -1;
            }
    } else {
        for (size_t i = 0; i < sizeof large_only / sizeof large_only[0]; i++)
            if (given[large_only[i].opt - OPT_PAIRS]) {
                fprintf(stderr, "%s: %s: %s applies only with "
                                "--value-size\n", BENCH_PROG, SUB,
                        large_only[i].name);
                return -1;
            }
    }
    if (!o->tier) {
        if (o->async && o->batch < 2) {
            fprintf(stderr, "%s: %s: --async starts batches: give --batch "
                            "K with K of 2 or more\n", BENCH_PROG, SUB);
            return -1;
        }
        for (size_t i = 0; i < sizeof tier_only / sizeof tier_only[0]; i++)
            if (given[tier_only[i].opt - OPT_PAIRS]) {
                fprintf(stderr, "%s: %s: %s applies only with --tier\n",
                        BENCH_PROG, SUB, tier_only[i].name);
                return -1;
            }
        return 0;
    }
    for (size_t i = 0; i < sizeof not_tier / sizeof not_tier[0]; i++)
        if (given[not_tier[i].opt - OPT_PAIRS]) {
            fprintf(stderr, "%s: %s: %s does not apply with --tier: %s\n",
                    BENCH_PROG, SUB, not_tier[i].name, not_tier[i].why);
            return -1;
        }
    if (o->dist != DIST_ZIPF && given[OPT_DIST - OPT_PAIRS]) {
        fprintf(stderr, "%s: %s: --dist uniform does not apply with "
                        "--tier: its reads are zipf, the skewed reads a "
                        "tier is for\n", BENCH_PROG, SUB);
        return -1;
    }
    o->dist = DIST_ZIPF;
    o->tier_size_given = given[OPT_TIER_SIZE - OPT_PAIRS];
    if (o->tier_size_given && o->config) {
        fprintf(stderr, "%s: %s: --tier-size applies to the temporary "
                        "config only: the table of %s sets its tier's "
                        "size\n", BENCH_PROG, SUB, o->config);
        return -1;
    }
    return 0;
}

/* 0: run, 1: --help was printed, -1: bad usage (reported).  Every rank
 * comes to the same answer: nothing here depends on the rank. */
static int dht_options(int argc, char **argv, struct dht_opts *o,
                       bool speak)
{
    static const struct option longopts[] = {
        {"pairs", required_argument, NULL, OPT_PAIRS},
        {"ops", required_argument, NULL, OPT_OPS},
        {"mode", required_argument, NULL, OPT_MODE},
        {"dist", required_argument, NULL, OPT_DIST},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"size", required_argument, NULL, OPT_SIZE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", no_argument, NULL, OPT_JSON},
        {"tier", no_argument, NULL, OPT_TIER},
        {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"keys", required_argument, NULL, OPT_KEYS},
        {"latency", required_argument, NULL, OPT_LATENCY},
        {"tier-size", required_argument, NULL, OPT_TIER_SIZE},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"table", required_argument, NULL, OPT_TABLE},
        {"transport", required_argument, NULL, OPT_TRANSPORT},
        {"work-us", required_argument, NULL, OPT_WORK_US},
        {"remote-gets", required_argument, NULL, OPT_REMOTE_GETS},
        {"async", no_argument, NULL, OPT_ASYNC},
        {"value-size", required_argument, NULL, OPT_VALUE_SIZE},
        {"slots", required_argument, NULL, OPT_SLOTS},
        {"far-read", required_argument, NULL, OPT_FAR_READ},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mpikvs_error_t err;
    bool given[OPT_LAST - OPT_PAIRS + 1] = {false};
    int c, bad = 0;

    *o = (struct dht_opts){.pairs = 100000, .batch = 1, .seed = 1,
                           .dist = DIST_UNIFORM, .mode = "lockfree",
                           .epochs = 5, .keys = ZIPF_N, .latency = 20000,
                           .tier_size = "25%", .tier_fraction = 0.25,
                           .slots = DHT_LARGE_SLOTS,
                           .far_read = KVSHM_FAR_READ_AUTO};
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c >= OPT_PAIRS && c <= OPT_LAST)
            given[c - OPT_PAIRS] = true;
        switch (c) {
        case OPT_PAIRS:
            bad = bench_parse_u64(SUB, "--pairs", optarg, 1, MAX_PAIRS,
                                  &o->pairs);
            break;
        case OPT_OPS:
            bad = bench_parse_u64(SUB, "--ops", optarg, 1, MAX_OPS, &o->ops);
            break;
        case OPT_MODE:
            o->mode = optarg;
            o->mode_given = true;
            if (kvshm_mode_parse(optarg, &(enum kvshm_mode){0}) != MPIKVS_OK) {
                char list[64];
                fprintf(stderr, "%s: %s: invalid value '%s' for --mode: "
                                "expected one of %s\n", BENCH_PROG, SUB,
                        optarg, kvshm_mode_list(list, sizeof(list)));
                bad = -1;
            }
            break;
        case OPT_DIST:
            if (!strcmp(optarg, "uniform")) {
                o->dist = DIST_UNIFORM;
            } else if (!strcmp(optarg, "zipf")) {
                o->dist = DIST_ZIPF;
            } else {
                fprintf(stderr, "%s: %s: invalid value '%s' for --dist: "
                                "expected uniform or zipf\n",
                        BENCH_PROG, SUB, optarg);
                bad = -1;
            }
            break;
        case OPT_BATCH:
            bad = bench_parse_u64(SUB, "--batch", optarg, 1, MAX_BATCH,
                                  &o->batch);
            break;
        case OPT_SIZE:
            if (kvshm_parse_size(optarg, "--size", 0, &o->size, &err) !=
                MPIKVS_OK) {
                fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, err.text);
                bad = -1;
            }
            o->size_given = true;
            break;
        case OPT_SEED:
            bad = bench_parse_u64(SUB, "--seed", optarg, 0, UINT64_MAX,
                                  &o->seed);
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_TIER:
            o->tier = true;
            break;
        case OPT_EPOCHS:
            bad = bench_parse_u64(SUB, "--epochs", optarg, 1, MAX_EPOCHS,
                                  &o->epochs);
            break;
        case OPT_KEYS:
            bad = bench_parse_u64(SUB, "--keys", optarg, 1, MAX_PAIRS,
                                  &o->keys);
            break;
        case OPT_LATENCY:
            bad = bench_parse_u64(SUB, "--latency", optarg, 0, MAX_LATENCY,
                                  &o->latency);
            break;
        case OPT_TIER_SIZE:
            o->tier_size = optarg;
            if (kvshm_parse_share(optarg, "--tier-size", &o->tier_bytes,
                                  &o->tier_fraction, &err) != MPIKVS_OK) {
                fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, err.text);
                bad = -1;
            } else if (o->tier_fraction >= 1.0 ||
                       (o->tier_bytes == 0 && o->tier_fraction <= 0.0)) {
                fprintf(stderr, "%s: %s: invalid value '%s' for "
                                "--tier-size: expected a share below 100%% "
                                "(the buckets need the rest) or a size\n",
                        BENCH_PROG, SUB, optarg);
                bad = -1;
            }
            break;
        case OPT_CONFIG:
            o->config = optarg;
            break;
        case OPT_TABLE:
            o->table = optarg;
            break;
        case OPT_TRANSPORT:
            /* the library judges the name: its message says what it
             * accepts, here as everywhere else */
            o->transport = optarg;
            break;
        case OPT_WORK_US:
            bad = bench_parse_u64(SUB, "--work-us", optarg, 0, MAX_WORK_US,
                                  &o->work_us);
            break;
        case OPT_REMOTE_GETS:
            bad = bench_parse_u64(SUB, "--remote-gets", optarg, 0,
                                  MAX_LATENCY, &o->remote_gets);
            break;
        case OPT_ASYNC:
            o->async = true;
            break;
        case OPT_VALUE_SIZE:
            bad = dht_large_parse_sizes(optarg, o->value_sizes,
                                        &o->nvalue_sizes);
            break;
        case OPT_SLOTS:
            bad = bench_parse_u64(SUB, "--slots", optarg, 1, KVSHM_SLOTS_MAX,
                                  &o->slots);
            break;
        case OPT_FAR_READ:
            if (kvshm_far_read_parse(optarg, &o->far_read) != MPIKVS_OK) {
                char names[64];
                fprintf(stderr, "%s: %s: invalid value '%s' for --far-read: "
                                "expected one of %s\n",
                        BENCH_PROG, SUB, optarg,
                        kvshm_far_read_list(names, sizeof(names)));
                bad = -1;
            }
            break;
        case 'h':
            if (speak)
                dht_usage(stdout);
            return 1;
        default:
            return bench_bad_option(SUB, c, argv);
        }
    }
    if (bad)
        return -1;
    if (bench_no_operands(SUB, argc, argv))
        return -1;
    if (dht_check_combination(o, given))
        return -1;
    if (!given[OPT_OPS - OPT_PAIRS])
        o->ops = o->tier ? 100000 : o->pairs;
    o->pairs_given = given[OPT_PAIRS - OPT_PAIRS];
    o->remote_gets_given = given[OPT_REMOTE_GETS - OPT_PAIRS];
    return 0;
}

/* Parse on every rank; only rank 0's messages reach stderr. */
static int parse_quietly(int argc, char **argv, struct dht_opts *o,
                         bool speak)
{
    int saved = bench_stderr_mute(!speak);
    int rc = dht_options(argc, argv, o, speak);

    bench_stderr_restore(saved);
    return rc;
}

/* ---- the subcommand ----------------------------------------------------- */

/* Buffers of one chunk; false when memory is short. */
static bool alloc_chunk(struct ctx *c)
{
    size_t b = (size_t)c->o->batch;

    c->cap = b >= CHUNK ? b : b * (CHUNK / b);
    size_t ng = (c->cap + b - 1) / b;
    c->rkeys = malloc(c->cap * KEY_LEN);
    c->wkeys = malloc(c->cap * KEY_LEN);
    c->rexp = malloc(c->cap * VALUE_LEN);
    c->rgot = malloc(c->cap * VALUE_LEN);
    c->wvals = malloc(c->cap * VALUE_LEN);
    c->status = malloc(c->cap * sizeof *c->status);
    c->group_nr = malloc(ng * sizeof *c->group_nr);
    c->group_nw = malloc(ng * sizeof *c->group_nw);
    return c->rkeys && c->wkeys && c->rexp && c->rgot && c->wvals &&
           c->status && c->group_nr && c->group_nw;
}

static void free_chunk(struct ctx *c)
{
    free(c->rkeys);
    free(c->wkeys);
    free(c->rexp);
    free(c->rgot);
    free(c->wvals);
    free(c->status);
    free(c->group_nr);
    free(c->group_nw);
}

/* Open the cache on every rank, or on none: the first failing rank says
 * why.  Returns 0 or BENCH_EXIT_FAIL. */
static int open_cache(struct ctx *c)
{
    mpikvs_options_t opt = {
        .size = sizeof(mpikvs_options_t),
        .key_size = KEY_LEN,
        .value_size = VALUE_LEN,
        .size_per_node = (size_t)c->size_per_node,
        .mode = c->o->mode,
        .transport = c->o->transport,
    };
    int rc = mpikvs_open(MPI_COMM_WORLD, &opt, &c->kvs);
    int mine = rc == MPIKVS_OK ? c->np : c->rank, first;

    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == c->np)
        return 0;
    if (first == c->rank) {
        const char *more = mpikvs_last_error(NULL);
        fprintf(stderr, "%s: %s: rank %d: mpikvs_open (%s, %zu-byte keys, "
                        "%zu-byte values, size_per_node %zu): %s%s%s%s\n",
                BENCH_PROG, SUB, c->rank, c->o->mode, opt.key_size,
                opt.value_size, opt.size_per_node, mpikvs_strerror(rc),
                more && *more ? " (" : "", more && *more ? more : "",
                more && *more ? ")" : "");
        fflush(stderr);
    }
    /* the library promises no handle on any rank then; if one has one,
     * it cannot be closed without the others */
    if (c->kvs) {
        MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
        exit(BENCH_EXIT_FAIL);
    }
    return BENCH_EXIT_FAIL;
}

int bench_dht_main(int argc, char **argv)
{
    struct dht_opts o;
    struct ctx c = {.o = &o};
    struct local loc[NPHASES];
    struct row rows[NPHASES];
    mpikvs_stats_t snap[NPHASES + 1];
    struct remote_lat lat;
    int rc, status = 0, ok, all_ok;

    rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "%s: %s: MPI_Init failed (error %d): run it under "
                        "mpirun or srun\n", BENCH_PROG, SUB, rc);
        return BENCH_EXIT_FAIL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.np);

    rc = parse_quietly(argc, argv, &o, c.rank == 0);
    if (rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    }
    if (o.tier) {
        status = dht_tier_run(&o, c.rank, c.np);
        MPI_Finalize();
        return status;
    }
    if (o.nvalue_sizes) {
        status = dht_large_run(&o, c.rank, c.np);
        MPI_Finalize();
        return status;
    }

    c.nodes = dht_nodes_to_size_for(c.np);   /* open tells the real ones */
    c.size_per_node = o.size_given ? o.size : default_size(&c);
    if (o.dist == DIST_ZIPF)
        bench_zipf_init(&c.zipf, ZIPF_N, ZIPF_THETA);
    ok = alloc_chunk(&c);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "%s: %s: rank %d: cannot allocate buffers for "
                            "%zu ops: %s (use a smaller --batch)\n",
                    BENCH_PROG, SUB, c.rank, c.cap, strerror(ENOMEM));
        free_chunk(&c);
        MPI_Finalize();
        return BENCH_EXIT_FAIL;
    }
    if (open_cache(&c)) {
        free_chunk(&c);
        MPI_Finalize();
        return BENCH_EXIT_FAIL;
    }
    dht_nodes(c.kvs, c.rank, &c.nodes, &c.virtual_nodes);

    job_stats(&c, &snap[0]);
    for (int p = 0; p < NPHASES; p++) {
        run_phase(&c, (enum phase)p, &loc[p]);
        if (p == PHASE_WRITE) {
            /* every put of every rank is visible after it */
            rc = mpikvs_fence(c.kvs);
            if (rc != MPIKVS_OK)
                fail(&c, "mpikvs_fence", rc);
        }
        job_stats(&c, &snap[p + 1]);
    }
    memset(rows, 0, sizeof rows);
    for (int p = 0; p < NPHASES; p++) {
        reduce_phase(&c, &loc[p], &rows[p]);
        dht_stats_diff(&snap[p], &snap[p + 1], &rows[p].st);
    }
    rows[PHASE_MIXED].efficiency = efficiency(&c, &rows[PHASE_MIXED]);
    if (o.remote_gets && remote_get_pass(&c, &lat))
        status = BENCH_EXIT_FAIL;

    if (c.rank == 0 && !status) {
        const struct remote_lat *l = o.remote_gets ? &lat : NULL;
        if (o.json)
            print_json(&c, rows, l);
        else
            print_table(&c, rows, l);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "%s: %s: cannot write the results: %s\n",
                    BENCH_PROG, SUB, strerror(errno));
            status = BENCH_EXIT_FAIL;
        }
    }
    rc = mpikvs_close(&c.kvs);
    if (rc != MPIKVS_OK)
        fail(&c, "mpikvs_close", rc);
    free_chunk(&c);
    MPI_Finalize();
    return status;
}
