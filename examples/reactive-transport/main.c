/*
 * main.c - mpikvs-reactive-transport: MPI, the runs in their order, the
 * outputs, the exit status.
 *
 * Every failure is agreed on by all ranks before anything collective
 * follows, so that the cache is closed, and its regions removed, on every
 * path but a failed MPI call (see rt_mpi).
 */
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "chemistry.h"
#include "grid.h"
#include "options.h"
#include "report.h"
#include "rt.h"
#include "run.h"

static void on_signal(int sig)
{
    rt_stop_signal = sig;
}

/* Print a failure: a rank's own on that rank, an echo on rank 0 only. */
static void say_failure(const struct rt_err *err, int rank)
{
    if (!err->echo || rank == 0)
        fprintf(stderr, "%s: rank %d: %s\n", RT_PROG, rank, err->text);
}

/* 1 if any rank passes a nonzero failed, else 0. */
static int any_failed(MPI_Comm comm, int failed)
{
    int any = 0;

    failed = failed != 0;
    rt_mpi(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm),
           "MPI_Allreduce");
    return any;
}

/* How the job config was given, for the summary. */
static const char *config_origin(const struct rt_options *o, char *buf,
                                 size_t len)
{
    const char *env = getenv("MPIKVS_CONFIG");

    if (o->config)
        snprintf(buf, len, "job config %s", o->config);
    else if (env && *env)
        snprintf(buf, len, "job config %s (MPIKVS_CONFIG)", env);
    else
        snprintf(buf, len, "the job's config (sbatch --dht-config)");
    if (o->table)
        snprintf(buf + strlen(buf), len - strlen(buf), ", table %s",
                 o->table);
    return buf;
}

struct outcome {
    struct run_result reference, cached, interpolating;
    char              transport[16]; /* the cache's, for the summary */
    struct run_error  error, interpolating_error;
    cell_t           *fields;     /* rank 0: the last run's final grid */
};

/* Everything between MPI_Init and MPI_Finalize.  Returns 0, or -1 after
 * printing why; either way every rank returns together and nothing is
 * left open. */
static int simulate(const struct rt_options *o, struct outcome *out)
{
    struct chem_solver *solver = NULL;
    struct rt_cache *cache = NULL;
    struct grid grid;
    struct rt_err err = {.text = ""};
    cell_t initial, injected, *ref = NULL;
    bool need_cache = o->mode != RT_MODE_REFERENCE;
    /* the exact-only cached run: always but in --interpolate's own run */
    bool exact_run = need_cache &&
                     (o->mode == RT_MODE_COMPARE || !o->interpolate);
    bool need_fields = o->plot || o->fields;
    int rank = rt_world_rank(), failed, rc = -1;

    /* every rank computes the same initial water: chem_solve is a pure
     * function of its input */
    failed = chem_open(&solver, &err) ||
             chem_initial_state(solver, initial, &err);
    chem_injected_state(injected);
    if (any_failed(MPI_COMM_WORLD, failed)) {
        if (!failed)
            rt_echo(&err, "another rank could not set up its chemistry");
        say_failure(&err, rank);
        chem_close(&solver);
        return -1;
    }
    if (grid_open(&grid, MPI_COMM_WORLD, o->nx, o->ny, initial, injected,
                  &err)) {
        say_failure(&err, rank);
        chem_close(&solver);
        return -1;
    }
    if (need_cache && cache_open(grid.comm, o, &cache, &err)) {
        say_failure(&err, rank);
        goto done;
    }
    if (cache)
        snprintf(out->transport, sizeof(out->transport), "%s",
                 cache_transport(cache));

    if (o->mode != RT_MODE_CACHED) {
        if (run_simulation(o, &grid, solver, NULL, false, &out->reference,
                           &err))
            goto failed;
    }
    if (o->mode == RT_MODE_COMPARE) {
        size_t n = (size_t)grid.nrows * (size_t)grid.nx;
        ref = malloc(n * sizeof(cell_t));
        if (ref)
            memcpy(ref, grid_row(&grid, 0), n * sizeof(cell_t));
        else
            rt_fail(&err, "out of memory for a copy of the reference");
        if (any_failed(grid.comm, !ref)) {
            if (ref)
                rt_echo(&err, "another rank is out of memory");
            goto failed;
        }
    }
    if (exact_run) {
        if (run_simulation(o, &grid, solver, cache, false, &out->cached,
                           &err))
            goto failed;
        if (ref)
            run_compare(&grid, ref, &out->error);
    }
    if (need_cache && o->interpolate) {
        /* the interpolating run starts from an empty table too */
        if (exact_run)
            cache_clear(cache);
        if (run_simulation(o, &grid, solver, cache, true,
                           &out->interpolating, &err))
            goto failed;
        if (ref)
            run_compare(&grid, ref, &out->interpolating_error);
    }

    if (need_fields) {
        if (rank == 0) {
            out->fields = malloc((size_t)o->nx * (size_t)o->ny *
                                 sizeof(cell_t));
            if (!out->fields)
                rt_fail(&err, "out of memory for the %d x %d fields of the "
                              "outputs",
                        o->nx, o->ny);
        }
        if (any_failed(grid.comm, rank == 0 && !out->fields)) {
            if (rank != 0)
                rt_echo(&err, "rank 0 is out of memory");
            goto failed;
        }
        grid_gather(&grid, out->fields);
    }
    rc = 0;
    goto done;

failed:
    say_failure(&err, rank);
done:
    free(ref);
    if (cache && cache_close(&cache, &err)) {
        say_failure(&err, rank);
        rc = -1;
    }
    grid_close(&grid);
    chem_close(&solver);
    return rc;
}

int main(int argc, char **argv)
{
    struct rt_options o;
    struct outcome out;
    struct rt_err err = {.text = ""};
    char origin[512];
    int rank, nranks, rc;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Init failed: run it under mpirun or srun\n",
                RT_PROG);
        return RT_EXIT_FAIL;
    }
    /* failed MPI calls come back to rt_mpi, which says which one */
    rt_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
           "MPI_Comm_set_errhandler");
    rt_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    rt_mpi(MPI_Comm_size(MPI_COMM_WORLD, &nranks), "MPI_Comm_size");
    rc = rt_parse_options(argc, argv, &o, rank == 0, stdout, &err);
    if (rc) {
        if (rc < 0 && rank == 0)
            fprintf(stderr, "%s: %s\n", RT_PROG, err.text);
        MPI_Finalize();
        return rc < 0 ? RT_EXIT_USAGE : 0;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    memset(&out, 0, sizeof(out));
    rc = simulate(&o, &out);
    if (MPI_Finalize() != MPI_SUCCESS) {
        fprintf(stderr, "%s: rank %d: MPI_Finalize failed\n", RT_PROG, rank);
        rc = -1;
    }
    if (rc) {
        free(out.fields);
        return RT_EXIT_FAIL;
    }
    if (rank != 0)
        return 0;

    /* Rank 0 writes the outputs after MPI_Finalize, so that running
     * gnuplot is no fork inside an MPI process. */
    struct report rep = {
        .o = &o,
        .nranks = nranks,
        .config = config_origin(&o, origin, sizeof(origin)),
        .transport = out.transport,
        .reference = o.mode != RT_MODE_CACHED ? &out.reference : NULL,
        .cached = out.cached.cached ? &out.cached : NULL,
        .interpolating = out.interpolating.cached ? &out.interpolating
                                                  : NULL,
        .error = o.mode == RT_MODE_COMPARE && out.cached.cached
                     ? &out.error
                     : NULL,
        .interpolating_error = o.mode == RT_MODE_COMPARE &&
                                       out.interpolating.cached
                                   ? &out.interpolating_error
                                   : NULL,
        .fields = out.fields,
    };
    report_summary(stdout, &rep);
    fflush(stdout);
    rc = 0;
    if (report_csv(&rep, o.csv, &err)) {
        fprintf(stderr, "%s: %s\n", RT_PROG, err.text);
        rc = RT_EXIT_FAIL;
    }
    if (o.fields && report_fields(&rep, o.fields, &err)) {
        fprintf(stderr, "%s: %s\n", RT_PROG, err.text);
        rc = RT_EXIT_FAIL;
    }
    if (o.plot && report_plot(&rep, o.plot, &err)) {
        fprintf(stderr, "%s: %s\n", RT_PROG, err.text);
        rc = RT_EXIT_FAIL;
    }
    if (!rc)
        printf("summary: %s%s%s%s%s\n", o.csv, o.plot ? "  picture: " : "",
               o.plot ? o.plot : "", o.fields ? "  fields: " : "",
               o.fields ? o.fields : "");
    free(out.fields);
    return rc;
}
