/*
 * options.c - the command line of mpikvs-reactive-transport: defaults,
 * strict parsing (a bad value is an error that names the option, the
 * value and what is allowed), --help and --version.
 */
#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIDE     100000
#define MAX_CELLS    100000000L
#define MAX_STEPS    10000000
#define MAX_DT       1e9
#define MAX_BATCH    1000000

/* The defaults: a 100x100 grid for 40 steps takes about a minute
 * of chemistry on two idle cores without the cache. */
#define DEFAULT_SIDE  100
#define DEFAULT_STEPS 40
#define DEFAULT_DT    200.0
#define DEFAULT_CSV   "reactive-transport.csv"
#define DEFAULT_PLOT  "reactive-transport.svg"
/* POET's: fewer members than this are no neighbourhood to trust */
#define DEFAULT_MIN_MEMBERS 5
#define MAX_MIN_MEMBERS     64   /* the most a neighbourhood keeps */

enum {
    OPT_NX = 256, OPT_NY, OPT_STEPS, OPT_DT, OPT_NO_CACHE, OPT_COMPARE,
    OPT_REUSE, OPT_BATCH, OPT_CONFIG, OPT_TABLE, OPT_CSV, OPT_PLOT, OPT_NO_PLOT,
    OPT_FIELDS, OPT_QUIET, OPT_HELP, OPT_VERSION, OPT_INTERPOLATE,
    OPT_MIN_MEMBERS, OPT_VERIFY, OPT_MAX_DISTANCE
};

static const struct option long_options[] = {
    {"nx", required_argument, NULL, OPT_NX},
    {"ny", required_argument, NULL, OPT_NY},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"dt", required_argument, NULL, OPT_DT},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"compare", no_argument, NULL, OPT_COMPARE},
    {"reuse", required_argument, NULL, OPT_REUSE},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"table", required_argument, NULL, OPT_TABLE},
    {"csv", required_argument, NULL, OPT_CSV},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"no-plot", no_argument, NULL, OPT_NO_PLOT},
    {"fields", required_argument, NULL, OPT_FIELDS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"interpolate", no_argument, NULL, OPT_INTERPOLATE},
    {"min-members", required_argument, NULL, OPT_MIN_MEMBERS},
    {"verify", required_argument, NULL, OPT_VERIFY},
    {"max-distance", required_argument, NULL, OPT_MAX_DISTANCE},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun -np N %s [options]\n"
"\n"
"A reactive-transport mini-app: MgCl2 water injected at the top-left\n"
"boundary of a 2-D grid dissolves calcite and precipitates dolomite.\n"
"Each step advects the water (explicit upwind) and solves every cell's\n"
"kinetics with CVODE; with the cache, a cell whose rounded inputs are\n"
"in the mpikvs DHT skips CVODE.  Rows are split over the MPI ranks.\n"
"\n"
"Runs:\n"
"  (default)         one run with the cache\n"
"  --no-cache        one run without it: the reference\n"
"  --compare         the reference, then the cached run; report the\n"
"                    speedup and the cached run's error (with\n"
"                    --interpolate: the reference, the exact-only cached\n"
"                    run and the interpolating one, side by side)\n"
"\n"
"Model:\n"
"  --nx N, --ny N    grid of N columns, N rows (default %d x %d)\n"
"  --steps N         time steps (default %d)\n"
"  --dt SECONDS      chemistry time per step (default %g)\n"
"\n"
"Cache:\n"
"  --config FILE     job config with the key's rounding (default\n"
"                    $MPIKVS_CONFIG, or the job's --dht-config under\n"
"                    Slurm); e.g. etc/examples/reactive-transport.json\n"
"  --table NAME      its table (default: its first)\n"
"  --batch CELLS     cells per mpikvs_get_batch/put_batch (default: one\n"
"                    row of the grid)\n"
"  --reuse HOW       what a hit gives: 'change' (the cell's input plus\n"
"                    the cached change, the default) or 'state' (the\n"
"                    cached result as it is)\n"
"  --interpolate     on an exact miss, interpolate the changes of the\n"
"                    key's neighbourhood (the table's \"near\" setting),\n"
"                    accepted only if Ca, Mg and C balance to 1e-10 and\n"
"                    no amount is negative, else CVODE\n"
"  --min-members N   --interpolate needs at least N members (default %d)\n"
"  --max-distance D  ... within distance D of the cell, in units of the\n"
"                    key's last digit (default: any distance)\n"
"  --verify FRACTION check that fraction of hits with CVODE, report the\n"
"                    error to mpikvs and per field (0 < FRACTION <= 1)\n"
"\n"
"Output (rank 0):\n"
"  --csv FILE        run summary as CSV (default %s)\n"
"  --plot FILE       picture of the final fields, .svg or .png, made\n"
"                    with gnuplot (default %s)\n"
"  --no-plot         no picture\n"
"  --fields FILE     the final fields as text, one cell a line\n"
"  --quiet           no progress lines on stderr\n"
"  --help, --version\n"
"\n"
"See mpikvs-reactive-transport(1).\n",
            RT_PROG, DEFAULT_SIDE, DEFAULT_SIDE, DEFAULT_STEPS, DEFAULT_DT,
            DEFAULT_MIN_MEMBERS, DEFAULT_CSV, DEFAULT_PLOT);
}

static int parse_int(const char *opt, const char *arg, long min, long max,
                     int *out, struct rt_err *err)
{
    char *end;

    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < min || v > max)
        return rt_fail(err, "invalid value '%s' for %s: expected an integer "
                            "from %ld to %ld",
                       arg, opt, min, max);
    *out = (int)v;
    return 0;
}

static int parse_seconds(const char *opt, const char *arg, double *out,
                         struct rt_err *err)
{
    char *end;

    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v > 0.0 && v <= MAX_DT))
        return rt_fail(err, "invalid value '%s' for %s: expected seconds, "
                            "more than 0 and at most %g",
                       arg, opt, MAX_DT);
    *out = v;
    return 0;
}

static int parse_fraction(const char *opt, const char *arg, double *out,
                          struct rt_err *err)
{
    char *end;

    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v > 0.0 && v <= 1.0))
        return rt_fail(err, "invalid value '%s' for %s: expected a "
                            "fraction, more than 0 and at most 1",
                       arg, opt);
    *out = v;
    return 0;
}

static int nonempty(const char *opt, const char *arg, struct rt_err *err)
{
    return *arg ? 0 : rt_fail(err, "%s needs a non-empty value", opt);
}

const char *rt_reuse_name(enum rt_reuse r)
{
    return r == RT_REUSE_STATE ? "state" : "change";
}

int rt_parse_options(int argc, char **argv, struct rt_options *o, bool print,
                     FILE *out, struct rt_err *err)
{
    bool no_cache = false, compare = false;
    int c;

    *o = (struct rt_options){
        .nx = DEFAULT_SIDE,
        .ny = DEFAULT_SIDE,
        .steps = DEFAULT_STEPS,
        .dt = DEFAULT_DT,
        .mode = RT_MODE_CACHED,
        .reuse = RT_REUSE_CHANGE,
        .csv = DEFAULT_CSV,
        .plot = DEFAULT_PLOT,
        .min_members = DEFAULT_MIN_MEMBERS,
    };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        const char *name = optind > 1 ? argv[optind - 1] : "?";
        switch (c) {
        case OPT_NX:
            if (parse_int("--nx", optarg, 2, MAX_SIDE, &o->nx, err))
                return -1;
            break;
        case OPT_NY:
            if (parse_int("--ny", optarg, 2, MAX_SIDE, &o->ny, err))
                return -1;
            break;
        case OPT_STEPS:
            if (parse_int("--steps", optarg, 1, MAX_STEPS, &o->steps, err))
                return -1;
            break;
        case OPT_DT:
            if (parse_seconds("--dt", optarg, &o->dt, err))
                return -1;
            break;
        case OPT_NO_CACHE:
            no_cache = true;
            break;
        case OPT_COMPARE:
            compare = true;
            break;
        case OPT_REUSE:
            if (!strcmp(optarg, "change"))
                o->reuse = RT_REUSE_CHANGE;
            else if (!strcmp(optarg, "state"))
                o->reuse = RT_REUSE_STATE;
            else
                return rt_fail(err, "invalid value '%s' for --reuse: give "
                                    "'change' or 'state'",
                               optarg);
            break;
        case OPT_BATCH:
            if (parse_int("--batch", optarg, 1, MAX_BATCH, &o->batch, err))
                return -1;
            break;
        case OPT_CONFIG:
            if (nonempty("--config", optarg, err))
                return -1;
            o->config = optarg;
            break;
        case OPT_TABLE:
            if (nonempty("--table", optarg, err))
                return -1;
            o->table = optarg;
            break;
        case OPT_CSV:
            if (nonempty("--csv", optarg, err))
                return -1;
            o->csv = optarg;
            break;
        case OPT_PLOT: {
            const char *dot = strrchr(optarg, '.');
            if (!dot || (strcmp(dot, ".svg") && strcmp(dot, ".png")))
                return rt_fail(err, "invalid value '%s' for --plot: the "
                                    "name must end in .svg or .png",
                               optarg);
            o->plot = optarg;
            break;
        }
        case OPT_NO_PLOT:
            o->plot = NULL;
            break;
        case OPT_FIELDS:
            if (nonempty("--fields", optarg, err))
                return -1;
            o->fields = optarg;
            break;
        case OPT_QUIET:
            o->quiet = true;
            break;
        case OPT_INTERPOLATE:
            o->interpolate = true;
            break;
        case OPT_MIN_MEMBERS:
            if (parse_int("--min-members", optarg, 1, MAX_MIN_MEMBERS,
                          &o->min_members, err))
                return -1;
            break;
        case OPT_MAX_DISTANCE: {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(v > 0.0 && v <= 1e9))
                return rt_fail(err, "invalid value '%s' for --max-distance: "
                                    "expected a distance, more than 0 and "
                                    "at most 1e9",
                               optarg);
            o->max_distance = v;
            break;
        }
        case OPT_VERIFY:
            if (parse_fraction("--verify", optarg, &o->verify, err))
                return -1;
            break;
        case 'h':
        case OPT_HELP:
            if (print)
                usage(out);
            return 1;
        case OPT_VERSION:
            if (print)
                fprintf(out, "%s %s\n", RT_PROG, PACKAGE_VERSION);
            return 1;
        case ':':
            return rt_fail(err, "option '%s' needs a value", name);
        default:
            return rt_fail(err, "unknown option '%s' (see '%s --help')",
                           name, RT_PROG);
        }
    }
    if (optind < argc)
        return rt_fail(err, "unexpected argument '%s' (see '%s --help')",
                       argv[optind], RT_PROG);
    if (no_cache && compare)
        return rt_fail(err, "--no-cache and --compare exclude each other "
                            "(--compare makes the no-cache run itself)");
    if (no_cache && (o->interpolate || o->verify > 0.0))
        return rt_fail(err, "--no-cache excludes %s (they work on the "
                            "cache)",
                       o->interpolate ? "--interpolate" : "--verify");
    if ((long)o->nx * o->ny > MAX_CELLS)
        return rt_fail(err, "a grid of %d x %d cells is more than %ld cells",
                       o->nx, o->ny, MAX_CELLS);
    o->mode = compare    ? RT_MODE_COMPARE
              : no_cache ? RT_MODE_REFERENCE
                         : RT_MODE_CACHED;
    return 0;
}
