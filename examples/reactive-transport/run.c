/*
 * run.c - the time loop, its clocks, and the comparison of final fields.
 */
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

volatile sig_atomic_t rt_stop_signal;

/* What a step's agreement can carry. */
enum {
    STOP_NONE = 0,
    STOP_FAILED = 1,    /* some rank failed */
    STOP_SIGNAL = 2     /* some rank got SIGINT or SIGTERM */
};

/* The reference chemistry: every cell through CVODE. */
static int solve_all(struct chem_solver *s, cell_t *cells, size_t n,
                     double dt, const struct grid *g, struct rt_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (chem_solve(s, cells[i], dt, cells[i], err))
            return rt_fail(err, "cell x=%zu y=%zu: %.400s",
                           i % (size_t)g->nx,
                           (size_t)g->row0 + i / (size_t)g->nx, err->text);
    return 0;
}

/* The cached chemistry, a batch at a time: a batch is a work package, as
 * POET hands them to its workers.  A batch's new results are put before
 * the next batch looks its keys up, so a state met again in a later row
 * of this rank, or by another rank that gets there later, is a hit. */
static int cached_chemistry(const struct rt_options *o, struct rt_cache *c,
                            bool interpolate, struct chem_solver *s,
                            cell_t *cells, size_t n,
                            struct cache_counts *counts, struct rt_err *err)
{
    const size_t batch = o->batch ? (size_t)o->batch : (size_t)o->nx;

    for (size_t first = 0; first < n; first += batch)
        if (cache_chemistry(c, s, o, interpolate, cells + first,
                            n - first < batch ? n - first : batch, counts,
                            err))
            return -1;
    return 0;
}

static void progress(const struct rt_options *o, const struct grid *g,
                     const char *run, int step, double start)
{
    int every = o->steps >= 10 ? o->steps / 10 : 1;

    if (o->quiet || g->rank != 0 || (step % every && step != o->steps))
        return;
    fprintf(stderr, "%s: %s run: step %d of %d, %.1f s\n", RT_PROG, run,
            step, o->steps,
            MPI_Wtime() - start);
}

int run_simulation(const struct rt_options *o, struct grid *g,
                   struct chem_solver *s, struct rt_cache *cache,
                   bool interpolate, struct run_result *r,
                   struct rt_err *err)
{
    const size_t ncells = (size_t)g->nrows * (size_t)g->nx;
    const char *name = !cache ? "no-cache"
                       : interpolate ? "interpolating"
                                     : "cached";
    struct chem_work before, after;
    struct cache_stats st0 = {0}, st1 = {0};
    double t[4], local[4] = {0, 0, 0, 0}, worst[4], cvode_s;
    int stop = STOP_NONE, rc;

    memset(r, 0, sizeof(*r));
    r->cached = cache != NULL;
    r->interpolating = cache && interpolate;
    grid_reset(g);
    chem_work(s, &before);
    if (cache)
        cache_job_stats(cache, &st0);
    rt_mpi(MPI_Barrier(g->comm), "MPI_Barrier");
    double start = MPI_Wtime();

    for (int step = 1; step <= o->steps; step++) {
        int mine = STOP_NONE;
        t[0] = MPI_Wtime();
        grid_advect(g);
        t[1] = MPI_Wtime();
        if (cache)
            rc = cached_chemistry(o, cache, interpolate, s, grid_row(g, 0),
                                  ncells, &r->counts, err);
        else
            rc = solve_all(s, grid_row(g, 0), ncells, o->dt, g, err);
        t[2] = MPI_Wtime();
        if (rc)
            mine |= STOP_FAILED;
        if (rt_stop_signal)
            mine |= STOP_SIGNAL;
        /* Every rank learns at once whether to go on, so that a failure
         * or a signal on one rank still lets all of them close the
         * cache together. */
        rt_mpi(MPI_Allreduce(&mine, &stop, 1, MPI_INT, MPI_BOR, g->comm),
               "MPI_Allreduce");
        if (stop != STOP_NONE) {
            if (!(mine & STOP_FAILED))
                rt_echo(err, "%s at step %d",
                        stop & STOP_FAILED ? "another rank failed (see its "
                                             "message)"
                                           : "stopped by a signal",
                        step);
            return -1;
        }
        /* This step's puts are seen by every rank's gets of the next. */
        if (cache)
            cache_fence(cache);
        t[3] = MPI_Wtime();
        local[0] += t[1] - t[0];
        local[1] += t[2] - t[1];
        local[2] += t[3] - t[2];
        r->steps = step;
        progress(o, g, name, step, start);
    }
    rt_mpi(MPI_Barrier(g->comm), "MPI_Barrier");
    r->total_s = MPI_Wtime() - start;
    if (cache) {
        cache_job_stats(cache, &st1);
        r->dht = (struct cache_stats){
            .evictions = st1.evictions - st0.evictions,
            .invalidations = st1.invalidations - st0.invalidations,
            .near_queries = st1.near_queries - st0.near_queries,
            .near_members = st1.near_members - st0.near_members,
            .verify_hits = st1.verify_hits - st0.verify_hits,
            .verify_reports = st1.verify_reports - st0.verify_reports,
            .verify_error_sum = st1.verify_error_sum - st0.verify_error_sum,
            .verify_error_max = st1.verify_error_max,
        };
        for (int b = 0; b < 5; b++)
            r->dht.verify_histogram[b] = st1.verify_histogram[b] -
                                         st0.verify_histogram[b];
    }
    r->evictions = r->dht.evictions;
    r->invalidations = r->dht.invalidations;

    chem_work(s, &after);
    const struct cache_counts *c = &r->counts;
    uint64_t sums[] = {
        c->lookups, c->hits, c->shared, c->verified, c->interpolated,
        c->rejected_balance, c->rejected_negative, c->cvode_misses,
        c->near_members, c->mass_violations,
        after.solves - before.solves, after.steps - before.steps,
        after.rhs_evals - before.rhs_evals,
        after.newton_iters - before.newton_iters,
        after.jac_evals - before.jac_evals,
    };
    enum { NSUMS = sizeof(sums) / sizeof(sums[0]) };
    uint64_t total[NSUMS];
    rt_mpi(MPI_Allreduce(sums, total, NSUMS, MPI_UINT64_T, MPI_SUM, g->comm),
           "MPI_Allreduce");
    local[3] = r->counts.dht_seconds;
    rt_mpi(MPI_Allreduce(local, worst, 4, MPI_DOUBLE, MPI_MAX, g->comm),
           "MPI_Allreduce");
    double mine_s = after.seconds - before.seconds;
    rt_mpi(MPI_Allreduce(&mine_s, &cvode_s, 1, MPI_DOUBLE, MPI_SUM, g->comm),
           "MPI_Allreduce");
    double vmax[CHEM_NSTATE], vsum[CHEM_NSTATE];
    rt_mpi(MPI_Allreduce(c->verify_max, vmax, CHEM_NSTATE, MPI_DOUBLE,
                         MPI_MAX, g->comm),
           "MPI_Allreduce");
    rt_mpi(MPI_Allreduce(c->verify_sum, vsum, CHEM_NSTATE, MPI_DOUBLE,
                         MPI_SUM, g->comm),
           "MPI_Allreduce");
    r->counts = (struct cache_counts){
        .lookups = total[0], .hits = total[1], .shared = total[2],
        .verified = total[3], .interpolated = total[4],
        .rejected_balance = total[5], .rejected_negative = total[6],
        .cvode_misses = total[7], .near_members = total[8],
        .mass_violations = total[9],
    };
    memcpy(r->counts.verify_max, vmax, sizeof(vmax));
    memcpy(r->counts.verify_sum, vsum, sizeof(vsum));
    r->work = (struct chem_work){total[10], total[11], total[12],
                                 total[13], total[14], cvode_s};
    r->transport_s = worst[0];
    r->chemistry_s = worst[1];
    r->sync_s = worst[2];
    r->dht_s = worst[3];
    r->cell_steps = (uint64_t)g->nx * (uint64_t)g->ny * (uint64_t)r->steps;
    return 0;
}

void run_compare(const struct grid *g, const cell_t *ref,
                 struct run_error *e)
{
    const size_t ncells = (size_t)g->nrows * (size_t)g->nx;
    const cell_t *run = grid_row(g, 0);
    double scale[CHEM_NSTATE] = {0}, global_scale[CHEM_NSTATE];
    /* MPI_DOUBLE_INT for MPI_MAXLOC: the difference and the cell */
    struct {
        double diff;
        int cell;
    } worst[CHEM_NSTATE], global_worst[CHEM_NSTATE];

    for (int f = 0; f < CHEM_NSTATE; f++) {
        worst[f].diff = 0.0;
        worst[f].cell = g->row0 * g->nx;
    }
    for (size_t i = 0; i < ncells; i++)
        for (int f = 0; f < CHEM_NSTATE; f++) {
            double d = fabs(run[i][f] - ref[i][f]);
            if (fabs(ref[i][f]) > scale[f])
                scale[f] = fabs(ref[i][f]);
            if (d > worst[f].diff || isnan(d)) {
                worst[f].diff = isnan(d) ? INFINITY : d;
                worst[f].cell = g->row0 * g->nx + (int)i;
            }
        }
    rt_mpi(MPI_Allreduce(scale, global_scale, CHEM_NSTATE, MPI_DOUBLE,
                         MPI_MAX, g->comm),
           "MPI_Allreduce");
    rt_mpi(MPI_Allreduce(worst, global_worst, CHEM_NSTATE, MPI_DOUBLE_INT,
                         MPI_MAXLOC, g->comm),
           "MPI_Allreduce");

    memset(e, 0, sizeof(*e));
    e->field = -1;
    for (int f = 0; f < CHEM_NSTATE; f++) {
        /* a field that is zero everywhere in the reference is compared
         * absolutely: any difference there is all error */
        double rel = global_scale[f] > 0.0
                         ? global_worst[f].diff / global_scale[f]
                         : global_worst[f].diff;
        e->per_field[f] = rel;
        if (e->field < 0 || rel > e->max_rel) {
            e->max_rel = rel;
            e->field = f;
            e->x = global_worst[f].cell % g->nx;
            e->y = global_worst[f].cell / g->nx;
        }
    }
}
