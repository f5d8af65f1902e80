/*
 * check_job_layout.c - unit tests of the job layout region (shm/job_layout.h),
 * of laying out a table's data region (shm/data_region.h) and of the fill
 * callback of kvshm_region_create (shm/region.h) that both rely on.
 *
 * Every test that makes files works in a private directory under /dev/shm
 * that its checked fixture makes and removes with everything in it.  The
 * private directories sit in one run directory that main() removes at the
 * end: in fork mode a failed assertion ends the test's process before its
 * teardown runs, and nothing may be left in /dev/shm even then.
 *
 * Tests that need root (layouts owned by other users, opening as uid
 * 65534) are only added to the suite when they can run; otherwise main()
 * prints a SKIP line for them.  Child processes never call ck_assert: they
 * report through a pipe and the test's own process asserts.
 */
#define _GNU_SOURCE
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "data_region.h"
#include "format.h"
#include "job_config.h"
#include "job_layout.h"
#include "mpikvs_errors.h"
#include "plan.h"
#include "region.h"
#include "shm_check.h"
#include "size.h"

#define JOB        "77"
#define NODE       "n1"
#define STEP       3u
#define NOBODY     ((uid_t)65534)
#define NOGROUP    ((gid_t)65534)
#define OTHER_UID  ((uid_t)4242)
#define KiB        (UINT64_C(1) << 10)
#define MiB        (UINT64_C(1) << 20)
#define PAGE       UINT64_C(4096)

#define CONFIG_TEXT                                                     \
    "{\"version\": 1, \"tables\": {\"chem\": {\"size\": \"50%\", "      \
    "\"key\": {\"bytes\": 16}, \"value\": {\"bytes\": 40}}}}"

/* ---------------------------------------------------------------- helpers */

static void assert_text_has(const mpikvs_error_t *err, const char *want,
                            const char *what)
{
    ck_assert_msg(strstr(err->text, want) != NULL,
                  "%s: error text should name \"%s\": \"%.511s\"", what, want,
                  err->text);
}

static void region_name_of(char *name, const char *tag)
{
    mpikvs_error_t err = {0};
    int rc = kvshm_region_name(name, KVSHM_NAME_MAX + 1, JOB, NODE, tag,
                               &err);
    assert_rc(rc, MPIKVS_OK, &err, "kvshm_region_name(%s)", tag);
}

/* "<test_dir>/mpikvs.77.n1.<tag>", as MPIKVS_LAYOUT would give it. */
static void path_of(char *path, const char *tag)
{
    char name[KVSHM_NAME_MAX + 1];
    region_name_of(name, tag);
    snprintf(path, PATH_MAX, "%s/%s", test_dir, name);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Give up the privileges of root for uid/gid 65534 (in a child). */
static bool become_nobody(void)
{
    return setgroups(0, NULL) == 0 && setgid(NOGROUP) == 0 &&
           setuid(NOBODY) == 0;
}

/* What a child reports through a pipe. */
struct report {
    int  rc;
    int  same;                  /* the layout it read is the expected one */
    char text[600];
};

static void send_report(int fd, const struct report *rep)
{
    ssize_t n = write(fd, rep, sizeof *rep);
    _exit(n == (ssize_t)sizeof *rep ? 0 : 1);
}

/* Read a child's report and reap it; assert that it reported. */
static struct report recv_report(int fd, pid_t pid, const char *what)
{
    struct report rep;
    int status = 0;

    memset(&rep, 0, sizeof rep);
    ssize_t n = read(fd, &rep, sizeof rep);
    close(fd);
    waitpid(pid, &status, 0);
    ck_assert_msg(n == (ssize_t)sizeof rep && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0,
                  "%s: the child did not report (read %zd, status %#x)", what,
                  n, status);
    return rep;
}

/* -------------------------------------------------------- layout helpers */

struct sample {
    struct kvshm_job_table  tables[3];
    struct kvshm_job_layout l;
};

static void make_table(struct kvshm_job_table *t, enum kvshm_scope scope,
                       const char *name, uint64_t data_bytes,
                       uint64_t tier_bytes)
{
    mpikvs_error_t err = {0};
    int rc = kvshm_job_table_tags(scope, STEP, name, t, &err);

    assert_rc(rc, MPIKVS_OK, &err, "kvshm_job_table_tags(%s)", name);
    t->data_bytes = data_bytes;
    t->tier_bytes = tier_bytes;
    if (tier_bytes == 0)
        t->tier_prefix[0] = '\0';       /* "" without a tier */
}

/* The layout of test 3: three tables, a node list, a config, job scope. */
static void sample_init(struct sample *s)
{
    memset(s, 0, sizeof *s);
    make_table(&s->tables[0], KVSHM_SCOPE_JOB, "chem", 32 * MiB, 8 * MiB);
    make_table(&s->tables[1], KVSHM_SCOPE_JOB, "phys", 24 * MiB, 0);
    make_table(&s->tables[2], KVSHM_SCOPE_JOB, "abcdefghijklmnop", 8 * MiB,
               2 * MiB);
    snprintf(s->l.job, sizeof s->l.job, "%s", JOB);
    snprintf(s->l.node, sizeof s->l.node, "%s", NODE);
    s->l.scope = KVSHM_SCOPE_JOB;
    s->l.step = STEP;
    s->l.nnodes = 4;
    s->l.node_index = 2;
    s->l.tasks_on_node = 8;
    s->l.dht_size = 64 * MiB;
    s->l.request_hash = kvshm_job_request_hash(64 * MiB, CONFIG_TEXT);
    s->l.ntables = 3;
    s->l.tables = s->tables;
    s->l.nodelist = (char *)"n[1-4]";
    s->l.config_text = (char *)CONFIG_TEXT;
}

static struct kvshm_region_spec layout_spec(const char *tag, mode_t mode)
{
    struct kvshm_region_spec s = {
        .dir = test_dir, .job = JOB, .node = NODE, .tag = tag,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .mode = mode, .step = STEP,
    };
    return s;
}

static void create_layout(const struct kvshm_region_spec *spec,
                          const struct kvshm_job_layout *l)
{
    mpikvs_error_t err = {0};
    int rc = kvshm_job_layout_create(spec, l, &err);
    assert_rc(rc, MPIKVS_OK, &err, "kvshm_job_layout_create(%s)", spec->tag);
}

/* The page-rounded size of the region holding l (job_layout.h's picture:
 * header | control | tables | node list NUL | config NUL). */
static uint64_t layout_size(const struct kvshm_job_layout *l)
{
    uint64_t end = KVSHM_HEADER_SIZE + sizeof(struct kvshm_layout_control) +
                   l->ntables * sizeof(struct kvshm_job_table) +
                   (l->nodelist ? strlen(l->nodelist) : 0) + 1 +
                   (l->config_text ? strlen(l->config_text) : 0) + 1;
    return (end + PAGE - 1) & ~(PAGE - 1);
}

/* Is got what want describes?  If not, why says what differs.  Usable in
 * a child, which cannot assert. */
static bool layout_same(const struct kvshm_job_layout *want,
                        const struct kvshm_job_layout *got, char *why,
                        size_t len)
{
#define DIFF(cond, ...)                                                 \
    do {                                                                \
        if (cond) {                                                     \
            snprintf(why, len, __VA_ARGS__);                            \
            return false;                                               \
        }                                                               \
    } while (0)
    DIFF(strcmp(got->job, want->job) != 0, "job \"%s\", expected \"%s\"",
         got->job, want->job);
    DIFF(strcmp(got->node, want->node) != 0, "node \"%s\", expected \"%s\"",
         got->node, want->node);
    DIFF(got->scope != want->scope, "scope %d, expected %d", got->scope,
         want->scope);
    DIFF(got->step != want->step, "step %u, expected %u", got->step,
         want->step);
    DIFF(got->nnodes != want->nnodes || got->node_index != want->node_index ||
         got->tasks_on_node != want->tasks_on_node,
         "nnodes/node_index/tasks %u/%u/%u, expected %u/%u/%u", got->nnodes,
         got->node_index, got->tasks_on_node, want->nnodes, want->node_index,
         want->tasks_on_node);
    DIFF(got->dht_size != want->dht_size, "dht_size %" PRIu64 ", expected %"
         PRIu64, got->dht_size, want->dht_size);
    DIFF(got->request_hash != want->request_hash, "request_hash %016" PRIx64
         ", expected %016" PRIx64, got->request_hash, want->request_hash);
    DIFF(got->ntables != want->ntables, "ntables %zu, expected %zu",
         got->ntables, want->ntables);
    DIFF(got->ntables && !got->tables, "no tables");
    for (size_t i = 0; i < want->ntables; i++) {
        const struct kvshm_job_table *w = &want->tables[i];
        const struct kvshm_job_table *g = &got->tables[i];
        DIFF(strcmp(g->name, w->name) != 0 ||
             strcmp(g->data_tag, w->data_tag) != 0 ||
             strcmp(g->tier_prefix, w->tier_prefix) != 0,
             "table %zu is \"%s\" \"%s\" \"%s\", expected \"%s\" \"%s\" "
             "\"%s\"", i, g->name, g->data_tag, g->tier_prefix, w->name,
             w->data_tag, w->tier_prefix);
        DIFF(g->data_bytes != w->data_bytes || g->tier_bytes != w->tier_bytes,
             "table %s has %" PRIu64 "+%" PRIu64 " bytes, expected %" PRIu64
             "+%" PRIu64, w->name, g->data_bytes, g->tier_bytes,
             w->data_bytes, w->tier_bytes);
        DIFF(memcmp(g, w, sizeof *g) != 0, "table %s differs in its padding",
             w->name);
    }
    DIFF(!got->nodelist, "no node list");
    DIFF(strcmp(got->nodelist, want->nodelist ? want->nodelist : "") != 0,
         "node list \"%s\", expected \"%s\"", got->nodelist,
         want->nodelist ? want->nodelist : "");
    DIFF((got->config_text == NULL) != (want->config_text == NULL),
         "config_text %s, expected %s", got->config_text ? "set" : "NULL",
         want->config_text ? "set" : "NULL");
    DIFF(want->config_text && strcmp(got->config_text, want->config_text),
         "config text differs (%zu bytes, expected %zu)",
         strlen(got->config_text), strlen(want->config_text));
#undef DIFF
    return true;
}

static void assert_layout(const struct kvshm_job_layout *want,
                          const struct kvshm_job_layout *got,
                          const char *what)
{
    char why[512] = "";
    ck_assert_msg(got != NULL, "%s: open returned OK and no layout", what);
    ck_assert_msg(layout_same(want, got, why, sizeof why), "%s: %s", what,
                  why);
}

static int try_open_layout(const char *path, struct kvshm_job_layout **l,
                           mpikvs_error_t *err)
{
    memset(err, 0, sizeof *err);
    *l = NULL;
    return kvshm_job_layout_open(path, l, err);
}

/* Open path and expect want (a layout opened by mistake is freed). */
static void expect_open(const char *path, int want, mpikvs_error_t *err,
                        const char *what)
{
    struct kvshm_job_layout *l;
    int rc = try_open_layout(path, &l, err);

    if (rc == MPIKVS_OK)
        kvshm_job_layout_free(l);
    else
        ck_assert_msg(l == NULL, "%s: failed open left *out set", what);
    assert_rc(rc, want, err, "open %s after %s", path, what);
}

/* The bytes of a file, to damage and write back. */
static uint8_t *slurp(const char *path, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    ck_assert_msg(fd >= 0 && fstat(fd, &st) == 0, "open %s: %s", path,
                  strerror(errno));
    uint8_t *buf = malloc((size_t)st.st_size);
    ck_assert_msg(buf != NULL, "out of memory");
    ck_assert_msg(pread(fd, buf, (size_t)st.st_size, 0) == st.st_size,
                  "read %s: %s", path, strerror(errno));
    close(fd);
    *len = (size_t)st.st_size;
    return buf;
}

/* Write buf over the file as its owner does, with pwrite: no truncation,
 * the region keeps its inode, owner and size. */
static void spill(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ck_assert_msg(fd >= 0, "open %s for writing: %s", path, strerror(errno));
    ck_assert_msg(pwrite(fd, buf, len, 0) == (ssize_t)len, "pwrite %s: %s",
                  path, strerror(errno));
    close(fd);
}

static struct kvshm_layout_control *control_of(uint8_t *buf)
{
    return (struct kvshm_layout_control *)(buf + KVSHM_HEADER_SIZE);
}

/* Recompute the body checksum after a change, so that only the range
 * checks behind it can catch the change. */
static void fix_body_sum(uint8_t *buf, size_t len)
{
    struct kvshm_layout_control *c = control_of(buf);
    if (c->body_size >= sizeof(uint64_t) &&
        c->body_size <= len - KVSHM_HEADER_SIZE)
        c->body_checksum = XXH3_64bits(buf + KVSHM_HEADER_SIZE + 8,
                                       c->body_size - 8);
}

/* --------------------------------------------------------- names, hashes */

START_TEST(test_table_tags)
{
    struct kvshm_job_table t;
    mpikvs_error_t err = {0};
    int rc;

    rc = kvshm_job_table_tags(KVSHM_SCOPE_JOB, 7, "chem", &t, &err);
    assert_rc(rc, MPIKVS_OK, &err, "job scope, table chem");
    ck_assert_str_eq(t.name, "chem");
    ck_assert_str_eq(t.data_tag, "chem-data");
    ck_assert_str_eq(t.tier_prefix, "chem");
    ck_assert_msg(t.data_bytes == 0 && t.tier_bytes == 0,
                  "sizes are the caller's to set: got %" PRIu64 "/%" PRIu64,
                  t.data_bytes, t.tier_bytes);

    rc = kvshm_job_table_tags(KVSHM_SCOPE_STEP, 7, "chem", &t, &err);
    assert_rc(rc, MPIKVS_OK, &err, "step scope, step 7, table chem");
    ck_assert_str_eq(t.name, "chem");
    ck_assert_str_eq(t.data_tag, "s7-chem-data");
    ck_assert_str_eq(t.tier_prefix, "s7-chem");

    /* The longest table name fits in job scope... */
    const char *longest = "abcdefghijklmnop";          /* 16 characters */
    rc = kvshm_job_table_tags(KVSHM_SCOPE_JOB, 123456, longest, &t, &err);
    assert_rc(rc, MPIKVS_OK, &err, "job scope, 16-character table");
    ck_assert_str_eq(t.data_tag, "abcdefghijklmnop-data");

    /* ...and with a step prefix of up to 7 characters ("s12345-"): the
     * tier prefix may have 23, so that "<prefix>-entries" is a tag. */
    rc = kvshm_job_table_tags(KVSHM_SCOPE_STEP, 12345, longest, &t, &err);
    assert_rc(rc, MPIKVS_OK, &err, "step 12345, 16-character table");
    ck_assert_str_eq(t.tier_prefix, "s12345-abcdefghijklmnop");
    ck_assert_str_eq(t.data_tag, "s12345-abcdefghijklmnop-data");

    /* One step digit more and the tier's tags would not fit. */
    memset(&err, 0, sizeof err);
    rc = kvshm_job_table_tags(KVSHM_SCOPE_STEP, 123456, longest, &t, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "step 123456, 16-character table");
    assert_text_has(&err, longest, "too long a tier prefix");
    ck_assert_msg(has_number(err.text, 123456), "the text should name the "
                  "step 123456: \"%s\"", err.text);

    /* err may be NULL. */
    rc = kvshm_job_table_tags(KVSHM_SCOPE_STEP, 123456, longest, &t, NULL);
    assert_rc(rc, MPIKVS_ERR_NAME, NULL, "the same with err NULL");
}
END_TEST

/* A name longer than the 16 characters a table has must not come back
 * silently cut: the name and the region tags would name different tables. */
START_TEST(test_table_tags_name_too_long)
{
    const char *name = "abcdefghijklmnopq";         /* 17 characters */
    struct kvshm_job_table t;
    mpikvs_error_t err = {0};
    int rc = kvshm_job_table_tags(KVSHM_SCOPE_JOB, 0, name, &t, &err);

    assert_rc(rc, MPIKVS_ERR_NAME, &err, "a 17-character table name");
    ck_assert_msg(strstr(err.text, name) != NULL,
                  "the text should name the table: \"%s\"", err.text);
    (void)t;
}
END_TEST

START_TEST(test_request_hash)
{
    char text[] = CONFIG_TEXT;
    char copy[sizeof text];
    const uint64_t size = 64 * MiB;
    const uint64_t h = kvshm_job_request_hash(size, text);

    /* Equal requests, in different buffers, give the same number. */
    memcpy(copy, text, sizeof text);
    ck_assert_msg(kvshm_job_request_hash(size, copy) == h,
                  "equal requests hash differently");

    /* Another size, or one byte of the text changed, gives another. */
    ck_assert_msg(kvshm_job_request_hash(size + 1, text) != h,
                  "dht_size + 1 hashes the same");
    ck_assert_msg(kvshm_job_request_hash(32 * MiB, text) != h,
                  "dht_size 32 MiB hashes as 64 MiB");
    for (size_t i = 0; i + 1 < sizeof text; i++) {
        copy[i] ^= 0x01;
        ck_assert_msg(kvshm_job_request_hash(size, copy) != h,
                      "a change of byte %zu of the config hashes the same",
                      i);
        copy[i] ^= 0x01;
    }
    copy[sizeof text - 2] = '\0';                   /* one byte shorter */
    ck_assert_msg(kvshm_job_request_hash(size, copy) != h,
                  "a config one byte shorter hashes the same");

    /* No config at all is a request too. */
    uint64_t none = kvshm_job_request_hash(size, NULL);
    ck_assert_msg(kvshm_job_request_hash(size, NULL) == none,
                  "no config hashes differently twice");
    ck_assert_msg(none != h, "no config hashes as the config");
    ck_assert_msg(kvshm_job_request_hash(size + 1, NULL) != none,
                  "no config: another dht_size hashes the same");
}
END_TEST

/* "No config" and an empty config text are different requests. */
START_TEST(test_request_hash_null_vs_empty)
{
    const uint64_t size = 64 * MiB;
    ck_assert_msg(kvshm_job_request_hash(size, NULL) !=
                  kvshm_job_request_hash(size, ""),
                  "config_text NULL and \"\" give the same request hash "
                  "(%016" PRIx64 ")", kvshm_job_request_hash(size, NULL));
}
END_TEST

/* ---------------------------------------------------- layout round trips */

START_TEST(test_layout_round_trip)
{
    struct sample s;
    struct kvshm_region_spec spec = layout_spec("layout", 0640);
    char path[PATH_MAX];
    mpikvs_error_t err;

    sample_init(&s);
    create_layout(&spec, &s.l);
    path_of(path, "layout");
    ck_assert_str_eq(strrchr(path, '/') + 1, "mpikvs.77.n1.layout");

    /* One file, nothing else (no temporary left next to it), with the
     * mode asked for and the caller as owner. */
    ck_assert_int_eq(count_entries(test_dir), 1);
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0, "stat %s: %s", path,
                  strerror(errno));
    ck_assert_msg((st.st_mode & 07777) == 0640, "mode %04o, expected 0640",
                  (unsigned)(st.st_mode & 07777));
    ck_assert_msg(st.st_uid == geteuid() && st.st_gid == getegid(),
                  "owner %u:%u, expected the caller %u:%u",
                  (unsigned)st.st_uid, (unsigned)st.st_gid,
                  (unsigned)geteuid(), (unsigned)getegid());

    /* The header describes the whole file: a layout region, of the size
     * that holds exactly this body (rounded to a page), for step 3. */
    size_t len;
    uint8_t *buf = slurp(path, &len);
    const struct kvshm_header *h = (const struct kvshm_header *)buf;
    const struct kvshm_layout_control *c = control_of(buf);
    ck_assert_msg(h->kind == KVSHM_KIND_LAYOUT, "kind %u", h->kind);
    ck_assert_msg(h->size == len && h->max_size == len &&
                  len == layout_size(&s.l),
                  "file %zu bytes, header size %" PRIu64 " max %" PRIu64
                  ", expected %" PRIu64, len, h->size, h->max_size,
                  layout_size(&s.l));
    ck_assert_msg(h->step == STEP && h->uid == (uint32_t)geteuid() &&
                  h->gid == (uint32_t)getegid(),
                  "header step %u uid %u gid %u", h->step, h->uid, h->gid);
    ck_assert_msg(KVSHM_HEADER_SIZE + c->body_size <= len &&
                  len - (KVSHM_HEADER_SIZE + c->body_size) < PAGE,
                  "body of %" PRIu64 " bytes in a %zu-byte file",
                  c->body_size, len);
    free(buf);

    struct kvshm_job_layout *got;
    int rc = try_open_layout(path, &got, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open %s", path);
    assert_layout(&s.l, got, "round trip");
    kvshm_job_layout_free(got);

    /* A second open reads the same: nothing was consumed or changed. */
    rc = try_open_layout(path, &got, &err);
    assert_rc(rc, MPIKVS_OK, &err, "second open of %s", path);
    assert_layout(&s.l, got, "second open");
    kvshm_job_layout_free(got);

    /* Created once: a second create of the same name is refused. */
    memset(&err, 0, sizeof err);
    rc = kvshm_job_layout_create(&spec, &s.l, &err);
    assert_rc(rc, MPIKVS_ERR_EXISTS, &err, "second create of %s", path);
}
END_TEST

START_TEST(test_layout_round_trip_empty)
{
    /* A step-scope layout of a job without a config: no tables, no
     * config text (it must come back NULL, not ""). */
    struct kvshm_job_layout l = {
        .job = JOB, .node = NODE, .scope = KVSHM_SCOPE_STEP, .step = STEP,
        .nnodes = 1, .node_index = 0, .tasks_on_node = 1,
        .dht_size = 8 * MiB, .ntables = 0, .tables = NULL,
        .nodelist = (char *)"n1", .config_text = NULL,
    };
    char tag[KVSHM_TAG_MAX], path[PATH_MAX];
    mpikvs_error_t err;

    l.request_hash = kvshm_job_request_hash(l.dht_size, NULL);
    kvshm_job_layout_tag(KVSHM_SCOPE_STEP, STEP, tag, sizeof tag);
    struct kvshm_region_spec spec = layout_spec(tag, 0640);
    create_layout(&spec, &l);
    path_of(path, tag);

    struct kvshm_job_layout *got;
    int rc = try_open_layout(path, &got, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open %s", path);
    assert_layout(&l, got, "empty round trip");
    ck_assert_msg(got->config_text == NULL, "config_text \"%s\", expected "
                  "NULL", got->config_text);
    kvshm_job_layout_free(got);

    struct stat st;
    ck_assert_msg(stat(path, &st) == 0 && (uint64_t)st.st_size == PAGE,
                  "an empty layout should take one page");
}
END_TEST

/* A reader polling for the layout must never see it half written: the
 * file is built unnamed (O_TMPFILE) and linked in when complete. */
START_TEST(test_layout_appears_complete)
{
    struct sample s;
    char path[PATH_MAX];
    int ready[2], res[2];

    sample_init(&s);
    /* A large config widens the window a non-atomic create would have. */
    size_t big = 512 * KiB;
    char *config = malloc(big + 1);
    ck_assert_msg(config != NULL, "out of memory");
    memset(config, 'x', big);
    memcpy(config, "{\"pad\": \"", 9);
    memcpy(config + big - 2, "\"}", 2);
    config[big] = '\0';
    s.l.config_text = config;
    path_of(path, "layout");
    ck_assert_msg(pipe(ready) == 0 && pipe(res) == 0, "pipe: %s",
                  strerror(errno));

    pid_t pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        struct report rep = { .rc = MPIKVS_ERR_NOTFOUND };
        struct kvshm_job_layout *l = NULL;
        mpikvs_error_t err = {0};
        double end = now_s() + 20;
        close(ready[0]);
        close(res[0]);
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        while (rep.rc == MPIKVS_ERR_NOTFOUND && now_s() < end)
            rep.rc = kvshm_job_layout_open(path, &l, &err);
        if (rep.rc == MPIKVS_OK)
            rep.same = layout_same(&s.l, l, rep.text, sizeof rep.text);
        else
            snprintf(rep.text, sizeof rep.text, "%s", err.text);
        kvshm_job_layout_free(l);
        send_report(res[1], &rep);
    }
    close(ready[1]);
    close(res[1]);
    char c;
    ck_assert_msg(read(ready[0], &c, 1) == 1, "the poller did not start");
    close(ready[0]);
    struct kvshm_region_spec spec = layout_spec("layout", 0640);
    create_layout(&spec, &s.l);
    struct report rep = recv_report(res[0], pid, "poller");
    assert_rc(rep.rc, MPIKVS_OK, NULL, "first open of the layout by a "
              "poller (\"%s\")", rep.text);
    ck_assert_msg(rep.same, "the poller read another layout: %s", rep.text);
    free(config);
}
END_TEST

START_TEST(test_layout_too_big)
{
    struct kvshm_job_table *t = calloc(KVSHM_JOB_LAYOUT_MAX_TABLES + 1,
                                       sizeof *t);
    struct sample s;
    char path[PATH_MAX];
    mpikvs_error_t err = {0};
    int rc;

    ck_assert_msg(t != NULL, "out of memory");
    for (unsigned i = 0; i <= KVSHM_JOB_LAYOUT_MAX_TABLES; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%u", i);
        make_table(&t[i], KVSHM_SCOPE_JOB, name, MiB, 0);
    }
    sample_init(&s);
    s.l.tables = t;
    struct kvshm_region_spec spec = layout_spec("layout", 0640);

    /* One table too many: refused before anything is made. */
    s.l.ntables = KVSHM_JOB_LAYOUT_MAX_TABLES + 1;
    rc = kvshm_job_layout_create(&spec, &s.l, &err);
    assert_rc(rc, MPIKVS_ERR_TOOBIG, &err, "%u tables",
              KVSHM_JOB_LAYOUT_MAX_TABLES + 1);
    ck_assert_msg(has_number(err.text, KVSHM_JOB_LAYOUT_MAX_TABLES + 1) &&
                  has_number(err.text, KVSHM_JOB_LAYOUT_MAX_TABLES),
                  "the text should name 65 tables and the limit 64: \"%s\"",
                  err.text);
    ck_assert_int_eq(count_entries(test_dir), 0);

    /* Texts of 1 MiB (the limit counts the terminator) are refused. */
    char *text = malloc(KVSHM_JOB_LAYOUT_MAX_TEXT + 1);
    ck_assert_msg(text != NULL, "out of memory");
    memset(text, 'a', KVSHM_JOB_LAYOUT_MAX_TEXT);
    text[KVSHM_JOB_LAYOUT_MAX_TEXT] = '\0';
    s.l.ntables = 3;
    s.l.config_text = text;
    memset(&err, 0, sizeof err);
    rc = kvshm_job_layout_create(&spec, &s.l, &err);
    assert_rc(rc, MPIKVS_ERR_TOOBIG, &err, "a config of 1 MiB");
    s.l.config_text = (char *)CONFIG_TEXT;
    s.l.nodelist = text;
    memset(&err, 0, sizeof err);
    rc = kvshm_job_layout_create(&spec, &s.l, &err);
    assert_rc(rc, MPIKVS_ERR_TOOBIG, &err, "a node list of 1 MiB");
    ck_assert_int_eq(count_entries(test_dir), 0);

    /* Exactly at the limits: made, and read back whole. */
    s.l.nodelist = (char *)"n[1-4]";
    s.l.ntables = KVSHM_JOB_LAYOUT_MAX_TABLES;
    text[KVSHM_JOB_LAYOUT_MAX_TEXT - 1] = '\0';
    s.l.config_text = text;
    create_layout(&spec, &s.l);
    path_of(path, "layout");
    struct kvshm_job_layout *got;
    rc = try_open_layout(path, &got, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open a layout at the limits");
    assert_layout(&s.l, got, "64 tables and a config of 1 MiB - 1");
    kvshm_job_layout_free(got);
    free(text);
    free(t);
}
END_TEST

/* ----------------------------------------------------------- layout damage */

enum damage {
    D_CHECKSUM, D_TABLE_NAME, D_CONFIG, D_NODELIST, D_NTABLES,
    D_TABLES_OFFSET,
    /* below: the body checksum is recomputed, the range checks decide */
    D_NTABLES_MAX, D_TABLES_PAST_END, D_TABLES_OVERRUN, D_TABLES_IN_HEADER,
    D_NODELIST_OFFSET, D_NODELIST_LEN, D_NODELIST_NO_NUL, D_CONFIG_LEN,
    D_CONFIG_NO_NUL, D_SCOPE, D_TABLE_NAME_NO_NUL, D_BODY_SIZE_SMALL,
    D_BODY_SIZE_HUGE, D_NDAMAGE
};

static const char *const damage_name[D_NDAMAGE] = {
    "a byte of the body checksum", "a byte of a table name",
    "a byte of the config text", "a byte of the node list",
    "ntables set huge", "tables_offset out of range",
    "ntables 65 (checksum fixed)", "tables_offset past the end (fixed)",
    "tables running past the end (fixed)",
    "tables_offset inside the header (fixed)",
    "nodelist_offset huge (fixed)", "nodelist_len huge (fixed)",
    "node list without its NUL (fixed)", "config_len past the end (fixed)",
    "config text without its NUL (fixed)", "scope 9 (fixed)",
    "a table name without a NUL (fixed)", "body_size below the control",
    "body_size huge",
};

static void apply_damage(uint8_t *buf, size_t len, enum damage d)
{
    struct kvshm_layout_control *c = control_of(buf);
    uint8_t *table1 = buf + c->tables_offset + sizeof(struct kvshm_job_table);

    switch (d) {
    case D_CHECKSUM:         buf[KVSHM_HEADER_SIZE + 3] ^= 0x10; break;
    case D_TABLE_NAME:       table1[1] ^= 0x01; break;
    case D_CONFIG:           buf[c->config_offset + 5] ^= 0x01; break;
    case D_NODELIST:         buf[c->nodelist_offset + 1] ^= 0x01; break;
    case D_NTABLES:          c->ntables = UINT32_MAX; break;
    case D_TABLES_OFFSET:    c->tables_offset = UINT64_MAX - 8; break;
    case D_NTABLES_MAX:      c->ntables = KVSHM_JOB_LAYOUT_MAX_TABLES + 1;
                             break;
    case D_TABLES_PAST_END:  c->tables_offset = len + 1; break;
    case D_TABLES_OVERRUN:   c->tables_offset = len - 8; break;
    case D_TABLES_IN_HEADER: c->tables_offset = 0; break;
    case D_NODELIST_OFFSET:  c->nodelist_offset = UINT64_MAX - 2; break;
    case D_NODELIST_LEN:     c->nodelist_len = UINT64_MAX - 2; break;
    case D_NODELIST_NO_NUL:  buf[c->nodelist_offset + c->nodelist_len] = 'x';
                             break;
    case D_CONFIG_LEN:       c->config_len = len; break;
    case D_CONFIG_NO_NUL:    buf[c->config_offset + c->config_len] = 'x';
                             break;
    case D_SCOPE:            c->scope = 9; break;
    case D_TABLE_NAME_NO_NUL:
        memset(table1, 'A', sizeof((struct kvshm_job_table *)0)->name);
        break;
    case D_BODY_SIZE_SMALL:  c->body_size = 8; break;
    case D_BODY_SIZE_HUGE:   c->body_size = UINT64_MAX - 100; break;
    case D_NDAMAGE:          break;
    }
    if (d >= D_NTABLES_MAX)
        fix_body_sum(buf, len);
}

/* Every kind of damage, each to a fresh layout: MPIKVS_ERR_CORRUPT whose
 * text names the file, and no crash reading out of range. */
START_TEST(test_layout_damage)
{
    struct sample s;
    struct kvshm_region_spec spec = layout_spec("layout", 0640);
    char path[PATH_MAX];
    mpikvs_error_t err;

    sample_init(&s);
    path_of(path, "layout");
    for (int d = 0; d < D_NDAMAGE; d++) {
        create_layout(&spec, &s.l);
        size_t len;
        uint8_t *buf = slurp(path, &len);
        apply_damage(buf, len, (enum damage)d);
        spill(path, buf, len);
        free(buf);
        expect_open(path, MPIKVS_ERR_CORRUPT, &err, damage_name[d]);
        assert_text_has(&err, path, damage_name[d]);
        /* With the checksum recomputed, a range check must catch it. */
        if (d >= D_NTABLES_MAX && d < D_BODY_SIZE_SMALL)
            ck_assert_msg(strstr(err.text, "checksum") == NULL,
                          "%s: caught by the checksum, which was fixed: "
                          "\"%s\"", damage_name[d], err.text);
        ck_assert_msg(unlink(path) == 0, "unlink %s: %s", path,
                      strerror(errno));
    }
}
END_TEST

/* A truncated layout is refused by the header check; one whose header
 * was made to agree with the shorter file by its body checks, without a
 * read past the end (SIGBUS). */
START_TEST(test_layout_truncated)
{
    struct sample s;
    struct kvshm_region_spec spec = layout_spec("layout", 0640);
    const uint64_t sizes[] = { 0, 100, 1000, PAGE - 1 };
    char path[PATH_MAX];
    mpikvs_error_t err;

    sample_init(&s);
    path_of(path, "layout");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        create_layout(&spec, &s.l);
        ck_assert_msg(truncate(path, (off_t)sizes[i]) == 0, "truncate: %s",
                      strerror(errno));
        struct kvshm_job_layout *l;
        int rc = try_open_layout(path, &l, &err);
        if (rc == MPIKVS_OK)
            kvshm_job_layout_free(l);
        ck_assert_msg(rc == MPIKVS_ERR_TRUNCATED || rc == MPIKVS_ERR_CORRUPT,
                      "layout truncated to %" PRIu64 " bytes: got %d (%s)",
                      sizes[i], rc, rcname(rc));
        /* either code: err must repeat it, with a text */
        assert_rc(rc, rc, &err, "layout truncated to %" PRIu64, sizes[i]);
        unlink(path);
    }

    const uint64_t short_sizes[] = { KVSHM_HEADER_SIZE + 40, 700 };
    for (size_t i = 0; i < 2; i++) {
        uint64_t n = short_sizes[i];
        create_layout(&spec, &s.l);
        size_t len;
        uint8_t *buf = slurp(path, &len);
        struct kvshm_header *h = (struct kvshm_header *)buf;
        h->size = h->max_size = n;
        h->checksum = kvshm_header_checksum(h);
        spill(path, buf, len);
        free(buf);
        ck_assert_msg(truncate(path, (off_t)n) == 0, "truncate: %s",
                      strerror(errno));
        expect_open(path, MPIKVS_ERR_CORRUPT, &err, "a consistent header "
                    "on a file shorter than the layout");
        unlink(path);
    }
}
END_TEST

START_TEST(test_layout_bad_paths)
{
    char path[PATH_MAX], name[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err;

    /* Not DIR/NAME: refused before any file is touched. */
    const char *bad[] = { "mpikvs.77.n1.layout", "", "/" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_open(bad[i], MPIKVS_ERR_INVAL, &err, "a path without a "
                    "directory");
        assert_text_has(&err, bad[i], "INVAL");
    }

    /* No such file. */
    path_of(path, "layout");
    expect_open(path, MPIKVS_ERR_NOTFOUND, &err, "nothing created");
    region_name_of(name, "layout");
    assert_text_has(&err, name, "NOTFOUND");

    /* A region of another kind under the layout's name. */
    struct kvshm_region_spec spec = layout_spec("layout", 0);
    spec.kind = KVSHM_KIND_DATA;
    spec.size = 2 * PAGE;
    struct kvshm_region *r = NULL;
    int rc = kvshm_region_create(&spec, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "create a data region named layout");
    kvshm_region_close(&r);
    expect_open(path, MPIKVS_ERR_KIND, &err, "a data region");

    /* A directory where the layout should be is not a layout. */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/mpikvs.77.n1.s1-layout", test_dir);
    ck_assert_msg(mkdir(sub, 0700) == 0, "mkdir: %s", strerror(errno));
    struct kvshm_job_layout *l;
    rc = try_open_layout(sub, &l, &err);
    if (rc == MPIKVS_OK)
        kvshm_job_layout_free(l);
    ck_assert_msg(rc != MPIKVS_OK, "a directory opened as a layout");
}
END_TEST

/* "DIR/" names a directory, not a layout region: an invalid argument. */
START_TEST(test_layout_dir_only_path)
{
    char path[PATH_MAX];
    mpikvs_error_t err;

    snprintf(path, sizeof path, "%s/", test_dir);
    expect_open(path, MPIKVS_ERR_INVAL, &err, "a directory name only");
}
END_TEST

/* --------------------------------------------------- layout owner (root) */

START_TEST(test_layout_owner_refused)
{
    struct sample s;
    char path[PATH_MAX];
    mpikvs_error_t err;

    sample_init(&s);

    /* Made for uid 65534: root reading it is neither root's nor its
     * caller's layout, so it is not trusted. */
    struct kvshm_region_spec spec = layout_spec("layout", 0640);
    spec.uid = NOBODY;
    spec.gid = NOGROUP;
    create_layout(&spec, &s.l);
    path_of(path, "layout");
    expect_open(path, MPIKVS_ERR_OWNER, &err, "a layout of uid 65534");
    ck_assert_msg(has_number(err.text, NOBODY), "the text should name uid "
                  "65534: \"%s\"", err.text);
    assert_text_has(&err, path, "OWNER");

    /* A layout claiming root in its header, in a file another user owns:
     * planted, refused. */
    char tag[KVSHM_TAG_MAX];
    kvshm_job_layout_tag(KVSHM_SCOPE_STEP, 4, tag, sizeof tag);
    spec = layout_spec(tag, 0644);
    spec.uid = 0;
    create_layout(&spec, &s.l);
    path_of(path, tag);
    ck_assert_msg(chown(path, NOBODY, NOGROUP) == 0, "chown: %s",
                  strerror(errno));
    expect_open(path, MPIKVS_ERR_OWNER, &err, "a root layout in a file of "
                "uid 65534");
}
END_TEST

/* Open the layout of tag as uid/gid 65534 in a child. */
static struct report open_as_nobody(const char *tag,
                                    const struct kvshm_job_layout *want)
{
    char path[PATH_MAX];
    int pfd[2];

    path_of(path, tag);
    ck_assert_msg(pipe(pfd) == 0, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        struct report rep = { .rc = INT_MIN };  /* could not drop root */
        close(pfd[0]);
        if (become_nobody()) {
            struct kvshm_job_layout *l = NULL;
            mpikvs_error_t err = {0};
            rep.rc = kvshm_job_layout_open(path, &l, &err);
            if (rep.rc == MPIKVS_OK)
                rep.same = layout_same(want, l, rep.text, sizeof rep.text);
            else
                snprintf(rep.text, sizeof rep.text, "%s", err.text);
            kvshm_job_layout_free(l);
        }
        send_report(pfd[1], &rep);
    }
    close(pfd[1]);
    struct report rep = recv_report(pfd[0], pid, tag);
    ck_assert_msg(rep.rc != INT_MIN, "the child could not become uid 65534");
    return rep;
}

START_TEST(test_layout_as_user)
{
    /* Let uid 65534 reach the files, so that only their modes decide. */
    ck_assert_msg(chmod(run_dir, 0711) == 0 && chmod(test_dir, 0711) == 0,
                  "chmod test directories: %s", strerror(errno));
    struct sample s;
    sample_init(&s);
    struct {
        const char *tag;
        uid_t       uid;        /* KVSHM_ANY_UID: root, the caller */
        gid_t       gid;
        mode_t      mode;
        int         want;
        const char *why;
    } cases[] = {
        { "layout",    KVSHM_ANY_UID, (gid_t)-1, 0644, MPIKVS_OK,
          "root's, readable by all" },
        { "s5-layout", KVSHM_ANY_UID, NOGROUP,   0640, MPIKVS_OK,
          "root's, readable by the job's group" },
        { "s6-layout", KVSHM_ANY_UID, (gid_t)-1, 0600, -EACCES,
          "root's, 0600" },
        { "s7-layout", NOBODY,        NOGROUP,   0600, MPIKVS_OK,
          "the caller's own" },
        { "s8-layout", OTHER_UID,     (gid_t)-1, 0644, MPIKVS_ERR_OWNER,
          "another user's, readable by all" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct kvshm_region_spec spec = layout_spec(cases[i].tag,
                                                    cases[i].mode);
        spec.uid = cases[i].uid;
        spec.gid = cases[i].gid;
        create_layout(&spec, &s.l);
        struct report rep = open_as_nobody(cases[i].tag, &s.l);
        ck_assert_msg(rep.rc == cases[i].want, "uid 65534 opening a layout "
                      "%s: expected %d (%s), got %d (%s): \"%s\"",
                      cases[i].why, cases[i].want, rcname(cases[i].want),
                      rep.rc, rcname(rep.rc), rep.text);
        if (rep.rc == MPIKVS_OK)
            ck_assert_msg(rep.same, "uid 65534 read a layout %s wrong: %s",
                          cases[i].why, rep.text);
    }
}
END_TEST

/* ------------------------------------------------------------ data region */

static const struct kvshm_data_shape SHAPE_A = {
    .key_size = 16, .value_size = 40, .slots_per_bucket = 4,
    .mode = KVSHM_MODE_LOCKFREE,
};   /* slot 56 + 8 = 64 bytes, bucket 64 (header) + 4 * 64 = 320 */
#define SHAPE_A_BUCKET 320u

static struct kvshm_data_shape shape_with(uint64_t key, uint64_t value,
                                          uint64_t slots, uint32_t mode)
{
    struct kvshm_data_shape s = { key, value, slots, mode };
    return s;
}

static void assert_laid_out(const struct kvshm_data_control *c,
                            uint64_t region_size,
                            const struct kvshm_data_shape *s,
                            const char *what)
{
    ck_assert_msg(c->state == KVSHM_DATA_READY, "%s: state %u, expected "
                  "READY", what, c->state);
    ck_assert_msg(c->key_size == s->key_size &&
                  c->value_size == s->value_size &&
                  c->slots_per_bucket == s->slots_per_bucket &&
                  c->mode == s->mode,
                  "%s: shape %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%u, "
                  "expected %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%u", what,
                  c->key_size, c->value_size, c->slots_per_bucket, c->mode,
                  s->key_size, s->value_size, s->slots_per_bucket, s->mode);
    ck_assert_msg(c->slot_size == kvshm_slot_size(s) &&
                  c->bucket_size == kvshm_bucket_size(s),
                  "%s: slot %" PRIu64 " bucket %" PRIu64, what, c->slot_size,
                  c->bucket_size);
    ck_assert_msg(c->nbuckets ==
                  (region_size - c->buckets_offset) / c->bucket_size,
                  "%s: %" PRIu64 " buckets in %" PRIu64 " bytes after %"
                  PRIu64, what, c->nbuckets, region_size - c->buckets_offset,
                  c->buckets_offset);
}

START_TEST(test_buckets_offset)
{
    const uint64_t ranks[] = { 1, 2, 7, 27, 28, 29, 64, 1000, 4096 };
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
        uint64_t off = kvshm_data_buckets_offset(ranks[i]);
        uint64_t counters_end = KVSHM_DATA_CONTROL_OFFSET +
                                sizeof(struct kvshm_data_control) +
                                ranks[i] * sizeof(struct kvshm_rank_stats);
        ck_assert_msg(off % PAGE == 0, "%" PRIu64 " ranks: offset %" PRIu64
                      " not on a page", ranks[i], off);
        ck_assert_msg(off >= counters_end && off - counters_end < PAGE,
                      "%" PRIu64 " ranks: offset %" PRIu64 ", counters end "
                      "at %" PRIu64, ranks[i], off, counters_end);
    }
    /* 256 (header) + 256 (control) + 11 * 320 fits one page, 12 not. */
    ck_assert_uint_eq(kvshm_data_buckets_offset(1), PAGE);
    ck_assert_uint_eq(kvshm_data_buckets_offset(11), PAGE);
    ck_assert_uint_eq(kvshm_data_buckets_offset(12), 2 * PAGE);
}
END_TEST

START_TEST(test_data_init_shape)
{
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};

    memset(&c, 0, sizeof c);
    int rc = kvshm_data_init(&c, MiB, 8, &SHAPE_A, "chem", &err);
    assert_rc(rc, MPIKVS_OK, &err, "init 1 MiB, 8 ranks");
    ck_assert_uint_eq(c.stats_offset, KVSHM_DATA_CONTROL_OFFSET + sizeof c);
    ck_assert_uint_eq(c.max_ranks, 8);
    ck_assert_uint_eq(c.buckets_offset, kvshm_data_buckets_offset(8));
    ck_assert_uint_eq(c.bucket_size, SHAPE_A_BUCKET);
    assert_laid_out(&c, MiB, &SHAPE_A, "init with a shape");
    ck_assert_uint_eq(c.nbuckets, (MiB - PAGE) / SHAPE_A_BUCKET);  /* 3264 */
    ck_assert_str_eq(c.table, "chem");

    /* The longest table name is kept whole. */
    rc = kvshm_data_init(&c, MiB, 8, &SHAPE_A, "abcdefghijklmnop", &err);
    assert_rc(rc, MPIKVS_OK, &err, "16-character table");
    ck_assert_str_eq(c.table, "abcdefghijklmnop");
}
END_TEST

START_TEST(test_data_init_unformatted)
{
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};

    memset(&c, 0, sizeof c);
    c.state = KVSHM_DATA_READY;         /* whatever was there before */
    int rc = kvshm_data_init(&c, MiB, 4, NULL, "chem", &err);
    assert_rc(rc, MPIKVS_OK, &err, "init without a shape");
    ck_assert_uint_eq(c.state, KVSHM_DATA_UNFORMATTED);
    ck_assert_uint_eq(c.buckets_offset, kvshm_data_buckets_offset(4));
    ck_assert_uint_eq(c.max_ranks, 4);
    ck_assert_uint_eq(c.nbuckets, 0);
    ck_assert_str_eq(c.table, "chem");
}
END_TEST

START_TEST(test_data_init_errors)
{
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};
    uint64_t off = kvshm_data_buckets_offset(8);
    int rc;

    /* Room for exactly one bucket after the counters, and one byte less. */
    memset(&c, 0, sizeof c);
    rc = kvshm_data_init(&c, off + SHAPE_A_BUCKET, 8, &SHAPE_A, "chem", &err);
    assert_rc(rc, MPIKVS_OK, &err, "room for one bucket");
    ck_assert_uint_eq(c.nbuckets, 1);

    memset(&c, 0, sizeof c);
    rc = kvshm_data_init(&c, off + SHAPE_A_BUCKET - 1, 8, &SHAPE_A, "chem",
                         &err);
    assert_rc(rc, MPIKVS_ERR_TOOSMALL, &err, "one byte short of a bucket");
    ck_assert_msg(has_number(err.text, SHAPE_A_BUCKET) &&
                  has_number(err.text, 16) && has_number(err.text, 40),
                  "the text should give the bucket (320 bytes) and key and "
                  "value sizes (16, 40): \"%s\"", err.text);
    ck_assert_msg(c.state != KVSHM_DATA_READY, "a failed init left READY");

    memset(&err, 0, sizeof err);
    rc = kvshm_data_init(&c, 1000, 8, &SHAPE_A, "chem", &err);
    assert_rc(rc, MPIKVS_ERR_TOOSMALL, &err, "smaller than the counters");

    memset(&err, 0, sizeof err);
    rc = kvshm_data_init(&c, MiB, 0, &SHAPE_A, "chem", &err);
    assert_rc(rc, MPIKVS_ERR_INVAL, &err, "max_ranks 0");
    rc = kvshm_data_init(&c, MiB, 0, NULL, "chem", &err);
    assert_rc(rc, MPIKVS_ERR_INVAL, &err, "max_ranks 0, no shape");
}
END_TEST

/* An unformatted control, as the plugin leaves it. */
static void init_unformatted(struct kvshm_data_control *c, uint64_t size)
{
    mpikvs_error_t err = {0};
    memset(c, 0, sizeof *c);
    int rc = kvshm_data_init(c, size, 4, NULL, "chem", &err);
    assert_rc(rc, MPIKVS_OK, &err, "init without a shape");
}

START_TEST(test_data_format)
{
    const char *name = "mpikvs.77.n1.chem-data";
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};
    int rc;

    init_unformatted(&c, MiB);
    rc = kvshm_data_format(&c, MiB, &SHAPE_A, name, &err);
    assert_rc(rc, MPIKVS_OK, &err, "first format");
    assert_laid_out(&c, MiB, &SHAPE_A, "first format");

    /* The same shape again: accepted, nothing changes. */
    struct kvshm_data_control before = c;
    rc = kvshm_data_format(&c, MiB, &SHAPE_A, name, &err);
    assert_rc(rc, MPIKVS_OK, &err, "second format, same shape");
    ck_assert_msg(memcmp(&before, &c, sizeof c) == 0,
                  "a second format with the same shape changed the control");

    /* Any other shape is a mismatch that names both. */
    struct {
        struct kvshm_data_shape s;
        const char *mine, *theirs;
    } other[] = {
        { shape_with(24, 40, 4, KVSHM_MODE_LOCKFREE), "24", "16" },
        { shape_with(16, 48, 4, KVSHM_MODE_LOCKFREE), "48", "40" },
        { shape_with(16, 40, 8, KVSHM_MODE_LOCKFREE), "8", "4" },
        { shape_with(16, 40, 4, KVSHM_MODE_FINE_LOCK), "fine-lock",
          "lockfree" },
        { shape_with(16, 40, 4, KVSHM_MODE_COARSE_LOCK), "coarse-lock",
          "lockfree" },
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        memset(&err, 0, sizeof err);
        rc = kvshm_data_format(&c, MiB, &other[i].s, name, &err);
        assert_rc(rc, MPIKVS_ERR_MISMATCH, &err, "format with shape %zu", i);
        assert_text_has(&err, name, "MISMATCH");
        bool numeric = isdigit((unsigned char)other[i].mine[0]);
        ck_assert_msg(numeric ? has_number(err.text, strtoull(other[i].mine,
                                                              NULL, 10)) &&
                                has_number(err.text,
                                           strtoull(other[i].theirs, NULL,
                                                    10))
                              : strstr(err.text, other[i].mine) &&
                                strstr(err.text, other[i].theirs),
                      "the text should name both %s and %s: \"%s\"",
                      other[i].mine, other[i].theirs, err.text);
        ck_assert_msg(memcmp(&before, &c, sizeof c) == 0,
                      "a mismatching format changed the control");
    }
}
END_TEST

/* A shape that does not fit leaves the region unformatted, for an opener
 * with a shape that fits. */
START_TEST(test_data_format_toosmall)
{
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};
    /* SHAPE_A's bucket is 320 bytes, the small one's 128 */
    uint64_t size = kvshm_data_buckets_offset(4) + 200;
    int rc;

    init_unformatted(&c, size);
    rc = kvshm_data_format(&c, size, &SHAPE_A, "r", &err);
    assert_rc(rc, MPIKVS_ERR_TOOSMALL, &err, "format a too small region");
    ck_assert_uint_eq(c.state, KVSHM_DATA_UNFORMATTED);

    struct kvshm_data_shape small = shape_with(8, 8, 1, KVSHM_MODE_LOCKFREE);
    rc = kvshm_data_format(&c, size, &small, "r", &err);
    assert_rc(rc, MPIKVS_OK, &err, "then with a shape that fits");
    assert_laid_out(&c, size, &small, "small shape");
}
END_TEST

START_TEST(test_data_format_unknown_state)
{
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};

    init_unformatted(&c, MiB);
    c.state = 9;
    int rc = kvshm_data_format(&c, MiB, &SHAPE_A, "mpikvs.77.n1.x-data",
                               &err);
    assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "state 9");
    ck_assert_msg(has_number(err.text, 9), "the text should give the state "
                  "9: \"%s\"", err.text);
    assert_text_has(&err, "mpikvs.77.n1.x-data", "state 9");
    ck_assert_uint_eq(c.state, 9);
}
END_TEST

/* An opener that died halfway leaves FORMATTING: the others give up
 * after a bounded wait instead of hanging, and leave the region as it is. */
START_TEST(test_data_format_stalled)
{
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};

    init_unformatted(&c, MiB);
    c.state = KVSHM_DATA_FORMATTING;
    double t0 = now_s();
    int rc = kvshm_data_format(&c, MiB, &SHAPE_A, "mpikvs.77.n1.x-data",
                               &err);
    double waited = now_s() - t0;
    assert_rc(rc, MPIKVS_ERR_STALLED, &err, "stuck in FORMATTING");
    ck_assert_msg(waited >= 4.5 && waited < 30, "waited %.2f s, expected "
                  "about 5", waited);
    assert_text_has(&err, "mpikvs.77.n1.x-data", "STALLED");
    ck_assert_msg(c.state == KVSHM_DATA_FORMATTING && c.key_size == 0,
                  "a stalled format changed the region");
}
END_TEST

/* A control in shared memory that the test holds in FORMATTING while a
 * child formats it; the child reports its return code. */
struct held {
    struct kvshm_data_control *c;
    pid_t pid;
    int fd;
};

static struct held format_while_held(const struct kvshm_data_shape *s)
{
    struct held h;
    int ready[2], res[2];

    h.c = mmap(NULL, sizeof *h.c, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(h.c != MAP_FAILED, "mmap: %s", strerror(errno));
    init_unformatted(h.c, MiB);
    h.c->state = KVSHM_DATA_FORMATTING;
    ck_assert_msg(pipe(ready) == 0 && pipe(res) == 0, "pipe: %s",
                  strerror(errno));
    h.pid = fork();
    ck_assert_msg(h.pid >= 0, "fork: %s", strerror(errno));
    if (h.pid == 0) {
        struct report rep = {0};
        mpikvs_error_t err = {0};
        close(ready[0]);
        close(res[0]);
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        rep.rc = kvshm_data_format(h.c, MiB, s, "held", &err);
        snprintf(rep.text, sizeof rep.text, "%s", err.text);
        send_report(res[1], &rep);
    }
    close(ready[1]);
    close(res[1]);
    char b;
    ck_assert_msg(read(ready[0], &b, 1) == 1, "the child did not start");
    close(ready[0]);
    sleep_ms(200);              /* the child is waiting by now */
    h.fd = res[0];
    return h;
}

/* The opener that is laying out finishes: the waiter takes its layout. */
START_TEST(test_data_format_waits)
{
    struct kvshm_data_shape other = shape_with(24, 40, 4,
                                               KVSHM_MODE_LOCKFREE);
    const struct kvshm_data_shape *asks[] = { &SHAPE_A, &other };
    const int want[] = { MPIKVS_OK, MPIKVS_ERR_MISMATCH };

    for (int i = 0; i < 2; i++) {
        struct held h = format_while_held(asks[i]);
        struct kvshm_data_control done;
        mpikvs_error_t err = {0};
        init_unformatted(&done, MiB);
        int rc = kvshm_data_init(&done, MiB, 4, &SHAPE_A, "chem", &err);
        assert_rc(rc, MPIKVS_OK, &err, "lay out a copy");
        done.state = KVSHM_DATA_FORMATTING;
        memcpy(h.c, &done, sizeof done);
        __atomic_store_n(&h.c->state, KVSHM_DATA_READY, __ATOMIC_RELEASE);

        struct report rep = recv_report(h.fd, h.pid, "waiting format");
        ck_assert_msg(rep.rc == want[i], "a waiter asking for %s shape: "
                      "expected %s, got %d (%s): \"%s\"",
                      i ? "another" : "the same", rcname(want[i]), rep.rc,
                      rcname(rep.rc), rep.text);
        assert_laid_out(h.c, MiB, &SHAPE_A, "after the wait");
        munmap(h.c, sizeof *h.c);
    }
}
END_TEST

/* The opener that was laying out fails (its shape did not fit) and puts
 * the region back to UNFORMATTED: a waiter must lay it out itself (or
 * fail for its own reason), not call the region corrupt. */
START_TEST(test_data_format_after_failed_format)
{
    struct held h = format_while_held(&SHAPE_A);
    __atomic_store_n(&h.c->state, KVSHM_DATA_UNFORMATTED, __ATOMIC_RELEASE);

    struct report rep = recv_report(h.fd, h.pid, "waiting format");
    ck_assert_msg(rep.rc == MPIKVS_OK, "a waiter after the other opener's "
                  "format failed: expected OK, got %d (%s): \"%s\"", rep.rc,
                  rcname(rep.rc), rep.text);
    assert_laid_out(h.c, MiB, &SHAPE_A, "laid out by the waiter");
    munmap(h.c, sizeof *h.c);
}
END_TEST

/* ----------------------------------------------- data region, two openers */

#define RACE_SIZE   (64 * KiB)
#define RACE_ROUNDS 10

static int leave_unformatted(void *base, uint64_t size, void *arg,
                             mpikvs_error_t *err)
{
    struct kvshm_data_control *c =
        (struct kvshm_data_control *)((char *)base +
                                      KVSHM_DATA_CONTROL_OFFSET);
    return kvshm_data_init(c, size, 4, NULL, arg, err);
}

static void make_data_region(const char *tag)
{
    struct kvshm_region_spec spec = {
        .dir = test_dir, .job = JOB, .node = NODE, .tag = tag,
        .kind = KVSHM_KIND_DATA, .size = RACE_SIZE, .uid = KVSHM_ANY_UID,
        .gid = (gid_t)-1, .step = KVSHM_NO_STEP,
        .fill = leave_unformatted, .fill_arg = (void *)"chem",
    };
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_create(&spec, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "create data region %s", tag);
    const struct kvshm_data_control *c =
        (const void *)((char *)r->base + KVSHM_DATA_CONTROL_OFFSET);
    ck_assert_uint_eq(c->state, KVSHM_DATA_UNFORMATTED);
    kvshm_region_close(&r);
}

/* Two processes open the region writable and format it at the same
 * moment (both released by closing one pipe); rcs[i] is what child i got. */
static void format_race(const char *tag, const struct kvshm_data_shape *s,
                        int rcs[2], char texts[2][600])
{
    char name[KVSHM_NAME_MAX + 1];
    int ready[2], go[2], res[2][2];
    pid_t pids[2];

    region_name_of(name, tag);
    ck_assert_msg(pipe(ready) == 0 && pipe(go) == 0 && pipe(res[0]) == 0 &&
                  pipe(res[1]) == 0, "pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        ck_assert_msg(pids[i] >= 0, "fork: %s", strerror(errno));
        if (pids[i] == 0) {
            struct kvshm_open_opts o = { .kind = KVSHM_KIND_DATA,
                                         .writable = true,
                                         .expect_uid = KVSHM_ANY_UID };
            struct kvshm_region *r = NULL;
            struct report rep = {0};
            mpikvs_error_t err = {0};
            char b;
            close(ready[0]);
            close(go[1]);
            close(res[i][0]);
            rep.rc = kvshm_region_open(test_dir, name, &o, &r, &err);
            if (write(ready[1], "r", 1) != 1)
                _exit(2);
            if (read(go[0], &b, 1) != 0)    /* EOF: go */
                _exit(3);
            if (rep.rc == MPIKVS_OK)
                rep.rc = kvshm_data_format(
                    (struct kvshm_data_control *)((char *)r->base +
                                                  KVSHM_DATA_CONTROL_OFFSET),
                    r->size, &s[i], r->path, &err);
            snprintf(rep.text, sizeof rep.text, "%s", err.text);
            kvshm_region_close(&r);
            send_report(res[i][1], &rep);
        }
        close(res[i][1]);
    }
    close(ready[1]);
    close(go[0]);
    for (int i = 0; i < 2; i++) {
        char b;
        ck_assert_msg(read(ready[0], &b, 1) == 1, "child %d did not open", i);
    }
    close(ready[0]);
    close(go[1]);                       /* both start now */
    for (int i = 0; i < 2; i++) {
        struct report rep = recv_report(res[i][0], pids[i], "format race");
        rcs[i] = rep.rc;
        memcpy(texts[i], rep.text, sizeof rep.text);
    }
}

/* The region as it is after the race, read back through a new open. */
static void assert_region_laid_out(const char *tag,
                                   const struct kvshm_data_shape *s)
{
    char name[KVSHM_NAME_MAX + 1];
    struct kvshm_open_opts o = { .kind = KVSHM_KIND_DATA,
                                 .expect_uid = KVSHM_ANY_UID };
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};

    region_name_of(name, tag);
    int rc = kvshm_region_open(test_dir, name, &o, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open %s after the race", name);
    const struct kvshm_data_control *c =
        (const void *)((char *)r->base + KVSHM_DATA_CONTROL_OFFSET);
    assert_laid_out(c, RACE_SIZE, s, "after the race");
    ck_assert_uint_eq(c->buckets_offset, kvshm_data_buckets_offset(4));
    ck_assert_str_eq(c->table, "chem");
    kvshm_region_close(&r);
}

START_TEST(test_data_race_same_shape)
{
    const struct kvshm_data_shape s[2] = { SHAPE_A, SHAPE_A };

    for (int round = 0; round < RACE_ROUNDS; round++) {
        char tag[16], texts[2][600];
        int rcs[2];
        snprintf(tag, sizeof tag, "r%d-data", round);
        make_data_region(tag);
        format_race(tag, s, rcs, texts);
        for (int i = 0; i < 2; i++)
            assert_rc(rcs[i], MPIKVS_OK, NULL, "round %d, opener %d (\"%s\")",
                      round, i, texts[i]);
        assert_region_laid_out(tag, &SHAPE_A);
    }
}
END_TEST

START_TEST(test_data_race_other_shapes)
{
    const struct kvshm_data_shape s[2] = {
        SHAPE_A, shape_with(32, 64, 2, KVSHM_MODE_FINE_LOCK),
    };

    for (int round = 0; round < RACE_ROUNDS; round++) {
        char tag[16], texts[2][600];
        int rcs[2];
        snprintf(tag, sizeof tag, "r%d-data", round);
        make_data_region(tag);
        format_race(tag, s, rcs, texts);
        int winner = rcs[0] == MPIKVS_OK ? 0 : 1;
        ck_assert_msg(rcs[winner] == MPIKVS_OK &&
                      rcs[1 - winner] == MPIKVS_ERR_MISMATCH,
                      "round %d: expected one OK and one MISMATCH, got %d "
                      "(%s) and %d (%s): \"%s\" / \"%s\"", round, rcs[0],
                      rcname(rcs[0]), rcs[1], rcname(rcs[1]), texts[0],
                      texts[1]);
        assert_region_laid_out(tag, &s[winner]);
    }
}
END_TEST

/* ----------------------------------------------- kvshm_region_create fill */

struct probe {
    char     path[PATH_MAX];
    int      rc;                /* what the fill returns */
    int      calls;
    int      stat_errno;        /* lstat(path) inside the fill */
    int      entries;           /* files in the directory inside the fill */
    uint64_t size;
    bool     header_ok;
};

static uint8_t body_byte(uint64_t i)
{
    return (uint8_t)(i * 131u + 17u);
}

static int probe_fill(void *base, uint64_t size, void *arg,
                      mpikvs_error_t *err)
{
    struct probe *p = arg;
    const struct kvshm_header *h = base;
    struct stat st;

    p->calls++;
    p->size = size;
    p->stat_errno = lstat(p->path, &st) == 0 ? 0 : errno;
    p->entries = count_entries(test_dir);
    p->header_ok = memcmp(h->magic, KVSHM_MAGIC, 8) == 0 &&
                   h->checksum == kvshm_header_checksum(h);
    for (uint64_t i = KVSHM_HEADER_SIZE; i < size; i++)
        ((uint8_t *)base)[i] = body_byte(i);
    if (p->rc != MPIKVS_OK && err) {
        err->code = p->rc;
        snprintf(err->text, sizeof err->text, "probe fill refused %.400s",
                 p->path);
    }
    return p->rc;
}

static struct kvshm_region_spec probe_spec(struct probe *p)
{
    struct kvshm_region_spec s = {
        .dir = test_dir, .job = JOB, .node = NODE, .tag = "data",
        .kind = KVSHM_KIND_DATA, .size = 3 * PAGE, .uid = KVSHM_ANY_UID,
        .gid = (gid_t)-1, .step = KVSHM_NO_STEP, .fill = probe_fill,
        .fill_arg = p,
    };
    path_of(p->path, "data");
    return s;
}

/* A fill that fails aborts the creation with its own code and text, and
 * leaves no file, not even a name blocking a new attempt. */
START_TEST(test_fill_error)
{
    const int codes[] = { MPIKVS_ERR_TOOSMALL, -EIO, MPIKVS_ERR_CONFIG };

    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        struct probe p = { .rc = codes[i] };
        struct kvshm_region_spec spec = probe_spec(&p);
        struct kvshm_region *r = (struct kvshm_region *)&p;  /* not NULL */
        mpikvs_error_t err = {0};
        int rc = kvshm_region_create(&spec, &r, &err);
        assert_rc(rc, codes[i], &err, "a fill returning %d", codes[i]);
        assert_text_has(&err, "probe fill refused", "the fill's text");
        ck_assert_msg(r == NULL, "a failed create left *out set");
        ck_assert_int_eq(p.calls, 1);
        ck_assert_int_eq(count_entries(test_dir), 0);
    }

    struct probe p = { .rc = MPIKVS_OK };
    struct kvshm_region_spec spec = probe_spec(&p);
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_create(&spec, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "create after the failed fills");
    kvshm_region_close(&r);
}
END_TEST

/* The fill runs on the complete, checksummed header, before the region
 * has a name; what it wrote is there when the name appears. */
START_TEST(test_fill_before_name)
{
    struct probe p = { .rc = MPIKVS_OK };
    struct kvshm_region_spec spec = probe_spec(&p);
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};

    int rc = kvshm_region_create(&spec, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "create with a fill");
    kvshm_region_close(&r);
    ck_assert_int_eq(p.calls, 1);
    ck_assert_msg(p.stat_errno == ENOENT, "inside the fill %s %s", p.path,
                  p.stat_errno ? strerror(p.stat_errno) : "already existed");
    ck_assert_msg(p.entries == 0, "inside the fill the directory held %d "
                  "files, expected none", p.entries);
    ck_assert_msg(p.size == spec.size, "the fill was given %" PRIu64
                  " bytes, the region has %" PRIu64, p.size, spec.size);
    ck_assert_msg(p.header_ok, "the fill ran before the header was "
                  "complete");

    struct kvshm_open_opts o = { .kind = KVSHM_KIND_DATA,
                                 .expect_uid = KVSHM_ANY_UID };
    rc = kvshm_region_open(test_dir, strrchr(p.path, '/') + 1, &o, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open the filled region");
    for (uint64_t i = KVSHM_HEADER_SIZE; i < spec.size; i++)
        ck_assert_msg(((const uint8_t *)r->base)[i] == body_byte(i),
                      "byte %" PRIu64 " of the body is not what the fill "
                      "wrote", i);
    kvshm_region_close(&r);
    ck_assert_int_eq(count_entries(test_dir), 1);
}
END_TEST

/* ------------------------------------------------------------------- plan */

#define PLAN_CONFIG                                                     \
    "{\"version\": 1, \"tables\": {"                                    \
    "\"chem\": {\"size\": \"50%\", \"key\": {\"key_size\": 16},"        \
    " \"value\": {\"value_size\": 40}, \"slots_per_bucket\": 8,"        \
    " \"mode\": \"fine-lock\","                                          \
    " \"tier\": {\"enabled\": true, \"size\": \"10%\"}},"                \
    "\"phys\": {\"key\": {\"key_size\": 24}, "                          \
    "\"value\": {\"value_size\": 8}}}}"

static struct kvshm_config *plan_config(const char *text)
{
    struct kvshm_config *cfg = NULL;
    struct kvshm_diag diag;
    int rc = kvshm_config_parse(text, strlen(text), "plan.json", &cfg,
                                &diag);

    ck_assert_msg(rc == MPIKVS_OK, "parse: %s", diag.text ? diag.text : "");
    return cfg;
}

/* The node's plan: the config's shares of the DHT size, each table's
 * tier out of its share, the buckets its data region holds. */
START_TEST(test_plan_node)
{
    struct kvshm_config *cfg = plan_config(PLAN_CONFIG);
    struct kvshm_plan_input in = {.dht_size = 64 * MiB, .config = cfg,
                                  .max_ranks = 8};
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    const struct kvshm_table_plan *chem, *phys;

    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.ntables, 2);
    ck_assert_uint_eq(plan.dht_size, 64 * MiB);
    chem = kvshm_plan_table(&plan, "chem");
    phys = kvshm_plan_table(&plan, "phys");
    ck_assert(chem && phys && !kvshm_plan_table(&plan, "none"));
    /* what kvshm_config_resolve gives, split into tier and data */
    ck_assert_uint_eq(chem->tier_bytes, cfg->tables[0].tier.bytes);
    ck_assert_uint_eq(chem->tier_bytes, (uint64_t)(0.1 * 32.0 * MiB));
    ck_assert_uint_eq(chem->data_bytes + chem->tier_bytes, 32 * MiB);
    ck_assert_uint_eq(phys->data_bytes, 32 * MiB);
    ck_assert_uint_eq(phys->tier_bytes, 0);
    ck_assert_uint_eq(chem->shape.key_size, 16);
    ck_assert_uint_eq(chem->shape.value_size, 40);
    ck_assert_uint_eq(chem->shape.slots_per_bucket, 8);
    ck_assert_uint_eq(chem->shape.mode, KVSHM_MODE_FINE_LOCK);
    ck_assert_uint_eq(chem->shape.slot_size, 64);
    ck_assert_uint_eq(chem->shape.bucket_size, 128 + 8 * 64);
    ck_assert_uint_eq(chem->shape.max_ranks, 8);
    ck_assert_uint_eq(phys->shape.slots_per_bucket, KVSHM_SLOTS_DEFAULT);
    /* the buckets are those the data region lays out: one rule */
    for (size_t i = 0; i < plan.ntables; i++) {
        const struct kvshm_table_plan *tp = &plan.tables[i];
        struct kvshm_data_shape shape = {
            tp->shape.key_size, tp->shape.value_size,
            tp->shape.slots_per_bucket, tp->shape.mode};
        struct kvshm_data_control c;
        mpikvs_error_t err = {0};
        memset(&c, 0, sizeof c);
        assert_rc(kvshm_data_init(&c, tp->data_bytes, 8, &shape, tp->name,
                                  &err),
                  MPIKVS_OK, &err, "data init of %s", tp->name);
        ck_assert_uint_eq(c.nbuckets, tp->shape.nbuckets);
        ck_assert_uint_eq(c.bucket_size, tp->shape.bucket_size);
        ck_assert_uint_eq(c.slot_size, tp->shape.slot_size);
    }
    uint64_t chem_data_bytes = chem->data_bytes;
    kvshm_plan_free(&plan);

    /* the submit side knows no rank count: no buckets yet, same sizes */
    in.max_ranks = 0;
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.tables[0].shape.nbuckets, 0);
    ck_assert_uint_eq(plan.tables[0].data_bytes, chem_data_bytes);
    kvshm_plan_free(&plan);
    kvshm_config_free(cfg);
}
END_TEST

/* Without a config: one table "kvs" of the whole size, no shape. */
START_TEST(test_plan_no_config)
{
    struct kvshm_plan_input in = {.dht_size = 16 * MiB, .max_ranks = 4};
    struct kvshm_plan plan;
    struct kvshm_diag diag;

    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.ntables, 1);
    ck_assert_str_eq(plan.tables[0].name, "kvs");
    ck_assert_uint_eq(plan.tables[0].data_bytes, 16 * MiB);
    ck_assert_uint_eq(plan.tables[0].tier_bytes, 0);
    ck_assert_uint_eq(plan.tables[0].shape.key_size, 0);
    ck_assert_uint_eq(plan.tables[0].shape.nbuckets, 0);
    ck_assert_uint_eq(plan.tables[0].shape.max_ranks, 4);
    kvshm_plan_free(&plan);
}
END_TEST

/* Refused: tables that do not fit, a tier that leaves its table
 * nothing; each problem a line naming the config and the path. */
START_TEST(test_plan_refused)
{
    struct kvshm_config *cfg = plan_config(
        "{\"version\": 1, \"tables\": {\"t\": {\"size\": \"8M\","
        " \"key\": {\"key_size\": 8}, \"value\": {\"value_size\": 8},"
        " \"tier\": {\"enabled\": true, \"size\": \"8M\"}}}}");
    struct kvshm_plan_input in = {.dht_size = 4 * MiB, .config = cfg};
    struct kvshm_plan plan;
    struct kvshm_diag diag;

    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_INVAL);
    ck_assert_msg(diag.text && strstr(diag.text, "plan.json: tables: the "
                                                 "tables need 8.0 MiB"),
                  "%s", diag.text ? diag.text : "(none)");
    ck_assert_ptr_null(plan.tables);
    kvshm_diag_free(&diag);
    in.dht_size = 16 * MiB;
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_INVAL);
    ck_assert_msg(diag.text &&
                  strcmp(diag.text, "plan.json: tables.t.tier.size: 8.0 MiB "
                                    "leaves nothing of the table's 8.0 MiB "
                                    "for its buckets\n") == 0,
                  "%s", diag.text ? diag.text : "(none)");
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
}
END_TEST

/* The library's own table: all of the size for buckets and tier, the
 * counters on top; refused when the tier takes all or no bucket fits. */
START_TEST(test_plan_own_table)
{
    struct kvshm_config *cfg = plan_config(PLAN_CONFIG);
    struct kvshm_table_shape want = {.key_size = 16, .value_size = 40,
                                     .slots_per_bucket = 8,
                                     .mode = KVSHM_MODE_FINE_LOCK};
    struct kvshm_plan_input in = {.dht_size = 10 * MiB, .config = cfg,
                                  .own_table = true, .table = "chem",
                                  .shape = &want, .max_ranks = 3};
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    const struct kvshm_table_plan *tp;
    uint64_t tier = (uint64_t)(0.1 * 10.0 * MiB);

    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.ntables, 1);
    tp = &plan.tables[0];
    ck_assert_str_eq(tp->name, "chem");
    ck_assert_uint_eq(tp->tier_bytes, tier);
    ck_assert_uint_eq(tp->shape.nbuckets, (10 * MiB - tier) / (128 + 8 * 64));
    ck_assert_uint_eq(tp->data_bytes,
                      kvshm_data_buckets_offset(3) +
                          tp->shape.nbuckets * tp->shape.bucket_size);
    kvshm_plan_free(&plan);

    in.table = "phys";   /* no tier */
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.tables[0].tier_bytes, 0);
    kvshm_plan_free(&plan);

    in.table = "chem";
    in.dht_size = 500;   /* less than one bucket of 640 */
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag),
                     MPIKVS_ERR_TOOSMALL);
    ck_assert_msg(diag.text && strstr(diag.text, "500 bytes per node cannot "
                                                 "hold one bucket of 640"),
                  "%s", diag.text ? diag.text : "(none)");
    kvshm_diag_free(&diag);
    cfg->tables[0].tier.size.fraction = 0;
    cfg->tables[0].tier.size.bytes = 1000;   /* all of 500 */
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag),
                     MPIKVS_ERR_TOOSMALL);
    ck_assert_msg(diag.text && strstr(diag.text, "table 'chem': its tier "
                                                 "takes all of the 500 "
                                                 "bytes per node"),
                  "%s", diag.text ? diag.text : "(none)");
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
}
END_TEST

/* diag's first line, for comparing */
static const char *first_line(const struct kvshm_diag *diag, char *buf,
                              size_t len)
{
    const char *t = diag->text ? diag->text : "(none)";

    snprintf(buf, len, "%.*s", (int)strcspn(t, "\n"), t);
    return buf;
}

/* The smallest usable size: every table holds its counters and one
 * bucket after its tier.  Worked out here by hand from the layout
 * (format.h): 80-byte keys and 104-byte values in 4 slots make a bucket
 * of a 64-byte header and four 192-byte slots, 832 bytes; counters for
 * 64 ranks end at 256 + 256 + 64 * 320 = 20992, and the buckets start on
 * the next page, 24576.  The smallest is planned and lays out one
 * bucket; a byte less is refused, naming the smallest in the unit the
 * size was given in. */
START_TEST(test_plan_min_size)
{
    struct kvshm_config *cfg = plan_config(
        "{\"version\": 1, \"tables\": {\"cache\": {\"key\": "
        "{\"key_size\": 80}, \"value\": {\"value_size\": 104}}}}");
    struct kvshm_plan_input in = {.dht_size = 4096, .config = cfg,
                                  .max_ranks = 64, .size_what = "--dht-size",
                                  .size_text = "4K"};
    struct kvshm_data_shape shape = {80, 104, 4, KVSHM_MODE_LOCKFREE};
    struct kvshm_data_control c;
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    mpikvs_error_t err;
    uint64_t min = 0;
    char line[600];

    ck_assert_int_eq(kvshm_plan_min_size(&in, &min), MPIKVS_OK);
    ck_assert_uint_eq(min, 24576 + 832);
    ck_assert_uint_eq(min, kvshm_data_min_size(64, &shape));
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_TOOSMALL);
    ck_assert_str_eq(first_line(&diag, line, sizeof(line)),
                     "--dht-size=4K is below the smallest usable size, 25K "
                     "(25408 bytes): counters for 64 ranks and one bucket in "
                     "each table, after its tier (buckets of cache: 832 "
                     "bytes)");
    ck_assert_msg(strstr(diag.text, "plan.json: tables.cache.size: 4.0 KiB "
                                    "cannot hold counters for 64 ranks and "
                                    "one bucket of 832 bytes (4 slots of "
                                    "80-byte keys and 104-byte values): it "
                                    "needs 25408 bytes"),
                  "%s", diag.text);
    ck_assert_ptr_null(plan.tables);
    kvshm_diag_free(&diag);

    in.dht_size = min;   /* planned, and the region lays out one bucket */
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.tables[0].shape.nbuckets, 1);
    ck_assert_uint_eq(plan.tables[0].data_bytes, min);
    memset(&c, 0, sizeof(c));
    assert_rc(kvshm_data_init(&c, plan.tables[0].data_bytes, 64, &shape,
                              "cache", &err),
              MPIKVS_OK, &err, "lay out the smallest region");
    ck_assert_uint_eq(c.nbuckets, 1);
    kvshm_plan_free(&plan);
    ck_assert_int_eq(kvshm_data_init(&c, min - 1, 64, &shape, "cache", &err),
                     MPIKVS_ERR_TOOSMALL);
    ck_assert_msg(strstr(err.text, "the smallest is 25408 bytes"), "%s",
                  err.text);

    in.dht_size = min - 1;   /* in bytes, and without a name */
    in.size_what = in.size_text = NULL;
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_TOOSMALL);
    ck_assert_str_eq(first_line(&diag, line, sizeof(line)),
                     "a DHT size of 25407 is below the smallest usable size, "
                     "25408: counters for 64 ranks and one bucket in each "
                     "table, after its tier (buckets of cache: 832 bytes)");
    kvshm_diag_free(&diag);

    in.max_ranks = 1;   /* fewer counters: one page of them */
    ck_assert_int_eq(kvshm_plan_min_size(&in, &min), MPIKVS_OK);
    ck_assert_uint_eq(min, 4096 + 832);
    kvshm_config_free(cfg);
}
END_TEST

/* The smallest usable size where tables share it and a tier takes a
 * share: PLAN_CONFIG's chem gets half of the size, its tier a tenth of
 * that, and needs counters for 8 ranks (one page) and a bucket of 640
 * bytes: floor(D / 2) - floor(floor(D / 2) / 10) >= 4736 first holds at
 * D = 10524; phys's half then holds its 256-byte bucket. */
START_TEST(test_plan_min_size_shares)
{
    struct kvshm_config *cfg = plan_config(PLAN_CONFIG);
    struct kvshm_plan_input in = {.dht_size = 10524, .config = cfg,
                                  .max_ranks = 8};
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    uint64_t min = 0;
    char line[600];

    ck_assert_int_eq(kvshm_plan_min_size(&in, &min), MPIKVS_OK);
    ck_assert_uint_eq(min, 10524);
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(kvshm_plan_table(&plan, "chem")->shape.nbuckets, 1);
    ck_assert_uint_ge(kvshm_plan_table(&plan, "phys")->shape.nbuckets, 1);
    kvshm_plan_free(&plan);
    in.dht_size = 10523;
    in.size_what = "--size";
    in.size_text = "10523";
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_TOOSMALL);
    ck_assert_str_eq(first_line(&diag, line, sizeof(line)),
                     "--size=10523 is below the smallest usable size, 10524: "
                     "counters for 8 ranks and one bucket in each table, "
                     "after its tier (buckets of chem: 640 bytes, phys: 256 "
                     "bytes)");
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);

    /* a table of a fixed size too small: no DHT size helps */
    cfg = plan_config("{\"version\": 1, \"tables\": {\"t\": {\"size\": "
                      "\"1K\", \"key\": {\"key_size\": 8}, \"value\": "
                      "{\"value_size\": 8}}}}");
    in.config = cfg;
    in.dht_size = 1 * MiB;
    ck_assert_int_eq(kvshm_plan_min_size(&in, &min), MPIKVS_ERR_TOOBIG);
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_INVAL);
    ck_assert_str_eq(first_line(&diag, line, sizeof(line)),
                     "plan.json: tables.t.size: 1.0 KiB cannot hold counters "
                     "for 8 ranks and one bucket of 192 bytes (4 slots of "
                     "8-byte keys and 8-byte values): it needs 4288 bytes");
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
}
END_TEST

/* Without a config the node's one table is laid out by its first opener
 * with a shape of its own: the smallest is counters and the smallest
 * bucket any program can ask for (one slot of 1-byte key and value: a
 * 64-byte header and a 16-byte slot, 128 bytes).  The library's own
 * table: one bucket after its tier, the counters on top. */
START_TEST(test_plan_min_size_other_plans)
{
    struct kvshm_config *cfg = plan_config(PLAN_CONFIG);
    struct kvshm_table_shape want = {.key_size = 16, .value_size = 40,
                                     .slots_per_bucket = 8,
                                     .mode = KVSHM_MODE_FINE_LOCK};
    struct kvshm_plan_input in = {.dht_size = 4096, .max_ranks = 64,
                                  .size_what = "--dht-size",
                                  .size_text = "4k"};
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    uint64_t min = 0;
    char line[600];

    ck_assert_int_eq(kvshm_plan_min_size(&in, &min), MPIKVS_OK);
    ck_assert_uint_eq(min, 24576 + 128);
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_TOOSMALL);
    ck_assert_str_eq(first_line(&diag, line, sizeof(line)),
                     "--dht-size=4k is below the smallest usable size, 25k "
                     "(24704 bytes): counters for 64 ranks and one bucket of "
                     "the smallest shape, 128 bytes (the program's keys and "
                     "values may need more)");
    kvshm_diag_free(&diag);
    in.max_ranks = 0;   /* not known (as before the node): not checked */
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    kvshm_plan_free(&plan);

    /* own table: S - floor(S / 10) >= 640 first at S = 711 */
    in = (struct kvshm_plan_input){.dht_size = 710, .config = cfg,
                                   .own_table = true, .table = "chem",
                                   .shape = &want, .max_ranks = 3,
                                   .size_what = "options.size_per_node"};
    ck_assert_int_eq(kvshm_plan_min_size(&in, &min), MPIKVS_OK);
    ck_assert_uint_eq(min, 711);
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_ERR_TOOSMALL);
    ck_assert_str_eq(first_line(&diag, line, sizeof(line)),
                     "options.size_per_node=710 is below the smallest usable "
                     "size, 711: one bucket of 640 bytes (8 slots of 16-byte "
                     "keys and 40-byte values) after the tier's share");
    kvshm_diag_free(&diag);
    in.dht_size = 711;
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(plan.tables[0].shape.nbuckets, 1);
    kvshm_plan_free(&plan);
    kvshm_config_free(cfg);
}
END_TEST

/* A size given back in the unit it was asked in, rounded up. */
START_TEST(test_size_like)
{
    char buf[32];

    ck_assert_str_eq(kvshm_size_like(buf, sizeof(buf), 17216, "4K"), "17K");
    ck_assert_str_eq(kvshm_size_like(buf, sizeof(buf), 16384, "16k"), "16k");
    ck_assert_str_eq(kvshm_size_like(buf, sizeof(buf), 1, "2G"), "1G");
    ck_assert_str_eq(kvshm_size_like(buf, sizeof(buf), 17216, "0.5M"), "1M");
    ck_assert_str_eq(kvshm_size_like(buf, sizeof(buf), 17216, "4096"),
                     "17216");
    ck_assert_str_eq(kvshm_size_like(buf, sizeof(buf), 17216, NULL), "17216");
}
END_TEST

/* The site's limit, by bytes or by a share of the node's memory. */
START_TEST(test_limits_check)
{
    struct kvshm_limits bytes = {.max_size = 1024 * MiB};
    struct kvshm_limits share = {.max_fraction = 0.5};
    mpikvs_error_t err = {0};

    ck_assert_int_eq(kvshm_limits_check(&bytes, "--dht-size", 1024 * MiB, 0,
                                        &err),
                     MPIKVS_OK);
    ck_assert_int_eq(kvshm_limits_check(&bytes, "--dht-size", 2048 * MiB, 0,
                                        &err),
                     MPIKVS_ERR_TOOBIG);
    ck_assert_str_eq(err.text, "--dht-size=2.0 GiB is more than this site "
                               "allows: 1.0 GiB");
    /* a share cannot be applied where the node's memory is unknown */
    ck_assert_int_eq(kvshm_limits_check(&share, "default_size", 2048 * MiB,
                                        0, &err),
                     MPIKVS_OK);
    ck_assert_int_eq(kvshm_limits_check(&share, "default_size", 2048 * MiB,
                                        2048 * MiB, &err),
                     MPIKVS_ERR_TOOBIG);
    ck_assert_str_eq(err.text, "default_size=2.0 GiB is more than this site "
                               "allows: 1.0 GiB (50% of the node's memory)");
}
END_TEST

/* A layout carries each table's plan: written and read back whole. */
START_TEST(test_layout_carries_plan)
{
    struct kvshm_config *cfg = plan_config(PLAN_CONFIG);
    struct kvshm_plan_input in = {.dht_size = 64 * MiB, .config = cfg,
                                  .max_ranks = 8};
    struct kvshm_region_spec spec = layout_spec("layout", 0600);
    struct kvshm_job_layout l = {0}, *got = NULL;
    struct kvshm_job_table tables[2];
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    mpikvs_error_t err = {0};
    char path[512], name[KVSHM_NAME_MAX + 1];

    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    for (size_t i = 0; i < 2; i++) {
        make_table(&tables[i], KVSHM_SCOPE_JOB, plan.tables[i].name,
                   plan.tables[i].data_bytes, plan.tables[i].tier_bytes);
        tables[i].shape = plan.tables[i].shape;
    }
    snprintf(l.job, sizeof l.job, "%s", JOB);
    snprintf(l.node, sizeof l.node, "%s", NODE);
    l.scope = KVSHM_SCOPE_JOB;
    l.dht_size = plan.dht_size;
    l.ntables = 2;
    l.tables = tables;
    l.nodelist = (char *)"n1";
    create_layout(&spec, &l);
    ck_assert_int_eq(kvshm_region_name(name, sizeof name, JOB, NODE,
                                       "layout", NULL),
                     MPIKVS_OK);
    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    assert_rc(kvshm_job_layout_open(path, &got, &err), MPIKVS_OK, &err,
              "open %s", path);
    ck_assert_uint_eq(got->ntables, 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(memcmp(&got->tables[i], &tables[i],
                             sizeof tables[i]) == 0,
                      "table %zu's entry came back changed", i);
    ck_assert_uint_eq(got->tables[0].shape.nbuckets,
                      plan.tables[0].shape.nbuckets);
    kvshm_job_layout_free(got);
    kvshm_plan_free(&plan);
    kvshm_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static TCase *dir_tcase(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
    tcase_set_timeout(tc, 60);
    return tc;
}

static Suite *job_layout_suite(bool root)
{
    Suite *s = suite_create("job_layout");
    TCase *tc;

    tc = tcase_create("names");
    tcase_add_test(tc, test_table_tags);
    tcase_add_test(tc, test_table_tags_name_too_long);
    tcase_add_test(tc, test_request_hash);
    tcase_add_test(tc, test_request_hash_null_vs_empty);
    suite_add_tcase(s, tc);

    tc = dir_tcase("layout");
    tcase_add_test(tc, test_layout_round_trip);
    tcase_add_test(tc, test_layout_round_trip_empty);
    tcase_add_test(tc, test_layout_appears_complete);
    tcase_add_test(tc, test_layout_too_big);
    suite_add_tcase(s, tc);

    tc = dir_tcase("layout-damage");
    tcase_add_test(tc, test_layout_damage);
    tcase_add_test(tc, test_layout_truncated);
    tcase_add_test(tc, test_layout_bad_paths);
    tcase_add_test(tc, test_layout_dir_only_path);
    suite_add_tcase(s, tc);

    if (root) {
        tc = dir_tcase("layout-owner");
        tcase_add_test(tc, test_layout_owner_refused);
        tcase_add_test(tc, test_layout_as_user);
        suite_add_tcase(s, tc);
    }

    tc = dir_tcase("data");
    tcase_add_test(tc, test_buckets_offset);
    tcase_add_test(tc, test_data_init_shape);
    tcase_add_test(tc, test_data_init_unformatted);
    tcase_add_test(tc, test_data_init_errors);
    tcase_add_test(tc, test_data_format);
    tcase_add_test(tc, test_data_format_toosmall);
    tcase_add_test(tc, test_data_format_unknown_state);
    tcase_add_test(tc, test_data_format_stalled);
    tcase_add_test(tc, test_data_format_waits);
    tcase_add_test(tc, test_data_format_after_failed_format);
    suite_add_tcase(s, tc);

    tc = dir_tcase("data-race");
    tcase_add_test(tc, test_data_race_same_shape);
    tcase_add_test(tc, test_data_race_other_shapes);
    suite_add_tcase(s, tc);

    tc = dir_tcase("fill");
    tcase_add_test(tc, test_fill_error);
    tcase_add_test(tc, test_fill_before_name);
    suite_add_tcase(s, tc);

    tc = dir_tcase("plan");
    tcase_add_test(tc, test_plan_node);
    tcase_add_test(tc, test_plan_no_config);
    tcase_add_test(tc, test_plan_refused);
    tcase_add_test(tc, test_plan_own_table);
    tcase_add_test(tc, test_plan_min_size);
    tcase_add_test(tc, test_plan_min_size_shares);
    tcase_add_test(tc, test_plan_min_size_other_plans);
    tcase_add_test(tc, test_size_like);
    tcase_add_test(tc, test_limits_check);
    tcase_add_test(tc, test_layout_carries_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    bool root = geteuid() == 0;

    snprintf(run_dir, sizeof run_dir, "/dev/shm/kvtest.XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", run_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    if (!root)
        printf("SKIP: layout owner tests (a layout of uid 65534 refused, "
               "opening as uid 65534: -EACCES, MPIKVS_ERR_OWNER) need "
               "root\n");

    SRunner *sr = srunner_create(job_layout_suite(root));
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    remove_tree(run_dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
