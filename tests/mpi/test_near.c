/*
 * test_near.c - neighbourhoods (a table's "near" setting,
 * mpikvs_get_near(3)) across nodes, in the mode given as argv[1], with
 * the config argv[2]: a table "near" of two double key fields of 4
 * digits, values of two doubles, near "coarser": 1 and 16 members, and a
 * table "exact" of the same key without near.
 *
 * Every rank puts points of its own neighbourhoods: a neighbourhood is a
 * cell of 3-digit coordinates (a, b), and its points are (a + i/1000,
 * b + j/1000) for i, j in 1..2, whose 4-digit keys round to (a, b) at 3
 * digits without a tie.  A point's value is a function of its
 * coordinates, so that a member's inputs and value are checked against
 * each other (never mixed).  Then, after a fence, every rank queries
 * every neighbourhood at (a + 0.003, b + 0.003), a key nobody put: it
 * must find exactly the four points, nearest first, with the distance of
 * the documented metric (the fields' differences over the query's
 * rounding step: 0.001 at 4 digits in [1, 10)).  Then: max below the
 * count, an empty neighbourhood, a rewritten point (updated, not doubled),
 * the batch form, bad arguments, a forgotten point, a clear and the
 * neighbourhoods filled again, and one filled past its members after the
 * clear (it keeps the newest).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mpitest.h"

#define CELLS 12          /* neighbourhoods a rank fills */
#define PER   4           /* points a neighbourhood gets */
#define MAXM  16          /* members a query asks for */
#define ALL   ((1 << PER) - 1)

static int rank, size;

/* Cell c of rank r: 3-digit coordinates in [1, 10). */
static void cell(int r, int c, double *a, double *b)
{
    *a = 1.0 + 0.01 * (double)(r * CELLS + c) + 0.1 * (double)r;
    *b = 2.0 + 0.02 * (double)c;
}

static void point(int r, int c, int p, double xy[2])
{
    double a, b;

    cell(r, c, &a, &b);
    xy[0] = a + 0.001 * (double)(1 + p % 2);
    xy[1] = b + 0.001 * (double)(1 + p / 2);
}

static void value_of(const double xy[2], double gen, double v[2])
{
    v[0] = 3.0 * xy[0] + (gen == 1.5 ? 1.0 : gen);
    v[1] = xy[1] * xy[1];
}

static void put_points(mpikvs_t *kvs, double gen)
{
    unsigned char key[16];
    double xy[2], v[2];

    for (int c = 0; c < CELLS; c++)
        for (int p = 0; p < PER; p++) {
            point(rank, c, p, xy);
            value_of(xy, gen, v);
            EXPECT(mpikvs_round_key(kvs, xy, 2, key) == MPIKVS_OK,
                   "round_key");
            EXPECT(mpikvs_put(kvs, key, v) == MPIKVS_OK, "put: %s",
                   mpikvs_last_error(kvs));
        }
}

struct out {
    double        dist[MAXM], in[MAXM * 2], val[MAXM * 2];
    unsigned char keys[MAXM * 16];
    mpikvs_near_t n;
};

static void out_init(struct out *o, size_t max)
{
    memset(o, 0, sizeof(*o));
    o->n.max = max;
    o->n.distances = o->dist;
    o->n.inputs = o->in;
    o->n.inputs_len = MAXM * 2;
    o->n.values = o->val;
    o->n.values_len = sizeof(o->val);
    o->n.keys = o->keys;
    o->n.keys_len = sizeof(o->keys);
}

/* The members of cell (r, c) as a query at its (3, 3) point finds them:
 * the four points, each consistent, nearest first. */
static void check_members(int r, int c, const struct out *o, double gen,
                          const char *what, int want)
{
    double a, b, q[2];
    int seen = 0, count = __builtin_popcount((unsigned)want);

    cell(r, c, &a, &b);
    q[0] = a + 0.003;
    q[1] = b + 0.003;
    EXPECT(o->n.found == (size_t)count, "%s: cell %d/%d: %zu members, want %d",
           what, r, c, o->n.found, count);
    for (size_t m = 0; m < o->n.found && m < MAXM; m++) {
        const double *in = o->in + 2 * m;
        double v[2], d;
        int p = -1;

        for (int i = 0; i < PER; i++) {
            double xy[2];
            point(r, c, i, xy);
            if (fabs(xy[0] - in[0]) < 1e-9 && fabs(xy[1] - in[1]) < 1e-9)
                p = i;
        }
        EXPECT(p >= 0, "%s: cell %d/%d: member (%g, %g) is not its point",
               what, r, c, in[0], in[1]);
        if (p >= 0)
            seen |= 1 << p;
        value_of(in, gen, v);
        EXPECT(fabs(o->val[2 * m] - v[0]) < 1e-9 &&
                   fabs(o->val[2 * m + 1] - v[1]) < 1e-9,
               "%s: member (%g, %g) has value (%g, %g), want (%g, %g)",
               what, in[0], in[1], o->val[2 * m], o->val[2 * m + 1], v[0],
               v[1]);
        d = hypot((in[0] - q[0]) / 0.001, (in[1] - q[1]) / 0.001);
        EXPECT(fabs(o->dist[m] - d) < 1e-6,
               "%s: member %zu distance %g, want %g", what, m, o->dist[m], d);
        EXPECT(m == 0 || o->dist[m - 1] <= o->dist[m],
               "%s: members not nearest first", what);
    }
    EXPECT(seen == want, "%s: cell %d/%d: points seen %#x, want %#x", what, r,
           c, seen, want);
}

static void query(mpikvs_t *kvs, int r, int c, struct out *o, int *rc)
{
    unsigned char key[16];
    double a, b, q[2];

    cell(r, c, &a, &b);
    q[0] = a + 0.003;
    q[1] = b + 0.003;
    EXPECT(mpikvs_round_key(kvs, q, 2, key) == MPIKVS_OK, "round_key");
    *rc = mpikvs_get_near(kvs, key, &o->n);
}

static void queries(mpikvs_t *kvs, double gen, const char *what)
{
    struct out o;
    int rc;

    for (int r = 0; r < size; r++)
        for (int c = 0; c < CELLS; c++) {
            out_init(&o, MAXM);
            query(kvs, r, c, &o, &rc);
            EXPECT(rc == MPIKVS_OK, "%s: get_near: %d %s", what, rc,
                   mpikvs_last_error(kvs));
            /* after the forget phase, point 0 of each rank's cell 0 is
             * gone */
            check_members(r, c, &o, gen, what,
                          c == 0 && gen == 1.5 ? ALL & ~1 : ALL);
        }
}

static void fewer_and_empty(mpikvs_t *kvs)
{
    unsigned char key[16];
    double q[2] = {9.5, 9.5};
    struct out o;
    int rc;

    /* the two nearest of four: (2, 2) and then (1, 2) or (2, 1) */
    out_init(&o, 2);
    query(kvs, (rank + 1) % size, 3, &o, &rc);
    EXPECT(rc == MPIKVS_OK && o.n.found == 2, "max 2: %d, %zu found", rc,
           o.n.found);
    EXPECT(fabs(o.dist[0] - hypot(1, 1)) < 1e-6 &&
               fabs(o.dist[1] - hypot(1, 2)) < 1e-6,
           "max 2: distances %g %g", o.dist[0], o.dist[1]);
    /* a cell nobody filled */
    out_init(&o, MAXM);
    EXPECT(mpikvs_round_key(kvs, q, 2, key) == MPIKVS_OK, "round_key");
    rc = mpikvs_get_near(kvs, key, &o.n);
    EXPECT(rc == MPIKVS_MISS && o.n.found == 0, "empty: %d, %zu found", rc,
           o.n.found);
}

static void batch(mpikvs_t *kvs)
{
    unsigned char keys[CELLS * 16];
    struct out *o = calloc(CELLS, sizeof(*o));
    mpikvs_near_t n[CELLS];
    int status[CELLS], peer = (rank + 1) % size;
    double a, b, q[2];

    for (int c = 0; c < CELLS; c++) {
        cell(peer, c, &a, &b);
        q[0] = a + 0.003;
        q[1] = b + 0.003;
        EXPECT(mpikvs_round_key(kvs, q, 2, keys + 16 * c) == MPIKVS_OK,
               "round_key");
        out_init(&o[c], MAXM);
        n[c] = o[c].n;
    }
    EXPECT(mpikvs_get_near_batch(kvs, CELLS, keys, n, status) == MPIKVS_OK,
           "get_near_batch: %s", mpikvs_last_error(kvs));
    for (int c = 0; c < CELLS; c++) {
        o[c].n = n[c];
        EXPECT(status[c] == MPIKVS_OK, "batch status %d", status[c]);
        check_members(peer, c, &o[c], 1.0, "batch", ALL);
    }
    free(o);
}

static void bad(mpikvs_t *kvs, mpikvs_t *exact)
{
    unsigned char key[16];
    double q[2] = {1.5, 2.5};
    struct out o;

    EXPECT(mpikvs_round_key(kvs, q, 2, key) == MPIKVS_OK, "round_key");
    out_init(&o, 0);
    EXPECT(mpikvs_get_near(kvs, key, &o.n) == MPIKVS_ERR_INVAL &&
               strstr(mpikvs_last_error(kvs), "max is 0"),
           "max 0: %s", mpikvs_last_error(kvs));
    out_init(&o, MAXM);
    o.n.inputs_len = 3;
    EXPECT(mpikvs_get_near(kvs, key, &o.n) == MPIKVS_ERR_INVAL &&
               strstr(mpikvs_last_error(kvs), "inputs_len is 3"),
           "short inputs: %s", mpikvs_last_error(kvs));
    out_init(&o, MAXM);
    o.n.values_len = 16;
    EXPECT(mpikvs_get_near(kvs, key, &o.n) == MPIKVS_ERR_INVAL &&
               strstr(mpikvs_last_error(kvs), "values_len is 16"),
           "short values: %s", mpikvs_last_error(kvs));
    out_init(&o, MAXM);
    EXPECT(mpikvs_get_near(exact, key, &o.n) == MPIKVS_ERR_INVAL &&
               strstr(mpikvs_last_error(exact), "no neighbourhoods"),
           "no near: %s", mpikvs_last_error(exact));
    EXPECT(mpikvs_near_inputs(kvs) == 2 && mpikvs_near_inputs(exact) == 0,
           "near_inputs %zu %zu", mpikvs_near_inputs(kvs),
           mpikvs_near_inputs(exact));
}

/* A neighbourhood of more points than members, filled after a clear:
 * it keeps the newest (rank 0 puts OVER points of cell (5.00, 6.00) one
 * after the other; the oldest leave, no newer one). */
#define OVER 20
static void overfull_point(int i, double xy[2])
{
    xy[0] = 5.0 + 0.001 * (double)(i % 5);
    xy[1] = 6.0 + 0.001 * (double)(i / 5);
}

static void overfull(mpikvs_t *kvs)
{
    unsigned char key[16];
    double xy[2], v[2], q[2] = {5.0045, 6.0045};
    struct out o;
    int rc, seen = 0;

    for (int i = 0; rank == 0 && i < OVER; i++) {
        overfull_point(i, xy);
        value_of(xy, 0.0, v);
        EXPECT(mpikvs_round_key(kvs, xy, 2, key) == MPIKVS_OK, "round_key");
        EXPECT(mpikvs_put(kvs, key, v) == MPIKVS_OK, "put");
    }
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");
    out_init(&o, MAXM);
    EXPECT(mpikvs_round_key(kvs, q, 2, key) == MPIKVS_OK, "round_key");
    rc = mpikvs_get_near(kvs, key, &o.n);
    EXPECT(rc == MPIKVS_OK && o.n.found == MAXM, "overfull: %d, %zu found",
           rc, o.n.found);
    for (size_t m = 0; m < o.n.found; m++)
        for (int i = 0; i < OVER; i++) {
            overfull_point(i, xy);
            if (fabs(xy[0] - o.in[2 * m]) < 1e-9 &&
                fabs(xy[1] - o.in[2 * m + 1]) < 1e-9)
                seen |= 1 << i;
        }
    EXPECT(seen == (((1 << OVER) - 1) & ~((1 << (OVER - MAXM)) - 1)),
           "overfull: points kept %#x, want the newest %d", seen, MAXM);
}

/* A forgotten key leaves its neighbourhood; a clear empties them all,
 * and puts after it fill them again. */
static void forget_and_clear(mpikvs_t *kvs)
{
    unsigned char key[16];
    double xy[2];
    struct out o;
    int rc;

    MPI_Barrier(MPI_COMM_WORLD);
    point(rank, 0, 0, xy);
    EXPECT(mpikvs_round_key(kvs, xy, 2, key) == MPIKVS_OK, "round_key");
    EXPECT(mpikvs_forget(kvs, key) == MPIKVS_OK, "forget: %s",
           mpikvs_last_error(kvs));
    MPI_Barrier(MPI_COMM_WORLD);
    queries(kvs, 1.5, "forgotten");   /* gen 1.5: the values of 1.0 */
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(mpikvs_clear(kvs) == MPIKVS_OK, "clear: %s",
           mpikvs_last_error(kvs));
    for (int r = 0; r < size; r++) {
        out_init(&o, MAXM);
        query(kvs, r, 1, &o, &rc);
        EXPECT(rc == MPIKVS_MISS && o.n.found == 0,
               "after clear: cell %d/1: %d, %zu found", r, rc, o.n.found);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    put_points(kvs, 2.0);
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");
    queries(kvs, 2.0, "refilled");
    overfull(kvs);
}

static mpikvs_t *open_table(const char *mode, const char *config,
                            const char *table)
{
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_t *kvs = NULL;
    int rc;

    opt.mode = mode;
    opt.config = config;
    opt.table = table;
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "rank %d: open %s: %s\n", rank, table,
                mpikvs_last_error(NULL));
        mt_abort("open failed");
    }
    return kvs;
}

int main(int argc, char **argv)
{
    mpikvs_stats_t st;
    mpikvs_t *kvs, *exact;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3)
        mt_abort("usage: test_near MODE CONFIG");
    mt_phase("open");
    kvs = open_table(argv[1], argv[2], "near");
    exact = open_table(argv[1], argv[2], "exact");

    mt_phase("put");
    put_points(kvs, 0.0);
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");
    mt_phase("query");
    queries(kvs, 0.0, "first");
    fewer_and_empty(kvs);
    mt_phase("rewrite");
    MPI_Barrier(MPI_COMM_WORLD);   /* every rank's queries first */
    put_points(kvs, 1.0);   /* the same keys, new values */
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");
    queries(kvs, 1.0, "rewritten");
    mt_phase("batch");
    batch(kvs);
    mt_phase("bad");
    bad(kvs, exact);
    mt_phase("forget");
    forget_and_clear(kvs);

    EXPECT(mpikvs_stats(kvs, MPIKVS_SCOPE_RANK | MPIKVS_SINCE_OPEN, &st,
                        sizeof(st)) == MPIKVS_OK,
           "stats");
    /* 4 rounds of size * CELLS queries (first, rewritten, forgotten,
     * refilled), 2 single (max 2, empty), CELLS batched, size after the
     * clear, 1 overfull; those that failed before querying are not
     * counted */
    EXPECT(st.near_queries ==
               (uint64_t)(4 * size * CELLS + 2 + CELLS + size + 1),
           "near_queries %llu", (unsigned long long)st.near_queries);
    EXPECT(st.near_members ==
               (uint64_t)((4 * size * CELLS + CELLS) * PER + 2 - size + MAXM),
           "near_members %llu", (unsigned long long)st.near_members);
    mt_phase("close");
    EXPECT(mpikvs_close(&exact) == MPIKVS_OK, "close exact");
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
}
