/*
 * bench.h - what the subcommands of mpikvs-bench share (bench.c): option
 * parsing, the per-operation timer, percentiles, and the cleanup of a
 * private shm directory on exit or on a fatal signal.
 *
 * Exit statuses of every subcommand: 0 done, 1 a run-time failure,
 * 2 bad usage.
 */
#ifndef MPIKVS_CONTRIB_BENCH_H
#define MPIKVS_CONTRIB_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define BENCH_PROG       "mpikvs-bench"
#define BENCH_EXIT_FAIL  1
#define BENCH_EXIT_USAGE 2
#define BENCH_MAX_LIST   32u     /* values in one --load/--readers list */
#define BENCH_MAX_CHILDREN 1024u /* forked workers the cleanup can kill */

/* --- option values ---------------------------------------------------
 * Each parser prints "mpikvs-bench: <sub>: invalid value '<arg>' for
 * <opt>: expected ..." to stderr and returns -1 on bad input, 0 on
 * success.  Integers may be written 1000000 or 1e6. */
int bench_parse_u64(const char *sub, const char *opt, const char *arg,
                    uint64_t min, uint64_t max, uint64_t *out);
int bench_parse_u64_list(const char *sub, const char *opt, const char *arg,
                         uint64_t min, uint64_t max, uint64_t *out,
                         unsigned *n);
/* Numbers greater than above and at most max. */
int bench_parse_double_list(const char *sub, const char *opt,
                            const char *arg, double above, double max,
                            double *out, unsigned *n);

/* What getopt_long (optstring ":h...", opterr 0) returned for a bad option,
 * c being ':' or '?', said once for every subcommand; returns -1. */
int bench_bad_option(const char *sub, int c, char **argv);
/* -1 with a message if argv has operands left at optind, else 0. */
int bench_no_operands(const char *sub, int argc, char **argv);

/* Under mpirun every rank parses the options; only rank 0 should say
 * what is wrong.  mute: stderr goes to /dev/null until
 * bench_stderr_restore(what this returned); !mute: nothing happens. */
int bench_stderr_mute(bool mute);
void bench_stderr_restore(int saved);

/* --- timing ----------------------------------------------------------
 * The TSC is read with lfence;rdtsc before and rdtscp;lfence after the
 * timed code, so the code cannot move out of the bracket in either
 * direction; it ticks at a fixed rate (invariant TSC only) calibrated
 * against CLOCK_MONOTONIC.  Elsewhere, or on request, clock_gettime
 * (CLOCK_MONOTONIC) is the timer and a tick is a nanosecond. */
enum bench_timer_kind { BENCH_TIMER_CLOCK, BENCH_TIMER_TSC };

struct bench_timer {
    enum bench_timer_kind kind;
    double ns_per_tick;
};

/* want: "auto", "tsc" or "clock".  Returns 0, or -1 with why filled when
 * the TSC was asked for and is not usable here. */
int bench_timer_init(struct bench_timer *t, const char *want, char *why,
                     size_t why_len);

/* One line that says how timing is done, for an output header. */
void bench_timer_describe(const struct bench_timer *t, char *buf,
                          size_t len);

/* Median of back-to-back empty start/stop pairs, in ticks: what every
 * timing of this timer costs by itself. */
double bench_timer_overhead(const struct bench_timer *t);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

#if defined(__x86_64__) || defined(__i386__)
#define BENCH_HAVE_TSC 1
static inline uint64_t bench_tsc_start(void)
{
    uint32_t lo, hi;
    /* lfence: earlier instructions finish before the TSC is read */
    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t bench_tsc_stop(void)
{
    uint32_t lo, hi, aux;
    /* rdtscp waits for the timed code; lfence keeps what follows out */
    __asm__ __volatile__("rdtscp\n\tlfence"
                         : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}
#else
#define BENCH_HAVE_TSC 0
static inline uint64_t bench_tsc_start(void) { return 0; }
static inline uint64_t bench_tsc_stop(void) { return 0; }
#endif

static inline uint64_t bench_tick_start(const struct bench_timer *t)
{
    return t->kind == BENCH_TIMER_TSC ? bench_tsc_start() : bench_now_ns();
}

static inline uint64_t bench_tick_stop(const struct bench_timer *t)
{
    return t->kind == BENCH_TIMER_TSC ? bench_tsc_stop() : bench_now_ns();
}

/* --- statistics ------------------------------------------------------ */
void bench_sort_u64(uint64_t *v, size_t n);
void bench_sort_double(double *v, size_t n);
/* Nearest-rank percentile (0 < p <= 1) of a sorted array, n > 0. */
uint64_t bench_percentile_u64(const uint64_t *sorted, size_t n, double p);
/* Median of a sorted array (mean of the middle two when n is even). */
double bench_median_double(const double *sorted, size_t n);

/* --- cleanup ---------------------------------------------------------
 * A subcommand that makes a private directory (mkdtemp) for its regions
 * and forks workers registers both here.  A fatal signal (INT, TERM, HUP,
 * PIPE) then kills the workers, empties and removes the directory, and
 * lets the signal end the process, so nothing is left in /dev/shm. */

/* mkdtemp "<base>/kvbench.XXXXXX", copy its path to dir (PATH_MAX) and
 * arm the cleanup.  Returns 0 or -errno. */
int bench_private_dir(const char *base, char *dir, size_t len);

/* Remove everything in the private directory and the directory, and
 * disarm.  Returns 0 or -errno of the first failure. */
int bench_private_dir_remove(void);

/* Install the signal handlers (once, before bench_private_dir). */
void bench_cleanup_install(void);

/* Keep track of forked workers: slot < BENCH_MAX_CHILDREN; pid 0 clears.
 * Call with the fatal signals blocked (bench_signals_block). */
void bench_child_set(unsigned slot, pid_t pid);

/* Block or restore the fatal signals around fork and reaping. */
void bench_signals_block(void);
void bench_signals_unblock(void);

/* In a forked worker: default signal dispositions, die with the parent. */
void bench_child_init(pid_t parent);

#endif /* MPIKVS_CONTRIB_BENCH_H */
