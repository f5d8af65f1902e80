/*
 * check_tier.c - the read-only lookup tier: one writer, lock-free readers.
 *
 * Every value the tests store is derived from its key and a version, so
 * a reader can tell a right value from a torn or wrong one by itself.
 */
#define _GNU_SOURCE   /* memmem */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tier.h"

/*
 * Each test works in its own directory inside one run directory.  A
 * failing check ends the test's process before any teardown, so main()
 * removes the run directory when the suite is done.
 */
static char run_dir[64] = "/dev/shm/kvtest.XXXXXX";
static char dir[128];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "%s/t.XXXXXX", run_dir);
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void remove_tree(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", path);
}

static void remove_dir(void)
{
    remove_tree(dir);
}

static struct kvshm_tier_spec spec_for(const char *prefix)
{
    struct kvshm_tier_spec s = {
        .region = {.dir = dir, .job = "tjob", .node = "tnode", .tag = prefix,
                   .uid = KVSHM_ANY_UID, .gid = (gid_t)-1,
                   .step = KVSHM_NO_STEP},
    };
    return s;
}

static struct kvshm_tier *create_tier(const struct kvshm_tier_spec *s)
{
    mpikvs_error_t err = {0};
    struct kvshm_tier *t = NULL;
    int rc = kvshm_tier_create(s, &t, &err);
    ck_assert_msg(rc == MPIKVS_OK, "kvshm_tier_create: %d %s", rc, err.text);
    return t;
}

static struct kvshm_tier *open_tier(const char *prefix, unsigned stall_ms)
{
    struct kvshm_tier_reader_opts o = {.stall_ms = stall_ms,
                                       .expect_uid = geteuid()};
    mpikvs_error_t err = {0};
    struct kvshm_tier *t = NULL;
    int rc = kvshm_tier_open(dir, "tjob", "tnode", prefix, &o, &t, &err);
    ck_assert_msg(rc == MPIKVS_OK, "kvshm_tier_open: %d %s", rc, err.text);
    return t;
}

/* ---- keys and self-checking values ---- */

struct key { uint64_t id, salt; };

static struct key key_of(uint64_t id)
{
    struct key k = {id, id * UINT64_C(0x9e3779b97f4a7c15) ^ 0x5a5a};
    return k;
}

static size_t value_len_of(uint64_t version)
{
    return 48 + 16 * (version % 3);
}

static uint8_t pattern(uint64_t id, uint64_t version, size_t i)
{
    return (uint8_t)((id * 131 + version * 31 + i * 7) >> 1);
}

static size_t make_value(uint8_t *buf, uint64_t id, uint64_t version)
{
    size_t len = value_len_of(version);
    memcpy(buf, &id, 8);
    memcpy(buf + 8, &version, 8);
    for (size_t i = 16; i < len; i++)
        buf[i] = pattern(id, version, i);
    return len;
}

/* -1 if value is not a whole value of id; else its version. */
static int64_t check_value(const uint8_t *buf, size_t len, uint64_t id)
{
    uint64_t got_id, version;

    if (len < 16)
        return -1;
    memcpy(&got_id, buf, 8);
    memcpy(&version, buf + 8, 8);
    if (got_id != id || len != value_len_of(version))
        return -1;
    for (size_t i = 16; i < len; i++)
        if (buf[i] != pattern(id, version, i))
            return -1;
    return (int64_t)version;
}

static void put_version(struct kvshm_tier *t, uint64_t id, uint64_t version)
{
    struct key k = key_of(id);
    uint8_t v[128];
    mpikvs_error_t err = {0};
    size_t len = make_value(v, id, version);
    int rc = kvshm_tier_put(t, &k, sizeof(k), v, len, &err);
    ck_assert_msg(rc == MPIKVS_OK, "put id %llu v%llu: %d %s",
                  (unsigned long long)id, (unsigned long long)version, rc,
                  err.text);
}

static int64_t get_version(struct kvshm_tier *t, uint64_t id)
{
    struct key k = key_of(id);
    uint8_t v[128];
    size_t len = 0;
    int rc = kvshm_tier_get(t, &k, sizeof(k), v, sizeof(v), &len);
    if (rc == MPIKVS_MISS)
        return -2;
    ck_assert_msg(rc == MPIKVS_OK, "get id %llu: %d (%s)",
                  (unsigned long long)id, rc, mpikvs_strerror(rc));
    int64_t version = check_value(v, len, id);
    ck_assert_msg(version >= 0, "id %llu: wrong value of %zu bytes",
                  (unsigned long long)id, len);
    return version;
}

/* ---- single-process behaviour ---- */

START_TEST(insert_lookup_miss)
{
    struct kvshm_tier_spec s = spec_for("basic");
    struct kvshm_tier *w = create_tier(&s), *r = open_tier("basic", 0);

    for (uint64_t id = 0; id < 1000; id++)
        put_version(w, id, id % 5);
    for (uint64_t id = 0; id < 1000; id++) {
        ck_assert_msg(get_version(r, id) == (int64_t)(id % 5),
                      "reader: id %llu has the wrong version",
                      (unsigned long long)id);
        ck_assert_msg(get_version(w, id) == (int64_t)(id % 5),
                      "writer: id %llu has the wrong version",
                      (unsigned long long)id);
    }
    for (uint64_t id = 1000; id < 2000; id++)
        ck_assert_msg(get_version(r, id) == -2, "id %llu should miss",
                      (unsigned long long)id);

    struct kvshm_tier_stats st;
    kvshm_tier_stats(r, &st);
    ck_assert_msg(st.entries == 1000, "entries %llu, expected 1000",
                  (unsigned long long)st.entries);
    ck_assert_msg(st.hits == 1000 && st.misses == 1000 && st.lookups == 2000,
                  "reader counted %llu hits %llu misses %llu lookups",
                  (unsigned long long)st.hits, (unsigned long long)st.misses,
                  (unsigned long long)st.lookups);
    ck_assert_msg(st.load_factor <= 1.0, "load factor %g above 1",
                  st.load_factor);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    ck_assert_int_eq(kvshm_tier_unlink(dir, "tjob", "tnode", "basic"), 0);
}
END_TEST

START_TEST(variable_sizes_and_small_buffers)
{
    struct kvshm_tier_spec s = spec_for("sizes");
    struct kvshm_tier *w = create_tier(&s), *r = open_tier("sizes", 0);
    mpikvs_error_t err = {0};
    static uint8_t big[65536], out[65536];
    char longkey[1000];
    size_t len = 0;

    memset(longkey, 'k', sizeof(longkey));
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 13);
    ck_assert_int_eq(kvshm_tier_put(w, "a", 1, "", 0, &err), MPIKVS_OK);
    ck_assert_int_eq(kvshm_tier_put(w, longkey, sizeof(longkey), big,
                                    sizeof(big), &err), MPIKVS_OK);

    ck_assert_int_eq(kvshm_tier_get(r, "a", 1, out, sizeof(out), &len),
                     MPIKVS_OK);
    ck_assert_msg(len == 0, "empty value came back with %zu bytes", len);
    ck_assert_int_eq(kvshm_tier_get(r, longkey, sizeof(longkey), out,
                                    sizeof(out), &len), MPIKVS_OK);
    ck_assert_msg(len == sizeof(big) && memcmp(out, big, len) == 0,
                  "64 KiB value came back wrong (%zu bytes)", len);
    /* a key that is a prefix of a stored key is another key */
    ck_assert_int_eq(kvshm_tier_get(r, longkey, 999, out, sizeof(out), &len),
                     MPIKVS_MISS);

    len = 0;
    ck_assert_int_eq(kvshm_tier_get(r, longkey, sizeof(longkey), out, 10,
                                    &len), MPIKVS_ERR_TOOBIG);
    ck_assert_msg(len == sizeof(big), "TOOBIG should report %zu, got %zu",
                  sizeof(big), len);

    ck_assert_int_eq(kvshm_tier_put(w, "", 0, "x", 1, &err),
                     MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_tier_put(r, "b", 1, "x", 1, &err),
                     MPIKVS_ERR_INVAL);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "sizes");
}
END_TEST

START_TEST(updates_in_place_and_relinked)
{
    struct kvshm_tier_spec s = spec_for("upd");
    struct kvshm_tier *w = create_tier(&s), *r = open_tier("upd", 0);
    struct kvshm_tier_stats st;
    const void *ref;
    size_t len;
    uint64_t gen;
    struct key k = key_of(7);

    for (uint64_t id = 0; id < 100; id++)
        put_version(w, id, 0);
    ck_assert_int_eq(kvshm_tier_get_ref(r, &k, sizeof(k), &ref, &len, &gen),
                     MPIKVS_OK);
    ck_assert_msg(((uintptr_t)ref & 7) == 0, "value not 8-byte aligned");
    ck_assert_msg(check_value(ref, len, 7) == 0, "ref shows a wrong value");
    ck_assert_msg(kvshm_tier_ref_valid(r, gen), "fresh ref not valid");

    put_version(w, 7, 3);      /* same length: rewritten in place */
    ck_assert_msg(!kvshm_tier_ref_valid(r, gen),
                  "ref still valid after an update was published");
    ck_assert_int_eq(get_version(r, 7), 3);
    kvshm_tier_stats(w, &st);
    ck_assert_msg(st.dead_bytes == 0, "in-place update left %llu dead bytes",
                  (unsigned long long)st.dead_bytes);

    put_version(w, 7, 4);      /* another length: new entry, old one dead */
    ck_assert_int_eq(get_version(r, 7), 4);
    kvshm_tier_stats(w, &st);
    ck_assert_msg(st.dead_bytes > 0 && st.updates == 2 && st.entries == 100,
                  "after 2 updates: dead %llu updates %llu entries %llu",
                  (unsigned long long)st.dead_bytes,
                  (unsigned long long)st.updates,
                  (unsigned long long)st.entries);
    for (uint64_t id = 0; id < 100; id++)
        ck_assert_int_eq(get_version(r, id), id == 7 ? 4 : 0);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "upd");
}
END_TEST

START_TEST(growth_and_rebuild_keep_everything)
{
    struct kvshm_tier_spec s = spec_for("grow");
    struct kvshm_tier *w, *r;
    struct kvshm_tier_stats st;
    const void *ref;
    size_t len;
    uint64_t gen;
    struct key k0 = key_of(0);

    s.initial_bytes = 4096;
    s.buckets = 2;
    s.max_load = 0.75;
    w = create_tier(&s);
    r = open_tier("grow", 0);
    put_version(w, 0, 1);
    ck_assert_int_eq(kvshm_tier_get_ref(r, &k0, sizeof(k0), &ref, &len, &gen),
                     MPIKVS_OK);
    for (uint64_t id = 1; id < 20000; id++) {
        put_version(w, id, id % 7);
        if (id % 3 == 0)
            put_version(w, id / 2, id % 11);   /* updates across rebuilds */
    }
    /* The mapping never moved: the old reference still points at id 0. */
    ck_assert_msg(check_value(ref, len, 0) == 1,
                  "a reference taken before growth shows another value");
    kvshm_tier_stats(r, &st);
    ck_assert_msg(st.growths > 5 && st.rebuilds > 5,
                  "expected growths and rebuilds, got %llu and %llu",
                  (unsigned long long)st.growths,
                  (unsigned long long)st.rebuilds);
    ck_assert_msg(st.load_factor <= 0.75, "load factor %g above 0.75",
                  st.load_factor);
    ck_assert_msg(st.entries == 20000, "entries %llu",
                  (unsigned long long)st.entries);
    for (uint64_t id = 0; id < 20000; id++) {
        int64_t expect = id % 7;
        uint64_t last = 0;
        /* the last update of id came from the largest writer index
         * 3j < 20000 with 3j/2 == id */
        for (uint64_t j = 3; j < 20000; j += 3)
            if (j / 2 == id && j > id)
                last = j;
        if (last)
            expect = last % 11;
        else if (id == 0)
            expect = 1;
        ck_assert_msg(get_version(r, id) == expect,
                      "id %llu: expected version %lld",
                      (unsigned long long)id, (long long)expect);
    }
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "grow");
}
END_TEST

START_TEST(a_million_entries)
{
    struct kvshm_tier_spec s = spec_for("million");
    struct kvshm_tier *w, *r;
    struct kvshm_tier_stats st;
    const uint64_t n = 1000000;

    s.max_bytes = UINT64_C(512) << 20;
    w = create_tier(&s);
    for (uint64_t id = 0; id < n; id++)
        put_version(w, id, id);
    r = open_tier("million", 0);
    for (uint64_t id = 0; id < n; id++)
        ck_assert_msg(get_version(r, id) == (int64_t)id,
                      "id %llu lost among a million",
                      (unsigned long long)id);
    for (uint64_t id = n; id < n + 100000; id++)
        ck_assert_msg(get_version(r, id) == -2, "id %llu should miss",
                      (unsigned long long)id);
    kvshm_tier_stats(r, &st);
    ck_assert_msg(st.entries == n && st.rebuilds >= 10 && st.growths >= 5,
                  "entries %llu rebuilds %llu growths %llu",
                  (unsigned long long)st.entries,
                  (unsigned long long)st.rebuilds,
                  (unsigned long long)st.growths);
    ck_assert_msg(st.load_factor <= 1.0, "load factor %g", st.load_factor);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "million");
}
END_TEST

START_TEST(full_tier_refuses_and_keeps_data)
{
    struct kvshm_tier_spec s = spec_for("full");
    struct kvshm_tier *w;
    struct kvshm_tier_stats before, after;
    mpikvs_error_t err = {0};
    uint64_t id;
    int rc = MPIKVS_OK;

    s.max_bytes = 64 * 1024;
    s.initial_bytes = 4096;
    w = create_tier(&s);
    for (id = 0; id < 100000; id++) {
        struct key k = key_of(id);
        uint8_t v[128];
        size_t len = make_value(v, id, 0);
        kvshm_tier_stats(w, &before);
        rc = kvshm_tier_put(w, &k, sizeof(k), v, len, &err);
        if (rc != MPIKVS_OK)
            break;
    }
    ck_assert_msg(rc == MPIKVS_ERR_FULL, "expected MPIKVS_ERR_FULL, got %d",
                  rc);
    ck_assert_msg(strstr(err.text, "full") != NULL, "error text: %s",
                  err.text);
    kvshm_tier_stats(w, &after);
    ck_assert_msg(after.entries == before.entries &&
                      after.entries_top == before.entries_top,
                  "a refused put changed the tier");
    for (uint64_t j = 0; j < id; j++)
        ck_assert_int_eq(get_version(w, j), 0);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "full");
}
END_TEST

START_TEST(open_errors_and_cleanup)
{
    struct kvshm_tier_spec s = spec_for("errs");
    struct kvshm_tier *w = NULL, *r = NULL;
    struct kvshm_region_spec rs = s.region;
    struct kvshm_region *reg = NULL;
    mpikvs_error_t err = {0};
    char path[256];
    int rc;

    rc = kvshm_tier_open(dir, "tjob", "tnode", "errs", NULL, &r, &err);
    ck_assert_msg(rc == MPIKVS_ERR_NOTFOUND && r == NULL,
                  "open of a missing tier: %d %s", rc, err.text);

    /* The entries region's name is taken: creation fails and removes the
     * index region it had made. */
    rs.tag = "errs-entries";
    rs.kind = KVSHM_KIND_DATA;
    rs.size = 4096;
    ck_assert_int_eq(kvshm_region_create(&rs, &reg, &err), MPIKVS_OK);
    kvshm_region_close(&reg);
    rc = kvshm_tier_create(&s, &w, &err);
    ck_assert_msg(rc == MPIKVS_ERR_EXISTS && w == NULL, "create: %d %s", rc,
                  err.text);
    snprintf(path, sizeof(path), "%s/mpikvs.tjob.tnode.errs-index", dir);
    ck_assert_msg(access(path, F_OK) != 0, "%s was left behind", path);

    /* A region of the wrong kind under the tier's name is refused. */
    rs.tag = "errs-index";
    rs.kind = KVSHM_KIND_TIER_INDEX;
    ck_assert_int_eq(kvshm_region_create(&rs, &reg, &err), MPIKVS_OK);
    kvshm_region_close(&reg);
    rc = kvshm_tier_open(dir, "tjob", "tnode", "errs", NULL, &r, &err);
    ck_assert_msg(rc == MPIKVS_ERR_KIND, "expected MPIKVS_ERR_KIND, got %d %s",
                  rc, err.text);

    rc = kvshm_tier_region_names("tjob", "tnode",
                                 "a-prefix-far-too-long-for-a-tag", path,
                                 path, &err);
    ck_assert_int_eq(rc, MPIKVS_ERR_NAME);
    kvshm_tier_unlink(dir, "tjob", "tnode", "errs");
}
END_TEST

START_TEST(reader_mapping_is_read_only)
{
    struct kvshm_tier_spec s = spec_for("ro");
    struct kvshm_tier *w = create_tier(&s);
    struct key k = key_of(1);
    const void *ref;
    size_t len;
    uint64_t gen;
    int status;
    pid_t pid;

    put_version(w, 1, 0);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        struct kvshm_tier *r = open_tier("ro", 0);
        /* Under AddressSanitizer its own handler would catch the fault. */
        signal(SIGSEGV, SIG_DFL);
        if (kvshm_tier_get_ref(r, &k, sizeof(k), &ref, &len, &gen) != 0)
            _exit(3);
        *(volatile uint8_t *)ref = 0;   /* must fault */
        _exit(0);
    }
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
                  "a store through a reader's reference did not fault "
                  "(status %#x)", status);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "ro");
}
END_TEST

START_TEST(dead_writer_is_reported_not_waited_for)
{
    struct kvshm_tier_spec s = spec_for("stall");
    struct kvshm_tier *w = create_tier(&s), *r;
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_TIER_INDEX,
                                 .writable = true, .expect_uid = geteuid()};
    struct kvshm_region *idx;
    struct kvshm_tier_control *ctl;
    mpikvs_error_t err = {0};
    struct key k = key_of(1);
    uint8_t v[128];
    size_t len;
    struct timespec t0, t1;

    put_version(w, 1, 0);
    r = open_tier("stall", 50);
    /* A writer that died in mid-publication leaves seq odd. */
    ck_assert_int_eq(kvshm_region_open(dir, "mpikvs.tjob.tnode.stall-index",
                                       &oo, &idx, &err), MPIKVS_OK);
    ctl = (struct kvshm_tier_control *)((char *)idx->base + KVSHM_HEADER_SIZE);
    ctl->seq |= 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(rc == MPIKVS_ERR_STALLED, "expected STALLED, got %d", rc);
    double waited = (double)(t1.tv_sec - t0.tv_sec) +
                    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_msg(waited >= 0.04 && waited < 5.0,
                  "gave up after %.3f s, stall timeout was 0.05 s", waited);
    ctl->seq += 1;
    ck_assert_int_eq(get_version(r, 1), 0);
    kvshm_region_close(&idx);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "stall");
}
END_TEST

/* ---- readers in other processes while the writer grows and rebuilds ---- */

struct reader_report {
    uint64_t lookups, hits, torn, went_back;
};

static void reader_loop(int done_fd, uint64_t ids, int out_fd,
                        unsigned seed, uint64_t *all_hits)
{
    struct kvshm_tier *r = open_tier("conc", 0);
    struct reader_report rep = {0};
    static int64_t seen[20000];
    uint8_t v[128];

    for (uint64_t i = 0; i < ids; i++)
        seen[i] = -1;
    fcntl(done_fd, F_SETFL, O_NONBLOCK);
    for (;;) {
        char c;
        for (int burst = 0; burst < 1000; burst++) {
            uint64_t id = (uint64_t)rand_r(&seed) % ids;
            struct key k = key_of(id);
            size_t len = 0;
            int rc = kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len);
            rep.lookups++;
            if (rc == MPIKVS_MISS)
                continue;
            if (rc != MPIKVS_OK) {
                rep.torn++;
                continue;
            }
            rep.hits++;
            __atomic_fetch_add(all_hits, 1, __ATOMIC_RELAXED);
            int64_t version = check_value(v, len, id);
            if (version < 0)
                rep.torn++;
            else if (version < seen[id])
                rep.went_back++;   /* versions only grow */
            else
                seen[id] = version;
        }
        if (read(done_fd, &c, 1) == 0)
            break;   /* the writer closed the pipe */
    }
    if (write(out_fd, &rep, sizeof(rep)) != sizeof(rep))
        _exit(2);
    kvshm_tier_close(&r);
    _exit(0);
}

START_TEST(readers_never_see_torn_entries)
{
    /* The writer goes on past ROUNDS until the readers have hit HITS
     * times (at most MAX_ROUNDS): on a busy machine they may get the CPU
     * only late, and the test is about their overlapping the writer. */
    enum { READERS = 3, IDS = 20000, ROUNDS = 60000, HITS = 1000,
           MAX_ROUNDS = 6000000 };
    uint64_t *all_hits = mmap(NULL, sizeof(*all_hits),
                              PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct kvshm_tier_spec s = spec_for("conc");
    struct kvshm_tier *w;
    struct kvshm_tier_stats st;
    int done[2], results[2];
    pid_t pids[READERS];
    struct reader_report total = {0};
    uint64_t version = 1;

    s.initial_bytes = 4096;
    s.buckets = 2;
    w = create_tier(&s);
    ck_assert(all_hits != MAP_FAILED);
    *all_hits = 0;
    ck_assert(pipe(done) == 0 && pipe(results) == 0);
    for (int i = 0; i < READERS; i++) {
        pids[i] = fork();
        ck_assert(pids[i] >= 0);
        if (pids[i] == 0) {
            close(done[1]);
            reader_loop(done[0], IDS, results[1], 1234u + (unsigned)i,
                        all_hits);
        }
    }
    close(done[0]);
    close(results[1]);

    /* Versions of an id only grow, lengths cycle through three sizes:
     * in-place rewrites and relinked entries both happen under readers. */
    for (uint64_t id = 0; id < IDS; id++)
        put_version(w, id, 0);
    for (int round = 0;
         round < ROUNDS ||
         (__atomic_load_n(all_hits, __ATOMIC_RELAXED) < HITS &&
          round < MAX_ROUNDS);
         round++)
        put_version(w, (uint64_t)round * 7919 % IDS, version++);
    close(done[1]);

    for (int i = 0; i < READERS; i++) {
        struct reader_report rep;
        int status;
        ck_assert(read(results[0], &rep, sizeof(rep)) == sizeof(rep));
        total.lookups += rep.lookups;
        total.hits += rep.hits;
        total.torn += rep.torn;
        total.went_back += rep.went_back;
        ck_assert(waitpid(pids[i], &status, 0) > 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "reader %d ended with status %#x", i, status);
    }
    close(results[0]);
    kvshm_tier_stats(w, &st);
    printf("concurrent readers: %llu lookups, %llu hits, %llu torn, "
           "%llu went back; writer: %llu rebuilds, %llu growths\n",
           (unsigned long long)total.lookups, (unsigned long long)total.hits,
           (unsigned long long)total.torn,
           (unsigned long long)total.went_back,
           (unsigned long long)st.rebuilds, (unsigned long long)st.growths);
    ck_assert_msg(total.torn == 0, "%llu torn or wrong values were returned",
                  (unsigned long long)total.torn);
    ck_assert_msg(total.went_back == 0,
                  "%llu lookups returned an older version than before",
                  (unsigned long long)total.went_back);
    ck_assert_msg(total.hits >= HITS, "readers hit only %llu times: they "
                  "did not overlap the writer", (unsigned long long)total.hits);
    munmap(all_hits, sizeof(*all_hits));
    ck_assert_msg(st.rebuilds >= 10 && st.growths >= 5,
                  "writer should have rebuilt and grown (%llu, %llu)",
                  (unsigned long long)st.rebuilds,
                  (unsigned long long)st.growths);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "conc");
}
END_TEST

/* ---- the writer of an existing tier, and clearing ---- */

static int open_writer(const char *prefix, struct kvshm_tier **t,
                       mpikvs_error_t *err)
{
    struct kvshm_tier_reader_opts o = {.expect_uid = geteuid()};
    return kvshm_tier_open_writer(dir, "tjob", "tnode", prefix, &o, t, err);
}

START_TEST(one_writer_at_a_time)
{
    struct kvshm_tier_spec s = spec_for("claim");
    struct kvshm_tier *w = create_tier(&s), *w2 = NULL, *r;
    struct kvshm_tier_stats st;
    mpikvs_error_t err = {0};
    pid_t child;
    int status, rc;

    put_version(w, 1, 1);
    /* the same process may take it again: the pid is its own */
    kvshm_tier_stats(w, &st);
    ck_assert_uint_eq(st.writer_pid, (uint64_t)getpid());
    kvshm_tier_close(&w);
    r = open_tier("claim", 0);
    kvshm_tier_stats(r, &st);
    ck_assert_msg(st.writer_pid == 0, "close kept the claim: %llu",
                  (unsigned long long)st.writer_pid);

    /* a live writer in another process keeps a second one out */
    int ready[2], go[2];
    ck_assert(pipe(ready) == 0 && pipe(go) == 0);
    child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        struct kvshm_tier *mine = NULL;
        /* only the ends it uses: a parent gone makes read() see EOF */
        close(ready[0]);
        close(go[1]);
        char c = open_writer("claim", &mine, NULL) == MPIKVS_OK ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(2);
        kvshm_tier_close(&mine);
        _exit(0);
    }
    close(ready[1]);   /* a child gone makes read() see EOF */
    close(go[0]);
    char c = 0;
    ck_assert(read(ready[0], &c, 1) == 1 && c == 'y');
    rc = open_writer("claim", &w2, &err);
    ck_assert_msg(rc == MPIKVS_ERR_EXISTS && !w2, "second writer: %d %s",
                  rc, err.text);
    ck_assert_msg(strstr(err.text, "already has a writer"), "%s", err.text);
    ck_assert(write(go[1], "x", 1) == 1);
    ck_assert(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);

    /* a writer that died without closing: its claim is taken over */
    child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        struct kvshm_tier *mine = NULL;
        if (open_writer("claim", &mine, NULL) != MPIKVS_OK)
            _exit(2);
        _exit(0);   /* no close: the pid stays in the control block */
    }
    ck_assert(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    kvshm_tier_stats(r, &st);
    ck_assert_uint_eq(st.writer_pid, (uint64_t)child);
    rc = open_writer("claim", &w2, &err);
    ck_assert_msg(rc == MPIKVS_OK, "taking over a dead writer: %d %s", rc,
                  err.text);
    put_version(w2, 2, 1);
    ck_assert_int_eq(get_version(r, 1), 1);
    ck_assert_int_eq(get_version(r, 2), 1);
    kvshm_tier_close(&w2);
    kvshm_tier_close(&r);
    close(ready[0]);
    close(go[1]);
}
END_TEST

START_TEST(clear_drops_everything_at_once)
{
    struct kvshm_tier_spec s = spec_for("clear");
    struct kvshm_tier *w = create_tier(&s), *r = open_tier("clear", 0);
    struct kvshm_tier_stats st;
    mpikvs_error_t err = {0};
    const void *ref = NULL;
    size_t len = 0;
    uint64_t gen = 0;
    struct key k = key_of(7);

    for (uint64_t id = 0; id < 3000; id++)   /* enough for a rebuild */
        put_version(w, id, 1);
    ck_assert_int_eq(kvshm_tier_get_ref(r, &k, sizeof(k), &ref, &len, &gen),
                     MPIKVS_OK);
    ck_assert_int_eq(kvshm_tier_clear(r, &err), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_tier_clear(w, &err), MPIKVS_OK);
    ck_assert_msg(!kvshm_tier_ref_valid(r, gen),
                  "a reference outlived the clear");
    for (uint64_t id = 0; id < 3000; id += 97)
        ck_assert_int_eq(get_version(r, id), -2);
    kvshm_tier_stats(r, &st);
    ck_assert_uint_eq(st.entries, 0);
    ck_assert_uint_eq(st.live_bytes, 0);
    ck_assert_uint_eq(st.clears, 1);
    /* and it fills again, from the start of the entries region */
    for (uint64_t id = 0; id < 3000; id++)
        put_version(w, id, 2);
    for (uint64_t id = 0; id < 3000; id += 97)
        ck_assert_int_eq(get_version(r, id), 2);
    kvshm_tier_close(&w);
    kvshm_tier_close(&r);
}
END_TEST

START_TEST(sized_for_bytes_fits_them)
{
    struct kvshm_tier_spec s = spec_for("sized");
    struct kvshm_tier *w;
    mpikvs_error_t err = {0};
    uint8_t v[104] = {0};
    uint64_t n = 0;
    struct key k;

    /* 1 MiB in all for 16-byte keys and 104-byte values */
    kvshm_tier_spec_for_bytes(&s, UINT64_C(1) << 20, sizeof(k), sizeof(v));
    ck_assert_msg(s.max_bytes + 4096 <= (UINT64_C(1) << 20) &&
                      s.initial_bytes == s.max_bytes,
                  "entries %llu of 1 MiB", (unsigned long long)s.max_bytes);
    ck_assert_msg((s.buckets & (s.buckets - 1)) == 0 && s.buckets >= 64,
                  "buckets %llu", (unsigned long long)s.buckets);
    w = create_tier(&s);
    for (;; n++) {
        k = key_of(n);
        if (kvshm_tier_put(w, &k, sizeof(k), v, sizeof(v), &err) !=
            MPIKVS_OK)
            break;
    }
    ck_assert_msg(strstr(err.text, "full"), "%s", err.text);
    /* most of the bytes hold entries */
    ck_assert_msg(n * kvshm_entry_size(sizeof(k), sizeof(v)) >
                      (UINT64_C(1) << 20) * 8 / 10,
                  "only %llu entries fit", (unsigned long long)n);
    kvshm_tier_close(&w);
}
END_TEST

/* ---- a writer killed in mid-publication, and the next one ---- */

/* The value the killed writer tears: big enough that any memcpy stores
 * part of it before it reaches the half it cannot read (no CPU holds
 * 32 KiB in registers), unless it reads the tail first (then the old
 * value stays whole, which the test accepts too). */
#define BIG_LEN (64u * 1024u)
#define BIG_ID  UINT64_C(777777)

static int open_index_ctl(const char *prefix, struct kvshm_region **idx,
                          struct kvshm_tier_control **ctl)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_TIER_INDEX,
                                 .writable = false,
                                 .expect_uid = geteuid()};
    char name[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err = {0};
    int rc;

    snprintf(name, sizeof(name), "mpikvs.tjob.tnode.%s-index", prefix);
    rc = kvshm_region_open(dir, name, &oo, idx, &err);
    if (rc == MPIKVS_OK)
        *ctl = (struct kvshm_tier_control *)((char *)(*idx)->base +
                                             KVSHM_HEADER_SIZE);
    return rc;
}

/* A big value is BIG_LEN bytes of one byte: anything else is torn. */
static bool big_whole(const uint8_t *v, size_t len)
{
    if (len != BIG_LEN)
        return false;
    for (size_t i = 1; i < len; i++)
        if (v[i] != v[0])
            return false;
    return v[0] == 0x11 || v[0] == 0x22 || v[0] == 0x33;
}

static void stop_in_handler(int sig)
{
    (void)sig;
    raise(SIGSTOP);   /* the parent kills us while we are stopped */
    for (;;)
        pause();
}

/*
 * The child takes the writer and updates the big value in place from a
 * buffer whose second half is an inaccessible page: the copy faults in
 * the middle of the publication, with seq odd and part of the new value
 * stored.  Deterministic, and with no hook in the code under test.
 */
static void writer_dies_mid_publication(const char *prefix)
{
    struct kvshm_tier_reader_opts o = {.expect_uid = geteuid()};
    struct kvshm_tier *mine = NULL;
    struct key k = key_of(BIG_ID);
    struct sigaction sa = {.sa_handler = stop_in_handler};
    size_t span = BIG_LEN;   /* a multiple of the page size */
    uint8_t *buf, *src;

    if (kvshm_tier_open_writer(dir, "tjob", "tnode", prefix, &o, &mine,
                               NULL) != MPIKVS_OK)
        _exit(2);
    buf = mmap(NULL, 2 * span, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        _exit(3);
    src = buf + span - BIG_LEN / 2;
    memset(src, 0x22, BIG_LEN / 2);
    if (mprotect(buf + span, span, PROT_NONE) != 0)
        _exit(4);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    kvshm_tier_put(mine, &k, sizeof(k), src, BIG_LEN, NULL);
    _exit(5);   /* the put must fault */
}

struct torn_reader {
    const char *prefix;
    volatile int *stop;
    uint64_t *all_hits;   /* every reader's, for the writer to wait on */
    uint64_t ids, lookups, hits, torn, errors;
    int first_error;
};

static void *torn_reader_main(void *arg)
{
    struct torn_reader *tr = arg;
    struct kvshm_tier_reader_opts o = {.stall_ms = 200,
                                       .expect_uid = geteuid()};
    struct kvshm_tier *r = NULL;
    uint8_t v[BIG_LEN];
    unsigned seed = (unsigned)(uintptr_t)tr;

    if (kvshm_tier_open(dir, "tjob", "tnode", tr->prefix, &o, &r, NULL) !=
        MPIKVS_OK) {
        tr->errors++;
        return NULL;
    }
    while (!__atomic_load_n(tr->stop, __ATOMIC_ACQUIRE)) {
        uint64_t id = (uint64_t)rand_r(&seed) % (tr->ids + 1);
        bool big = id == tr->ids;
        struct key k = key_of(big ? BIG_ID : id);
        size_t len = 0;
        int rc = kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len);
        tr->lookups++;
        if (rc == MPIKVS_MISS)
            continue;
        if (rc != MPIKVS_OK) {
            if (!tr->errors++)
                tr->first_error = rc;
            continue;
        }
        tr->hits++;
        __atomic_fetch_add(tr->all_hits, 1, __ATOMIC_RELAXED);
        if (big ? !big_whole(v, len) : check_value(v, len, id) < 0)
            tr->torn++;
    }
    kvshm_tier_close(&r);
    return NULL;
}

START_TEST(killed_writer_is_repaired_by_the_next)
{
    /* The writer goes on past ROUNDS until the readers have hit HITS
     * times (at most MAX_ROUNDS): on a busy machine they may get the CPU
     * only late, and the test is about their overlapping the writer. */
    enum { READERS = 3, IDS = 200, ROUNDS = 3000, HITS = 200,
           MAX_ROUNDS = 300000 };
    uint64_t all_hits = 0;
    int rounds;
    struct kvshm_tier_spec s = spec_for("kill");
    struct kvshm_tier *w = create_tier(&s), *w2 = NULL;
    struct kvshm_region *idx = NULL;
    struct kvshm_tier_control *ctl;
    struct torn_reader tr[READERS];
    pthread_t th[READERS];
    volatile int stop = 0;
    struct key bk = key_of(BIG_ID);
    uint8_t big[BIG_LEN];
    mpikvs_error_t err = {0};
    pid_t child;
    int status, rc;

    for (uint64_t id = 0; id < IDS; id++)
        put_version(w, id, 0);
    memset(big, 0x11, sizeof(big));
    ck_assert_int_eq(kvshm_tier_put(w, &bk, sizeof(bk), big, BIG_LEN, &err),
                     MPIKVS_OK);
    kvshm_tier_close(&w);

    child = fork();
    ck_assert(child >= 0);
    if (child == 0)
        writer_dies_mid_publication("kill");
    ck_assert(waitpid(child, &status, WUNTRACED) == child);
    ck_assert_msg(WIFSTOPPED(status), "the writer did not stop in its put "
                  "(status %#x)", status);
    ck_assert_int_eq(open_index_ctl("kill", &idx, &ctl), MPIKVS_OK);
    ck_assert_msg(__atomic_load_n(&ctl->seq, __ATOMIC_ACQUIRE) & 1,
                  "the writer stopped outside a publication");
    ck_assert(kill(child, SIGKILL) == 0);
    ck_assert(waitpid(child, &status, 0) == child && WIFSIGNALED(status) &&
              WTERMSIG(status) == SIGKILL);

    /* A new writer takes over and works; readers run all along. */
    rc = open_writer("kill", &w2, &err);
    ck_assert_msg(rc == MPIKVS_OK, "taking over: %d %s", rc, err.text);
    {
        /* repaired at once: the half-written value dropped, or (had the
         * copy faulted before its first store) the old one whole */
        struct kvshm_tier *r0 = open_tier("kill", 200);
        struct kvshm_tier_stats st;
        uint8_t v0[BIG_LEN];
        size_t len0 = 0;
        kvshm_tier_stats(w2, &st);
        rc = kvshm_tier_get(r0, &bk, sizeof(bk), v0, sizeof(v0), &len0);
        printf("takeover: %llu repairs, %llu dropped, big value %s\n",
               (unsigned long long)st.repairs,
               (unsigned long long)st.dropped,
               rc == MPIKVS_MISS ? "gone" : "kept");
        ck_assert_uint_eq(st.repairs, 1);
        ck_assert_msg(rc == MPIKVS_MISS ? st.dropped == 1
                                        : rc == MPIKVS_OK &&
                                              big_whole(v0, len0) &&
                                              v0[0] == 0x11,
                      "after the repair the big value is %d, %llu dropped",
                      rc, (unsigned long long)st.dropped);
        for (uint64_t id = 0; id < IDS; id++)
            ck_assert_int_eq(get_version(r0, id), 0);
        kvshm_tier_close(&r0);
    }
    for (int i = 0; i < READERS; i++) {
        tr[i] = (struct torn_reader){.prefix = "kill", .stop = &stop,
                                     .all_hits = &all_hits, .ids = IDS};
        ck_assert(pthread_create(&th[i], NULL, torn_reader_main, &tr[i]) ==
                  0);
    }
    for (rounds = 0;
         rounds < ROUNDS ||
         (__atomic_load_n(&all_hits, __ATOMIC_RELAXED) < HITS &&
          rounds < MAX_ROUNDS);
         rounds++) {
        int round = rounds;
        /* versions 3 apart keep the length: updates in place */
        put_version(w2, (uint64_t)round % IDS, 3 * (uint64_t)(round / IDS + 1));
        if (round % 10 == 0) {
            memset(big, round % 20 ? 0x33 : 0x22, sizeof(big));
            ck_assert_int_eq(kvshm_tier_put(w2, &bk, sizeof(bk), big,
                                            BIG_LEN, &err), MPIKVS_OK);
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    uint64_t lookups = 0, hits = 0, torn = 0, errors = 0;
    int first_error = 0;
    for (int i = 0; i < READERS; i++) {
        ck_assert(pthread_join(th[i], NULL) == 0);
        lookups += tr[i].lookups;
        hits += tr[i].hits;
        torn += tr[i].torn;
        if (tr[i].errors && !errors)
            first_error = tr[i].first_error;
        errors += tr[i].errors;
    }
    printf("after a killed writer: %d rounds, seq %llu, %llu lookups, "
           "%llu hits, %llu torn, %llu errors (first %d)\n", rounds,
           (unsigned long long)__atomic_load_n(&ctl->seq, __ATOMIC_ACQUIRE),
           (unsigned long long)lookups, (unsigned long long)hits,
           (unsigned long long)torn, (unsigned long long)errors,
           first_error);
    fflush(stdout);
    ck_assert_msg(!(__atomic_load_n(&ctl->seq, __ATOMIC_ACQUIRE) & 1),
                  "the new writer left seq odd: readers take idle for "
                  "writing");
    ck_assert_msg(torn == 0, "%llu torn values were hits",
                  (unsigned long long)torn);
    ck_assert_msg(errors == 0, "%llu lookups failed (first: %s)",
                  (unsigned long long)errors, mpikvs_strerror(first_error));
    ck_assert_msg(hits >= HITS, "only %llu hits in %d rounds",
                  (unsigned long long)hits, rounds);
    /* what the new writer wrote is there, whole */
    struct kvshm_tier *r = open_tier("kill", 0);
    uint8_t v[BIG_LEN];
    size_t len = 0;
    ck_assert_int_eq(kvshm_tier_get(r, &bk, sizeof(bk), v, sizeof(v), &len),
                     MPIKVS_OK);
    ck_assert_msg(big_whole(v, len) && v[0] == big[0], "big value wrong");
    for (uint64_t id = 0; id < IDS; id++)
        ck_assert_int_eq(get_version(r, id),
                         3 * (int64_t)(((uint64_t)rounds - 1 - id) / IDS + 1));
    kvshm_tier_close(&r);
    kvshm_region_close(&idx);
    kvshm_tier_close(&w2);
    kvshm_tier_unlink(dir, "tjob", "tnode", "kill");
}
END_TEST

/* ---- damaged entries are never hits, and rebuilds drop them ---- */

/* Flip a byte of the value of id in the entries file itself. */
static void damage_value_of(const char *prefix, uint64_t id)
{
    char path[256];
    struct key k = key_of(id);
    struct stat st;
    uint8_t *buf, *at;
    int fd;

    snprintf(path, sizeof(path), "%s/mpikvs.tjob.tnode.%s-entries", dir,
             prefix);
    fd = open(path, O_RDWR);
    ck_assert(fd >= 0 && fstat(fd, &st) == 0);
    buf = malloc((size_t)st.st_size);
    ck_assert(buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size);
    at = memmem(buf, (size_t)st.st_size, &k, sizeof(k));
    ck_assert_msg(at, "the key of id %llu is not in %s",
                  (unsigned long long)id, path);
    at += sizeof(k) + 20;   /* inside the value (keys are 16 bytes) */
    *at ^= 0x40;
    ck_assert(pwrite(fd, at, 1, at - buf) == 1);
    free(buf);
    close(fd);
}

START_TEST(damaged_entries_are_not_hits_and_rebuilds_drop_them)
{
    struct kvshm_tier_spec s = spec_for("dmg");
    struct kvshm_tier *w, *r;
    struct kvshm_tier_stats st0, st;
    struct key k = key_of(3);
    uint8_t v[128];
    size_t len = 0;
    int rc;

    s.buckets = 4;
    w = create_tier(&s);
    r = open_tier("dmg", 0);
    for (uint64_t id = 0; id < 4; id++)
        put_version(w, id, 1);
    damage_value_of("dmg", 3);
    rc = kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len);
    ck_assert_msg(rc != MPIKVS_OK, "a damaged value was a hit (%s)",
                  check_value(v, len, 3) < 0 ? "and it is wrong" : "whole?");
    /* more entries than buckets: the next put rebuilds the index */
    kvshm_tier_stats(w, &st0);
    for (uint64_t id = 4; kvshm_tier_stats(w, &st), st.rebuilds == st0.rebuilds;
         id++)
        put_version(w, id, 1);
    ck_assert_int_eq(kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len),
                     MPIKVS_MISS);
    ck_assert_int_eq(get_version(r, 2), 1);
    ck_assert_msg(st.dropped == 1, "rebuild dropped %llu entries",
                  (unsigned long long)st.dropped);
    ck_assert_int_eq(get_version(r, 0), 1);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "dmg");
}
END_TEST

/* Point the next of the last entry of a tier back at its first entry:
 * with one bucket, a cycle. */
static void link_last_to_first(const char *prefix)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_TIER_ENTRIES,
                                 .writable = true, .expect_uid = geteuid()};
    struct kvshm_region *ent;
    struct kvshm_tier_entry *e;
    mpikvs_error_t err = {0};
    char name[KVSHM_NAME_MAX + 1];
    uint64_t off, last = 0;

    snprintf(name, sizeof(name), "mpikvs.tjob.tnode.%s-entries", prefix);
    ck_assert_int_eq(kvshm_region_open(dir, name, &oo, &ent, &err),
                     MPIKVS_OK);
    for (off = KVSHM_HEADER_SIZE;; last = off,
        off += kvshm_entry_size(e->key_len, e->value_len)) {
        e = (struct kvshm_tier_entry *)((char *)ent->base + off);
        if (e->key_len == 0)
            break;   /* past the last entry: zero pages */
    }
    e = (struct kvshm_tier_entry *)((char *)ent->base + last);
    ck_assert_uint_eq(e->next, 0);
    e->next = KVSHM_HEADER_SIZE / KVSHM_TIER_UNIT;
    kvshm_region_close(&ent);
}

START_TEST(writer_walks_a_cyclic_chain_and_repairs_it)
{
    struct kvshm_tier_spec s = spec_for("cycle");
    struct kvshm_tier *w, *r;
    struct kvshm_tier_stats st;

    s.buckets = 1;          /* one chain holds every entry */
    s.max_load = 100.0;     /* and no rebuild relinks it */
    w = create_tier(&s);
    for (uint64_t id = 0; id < 3; id++)
        put_version(w, id, 0);
    link_last_to_first("cycle");

    /* a put of a new key walks the whole chain: it must end, repair, and
     * leave every entry findable */
    put_version(w, 3, 0);
    kvshm_tier_stats(w, &st);
    ck_assert_msg(st.repairs == 1, "repairs %llu",
                  (unsigned long long)st.repairs);
    r = open_tier("cycle", 0);
    for (uint64_t id = 0; id < 4; id++)
        ck_assert_int_eq(get_version(r, id), 0);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "cycle");
}
END_TEST

/* ---- what the fuzzer found (tests/fuzz/corpus/region) ---- */

static struct kvshm_tier_control *writable_ctl(const char *prefix,
                                               struct kvshm_region **idx)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_TIER_INDEX,
                                 .writable = true, .expect_uid = geteuid()};
    char name[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err = {0};

    snprintf(name, sizeof(name), "mpikvs.tjob.tnode.%s-index", prefix);
    ck_assert_int_eq(kvshm_region_open(dir, name, &oo, idx, &err),
                     MPIKVS_OK);
    return (struct kvshm_tier_control *)((char *)(*idx)->base +
                                         KVSHM_HEADER_SIZE);
}

/* Both regions are mapped for their largest size, the files are smaller:
 * a bucket count or entries_top that only the mapping holds must be
 * refused by a reader, not read (SIGBUS). */
START_TEST(reader_limits_come_from_the_file_sizes)
{
    struct kvshm_tier_spec s = spec_for("bus");
    struct kvshm_tier *w, *r;
    struct kvshm_region *idx;
    struct kvshm_tier_control *ctl;
    struct kvshm_tier_bucket *b;
    uint64_t n, top;
    int rc;

    s.buckets = 1;          /* every key in bucket 0 */
    s.max_load = 100.0;
    w = create_tier(&s);
    put_version(w, 0, 0);
    r = open_tier("bus", 1);
    ctl = writable_ctl("bus", &idx);
    ck_assert_msg(idx->size < idx->map_len, "index %llu of %llu",
                  (unsigned long long)idx->size,
                  (unsigned long long)idx->map_len);

    /* buckets far past the end of the index file, inside its mapping */
    for (n = 1; KVSHM_TIER_BUCKETS_OFFSET + n * 2 * sizeof(*b) <=
                idx->map_len; n *= 2)
        ;
    ck_assert(KVSHM_TIER_BUCKETS_OFFSET + n * sizeof(*b) > idx->size);
    ctl->nbuckets = n;
    for (uint64_t id = 0; id < 64; id++) {
        struct key k = key_of(id);
        uint8_t v[128];
        size_t len;
        rc = kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len);
        ck_assert_msg(rc == MPIKVS_ERR_CORRUPT, "get id %llu: %d",
                      (unsigned long long)id, rc);
    }
    put_version(w, 1, 0);   /* the writer repairs it */
    ck_assert_int_eq(get_version(r, 0), 0);
    ck_assert_int_eq(get_version(r, 1), 0);

    /* an entry past the end of the entries file (1 MiB), inside its
     * mapping (the default max_bytes, 1 GiB) */
    top = KVSHM_TIER_DEFAULT_MAX_BYTES;
    b = (struct kvshm_tier_bucket *)((char *)idx->base +
                                     KVSHM_TIER_BUCKETS_OFFSET);
    ctl->nbuckets = 1;
    ctl->entries_top = top;
    b[0].head = (uint32_t)((top - 4096) / KVSHM_TIER_UNIT);
    rc = kvshm_tier_get(r, &(struct key){7, 7}, sizeof(struct key), NULL, 0,
                        NULL);
    ck_assert_msg(rc == MPIKVS_ERR_CORRUPT, "get past the file: %d", rc);

    kvshm_region_close(&idx);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "bus");
}
END_TEST

/* A cyclic chain and an entry count of 1.7e19: every walk ends, bounded
 * by what entries_top can hold, and the writer repairs it. */
START_TEST(walks_end_whatever_the_entry_count_says)
{
    struct kvshm_tier_spec s = spec_for("loop");
    struct kvshm_tier *w, *r;
    struct kvshm_region *idx;
    struct kvshm_tier_control *ctl;
    struct kvshm_tier_stats st;
    struct key k = key_of(3);
    uint8_t v[128];
    size_t len;

    s.buckets = 1;
    s.max_load = 100.0;
    w = create_tier(&s);
    for (uint64_t id = 0; id < 3; id++)
        put_version(w, id, 0);
    link_last_to_first("loop");
    ctl = writable_ctl("loop", &idx);
    ctl->entries = UINT64_C(0xf000000000000000);
    r = open_tier("loop", 1);
    ck_assert_int_eq(kvshm_tier_get(r, &k, sizeof(k), v, sizeof(v), &len),
                     MPIKVS_ERR_CORRUPT);
    put_version(w, 3, 0);
    kvshm_tier_stats(w, &st);
    ck_assert_msg(st.repairs == 1 && st.entries == 4,
                  "repairs %llu, entries %llu",
                  (unsigned long long)st.repairs,
                  (unsigned long long)st.entries);
    for (uint64_t id = 0; id < 4; id++)
        ck_assert_int_eq(get_version(r, id), 0);
    kvshm_region_close(&idx);
    kvshm_tier_close(&r);
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "loop");
}
END_TEST

/* ---- a tier is whole before it has a name ---- */

static volatile int hook_truncates, hook_calls, hook_incomplete;

/* Called by kvshm_region_create right after a region is linked. */
void kvshm_region_linked_hook(const char *path);
void kvshm_region_linked_hook(const char *path)
{
    struct kvshm_tier_control ctl;
    int fd;

    hook_calls++;
    if (strstr(path, "-index")) {
        fd = open(path, O_RDONLY);
        if (fd < 0 || pread(fd, &ctl, sizeof(ctl), KVSHM_HEADER_SIZE) !=
                          (ssize_t)sizeof(ctl) ||
            ctl.nbuckets == 0 || ctl.entries_top != KVSHM_HEADER_SIZE ||
            ctl.max_load_milli == 0)   /* (hash_seed is 0 when filled) */
            hook_incomplete++;
        if (fd >= 0)
            close(fd);
    }
    if (hook_truncates && truncate(path, 0) != 0)
        hook_incomplete += 100;
}

START_TEST(a_tier_is_whole_before_it_is_named)
{
    struct kvshm_tier_spec s = spec_for("named");
    struct kvshm_tier *w;
    pid_t child;
    int status;

    /* read through the file (not the creator's mapping) at the link */
    hook_calls = hook_incomplete = 0;
    w = create_tier(&s);
    ck_assert_int_eq(hook_calls, 2);
    ck_assert_msg(hook_incomplete == 0, "the index was named before its "
                  "control block was written");
    kvshm_tier_close(&w);
    kvshm_tier_unlink(dir, "tjob", "tnode", "named");

    /* The plugin's case: made for an owner, who truncates both files the
     * moment they are named.  The creator must not touch them after. */
    child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        struct kvshm_tier *t = NULL;
        s.region.uid = geteuid();
        s.region.gid = getegid();
        hook_truncates = 1;
        int rc = kvshm_tier_create(&s, &t, NULL);
        kvshm_tier_close(&t);
        _exit(rc == MPIKVS_OK && hook_incomplete < 100 ? 0 : 1);
    }
    ck_assert(waitpid(child, &status, 0) == child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "creating a tier whose files are truncated once named: "
                  "status %#x%s", status,
                  WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS
                      ? " (SIGBUS: it wrote through the mapping)" : "");
    kvshm_tier_unlink(dir, "tjob", "tnode", "named");
}
END_TEST

static Suite *tier_suite(void)
{
    Suite *s = suite_create("tier");
    TCase *tc = tcase_create("tier");

    tcase_add_checked_fixture(tc, make_dir, remove_dir);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, insert_lookup_miss);
    tcase_add_test(tc, variable_sizes_and_small_buffers);
    tcase_add_test(tc, updates_in_place_and_relinked);
    tcase_add_test(tc, growth_and_rebuild_keep_everything);
    tcase_add_test(tc, a_million_entries);
    tcase_add_test(tc, full_tier_refuses_and_keeps_data);
    tcase_add_test(tc, open_errors_and_cleanup);
    tcase_add_test(tc, reader_mapping_is_read_only);
    tcase_add_test(tc, dead_writer_is_reported_not_waited_for);
    tcase_add_test(tc, readers_never_see_torn_entries);
    tcase_add_test(tc, one_writer_at_a_time);
    tcase_add_test(tc, clear_drops_everything_at_once);
    tcase_add_test(tc, sized_for_bytes_fits_them);
    tcase_add_test(tc, killed_writer_is_repaired_by_the_next);
    tcase_add_test(tc, damaged_entries_are_not_hits_and_rebuilds_drop_them);
    tcase_add_test(tc, a_tier_is_whole_before_it_is_named);
    tcase_add_test(tc, writer_walks_a_cyclic_chain_and_repairs_it);
    suite_add_tcase(s, tc);

    /* a hang is a failure within seconds, not after the 240 above */
    tc = tcase_create("fuzz findings");
    tcase_add_checked_fixture(tc, make_dir, remove_dir);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, reader_limits_come_from_the_file_sizes);
    tcase_add_test(tc, walks_end_whatever_the_entry_count_says);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (!mkdtemp(run_dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", run_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    sr = srunner_create(tier_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(run_dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
