/*
 * bench_round.c - "mpikvs-bench round": the cost of making canonical keys
 * from doubles (common/round.h), the step every lookup of a POET-like
 * surrogate cache starts with.
 *
 * The key is a layout of --fields double fields of --digits significant
 * digits: species concentrations and, last, the time step.  All inputs
 * are made beforehand; each pass builds every key with
 * kvshm_key_from_doubles into a small ring that stays in cache, and the
 * figure is the median pass.  The library keeps no count of its slow
 * path, so the program estimates it: it finds the inputs whose scaled
 * value lies within the fast path's margin of a rounding tie or of the
 * carry point, in long double, and times the slow path's reference, glibc's
 * %.*e, on its own.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "bench_subcommands.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "round.h"

#define SUB          "round"
#define MAX_KEYS     UINT64_C(100000000)
#define MAX_FIELDS   64u
#define MAX_REPEATS  1000u
#define MAX_INPUT    (UINT64_C(2) << 30)   /* bytes of pre-made inputs */
#define RING         1024u                 /* keys written, reused */
#define REF_SAMPLES  200000u               /* fields timed with %.*e */
#define MARGIN       0x1p-49               /* the fast path's, round.c */

_Static_assert((RING & (RING - 1)) == 0, "k % RING must be a mask");

struct round_opts {
    uint64_t keys, fields, digits, repeats, seed;
    bool     json;
};

struct result {
    double   ns_per_key, ns_per_field, min_ns_per_key, mkeys_per_s;
    double   ref_ns_per_field;
    uint64_t near_fields, near_keys;
    bool     near_known;
};

/* ---- inputs ------------------------------------------------------------ */

struct rng {
    uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline double rng_unit(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* Concentrations log-uniform in [1e-12, 1] (mol/kgw), the time step
 * uniform in [1, 1000] s: computed values, with all their bits. */
static void make_inputs(const struct round_opts *o, double *in)
{
    struct rng r = {o->seed};
    size_t nf = (size_t)o->fields;

    for (uint64_t k = 0; k < o->keys; k++) {
        double *row = in + k * nf;
        for (size_t f = 0; f + 1 < nf; f++)
            row[f] = pow(10.0, -12.0 + 12.0 * rng_unit(&r));
        row[nf - 1] = nf > 1 ? 1.0 + 999.0 * rng_unit(&r)
                             : pow(10.0, -12.0 + 12.0 * rng_unit(&r));
    }
}

/* The POET shape: species sp0 .. and the time step dt, last. */
static void make_layout(const struct round_opts *o, struct kvshm_field *f,
                        struct kvshm_record *key)
{
    uint32_t w = kvshm_double_width((uint32_t)o->digits);

    for (uint64_t i = 0; i < o->fields; i++) {
        memset(&f[i], 0, sizeof f[i]);
        if (i + 1 == o->fields)
            snprintf(f[i].name, sizeof f[i].name, "dt");
        else
            snprintf(f[i].name, sizeof f[i].name, "sp%u", (unsigned)i);
        f[i].type = KVSHM_FIELD_DOUBLE;
        f[i].digits = (uint32_t)o->digits;
        f[i].offset = (uint32_t)(i * w);
        f[i].width = w;
    }
    key->fields = f;
    key->nfields = (size_t)o->fields;
    key->size = (size_t)o->fields * w;
}

/* ---- estimates of the slow path ----------------------------------------
 * v = |x| 10^(d-1-e) in long double (64-bit mantissa, ~2^-60 relative
 * error here, far below the margin); the fast path gives way to the slow
 * one when v is within v 2^-49 of a .5 or of 10^d - 0.5, and always for
 * d >= 16.  An estimate: the library's own v has a few units of error
 * more, and its exponent may be the neighbour's. */
static bool near_tie(double x, unsigned d)
{
    if (d >= 16)
        return true;
    long double ax = fabsl((long double)x);
    int e = (int)floorl(log10l(ax));
    long double v = ax * powl(10.0L, (long double)((int)d - 1 - e));
    long double margin = v * MARGIN;
    long double top = powl(10.0L, (long double)d) - 0.5L;
    if (fabsl(v - top) < margin || fabsl(v / 10 - top) < margin / 10 ||
        fabsl(v * 10 - top) < margin * 10)
        return true;
    long double frac = v - floorl(v);
    return fabsl(frac - 0.5L) < margin;
}

static void estimate_slow(const struct round_opts *o, const double *in,
                          struct result *res)
{
    size_t nf = (size_t)o->fields;

    res->near_known = LDBL_MANT_DIG >= 64;
    if (!res->near_known)
        return;
    for (uint64_t k = 0; k < o->keys; k++) {
        bool any = false;
        for (size_t f = 0; f < nf; f++)
            if (near_tie(in[k * nf + f], (unsigned)o->digits)) {
                res->near_fields++;
                any = true;
            }
        res->near_keys += any;
    }
}

/* What one field costs on the slow path: %.*e and reading its digits. */
static double time_reference(const struct round_opts *o, const double *in)
{
    uint64_t n = o->keys * o->fields < REF_SAMPLES ? o->keys * o->fields
                                                   : REF_SAMPLES;
    volatile uint64_t sink = 0;
    char buf[64];

    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "%.*e", (int)o->digits - 1, fabs(in[i]));
        uint64_t m = 0;
        for (const char *p = buf; *p && *p != 'e'; p++)
            if (*p >= '0' && *p <= '9')
                m = m * 10 + (uint64_t)(*p - '0');
        sink += m + (uint64_t)strtol(strchr(buf, 'e') + 1, NULL, 10);
    }
    uint64_t t1 = bench_now_ns();
    (void)sink;
    return (double)(t1 - t0) / (double)n;
}

/* ---- the timed passes -------------------------------------------------- */

static int run_passes(const struct round_opts *o, const struct kvshm_record *key,
                      const double *in, unsigned char *ring,
                      struct result *res)
{
    double *pass_ns = calloc((size_t)o->repeats, sizeof *pass_ns);
    size_t nf = (size_t)o->fields, ks = key->size;
    mpikvs_error_t err = {0};

    if (!pass_ns) {
        fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, SUB, strerror(ENOMEM));
        return BENCH_EXIT_FAIL;
    }
    /* a warm-up pass: page faults of the inputs, the caches, the branch
     * predictors; and every input is checked to make a key */
    for (uint64_t k = 0; k < o->keys; k++) {
        int rc = kvshm_key_from_doubles(key, in + k * nf, nf,
                                        ring + (k % RING) * ks, &err);
        if (rc != MPIKVS_OK) {
            fprintf(stderr, "%s: %s: key %llu: %s (%s)\n", BENCH_PROG, SUB,
                    (unsigned long long)k, err.text, mpikvs_strerror(rc));
            free(pass_ns);
            return BENCH_EXIT_FAIL;
        }
    }
    for (uint64_t p = 0; p < o->repeats; p++) {
        int bad = 0;
        uint64_t t0 = bench_now_ns();
        for (uint64_t k = 0; k < o->keys; k++)
            bad |= kvshm_key_from_doubles(key, in + k * nf, nf,
                                          ring + (k & (RING - 1)) * ks, NULL);
        uint64_t t1 = bench_now_ns();
        if (bad) {
            fprintf(stderr, "%s: %s: a key failed in pass %llu\n",
                    BENCH_PROG, SUB, (unsigned long long)p);
            free(pass_ns);
            return BENCH_EXIT_FAIL;
        }
        pass_ns[p] = (double)(t1 - t0);
    }
    bench_sort_double(pass_ns, (size_t)o->repeats);
    double med = bench_median_double(pass_ns, (size_t)o->repeats);
    res->ns_per_key = med / (double)o->keys;
    res->ns_per_field = res->ns_per_key / (double)o->fields;
    res->min_ns_per_key = pass_ns[0] / (double)o->keys;
    res->mkeys_per_s = 1e3 / res->ns_per_key;
    free(pass_ns);
    return 0;
}

/* ---- output ------------------------------------------------------------ */

static void print_table(const struct round_opts *o, size_t key_size,
                        const struct result *r)
{
    printf("# %s %s round: %llu keys of %llu double fields (%llu species "
           "1e-12..1 and dt 1..1000, last), %llu digits, %zu-byte keys\n",
           BENCH_PROG, PACKAGE_VERSION, (unsigned long long)o->keys,
           (unsigned long long)o->fields,
           (unsigned long long)(o->fields > 1 ? o->fields - 1 : 1),
           (unsigned long long)o->digits, key_size);
    printf("# kvshm_key_from_doubles on one core, timed with "
           "clock_gettime(CLOCK_MONOTONIC) around each pass over all keys; "
           "median (and best) of %llu passes after a warm-up\n",
           (unsigned long long)o->repeats);
    printf("# near_tie: fields within the fast path's margin of a tie or "
           "carry (estimated), which the slow path (%%.*e, ref_ns_per_field) "
           "rounds\n");
    printf("%10s %12s %15s %8s %15s %13s %16s\n", "ns_per_key",
           "ns_per_field", "best_ns_per_key", "Mkeys/s", "near_tie_fields",
           "near_tie_keys", "ref_ns_per_field");
    if (r->near_known)
        printf("%10.1f %12.2f %15.1f %8.2f %15llu %13llu %16.1f\n",
               r->ns_per_key, r->ns_per_field, r->min_ns_per_key,
               r->mkeys_per_s, (unsigned long long)r->near_fields,
               (unsigned long long)r->near_keys, r->ref_ns_per_field);
    else
        printf("%10.1f %12.2f %15.1f %8.2f %15s %13s %16.1f\n",
               r->ns_per_key, r->ns_per_field, r->min_ns_per_key,
               r->mkeys_per_s, "n/a", "n/a", r->ref_ns_per_field);
}

static void print_json(const struct round_opts *o, size_t key_size,
                       const struct result *r)
{
    printf("{\n  \"benchmark\": \"round\",\n  \"version\": \"%s\",\n",
           PACKAGE_VERSION);
    printf("  \"keys\": %llu,\n  \"fields\": %llu,\n  \"digits\": %llu,\n"
           "  \"key_bytes\": %zu,\n  \"repeats\": %llu,\n  \"seed\": %llu,\n",
           (unsigned long long)o->keys, (unsigned long long)o->fields,
           (unsigned long long)o->digits, key_size,
           (unsigned long long)o->repeats, (unsigned long long)o->seed);
    printf("  \"timer\": {\"source\": \"clock_monotonic\"},\n");
    printf("  \"ns_per_key\": %.2f,\n  \"ns_per_field\": %.3f,\n"
           "  \"best_ns_per_key\": %.2f,\n  \"mkeys_per_s\": %.3f,\n",
           r->ns_per_key, r->ns_per_field, r->min_ns_per_key,
           r->mkeys_per_s);
    if (r->near_known)
        printf("  \"near_tie_fields\": %llu,\n  \"near_tie_keys\": %llu,\n"
               "  \"near_tie_fraction\": %.3g,\n",
               (unsigned long long)r->near_fields,
               (unsigned long long)r->near_keys,
               (double)r->near_fields / (double)(o->keys * o->fields));
    else
        printf("  \"near_tie_fields\": null,\n  \"near_tie_keys\": null,\n"
               "  \"near_tie_fraction\": null,\n");
    printf("  \"ref_ns_per_field\": %.1f\n}\n", r->ref_ns_per_field);
}

/* ---- options ----------------------------------------------------------- */

static void round_usage(FILE *f)
{
    fprintf(f,
"Usage: %s round [options]\n"
"Time making canonical keys from doubles: a POET-like key of species\n"
"concentrations and a time step, each rounded to significant digits.\n"
"\n"
"  --keys N         keys made per pass (default 1000000)\n"
"  --fields N       double fields per key, the last one dt (default 10)\n"
"  --digits D       significant digits of every field, 1 to 17 (default 6)\n"
"  --repeats N      timed passes; the median is reported (default 5)\n"
"  --seed N         seed of the random inputs (default 1)\n"
"  --json           print one JSON document instead of the table\n"
"  -h, --help       print this and exit\n"
"\nSee mpikvs-bench(1).\n", BENCH_PROG);
}

enum { OPT_KEYS = 256, OPT_FIELDS, OPT_DIGITS, OPT_REPEATS, OPT_SEED,
       OPT_JSON };

/* 0: run, 1: --help was printed, -1: bad usage (reported). */
static int round_options(int argc, char **argv, struct round_opts *o)
{
    static const struct option longopts[] = {
        {"keys", required_argument, NULL, OPT_KEYS},
        {"fields", required_argument, NULL, OPT_FIELDS},
        {"digits", required_argument, NULL, OPT_DIGITS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    *o = (struct round_opts){.keys = 1000000, .fields = 10, .digits = 6,
                             .repeats = 5, .seed = 1};
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_KEYS:
            bad = bench_parse_u64(SUB, "--keys", optarg, 1, MAX_KEYS,
                                  &o->keys);
            break;
        case OPT_FIELDS:
            bad = bench_parse_u64(SUB, "--fields", optarg, 1, MAX_FIELDS,
                                  &o->fields);
            break;
        case OPT_DIGITS:
            bad = bench_parse_u64(SUB, "--digits", optarg, KVSHM_DIGITS_MIN,
                                  KVSHM_DIGITS_MAX, &o->digits);
            break;
        case OPT_REPEATS:
            bad = bench_parse_u64(SUB, "--repeats", optarg, 1, MAX_REPEATS,
                                  &o->repeats);
            break;
        case OPT_SEED:
            bad = bench_parse_u64(SUB, "--seed", optarg, 0, UINT64_MAX,
                                  &o->seed);
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case 'h':
            round_usage(stdout);
            return 1;
        default:
            return bench_bad_option(SUB, c, argv);
        }
    }
    if (bad)
        return -1;
    if (bench_no_operands(SUB, argc, argv))
        return -1;
    if (o->keys * o->fields * sizeof(double) > MAX_INPUT) {
        fprintf(stderr, "%s: %s: invalid value '%llu' for --keys: %llu keys "
                        "of %llu fields need %llu MiB of inputs, more than "
                        "%llu MiB (fewer keys or fields)\n",
                BENCH_PROG, SUB, (unsigned long long)o->keys,
                (unsigned long long)o->keys, (unsigned long long)o->fields,
                (unsigned long long)(o->keys * o->fields * sizeof(double) >>
                                     20),
                (unsigned long long)(MAX_INPUT >> 20));
        return -1;
    }
    return 0;
}

/* ---- the subcommand ---------------------------------------------------- */

int bench_round_main(int argc, char **argv)
{
    struct round_opts o;
    struct kvshm_field fields[MAX_FIELDS];
    struct kvshm_record key;
    struct result res = {0};
    int rc = round_options(argc, argv, &o);

    if (rc)
        return rc > 0 ? 0 : BENCH_EXIT_USAGE;
    make_layout(&o, fields, &key);
    double *in = malloc((size_t)(o.keys * o.fields) * sizeof *in);
    unsigned char *ring = calloc(RING, key.size);
    if (!in || !ring) {
        fprintf(stderr, "%s: %s: cannot allocate %llu MiB of inputs: %s "
                        "(use fewer --keys)\n", BENCH_PROG, SUB,
                (unsigned long long)(o.keys * o.fields * sizeof *in >> 20),
                strerror(ENOMEM));
        free(in);
        free(ring);
        return BENCH_EXIT_FAIL;
    }
    make_inputs(&o, in);
    rc = run_passes(&o, &key, in, ring, &res);
    if (rc == 0) {
        estimate_slow(&o, in, &res);
        res.ref_ns_per_field = time_reference(&o, in);
        if (o.json)
            print_json(&o, key.size, &res);
        else
            print_table(&o, key.size, &res);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "%s: %s: cannot write the results: %s\n",
                    BENCH_PROG, SUB, strerror(errno));
            rc = BENCH_EXIT_FAIL;
        }
    }
    free(in);
    free(ring);
    return rc;
}
