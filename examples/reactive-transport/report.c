/*
 * report.c - summary, CSV, fields and picture, all made by rank 0 from
 * figures every rank agreed on.
 */
#define _GNU_SOURCE
#include "report.h"

#include "interpolate.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Units of the fields in the outputs. */
static const char *const field_unit[CHEM_NSTATE] = {
    "mol/kgw", "mol/kgw", "mol/kgw", "mol/kgw", "mol/kgw", "mol/kgw",
};

static double per(double a, uint64_t b)
{
    return b ? a / (double)b : 0.0;
}

/* a / b, or 0 when b is 0 (nothing measured) */
static double ratio(double a, double b)
{
    return b > 0.0 ? a / b : 0.0;
}

static double hit_rate(const struct run_result *r)
{
    return per((double)r->counts.hits, r->counts.lookups);
}

static void row(FILE *out, const char *name, const struct run_result *r)
{
    char dht[32] = "-";

    if (r->cached)
        snprintf(dht, sizeof(dht), "%.2f", r->dht_s);
    fprintf(out, "%-13s %8.2f %12.2f %7s %12.2f %7.2f %13llu %9.1f", name,
            r->total_s, r->chemistry_s, dht, r->transport_s, r->sync_s,
            (unsigned long long)r->work.solves,
            1e6 * per(r->work.seconds, r->work.solves));
    if (r->cached)
        fprintf(out, " %8.2f%%\n", 100.0 * hit_rate(r));
    else
        fprintf(out, " %9s\n", "-");
}

static uint64_t rejected(const struct run_result *run)
{
    return run->counts.rejected_balance + run->counts.rejected_negative;
}

/* one run's line of the side-by-side table */
static void surrogate_row(FILE *out, const char *name,
                          const struct run_result *run,
                          const struct run_result *reference,
                          const struct run_error *e)
{
    const struct cache_counts *c = &run->counts;
    char speedup[32] = "-", error[32] = "-", interp[32] = "-";
    char rej[48] = "-";

    if (reference)
        snprintf(speedup, sizeof(speedup), "%.2fx",
                 ratio(reference->chemistry_s, run->chemistry_s));
    if (e)
        snprintf(error, sizeof(error), "%.2e", e->max_rel);
    if (run->interpolating) {
        snprintf(interp, sizeof(interp), "%.2f%%",
                 100.0 * per((double)c->interpolated, c->lookups));
        snprintf(rej, sizeof(rej), "%llu (%llu/%llu)",
                 (unsigned long long)rejected(run),
                 (unsigned long long)c->rejected_balance,
                 (unsigned long long)c->rejected_negative);
    }
    fprintf(out, "%-13s %10.2f%% %12s %20s %13llu %13s %9s\n", name,
            100.0 * hit_rate(run), interp, rej,
            (unsigned long long)run->work.solves, error, speedup);
}

/* Exact-only and interpolating runs side by side. */
static void surrogates(FILE *out, const struct report *r)
{
    const struct run_result *i = r->interpolating;

    fprintf(out, "\n%-13s %11s %12s %20s %13s %13s %9s\n", "surrogate",
            "exact hits", "interpolated", "rejected (bal./neg.)",
            "CVODE solves", "largest error", "speedup");
    if (r->cached)
        surrogate_row(out, "cached", r->cached, r->reference, r->error);
    surrogate_row(out, "interpolating", i, r->reference,
                  r->interpolating_error);
    fprintf(out, "\n");
    if (r->cached && r->cached->work.solves)
        fprintf(out, "CVODE solves       %.2fx the exact-only cache's\n",
                (double)i->work.solves / (double)r->cached->work.solves);
    fprintf(out, "interpolation      %llu accepted, %llu rejected (%llu off "
                 "balance, %llu negative), %llu misses with fewer than %d "
                 "members; %.2f members per query\n",
            (unsigned long long)i->counts.interpolated,
            (unsigned long long)rejected(i),
            (unsigned long long)i->counts.rejected_balance,
            (unsigned long long)i->counts.rejected_negative,
            (unsigned long long)i->counts.cvode_misses, r->o->min_members,
            per((double)i->counts.near_members, i->dht.near_queries));
    fprintf(out, "mass balance       %llu of %llu accepted interpolations "
                 "off by more than %g in Ca, Mg or C\n",
            (unsigned long long)i->counts.mass_violations,
            (unsigned long long)i->counts.interpolated, INTERP_BALANCE_TOL);
}

/* What the verified hits of a run found, and what the library kept. */
static void accuracy(FILE *out, const char *name,
                     const struct run_result *run)
{
    const struct cache_counts *c = &run->counts;
    const struct cache_stats *d = &run->dht;

    fprintf(out, "\naccuracy of hits, per field (%s run: %llu hits "
                 "verified with CVODE; error |cached - CVODE| / "
                 "max(|CVODE|, %g))\n",
            name, (unsigned long long)c->verified, CACHE_VERIFY_FLOOR);
    fprintf(out, "  largest:");
    for (int f = 0; f < CHEM_NSTATE; f++)
        fprintf(out, " %s %.1e%s", chem_field_name[f], c->verify_max[f],
                f + 1 < CHEM_NSTATE ? "," : "\n");
    fprintf(out, "  mean:   ");
    for (int f = 0; f < CHEM_NSTATE; f++)
        fprintf(out, " %s %.1e%s", chem_field_name[f],
                per(c->verify_sum[f], c->verified),
                f + 1 < CHEM_NSTATE ? "," : "\n");
    fprintf(out, "  mpikvs_stats: %llu verify hits, %llu reports, mean "
                 "%.2e, largest %.2e (since the open); <1e-12 %llu, "
                 "<1e-9 %llu, <1e-6 %llu, <1e-3 %llu, >=1e-3 %llu\n",
            (unsigned long long)d->verify_hits,
            (unsigned long long)d->verify_reports,
            per(d->verify_error_sum, d->verify_reports), d->verify_error_max,
            (unsigned long long)d->verify_histogram[0],
            (unsigned long long)d->verify_histogram[1],
            (unsigned long long)d->verify_histogram[2],
            (unsigned long long)d->verify_histogram[3],
            (unsigned long long)d->verify_histogram[4]);
}

void report_summary(FILE *out, const struct report *r)
{
    const struct rt_options *o = r->o;
    /* the reference solves every cell: its solves are the typical ones */
    const struct run_result *typical = r->reference ? r->reference
                                       : r->cached  ? r->cached
                                                    : r->interpolating;
    /* the lines of one cached run: the exact one's if there is one */
    const struct run_result *cached = r->cached ? r->cached
                                                : r->interpolating;
    const struct run_error *error = r->cached ? r->error
                                              : r->interpolating_error;

    fprintf(out, "%s: %d x %d cells, %d steps of %g s, %d rank%s\n",
            RT_PROG, o->nx, o->ny, o->steps, o->dt, r->nranks,
            r->nranks == 1 ? "" : "s");
    if (cached)
        fprintf(out, "cache: %s, mpikvs transport %s; a hit reuses the cached %s\n",
                r->config, r->transport,
                o->reuse == RT_REUSE_STATE ? "state"
                                           : "change, applied to the "
                                             "cell's own input");
    fprintf(out, "\n%-13s %8s %12s %7s %12s %7s %13s %9s %9s\n", "run",
            "total s", "chemistry s", "DHT s", "transport s", "sync s",
            "CVODE solves", "us/solve", "hit rate");
    if (r->reference)
        row(out, "no-cache", r->reference);
    if (r->cached)
        row(out, "cached", r->cached);
    if (r->interpolating)
        row(out, "interpolating", r->interpolating);
    fprintf(out, "\n");

    if (r->reference && cached)
        fprintf(out, "chemistry speedup  %.2fx  (total %.2fx)\n",
                ratio(r->reference->chemistry_s, cached->chemistry_s),
                ratio(r->reference->total_s, cached->total_s));
    if (cached) {
        const struct run_result *c = cached;
        fprintf(out, "hit rate           %.2f%%  (%llu of %llu cell "
                     "lookups found in the DHT)\n",
                100.0 * hit_rate(c), (unsigned long long)c->counts.hits,
                (unsigned long long)c->counts.lookups);
        fprintf(out, "CVODE avoided      %.2f%%  (%llu solves for %llu cell "
                     "steps; %llu misses took the solve of an equal key "
                     "in their batch)\n",
                100.0 * (1.0 - per((double)c->work.solves, c->cell_steps)),
                (unsigned long long)c->work.solves,
                (unsigned long long)c->cell_steps,
                (unsigned long long)c->counts.shared);
    }
    if (error) {
        const struct run_error *e = error;
        fprintf(out, "largest error      %.2e relative (%s at x=%d y=%d)\n",
                e->max_rel, chem_field_name[e->field], e->x, e->y);
        fprintf(out, "  per field:      ");
        for (int f = 0; f < CHEM_NSTATE; f++)
            fprintf(out, " %s %.1e%s", chem_field_name[f], e->per_field[f],
                    f + 1 < CHEM_NSTATE ? "," : "\n");
        fprintf(out, "  (the largest |cached - no-cache| of a field over "
                     "the grid, over the largest |no-cache| of the field)\n");
    }
    fprintf(out, "CVODE per solve    %.1f BDF steps, %.1f Newton "
                 "iterations, %.2f Jacobians, %.1f right-hand sides "
                 "(%s run)\n",
            per((double)typical->work.steps, typical->work.solves),
            per((double)typical->work.newton_iters, typical->work.solves),
            per((double)typical->work.jac_evals, typical->work.solves),
            per((double)typical->work.rhs_evals, typical->work.solves),
            typical->cached ? "cached" : "no-cache");
    if (cached && (cached->evictions || cached->invalidations)) {
        const struct run_result *c = cached;
        fprintf(out, "DHT                %llu evictions, %llu invalidated "
                     "slots%s\n",
                (unsigned long long)c->evictions,
                (unsigned long long)c->invalidations,
                c->evictions > c->work.solves / 100
                    ? ": more than 1% of the results were pushed out, which "
                      "costs hits; give the table more memory"
                    : "");
    }
    if (r->interpolating)
        surrogates(out, r);
    if (r->cached && r->o->verify > 0.0)
        accuracy(out, "cached", r->cached);
    if (r->interpolating && r->o->verify > 0.0)
        accuracy(out, "interpolating", r->interpolating);
}

/* ---- CSV ------------------------------------------------------------- */

static void csv_row(FILE *f, const struct report *r, const char *name,
                    const struct run_result *run, const struct run_error *e)
{
    const struct rt_options *o = r->o;
    bool compared = e && r->reference;

    fprintf(f, "%s,%d,%d,%d,%g,%d,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%llu,%llu,"
               "%llu,",
            name, o->nx, o->ny, run->steps, o->dt, r->nranks,
            run->cached ? rt_reuse_name(o->reuse) : "",
            run->total_s, run->chemistry_s, run->dht_s, run->transport_s,
            run->sync_s,
            (unsigned long long)run->cell_steps,
            (unsigned long long)run->counts.lookups,
            (unsigned long long)run->counts.hits);
    if (run->cached)
        fprintf(f, "%.6f,", hit_rate(run));
    else
        fprintf(f, ",");
    fprintf(f, "%llu,%llu,%.3f,%.3f,%.3f,%llu,",
            (unsigned long long)run->work.solves,
            (unsigned long long)run->counts.shared,
            1e6 * per(run->work.seconds, run->work.solves),
            per((double)run->work.steps, run->work.solves),
            per((double)run->work.newton_iters, run->work.solves),
            (unsigned long long)run->evictions);
    if (compared)
        fprintf(f, "%.4f,%.4f,%.6e,%s,%d,%d,",
                ratio(r->reference->chemistry_s, run->chemistry_s),
                ratio(r->reference->total_s, run->total_s), e->max_rel,
                chem_field_name[e->field], e->x, e->y);
    else
        fprintf(f, ",,,,,,");
    /* the surrogates' columns */
    const struct cache_counts *c = &run->counts;
    const struct cache_stats *d = &run->dht;
    fprintf(f, "%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,",
            run->interpolating ? 1 : 0,
            (unsigned long long)c->interpolated,
            (unsigned long long)c->rejected_balance,
            (unsigned long long)c->rejected_negative,
            (unsigned long long)c->cvode_misses,
            (unsigned long long)c->mass_violations,
            (unsigned long long)d->near_queries,
            (unsigned long long)c->near_members,
            (unsigned long long)c->verified,
            (unsigned long long)d->verify_hits,
            (unsigned long long)d->verify_reports,
            (unsigned long long)d->verify_histogram[4]);
    fprintf(f, "%.6e,%.6e", per(d->verify_error_sum, d->verify_reports),
            d->verify_error_max);
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(f, ",%.6e", c->verify_max[k]);
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(f, ",%.6e", per(c->verify_sum[k], c->verified));
    if (compared)
        for (int k = 0; k < CHEM_NSTATE; k++)
            fprintf(f, ",%.6e", e->per_field[k]);
    else
        for (int k = 0; k < CHEM_NSTATE; k++)
            fprintf(f, ",");
    fprintf(f, "\n");
}

int report_csv(const struct report *r, const char *path, struct rt_err *err)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return rt_fail(err, "cannot write the summary '%s': %s", path,
                       strerror(errno));
    fprintf(f, "run,nx,ny,steps,dt_s,ranks,reuse,total_s,chemistry_s,"
               "dht_s,transport_s,sync_s,cell_steps,lookups,hits,hit_rate,"
               "cvode_solves,shared_solves,us_per_solve,"
               "bdf_steps_per_solve,newton_iters_per_solve,evictions,"
               "chemistry_speedup,total_speedup,max_rel_error,"
               "max_rel_error_field,max_rel_error_x,max_rel_error_y,"
               "interpolating,interpolated,rejected_balance,"
               "rejected_negative,cvode_misses,mass_violations,near_queries,"
               "near_members,verified_hits,verify_hits,verify_reports,"
               "verify_above_1e_3,verify_error_mean,verify_error_max");
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(f, ",verify_max_%s", chem_field_name[k]);
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(f, ",verify_mean_%s", chem_field_name[k]);
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(f, ",max_rel_error_%s", chem_field_name[k]);
    fprintf(f, "\n");
    if (r->reference)
        csv_row(f, r, "no-cache", r->reference, NULL);
    if (r->cached)
        csv_row(f, r, "cached", r->cached, r->error);
    if (r->interpolating)
        csv_row(f, r, "interpolating", r->interpolating,
                r->interpolating_error);
    if (ferror(f) | fclose(f))
        return rt_fail(err, "cannot write the summary '%s': %s", path,
                       strerror(errno));
    return 0;
}

/* ---- fields ---------------------------------------------------------- */

/* The run whose final fields the outputs hold: the last one made. */
static const char *last_run(const struct report *r)
{
    return r->interpolating ? "interpolating"
           : r->cached      ? "cached"
                            : "no-cache";
}

int report_fields(const struct report *r, const char *path,
                  struct rt_err *err)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return rt_fail(err, "cannot write the fields '%s': %s", path,
                       strerror(errno));
    fprintf(f, "# %s: %s run, %d x %d cells after %d steps of %g s\n# x y",
            RT_PROG, last_run(r), r->o->nx, r->o->ny,
            r->o->steps, r->o->dt);
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(f, " %s", chem_field_name[k]);
    fprintf(f, " pH\n");
    for (int y = 0; y < r->o->ny; y++)
        for (int x = 0; x < r->o->nx; x++) {
            const double *c = r->fields[(size_t)y * (size_t)r->o->nx +
                                        (size_t)x];
            fprintf(f, "%d %d", x, y);
            for (int k = 0; k < CHEM_NSTATE; k++)
                fprintf(f, " %.17g", c[k]);
            fprintf(f, " %.17g\n", chem_ph(c));
        }
    if (ferror(f) | fclose(f))
        return rt_fail(err, "cannot write the fields '%s': %s", path,
                       strerror(errno));
    return 0;
}

/* ---- picture --------------------------------------------------------- */

/* A string for gnuplot between single quotes, where '' is a quote. */
static void gp_quoted(FILE *gp, const char *s)
{
    fputc('\'', gp);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', gp);
        fputc(*s, gp);
    }
    fputc('\'', gp);
}

/* A line of the picture's title: what a cached run did. */
static void gp_run_line(FILE *gp, const struct report *r, const char *name,
                        const struct run_result *run,
                        const struct run_error *e)
{
    if (!run)
        return;
    fprintf(gp, "\\n%s: exact hits %.1f%%", name, 100.0 * hit_rate(run));
    if (run->interpolating)
        fprintf(gp, ", interpolated %.1f%% (%llu rejected)",
                100.0 * per((double)run->counts.interpolated,
                            run->counts.lookups),
                (unsigned long long)rejected(run));
    fprintf(gp, ", %llu CVODE solves",
            (unsigned long long)run->work.solves);
    if (e)
        fprintf(gp, ", largest error %.1e", e->max_rel);
    if (r->reference)
        fprintf(gp, ", chemistry speedup %.2fx",
                ratio(r->reference->chemistry_s, run->chemistry_s));
}

static void gp_script(FILE *gp, const struct report *r, const char *path)
{
    const struct rt_options *o = r->o;
    const char *dot = strrchr(path, '.');
    bool svg = dot && !strcmp(dot, ".svg");

    /* svg needs no fonts; pngcairo is the PNG terminal of gnuplot-nox */
    fprintf(gp, "set terminal %s size 1500,950 background rgb 'white'\n",
            svg ? "svg dynamic" : "pngcairo");
    fprintf(gp, "set output ");
    gp_quoted(gp, path);
    fprintf(gp, "\n");
    for (int k = 0; k < CHEM_NSTATE; k++) {
        fprintf(gp, "$%s << EOD\n", chem_field_name[k]);
        for (int y = 0; y < o->ny; y++)
            for (int x = 0; x < o->nx; x++)
                fprintf(gp, "%.6e%c",
                        r->fields[(size_t)y * (size_t)o->nx + (size_t)x][k],
                        x + 1 < o->nx ? ' ' : '\n');
        fprintf(gp, "EOD\n");
    }
    fprintf(gp, "set multiplot layout 2,3 title \"%s: %s run, %d x %d "
                "cells after %d steps (%g s); MgCl2 water enters at the "
                "top left",
            RT_PROG, last_run(r), o->nx, o->ny, o->steps, o->steps * o->dt);
    /* the cached runs side by side, a line each */
    gp_run_line(gp, r, "cached", r->cached, r->error);
    gp_run_line(gp, r, "interpolating", r->interpolating,
                r->interpolating_error);
    fprintf(gp, "\"\n");
    /* x to the right, y down: row 0 at the top, as the grid is laid out */
    fprintf(gp, "set size ratio -1\nunset key\n"
                "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n"
                "set xlabel 'x'\nset ylabel 'y'\nset format cb '%%.1e'\n"
                "set palette defined (0 '#30123b', 1 '#4686fb', "
                "2 '#1ae4b6', 3 '#a2fc3c', 4 '#fabA39', 5 '#e4460a', "
                "6 '#7a0403')\n",
            o->nx - 1, o->ny - 1);
    for (int k = 0; k < CHEM_NSTATE; k++)
        fprintf(gp, "set title '%s (%s)'\nplot $%s matrix with image\n",
                chem_field_name[k], field_unit[k], chem_field_name[k]);
    fprintf(gp, "unset multiplot\nset output\n");
}

/* The program that draws: $GNUPLOT, else gnuplot from PATH. */
static const char *gnuplot_program(void)
{
    const char *p = getenv("GNUPLOT");

    return p && *p ? p : "gnuplot";
}

int report_plot(const struct report *r, const char *path, struct rt_err *err)
{
    const char *prog = gnuplot_program();
    char *argv[] = {(char *)prog, NULL};
    posix_spawn_file_actions_t actions;
    int pipefd[2], status, rc;
    pid_t pid;
    FILE *gp;

    if (pipe2(pipefd, O_CLOEXEC))
        return rt_fail(err, "cannot make a pipe to gnuplot: %s",
                       strerror(errno));
    if ((rc = posix_spawn_file_actions_init(&actions)) ||
        (rc = posix_spawn_file_actions_adddup2(&actions, pipefd[0], 0))) {
        close(pipefd[0]);
        close(pipefd[1]);
        return rt_fail(err, "cannot start gnuplot: %s", strerror(rc));
    }
    rc = posix_spawnp(&pid, prog, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipefd[0]);
    if (rc) {
        close(pipefd[1]);
        if (rc == ENOENT)
            return rt_fail(err, "no picture: '%s' not found (install "
                                "gnuplot, e.g. apt-get install gnuplot-nox, "
                                "set GNUPLOT to its path, or use --no-plot)",
                           prog);
        return rt_fail(err, "no picture: cannot run '%s': %s", prog,
                       strerror(rc));
    }
    gp = fdopen(pipefd[1], "w");
    if (!gp) {
        close(pipefd[1]);
        waitpid(pid, &status, 0);
        return rt_fail(err, "cannot write to gnuplot: %s", strerror(errno));
    }
    /* gnuplot that dies early must not kill us with SIGPIPE */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ignore, &old);
    gp_script(gp, r, path);
    int write_failed = ferror(gp) | fclose(gp);
    sigaction(SIGPIPE, &old, NULL);
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return rt_fail(err, "waiting for gnuplot: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || write_failed)
        return rt_fail(err, "no picture: gnuplot failed (%s %d; its "
                            "messages are above) making '%s'",
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status)
                                         : WTERMSIG(status),
                       path);
    return 0;
}
