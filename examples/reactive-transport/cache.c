/*
 * cache.c - keys, batched gets and puts, and what a hit makes of a cell.
 */
#define _GNU_SOURCE
#include "cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpolate.h"
#include "mpikvs.h"
#include "mpikvs_statistics.h"

#define VALUE_BYTES (CACHE_VALUE_FIELDS * sizeof(double))

/* Members a neighbourhood query asks for: the most a table's
 * neighbourhood keeps (mpikvs.json(5) "near" "members"), so that a
 * query gets every member there is. */
#define NEAR_MAX 64
/* Neighbourhood queries per mpikvs_get_near_batch: their buffers hold
 * NEAR_MAX members each (10 KiB), so a large --batch is queried in
 * chunks. */
#define NEAR_CHUNK 256

struct rt_cache {
    mpikvs_t      *kvs;
    MPI_Comm       progress;   /* nothing is sent on it: see poke() */
    size_t         key_size;
    size_t         cap;        /* cells the buffers hold */
    unsigned char *keys;       /* cap keys */
    double        *values;     /* cap values of CACHE_VALUE_FIELDS */
    int           *status;
    size_t        *missed;     /* indices of the cells that missed */
    size_t        *to_verify;  /* ... of the hits returned as MPIKVS_VERIFY */
    unsigned char *fresh_keys; /* the distinct missed keys, to put */
    double        *fresh_values;
    /* neighbourhoods of the misses (interpolate) */
    size_t         near_inputs;   /* doubles of a member's inputs */
    unsigned char *near_keys;     /* cap keys */
    mpikvs_near_t *near;          /* cap queries */
    int           *near_status;
    double        *near_distances;  /* cap * NEAR_MAX */
    double        *near_in;         /* cap * NEAR_MAX * near_inputs */
    double        *near_values;     /* cap * NEAR_MAX values */
};

/* The library's detailed message, without the line ends a config
 * diagnosis carries, into buf. */
static const char *last_error(const mpikvs_t *kvs, char *buf, size_t len)
{
    const char *more = mpikvs_last_error(kvs);

    snprintf(buf, len, "%s", more ? more : "");
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = p[1] ? ' ' : '\0';
    return buf;
}

static int kvs_fail(struct rt_err *err, const mpikvs_t *kvs,
                    const char *call, int rc)
{
    char more[400];

    last_error(kvs, more, sizeof(more));
    return rt_fail(err, "%s: %s%s%s", call, mpikvs_strerror(rc),
                   *more ? ": " : "", more);
}

/* Every rank learns whether every rank succeeded; 0 if all did. */
static int all_ok(MPI_Comm comm, int rc)
{
    int mine = rc != 0, any = 1;

    rt_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm),
           "MPI_Allreduce");
    return any ? -1 : 0;
}

/* The table must have the key and value this program writes: the key's
 * field count is checked by rounding a probe, the value by its size. */
static int check_table(struct rt_cache *c, struct rt_err *err)
{
    double probe[CACHE_KEY_FIELDS] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    unsigned char *key = malloc(c->key_size);
    int rc;

    if (!key)
        return rt_fail(err, "out of memory");
    rc = mpikvs_round_key(c->kvs, probe, CACHE_KEY_FIELDS, key);
    free(key);
    if (rc != MPIKVS_OK) {
        char more[300];
        return rt_fail(err, "the config's table does not fit this program "
                            "(%s: %s): its key must be %d double fields, "
                            "Ca, Mg, Cl, C, Calcite, Dolomite, dt, as in "
                            "etc/examples/reactive-transport.json",
                       mpikvs_strerror(rc),
                       last_error(c->kvs, more, sizeof(more)),
                       CACHE_KEY_FIELDS);
    }
    if (mpikvs_value_size(c->kvs) != VALUE_BYTES)
        return rt_fail(err, "the config's table has %zu-byte values; this "
                            "program stores %d doubles (%zu bytes): the "
                            "state after dt and the input it came from, "
                            "as in etc/examples/reactive-transport.json",
                       mpikvs_value_size(c->kvs), CACHE_VALUE_FIELDS,
                       VALUE_BYTES);
    return 0;
}

static void free_buffers(struct rt_cache *c)
{
    free(c->near_keys);
    free(c->near);
    free(c->near_status);
    free(c->near_distances);
    free(c->near_in);
    free(c->near_values);
    c->near_keys = NULL;
    c->near = NULL;
    c->near_status = NULL;
    c->near_distances = c->near_in = c->near_values = NULL;
    free(c->keys);
    free(c->values);
    free(c->status);
    free(c->missed);
    free(c->to_verify);
    c->to_verify = NULL;
    free(c->fresh_keys);
    free(c->fresh_values);
    c->keys = c->fresh_keys = NULL;
    c->values = c->fresh_values = NULL;
    c->status = NULL;
    c->missed = NULL;
    c->cap = 0;
}

/* --interpolate needs the table's neighbourhoods. */
static int check_near(struct rt_cache *c, struct rt_err *err)
{
    c->near_inputs = mpikvs_near_inputs(c->kvs);
    if (c->near_inputs == 0)
        return rt_fail(err, "--interpolate needs neighbourhoods, and the "
                            "config's table has no \"near\" setting (see "
                            "etc/examples/reactive-transport-near.json)");
    return 0;
}

int cache_open(MPI_Comm comm, const struct rt_options *o,
               struct rt_cache **out, struct rt_err *err)
{
    const char *config = o->config;
    mpikvs_options_t opt = {.size = sizeof(mpikvs_options_t),
                            .config = config, .table = o->table};
    struct rt_cache *c = calloc(1, sizeof(*c));
    int rc;

    *out = NULL;
    if (o->verify > 0.0) {
        opt.flags |= MPIKVS_OPEN_VERIFY;
        opt.verify = o->verify;
    }
    if (c)
        c->progress = MPI_COMM_NULL;
    /* mpikvs_open is collective: every rank must call it, also one that
     * is out of memory, which then leaves at the check after it */
    mpikvs_t *kvs = NULL;
    rc = mpikvs_open(comm, &opt, &kvs);
    if (rc != MPIKVS_OK) {
        const char *env = getenv("MPIKVS_CONFIG");
        int rank = 0;
        free(c);
        kvs_fail(err, NULL, "mpikvs_open", rc);
        if (!config && !(env && *env) && !getenv("MPIKVS_LAYOUT"))
            rt_fail(err, "no job config: give --config FILE (e.g. "
                         "etc/examples/reactive-transport.json), set "
                         "MPIKVS_CONFIG, or submit with --dht-config");
        /* the open failed on every rank, mostly for the same reason */
        rt_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
        err->echo = rank != 0;
        return -1;
    }
    /* collective: every rank dups, also one without c */
    MPI_Comm progress;
    rt_mpi(MPI_Comm_dup(comm, &progress), "MPI_Comm_dup");
    if (c) {
        c->kvs = kvs;
        c->key_size = mpikvs_key_size(kvs);
        c->progress = progress;
        rc = check_table(c, err);
        if (rc == 0 && o->interpolate)
            rc = check_near(c, err);
        /* every rank has the same table: rank 0 says what is wrong */
        int rank = 0;
        rt_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
        if (rc && rank != 0)
            err->echo = true;
    } else {
        rc = rt_fail(err, "out of memory");
    }
    if (all_ok(comm, rc)) {
        if (rc == 0)
            rt_echo(err, "another rank could not use the cache (see its "
                         "message)");
        mpikvs_close(&kvs);
        rt_mpi(MPI_Comm_free(&progress), "MPI_Comm_free");
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int reserve(struct rt_cache *c, size_t n, struct rt_err *err)
{
    if (n <= c->cap)
        return 0;
    free_buffers(c);
    c->keys = malloc(n * c->key_size);
    c->values = malloc(n * VALUE_BYTES);
    c->status = malloc(n * sizeof(int));
    c->missed = malloc(n * sizeof(size_t));
    c->to_verify = malloc(n * sizeof(size_t));
    c->fresh_keys = malloc(n * c->key_size);
    c->fresh_values = malloc(n * VALUE_BYTES);
    if (c->near_inputs) {
        size_t q = n < NEAR_CHUNK ? n : NEAR_CHUNK;
        c->near_keys = malloc(q * c->key_size);
        c->near = malloc(q * sizeof(mpikvs_near_t));
        c->near_status = malloc(q * sizeof(int));
        c->near_distances = malloc(q * NEAR_MAX * sizeof(double));
        c->near_in = malloc(q * NEAR_MAX * c->near_inputs * sizeof(double));
        c->near_values = malloc(q * NEAR_MAX * VALUE_BYTES);
    }
    if (!c->keys || !c->values || !c->status || !c->missed ||
        !c->to_verify || !c->fresh_keys || !c->fresh_values ||
        (c->near_inputs &&
         (!c->near_keys || !c->near || !c->near_status ||
          !c->near_distances || !c->near_in || !c->near_values))) {
        free_buffers(c);
        return rt_fail(err, "out of memory for the keys and values of %zu "
                            "cells",
                       n);
    }
    c->cap = n;
    return 0;
}

/* Let MPI make progress.  Across nodes, other ranks read this node's
 * buckets with MPI_Get on the window this node's leader exposes; where
 * one-sided communication is emulated over messages (Open MPI's pt2pt,
 * or ucx over TCP), such a get is served only when the target rank is
 * inside MPI, and a rank in CVODE may not be for a long time.  A probe
 * between solves (a microsecond, against hundreds for a solve) lets the
 * progress engine serve them. */
static void poke(const struct rt_cache *c)
{
    int flag = 0;

    rt_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->progress, &flag,
                      MPI_STATUS_IGNORE),
           "MPI_Iprobe");
}

/* Order missed cells by their key, so that equal keys sit together. */
static int compare_keys(const void *a, const void *b, void *data)
{
    const struct rt_cache *c = data;
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int d = memcmp(c->keys + i * c->key_size, c->keys + j * c->key_size,
                   c->key_size);

    /* equal keys: by index, so that the first cell of a group solves */
    return d ? d : (i > j) - (i < j);
}

/* The cell's new state from a result computed for another input of the
 * same key. */
static void reuse(const double *value, double *cell, enum rt_reuse how)
{
    const double *after = value, *before = value + CHEM_NSTATE;

    for (int i = 0; i < CHEM_NSTATE; i++) {
        double v = how == RT_REUSE_STATE ? after[i]
                                         : cell[i] + (after[i] - before[i]);
        cell[i] = v > 0.0 ? v : 0.0;
    }
}

/* A hit the library asks to verify: CVODE's result for the cell, the
 * cached one (by the run's reuse rule) compared with it per field, the
 * largest error reported.  The cell takes CVODE's result. */
static int verify_hit(struct rt_cache *c, struct chem_solver *s,
                      const struct rt_options *o, const void *key,
                      const double *value, double *cell,
                      struct cache_counts *counts, struct rt_err *err)
{
    double cached[CHEM_NSTATE], exact[CHEM_NSTATE], worst = 0.0;

    memcpy(cached, cell, sizeof(cached));
    reuse(value, cached, o->reuse);
    if (chem_solve(s, cell, o->dt, exact, err))
        return -1;
    poke(c);
    for (int f = 0; f < CHEM_NSTATE; f++) {
        double scale = fabs(exact[f]) > CACHE_VERIFY_FLOOR
                           ? fabs(exact[f])
                           : CACHE_VERIFY_FLOOR;
        double e = fabs(cached[f] - exact[f]) / scale;
        counts->verify_sum[f] += e;
        if (e > counts->verify_max[f])
            counts->verify_max[f] = e;
        if (e > worst)
            worst = e;
    }
    double start = MPI_Wtime();
    int rc = mpikvs_verify_report(c->kvs, key, worst);
    counts->dht_seconds += MPI_Wtime() - start;
    if (rc != MPIKVS_OK)
        return kvs_fail(err, c->kvs, "mpikvs_verify_report", rc);
    counts->verified++;
    memcpy(cell, exact, sizeof(exact));
    return 0;
}

/* Keep the members within max_distance (0: all) at the front of near's
 * buffers; how many there are. */
static size_t close_members(mpikvs_near_t *near, size_t ninputs,
                            double max_distance)
{
    size_t kept = 0;

    if (max_distance <= 0.0)
        return near->found;
    for (size_t j = 0; j < near->found; j++) {
        if (!(near->distances[j] <= max_distance))
            continue;
        if (kept != j) {
            double *v = near->values;
            memcpy(v + kept * CACHE_VALUE_FIELDS, v + j * CACHE_VALUE_FIELDS,
                   VALUE_BYTES);
            memcpy(near->inputs + kept * ninputs, near->inputs + j * ninputs,
                   ninputs * sizeof(double));
            near->distances[kept] = near->distances[j];
        }
        kept++;
    }
    return kept;
}

/* Interpolate the misses missed[first, first + n) from their
 * neighbourhoods, one mpikvs_get_near_batch for them: those accepted
 * are done (and not cached: the cache keeps CVODE's results only); the
 * rest are appended to missed[*left]. */
static int interpolate_chunk(struct rt_cache *c, const struct rt_options *o,
                             cell_t *cells, size_t first, size_t n,
                             size_t *left, struct cache_counts *counts,
                             struct rt_err *err)
{
    const size_t ks = c->key_size;

    for (size_t m = 0; m < n; m++) {
        memcpy(c->near_keys + m * ks, c->keys + c->missed[first + m] * ks,
               ks);
        c->near[m] = (mpikvs_near_t){
            .max = NEAR_MAX,
            .distances = c->near_distances + m * NEAR_MAX,
            .inputs = c->near_in + m * NEAR_MAX * c->near_inputs,
            .inputs_len = NEAR_MAX * c->near_inputs,
            .values = c->near_values + m * NEAR_MAX * CACHE_VALUE_FIELDS,
            .values_len = NEAR_MAX * VALUE_BYTES,
        };
    }
    double start = MPI_Wtime();
    int rc = mpikvs_get_near_batch(c->kvs, n, c->near_keys, c->near,
                                   c->near_status);
    counts->dht_seconds += MPI_Wtime() - start;
    if (rc != MPIKVS_OK)
        return kvs_fail(err, c->kvs, "mpikvs_get_near_batch", rc);
    for (size_t m = 0; m < n; m++) {
        const size_t i = c->missed[first + m];
        mpikvs_near_t *near = &c->near[m];
        double out[CHEM_NSTATE];

        size_t found = 0;
        if (c->near_status[m] == MPIKVS_OK) {
            counts->near_members += near->found;
            found = close_members(near, c->near_inputs, o->max_distance);
        }
        if (found < (size_t)o->min_members) {
            counts->cvode_misses++;
            c->missed[(*left)++] = i;
            continue;
        }
        switch (interp_idw(near->values, found, cells[i], out)) {
        case INTERP_ACCEPTED:
            /* checked again as the cell will hold it */
            if (interp_check(cells[i], out) != INTERP_ACCEPTED)
                counts->mass_violations++;
            memcpy(cells[i], out, sizeof(out));
            counts->interpolated++;
            break;
        case INTERP_UNBALANCED:
            counts->rejected_balance++;
            c->missed[(*left)++] = i;
            break;
        case INTERP_NEGATIVE:
            counts->rejected_negative++;
            c->missed[(*left)++] = i;
            break;
        }
    }
    return 0;
}

/* The misses of a batch, NEAR_CHUNK at a time; *nmissed becomes the
 * number left for CVODE, at the front of c->missed. */
static int interpolate_misses(struct rt_cache *c, const struct rt_options *o,
                              cell_t *cells, size_t *nmissed,
                              struct cache_counts *counts,
                              struct rt_err *err)
{
    size_t left = 0;

    /* left never passes first: each chunk keeps at most what it read */
    for (size_t first = 0; first < *nmissed; first += NEAR_CHUNK) {
        size_t n = *nmissed - first < NEAR_CHUNK ? *nmissed - first
                                                  : NEAR_CHUNK;
        if (interpolate_chunk(c, o, cells, first, n, &left, counts, err))
            return -1;
    }
    *nmissed = left;
    return 0;
}

int cache_chemistry(struct rt_cache *c, struct chem_solver *s,
                    const struct rt_options *o, bool interpolate,
                    cell_t *cells, size_t n, struct cache_counts *counts,
                    struct rt_err *err)
{
    const size_t ks = c->key_size;
    const double dt = o->dt;
    size_t nmissed = 0, nfresh = 0, nverify = 0;
    int rc;

    if (reserve(c, n, err))
        return -1;
    double start = MPI_Wtime();
    for (size_t i = 0; i < n; i++) {
        double in[CACHE_KEY_FIELDS];
        memcpy(in, cells[i], sizeof(cell_t));
        in[CHEM_NSTATE] = dt;
        rc = mpikvs_round_key(c->kvs, in, CACHE_KEY_FIELDS, c->keys + i * ks);
        if (rc != MPIKVS_OK)
            return kvs_fail(err, c->kvs, "mpikvs_round_key", rc);
    }
    rc = mpikvs_get_batch(c->kvs, n, c->keys, c->values, c->status);
    if (rc != MPIKVS_OK)
        return kvs_fail(err, c->kvs, "mpikvs_get_batch", rc);
    counts->dht_seconds += MPI_Wtime() - start;
    counts->lookups += n;
    for (size_t i = 0; i < n; i++) {
        const double *value = c->values + i * CACHE_VALUE_FIELDS;
        if (c->status[i] == MPIKVS_OK) {
            counts->hits++;
            reuse(value, cells[i], o->reuse);
        } else if (c->status[i] == MPIKVS_VERIFY) {
            counts->hits++;
            c->to_verify[nverify++] = i;
        } else {
            c->missed[nmissed++] = i;
        }
    }
    /* A key is reported once per batch (the library remembers a verify
     * hit per key until its report): the first cell of each key is
     * verified, the others of the batch take the cached value. */
    qsort_r(c->to_verify, nverify, sizeof(size_t), compare_keys, c);
    for (size_t v = 0; v < nverify; v++) {
        const size_t i = c->to_verify[v];
        const double *value = c->values + i * CACHE_VALUE_FIELDS;
        if (v > 0 && !memcmp(c->keys + c->to_verify[v - 1] * ks,
                             c->keys + i * ks, ks))
            reuse(value, cells[i], o->reuse);
        else if (verify_hit(c, s, o, c->keys + i * ks, value, cells[i],
                            counts, err))
            return -1;
    }
    if (interpolate) {
        if (interpolate_misses(c, o, cells, &nmissed, counts, err))
            return -1;
    } else {
        counts->cvode_misses += nmissed;
    }

    /* Misses: one solve per distinct key; the other cells of its group
     * reuse it as they would a hit. */
    qsort_r(c->missed, nmissed, sizeof(size_t), compare_keys, c);
    for (size_t m = 0; m < nmissed;) {
        size_t first = c->missed[m];
        double *value = c->fresh_values + nfresh * CACHE_VALUE_FIELDS;
        memcpy(value + CHEM_NSTATE, cells[first], sizeof(cell_t));
        if (chem_solve(s, cells[first], dt, value, err))
            return -1;
        poke(c);
        memcpy(cells[first], value, sizeof(cell_t));
        memcpy(c->fresh_keys + nfresh * ks, c->keys + first * ks, ks);
        nfresh++;
        for (m++; m < nmissed &&
                   !memcmp(c->keys + c->missed[m] * ks, c->keys + first * ks,
                           ks);
             m++) {
            reuse(value, cells[c->missed[m]], o->reuse);
            counts->shared++;
        }
    }
    start = MPI_Wtime();
    rc = mpikvs_put_batch(c->kvs, nfresh, c->fresh_keys, c->fresh_values);
    if (rc != MPIKVS_OK)
        return kvs_fail(err, c->kvs, "mpikvs_put_batch", rc);
    counts->dht_seconds += MPI_Wtime() - start;
    return 0;
}

void cache_fence(struct rt_cache *c)
{
    int rc = mpikvs_fence(c->kvs);

    if (rc != MPIKVS_OK)
        rt_abort("mpikvs_fence: %s: %s", mpikvs_strerror(rc),
                 mpikvs_last_error(c->kvs));
}

void cache_job_stats(struct rt_cache *c, struct cache_stats *out)
{
    mpikvs_stats_t st;
    /* this run's, not those of earlier steps on a job-scope region */
    int rc = mpikvs_stats(c->kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &st,
                          sizeof st);

    if (rc != MPIKVS_OK)
        rt_abort("mpikvs_stats: %s: %s", mpikvs_strerror(rc),
                 mpikvs_last_error(c->kvs));
    *out = (struct cache_stats){
        .evictions = st.evictions,
        .invalidations = st.invalidations,
        .near_queries = st.near_queries,
        .near_members = st.near_members,
        .verify_hits = st.verify_hits,
        .verify_reports = st.verify_reports,
        .verify_error_sum = mpikvs_stat_double(st.verify_error_sum),
        .verify_error_max = mpikvs_stat_double(st.verify_error_max),
        .verify_histogram = {st.verify_below_1e_12, st.verify_below_1e_9,
                             st.verify_below_1e_6, st.verify_below_1e_3,
                             st.verify_above_1e_3},
    };
}

void cache_clear(struct rt_cache *c)
{
    int rc = mpikvs_clear(c->kvs);

    if (rc != MPIKVS_OK)
        rt_abort("mpikvs_clear: %s: %s", mpikvs_strerror(rc),
                 mpikvs_last_error(c->kvs));
}

const char *cache_transport(const struct rt_cache *c)
{
    return mpikvs_transport(c->kvs);
}

int cache_close(struct rt_cache **cp, struct rt_err *err)
{
    struct rt_cache *c = *cp;
    int rc = MPIKVS_OK;

    if (!c)
        return 0;
    if (c->kvs)
        rc = mpikvs_close(&c->kvs);
    if (c->progress != MPI_COMM_NULL)
        rt_mpi(MPI_Comm_free(&c->progress), "MPI_Comm_free");
    free_buffers(c);
    free(c);
    *cp = NULL;
    return rc == MPIKVS_OK ? 0 : kvs_fail(err, NULL, "mpikvs_close", rc);
}
