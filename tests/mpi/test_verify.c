/*
 * test_verify.c - sampled accuracy (a table's "verify", MPIKVS_OPEN_VERIFY,
 * MPIKVS_VERIFY, mpikvs_verify_report and the surrogate statistics).
 *
 * Every rank puts its share of NKEYS keys into a table whose verify is
 * 0.25, then every rank gets every key: each hit is MPIKVS_OK or
 * MPIKVS_VERIFY with the right value, every rank picks the same keys
 * (the ranks' bitmaps are compared), about a quarter of them; the
 * blocking and the started batch give the same statuses, and so does
 * mpikvs_get_ref for what the node tier published.  The ranks report
 * errors chosen to land in known bins of the histogram, and the rank's
 * and the job's statistics must be exactly what was reported.  Reports
 * of a key that was not a verify hit, a second report, NaN, infinite and
 * negative errors are MPIKVS_ERR_INVAL.  Without the flag no call
 * returns MPIKVS_VERIFY; with verify 1 every hit is one, and a handle
 * remembers its latest 65536 verify hits for their reports; unknown flag
 * bits fail the open.
 *
 * Run under mpirun, any number of ranks, typically np 2 with
 * MPIKVS_VIRTUAL_NODES=2 (run-verify-test.sh); MPIKVS_SHM_DIR a private
 * directory (the configs go there too).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mpitest.h"

#define KS    16u
#define VS    32u
#define NKEYS 1000u
#define TAG   0x76657269u   /* "veri" */

static int rank, size;

static void make_key(unsigned i, unsigned char *key)
{
    uint64_t w[2] = {TAG, i};
    memcpy(key, w, KS);
}

static void make_value(unsigned i, unsigned char *val)
{
    for (unsigned b = 0; b < VS; b += 8) {
        uint64_t w = mt_mix(((uint64_t)i << 8) + b);
        memcpy(val + b, &w, 8);
    }
}

static bool value_ok(unsigned i, const unsigned char *val)
{
    unsigned char want[VS];
    make_value(i, want);
    return memcmp(val, want, VS) == 0;
}

/* A config of one table with the verify fraction given (NULL: none) and
 * a node tier that keeps remote hits. */
static void write_config(char *path, size_t len, const char *verify)
{
    const char *dir = getenv("MPIKVS_SHM_DIR");
    char setting[64] = "";
    FILE *f;

    if (verify)
        snprintf(setting, sizeof(setting), "\"verify\": %s, ", verify);
    snprintf(path, len, "%s/verify-%s-%d.json", dir ? dir : "/tmp",
             verify ? verify : "none", rank);
    f = fopen(path, "w");
    if (!f ||
        fprintf(f,
                "{ \"version\": 1, \"tables\": { \"t\": {\n"
                "  \"size\": \"2M\", %s\n"
                "  \"key\": { \"key_size\": %u },\n"
                "  \"value\": { \"value_size\": %u },\n"
                "  \"tier\": { \"enabled\": true, \"size\": \"1M\",\n"
                "            \"caching\": \"always\" } } } }\n",
                setting, KS, VS) < 0 ||
        fclose(f) != 0)
        mt_abort("cannot write the test config");
}

static int open_with(const char *verify, unsigned flags, mpikvs_t **kvs)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;
    char path[512];
    int rc;

    write_config(path, sizeof(path), verify);
    o.config = path;
    o.flags = flags;
    *kvs = NULL;
    rc = mpikvs_open(MPI_COMM_WORLD, &o, kvs);
    unlink(path);
    return rc;
}

static mpikvs_t *open_ok(const char *verify, unsigned flags)
{
    mpikvs_t *kvs;
    int rc = open_with(verify, flags, &kvs), ok = rc == MPIKVS_OK, all;

    EXPECT(ok, "open (verify %s, flags %u): %d (%s): %s",
           verify ? verify : "none", flags, rc, mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        mt_abort("mpikvs_open failed somewhere");
    return kvs;
}

static int agreed_ok(int ok)
{
    int all;

    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

static void close_ok(mpikvs_t *kvs)
{
    int rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close: %d (%s)", rc, mpikvs_strerror(rc));
}

static void stats_ok(mpikvs_t *kvs, int scope, mpikvs_stats_t *s)
{
    if (mpikvs_stats(kvs, scope, s, sizeof(*s)) != MPIKVS_OK)
        mt_abort("mpikvs_stats failed");
}

/* This rank's share of the keys, then a fence: every key is in. */
static void put_all(mpikvs_t *kvs)
{
    unsigned char key[KS], val[VS];
    long errors = 0;

    mt_phase("put");
    for (unsigned i = (unsigned)rank; i < NKEYS; i += (unsigned)size) {
        make_key(i, key);
        make_value(i, val);
        errors += mpikvs_put(kvs, key, val) != MPIKVS_OK;
    }
    EXPECT(errors == 0, "%ld puts failed: %s", errors,
           mpikvs_last_error(kvs));
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence: %s",
           mpikvs_last_error(kvs));
}

/* Every key got one at a time: sel[i] = whether it was a verify hit;
 * returns how many were. */
static unsigned get_all(mpikvs_t *kvs, unsigned char *sel)
{
    unsigned char key[KS], val[VS];
    unsigned verify = 0;
    long wrong = 0, other = 0;

    mt_phase("get");
    for (unsigned i = 0; i < NKEYS; i++) {
        int rc;
        make_key(i, key);
        memset(val, 0, VS);
        rc = mpikvs_get(kvs, key, val);
        sel[i] = rc == MPIKVS_VERIFY;
        verify += sel[i];
        if (rc != MPIKVS_OK && rc != MPIKVS_VERIFY)
            other++;
        else if (!value_ok(i, val))
            wrong++;
    }
    EXPECT(other == 0, "%ld gets neither OK nor VERIFY: %s", other,
           mpikvs_last_error(kvs));
    EXPECT(wrong == 0, "%ld hits with a wrong value", wrong);
    return verify;
}

/* The blocking and the started batch of every key: statuses as sel,
 * values right. */
static void batches_agree(mpikvs_t *kvs, const unsigned char *sel)
{
    unsigned char *keys = malloc(NKEYS * KS), *vals = malloc(NKEYS * VS);
    int *st = malloc(NKEYS * sizeof(int));
    mpikvs_request_t req;
    int rc;

    if (!keys || !vals || !st)
        mt_abort("out of memory");
    for (unsigned i = 0; i < NKEYS; i++)
        make_key(i, keys + i * KS);
    for (int started = 0; started < 2; started++) {
        long differ = 0, wrong = 0;
        mt_phase(started ? "started batch" : "batch");
        memset(vals, 0, NKEYS * VS);
        for (unsigned i = 0; i < NKEYS; i++)
            st[i] = -12345;
        if (started) {
            rc = mpikvs_get_batch_start(kvs, NKEYS, keys, vals, st, &req);
            if (rc == MPIKVS_OK)
                rc = mpikvs_wait(kvs, &req);
        } else {
            rc = mpikvs_get_batch(kvs, NKEYS, keys, vals, st);
        }
        EXPECT(rc == MPIKVS_OK, "%s batch: %d (%s): %s",
               started ? "started" : "blocking", rc, mpikvs_strerror(rc),
               mpikvs_last_error(kvs));
        for (unsigned i = 0; i < NKEYS; i++) {
            int want = sel[i] ? MPIKVS_VERIFY : MPIKVS_OK;
            if (st[i] != want) {
                if (differ++ < 3)
                    mt_note("key %u: batch status %d, its get %d", i, st[i],
                            want);
            } else if (!value_ok(i, vals + i * VS)) {
                wrong++;
            }
        }
        EXPECT(differ == 0, "%s batch: %ld statuses differ from the gets'",
               started ? "started" : "blocking", differ);
        EXPECT(wrong == 0, "%s batch: %ld wrong values",
               started ? "started" : "blocking", wrong);
    }
    free(keys);
    free(vals);
    free(st);
}

/* What the node tier published (remote hits, at the fence): the hits of
 * mpikvs_get_ref are VERIFY exactly for the selected keys. */
static void tier_agrees(mpikvs_t *kvs, const unsigned char *sel)
{
    unsigned char key[KS];
    long hits = 0, differ = 0, wrong = 0, other = 0;

    mt_phase("get_ref");
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence: %s",
           mpikvs_last_error(kvs));
    for (unsigned i = 0; i < NKEYS; i++) {
        const void *ref;
        int rc;
        make_key(i, key);
        rc = mpikvs_get_ref(kvs, key, &ref);
        if (rc == MPIKVS_MISS)
            continue;
        if (rc != MPIKVS_OK && rc != MPIKVS_VERIFY) {
            other++;
            continue;
        }
        hits++;
        differ += (rc == MPIKVS_VERIFY) != (sel[i] != 0);
        wrong += !value_ok(i, ref);
    }
    EXPECT(other == 0, "get_ref: %ld errors: %s", other,
           mpikvs_last_error(kvs));
    EXPECT(hits > 0 || size == 1, "get_ref: no hit in the node tier");
    EXPECT(differ == 0, "get_ref: %ld statuses differ from the gets'", differ);
    EXPECT(wrong == 0, "get_ref: %ld wrong values", wrong);
}

static void report_fails(mpikvs_t *kvs, unsigned i, double error,
                         const char *why, const char *text)
{
    unsigned char key[KS];
    int rc;

    make_key(i, key);
    rc = mpikvs_verify_report(kvs, key, error);
    EXPECT(rc == MPIKVS_ERR_INVAL, "report of %s: %d, not INVAL", why, rc);
    EXPECT(strstr(mpikvs_last_error(kvs), text) != NULL,
           "report of %s: '%s' does not say '%s'", why,
           mpikvs_last_error(kvs), text);
}

/* Errors of powers of 2: their sums are exact in any order.  One in
 * each bin: below 1e-12, 1e-9, 1e-6, 1e-3, and above (rank 1's largest
 * is larger). */
static double error_of(unsigned j, int r)
{
    static const double bins[4] = {0x1p-40, 0x1p-33, 0x1p-23, 0x1p-13};
    unsigned b = (j + (unsigned)r) % 5;
    return b < 4 ? bins[b] : (r == 1 ? 0.75 : 0.5);
}

struct expect {
    uint64_t reports, bins[5];
    double   sum, max;
};

static void expect_stats(const mpikvs_stats_t *s, const struct expect *e,
                         const char *what)
{
    const uint64_t got[5] = {s->verify_below_1e_12, s->verify_below_1e_9,
                             s->verify_below_1e_6, s->verify_below_1e_3,
                             s->verify_above_1e_3};

    EXPECT(s->verify_reports == e->reports, "%s: %llu reports, want %llu",
           what, (unsigned long long)s->verify_reports,
           (unsigned long long)e->reports);
    EXPECT(mpikvs_stat_double(s->verify_error_sum) == e->sum,
           "%s: error sum %.17g, want %.17g", what,
           mpikvs_stat_double(s->verify_error_sum), e->sum);
    EXPECT(mpikvs_stat_double(s->verify_error_max) == e->max,
           "%s: error max %.17g, want %.17g", what,
           mpikvs_stat_double(s->verify_error_max), e->max);
    for (int b = 0; b < 5; b++)
        EXPECT(got[b] == e->bins[b], "%s: bin %d has %llu, want %llu", what,
               b, (unsigned long long)got[b], (unsigned long long)e->bins[b]);
}

/* Rank r reports all its verify hits but 10 * r of them; then the
 * mistakes; then the statistics. */
static void reports(mpikvs_t *kvs, const unsigned char *sel)
{
    unsigned char key[KS];
    struct expect mine = {0}, job = {0};
    unsigned first_verify = NKEYS, first_plain = NKEYS, last = NKEYS;
    unsigned nsel = 0, j = 0;
    mpikvs_stats_t s;
    long failed = 0;

    mt_phase("reports");
    for (unsigned i = 0; i < NKEYS; i++) {
        nsel += sel[i];
        if (sel[i] && first_verify == NKEYS)
            first_verify = i;
        if (!sel[i] && first_plain == NKEYS)
            first_plain = i;
    }
    if (first_verify == NKEYS || first_plain == NKEYS)
        mt_abort("no verify hit, or nothing else");
    for (unsigned i = 0; i < NKEYS && j + 10u * (unsigned)rank < nsel; i++) {
        double e;
        int rc;
        if (!sel[i])
            continue;
        e = error_of(j++, rank);
        make_key(i, key);
        rc = mpikvs_verify_report(kvs, key, e);
        failed += rc != MPIKVS_OK;
        last = i;
        mine.reports++;
        mine.sum += e;
        mine.max = e > mine.max ? e : mine.max;
        mine.bins[e < 1e-12 ? 0 : e < 1e-9 ? 1 : e < 1e-6 ? 2 : e < 1e-3 ? 3
                                                                      : 4]++;
    }
    EXPECT(failed == 0, "%ld reports failed: %s", failed,
           mpikvs_last_error(kvs));
    EXPECT(mine.bins[0] && mine.bins[1] && mine.bins[2] && mine.bins[3] &&
               mine.bins[4],
           "the errors chosen miss a bin");

    report_fails(kvs, first_plain, 0.0, "a key that was not a verify hit",
                 "was not a verify hit of this rank, or was reported");
    report_fails(kvs, last, 0.0, "a key reported already",
                 "was reported already");
    report_fails(kvs, first_verify, NAN, "NaN", "error nan is not a finite");
    report_fails(kvs, first_verify, -1e-9, "a negative error",
                 "error -1e-09 is not a finite number of 0 or more");
    report_fails(kvs, first_verify, INFINITY, "an infinite error",
                 "error inf is not a finite");
    EXPECT(mpikvs_verify_report(NULL, key, 0.0) == MPIKVS_ERR_INVAL,
           "report without a handle is not INVAL");

    mt_phase("statistics");
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &s);
    expect_stats(&s, &mine, "rank");
    stats_ok(kvs, MPIKVS_SCOPE_RANK | MPIKVS_SINCE_OPEN, &s);
    expect_stats(&s, &mine, "rank since open");

    MPI_Allreduce(&mine.reports, &job.reports, 1, MPI_UINT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(mine.bins, job.bins, 5, MPI_UINT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&mine.sum, &job.sum, 1, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&mine.max, &job.max, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    stats_ok(kvs, MPIKVS_SCOPE_JOB, &s);
    expect_stats(&s, &job, "job");
    stats_ok(kvs, MPIKVS_SCOPE_JOB | MPIKVS_SINCE_OPEN, &s);
    expect_stats(&s, &job, "job since open");
    if (rank == 0)
        mt_note("reports: %llu in the job, error sum %.6g, max %g",
                (unsigned long long)job.reports, job.sum, job.max);
}

static void test_quarter(void)
{
    unsigned char sel[NKEYS], all_and[NKEYS], all_or[NKEYS];
    mpikvs_t *kvs = open_ok("0.25", MPIKVS_OPEN_VERIFY);
    unsigned n;
    mpikvs_stats_t s;
    long disagree = 0;

    put_all(kvs);
    n = get_all(kvs, sel);
    MPI_Allreduce(sel, all_and, NKEYS, MPI_UNSIGNED_CHAR, MPI_BAND,
                  MPI_COMM_WORLD);
    MPI_Allreduce(sel, all_or, NKEYS, MPI_UNSIGNED_CHAR, MPI_BOR,
                  MPI_COMM_WORLD);
    for (unsigned i = 0; i < NKEYS; i++)
        disagree += all_and[i] != all_or[i];
    EXPECT(disagree == 0, "the ranks picked different keys: %ld", disagree);
    /* binomial(1000, 0.25): mean 250, sd 13.7; 6 sd either way */
    EXPECT(n >= 168 && n <= 332, "%u verify hits of %u, not about 250", n,
           NKEYS);
    if (rank == 0)
        mt_note("verify 0.25: %u of %u hits picked", n, NKEYS);
    stats_ok(kvs, MPIKVS_SCOPE_RANK, &s);
    EXPECT(s.verify_hits == n, "verify_hits %llu, the gets returned %u",
           (unsigned long long)s.verify_hits, n);
    batches_agree(kvs, sel);
    tier_agrees(kvs, sel);
    reports(kvs, sel);
    close_ok(kvs);
}

/* Without the flag the same table never says VERIFY, and nothing can be
 * reported. */
static void test_not_opted(void)
{
    unsigned char sel[NKEYS];
    mpikvs_t *kvs = open_ok("0.25", 0);
    mpikvs_stats_t s;
    unsigned n;

    put_all(kvs);
    n = get_all(kvs, sel);
    EXPECT(n == 0, "without MPIKVS_OPEN_VERIFY %u gets said VERIFY", n);
    batches_agree(kvs, sel);
    stats_ok(kvs, MPIKVS_SCOPE_JOB, &s);
    EXPECT(s.verify_hits == 0, "without the flag verify_hits is %llu",
           (unsigned long long)s.verify_hits);
    report_fails(kvs, 0, 0.0, "a key of a handle without the flag",
                 "was not a verify hit");
    close_ok(kvs);
}

/* A key of this rank's node: its get is direct. */
static unsigned own_key(mpikvs_t *kvs)
{
    unsigned char key[KS], val[VS];
    mpikvs_stats_t a, b;

    for (unsigned i = 0; i < NKEYS; i++) {
        make_key(i, key);
        stats_ok(kvs, MPIKVS_SCOPE_RANK, &a);
        mpikvs_get(kvs, key, val);
        stats_ok(kvs, MPIKVS_SCOPE_RANK, &b);
        if (b.direct > a.direct)
            return i;
    }
    mt_abort("no key of the own node");
    return 0;
}

static void get_times(mpikvs_t *kvs, unsigned i, unsigned times)
{
    unsigned char key[KS], val[VS];
    long other = 0;

    make_key(i, key);
    for (unsigned t = 0; t < times; t++)
        other += mpikvs_get(kvs, key, val) != MPIKVS_VERIFY;
    EXPECT(other == 0, "%ld of %u gets of key %u not VERIFY", other, times,
           i);
}

/* A handle remembers its latest 65536 verify hits (verify.c): a key
 * returned 65536 verify hits ago is forgotten, one returned again since
 * is not.  Every hit a verify hit (verify 1); b is the own node's. */
static void remembered(mpikvs_t *kvs)
{
    unsigned char key[KS];
    unsigned b = own_key(kvs), a = b == 0 ? 1 : 0, c = b == 2 ? 3 : 2;
    int rc;

    mt_phase("remembered");
    get_times(kvs, a, 1);
    get_times(kvs, c, 1);
    get_times(kvs, b, 65535);
    get_times(kvs, c, 1);          /* again: c stays remembered */
    get_times(kvs, b, 1);          /* a is 65536 hits old now */
    report_fails(kvs, a, 0.0, "a verify hit 65536 hits ago",
                 "was not a verify hit");
    make_key(c, key);
    rc = mpikvs_verify_report(kvs, key, 0.0);
    EXPECT(rc == MPIKVS_OK, "report of a key hit again since: %d: %s", rc,
           mpikvs_last_error(kvs));
    make_key(b, key);
    rc = mpikvs_verify_report(kvs, key, 0.0);
    EXPECT(rc == MPIKVS_OK, "report of the latest verify hit: %d: %s", rc,
           mpikvs_last_error(kvs));
}

/* verify 1: every hit is a verify hit; a table without verify: none. */
static void test_all_and_none(void)
{
    unsigned char sel[NKEYS];
    mpikvs_t *kvs = open_ok("1.0", MPIKVS_OPEN_VERIFY);
    unsigned n;

    put_all(kvs);
    n = get_all(kvs, sel);
    EXPECT(n == NKEYS, "verify 1: %u of %u hits said VERIFY", n, NKEYS);
    batches_agree(kvs, sel);
    remembered(kvs);
    close_ok(kvs);

    kvs = open_ok(NULL, MPIKVS_OPEN_VERIFY);
    put_all(kvs);
    n = get_all(kvs, sel);
    EXPECT(n == 0, "a table without verify: %u gets said VERIFY", n);
    close_ok(kvs);
}

/* options.verify: the program's own fraction over the table's (none
 * here: every hit); one outside (0, 1] is refused naming it. */
static void test_options_verify(void)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;
    unsigned char sel[NKEYS];
    mpikvs_t *kvs = NULL;
    char path[512];
    unsigned n;
    int rc;

    mt_phase("options.verify");
    write_config(path, sizeof(path), NULL);
    o.config = path;
    o.flags = MPIKVS_OPEN_VERIFY;
    o.verify = 1.5;
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    EXPECT(rc == MPIKVS_ERR_INVAL && !kvs &&
               strstr(mpikvs_last_error(NULL), "options.verify 1.5"),
           "options.verify 1.5: %d '%s'", rc, mpikvs_last_error(NULL));
    o.verify = 1.0;
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    unlink(path);
    EXPECT(rc == MPIKVS_OK, "options.verify 1: %s", mpikvs_last_error(NULL));
    if (!agreed_ok(rc == MPIKVS_OK))
        mt_abort("mpikvs_open failed somewhere");
    put_all(kvs);
    n = get_all(kvs, sel);
    EXPECT(n == NKEYS, "options.verify 1: %u of %u hits said VERIFY", n,
           NKEYS);
    close_ok(kvs);
}

static void test_unknown_flags(void)
{
    mpikvs_t *kvs;
    int rc = open_with("0.25", MPIKVS_OPEN_VERIFY | 0x6u, &kvs);

    mt_phase("unknown flags");
    EXPECT(rc == MPIKVS_ERR_INVAL && !kvs, "flags 0x7: open gave %d", rc);
    EXPECT(strstr(mpikvs_last_error(NULL), "options.flags 0x7 has bits 0x6"),
           "flags 0x7: '%s' does not name the bits",
           mpikvs_last_error(NULL));
}

int main(int argc, char **argv)
{
    int provided, status;

    (void)argc;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_FUNNELED)
        mt_abort("MPI does not give MPI_THREAD_FUNNELED");

    test_unknown_flags();
    test_options_verify();
    test_quarter();
    test_not_opted();
    test_all_and_none();

    status = mt_finish();
    MPI_Finalize();
    return status;
}
