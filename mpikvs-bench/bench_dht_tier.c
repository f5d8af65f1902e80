/*
 * bench_dht_tier.c - "mpikvs-bench dht --tier": the node tier of libmpikvs
 * (libmpikvs/tier.c, "The node tier" in mpikvs(3)) under the load it is
 * made for, skewed reads of other nodes' keys epoch after epoch.
 *
 *   open     a config whose table has a tier: the job's under spank_mpikvs,
 *            --config or $MPIKVS_CONFIG, else a temporary one that each
 *            rank writes for itself and removes once the cache is open;
 *   write    the keys of the numbers K..1, each once, round robin over the
 *            ranks, the ranks taking turns (write_keys says why), then
 *            mpikvs_fence;
 *   epochs   E times: every rank gets the keys of --ops zipf numbers over
 *            1..K, then mpikvs_fence, at which each node's leader
 *            publishes the node's remote hits into its tier; the job's
 *            counters are read before the epoch and after its fence;
 *   latency  --latency more zipf gets per rank, each timed on its own and
 *            classified by the rank's counters it moved: a tier hit, a
 *            remote get (another node's key that the tier did not have:
 *            tier_misses), or a get of the own node's key (neither).
 * Keys and values are those of bench_keys.h: every value read is checked.
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
#include <unistd.h>

#include "bench_dht.h"
#include "bench_dht_tier.h"
#include "bench_keys.h"
#include "job_config.h"
#include "job_layout.h"
#include "mpikvs.h"

#define SUB         DHT_SUB
#define KEY_LEN     BENCH_KEY_LEN
#define VALUE_LEN   BENCH_VALUE_LEN
#define CHUNK       4096u                 /* gets made, then timed */
#define PUT_BATCH   1024u                 /* keys of one put_batch */
#define SLOT_GUESS  200u                  /* bytes of a slot, about */
#define ROOM        4u                    /* slots per key, by default */
#define MIN_SIZE    (UINT64_C(64) << 20)
#define TEMP_TABLE  "bench"
#define WHY_LEN     1024u

_Static_assert(PUT_BATCH <= CHUNK, "the write uses the chunk buffers");

/* What a get of the latency pass was, by the rank's counters it moved. */
enum cls { CLS_TIER, CLS_REMOTE, CLS_OWN, NCLS };
static const char *const cls_name[NCLS] = {"tier_hit", "remote",
                                           "own_node"};

enum source { SRC_TEMP, SRC_FILE, SRC_JOB };

struct tctx {
    const struct dht_opts *o;
    mpikvs_t     *kvs;
    int           rank, np, nodes;
    bool          virtual_nodes;
    /* the cache's config, as the header lines tell it */
    enum source   src;
    const char   *config;          /* SRC_FILE: its path */
    char          temp[4096];      /* SRC_TEMP: this rank's file */
    char          table[KVSHM_TABLE_NAME_MAX];
    const char   *mode, *caching;
    uint64_t      size_per_node;   /* asked for; 0: the job's */
    char          size_text[192];  /* the table's memory, and its tier's */
    struct bench_zipf  zipf;
    struct bench_timer timer;
    double        overhead_ticks;
    unsigned char *keys, *exp, *got;
    int          *status;
};

/* One rank's figures of one epoch. */
struct epoch_local {
    uint64_t gets, hits, misses, wrong, busy_ns, fence_ns;
};

/* What rank 0 prints for one epoch. */
struct epoch_row {
    uint64_t       gets, hits, misses, wrong;
    double         seconds, fence_seconds;
    mpikvs_stats_t st;             /* job counters, epoch and its fence */
};

/* The latency pass, combined over the ranks (rank 0). */
struct latency {
    uint64_t n[NCLS], gets, hits, misses, wrong;
    double   mean_ns[NCLS], median_ns[NCLS], p99_ns[NCLS];
    double   overhead_ns;          /* the largest rank's timer cost */
};

/* ---- every rank, or none ------------------------------------------------ */

/* 0 when why is NULL on every rank; else the lowest rank with a reason
 * prints it, and every rank gets BENCH_EXIT_FAIL. */
static int agree(const struct tctx *c, const char *why)
{
    int mine = why ? c->rank : c->np, first;

    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == c->np)
        return 0;
    if (first == c->rank) {
        fprintf(stderr, "%s: %s --tier: rank %d: %s\n", BENCH_PROG, SUB,
                c->rank, why);
        fflush(stderr);
    }
    return BENCH_EXIT_FAIL;
}

/* ---- the config --------------------------------------------------------- */

/* The table's memory per node by default: ROOM slots per key of the node
 * (so that few keys are evicted; c->nodes is dht_nodes_to_size_for's
 * before the open),
 * plus the tier's part. */
static uint64_t default_size(const struct tctx *c, uint64_t tier_bytes,
                             double tier_fraction)
{
    uint64_t mib = UINT64_C(1) << 20;
    double per_node = ceil((double)c->o->keys / (double)c->nodes);
    double bytes = per_node * SLOT_GUESS * ROOM;

    bytes = tier_bytes ? bytes + (double)tier_bytes
                       : bytes / (1.0 - tier_fraction);
    uint64_t b = (uint64_t)ceil(bytes / (double)mib) * mib;
    return b < MIN_SIZE ? MIN_SIZE : b;
}

/* "363.0 MiB per node, tier 25% of it" */
static void size_text(struct tctx *c, const struct kvshm_share *tier)
{
    char size[48], share[48];

    dht_size_text(c->size_per_node, size, sizeof size);
    if (tier->bytes)
        dht_size_text(tier->bytes, share, sizeof share);
    else
        snprintf(share, sizeof share, "%g%% of it", tier->fraction * 100.0);
    snprintf(c->size_text, sizeof c->size_text, "%s per node, tier %s",
             size, share);
}

/* The table the benchmark needs: its keys and values, and a tier. */
static const char *check_table(const struct kvshm_table_config *t,
                               const char *source, char *why, size_t len)
{
    if (t->key.size != KEY_LEN || t->value.size != VALUE_LEN) {
        snprintf(why, len, "table '%s' of %s has %zu-byte keys and %zu-byte "
                           "values; mpikvs-bench dht --tier needs 80-byte "
                           "keys and 104-byte values (\"key\": "
                           "{\"key_size\": 80}, \"value\": {\"value_size\": "
                           "104})",
                 t->name, source, t->key.size, t->value.size);
        return why;
    }
    if (!t->tier.enabled || t->tier.caching == KVSHM_CACHING_OFF) {
        snprintf(why, len, "table '%s' of %s has no node tier, which is what "
                           "mpikvs-bench dht --tier measures: give it "
                           "\"tier\": {\"enabled\": true, \"caching\": "
                           "\"always\"}",
                 t->name, source);
        return why;
    }
    return NULL;
}

static const struct kvshm_table_config *pick_table(
    const struct tctx *c, const struct kvshm_config *cfg, const char *source,
    char *why, size_t len)
{
    const struct kvshm_table_config *t =
        c->o->table ? kvshm_config_table(cfg, c->o->table) : &cfg->tables[0];

    if (!t)
        snprintf(why, len, "%s has no table '%s' (--table)", source,
                 c->o->table);
    return t;
}

/* Everything the text of a config says, one line per problem: as one
 * message, without the last newline. */
static void diag_text(const struct kvshm_diag *d, const char *source,
                      char *why, size_t len)
{
    int n = snprintf(why, len, "%s", d->text ? d->text : "");
    if (n > 0 && (size_t)n < len && why[n - 1] == '\n')
        why[n - 1] = '\0';
    if (!why[0])
        snprintf(why, len, "%s: cannot load the config", source);
}

/* Under spank_mpikvs: the job's config, and the tier the plugin made. */
static const char *resolve_job(struct tctx *c, const char *layout_path,
                               char *why, size_t len)
{
    struct kvshm_job_layout *l = NULL;
    struct kvshm_config *cfg = NULL;
    struct kvshm_diag diag = {0};
    const struct kvshm_table_config *t;
    mpikvs_error_t err;
    const char *bad = why;
    const char *env = getenv("MPIKVS_CONFIG");

    c->src = SRC_JOB;
    if (c->o->config || (env && *env)) {
        snprintf(why, len, "under spank_mpikvs (MPIKVS_LAYOUT is set) the "
                           "benchmark uses the job's --dht-config: drop "
                           "%s", c->o->config ? "--config" : "MPIKVS_CONFIG");
        return why;
    }
    if (c->o->tier_size_given || c->o->size_given) {
        snprintf(why, len, "under spank_mpikvs the job's --dht-size and "
                           "--dht-config size the table and its tier: drop "
                           "%s", c->o->size_given ? "--size" : "--tier-size");
        return why;
    }
    if (kvshm_job_layout_open(layout_path, &l, &err) != MPIKVS_OK) {
        snprintf(why, len, "cannot read the job layout (MPIKVS_LAYOUT=%.200s):"
                           " %s",
                 layout_path, err.text);
        return why;
    }
    if (!l->config_text) {
        snprintf(why, len, "the job was submitted without --dht-config, so "
                           "it has no node tier: submit it with "
                           "--dht-config=FILE whose table has 80-byte keys, "
                           "104-byte values and \"tier\": {\"enabled\": "
                           "true}");
        goto out;
    }
    if (kvshm_config_parse(l->config_text, strlen(l->config_text),
                           "the job's --dht-config", &cfg,
                           &diag) != MPIKVS_OK) {
        diag_text(&diag, "the job's --dht-config", why, len);
        goto out;
    }
    if (!(t = pick_table(c, cfg, "the job's --dht-config", why, len)) ||
        check_table(t, "the job's --dht-config", why, len))
        goto out;
    for (size_t i = 0; i < l->ntables; i++) {
        const struct kvshm_job_table *jt = &l->tables[i];
        if (strcmp(jt->name, t->name) != 0)
            continue;
        if (!jt->tier_bytes) {
            snprintf(why, len, "spank_mpikvs made no tier for table '%s' on "
                               "node %s",
                     t->name, l->node);
            goto out;
        }
        char data[48], tier[48];
        dht_size_text(jt->data_bytes, data, sizeof data);
        dht_size_text(jt->tier_bytes, tier, sizeof tier);
        snprintf(c->size_text, sizeof c->size_text,
                 "on node %s: data region %s, tier %s", l->node, data, tier);
        bad = NULL;
    }
    if (bad) {
        snprintf(why, len, "the job has no regions of table '%s' on node %s",
                 t->name, l->node);
        goto out;
    }
    snprintf(c->table, sizeof c->table, "%s", t->name);
    c->mode = c->o->mode_given ? c->o->mode : kvshm_mode_name(t->mode);
    c->caching = kvshm_caching_name(t->tier.caching);
    c->size_per_node = 0;   /* the regions the plugin made, as they are */
out:
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
    kvshm_job_layout_free(l);
    return bad;
}

/* --config FILE (or $MPIKVS_CONFIG). */
static const char *resolve_file(struct tctx *c, const char *path, char *why,
                                size_t len)
{
    struct kvshm_config *cfg = NULL;
    struct kvshm_diag diag = {0};
    const struct kvshm_table_config *t;
    const char *bad = why;

    c->src = SRC_FILE;
    c->config = path;
    if (c->o->tier_size_given) {
        snprintf(why, len, "--tier-size applies to the temporary config "
                           "only: the table of %s (MPIKVS_CONFIG) sizes its "
                           "tier", path);
        return why;
    }
    if (kvshm_config_load(path, &cfg, &diag) != MPIKVS_OK) {
        diag_text(&diag, path, why, len);
        goto out;
    }
    if (!(t = pick_table(c, cfg, path, why, len)) ||
        check_table(t, path, why, len))
        goto out;
    snprintf(c->table, sizeof c->table, "%s", t->name);
    c->mode = c->o->mode_given ? c->o->mode : kvshm_mode_name(t->mode);
    c->caching = kvshm_caching_name(t->tier.caching);
    /* without the plugin a share of the node means nothing: the library
     * takes 64 MiB, this the benchmark's own default */
    c->size_per_node = c->o->size_given && c->o->size ? c->o->size
                       : t->size.bytes ? t->size.bytes
                                       : default_size(c, t->tier.size.bytes,
                                                      t->tier.size.fraction);
    size_text(c, &t->tier.size);
    bad = NULL;
out:
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
    return bad;
}

/* No config: this rank writes its own temporary one (the ranks of another
 * node could not read rank 0's /tmp), removed as soon as the cache is
 * open. */
static const char *write_temp(struct tctx *c, char *why, size_t len)
{
    const char *dir = getenv("TMPDIR");
    struct kvshm_share share = {c->o->tier_bytes, c->o->tier_fraction};
    FILE *f = NULL;
    int fd;

    c->src = SRC_TEMP;
    if (c->o->table) {
        snprintf(why, len, "--table names a table of a config (--config, "
                           "MPIKVS_CONFIG or the job's): there is none");
        return why;
    }
    c->size_per_node = c->o->size_given && c->o->size
                           ? c->o->size
                           : default_size(c, c->o->tier_bytes,
                                          c->o->tier_fraction);
    snprintf(c->table, sizeof c->table, TEMP_TABLE);
    c->mode = c->o->mode;
    c->caching = "always";
    size_text(c, &share);
    if ((size_t)snprintf(c->temp, sizeof c->temp, "%s/mpikvs-bench.XXXXXX",
                         dir && *dir ? dir : "/tmp") >= sizeof c->temp) {
        snprintf(why, len, "TMPDIR is too long for a file name");
        c->temp[0] = '\0';
        return why;
    }
    fd = mkstemp(c->temp);
    if (fd < 0) {
        snprintf(why, len, "cannot make the temporary config %.900s: %s (set "
                           "TMPDIR to a writable directory)",
                 c->temp, strerror(errno));
        c->temp[0] = '\0';
        return why;
    }
    /* mode and tier size are checked already: nothing here needs JSON
     * escaping */
    f = fdopen(fd, "w");
    if (!f) {
        snprintf(why, len, "cannot write the temporary config %.900s: %s",
                 c->temp, strerror(errno));
        close(fd);
        return why;
    }
    int w = fprintf(f,
                    "{ \"version\": 1, \"tables\": { \"%s\": {\n"
                    "  \"size\": %llu, \"mode\": \"%s\",\n"
                    "  \"key\": { \"key_size\": %u },\n"
                    "  \"value\": { \"value_size\": %u },\n"
                    "  \"tier\": { \"enabled\": true, \"size\": \"%s\",\n"
                    "            \"caching\": \"always\" } } } }\n",
                    TEMP_TABLE, (unsigned long long)c->size_per_node,
                    c->mode, KEY_LEN, VALUE_LEN, c->o->tier_size);
    int saved = errno;
    /* fclose also flushes: its failure is a failed write too */
    if (fclose(f) != 0 || w < 0) {
        snprintf(why, len, "cannot write the temporary config %.900s: %s",
                 c->temp, strerror(w < 0 ? saved : errno));
        return why;
    }
    return NULL;
}

/* Open the cache on every rank, or on none.  Returns 0 or
 * BENCH_EXIT_FAIL (the first failing rank said why). */
static int open_cache(struct tctx *c)
{
    const char *layout = getenv("MPIKVS_LAYOUT");
    const char *env = getenv("MPIKVS_CONFIG");
    char why[WHY_LEN];
    const char *bad;

    if (layout && *layout)
        bad = resolve_job(c, layout, why, sizeof why);
    else if (c->o->config || (env && *env))
        bad = resolve_file(c, c->o->config ? c->o->config : env, why,
                           sizeof why);
    else
        bad = write_temp(c, why, sizeof why);
    if (agree(c, bad)) {
        if (c->temp[0])
            unlink(c->temp);
        return BENCH_EXIT_FAIL;
    }

    mpikvs_options_t opt = {
        .size = sizeof(mpikvs_options_t),
        .key_size = KEY_LEN,
        .value_size = VALUE_LEN,
        .size_per_node = (size_t)c->size_per_node,
        .mode = c->src == SRC_TEMP || c->o->mode_given ? c->mode : NULL,
        .config = c->src == SRC_TEMP ? c->temp
                  : c->src == SRC_FILE ? c->config
                                       : NULL,
        .table = c->o->table,
        .transport = c->o->transport,
    };
    int rc = mpikvs_open(MPI_COMM_WORLD, &opt, &c->kvs);
    if (c->temp[0] && unlink(c->temp) != 0 && rc == MPIKVS_OK)
        fprintf(stderr, "%s: %s --tier: rank %d: cannot remove %s: %s\n",
                BENCH_PROG, SUB, c->rank, c->temp, strerror(errno));
    c->temp[0] = '\0';
    if (rc != MPIKVS_OK) {
        const char *more = mpikvs_last_error(NULL);
        snprintf(why, sizeof why, "mpikvs_open (table '%s', %s): %s%s%s%s",
                 c->table, c->mode ? c->mode : "the config's mode",
                 mpikvs_strerror(rc), more && *more ? " (" : "",
                 more && *more ? more : "", more && *more ? ")" : "");
    }
    if (agree(c, rc == MPIKVS_OK ? NULL : why) == 0)
        return 0;
    /* the library promises no handle on any rank then; if one has one,
     * it cannot be closed without the others */
    if (c->kvs) {
        MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
        exit(BENCH_EXIT_FAIL);
    }
    return BENCH_EXIT_FAIL;
}

/* ---- the runs ----------------------------------------------------------- */

static void fail(const struct tctx *c, const char *call, int rc)
{
    dht_fail(c->kvs, c->rank, call, rc);
}

/* Keys and expected values of zipf draws first .. first+n-1 (untimed). */
static void make_gets(struct tctx *c, uint64_t first, size_t n)
{
    uint64_t base = bench_stream_base(c->o->seed, (uint64_t)c->rank,
                                      BENCH_STREAM_TIER);

    for (size_t i = 0; i < n; i++) {
        uint64_t x = bench_zipf_next(&c->zipf, bench_draw(base, first + i));
        bench_make_key(x, c->keys + i * KEY_LEN);
        bench_make_value(c->keys + i * KEY_LEN, c->exp + i * VALUE_LEN);
    }
    /* a hit must write its value: nothing of an earlier chunk stays */
    memset(c->got, 0, n * VALUE_LEN);
}

/* Hit, miss, or a hit with the wrong value. */
static void check_get(const struct tctx *c, size_t i, int rc,
                      uint64_t *hits, uint64_t *misses, uint64_t *wrong)
{
    if (rc == MPIKVS_MISS) {
        (*misses)++;
        return;
    }
    (*hits)++;
    if (memcmp(c->got + i * VALUE_LEN, c->exp + i * VALUE_LEN,
               VALUE_LEN) != 0)
        (*wrong)++;
}

/* Every number 1..K once, round robin over the ranks, then the fence.
 * Returns the time on rank 0.
 *
 * The ranks take turns, because two lock-free puts into one bucket at
 * once may take the same free slot, and one key is lost (a miss is
 * allowed; mpikvs(3)).  A put_batch reads all its buckets before it
 * writes any, so two batches of 256 keys in 1e5 buckets at once share a
 * bucket about half the time: writing concurrently lost some 0.05% of
 * the keys, each then a miss in every epoch, and through MPI when another
 * node's, as the tier takes hits only.
 * The keys go in from K down to 1, a batch of each rank a round: a full
 * bucket evicts the key written longest ago, so the zipf-hot low numbers,
 * written last, are not the ones evicted. */
static double write_keys(struct tctx *c)
{
    uint64_t keys = c->o->keys, r = (uint64_t)c->rank, np = (uint64_t)c->np;
    uint64_t mine = keys > r ? (keys - r - 1) / np + 1 : 0;
    uint64_t most = (keys - 1) / np + 1;           /* rank 0's */
    int rc;

    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = bench_now_ns();
    for (uint64_t done = 0; done < most; done += PUT_BATCH) {
        for (int turn = 0; turn < c->np; turn++) {
            if (turn == c->rank && done < mine) {
                /* indices mine-1-done down to mine-done-n of this rank */
                size_t n = mine - done < PUT_BATCH ? (size_t)(mine - done)
                                                   : PUT_BATCH;
                for (size_t i = 0; i < n; i++) {
                    uint64_t x = r + 1 + (mine - 1 - done - i) * np;
                    bench_make_key(x, c->keys + i * KEY_LEN);
                    bench_make_value(c->keys + i * KEY_LEN,
                                     c->exp + i * VALUE_LEN);
                }
                rc = mpikvs_put_batch(c->kvs, n, c->keys, c->exp);
                if (rc != MPIKVS_OK)
                    fail(c, "mpikvs_put_batch", rc);
            }
            /* the next writer starts after this one's puts: put_batch has
             * flushed its remote writes, and the barrier orders the
             * stores to the own node before the next rank's reads */
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    /* every key is in its home after it, for every rank */
    rc = mpikvs_fence(c->kvs);
    if (rc != MPIKVS_OK)
        fail(c, "mpikvs_fence", rc);
    return (double)(bench_now_ns() - t0) * 1e-9;
}

/* Epoch e: --ops zipf gets, timed a chunk at a time, then the fence that
 * publishes the epoch's remote hits. */
static void run_epoch(struct tctx *c, uint64_t e, struct epoch_local *l)
{
    uint64_t ops = c->o->ops;
    int rc;

    memset(l, 0, sizeof *l);
    MPI_Barrier(MPI_COMM_WORLD);
    for (uint64_t j = 0; j < ops; j += CHUNK) {
        size_t n = ops - j < CHUNK ? (size_t)(ops - j) : CHUNK;
        make_gets(c, e * ops + j, n);
        uint64_t t0 = bench_now_ns();
        for (size_t i = 0; i < n; i++) {
            rc = mpikvs_get(c->kvs, c->keys + i * KEY_LEN,
                            c->got + i * VALUE_LEN);
            if (rc < 0)
                fail(c, "mpikvs_get", rc);
            c->status[i] = rc;
        }
        l->busy_ns += bench_now_ns() - t0;
        for (size_t i = 0; i < n; i++)
            check_get(c, i, c->status[i], &l->hits, &l->misses, &l->wrong);
        l->gets += n;
    }
    /* the fence's own cost (publishing, and its barrier), not the time
     * the first rank waits there for the last */
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = bench_now_ns();
    rc = mpikvs_fence(c->kvs);
    if (rc != MPIKVS_OK)
        fail(c, "mpikvs_fence", rc);
    l->fence_ns = bench_now_ns() - t0;
}

static void reduce_epoch(const struct tctx *c, const struct epoch_local *l,
                         struct epoch_row *r)
{
    uint64_t sums[4] = {l->gets, l->hits, l->misses, l->wrong}, tot[4];
    uint64_t times[2] = {l->busy_ns, l->fence_ns}, tmax[2];

    MPI_Reduce(sums, tot, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(times, tmax, 2, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    if (c->rank != 0)
        return;
    r->gets = tot[0];
    r->hits = tot[1];
    r->misses = tot[2];
    r->wrong = tot[3];
    r->seconds = (double)tmax[0] * 1e-9;
    r->fence_seconds = (double)tmax[1] * 1e-9;
}

static void rank_stats(const struct tctx *c, mpikvs_stats_t *s)
{
    int rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_RANK, s, sizeof *s);

    if (rc != MPIKVS_OK)
        fail(c, "mpikvs_stats", rc);
}

/* The latency pass: --latency more zipf gets (draws after the epochs'),
 * each between its own two timer reads, and classified by the counters of
 * this rank it moved: tier_hits (a tier hit), tier_misses (another node's
 * key the tier did not have: a remote get, the tier lookup before it
 * included) or neither (the own node's key).  The counters are read
 * outside the timed code. */
static int latency_pass(struct tctx *c, struct latency *out)
{
    uint64_t n_all = c->o->latency, first = c->o->epochs * c->o->ops;
    double *ns = malloc((n_all ? n_all : 1) * sizeof *ns);
    double *scratch = malloc((n_all ? n_all : 1) * sizeof *scratch);
    unsigned char *cls = malloc(n_all ? n_all : 1);
    /* rank 0: every rank's median and p99 of each class */
    double *each = c->rank == 0 ? malloc(sizeof(double) * 2 * NCLS *
                                         (size_t)c->np)
                                : NULL;
    double *meds = c->rank == 0 ? malloc(sizeof(double) * (size_t)c->np)
                                : NULL;
    uint64_t hits = 0, misses = 0, wrong = 0;
    mpikvs_stats_t before, after;
    int ok = ns && scratch && cls && (c->rank != 0 || (each && meds));
    int all_ok;

    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "%s: %s --tier: rank %d: cannot allocate %llu "
                            "latency samples: %s (use a smaller "
                            "--latency)\n",
                    BENCH_PROG, SUB, c->rank, (unsigned long long)n_all,
                    strerror(ENOMEM));
        free(ns);
        free(scratch);
        free(cls);
        free(each);
        free(meds);
        return BENCH_EXIT_FAIL;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    rank_stats(c, &before);
    for (uint64_t j = 0; j < n_all; j += CHUNK) {
        size_t n = n_all - j < CHUNK ? (size_t)(n_all - j) : CHUNK;
        make_gets(c, first + j, n);
        for (size_t i = 0; i < n; i++) {
            uint64_t t0 = bench_tick_start(&c->timer);
            int rc = mpikvs_get(c->kvs, c->keys + i * KEY_LEN,
                                c->got + i * VALUE_LEN);
            uint64_t t1 = bench_tick_stop(&c->timer);
            if (rc < 0)
                fail(c, "mpikvs_get", rc);
            rank_stats(c, &after);
            double d = ((double)(t1 - t0) - c->overhead_ticks) *
                       c->timer.ns_per_tick;
            ns[j + i] = d > 0 ? d : 0;
            cls[j + i] = after.tier_hits != before.tier_hits ? CLS_TIER
                         : after.tier_misses != before.tier_misses
                             ? CLS_REMOTE
                             : CLS_OWN;
            before = after;
            check_get(c, i, rc, &hits, &misses, &wrong);
        }
    }

    /* per class: the job's mean, the median of the ranks' medians and the
     * largest of their 99th percentiles */
    uint64_t cnt[NCLS] = {0}, cnt_all[NCLS];
    double sum[NCLS] = {0}, sum_all[NCLS], mine[2 * NCLS];
    for (int k = 0; k < NCLS; k++) {
        size_t m = 0;
        for (uint64_t i = 0; i < n_all; i++)
            if (cls[i] == k)
                scratch[m++] = ns[i];
        cnt[k] = m;
        for (size_t i = 0; i < m; i++)
            sum[k] += scratch[i];
        mine[2 * k] = mine[2 * k + 1] = -1.0;       /* none */
        if (m) {
            bench_sort_double(scratch, m);
            mine[2 * k] = bench_median_double(scratch, m);
            size_t p = (size_t)ceil(0.99 * (double)m);
            mine[2 * k + 1] = scratch[p ? p - 1 : 0];
        }
    }
    uint64_t sums[3] = {hits, misses, wrong}, tot[3];
    double oh = c->overhead_ticks * c->timer.ns_per_tick, oh_max;
    MPI_Reduce(cnt, cnt_all, NCLS, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(sum, sum_all, NCLS, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(sums, tot, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&oh, &oh_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Gather(mine, 2 * NCLS, MPI_DOUBLE, each, 2 * NCLS, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    if (c->rank == 0) {
        memset(out, 0, sizeof *out);
        out->hits = tot[0];
        out->misses = tot[1];
        out->wrong = tot[2];
        out->gets = tot[0] + tot[1];
        out->overhead_ns = oh_max;
        for (int k = 0; k < NCLS; k++) {
            size_t m = 0;
            out->n[k] = cnt_all[k];
            out->mean_ns[k] = cnt_all[k] ? sum_all[k] / (double)cnt_all[k]
                                         : -1.0;
            out->median_ns[k] = out->p99_ns[k] = -1.0;
            for (int r = 0; r < c->np; r++) {
                const double *e = each + 2 * NCLS * r + 2 * k;
                if (e[0] < 0)
                    continue;
                meds[m++] = e[0];
                if (e[1] > out->p99_ns[k])
                    out->p99_ns[k] = e[1];
            }
            if (m) {
                bench_sort_double(meds, m);
                out->median_ns[k] = bench_median_double(meds, m);
            }
        }
    }
    free(each);
    free(meds);
    free(ns);
    free(scratch);
    free(cls);
    return 0;
}

/* ---- output ------------------------------------------------------------- */

static double ratio(uint64_t num, uint64_t den)
{
    return den ? (double)num / (double)den : -1.0;
}

static void pct(char *buf, size_t len, double r)
{
    if (r < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f%%", 100.0 * r);
}

static void us(char *buf, size_t len, double ns)
{
    if (ns < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.3f", ns * 1e-3);
}

static double tier_rate(const mpikvs_stats_t *s)
{
    return ratio(s->tier_hits, s->tier_hits + s->tier_misses);
}

/* The MPI library, up to its first comma, and the one-sided component
 * asked for: what a remote get costs depends on both. */
static void mpi_text(char v[MPI_MAX_LIBRARY_VERSION_STRING],
                     const char **osc)
{
    int n = 0;

    MPI_Get_library_version(v, &n);
    v[n > 0 && n < MPI_MAX_LIBRARY_VERSION_STRING ? n : 0] = '\0';
    v[strcspn(v, ",\n")] = '\0';
    for (char *p = v; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            *p = '?';
    *osc = getenv("OMPI_MCA_osc");
    if (!*osc || !**osc || strpbrk(*osc, "\"\\"))
        *osc = "(unset)";
}

static const char *source_text(const struct tctx *c, char *buf, size_t len)
{
    switch (c->src) {
    case SRC_TEMP:
        snprintf(buf, len, "a temporary config");
        break;
    case SRC_FILE:
        snprintf(buf, len, "%s", c->config);
        break;
    default:
        snprintf(buf, len, "the job's --dht-config (spank_mpikvs)");
        break;
    }
    return buf;
}

static void print_table(const struct tctx *c, double write_s,
                        const mpikvs_stats_t *wst,
                        const struct epoch_row *rows,
                        const struct latency *lat, uint64_t wrong_all,
                        uint64_t checked)
{
    const struct dht_opts *o = c->o;
    char src[4200];

    printf("# %s %s dht --tier: np=%d nodes=%d%s mode=%s transport=%s\n",
           BENCH_PROG, PACKAGE_VERSION, c->np, c->nodes,
           c->virtual_nodes ? " (virtual)" : "", c->mode,
           mpikvs_transport(c->kvs));
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    const char *osc;
    mpi_text(lib, &osc);
    printf("# mpi: %s; OMPI_MCA_osc=%s\n", lib, osc);
    printf("# config: %s: table '%s', %u-byte keys, %u-byte values, %s, "
           "caching %s\n",
           source_text(c, src, sizeof src), c->table, KEY_LEN, VALUE_LEN,
           c->size_text, c->caching);
    printf("# write: the keys of %llu..1, each once, round robin over the "
           "ranks, one rank after the other, then mpikvs_fence: %.3f s, "
           "%llu evictions\n",
           (unsigned long long)o->keys, write_s,
           (unsigned long long)wst->evictions);
    if (wst->evictions)
        printf("# note: evicted keys miss in every epoch, other nodes' ones "
               "through MPI, as the tier takes hits only (a larger --size "
               "keeps them)\n");
    if (c->nodes < 2)
        printf("# note: one node: no key is another node's, the tier stays "
               "empty (run on two nodes or with MPIKVS_VIRTUAL_NODES=2)\n");
    printf("# epochs: %llu zipf gets (skew %.2f over 1..%llu) per rank, one "
           "mpikvs_get each, then mpikvs_fence; seed %llu\n",
           (unsigned long long)o->ops, BENCH_ZIPF_THETA,
           (unsigned long long)o->keys, (unsigned long long)o->seed);
    printf("# counters: the job's, from before an epoch to after its fence "
           "(published: at that fence); seconds: the slowest rank's time "
           "in mpikvs_get; fence_ms: the slowest rank's mpikvs_fence, "
           "entered by all together\n");
    printf("%5s %10s %10s %10s %10s %9s %9s %8s %7s %9s %6s %8s %7s %8s\n",
           "epoch", "gets", "direct", "remote", "tier_hits", "tier_rate",
           "published", "dropped", "stalls", "hit_rate", "wrong", "seconds",
           "Mget/s", "fence_ms");
    for (uint64_t e = 0; e < o->epochs; e++) {
        const struct epoch_row *r = &rows[e];
        char tr[16], hr[16];
        pct(tr, sizeof tr, tier_rate(&r->st));
        pct(hr, sizeof hr, ratio(r->hits, r->gets));
        printf("%5llu %10llu %10llu %10llu %10llu %9s %9llu %8llu %7llu %9s "
               "%6llu %8.3f %7.3f %8.1f\n",
               (unsigned long long)e + 1, (unsigned long long)r->gets,
               (unsigned long long)r->st.direct,
               (unsigned long long)r->st.remote,
               (unsigned long long)r->st.tier_hits, tr,
               (unsigned long long)r->st.tier_published,
               (unsigned long long)r->st.tier_dropped,
               (unsigned long long)r->st.tier_stalls, hr,
               (unsigned long long)r->wrong, r->seconds,
               r->seconds > 0 ? (double)r->gets / r->seconds * 1e-6 : 0.0,
               r->fence_seconds * 1e3);
    }
    if (o->latency) {
        char desc[160];
        bench_timer_describe(&c->timer, desc, sizeof desc);
        printf("# latency: %llu more zipf gets per rank after the last "
               "fence, each timed alone (%s, its own cost of %.0f ns "
               "subtracted) and classified by the rank's counters it moved; "
               "mean over the job, median of the ranks' medians, largest "
               "of their p99\n",
               (unsigned long long)o->latency, desc, lat->overhead_ns);
        printf("%-8s %10s %10s %10s %10s\n", "path", "gets", "mean_us",
               "median_us", "p99_us");
        for (int k = 0; k < NCLS; k++) {
            char m[24], med[24], p99[24];
            us(m, sizeof m, lat->mean_ns[k]);
            us(med, sizeof med, lat->median_ns[k]);
            us(p99, sizeof p99, lat->p99_ns[k]);
            printf("%-8s %10llu %10s %10s %10s\n", cls_name[k],
                   (unsigned long long)lat->n[k], m, med, p99);
        }
        if (lat->n[CLS_TIER] && lat->n[CLS_REMOTE])
            printf("tier_hit/remote: mean %.3f, median %.3f\n",
                   lat->mean_ns[CLS_TIER] / lat->mean_ns[CLS_REMOTE],
                   lat->median_ns[CLS_TIER] / lat->median_ns[CLS_REMOTE]);
        else
            printf("tier_hit/remote: - (no %s in the latency pass)\n",
                   lat->n[CLS_TIER] ? "remote get" : "tier hit");
    }
    printf("checked %llu values: wrong=%llu\n", (unsigned long long)checked,
           (unsigned long long)wrong_all);
}

static void json_num(const char *name, double v, const char *end)
{
    if (v < 0)
        printf("\"%s\": null%s", name, end);
    else
        printf("\"%s\": %.6g%s", name, v, end);
}

static void print_json(const struct tctx *c, double write_s,
                       const mpikvs_stats_t *wst,
                       const struct epoch_row *rows,
                       const struct latency *lat, uint64_t wrong_all,
                       uint64_t checked)
{
    const struct dht_opts *o = c->o;
    static const char *const src_name[] = {"temporary", "file", "job"};

    printf("{\n  \"benchmark\": \"dht-tier\",\n  \"version\": \"%s\",\n",
           PACKAGE_VERSION);
    printf("  \"np\": %d,\n  \"nodes\": %d,\n  \"virtual_nodes\": %s,\n",
           c->np, c->nodes, c->virtual_nodes ? "true" : "false");
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    const char *osc;
    mpi_text(lib, &osc);
    printf("  \"mpi\": \"%s\",\n  \"ompi_mca_osc\": \"%s\",\n", lib, osc);
    /* a table name is [A-Za-z0-9_-] (mpikvs.json(5)): no escaping */
    printf("  \"config\": {\"source\": \"%s\", \"table\": \"%s\", "
           "\"caching\": \"%s\", \"memory\": \"%s\"},\n",
           src_name[c->src], c->table, c->caching, c->size_text);
    printf("  \"mode\": \"%s\",\n  \"transport\": \"%s\",\n"
           "  \"key_bytes\": %u,\n"
           "  \"value_bytes\": %u,\n  \"size_per_node\": %llu,\n",
           c->mode, mpikvs_transport(c->kvs), KEY_LEN, VALUE_LEN,
           (unsigned long long)c->size_per_node);
    printf("  \"keys\": %llu,\n  \"zipf\": {\"skew\": %.2f, \"n\": %llu},\n"
           "  \"gets_per_epoch\": %llu,\n  \"epochs\": %llu,\n"
           "  \"seed\": %llu,\n",
           (unsigned long long)o->keys, BENCH_ZIPF_THETA,
           (unsigned long long)o->keys, (unsigned long long)o->ops,
           (unsigned long long)o->epochs, (unsigned long long)o->seed);
    printf("  \"write\": {\"seconds\": %.6f, \"evictions\": %llu},\n",
           write_s, (unsigned long long)wst->evictions);
    printf("  \"rows\": [\n");
    for (uint64_t e = 0; e < o->epochs; e++) {
        const struct epoch_row *r = &rows[e];
        printf("    {\"epoch\": %llu, \"gets\": %llu, \"hits\": %llu, "
               "\"misses\": %llu, \"wrong\": %llu, \"direct\": %llu, "
               "\"remote\": %llu, \"tier_hits\": %llu, "
               "\"tier_misses\": %llu, ",
               (unsigned long long)e + 1, (unsigned long long)r->gets,
               (unsigned long long)r->hits, (unsigned long long)r->misses,
               (unsigned long long)r->wrong,
               (unsigned long long)r->st.direct,
               (unsigned long long)r->st.remote,
               (unsigned long long)r->st.tier_hits,
               (unsigned long long)r->st.tier_misses);
        json_num("tier_hit_rate", tier_rate(&r->st), ", ");
        printf("\"tier_published\": %llu, \"tier_dropped\": %llu, "
               "\"tier_stalls\": %llu, "
               "\"checksum_retries\": %llu, \"invalidations\": %llu, "
               "\"seconds\": %.6f, \"fence_seconds\": %.6f}%s\n",
               (unsigned long long)r->st.tier_published,
               (unsigned long long)r->st.tier_dropped,
               (unsigned long long)r->st.tier_stalls,
               (unsigned long long)r->st.checksum_retries,
               (unsigned long long)r->st.invalidations, r->seconds,
               r->fence_seconds, e + 1 < o->epochs ? "," : "");
    }
    printf("  ],\n");
    if (o->latency) {
        char desc[160];
        bench_timer_describe(&c->timer, desc, sizeof desc);
        printf("  \"latency\": {\n    \"gets_per_rank\": %llu,\n"
               "    \"timer\": \"%s\",\n    \"timer_overhead_ns\": %.1f,\n",
               (unsigned long long)o->latency, desc, lat->overhead_ns);
        for (int k = 0; k < NCLS; k++) {
            printf("    \"%s\": {\"gets\": %llu, ", cls_name[k],
                   (unsigned long long)lat->n[k]);
            json_num("mean_ns", lat->mean_ns[k], ", ");
            json_num("median_ns", lat->median_ns[k], ", ");
            json_num("p99_ns", lat->p99_ns[k], "},\n");
        }
        bool both = lat->n[CLS_TIER] && lat->n[CLS_REMOTE];
        printf("    ");
        json_num("ratio_mean", both ? lat->mean_ns[CLS_TIER] /
                                          lat->mean_ns[CLS_REMOTE]
                                    : -1.0, ", ");
        json_num("ratio_median", both ? lat->median_ns[CLS_TIER] /
                                            lat->median_ns[CLS_REMOTE]
                                      : -1.0, ",\n");
        printf("    \"wrong\": %llu\n  },\n", (unsigned long long)lat->wrong);
    } else {
        printf("  \"latency\": null,\n");
    }
    printf("  \"checked\": %llu,\n  \"wrong\": %llu\n}\n",
           (unsigned long long)checked, (unsigned long long)wrong_all);
}

/* ---- the run ------------------------------------------------------------ */

int dht_tier_run(const struct dht_opts *o, int rank, int np)
{
    struct tctx c = {.o = o, .rank = rank, .np = np};
    struct epoch_row *rows = NULL;
    struct latency lat = {0};
    mpikvs_stats_t s0, s1, wst;
    double write_s;
    char why[WHY_LEN];
    int status = 0, rc;

    c.nodes = dht_nodes_to_size_for(np);   /* open tells the real ones */
    bench_zipf_init(&c.zipf, o->keys, BENCH_ZIPF_THETA);
    bench_timer_init(&c.timer, "auto", why, sizeof why);   /* never fails */
    c.overhead_ticks = bench_timer_overhead(&c.timer);
    c.keys = malloc(CHUNK * KEY_LEN);
    c.exp = malloc(CHUNK * VALUE_LEN);
    c.got = malloc(CHUNK * VALUE_LEN);
    c.status = malloc(CHUNK * sizeof *c.status);
    if (rank == 0)
        rows = calloc((size_t)o->epochs, sizeof *rows);
    snprintf(why, sizeof why, "out of memory for the buffers");
    bool have = c.keys && c.exp && c.got && c.status && (rank != 0 || rows);
    if (agree(&c, have ? NULL : why) || open_cache(&c)) {
        status = BENCH_EXIT_FAIL;
        goto out;
    }
    dht_nodes(c.kvs, rank, &c.nodes, &c.virtual_nodes);

    dht_job_stats(c.kvs, rank, &s0);
    write_s = write_keys(&c);
    dht_job_stats(c.kvs, rank, &s1);
    dht_stats_diff(&s0, &s1, &wst);
    uint64_t wrong_all = 0, checked = 0;
    for (uint64_t e = 0; e < o->epochs; e++) {
        struct epoch_local l;
        mpikvs_stats_t before = s1;
        run_epoch(&c, e, &l);
        dht_job_stats(c.kvs, rank, &s1);
        struct epoch_row scratch = {0};
        struct epoch_row *r = rank == 0 ? &rows[e] : &scratch;
        reduce_epoch(&c, &l, r);
        dht_stats_diff(&before, &s1, &r->st);
        wrong_all += r->wrong;
        checked += r->gets;
    }
    if (o->latency) {
        if (latency_pass(&c, &lat)) {
            status = BENCH_EXIT_FAIL;
            goto close;
        }
        wrong_all += lat.wrong;
        checked += lat.gets;
    }

    if (rank == 0) {
        if (o->json)
            print_json(&c, write_s, &wst, rows, &lat, wrong_all, checked);
        else
            print_table(&c, write_s, &wst, rows, &lat, wrong_all, checked);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "%s: %s --tier: cannot write the results: %s\n",
                    BENCH_PROG, SUB, strerror(errno));
            status = BENCH_EXIT_FAIL;
        }
    }
close:
    rc = mpikvs_close(&c.kvs);
    if (rc != MPIKVS_OK)
        fail(&c, "mpikvs_close", rc);
out:
    free(rows);
    free(c.keys);
    free(c.exp);
    free(c.got);
    free(c.status);
    return status;
}
