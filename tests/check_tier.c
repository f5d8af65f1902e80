/*
 * check_tier.c - the read-only lookup tier: one writer, lock-free readers.
 *
 * Every value the tests store is derived from its key and a version, so
 * a reader can tell a right value from a torn or wrong one by itself.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
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
                        unsigned seed)
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
    enum { READERS = 3, IDS = 20000 };
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
    ck_assert(pipe(done) == 0 && pipe(results) == 0);
    for (int i = 0; i < READERS; i++) {
        pids[i] = fork();
        ck_assert(pids[i] >= 0);
        if (pids[i] == 0) {
            close(done[1]);
            reader_loop(done[0], IDS, results[1], 1234u + (unsigned)i);
        }
    }
    close(done[0]);
    close(results[1]);

    /* Versions of an id only grow, lengths cycle through three sizes:
     * in-place rewrites and relinked entries both happen under readers. */
    for (uint64_t id = 0; id < IDS; id++)
        put_version(w, id, 0);
    for (int round = 0; round < 60000; round++)
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
    ck_assert_msg(total.hits > 1000, "readers hit only %llu times: they did "
                  "not overlap the writer", (unsigned long long)total.hits);
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
