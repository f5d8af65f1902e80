/*
 * mpikvs-stat - what mpikvs holds on this node: list the regions of the
 * shm directory, report one job's regions, remove those of jobs that are
 * gone.  See mpikvs-stat(1).
 *
 * This file holds the options and the refresh loop; the work is in
 * stat_regions.c (finding regions), stat_liveness.c (is a job alive),
 * stat_report.c (reading a job's regions), stat_text.c and stat_json.c
 * (printing), stat_gc.c (removing).  Regions are only ever opened
 * O_RDONLY and mapped PROT_READ, except by --gc, which unlinks them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"   /* PACKAGE_VERSION */
#endif
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "region.h"
#include "stat_gc.h"
#include "stat_liveness.h"
#include "stat_output.h"
#include "stat_regions.h"
#include "stat_report.h"

#define PROG "mpikvs-stat"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct options {
    char        dir[4096];
    const char *job;            /* report this job ... */
    const char *name;           /* ... or this region; both NULL: list */
    bool        json;
    bool        gc, dry_run;
    bool        scan;
    double      watch;          /* seconds between refreshes; 0: once */
    unsigned long count;        /* refreshes; 0: until interrupted */
    unsigned    slurm_timeout;
};

/* What --watch keeps from one printing of a report to the next: the
 * job's totals and when they were read, for the rates between them. */
struct watch_state {
    struct stat_job_totals totals;
    struct timespec        when;
    bool                   have;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: " PROG " [OPTIONS]                  list the regions\n"
            "       " PROG " [OPTIONS] JOBID|REGION     report a job or a "
            "region\n"
            "       " PROG " --gc [--dry-run] [OPTIONS] remove the regions "
            "of jobs that are gone\n"
            "\n"
            "  -d, --shm-dir DIR        the shm directory (default "
            "$MPIKVS_SHM_DIR, else /dev/shm)\n"
            "  -j, --json               print JSON instead of text\n"
            "  -w, --watch SECONDS      print again every SECONDS until "
            "interrupted\n"
            "  -c, --count N            with --watch: stop after N "
            "printings\n"
            "      --no-scan            do not count the slots of the "
            "buckets\n"
            "      --gc                 remove the regions of jobs that "
            "are gone\n"
            "  -n, --dry-run            with --gc: say what would be "
            "removed, remove nothing\n"
            "      --slurm-timeout SEC  how long slurmctld may take to "
            "answer (default %u;\n"
            "                           0: do not ask Slurm)\n"
            "  -h, --help               print this and exit\n"
            "  -V, --version            print the version and exit\n"
            "\nSee mpikvs-stat(1).\n",
            STAT_SLURM_TIMEOUT_DEFAULT);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see '" PROG " --help')\n");
    return EXIT_USAGE;
}

/* JOBID, REGION or DIR/REGION. */
static int parse_target(struct options *o, char *arg, char *job_buf)
{
    char *slash = strrchr(arg, '/');
    char node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];

    if (slash) {
        if (slash == arg || !slash[1])
            return usage_error("'%s' is not the path of a region", arg);
        snprintf(o->dir, sizeof(o->dir), "%.*s", (int)(slash - arg), arg);
        arg = slash + 1;
    }
    if (kvshm_name_has_prefix(arg)) {
        o->name = arg;
        /* a name that does not parse is still looked for, and reported
         * as what it is */
        if (strlen(arg) <= KVSHM_NAME_MAX &&
            kvshm_region_name_parse(arg, job_buf, node, tag) == MPIKVS_OK)
            o->job = job_buf;
        return EXIT_OK;
    }
    if (slash || !kvshm_name_part_ok(arg, KVSHM_JOB_MAX))
        return usage_error("'%s' is neither a job id nor a region name "
                           "(mpikvs.JOB.NODE.TAG)",
                           arg);
    o->job = arg;
    return EXIT_OK;
}

static int parse_seconds(const char *opt, const char *arg, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(arg, &end);
    if (end == arg || *end || errno || !(v >= 0.1 && v <= 86400.0)) {
        fprintf(stderr, PROG ": %s: '%s' is not a number of seconds from "
                        "0.1 to 86400 (see '" PROG " --help')\n",
                opt, arg);
        return EXIT_USAGE;
    }
    *out = v;
    return EXIT_OK;
}

static int parse_count(const char *opt, const char *arg, unsigned long min,
                       unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(arg, &end, 10);
    if (arg[0] < '0' || arg[0] > '9' || *end || errno || v < min ||
        v > max) {
        fprintf(stderr, PROG ": %s: '%s' is not a whole number from %lu to "
                        "%lu (see '" PROG " --help')\n",
                opt, arg, min, max);
        return EXIT_USAGE;
    }
    *out = v;
    return EXIT_OK;
}

enum { OPT_GC = 256, OPT_NO_SCAN, OPT_SLURM_TIMEOUT };

static int parse_options(int argc, char **argv, struct options *o,
                         char *job_buf)
{
    static const struct option longopts[] = {
        {"shm-dir", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"watch", required_argument, NULL, 'w'},
        {"count", required_argument, NULL, 'c'},
        {"no-scan", no_argument, NULL, OPT_NO_SCAN},
        {"gc", no_argument, NULL, OPT_GC},
        {"dry-run", no_argument, NULL, 'n'},
        {"slurm-timeout", required_argument, NULL, OPT_SLURM_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *env = getenv("MPIKVS_SHM_DIR");
    unsigned long timeout = STAT_SLURM_TIMEOUT_DEFAULT;
    bool counted = false;
    int c, rc;

    snprintf(o->dir, sizeof(o->dir), "%s",
             env && *env ? env : KVSHM_DEFAULT_DIR);
    o->scan = true;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:jw:c:nhV", longopts, NULL)) !=
           -1) {
        rc = EXIT_OK;
        switch (c) {
        case 'd':
            if (!optarg[0] || strlen(optarg) >= sizeof(o->dir))
                return usage_error("--shm-dir: '%s' is not a directory",
                                   optarg);
            snprintf(o->dir, sizeof(o->dir), "%s", optarg);
            break;
        case 'j': o->json = true; break;
        case 'w': rc = parse_seconds("--watch", optarg, &o->watch); break;
        case 'c':
            rc = parse_count("--count", optarg, 1, 1000000000ul, &o->count);
            counted = true;
            break;
        case OPT_NO_SCAN: o->scan = false; break;
        case OPT_GC: o->gc = true; break;
        case 'n': o->dry_run = true; break;
        case OPT_SLURM_TIMEOUT:
            rc = parse_count("--slurm-timeout", optarg, 0, 3600, &timeout);
            break;
        case 'h': usage(stdout); return -1;
        case 'V': printf(PROG " %s\n", PACKAGE_VERSION); return -1;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
        if (rc != EXIT_OK)
            return rc;
    }
    o->slurm_timeout = (unsigned)timeout;
    if (optind + 1 < argc)
        return usage_error("takes one JOBID or REGION, not also '%s'",
                           argv[optind + 1]);
    if (optind < argc && (rc = parse_target(o, argv[optind], job_buf)))
        return rc;
    if (o->dry_run && !o->gc)
        return usage_error("%s", "--dry-run goes with --gc");
    if (o->gc && (o->job || o->name))
        return usage_error("%s", "--gc looks at every region: give no "
                                 "JOBID or REGION");
    if (o->gc && (o->json || o->watch > 0))
        return usage_error("%s", "--gc prints text once: no --json or "
                                 "--watch");
    if (counted && o->watch == 0)
        return usage_error("%s", "--count goes with --watch");
    return EXIT_OK;
}

/* ---- one printing ---- */

static void json_failed(int rc, const char *what)
{
    if (rc == -1)
        fprintf(stderr, PROG ": cannot make the JSON %s: out of memory, or "
                        "a name that is not UTF-8 (the shm directory's?)\n",
                what);
    else
        fprintf(stderr, PROG ": cannot print the %s: %s\n", what,
                strerror(errno));
}

static double seconds_between(const struct timespec *a,
                              const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) +
           (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static int report(const struct options *o, struct stat_region_list *list,
                  time_t now, struct watch_state *w)
{
    struct stat_report_opts ro = {o->dir, o->name, o->scan};
    struct stat_job_report rep;
    struct timespec t;
    int rc;

    if (stat_report_build(list, &ro, &rep) != 0) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_FAIL;
    }
    rc = 0;
    /* under --watch: the rates since the previous printing */
    if (w) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (w->have &&
            stat_totals_interval(&rep.totals, &w->totals,
                                 seconds_between(&w->when, &t)) != 0) {
            fprintf(stderr, PROG ": out of memory\n");
            stat_report_free(&rep);
            return EXIT_FAIL;
        }
    }
    if (o->json)
        rc = stat_json_report(stdout, o->dir, &rep, now, o->watch > 0);
    else
        stat_text_report(stdout, o->dir, &rep, now);
    if (rc != 0)
        json_failed(rc, "report");
    for (size_t i = 0; i < rep.nproblems; i++)
        fprintf(stderr, PROG ": %s\n", rep.problems[i].text);
    rc = rc != 0 || rep.nproblems ? EXIT_FAIL : EXIT_OK;
    if (w) {   /* this printing's totals are the next one's start */
        stat_totals_free(&w->totals);
        w->totals = rep.totals;
        memset(&rep.totals, 0, sizeof(rep.totals));
        w->when = t;
        w->have = true;
    }
    stat_report_free(&rep);
    return rc;
}

static bool has_name(const struct stat_region_list *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->regions[i].name, name) == 0)
            return true;
    return false;
}

/* List, report or collect once (w: what --watch keeps between
 * printings, or NULL).  *gone: the job or region asked for has no region
 * (any more). */
static int run_once(const struct options *o, struct watch_state *w,
                    bool *gone)
{
    struct stat_filter filter = {o->job, o->job ? NULL : o->name};
    struct stat_region_list list;
    mpikvs_error_t err;
    time_t now;
    int rc = EXIT_OK;

    *gone = false;
    if (stat_regions_find(o->dir, &filter, &list, &err) != 0) {
        fprintf(stderr, PROG ": %s\n", err.text);
        return EXIT_FAIL;
    }
    stat_liveness_judge(&list, o->slurm_timeout);
    now = time(NULL);
    if (o->gc) {
        rc = stat_gc(stdout, stderr, o->dir, &list, o->dry_run);
    } else if (o->name && !has_name(&list, o->name)) {
        fprintf(stderr, PROG ": no region %s in %s\n", o->name, o->dir);
        *gone = true;
        rc = EXIT_FAIL;
    } else if (o->job && !list.count) {
        fprintf(stderr, PROG ": no regions of job %s in %s ('" PROG
                        "' lists the jobs there)\n",
                o->job, o->dir);
        *gone = true;
        rc = EXIT_FAIL;
    } else if (o->job || o->name) {
        rc = report(o, &list, now, w);
    } else if (o->json) {
        int jrc = stat_json_list(stdout, o->dir, &list, now, o->watch > 0);
        if (jrc != 0) {
            json_failed(jrc, "listing");
            rc = EXIT_FAIL;
        }
    } else {
        stat_text_list(stdout, o->dir, &list, now);
    }
    /* the text paths print as they go: a full disk shows only here */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, PROG ": cannot write the output: %s\n",
                strerror(errno));
        rc = EXIT_FAIL;
    }
    stat_regions_free(&list);
    return rc;
}

/* Sleep the interval, or less if a signal asks to stop. */
static void pause_for(double seconds)
{
    struct timespec left = {(time_t)seconds,
                            (long)((seconds - floor(seconds)) * 1e9)};

    while (!interrupted && nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    struct options o = {.dir = ""};
    struct watch_state watch = {.have = false};
    char job_buf[KVSHM_JOB_MAX];
    struct sigaction sa;
    bool gone, clear;
    int rc, worst = EXIT_OK;

    rc = parse_options(argc, argv, &o, job_buf);
    if (rc < 0)
        return EXIT_OK;     /* --help, --version */
    if (rc != EXIT_OK)
        return rc;
    if (o.watch == 0)
        return run_once(&o, NULL, &gone);

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    clear = !o.json && isatty(STDOUT_FILENO);
    for (unsigned long n = 1;; n++) {
        if (clear)
            fputs("\033[H\033[J", stdout);
        else if (n > 1 && !o.json)
            fputc('\n', stdout);
        rc = run_once(&o, &watch, &gone);
        if (rc > worst)
            worst = rc;
        /* a job that ended leaves nothing more to watch */
        if (gone || interrupted || (o.count && n >= o.count))
            break;
        pause_for(o.watch);
        if (interrupted)
            break;
    }
    stat_totals_free(&watch.totals);
    return worst;
}
