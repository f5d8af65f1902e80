/*
 * test_errors.c - every error return the public API can be driven to
 * carries a detail: mpikvs_last_error() of the handle, or of NULL where
 * the call had no handle (mpikvs_open, mpikvs_close, any call given a
 * NULL handle), is not empty and is this failure's, not an earlier one's.
 *
 * Each case is one call with one thing wrong; check() asserts its return
 * code, a non-empty detail, and that the detail differs from the one the
 * previous case left in the same place (a call that returns an error
 * without setting one would leave the old text there).  Some cases also
 * assert words the detail must hold (the tables a config has, that no
 * config was given).  At the end rank 0 prints which MPIKVS_ERR_* codes
 * were reached; the header of run-errors-test.sh says why the others
 * cannot be reached from here.
 *
 * argv[1]: a scratch directory shared by the ranks (config and save
 * files).  MPIKVS_SHM_DIR: the regions' directory, only this test's.
 * Run under mpirun (run-errors-test.sh); see mpitest.h for the output.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mpitest.h"

#define KS 16u
#define VS 16u
#define NCODES (MPIKVS_ERR_FIRST - MPIKVS_ERR_LAST + 1)

static int rank, size;
static const char *dir;
static int reached[NCODES];
/* the previous detail of each place: mpikvs_last_error(NULL), a handle's */
static char last_null[1024], last_kvs[1024];

/* One case: rc must be want (any error when want is 0), with a detail in
 * mpikvs_last_error(kvs) that is new and holds each of the words. */
static void check(const char *what, int rc, int want, const mpikvs_t *kvs,
                  const char *word1, const char *word2)
{
    const char *text = mpikvs_last_error(kvs);
    char *last = kvs ? last_kvs : last_null;

    if (want)
        EXPECT(rc == want, "%s: returned %d (%s), not %d (%s)", what, rc,
               mpikvs_strerror(rc), want, mpikvs_strerror(want));
    else
        EXPECT(rc < 0, "%s: returned %d (%s), not an error", what, rc,
               mpikvs_strerror(rc));
    EXPECT(text && text[0], "%s: %s, and mpikvs_last_error(%s) is empty",
           what, mpikvs_strerror(rc), kvs ? "kvs" : "NULL");
    if (!text)
        return;
    EXPECT(!text[0] || strcmp(text, last) != 0,
           "%s: %s, and mpikvs_last_error(%s) is still the previous "
           "failure's: \"%s\"", what, mpikvs_strerror(rc),
           kvs ? "kvs" : "NULL", text);
    if (word1)
        EXPECT(strstr(text, word1), "%s: the detail does not say \"%s\": "
               "\"%s\"", what, word1, text);
    if (word2)
        EXPECT(strstr(text, word2), "%s: the detail does not say \"%s\": "
               "\"%s\"", what, word2, text);
    snprintf(last, sizeof(last_kvs), "%s", text);
    if (rc <= MPIKVS_ERR_FIRST && rc >= MPIKVS_ERR_LAST)
        reached[MPIKVS_ERR_FIRST - rc] = 1;
    if (rank == 0)
        mt_note("%-44s %s: %s", what, mpikvs_strerror(rc), text);
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    FILE *f;

    if (rank == 0) {
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
            mt_abort("cannot write a scratch file");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static const char *path_of(const char *name)
{
    static char buf[4][512];
    static int at;

    at = (at + 1) % 4;
    snprintf(buf[at], sizeof(buf[at]), "%s/%s", dir, name);
    return buf[at];
}

static mpikvs_t *open_plain(size_t ks, size_t vs)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = ks, .value_size = vs,
                          .size_per_node = 1u << 20};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);

    if (rc != MPIKVS_OK) {
        fprintf(stderr, "rank %d: open: %s: %s\n", rank, mpikvs_strerror(rc),
                mpikvs_last_error(NULL));
        mt_abort("a plain open failed");
    }
    return kvs;
}

/* ---- calls given a NULL handle ---- */

static int keep_going(const void *k, const void *v, void *arg)
{
    (void)k, (void)v, (void)arg;
    return 0;
}

static void null_handle(void)
{
    unsigned char key[KS] = {1}, value[VS] = {0};
    const void *ref;
    mpikvs_stats_t st;
    mpikvs_request_t req = {0};
    mpikvs_t *none = NULL;
    double in[1] = {1.0};
    int status[1], done;
    uint64_t seen;

    mt_phase("NULL handle");
#define NULL_CASE(call, expr)                                                \
    check(call "(NULL, ...)", (expr), MPIKVS_ERR_INVAL, NULL, call, "NULL")
    NULL_CASE("mpikvs_put", mpikvs_put(NULL, key, value));
    NULL_CASE("mpikvs_get", mpikvs_get(NULL, key, value));
    NULL_CASE("mpikvs_put_if_absent",
              mpikvs_put_if_absent(NULL, key, value, NULL));
    NULL_CASE("mpikvs_get_batch",
              mpikvs_get_batch(NULL, 1, key, value, status));
    NULL_CASE("mpikvs_put_batch", mpikvs_put_batch(NULL, 1, key, value));
    NULL_CASE("mpikvs_get_batch_start",
              mpikvs_get_batch_start(NULL, 1, key, value, status, &req));
    NULL_CASE("mpikvs_put_batch_start",
              mpikvs_put_batch_start(NULL, 1, key, value, &req));
    NULL_CASE("mpikvs_wait", mpikvs_wait(NULL, &req));
    NULL_CASE("mpikvs_test", mpikvs_test(NULL, &req, &done));
    NULL_CASE("mpikvs_round_key", mpikvs_round_key(NULL, in, 1, key));
    NULL_CASE("mpikvs_fence", mpikvs_fence(NULL));
    NULL_CASE("mpikvs_tier_invalidate", mpikvs_tier_invalidate(NULL));
    NULL_CASE("mpikvs_get_ref", mpikvs_get_ref(NULL, key, &ref));
    NULL_CASE("mpikvs_stats", mpikvs_stats(NULL, MPIKVS_SCOPE_RANK, &st,
                                           sizeof st));
    NULL_CASE("mpikvs_foreach_local",
              mpikvs_foreach_local(NULL, keep_going, NULL));
    NULL_CASE("mpikvs_save", mpikvs_save(NULL, path_of("x.kvs")));
    NULL_CASE("mpikvs_load", mpikvs_load(NULL, path_of("x.kvs"), 0, NULL));
    NULL_CASE("mpikvs_counter_add", mpikvs_counter_add(NULL, 0, 1, &seen));
    NULL_CASE("mpikvs_counter_cas",
              mpikvs_counter_cas(NULL, 0, 0, 1, &seen));
    /* close takes &kvs: both NULL and a pointer to NULL */
    check("mpikvs_close(NULL)", mpikvs_close(NULL), MPIKVS_ERR_INVAL, NULL,
          "mpikvs_close", NULL);
    check("mpikvs_open(comm, opt, NULL)",
          mpikvs_open(MPI_COMM_WORLD, NULL, NULL), MPIKVS_ERR_INVAL, NULL,
          "mpikvs_open", NULL);
    check("mpikvs_close(&NULL)", mpikvs_close(&none), MPIKVS_ERR_INVAL, NULL,
          "mpikvs_close", "no open handle");
#undef NULL_CASE
}

/* ---- mpikvs_open ---- */

static int open_with(const mpikvs_options_t *o)
{
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, o, &kvs);

    if (rc == MPIKVS_OK) {
        mpikvs_close(&kvs);
        return MPIKVS_OK;
    }
    EXPECT(kvs == NULL, "a failed open left a handle");
    return rc;
}

static int open_env(const char *name, const char *value)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .size_per_node = 1u << 20};
    int rc;

    setenv(name, value, 1);
    rc = open_with(&o);
    unsetenv(name);
    return rc;
}

static void bad_options(void)
{
    mpikvs_options_t o;

    mt_phase("open: options");
    check("open: comm MPI_COMM_NULL",
          mpikvs_open(MPI_COMM_NULL, NULL, &(mpikvs_t *){NULL}),
          MPIKVS_ERR_INVAL, NULL, "MPI_COMM_NULL", NULL);
    /* no config and no sizes: say that no config was given */
    check("open: no sizes, no config", open_with(NULL), MPIKVS_ERR_INVAL,
          NULL, "key_size", "config");
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .key_size = 70000, .value_size = VS};
    check("open: key_size 70000", open_with(&o), MPIKVS_ERR_INVAL, NULL,
          "70000", NULL);
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .key_size = KS, .value_size = VS,
                           .mode = "bogus"};
    check("open: mode bogus", open_with(&o), MPIKVS_ERR_INVAL, NULL,
          "bogus", NULL);
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .key_size = KS, .value_size = VS,
                           .transport = "bogus"};
    check("open: transport bogus", open_with(&o), MPIKVS_ERR_INVAL, NULL,
          "bogus", NULL);
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .key_size = KS, .value_size = VS,
                           .slots_per_bucket = 100000};
    check("open: slots_per_bucket 100000", open_with(&o), MPIKVS_ERR_INVAL,
          NULL, "slots_per_bucket", NULL);
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .key_size = KS, .value_size = VS,
                           .size_per_node = 64};
    check("open: size_per_node 64", open_with(&o), MPIKVS_ERR_TOOSMALL,
          NULL, NULL, NULL);
    if (size > 1) {
        o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                               .key_size = KS + (size_t)rank,
                               .value_size = VS, .size_per_node = 1u << 20};
        check("open: key_size differs by rank", open_with(&o),
              MPIKVS_ERR_MISMATCH, NULL, "key_size", NULL);
    }
}

static void bad_config(void)
{
    mpikvs_options_t o;

    mt_phase("open: config");
    write_file("two.json",
               "{\"version\": 1, \"tables\": {"
               "\"chem\": {\"size\": \"1M\", \"key\": {\"key_size\": 16},"
               " \"value\": {\"value_size\": 16}},"
               "\"interp\": {\"size\": \"1M\", \"key\": {\"key_size\": 8},"
               " \"value\": {\"value_size\": 8}}}}\n");
    write_file("broken.json", "{\"version\": 1, \"tables\": {\n");
    /* a table's name is a config's: without one, say there is none */
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .table = "sim"};
    check("open: table without a config", open_with(&o), MPIKVS_ERR_CONFIG,
          NULL, "sim", "MPIKVS_CONFIG");
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .config = path_of("two.json"), .table = "sim"};
    check("open: table not in the config", open_with(&o),
          MPIKVS_ERR_CONFIG, NULL, "chem", "interp");
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .config = path_of("none.json")};
    check("open: config file missing", open_with(&o), MPIKVS_ERR_CONFIG,
          NULL, "none.json", NULL);
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .config = path_of("broken.json")};
    check("open: config not JSON", open_with(&o), MPIKVS_ERR_CONFIG, NULL,
          "broken.json", NULL);
    o = (mpikvs_options_t){.size = sizeof(mpikvs_options_t),
                           .config = path_of("two.json"), .table = "chem",
                           .key_size = 32};
    check("open: key_size contradicts the config", open_with(&o),
          MPIKVS_ERR_INVAL, NULL, "key_size", NULL);
}

/* The first entry of the regions' directory: a region of an open handle. */
static int first_region(char *out, size_t len)
{
    const char *shm = getenv("MPIKVS_SHM_DIR");
    DIR *d = shm ? opendir(shm) : NULL;
    struct dirent *e;
    int found = 0;

    while (d && !found && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(out, len, "%s/%s", shm, e->d_name);
            found = 1;
        }
    if (d)
        closedir(d);
    return found;
}

static void bad_environment(void)
{
    char long_dir[400], region[600];
    mpikvs_t *kvs;

    mt_phase("open: environment");
    check("open: MPIKVS_TIMEOUT=abc", open_env("MPIKVS_TIMEOUT", "abc"),
          MPIKVS_ERR_INVAL, NULL, "MPIKVS_TIMEOUT", NULL);
    check("open: MPIKVS_CLOSE_TIMEOUT=0",
          open_env("MPIKVS_CLOSE_TIMEOUT", "0"), MPIKVS_ERR_INVAL, NULL,
          "MPIKVS_CLOSE_TIMEOUT", NULL);
    check("open: MPIKVS_UCX_OPS=bogus", open_env("MPIKVS_UCX_OPS", "bogus"),
          MPIKVS_ERR_INVAL, NULL, "MPIKVS_UCX_OPS", NULL);
    check("open: MPIKVS_POPULATE=bogus",
          open_env("MPIKVS_POPULATE", "bogus"), MPIKVS_ERR_INVAL, NULL,
          "MPIKVS_POPULATE", NULL);
    check("open: MPIKVS_TRANSPORT=bogus",
          open_env("MPIKVS_TRANSPORT", "bogus"), MPIKVS_ERR_INVAL, NULL,
          "MPIKVS_TRANSPORT", NULL);
    check("open: MPIKVS_CONFIG missing",
          open_env("MPIKVS_CONFIG", path_of("nothere.json")),
          MPIKVS_ERR_CONFIG, NULL, "nothere.json", NULL);
    memset(long_dir, 'd', sizeof(long_dir) - 1);
    long_dir[0] = '/';
    long_dir[sizeof(long_dir) - 1] = '\0';
    {
        char *shm = strdup(getenv("MPIKVS_SHM_DIR"));
        check("open: MPIKVS_SHM_DIR too long",
              open_env("MPIKVS_SHM_DIR", long_dir), MPIKVS_ERR_NAME, NULL,
              "MPIKVS_SHM_DIR", NULL);
        check("open: MPIKVS_SHM_DIR missing",
              open_env("MPIKVS_SHM_DIR", path_of("no-such-dir")), 0, NULL,
              NULL, NULL);
        setenv("MPIKVS_SHM_DIR", shm, 1);
        free(shm);
    }
    check("open: MPIKVS_LAYOUT missing",
          open_env("MPIKVS_LAYOUT", path_of("no-layout")), 0, NULL, NULL,
          NULL);
    write_file("junk-layout", "not a region at all, just some bytes\n");
    check("open: MPIKVS_LAYOUT a foreign file",
          open_env("MPIKVS_LAYOUT", path_of("junk-layout")), 0, NULL, NULL,
          NULL);
    /* a data region is a region, of another kind than a layout */
    kvs = open_plain(KS, VS);
    if (first_region(region, sizeof(region)))
        check("open: MPIKVS_LAYOUT a data region",
              open_env("MPIKVS_LAYOUT", region), MPIKVS_ERR_KIND, NULL, NULL,
              NULL);
    mpikvs_close(&kvs);
    setenv("MPIKVS_VIRTUAL_NODES", "1", 1);
    check("open: MPIKVS_VIRTUAL_NODES with MPIKVS_LAYOUT",
          open_env("MPIKVS_LAYOUT", path_of("no-layout")), MPIKVS_ERR_INVAL,
          NULL, "MPIKVS_VIRTUAL_NODES", NULL);
    unsetenv("MPIKVS_VIRTUAL_NODES");
}

/* Under MPI_THREAD_FUNNELED another thread may not call MPI. */
static void *open_in_thread(void *arg)
{
    int *rc = arg;
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS};
    mpikvs_t *kvs = NULL;

    *rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    last_null[0] = '\0';   /* this thread's own detail */
    check("open: in a thread under FUNNELED", *rc, MPIKVS_ERR_MPI, NULL,
          "MPI_THREAD_FUNNELED", NULL);
    return NULL;
}

static void wrong_thread(int provided)
{
    pthread_t t;
    int rc;
    char keep[sizeof(last_null)];

    if (provided != MPI_THREAD_FUNNELED)
        return;   /* another thread may open: nothing to refuse */
    mt_phase("open: thread");
    memcpy(keep, last_null, sizeof(keep));
    if (pthread_create(&t, NULL, open_in_thread, &rc) != 0)
        mt_abort("pthread_create");
    pthread_join(t, NULL);
    memcpy(last_null, keep, sizeof(keep));
}

/* ---- calls on an open handle ---- */

static int count_entry(const void *k, const void *v, void *arg)
{
    (void)k, (void)v;
    ++*(long *)arg;
    return 0;
}

static void bad_calls(mpikvs_t *kvs)
{
    unsigned char key[KS] = {1}, value[VS] = {2};
    const void *ref;
    mpikvs_stats_t st;
    mpikvs_request_t req = {0}, bogus = {.id = 77};
    double in[1] = {1.0};
    int status[1], done;
    uint64_t seen;

    mt_phase("handle: arguments");
    check("mpikvs_put: key NULL", mpikvs_put(kvs, NULL, value),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_put", NULL);
    check("mpikvs_get: value NULL", mpikvs_get(kvs, key, NULL),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_get", NULL);
    check("mpikvs_put_if_absent: key NULL",
          mpikvs_put_if_absent(kvs, NULL, value, NULL), MPIKVS_ERR_INVAL,
          kvs, "mpikvs_put_if_absent", NULL);
    check("mpikvs_get_ref: key NULL", mpikvs_get_ref(kvs, NULL, &ref),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_get_ref", NULL);
    check("mpikvs_get_batch: keys NULL",
          mpikvs_get_batch(kvs, 1, NULL, value, status), MPIKVS_ERR_INVAL,
          kvs, "mpikvs_get_batch", NULL);
    check("mpikvs_put_batch: values NULL",
          mpikvs_put_batch(kvs, 1, key, NULL), MPIKVS_ERR_INVAL, kvs,
          "mpikvs_put_batch", NULL);
    check("mpikvs_get_batch_start: req NULL",
          mpikvs_get_batch_start(kvs, 1, key, value, status, NULL),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_get_batch_start", NULL);
    check("mpikvs_put_batch_start: keys NULL",
          mpikvs_put_batch_start(kvs, 1, NULL, value, &req),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_put_batch_start", NULL);
    check("mpikvs_wait: no such request", mpikvs_wait(kvs, &bogus),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_wait", NULL);
    check("mpikvs_test: done NULL", mpikvs_test(kvs, &bogus, NULL),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_test", NULL);
    check("mpikvs_test: no such request", mpikvs_test(kvs, &bogus, &done),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_test", NULL);
    check("mpikvs_round_key: no config", mpikvs_round_key(kvs, in, 1, key),
          MPIKVS_ERR_CONFIG, kvs, NULL, NULL);
    check("mpikvs_stats: out NULL",
          mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, NULL,
                       sizeof(mpikvs_stats_t)), MPIKVS_ERR_INVAL, kvs,
          "mpikvs_stats", NULL);
    check("mpikvs_stats: scope 7", mpikvs_stats(kvs, 7, &st, sizeof st),
          MPIKVS_ERR_INVAL, kvs, "7", NULL);
    check("mpikvs_foreach_local: fn NULL",
          mpikvs_foreach_local(kvs, NULL, NULL), MPIKVS_ERR_INVAL, kvs,
          "mpikvs_foreach_local", NULL);
    check("mpikvs_counter_add: counter 99",
          mpikvs_counter_add(kvs, 99, 1, &seen), MPIKVS_ERR_INVAL, kvs,
          "mpikvs_counter_add", "99");
    check("mpikvs_counter_cas: counter 99",
          mpikvs_counter_cas(kvs, 99, 0, 1, &seen), MPIKVS_ERR_INVAL, kvs,
          "mpikvs_counter_cas", "99");
}

/* 1024 batches in flight, then one more. */
static void too_many_requests(mpikvs_t *kvs)
{
    enum { MAX = 1024 };
    static mpikvs_request_t req[MAX + 1];
    static int status[MAX + 1];
    unsigned char key[KS] = {3}, value[VS];
    int started = 0, rc = MPIKVS_OK;

    mt_phase("handle: requests");
    while (started <= MAX &&
           (rc = mpikvs_get_batch_start(kvs, 1, key, value, &status[started],
                                        &req[started])) == MPIKVS_OK)
        started++;
    check("mpikvs_get_batch_start: 1025 in flight", rc, -EAGAIN, kvs,
          "mpikvs_get_batch_start", NULL);
    for (int i = 0; i < started; i++)
        mpikvs_wait(kvs, &req[i]);
}

/* A save file, then its damaged copies. */
static void copy_damaged(const char *from, const char *to, size_t at,
                         long delta)
{
    FILE *in, *out;
    unsigned char buf[1 << 16];
    size_t n, total = 0;

    if (rank == 0) {
        in = fopen(from, "rb");
        out = fopen(to, "wb");
        if (!in || !out)
            mt_abort("cannot copy the save file");
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
            if (at < SIZE_MAX && at >= total && at < total + n)
                buf[at - total] ^= 0x5a;
            total += n;
            fwrite(buf, 1, n, out);
        }
        fclose(in);
        fclose(out);
        /* delta < 0: cut the end; > 0: append */
        if (delta < 0 && truncate(to, (off_t)total + delta) != 0)
            mt_abort("truncate");
        if (delta > 0) {
            out = fopen(to, "ab");
            fputc('x', out);
            fclose(out);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void bad_files(mpikvs_t *kvs)
{
    unsigned char key[KS], value[VS];
    char good[512];
    mpikvs_t *other;
    int rc;

    mt_phase("handle: save and load");
    snprintf(good, sizeof(good), "%s", path_of("good.kvs"));
    mt_make_key(1, (uint32_t)rank, 1, key, KS);
    mt_make_value(key, KS, 1, value, VS);
    rc = mpikvs_put(kvs, key, value);
    EXPECT(rc == MPIKVS_OK, "put: %s", mpikvs_last_error(kvs));
    mpikvs_fence(kvs);
    rc = mpikvs_save(kvs, good);
    EXPECT(rc == MPIKVS_OK, "save: %s", mpikvs_last_error(kvs));
    check("mpikvs_save: path NULL", mpikvs_save(kvs, NULL),
          MPIKVS_ERR_INVAL, kvs, "mpikvs_save", NULL);
    check("mpikvs_save: no such directory",
          mpikvs_save(kvs, path_of("no-dir/x.kvs")), 0, kvs, "no-dir", NULL);
    check("mpikvs_load: flags 8", mpikvs_load(kvs, good, 8, NULL),
          MPIKVS_ERR_INVAL, kvs, "flags", NULL);
    check("mpikvs_load: table not empty", mpikvs_load(kvs, good, 0, NULL),
          MPIKVS_ERR_NOTEMPTY, kvs, "MPIKVS_LOAD_MERGE", NULL);
    check("mpikvs_load: no such file",
          mpikvs_load(kvs, path_of("none.kvs"), MPIKVS_LOAD_MERGE, NULL),
          -ENOENT, kvs, "none.kvs", NULL);
    check("mpikvs_load: a directory",
          mpikvs_load(kvs, dir, MPIKVS_LOAD_MERGE, NULL), 0, kvs, NULL,
          NULL);
    write_file("junk.kvs", "this is not a save file, it is far too short\n");
    check("mpikvs_load: not a save file",
          mpikvs_load(kvs, path_of("junk.kvs"), MPIKVS_LOAD_MERGE, NULL),
          MPIKVS_ERR_FOREIGN, kvs, "junk.kvs", NULL);
    copy_damaged(good, path_of("version.kvs"), 8, 0);   /* version */
    check("mpikvs_load: another version",
          mpikvs_load(kvs, path_of("version.kvs"), MPIKVS_LOAD_MERGE, NULL),
          MPIKVS_ERR_VERSION, kvs, "version.kvs", NULL);
    copy_damaged(good, path_of("corrupt.kvs"), 80, 0);  /* entries */
    check("mpikvs_load: header damaged",
          mpikvs_load(kvs, path_of("corrupt.kvs"), MPIKVS_LOAD_MERGE, NULL),
          MPIKVS_ERR_CORRUPT, kvs, "corrupt.kvs", NULL);
    copy_damaged(good, path_of("short.kvs"), SIZE_MAX, -1);
    check("mpikvs_load: cut short",
          mpikvs_load(kvs, path_of("short.kvs"), MPIKVS_LOAD_MERGE, NULL),
          MPIKVS_ERR_TRUNCATED, kvs, "short.kvs", NULL);
    copy_damaged(good, path_of("long.kvs"), SIZE_MAX, 1);
    check("mpikvs_load: something appended",
          mpikvs_load(kvs, path_of("long.kvs"), MPIKVS_LOAD_MERGE, NULL),
          MPIKVS_ERR_SIZE, kvs, "long.kvs", NULL);
    other = open_plain(KS / 2, VS / 2);
    last_kvs[0] = '\0';   /* another handle: its own detail */
    check("mpikvs_load: other sizes",
          mpikvs_load(other, good, 0, NULL), MPIKVS_ERR_MISMATCH, other,
          "good.kvs", NULL);
    mpikvs_close(&other);
}

int main(int argc, char **argv)
{
    mpikvs_t *kvs;
    mpikvs_request_t req;
    unsigned char key[KS] = {4}, value[VS];
    int status[1], provided;
    long entries = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        mt_abort("usage: test_errors SCRATCH-DIR");
    dir = argv[1];

    null_handle();
    bad_options();
    bad_config();
    bad_environment();
    wrong_thread(provided);

    kvs = open_plain(KS, VS);
    bad_calls(kvs);
    too_many_requests(kvs);
    bad_files(kvs);
    EXPECT(mpikvs_foreach_local(kvs, count_entry, &entries) == MPIKVS_OK,
           "foreach_local: %s", mpikvs_last_error(kvs));
    /* a close with a batch never waited for: the handle is gone, the
     * detail is NULL's */
    EXPECT(mpikvs_get_batch_start(kvs, 1, key, value, status, &req) ==
               MPIKVS_OK,
           "get_batch_start: %s", mpikvs_last_error(kvs));
    mt_phase("close");
    check("mpikvs_close: a request not waited for", mpikvs_close(&kvs),
          MPIKVS_ERR_INVAL, NULL, "mpikvs_close", "wait");

    if (rank == 0) {
        char got[1024] = "", missed[1024] = "";
        for (int i = 0; i < NCODES; i++) {
            char *to = reached[i] ? got : missed;
            size_t len = strlen(to);
            snprintf(to + len, sizeof(got) - len, " %d", MPIKVS_ERR_FIRST - i);
        }
        mt_note("codes reached:%s", got);
        mt_note("codes not reached here:%s", missed);
    }
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
}
