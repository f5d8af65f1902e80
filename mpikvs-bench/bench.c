/*
 * bench.c - what the subcommands of mpikvs-bench share (bench.h): option
 * values, the timer, percentiles, and the cleanup of a private shm
 * directory on exit or on a fatal signal.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#if BENCH_HAVE_TSC
#include <cpuid.h>
#endif

/* ---- option values -------------------------------------------------- */

/* An integer written as digits or as an exact "1e6" or "2.5e5"; no sign,
 * no blanks. */
static int parse_u64(const char *s, uint64_t *out)
{
    char *end;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == '\0')
        goto done;
    if (*end != 'e' && *end != 'E' && *end != '.')
        return -1;
    double d = strtod(s, &end);
    if (*end != '\0' || !(d >= 0.0 && d < 18446744073709551616.0) ||
        d != floor(d))
        return -1;
    v = (unsigned long long)d;
done:
    if (errno)
        return -1;
    *out = v;
    return 0;
}

int bench_parse_u64(const char *sub, const char *opt, const char *arg,
                    uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v;

    if (parse_u64(arg, &v) || v < min || v > max) {
        fprintf(stderr, "%s: %s: invalid value '%s' for %s: expected an "
                        "integer from %llu to %llu\n",
                BENCH_PROG, sub, arg, opt, (unsigned long long)min,
                (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

/* Split a comma-separated list into at most BENCH_MAX_LIST items of
 * buf (a copy of arg); empty items are refused. */
static int split_list(const char *arg, char *buf, size_t len,
                      char **items, unsigned *n)
{
    if (strlen(arg) >= len)
        return -1;
    strcpy(buf, arg);
    *n = 0;
    for (char *p = buf;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p == '\0' || *n == BENCH_MAX_LIST)
            return -1;
        items[(*n)++] = p;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int bench_parse_u64_list(const char *sub, const char *opt, const char *arg,
                         uint64_t min, uint64_t max, uint64_t *out,
                         unsigned *n)
{
    char buf[512], *items[BENCH_MAX_LIST];
    unsigned k = 0, i;

    if (split_list(arg, buf, sizeof buf, items, &k) == 0) {
        for (i = 0; i < k; i++)
            if (parse_u64(items[i], &out[i]) || out[i] < min || out[i] > max)
                break;
        if (i == k) {
            *n = k;
            return 0;
        }
    }
    fprintf(stderr, "%s: %s: invalid value '%s' for %s: expected 1 to %u "
                    "comma-separated integers from %llu to %llu\n",
            BENCH_PROG, sub, arg, opt, BENCH_MAX_LIST,
            (unsigned long long)min, (unsigned long long)max);
    return -1;
}

int bench_parse_double_list(const char *sub, const char *opt,
                            const char *arg, double above, double max,
                            double *out, unsigned *n)
{
    char buf[512], *items[BENCH_MAX_LIST], *end;
    unsigned k = 0, i;

    if (split_list(arg, buf, sizeof buf, items, &k) == 0) {
        for (i = 0; i < k; i++) {
            errno = 0;
            out[i] = strtod(items[i], &end);
            if (errno || *end != '\0' || end == items[i] ||
                !(out[i] > above && out[i] <= max))
                break;
        }
        if (i == k) {
            *n = k;
            return 0;
        }
    }
    fprintf(stderr, "%s: %s: invalid value '%s' for %s: expected 1 to %u "
                    "comma-separated numbers greater than %g and at most "
                    "%g\n",
            BENCH_PROG, sub, arg, opt, BENCH_MAX_LIST, above, max);
    return -1;
}

int bench_bad_option(const char *sub, int c, char **argv)
{
    if (c == ':')
        fprintf(stderr, "%s: %s: option '%s' needs a value (see '%s %s "
                        "--help')\n",
                BENCH_PROG, sub, argv[optind - 1], BENCH_PROG, sub);
    else
        fprintf(stderr, "%s: %s: unknown option '%s' (see '%s %s --help')\n",
                BENCH_PROG, sub, argv[optind - 1], BENCH_PROG, sub);
    return -1;
}

int bench_no_operands(const char *sub, int argc, char **argv)
{
    if (optind >= argc)
        return 0;
    fprintf(stderr, "%s: %s: unexpected argument '%s' (see '%s %s --help')\n",
            BENCH_PROG, sub, argv[optind], BENCH_PROG, sub);
    return -1;
}

int bench_stderr_mute(bool mute)
{
    int saved, nul;

    if (!mute)
        return -1;
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && nul >= 0)
        dup2(nul, STDERR_FILENO);
    if (nul >= 0)
        close(nul);
    return saved;
}

void bench_stderr_restore(int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

/* ---- timing --------------------------------------------------------- */

uint64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if BENCH_HAVE_TSC
/* The TSC is a clock only if it ticks at one rate in every power state
 * and on every core (invariant TSC), and rdtscp is there to end a
 * timing. */
static const char *tsc_unusable(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return "the CPU does not report its TSC properties";
    __get_cpuid(0x80000001u, &a, &b, &c, &d);
    if (!(d & (1u << 27)))
        return "the CPU has no rdtscp instruction";
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (!(d & (1u << 8)))
        return "the TSC is not invariant (its rate may change)";
    return NULL;
}

/* Ticks per nanosecond over 100 ms; each clock read is bracketed by two
 * TSC reads, so a preemption in between only widens the bracket. */
static double tsc_calibrate(void)
{
    struct timespec pause = {0, 100 * 1000 * 1000};
    uint64_t c0 = bench_tsc_start(), n0 = bench_now_ns();
    uint64_t c0b = bench_tsc_stop();
    nanosleep(&pause, NULL);
    uint64_t c1 = bench_tsc_start(), n1 = bench_now_ns();
    uint64_t c1b = bench_tsc_stop();
    double ticks = ((double)c1 + (double)c1b) / 2 -
                   ((double)c0 + (double)c0b) / 2;
    return (double)(n1 - n0) / ticks;
}
#endif

int bench_timer_init(struct bench_timer *t, const char *want, char *why,
                     size_t why_len)
{
    t->kind = BENCH_TIMER_CLOCK;
    t->ns_per_tick = 1.0;
    if (!strcmp(want, "clock"))
        return 0;
#if BENCH_HAVE_TSC
    const char *bad = tsc_unusable();
    if (!bad) {
        double npt = tsc_calibrate();
        if (npt > 0.01 && npt < 100.0) {
            t->kind = BENCH_TIMER_TSC;
            t->ns_per_tick = npt;
            return 0;
        }
        bad = "calibration against CLOCK_MONOTONIC gave no sane rate";
    }
#else
    const char *bad = "this is not an x86 CPU";
#endif
    if (!strcmp(want, "auto"))
        return 0;
    snprintf(why, why_len, "%s", bad);
    return -1;
}

void bench_timer_describe(const struct bench_timer *t, char *buf, size_t len)
{
    if (t->kind == BENCH_TIMER_TSC)
        snprintf(buf, len, "TSC (lfence;rdtsc .. rdtscp;lfence), invariant, "
                           "%.3f GHz calibrated against CLOCK_MONOTONIC",
                 1.0 / t->ns_per_tick);
    else
        snprintf(buf, len, "clock_gettime(CLOCK_MONOTONIC)");
}

double bench_timer_overhead(const struct bench_timer *t)
{
    enum { N = 10001 };
    uint64_t *d = malloc(N * sizeof *d);

    if (!d)
        return 0.0;
    for (int i = 0; i < N; i++) {
        uint64_t a = bench_tick_start(t);
        uint64_t b = bench_tick_stop(t);
        d[i] = b - a;
    }
    bench_sort_u64(d, N);
    double med = (double)d[N / 2];
    free(d);
    return med;
}

/* ---- statistics ----------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
}

void bench_sort_double(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
}

uint64_t bench_percentile_u64(const uint64_t *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p * (double)n);
    return sorted[rank ? rank - 1 : 0];
}

double bench_median_double(const double *sorted, size_t n)
{
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* ---- cleanup on exit and on fatal signals ---------------------------
 * The only global state: what a signal handler needs to leave nothing
 * behind.  The handler uses system calls only (getdents64, unlinkat,
 * rmdir, kill), which are async-signal-safe. */

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static struct {
    volatile sig_atomic_t armed;
    int dirfd;
    char dir[PATH_MAX];
    volatile pid_t children[BENCH_MAX_CHILDREN];
} cleanup = {.dirfd = -1};

/* Unlink every file of the private directory, then the directory. */
static int purge_private_dir(void)
{
    char buf[4096] __attribute__((aligned(8)));
    int rc = 0;

    for (int pass = 0; pass < 2; pass++) {
        ssize_t n;
        unsigned removed = 0;

        lseek(cleanup.dirfd, 0, SEEK_SET);
        while ((n = getdents64(cleanup.dirfd, buf, sizeof buf)) > 0) {
            for (ssize_t off = 0; off < n;) {
                struct dirent64 *e = (struct dirent64 *)(buf + off);
                off += e->d_reclen;
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                if (unlinkat(cleanup.dirfd, e->d_name, 0) == 0)
                    removed++;
                else if (errno != ENOENT && !rc)
                    rc = -errno;
            }
        }
        if (!removed)
            break;
    }
    if (rmdir(cleanup.dir) != 0 && errno != ENOENT)
        rc = -errno;
    return rc;
}

static void on_fatal_signal(int sig)
{
    int saved = errno;

    for (unsigned i = 0; i < BENCH_MAX_CHILDREN; i++)
        if (cleanup.children[i] > 0)
            kill(cleanup.children[i], SIGKILL);
    if (cleanup.armed)
        purge_private_dir();
    errno = saved;
    /* SA_RESETHAND restored the default action; the signal stays blocked
     * until we return, and then ends the process as it would have. */
    raise(sig);
}

void bench_cleanup_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaddset(&sa.sa_mask, fatal_signals[i]);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaction(fatal_signals[i], &sa, NULL);
}

static void fatal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaddset(set, fatal_signals[i]);
}

void bench_signals_block(void)
{
    sigset_t set;

    fatal_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

void bench_signals_unblock(void)
{
    sigset_t set;

    fatal_set(&set);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int bench_private_dir(const char *base, char *dir, size_t len)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof path, "%s/kvbench.XXXXXX", base) >=
            sizeof path || strlen(path) >= len)
        return -ENAMETOOLONG;
    /* arm only once the directory exists and can be emptied */
    bench_signals_block();
    int rc = 0;
    if (!mkdtemp(path)) {
        rc = -errno;
    } else {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            rc = -errno;
            rmdir(path);
        } else {
            strcpy(cleanup.dir, path);
            cleanup.dirfd = fd;
            cleanup.armed = 1;
            strcpy(dir, path);
        }
    }
    bench_signals_unblock();
    return rc;
}

int bench_private_dir_remove(void)
{
    int rc = 0;

    bench_signals_block();
    if (cleanup.armed) {
        rc = purge_private_dir();
        close(cleanup.dirfd);
        cleanup.dirfd = -1;
        cleanup.armed = 0;
    }
    bench_signals_unblock();
    return rc;
}

void bench_child_set(unsigned slot, pid_t pid)
{
    if (slot < BENCH_MAX_CHILDREN)
        cleanup.children[slot] = pid;
}

void bench_child_init(pid_t parent)
{
    /* the parent's handler would empty the parent's directory */
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        signal(fatal_signals[i], SIG_DFL);
    cleanup.armed = 0;
    for (unsigned i = 0; i < BENCH_MAX_CHILDREN; i++)
        cleanup.children[i] = 0;
    /* a worker must not outlive a parent killed with SIGKILL: it would
     * wait at a barrier forever, holding the unlinked regions' memory */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(BENCH_EXIT_FAIL);
    bench_signals_unblock();
}
