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
                            struct chem_solver *s, cell_t *cells, size_t n,
                            struct cache_counts *counts, struct rt_err *err)
{
    const size_t batch = o->batch ? (size_t)o->batch : (size_t)o->nx;

    for (size_t first = 0; first < n; first += batch)
        if (cache_chemistry(c, s, cells + first,
                            n - first < batch ? n - first : batch, o->dt,
                            o->reuse, counts, err))
            return -1;
    return 0;
}

static void progress(const struct rt_options *o, const struct grid *g,
                     bool cached, int step, double start)
{
    int every = o->steps >= 10 ? o->steps / 10 : 1;

    if (o->quiet || g->rank != 0 || (step % every && step != o->steps))
        return;
    fprintf(stderr, "%s: %s run: step %d of %d, %.1f s\n", RT_PROG,
            cached ? "cached" : "no-cache", step, o->steps,
            MPI_Wtime() - start);
}

int run_simulation(const struct rt_options *o, struct grid *g,
                   struct chem_solver *s, struct rt_cache *cache,
                   struct run_result *r, struct rt_err *err)
{
    const size_t ncells = (size_t)g->nrows * (size_t)g->nx;
    struct chem_work before, after;
    uint64_t ev0 = 0, inv0 = 0, ev1 = 0, inv1 = 0;
    double t[4], local[4] = {0, 0, 0, 0}, worst[4], cvode_s;
    int stop = STOP_NONE, rc;
    uint64_t sums[8], total[8];

    memset(r, 0, sizeof(*r));
    r->cached = cache != NULL;
    grid_reset(g);
    chem_work(s, &before);
    if (cache)
        cache_job_stats(cache, &ev0, &inv0);
    rt_mpi(MPI_Barrier(g->comm), "MPI_Barrier");
    double start = MPI_Wtime();

    for (int step = 1; step <= o->steps; step++) {
        int mine = STOP_NONE;
        t[0] = MPI_Wtime();
        grid_advect(g);
        t[1] = MPI_Wtime();
        if (cache)
            rc = cached_chemistry(o, cache, s, grid_row(g, 0), ncells,
                                  &r->counts, err);
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
        progress(o, g, cache != NULL, step, start);
    }
    rt_mpi(MPI_Barrier(g->comm), "MPI_Barrier");
    r->total_s = MPI_Wtime() - start;
    if (cache)
        cache_job_stats(cache, &ev1, &inv1);
    r->evictions = ev1 - ev0;
    r->invalidations = inv1 - inv0;

    chem_work(s, &after);
    sums[0] = r->counts.lookups;
    sums[1] = r->counts.hits;
    sums[2] = r->counts.shared;
    sums[3] = after.solves - before.solves;
    sums[4] = after.steps - before.steps;
    sums[5] = after.rhs_evals - before.rhs_evals;
    sums[6] = after.newton_iters - before.newton_iters;
    sums[7] = after.jac_evals - before.jac_evals;
    rt_mpi(MPI_Allreduce(sums, total, 8, MPI_UINT64_T, MPI_SUM, g->comm),
           "MPI_Allreduce");
    local[3] = r->counts.dht_seconds;
    rt_mpi(MPI_Allreduce(local, worst, 4, MPI_DOUBLE, MPI_MAX, g->comm),
           "MPI_Allreduce");
    double mine_s = after.seconds - before.seconds;
    rt_mpi(MPI_Allreduce(&mine_s, &cvode_s, 1, MPI_DOUBLE, MPI_SUM, g->comm),
           "MPI_Allreduce");
    r->counts = (struct cache_counts){total[0], total[1], total[2], 0.0};
    r->work = (struct chem_work){total[3], total[4], total[5], total[6],
                                 total[7], cvode_s};
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
