/*
 * bench_tier.c - "mpikvs-bench tier": lookups in the read-only tier, the
 * experiment of SHMEMPMI section VII-C (Get latency against the number of
 * concurrent readers, and against the load factor).
 *
 * For each load factor the parent creates a tier in a private directory
 * and fills it; for each reader count it forks readers that open the tier
 * read-only, warm their mappings up, and then, all starting together at a
 * barrier, run four passes: hits timed one by one, hits timed as a loop,
 * misses one by one, misses as a loop.  Each reader reduces its own
 * samples; the parent combines the readers' figures into one row per
 * (load, readers, kind).
 */
#define _GNU_SOURCE
#include "bench.h"
#include "bench_subcommands.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tier.h"

#define SUB          "tier"
#define KEY_LEN      80u      /* the DHT paper's synthetic benchmark */
#define VALUE_LEN    104u
#define CHUNK        1024u    /* keys made at a time: 80 KiB, stays in L2 */
#define RING         1024u    /* loop pass: where values land, reused */
#define TIER_NODE    "bench"
#define TIER_PREFIX  "tier"
#define MAX_BUCKETS  (UINT64_C(1) << 30)
/* entries that fit the tier's 32 GiB entries region, with 2 MiB slack */
#define MAX_ENTRIES  ((KVSHM_TIER_MAX_BYTES - (UINT64_C(2) << 20)) / \
                      kvshm_entry_size(KEY_LEN, VALUE_LEN))
#define MAX_LOOKUPS  UINT64_C(10000000)   /* ~100 bytes each per reader */

_Static_assert((RING & (RING - 1)) == 0, "j % RING must be a mask");

/* hot: hits among the first --hot keys only, a working set that stays in
 * cache (SHMEMPMI's tables of PMI keys are of that kind). */
enum kind { KIND_HIT, KIND_HOT, KIND_MISS, NKINDS };
static const char *const kind_name[NKINDS] = {"hit", "hot", "miss"};

struct tier_opts {
    uint64_t    entries, lookups, seed, hot;
    double      loads[BENCH_MAX_LIST];
    uint64_t    readers[BENCH_MAX_LIST];
    unsigned    nloads, nreaders;
    bool        ref, json;
    const char *timer, *base;
};

/* One filled tier, as the readers need to find and check it. */
struct tier_run {
    const struct tier_opts *o;
    struct bench_timer      timer;
    char                    dir[PATH_MAX];
    char                    job[KVSHM_JOB_MAX];
};

struct fill {
    double   load_requested, load, fill_ns;
    uint64_t buckets, rebuilds, growths;
};

/* What one reader reports for one kind, through the shared mapping. */
struct reader_result {
    double   median_ns, p99_ns, mean_ns, overhead_ns;
    uint64_t wrong, retries;
    uint64_t loop_start_ns, loop_end_ns;   /* CLOCK_MONOTONIC */
};

struct reader_slot {
    struct reader_result res[NKINDS];
    int                  failed;
    char                 msg[600];
};

struct shared {
    pthread_barrier_t  barrier;
    struct reader_slot slot[];
};

struct row {
    const struct fill *fill;
    unsigned           readers;
    enum kind          kind;
    double             median_ns, p99_ns, mean_ns, mlookups, overhead_ns;
    uint64_t           wrong, retries;
};

/* ---- keys and values -------------------------------------------------
 * Key i is ten words mix64(KEY_SALT + 10 i + w): mix64 is a bijection, so
 * different indices give different first words and different keys.  The
 * tier holds keys 0 .. entries-1; keys from entries on are the misses. */

#define KEY_SALT   UINT64_C(0x6b657973)   /* "keys" */
#define VALUE_SALT UINT64_C(0x76616c73)   /* "vals" */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void make_key(uint64_t i, unsigned char *key)
{
    for (unsigned w = 0; w < KEY_LEN / 8; w++) {
        uint64_t v = mix64(KEY_SALT + i * (KEY_LEN / 8) + w);
        memcpy(key + 8 * w, &v, 8);
    }
}

static void make_value(uint64_t i, unsigned char *value)
{
    for (unsigned w = 0; w < VALUE_LEN / 8; w++) {
        uint64_t v = mix64(VALUE_SALT + i * (VALUE_LEN / 8) + w);
        memcpy(value + 8 * w, &v, 8);
    }
}

struct rng {
    uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
    r->s += UINT64_C(0x9e3779b97f4a7c15);
    return mix64(r->s);
}

/* Uniform in [0, n) by multiply-shift: no division, bias below 2^-40. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)rng_next(r) * n) >> 64);
}

/* ---- one lookup, and whether it was right ---------------------------- */

struct lookup {
    int                  rc;
    size_t               len;
    const unsigned char *value;
    uint64_t             gen;
};

static inline void lookup(struct kvshm_tier *t, bool ref,
                          const unsigned char *key, unsigned char *buf,
                          struct lookup *l)
{
    if (ref) {
        const void *p = NULL;
        l->rc = kvshm_tier_get_ref(t, key, KEY_LEN, &p, &l->len, &l->gen);
        l->value = p;
    } else {
        l->rc = kvshm_tier_get(t, key, KEY_LEN, buf, VALUE_LEN, &l->len);
        l->value = buf;
    }
}

/* 0 right, 1 wrong, or the negative code of a failure to report.  A value
 * longer than VALUE_LEN (MPIKVS_ERR_TOOBIG from the copy) is wrong. */
static int check(struct kvshm_tier *t, bool ref, enum kind k, uint64_t i,
                 const struct lookup *l)
{
    unsigned char expect[VALUE_LEN];

    if (l->rc < 0 && l->rc != MPIKVS_ERR_TOOBIG)
        return l->rc;
    if (k == KIND_MISS)
        return l->rc != MPIKVS_MISS;
    if (l->rc != MPIKVS_OK || l->len != VALUE_LEN)
        return 1;
    make_value(i, expect);
    if (memcmp(expect, l->value, VALUE_LEN) != 0)
        return 1;
    /* a reference is only good if no publication came in between */
    return ref && !kvshm_tier_ref_valid(t, l->gen);
}

/* Fill keys (and idx) with m keys of kind k; for warm-up, from first on
 * in order instead of at random. */
static void make_keys(enum kind k, struct rng *r, uint64_t entries,
                      uint64_t hot, const uint64_t *first, uint64_t *idx,
                      unsigned char *keys, uint64_t m)
{
    for (uint64_t j = 0; j < m; j++) {
        uint64_t i = first ? *first + j
                   : k == KIND_HIT ? rng_below(r, entries)
                   : k == KIND_HOT ? rng_below(r, hot)
                   : entries + rng_below(r, entries);
        idx[j] = i;
        make_key(i, keys + (size_t)j * KEY_LEN);
    }
}

/* ---- a reader process ------------------------------------------------ */

struct reader {
    const struct tier_run *run;
    struct kvshm_tier     *t;
    struct reader_slot    *slot;
    struct rng             rng;
    uint64_t              *samples, *idx;
    unsigned char         *keys, *values;
    /* the loop pass: all its keys, made before it starts, and a ring of
     * RING results and values that the lookups overwrite */
    uint64_t              *loop_idx;
    unsigned char         *loop_keys;
    struct lookup         *ring;
    unsigned char         *ring_values;
    double                 overhead;      /* ticks */
};

static int reader_fail(struct reader *rd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int reader_fail(struct reader *rd, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rd->slot->msg, sizeof rd->slot->msg, fmt, ap);
    va_end(ap);
    rd->slot->failed = 1;
    return BENCH_EXIT_FAIL;
}

/* Look every inserted key up once, in order: each reader maps the tier
 * afresh, and its first touch of a page is a page fault that no steady-
 * state lookup pays.  The lookups are checked and count as hits. */
static int warm_up(struct reader *rd, uint64_t *wrong)
{
    const struct tier_opts *o = rd->run->o;

    for (uint64_t done = 0; done < o->entries; done += CHUNK) {
        unsigned m = o->entries - done < CHUNK ? (unsigned)(o->entries - done)
                                               : CHUNK;
        make_keys(KIND_HIT, NULL, o->entries, o->hot, &done, rd->idx, rd->keys, m);
        for (unsigned j = 0; j < m; j++) {
            struct lookup l;
            lookup(rd->t, o->ref, rd->keys + (size_t)j * KEY_LEN, rd->values,
                   &l);
            int c = check(rd->t, o->ref, KIND_HIT, rd->idx[j], &l);
            if (c < 0)
                return reader_fail(rd, "warm-up lookup: %s",
                                   mpikvs_strerror(c));
            *wrong += (uint64_t)c;
        }
    }
    return 0;
}

/* Each lookup between its own start and stop; the key is made before and
 * the value checked after, outside the timing. */
static int pass_each(struct reader *rd, enum kind k, uint64_t *wrong)
{
    const struct tier_opts *o = rd->run->o;
    const struct bench_timer *tm = &rd->run->timer;

    for (uint64_t done = 0; done < o->lookups; done += CHUNK) {
        unsigned m = o->lookups - done < CHUNK ? (unsigned)(o->lookups - done)
                                               : CHUNK;
        make_keys(k, &rd->rng, o->entries, o->hot, NULL, rd->idx, rd->keys, m);
        for (unsigned j = 0; j < m; j++) {
            struct lookup l;
            const unsigned char *key = rd->keys + (size_t)j * KEY_LEN;
            uint64_t a = bench_tick_start(tm);
            lookup(rd->t, o->ref, key, rd->values, &l);
            uint64_t b = bench_tick_stop(tm);
            rd->samples[done + j] = b - a;
            int c = check(rd->t, o->ref, k, rd->idx[j], &l);
            if (c < 0)
                return reader_fail(rd, "%s lookup: %s", kind_name[k],
                                   mpikvs_strerror(c));
            *wrong += (uint64_t)c;
        }
    }
    return 0;
}

/* All lookups of the pass between one start and stop: the throughput
 * view, where consecutive lookups may overlap in the CPU as they do in a
 * program.  The keys are made beforehand (make_loop_keys), so nothing but
 * lookups runs from the first reader's start to the last one's end.  The
 * loop checks each status, as a program would; the values of the last
 * RING lookups, still in the ring, are compared afterwards (every value
 * was compared by the warm-up and pass_each). */
static void make_loop_keys(struct reader *rd, enum kind k)
{
    make_keys(k, &rd->rng, rd->run->o->entries, rd->run->o->hot, NULL, rd->loop_idx,
              rd->loop_keys, rd->run->o->lookups);
}

static int pass_loop(struct reader *rd, enum kind k, uint64_t *wrong,
                     struct reader_result *res, double *ticks)
{
    const struct tier_opts *o = rd->run->o;
    const struct bench_timer *tm = &rd->run->timer;
    const int expect = k == KIND_MISS ? MPIKVS_MISS : MPIKVS_OK;
    const uint64_t n = o->lookups;
    uint64_t bad = 0, j;
    int failure = 0;

    res->loop_start_ns = bench_now_ns();
    uint64_t a = bench_tick_start(tm);
    for (j = 0; j < n; j++) {
        struct lookup *l = &rd->ring[j % RING];
        lookup(rd->t, o->ref, rd->loop_keys + j * KEY_LEN,
               rd->ring_values + (j % RING) * VALUE_LEN, l);
        if (l->rc != expect) {
            if (l->rc < 0 && l->rc != MPIKVS_ERR_TOOBIG) {
                failure = l->rc;
                break;
            }
            bad++;
        }
    }
    uint64_t b = bench_tick_stop(tm);
    res->loop_end_ns = bench_now_ns();
    if (failure)
        return reader_fail(rd, "%s lookup: %s", kind_name[k],
                           mpikvs_strerror(failure));
    *ticks = (double)(b - a) - rd->overhead;

    for (j = n > RING ? n - RING : 0; j < n; j++) {
        const struct lookup *l = &rd->ring[j % RING];
        /* a wrong status is counted already */
        if (l->rc == expect)
            bad += (uint64_t)check(rd->t, o->ref, k, rd->loop_idx[j], l);
    }
    *wrong += bad;
    return 0;
}

static int barrier(struct reader *rd, struct shared *sh)
{
    int rc = pthread_barrier_wait(&sh->barrier);

    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
        return reader_fail(rd, "barrier: %s", strerror(rc));
    return 0;
}

static double ticks_to_ns(const struct reader *rd, double ticks)
{
    double ns = ticks * rd->run->timer.ns_per_tick;
    return ns > 0 ? ns : 0;
}

static int reader_measure(struct reader *rd, struct shared *sh)
{
    const struct tier_opts *o = rd->run->o;
    struct kvshm_tier_stats st;
    uint64_t warm_wrong = 0;

    if (warm_up(rd, &warm_wrong))
        return BENCH_EXIT_FAIL;
    rd->overhead = bench_timer_overhead(&rd->run->timer);
    for (int k = 0; k < NKINDS; k++) {
        struct reader_result *res = &rd->slot->res[k];
        uint64_t wrong = k == KIND_HIT ? warm_wrong : 0;
        double loop_ticks = 0;

        kvshm_tier_stats(rd->t, &st);
        uint64_t retries_before = st.retries;
        if (barrier(rd, sh) || pass_each(rd, k, &wrong))
            return BENCH_EXIT_FAIL;
        make_loop_keys(rd, k);
        if (barrier(rd, sh) || pass_loop(rd, k, &wrong, res, &loop_ticks))
            return BENCH_EXIT_FAIL;
        kvshm_tier_stats(rd->t, &st);

        bench_sort_u64(rd->samples, o->lookups);
        res->median_ns = ticks_to_ns(rd, (double)bench_percentile_u64(
            rd->samples, o->lookups, 0.5) - rd->overhead);
        res->p99_ns = ticks_to_ns(rd, (double)bench_percentile_u64(
            rd->samples, o->lookups, 0.99) - rd->overhead);
        res->mean_ns = ticks_to_ns(rd, loop_ticks) / (double)o->lookups;
        res->overhead_ns = ticks_to_ns(rd, rd->overhead);
        res->wrong = wrong;
        res->retries = st.retries - retries_before;
    }
    return 0;
}

static int reader_main(const struct tier_run *run, unsigned r,
                       struct shared *sh)
{
    const struct tier_opts *o = run->o;
    struct reader rd = {.run = run, .slot = &sh->slot[r]};
    struct kvshm_tier_reader_opts ropts = {.expect_uid = geteuid()};
    mpikvs_error_t err = {0};
    int rc, status = BENCH_EXIT_FAIL;

    rd.rng.s = mix64(o->seed ^ mix64(UINT64_C(0x72656164) + r));
    rc = kvshm_tier_open(run->dir, run->job, TIER_NODE, TIER_PREFIX, &ropts,
                         &rd.t, &err);
    if (rc != MPIKVS_OK)
        return reader_fail(&rd, "cannot open the tier: %s",
                           err.text[0] ? err.text : mpikvs_strerror(rc));
    rd.samples = malloc(o->lookups * sizeof *rd.samples);
    rd.idx = malloc(CHUNK * sizeof *rd.idx);
    rd.keys = malloc((size_t)CHUNK * KEY_LEN);
    rd.values = malloc((size_t)CHUNK * VALUE_LEN);
    rd.loop_idx = malloc(o->lookups * sizeof *rd.loop_idx);
    rd.loop_keys = malloc(o->lookups * KEY_LEN);
    rd.ring = malloc(RING * sizeof *rd.ring);
    rd.ring_values = malloc((size_t)RING * VALUE_LEN);
    if (!rd.samples || !rd.idx || !rd.keys || !rd.values || !rd.loop_idx ||
        !rd.loop_keys || !rd.ring || !rd.ring_values)
        reader_fail(&rd, "out of memory for %llu lookups (%llu bytes each)",
                    (unsigned long long)o->lookups,
                    (unsigned long long)(2 * sizeof(uint64_t) + KEY_LEN));
    else
        status = reader_measure(&rd, sh);
    free(rd.samples);
    free(rd.idx);
    free(rd.keys);
    free(rd.values);
    free(rd.loop_idx);
    free(rd.loop_keys);
    free(rd.ring);
    free(rd.ring_values);
    kvshm_tier_close(&rd.t);
    return status;
}

/* ---- the parent: readers --------------------------------------------- */

static void kill_all(const pid_t *pids, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
}

/* Reap every reader.  WNOWAIT first, so that a pid leaves the cleanup's
 * list while it is still a zombie and cannot have been reused.  After the
 * first failure the others are killed: they would wait at the barrier
 * for it forever. */
static int reap(pid_t *pids, unsigned n, const struct shared *sh)
{
    unsigned left = 0;
    int rc = 0;

    for (unsigned i = 0; i < n; i++)
        left += pids[i] > 0;
    while (left) {
        siginfo_t si;
        int st;
        unsigned r;

        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "%s: %s: waiting for readers: %s\n", BENCH_PROG,
                    SUB, strerror(errno));
            kill_all(pids, n);
            return -1;
        }
        for (r = 0; r < n && pids[r] != si.si_pid; r++)
            ;
        bench_signals_block();
        if (r < n)
            bench_child_set(r, 0);
        waitpid(si.si_pid, &st, 0);
        bench_signals_unblock();
        if (r == n)
            continue;
        pids[r] = 0;
        left--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        if (rc == 0) {
            if (sh->slot[r].failed)
                fprintf(stderr, "%s: %s: reader %u: %s\n", BENCH_PROG, SUB, r,
                        sh->slot[r].msg);
            else if (WIFSIGNALED(st))
                fprintf(stderr, "%s: %s: reader %u was killed by signal %d "
                                "(%s)\n",
                        BENCH_PROG, SUB, r, WTERMSIG(st),
                        strsignal(WTERMSIG(st)));
            else
                fprintf(stderr, "%s: %s: reader %u exited with status %d\n",
                        BENCH_PROG, SUB, r, WEXITSTATUS(st));
            kill_all(pids, n);
        }
        rc = -1;
    }
    return rc;
}

/* Combine the readers' figures: the median of their medians, the worst
 * p99, the mean of their loop means, and the aggregate rate: all loop
 * lookups over the wall-clock time from the first reader's start to the
 * last one's end, so readers that share a CPU share the rate. */
static void combine(const struct tier_opts *o, const struct shared *sh,
                    unsigned n, enum kind k, struct row *row)
{
    double med[BENCH_MAX_CHILDREN], ovh[BENCH_MAX_CHILDREN];
    uint64_t first = UINT64_MAX, last = 0;

    row->p99_ns = row->mean_ns = row->mlookups = 0;
    row->wrong = row->retries = 0;
    for (unsigned r = 0; r < n; r++) {
        const struct reader_result *res = &sh->slot[r].res[k];
        med[r] = res->median_ns;
        ovh[r] = res->overhead_ns;
        if (res->p99_ns > row->p99_ns)
            row->p99_ns = res->p99_ns;
        row->mean_ns += res->mean_ns / n;
        if (res->loop_start_ns < first)
            first = res->loop_start_ns;
        if (res->loop_end_ns > last)
            last = res->loop_end_ns;
        row->wrong += res->wrong;
        row->retries += res->retries;
    }
    if (last > first)
        row->mlookups = (double)n * (double)o->lookups * 1e3 /
                        (double)(last - first);
    bench_sort_double(med, n);
    bench_sort_double(ovh, n);
    row->median_ns = bench_median_double(med, n);
    row->overhead_ns = bench_median_double(ovh, n);
}

static int run_readers(const struct tier_run *run, unsigned n,
                       struct row rows[NKINDS])
{
    size_t size = sizeof(struct shared) + n * sizeof(struct reader_slot);
    pid_t pids[BENCH_MAX_CHILDREN] = {0};
    pthread_barrierattr_t attr;
    struct shared *sh;
    int rc = -1;

    /* anonymous and shared: the barrier and the results outlive fork and
     * vanish with the last process, whatever happens */
    sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "%s: %s: cannot map %zu bytes for %u readers: %s\n",
                BENCH_PROG, SUB, size, n, strerror(errno));
        return -1;
    }
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    int e = pthread_barrier_init(&sh->barrier, &attr, n);
    pthread_barrierattr_destroy(&attr);
    if (e) {
        fprintf(stderr, "%s: %s: cannot set up a barrier for %u readers: "
                        "%s\n", BENCH_PROG, SUB, n, strerror(e));
        munmap(sh, size);
        return -1;
    }

    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    unsigned started;
    for (started = 0; started < n; started++) {
        bench_signals_block();
        pid_t pid = fork();
        if (pid == 0) {
            bench_child_init(parent);
            _exit(reader_main(run, started, sh));
        }
        if (pid > 0)
            bench_child_set(started, pid);
        bench_signals_unblock();
        if (pid < 0) {
            fprintf(stderr, "%s: %s: cannot start reader %u of %u: %s\n",
                    BENCH_PROG, SUB, started, n, strerror(errno));
            kill_all(pids, started);
            break;
        }
        pids[started] = pid;
    }
    if (reap(pids, started, sh) == 0 && started == n) {
        for (int k = 0; k < NKINDS; k++) {
            rows[k].readers = n;
            rows[k].kind = k;
            combine(run->o, sh, n, k, &rows[k]);
        }
        rc = 0;
        /* only now: destroy waits for waiters that a kill left inside */
        pthread_barrier_destroy(&sh->barrier);
    }
    munmap(sh, size);
    return rc;
}

/* ---- the parent: the tier -------------------------------------------- */

static uint64_t nearest_pow2(double x)
{
    uint64_t lo = 1;

    while ((double)lo * 2 <= x)
        lo *= 2;
    /* nearer on a log scale: compare the ratios */
    return x / (double)lo <= (double)(lo * 2) / x ? lo : lo * 2;
}

static uint64_t buckets_for(const struct tier_opts *o, double load)
{
    return nearest_pow2((double)o->entries / load);
}

static void print_error(const char *what, int rc, const mpikvs_error_t *err)
{
    fprintf(stderr, "%s: %s: %s: %s\n", BENCH_PROG, SUB, what,
            err && err->text[0] ? err->text : mpikvs_strerror(rc));
}

/* Create the tier for one load factor and put every entry in it, timing
 * the puts in chunks (making keys and values is left out). */
static int tier_fill(const struct tier_run *run, double load,
                     struct kvshm_tier **w, struct fill *f)
{
    const struct tier_opts *o = run->o;
    const struct bench_timer *tm = &run->timer;
    uint64_t need = KVSHM_HEADER_SIZE +
                    o->entries * kvshm_entry_size(KEY_LEN, VALUE_LEN);
    struct kvshm_tier_spec spec = {
        .region = {.dir = run->dir, .job = run->job, .node = TIER_NODE,
                   .tag = TIER_PREFIX, .uid = KVSHM_ANY_UID,
                   .gid = (gid_t)-1, .step = KVSHM_NO_STEP},
        /* all the room up front: the fill must not grow the region */
        .initial_bytes = (need + (UINT64_C(2) << 20)) & ~((UINT64_C(1) << 20) - 1),
        .buckets = buckets_for(o, load),
        /* no rebuild: the load factor is the one asked for */
        .max_load = 1e9,
    };
    spec.max_bytes = spec.initial_bytes;
    mpikvs_error_t err = {0};
    unsigned char *kv = NULL;
    uint64_t *idx = NULL;
    double ticks = 0;
    int rc;

    f->load_requested = load;
    rc = kvshm_tier_create(&spec, w, &err);
    if (rc != MPIKVS_OK) {
        print_error("cannot create the tier", rc, &err);
        return -1;
    }
    kv = malloc((size_t)CHUNK * (KEY_LEN + VALUE_LEN));
    idx = malloc(CHUNK * sizeof *idx);
    if (!kv || !idx) {
        print_error("filling the tier", -ENOMEM, NULL);
        goto fail;
    }
    for (uint64_t done = 0; done < o->entries; done += CHUNK) {
        unsigned m = o->entries - done < CHUNK ? (unsigned)(o->entries - done)
                                               : CHUNK;
        unsigned char *values = kv + (size_t)CHUNK * KEY_LEN;
        make_keys(KIND_HIT, NULL, o->entries, o->hot, &done, idx, kv, m);
        for (unsigned j = 0; j < m; j++)
            make_value(done + j, values + (size_t)j * VALUE_LEN);
        uint64_t a = bench_tick_start(tm);
        for (unsigned j = 0; j < m; j++) {
            rc = kvshm_tier_put(*w, kv + (size_t)j * KEY_LEN, KEY_LEN,
                                values + (size_t)j * VALUE_LEN, VALUE_LEN,
                                &err);
            if (rc != MPIKVS_OK) {
                char what[80];
                snprintf(what, sizeof what, "put of entry %llu",
                         (unsigned long long)(done + j));
                print_error(what, rc, &err);
                goto fail;
            }
        }
        ticks += (double)(bench_tick_stop(tm) - a);
    }
    free(kv);
    free(idx);

    struct kvshm_tier_stats st;
    kvshm_tier_stats(*w, &st);
    if (st.entries != o->entries) {
        fprintf(stderr, "%s: %s: the tier holds %llu entries after %llu "
                        "puts of distinct keys\n", BENCH_PROG, SUB,
                (unsigned long long)st.entries,
                (unsigned long long)o->entries);
        return -1;
    }
    f->buckets = st.nbuckets;
    f->load = (double)o->entries / (double)st.nbuckets;
    f->fill_ns = ticks * tm->ns_per_tick / (double)o->entries;
    f->rebuilds = st.rebuilds;
    f->growths = st.growths;
    return 0;

fail:
    free(kv);
    free(idx);
    return -1;
}

/* ---- output ----------------------------------------------------------- */

static unsigned online_cpus(void)
{
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static const char *lookup_call(const struct tier_opts *o)
{
    return o->ref ? "kvshm_tier_get_ref" : "kvshm_tier_get";
}

static void print_table_header(const struct tier_run *run, double overhead_ns,
                               unsigned cpus)
{
    const struct tier_opts *o = run->o;
    char tdesc[160];

    bench_timer_describe(&run->timer, tdesc, sizeof tdesc);
    printf("# %s %s tier: %llu entries, %u-byte keys, %u-byte values, %s, "
           "%llu timed lookups per reader, kind and pass\n",
           BENCH_PROG, PACKAGE_VERSION, (unsigned long long)o->entries,
           KEY_LEN, VALUE_LEN, lookup_call(o),
           (unsigned long long)o->lookups);
    printf("# timer: %s; its own cost, %.1f ns, is subtracted\n", tdesc,
           overhead_ns);
    printf("# median_ns, p99_ns: lookups timed one by one; mean_ns: a "
           "reader's loop timed whole; Mlookups/s: all readers' loops over "
           "wall-clock time\n");
    printf("# %u CPUs: rows with more readers than that share CPUs and are "
           "reported, not judged\n", cpus);
}

static void print_fill(const struct fill *f)
{
    printf("# load %g: %llu buckets, actual load %.3f, fill %.1f ns/insert"
           ", %llu rebuilds, %llu growths\n",
           f->load_requested, (unsigned long long)f->buckets, f->load,
           f->fill_ns, (unsigned long long)f->rebuilds,
           (unsigned long long)f->growths);
}

static void print_row(const struct row *r, bool head)
{
    if (head)
        printf("%6s %7s %-4s %10s %9s %9s %10s %6s\n", "load", "readers",
               "kind", "median_ns", "p99_ns", "mean_ns", "Mlookups/s",
               "wrong");
    printf("%6.3f %7u %-4s %10.1f %9.1f %9.1f %10.2f %6llu\n", r->fill->load,
           r->readers, kind_name[r->kind], r->median_ns, r->p99_ns, r->mean_ns,
           r->mlookups, (unsigned long long)r->wrong);
}

static void print_json(const struct tier_run *run, double overhead_ns,
                       unsigned cpus, const struct fill *fills,
                       unsigned nfills, const struct row *rows, size_t nrows)
{
    const struct tier_opts *o = run->o;

    printf("{\n  \"benchmark\": \"tier\",\n  \"version\": \"%s\",\n",
           PACKAGE_VERSION);
    printf("  \"entries\": %llu,\n  \"key_bytes\": %u,\n"
           "  \"value_bytes\": %u,\n  \"lookups_per_pass\": %llu,\n"
           "  \"lookup_call\": \"%s\",\n"
           "  \"seed\": %llu,\n  \"cpus\": %u,\n",
           (unsigned long long)o->entries, KEY_LEN, VALUE_LEN,
           (unsigned long long)o->lookups, lookup_call(o),
           (unsigned long long)o->seed, cpus);
    printf("  \"timer\": {\"source\": \"%s\", \"ns_per_tick\": %.6f, "
           "\"overhead_ns\": %.1f},\n",
           run->timer.kind == BENCH_TIMER_TSC ? "tsc" : "clock_monotonic",
           run->timer.ns_per_tick, overhead_ns);
    printf("  \"fills\": [\n");
    for (unsigned i = 0; i < nfills; i++)
        printf("    {\"load_requested\": %g, \"buckets\": %llu, "
               "\"load\": %.6f, \"fill_ns_per_insert\": %.1f, "
               "\"rebuilds\": %llu, \"growths\": %llu}%s\n",
               fills[i].load_requested, (unsigned long long)fills[i].buckets,
               fills[i].load, fills[i].fill_ns,
               (unsigned long long)fills[i].rebuilds,
               (unsigned long long)fills[i].growths,
               i + 1 < nfills ? "," : "");
    printf("  ],\n  \"results\": [\n");
    for (size_t i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        printf("    {\"load_requested\": %g, \"load\": %.6f, "
               "\"buckets\": %llu, \"readers\": %u, \"kind\": \"%s\", "
               "\"median_ns\": %.1f, \"p99_ns\": %.1f, \"mean_ns\": %.1f, "
               "\"mlookups_per_s\": %.3f, \"wrong\": %llu, "
               "\"retries\": %llu, \"timer_overhead_ns\": %.1f, "
               "\"oversubscribed\": %s}%s\n",
               r->fill->load_requested, r->fill->load,
               (unsigned long long)r->fill->buckets, r->readers,
               kind_name[r->kind], r->median_ns, r->p99_ns, r->mean_ns,
               r->mlookups, (unsigned long long)r->wrong,
               (unsigned long long)r->retries, r->overhead_ns,
               r->readers > cpus ? "true" : "false",
               i + 1 < nrows ? "," : "");
    }
    printf("  ]\n}\n");
}

/* ---- options ---------------------------------------------------------- */

static void tier_usage(FILE *f)
{
    fprintf(f,
"Usage: %s tier [options]\n"
"Time lookups in the read-only tier: 80-byte keys, 104-byte values, looked\n"
"up at random by concurrent reader processes, hits and misses.\n"
"\n"
"  --entries N      entries in the tier (default 1000000)\n"
"  --load LIST      load factors, comma-separated (default 0.25,0.5,1)\n"
"  --readers LIST   concurrent readers, comma-separated (default 1,2,4,8)\n"
"  --lookups N      timed lookups per reader, kind and pass (default 200000)\n"
"  --hot N          keys in the hot working set of the 'hot' rows\n"
"                   (default 4096, at most --entries)\n"
"  --ref            time kvshm_tier_get_ref (zero copy), not kvshm_tier_get\n"
"  --json           print one JSON document instead of the table\n"
"  --timer KIND     auto, tsc or clock (default auto: tsc where invariant)\n"
"  --seed N         seed of the readers' random keys (default 1)\n"
"  --dir DIR        make the private region directory in DIR "
"(default /dev/shm)\n"
"  -h, --help       print this and exit\n"
"\nSee mpikvs-bench(1).\n", BENCH_PROG);
}

enum { OPT_ENTRIES = 256, OPT_LOAD, OPT_READERS, OPT_LOOKUPS, OPT_REF,
       OPT_JSON, OPT_TIMER, OPT_SEED, OPT_DIR, OPT_HOT };

/* 0: run, 1: --help was printed, -1: bad usage (reported). */
static int tier_options(int argc, char **argv, struct tier_opts *o)
{
    static const struct option longopts[] = {
        {"entries", required_argument, NULL, OPT_ENTRIES},
        {"load", required_argument, NULL, OPT_LOAD},
        {"readers", required_argument, NULL, OPT_READERS},
        {"lookups", required_argument, NULL, OPT_LOOKUPS},
        {"hot", required_argument, NULL, OPT_HOT},
        {"ref", no_argument, NULL, OPT_REF},
        {"json", no_argument, NULL, OPT_JSON},
        {"timer", required_argument, NULL, OPT_TIMER},
        {"seed", required_argument, NULL, OPT_SEED},
        {"dir", required_argument, NULL, OPT_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    *o = (struct tier_opts){
        .entries = 1000000, .lookups = 200000, .seed = 1, .hot = 4096,
        .loads = {0.25, 0.5, 1.0}, .nloads = 3,
        .readers = {1, 2, 4, 8}, .nreaders = 4,
        .timer = "auto", .base = KVSHM_DEFAULT_DIR,
    };
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_ENTRIES:
            bad = bench_parse_u64(SUB, "--entries", optarg, 1, MAX_ENTRIES,
                                  &o->entries);
            break;
        case OPT_LOAD:
            bad = bench_parse_double_list(SUB, "--load", optarg, 0, 1024,
                                          o->loads, &o->nloads);
            break;
        case OPT_READERS:
            bad = bench_parse_u64_list(SUB, "--readers", optarg, 1,
                                       BENCH_MAX_CHILDREN, o->readers,
                                       &o->nreaders);
            break;
        case OPT_LOOKUPS:
            bad = bench_parse_u64(SUB, "--lookups", optarg, 1, MAX_LOOKUPS,
                                  &o->lookups);
            break;
        case OPT_HOT:
            bad = bench_parse_u64(SUB, "--hot", optarg, 1, MAX_ENTRIES,
                                  &o->hot);
            break;
        case OPT_REF:
            o->ref = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_TIMER:
            o->timer = optarg;
            if (strcmp(optarg, "auto") && strcmp(optarg, "tsc") &&
                strcmp(optarg, "clock")) {
                fprintf(stderr, "%s: %s: invalid value '%s' for --timer: "
                                "expected auto, tsc or clock\n",
                        BENCH_PROG, SUB, optarg);
                bad = -1;
            }
            break;
        case OPT_SEED:
            bad = bench_parse_u64(SUB, "--seed", optarg, 0, UINT64_MAX,
                                  &o->seed);
            break;
        case OPT_DIR:
            o->base = optarg;
            if (!*optarg) {
                fprintf(stderr, "%s: %s: invalid value '' for --dir: "
                                "expected a directory\n", BENCH_PROG, SUB);
                bad = -1;
            }
            break;
        case 'h':
            tier_usage(stdout);
            return 1;
        default:
            return bench_bad_option(SUB, c, argv);
        }
    }
    if (bad)
        return -1;
    if (bench_no_operands(SUB, argc, argv))
        return -1;
    if (o->hot > o->entries)
        o->hot = o->entries;
    for (unsigned i = 0; i < o->nloads; i++)
        if (buckets_for(o, o->loads[i]) > MAX_BUCKETS) {
            fprintf(stderr, "%s: %s: invalid value '%g' in --load: %llu "
                            "entries at that load need %llu buckets, more "
                            "than %llu\n",
                    BENCH_PROG, SUB, o->loads[i],
                    (unsigned long long)o->entries,
                    (unsigned long long)buckets_for(o, o->loads[i]),
                    (unsigned long long)MAX_BUCKETS);
            return -1;
        }
    return 0;
}

/* ---- the subcommand --------------------------------------------------- */

int bench_tier_main(int argc, char **argv)
{
    struct tier_opts o;
    struct tier_run run = {.o = &o};
    struct fill fills[BENCH_MAX_LIST];
    struct row *rows = NULL;
    struct kvshm_tier *w = NULL;
    size_t nrows = 0;
    unsigned nfills = 0;
    char why[160];
    int status = BENCH_EXIT_FAIL, rc;

    rc = tier_options(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    if (bench_timer_init(&run.timer, o.timer, why, sizeof why)) {
        fprintf(stderr, "%s: %s: invalid value '%s' for --timer: %s (use "
                        "--timer clock)\n", BENCH_PROG, SUB, o.timer, why);
        return BENCH_EXIT_USAGE;
    }
    rows = calloc((size_t)o.nloads * o.nreaders * NKINDS, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, strerror(ENOMEM));
        return BENCH_EXIT_FAIL;
    }

    bench_cleanup_install();
    rc = bench_private_dir(o.base, run.dir, sizeof run.dir);
    if (rc) {
        fprintf(stderr, "%s: %s: cannot make a private directory in %s: %s "
                        "(choose another with --dir)\n",
                BENCH_PROG, SUB, o.base, strerror(-rc));
        free(rows);
        return BENCH_EXIT_FAIL;
    }
    kvshm_unique_id(run.job, sizeof run.job);

    unsigned cpus = online_cpus();
    double overhead_ns = bench_timer_overhead(&run.timer) *
                         run.timer.ns_per_tick;
    if (!o.json)
        print_table_header(&run, overhead_ns, cpus);

    for (unsigned li = 0; li < o.nloads; li++) {
        struct fill *f = &fills[nfills];
        if (tier_fill(&run, o.loads[li], &w, f))
            goto out;
        nfills++;
        if (!o.json)
            print_fill(f);
        for (unsigned ri = 0; ri < o.nreaders; ri++) {
            struct row *pair = &rows[nrows];
            if (run_readers(&run, (unsigned)o.readers[ri], pair))
                goto out;
            for (int k = 0; k < NKINDS; k++) {
                pair[k].fill = f;
                if (!o.json)
                    print_row(&pair[k], li == 0 && ri == 0 && k == 0);
            }
            nrows += NKINDS;
            fflush(stdout);
        }
        kvshm_tier_close(&w);
        rc = kvshm_tier_unlink(run.dir, run.job, TIER_NODE, TIER_PREFIX);
        if (rc != MPIKVS_OK) {
            print_error("cannot remove the tier", rc, NULL);
            goto out;
        }
    }
    if (o.json)
        print_json(&run, overhead_ns, cpus, fills, nfills, rows, nrows);
    if (fflush(stdout) != 0 || ferror(stdout))
        fprintf(stderr, "%s: %s: cannot write the results: %s\n", BENCH_PROG,
                SUB, strerror(errno));
    else
        status = 0;

out:
    if (w) {
        kvshm_tier_close(&w);
        kvshm_tier_unlink(run.dir, run.job, TIER_NODE, TIER_PREFIX);
    }
    rc = bench_private_dir_remove();
    if (rc) {
        fprintf(stderr, "%s: %s: cannot remove %s: %s\n", BENCH_PROG, SUB,
                run.dir, strerror(-rc));
        status = BENCH_EXIT_FAIL;
    }
    free(rows);
    return status;
}
