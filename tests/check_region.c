/*
 * check_region.c - unit tests of the region API (shm/region.h, format.h,
 * mpikvs_errors.h): naming, lifecycle, growth, ownership, header
 * validation of damaged files, space reservation and error texts.
 *
 * Every test works in a private directory under /dev/shm that its checked
 * fixture makes and removes with everything in it.  The private
 * directories sit in one run directory that main() removes at the end:
 * in fork mode a failed assertion ends the test's process before its
 * teardown runs, and nothing may be left in /dev/shm even then.
 *
 * Tests that need root (ownership, a tmpfs mount) are only added to the
 * suite when they can run; otherwise main() prints a SKIP line for them.
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
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "data_region.h"
#include "format.h"
#include "held.h"
#include "mpikvs_errors.h"
#include "region.h"
#include "shm_check.h"

#define JOB        "4242"
#define NODE       "n001"
#define NOBODY     ((uid_t)65534)
#define NOGROUP    ((gid_t)65534)
#define KiB        (UINT64_C(1) << 10)
#define MiB        (UINT64_C(1) << 20)

/* Set in main() before the tests fork, so every test process sees it. */
static char tmpfs_dir[64];

/* ---------------------------------------------------------------- helpers */

static void name_of(char *name, const char *tag)
{
    mpikvs_error_t err = {0};
    int rc = kvshm_region_name(name, KVSHM_NAME_MAX, JOB, NODE, tag, &err);
    assert_rc(rc, MPIKVS_OK, &err, "kvshm_region_name(%s, %s, %s)", JOB,
              NODE, tag);
}

static void path_of(char *path, const char *tag)
{
    char name[KVSHM_NAME_MAX];
    name_of(name, tag);
    snprintf(path, PATH_MAX, "%s/%s", test_dir, name);
}

static struct kvshm_region_spec spec_for(const char *tag, uint32_t kind,
                                         uint64_t size)
{
    struct kvshm_region_spec s = {
        .dir = test_dir, .job = JOB, .node = NODE, .tag = tag, .kind = kind,
        .size = size, .max_size = 0, .uid = KVSHM_ANY_UID,
        .gid = (gid_t)-1, .mode = 0, .step = KVSHM_NO_STEP,
    };
    return s;
}

static struct kvshm_open_opts opts_for(uint32_t kind, bool writable)
{
    struct kvshm_open_opts o = {
        .kind = kind, .writable = writable, .expect_uid = KVSHM_ANY_UID,
    };
    return o;
}

static struct kvshm_region *create_ok(const struct kvshm_region_spec *s)
{
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_create(s, &r, &err);

    assert_rc(rc, MPIKVS_OK, &err, "create %s (size %" PRIu64 ")", s->tag,
              s->size);
    ck_assert_msg(r != NULL, "create %s returned OK and no region", s->tag);
    return r;
}

/* Create a region and close it: the file is what a test works on. */
static void make_region(const char *tag, uint32_t kind, uint64_t size,
                        uint64_t max_size)
{
    struct kvshm_region_spec s = spec_for(tag, kind, size);
    s.max_size = max_size;
    struct kvshm_region *r = create_ok(&s);
    kvshm_region_close(&r);
}

static int try_open(const char *tag, const struct kvshm_open_opts *o,
                    struct kvshm_region **r, mpikvs_error_t *err)
{
    char name[KVSHM_NAME_MAX];
    name_of(name, tag);
    memset(err, 0, sizeof *err);
    *r = NULL;
    return kvshm_region_open(test_dir, name, o, r, err);
}

static struct kvshm_region *open_ok(const char *tag,
                                    const struct kvshm_open_opts *o)
{
    struct kvshm_region *r;
    mpikvs_error_t err;
    int rc = try_open(tag, o, &r, &err);

    assert_rc(rc, MPIKVS_OK, &err, "open %s", tag);
    ck_assert_msg(r != NULL, "open %s returned OK and no region", tag);
    return r;
}

/* Open region tag and expect want; a region opened by mistake is closed. */
static void __attribute__((format(printf, 4, 5)))
expect_open(const char *tag, const struct kvshm_open_opts *o, int want,
            const char *fmt, ...)
{
    char what[256];
    struct kvshm_region *r;
    mpikvs_error_t err;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int rc = try_open(tag, o, &r, &err);
    if (rc == MPIKVS_OK && r != NULL)
        kvshm_region_close(&r);
    assert_rc(rc, want, &err, "open %s after: %s", tag, what);
}

static int open_file(const char *tag, int flags)
{
    char path[PATH_MAX];
    path_of(path, tag);
    int fd = open(path, flags | O_CLOEXEC, 0600);
    ck_assert_msg(fd >= 0, "open(%s): %s", path, strerror(errno));
    return fd;
}

static uint64_t header_sum(const struct kvshm_header *h)
{
    return XXH3_64bits(h, offsetof(struct kvshm_header, checksum));
}

static void read_header(const char *tag, struct kvshm_header *h)
{
    int fd = open_file(tag, O_RDONLY);
    ssize_t n = pread(fd, h, sizeof *h, 0);
    ck_assert_msg(n == (ssize_t)sizeof *h, "read header of %s: got %zd: %s",
                  tag, n, strerror(errno));
    close(fd);
}

/* Write h over the region's header, with its checksum recomputed when
 * fix_sum, so that only the field a test changed differs. */
static void write_header(const char *tag, struct kvshm_header *h,
                         bool fix_sum)
{
    if (fix_sum)
        h->checksum = header_sum(h);
    int fd = open_file(tag, O_WRONLY);
    ssize_t n = pwrite(fd, h, sizeof *h, 0);
    ck_assert_msg(n == (ssize_t)sizeof *h, "write header of %s: %s", tag,
                  strerror(errno));
    close(fd);
}

static void resize_file(const char *tag, uint64_t size)
{
    int fd = open_file(tag, O_WRONLY);
    ck_assert_msg(ftruncate(fd, (off_t)size) == 0, "ftruncate %s to %" PRIu64
                  ": %s", tag, size, strerror(errno));
    close(fd);
}

/* Write a file under a region name without the library. */
static void write_file(const char *tag, const void *buf, size_t len)
{
    int fd = open_file(tag, O_WRONLY | O_CREAT | O_EXCL);
    ck_assert_msg(write(fd, buf, len) == (ssize_t)len, "write %s: %s", tag,
                  strerror(errno));
    close(fd);
}

static struct stat stat_tag(const char *tag)
{
    char path[PATH_MAX];
    struct stat st;
    path_of(path, tag);
    ck_assert_msg(stat(path, &st) == 0, "stat %s: %s", path,
                  strerror(errno));
    return st;
}

static uint8_t pattern(uint64_t i)
{
    return (uint8_t)(i * 31u + 7u + (i >> 11));
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ----------------------------------------------------------------- naming */

START_TEST(test_name_build)
{
    char buf[KVSHM_NAME_MAX];
    mpikvs_error_t err = {0};
    int rc;

    rc = kvshm_region_name(buf, sizeof buf, "4242", "n001", "data", &err);
    assert_rc(rc, MPIKVS_OK, &err, "kvshm_region_name(4242, n001, data)");
    ck_assert_msg(strcmp(buf, "mpikvs.4242.n001.data") == 0,
                  "expected \"mpikvs.4242.n001.data\", got \"%s\"", buf);

    rc = kvshm_region_name(buf, sizeof buf, "u12_ab-Z9", "Node-7_x",
                           "tier-index", &err);
    assert_rc(rc, MPIKVS_OK, &err, "all allowed characters");
    ck_assert_msg(strcmp(buf, "mpikvs.u12_ab-Z9.Node-7_x.tier-index") == 0,
                  "got \"%s\"", buf);

    /* The longest parts must fit in KVSHM_NAME_MAX exactly. */
    char job[KVSHM_JOB_MAX], node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];
    memset(job, 'j', sizeof job - 1);    job[sizeof job - 1] = '\0';
    memset(node, 'n', sizeof node - 1);  node[sizeof node - 1] = '\0';
    memset(tag, 't', sizeof tag - 1);    tag[sizeof tag - 1] = '\0';
    rc = kvshm_region_name(buf, sizeof buf, job, node, tag, &err);
    assert_rc(rc, MPIKVS_OK, &err, "longest allowed parts (31/63/31)");
    ck_assert_msg(strlen(buf) == KVSHM_NAME_MAX - 1,
                  "longest name: expected length %u, got %zu",
                  KVSHM_NAME_MAX - 1, strlen(buf));
}
END_TEST

START_TEST(test_name_reject)
{
    char longjob[KVSHM_JOB_MAX + 1], longnode[KVSHM_NODE_MAX + 1];
    char longtag[KVSHM_TAG_MAX + 1];
    memset(longjob, 'j', KVSHM_JOB_MAX);    longjob[KVSHM_JOB_MAX] = '\0';
    memset(longnode, 'n', KVSHM_NODE_MAX);  longnode[KVSHM_NODE_MAX] = '\0';
    memset(longtag, 't', KVSHM_TAG_MAX);    longtag[KVSHM_TAG_MAX] = '\0';

    const char *bad[] = { "", "a.b", ".", "a/b", "/", "a b", " ", "a\tb",
                          "a*b", "a:b", "..", "a\nb", "\xc3\xa9" };
    const char *toolong[3] = { longjob, longnode, longtag };
    const char *good[3] = { "4242", "n001", "data" };
    const char *partname[3] = { "job", "node", "tag" };

    for (int part = 0; part < 3; part++) {
        for (size_t i = 0; i <= sizeof bad / sizeof bad[0]; i++) {
            const char *p[3] = { good[0], good[1], good[2] };
            p[part] = i < sizeof bad / sizeof bad[0] ? bad[i] : toolong[part];
            char buf[KVSHM_NAME_MAX + 64];
            mpikvs_error_t err = {0};
            int rc = kvshm_region_name(buf, sizeof buf, p[0], p[1], p[2],
                                       &err);
            assert_rc(rc, MPIKVS_ERR_NAME, &err, "%s part \"%s\"",
                      partname[part], p[part]);
        }
    }

    /* err may be NULL. */
    char buf[KVSHM_NAME_MAX];
    int rc = kvshm_region_name(buf, sizeof buf, "", NODE, "data", NULL);
    assert_rc(rc, MPIKVS_ERR_NAME, NULL, "empty job with err == NULL");

    /* A buffer one byte short: refused, and nothing written past it. */
    struct { char buf[21]; char guard[16]; } b;
    memset(&b, 0x5a, sizeof b);
    mpikvs_error_t err = {0};
    rc = kvshm_region_name(b.buf, sizeof b.buf, "4242", "n001", "data",
                           &err);      /* needs 22 bytes */
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "buffer of 21 bytes for a "
              "21-character name");
    for (size_t i = 0; i < sizeof b.guard; i++)
        ck_assert_msg((uint8_t)b.guard[i] == 0x5a,
                      "kvshm_region_name wrote past a %zu-byte buffer",
                      sizeof b.buf);
}
END_TEST

START_TEST(test_name_parse)
{
    /* Guards after each part catch a parse that copies too much. */
    struct {
        char job[KVSHM_JOB_MAX];   char g1[8];
        char node[KVSHM_NODE_MAX]; char g2[8];
        char tag[KVSHM_TAG_MAX];   char g3[8];
    } p;
    char name[KVSHM_NAME_MAX];
    int rc;

    rc = kvshm_region_name_parse("mpikvs.4242.n001.data", p.job, p.node,
                                 p.tag);
    assert_rc(rc, MPIKVS_OK, NULL, "parse mpikvs.4242.n001.data");
    ck_assert_msg(strcmp(p.job, "4242") == 0 && strcmp(p.node, "n001") == 0 &&
                  strcmp(p.tag, "data") == 0,
                  "parse: expected 4242/n001/data, got %s/%s/%s", p.job,
                  p.node, p.tag);

    /* Round trip through kvshm_region_name, longest parts included. */
    char job[KVSHM_JOB_MAX], node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];
    memset(job, '7', sizeof job - 1);    job[sizeof job - 1] = '\0';
    memset(node, 'N', sizeof node - 1);  node[sizeof node - 1] = '\0';
    memset(tag, '-', sizeof tag - 1);    tag[sizeof tag - 1] = '\0';
    const char *parts[][3] = {
        { "u1_x-Y", "node-0_1", "tier-entries" },
        { "1", "a", "b" },
        { job, node, tag },
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        mpikvs_error_t err = {0};
        rc = kvshm_region_name(name, sizeof name, parts[i][0], parts[i][1],
                               parts[i][2], &err);
        assert_rc(rc, MPIKVS_OK, &err, "build round-trip name %zu", i);
        rc = kvshm_region_name_parse(name, p.job, p.node, p.tag);
        assert_rc(rc, MPIKVS_OK, NULL, "parse \"%s\"", name);
        ck_assert_msg(strcmp(p.job, parts[i][0]) == 0 &&
                      strcmp(p.node, parts[i][1]) == 0 &&
                      strcmp(p.tag, parts[i][2]) == 0,
                      "round trip of \"%s\": got %s/%s/%s", name, p.job,
                      p.node, p.tag);
    }

    char longjob[128], longnode[128], longtag[128];
    snprintf(longjob, sizeof longjob, "mpikvs.%s7.n.t", job);
    snprintf(longnode, sizeof longnode, "mpikvs.j.%sN.t", node);
    snprintf(longtag, sizeof longtag, "mpikvs.j.n.%s-", tag);
    const char *junk[] = {
        "", "mpikvs", "mpikvs.", "mpikvs.a", "mpikvs.a.b", "mpikvs.a.b.",
        "mpikvs.a.b.c.d", "mpikvs..b.c", "mpikvs.a..c", "mpikvs...",
        ".mpikvs.a.b.c", "xpikvs.a.b.c", "MPIKVS.a.b.c", "mpikvsx.a.b.c",
        "mpikvs-a.b.c", " mpikvs.a.b.c", "mpikvs.a b.c.d", "mpikvs.a.b c.d",
        "mpikvs.a/b.c.d", "/dev/shm/mpikvs.a.b.c", "mpikvs.a.b.c/",
        "mpikvs.a.b.c ", "mpikvs.a.b.c\n", "mpikvs.a.b.d*", "foo",
        longjob, longnode, longtag,
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        memset(&p, 0x5a, sizeof p);
        rc = kvshm_region_name_parse(junk[i], p.job, p.node, p.tag);
        assert_rc(rc, MPIKVS_ERR_NAME, NULL, "parse of junk \"%s\"", junk[i]);
        for (size_t g = 0; g < 8; g++)
            ck_assert_msg((uint8_t)p.g1[g] == 0x5a && (uint8_t)p.g2[g] == 0x5a
                          && (uint8_t)p.g3[g] == 0x5a,
                          "parse of \"%s\" wrote past a part buffer",
                          junk[i]);
    }
}
END_TEST

START_TEST(test_unique_id)
{
    enum { N = 64 };
    char id[N][KVSHM_JOB_MAX];

    for (int i = 0; i < N; i++) {
        memset(id[i], 0x5a, sizeof id[i]);
        kvshm_unique_id(id[i], sizeof id[i]);
        size_t len = strnlen(id[i], sizeof id[i]);
        ck_assert_msg(len >= 1 && len < KVSHM_JOB_MAX,
                      "unique id %d: length %zu, expected 1..%u", i, len,
                      KVSHM_JOB_MAX - 1);
        ck_assert_msg(id[i][0] == 'u', "unique id \"%s\" does not start "
                      "with 'u'", id[i]);
        for (size_t c = 0; c < len; c++)
            ck_assert_msg(isalnum((unsigned char)id[i][c]) ||
                          id[i][c] == '_' || id[i][c] == '-',
                          "unique id \"%s\": character %zu (0x%02x) is not "
                          "allowed in a job part", id[i], c,
                          (unsigned char)id[i][c]);
        char name[KVSHM_NAME_MAX];
        mpikvs_error_t err = {0};
        int rc = kvshm_region_name(name, sizeof name, id[i], NODE, "data",
                                   &err);
        assert_rc(rc, MPIKVS_OK, &err, "region name with unique id \"%s\"",
                  id[i]);
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(id[i], id[j]) != 0,
                          "calls %d and %d gave the same id \"%s\"", j, i,
                          id[i]);
    }
}
END_TEST

/* -------------------------------------------------------------- lifecycle */

/* Where a job's regions live: the layout's directory wins, then the
 * environment's, then /dev/shm. */
START_TEST(test_job_dir)
{
    char dir[KVSHM_DIR_MAX + 1];
    mpikvs_error_t err;

    ck_assert_int_eq(kvshm_job_dir("/run/mpikvs/mpikvs.7.n1.layout", "/tmp/x",
                                   dir, &err), MPIKVS_OK);
    ck_assert_str_eq(dir, "/run/mpikvs");
    ck_assert_int_eq(kvshm_job_dir("/mpikvs.7.n1.layout", NULL, dir, &err),
                     MPIKVS_OK);
    ck_assert_str_eq(dir, "/");
    ck_assert_int_eq(kvshm_job_dir(NULL, "/tmp/x", dir, &err), MPIKVS_OK);
    ck_assert_str_eq(dir, "/tmp/x");
    ck_assert_int_eq(kvshm_job_dir(NULL, "", dir, &err), MPIKVS_OK);
    ck_assert_str_eq(dir, KVSHM_DEFAULT_DIR);
    ck_assert_int_eq(kvshm_job_dir(NULL, NULL, dir, &err), MPIKVS_OK);
    ck_assert_str_eq(dir, KVSHM_DEFAULT_DIR);
}
END_TEST

/* A directory longer than KVSHM_DIR_MAX is refused, naming the setting,
 * never cut (issue 29: libmpikvs cut MPIKVS_SHM_DIR at 255 bytes,
 * libmpikvs-rmacache did not, so their regions went to two places). */
START_TEST(test_job_dir_too_long)
{
    char dir[KVSHM_DIR_MAX + 1], longest[KVSHM_DIR_MAX + 1],
        over[KVSHM_DIR_MAX + 2], layout[KVSHM_DIR_MAX + 40];
    mpikvs_error_t err;

    memset(longest, 'd', sizeof(longest) - 1);
    longest[0] = '/';
    longest[KVSHM_DIR_MAX] = '\0';
    ck_assert_int_eq(kvshm_job_dir(NULL, longest, dir, &err), MPIKVS_OK);
    ck_assert_str_eq(dir, longest);

    memset(over, 'd', sizeof(over) - 1);
    over[0] = '/';
    over[KVSHM_DIR_MAX + 1] = '\0';
    ck_assert_int_eq(kvshm_job_dir(NULL, over, dir, &err), MPIKVS_ERR_NAME);
    ck_assert_str_eq(dir, "");
    ck_assert_msg(strstr(err.text, "MPIKVS_SHM_DIR is 256 bytes long, more than 255"),
                  "the error does not name MPIKVS_SHM_DIR and its length: %s",
                  err.text);

    snprintf(layout, sizeof(layout), "%s/mpikvs.7.n1.layout", over);
    ck_assert_int_eq(kvshm_job_dir(layout, NULL, dir, &err), MPIKVS_ERR_NAME);
    ck_assert_msg(strstr(err.text, "the directory of MPIKVS_LAYOUT is 256 bytes"),
                  "the error does not name MPIKVS_LAYOUT: %s", err.text);
}
END_TEST

START_TEST(test_lifecycle)
{
    const uint64_t size = MiB;
    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, size);
    s.step = 7;
    char name[KVSHM_NAME_MAX], path[PATH_MAX];
    name_of(name, "data");
    path_of(path, "data");

    /* 0600 must come from the library, not from the umask. */
    umask(0);
    time_t before = time(NULL);
    struct kvshm_region *r = create_ok(&s);
    time_t after = time(NULL);

    ck_assert_msg(r->fd >= 0, "create: fd %d", r->fd);
    ck_assert_msg(r->base != NULL, "create: base is NULL");
    ck_assert_msg(r->size == size, "create: r->size %" PRIu64 ", expected %"
                  PRIu64, r->size, size);
    ck_assert_msg(r->map_len >= size, "create: map_len %" PRIu64 " < size %"
                  PRIu64, r->map_len, size);
    ck_assert_msg(r->writable, "create: region not marked writable");
    ck_assert_msg(r->path != NULL && strcmp(r->path, path) == 0,
                  "create: path \"%s\", expected \"%s\"",
                  r->path ? r->path : "(null)", path);

    struct stat st = stat_tag("data");
    ck_assert_msg(S_ISREG(st.st_mode), "region is not a regular file");
    ck_assert_msg((st.st_mode & 07777) == 0600, "default mode %04o under "
                  "umask 0, expected 0600", st.st_mode & 07777);
    ck_assert_msg((uint64_t)st.st_size == size, "file size %jd, expected %"
                  PRIu64, (intmax_t)st.st_size, size);
    ck_assert_msg((uint64_t)st.st_blocks * 512 >= size,
                  "only %jd bytes allocated of %" PRIu64 ": space not "
                  "reserved", (intmax_t)st.st_blocks * 512, size);
    ck_assert_msg(st.st_uid == geteuid() && st.st_gid == getegid(),
                  "owner %u:%u, expected the caller %u:%u", st.st_uid,
                  st.st_gid, geteuid(), getegid());

    const struct kvshm_header *h = kvshm_region_header(r);
    ck_assert_msg(memcmp(h->magic, KVSHM_MAGIC, 8) == 0, "bad magic");
    ck_assert_msg(h->format_version == KVSHM_FORMAT_VERSION,
                  "format_version %u, expected %u", h->format_version,
                  KVSHM_FORMAT_VERSION);
    ck_assert_msg(h->kind == KVSHM_KIND_DATA, "kind %u, expected %u",
                  h->kind, KVSHM_KIND_DATA);
    ck_assert_msg(h->format_id == kvshm_format_id(), "format_id %" PRIx64
                  ", expected kvshm_format_id() %" PRIx64, h->format_id,
                  kvshm_format_id());
    ck_assert_msg(h->size == size && h->max_size == size,
                  "size/max_size %" PRIu64 "/%" PRIu64 ", expected %" PRIu64
                  " for both (fixed)", h->size, h->max_size, size);
    ck_assert_msg(h->header_size == KVSHM_HEADER_SIZE, "header_size %u",
                  h->header_size);
    ck_assert_msg((h->flags & KVSHM_FLAG_GROWABLE) == 0,
                  "fixed region has the growable flag (flags %#x)", h->flags);
    ck_assert_msg(h->created >= (int64_t)before - 2 &&
                  h->created <= (int64_t)after + 2,
                  "created %" PRId64 ", expected about %jd", h->created,
                  (intmax_t)before);
    ck_assert_msg(h->uid == geteuid() && h->gid == getegid(),
                  "header uid:gid %u:%u, expected %u:%u", h->uid, h->gid,
                  geteuid(), getegid());
    ck_assert_msg(h->step == 7, "step %u, expected 7", h->step);
    ck_assert_msg(strcmp(h->job, JOB) == 0 && strcmp(h->node, NODE) == 0 &&
                  strcmp(h->tag, "data") == 0,
                  "job/node/tag %.32s/%.64s/%.32s, expected %s/%s/data",
                  h->job, h->node, h->tag, JOB, NODE);
    ck_assert_msg(h->checksum == header_sum(h), "checksum %" PRIx64
                  ", XXH3 of the header says %" PRIx64, h->checksum,
                  header_sum(h));

    /* Fresh space reads as zeros; then fill it with a pattern. */
    uint8_t *data = (uint8_t *)r->base;
    for (uint64_t i = KVSHM_HEADER_SIZE; i < size; i += 4093)
        ck_assert_msg(data[i] == 0, "new region byte %" PRIu64 " is %u",
                      i, data[i]);
    for (uint64_t i = KVSHM_HEADER_SIZE; i < size; i++)
        data[i] = pattern(i);
    kvshm_region_close(&r);
    ck_assert_msg(r == NULL, "close did not set the region to NULL");

    /* Read-only open sees the pattern and the same header. */
    struct kvshm_open_opts ro = opts_for(KVSHM_KIND_DATA, false);
    ro.expect_uid = geteuid();
    struct kvshm_region *rd = open_ok("data", &ro);
    ck_assert_msg(!rd->writable, "read-only open marked writable");
    ck_assert_msg(rd->size == size, "open: size %" PRIu64 ", expected %"
                  PRIu64, rd->size, size);
    ck_assert_msg(kvshm_region_header(rd)->step == 7 &&
                  kvshm_region_header(rd)->kind == KVSHM_KIND_DATA,
                  "open: header differs from the one created");
    data = (uint8_t *)rd->base;
    for (uint64_t i = KVSHM_HEADER_SIZE; i < size; i++)
        ck_assert_msg(data[i] == pattern(i), "byte %" PRIu64 ": expected %u,"
                      " got %u", i, pattern(i), data[i]);

    /* A writable opener's stores reach the other mapping. */
    struct kvshm_open_opts rw = opts_for(KVSHM_KIND_DATA, true);
    struct kvshm_region *wr = open_ok("data", &rw);
    ck_assert_msg(wr->writable, "writable open not marked writable");
    ((volatile uint8_t *)wr->base)[size - 1] = 0xa5;
    ck_assert_msg(((volatile uint8_t *)rd->base)[size - 1] == 0xa5,
                  "a store through the writable mapping is not seen by the "
                  "read-only one");
    kvshm_region_close(&wr);
    kvshm_region_close(&rd);

    int rc = kvshm_region_unlink(test_dir, name);
    assert_rc(rc, MPIKVS_OK, NULL, "unlink %s", name);
    ck_assert_msg(access(path, F_OK) != 0 && errno == ENOENT,
                  "%s still exists after unlink", path);
    expect_open("data", &ro, MPIKVS_ERR_NOTFOUND, "unlink");
    rc = kvshm_region_unlink(test_dir, name);
    assert_rc(rc, MPIKVS_ERR_NOTFOUND, NULL, "second unlink of %s", name);
}
END_TEST

START_TEST(test_create_exists)
{
    const uint64_t size = 64 * KiB;
    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, size);
    struct kvshm_region *r = create_ok(&s);
    for (uint64_t i = KVSHM_HEADER_SIZE; i < size; i++)
        ((uint8_t *)r->base)[i] = pattern(i);
    kvshm_region_close(&r);

    struct stat st0 = stat_tag("data");
    uint8_t *before = malloc(size), *now = malloc(size);
    ck_assert(before != NULL && now != NULL);
    int fd = open_file("data", O_RDONLY);
    ck_assert_msg(pread(fd, before, size, 0) == (ssize_t)size, "read back");
    close(fd);

    /* Same name, other size, kind and mode: must not touch the file. */
    struct kvshm_region_spec s2 = spec_for("data", KVSHM_KIND_LAYOUT,
                                           2 * size);
    s2.mode = 0644;
    for (int attempt = 0; attempt < 2; attempt++) {
        const struct kvshm_region_spec *sp = attempt ? &s2 : &s;
        mpikvs_error_t err = {0};
        r = NULL;
        int rc = kvshm_region_create(sp, &r, &err);
        assert_rc(rc, MPIKVS_ERR_EXISTS, &err, "second create of %s "
                  "(attempt %d)", sp->tag, attempt);
    }

    struct stat st1 = stat_tag("data");
    ck_assert_msg(st1.st_ino == st0.st_ino && st1.st_size == st0.st_size &&
                  st1.st_mode == st0.st_mode,
                  "existing file changed: ino %ju->%ju size %jd->%jd mode "
                  "%o->%o", (uintmax_t)st0.st_ino, (uintmax_t)st1.st_ino,
                  (intmax_t)st0.st_size, (intmax_t)st1.st_size,
                  st0.st_mode, st1.st_mode);
    fd = open_file("data", O_RDONLY);
    ck_assert_msg(pread(fd, now, size, 0) == (ssize_t)size, "read back");
    close(fd);
    ck_assert_msg(memcmp(before, now, size) == 0,
                  "a refused create changed the existing region's bytes");
    free(before);
    free(now);

    struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, false);
    struct kvshm_region *rd = open_ok("data", &o);
    kvshm_region_close(&rd);
}
END_TEST

START_TEST(test_create_invalid)
{
    struct {
        const char *what;
        struct kvshm_region_spec s;
        int want;
    } c[] = {
        { "tag with a dot", spec_for("a.b", KVSHM_KIND_DATA, 4096),
          MPIKVS_ERR_NAME },
        { "empty tag", spec_for("", KVSHM_KIND_DATA, 4096), MPIKVS_ERR_NAME },
        { "size below the header", spec_for("data", KVSHM_KIND_DATA, 100),
          MPIKVS_ERR_INVAL },
        { "size 0", spec_for("data", KVSHM_KIND_DATA, 0), MPIKVS_ERR_INVAL },
        { "kind 0", spec_for("data", 0, 4096), MPIKVS_ERR_INVAL },
        { "kind KVSHM_KIND_MAX + 1",
          spec_for("data", KVSHM_KIND_MAX + 1, 4096), MPIKVS_ERR_INVAL },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct kvshm_region *r = NULL;
        mpikvs_error_t err = {0};
        int rc = kvshm_region_create(&c[i].s, &r, &err);
        if (rc == MPIKVS_OK)
            kvshm_region_close(&r);
        assert_rc(rc, c[i].want, &err, "create with %s", c[i].what);
        ck_assert_msg(count_entries(test_dir) == 0, "create with %s left a "
                      "file behind", c[i].what);
    }

    /* A missing directory is a plain errno. */
    char missing[PATH_MAX];
    snprintf(missing, sizeof missing, "%s/no-such-dir", test_dir);
    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, 4096);
    s.dir = missing;
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_create(&s, &r, &err);
    if (rc == MPIKVS_OK)
        kvshm_region_close(&r);
    assert_rc(rc, -ENOENT, &err, "create in a missing directory");

    /* err may be NULL. */
    s = spec_for("a/b", KVSHM_KIND_DATA, 4096);
    rc = kvshm_region_create(&s, &r, NULL);
    assert_rc(rc, MPIKVS_ERR_NAME, NULL, "create, bad tag, err == NULL");
}
END_TEST

START_TEST(test_mode)
{
    /* The mode is exact whatever the umask (slurmd's may be strict). */
    const mode_t masks[] = { 022, 077 };
    const char *tags[] = { "layout", "layout2" };

    for (int i = 0; i < 2; i++) {
        umask(masks[i]);
        struct kvshm_region_spec s = spec_for(tags[i], KVSHM_KIND_LAYOUT,
                                              8 * KiB);
        s.mode = 0640;
        struct kvshm_region *r = create_ok(&s);
        kvshm_region_close(&r);
        struct stat st = stat_tag(tags[i]);
        ck_assert_msg((st.st_mode & 07777) == 0640, "spec.mode 0640 under "
                      "umask %03o: file has mode %04o", masks[i],
                      st.st_mode & 07777);
    }
}
END_TEST

START_TEST(test_readonly_fault)
{
    make_region("data", KVSHM_KIND_DATA, 64 * KiB, 0);
    struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, false);
    struct kvshm_region *r = open_ok("data", &o);

    /* A store into the header and one into the data must both fault. */
    const uint64_t where[] = { 0, KVSHM_HEADER_SIZE + 100 };
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
            struct rlimit nocore = { 0, 0 };
            setrlimit(RLIMIT_CORE, &nocore);
            signal(SIGSEGV, SIG_DFL);
            ((volatile uint8_t *)r->base)[where[i]] = 0x42;
            _exit(0);
        }
        int status;
        ck_assert_msg(waitpid(pid, &status, 0) == pid, "waitpid: %s",
                      strerror(errno));
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
                      "store at offset %" PRIu64 " into a read-only region: "
                      "expected SIGSEGV, child %s %d", where[i],
                      WIFSIGNALED(status) ? "died of signal" : "exited with",
                      WIFSIGNALED(status) ? WTERMSIG(status)
                                          : WEXITSTATUS(status));
    }
    ck_assert_msg(((uint8_t *)r->base)[KVSHM_HEADER_SIZE + 100] == 0,
                  "a store through a read-only mapping reached the region");
    kvshm_region_close(&r);
    expect_open("data", &o, MPIKVS_OK, "the faulting stores");
}
END_TEST

START_TEST(test_symlink)
{
    /* /dev/shm is world-writable: a link planted under a region's name
     * must neither be written through nor be taken for the region. */
    char path[PATH_MAX], victim[PATH_MAX], sub[256], real[PATH_MAX];
    char name[KVSHM_NAME_MAX];
    path_of(path, "data");
    name_of(name, "data");
    snprintf(victim, sizeof victim, "%s/victim", test_dir);

    int fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_msg(fd >= 0 && write(fd, "precious", 8) == 8, "victim file");
    close(fd);
    ck_assert_msg(symlink(victim, path) == 0, "symlink: %s", strerror(errno));

    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, 64 * KiB);
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_create(&s, &r, &err);
    if (rc == MPIKVS_OK)
        kvshm_region_close(&r);
    assert_rc(rc, MPIKVS_ERR_EXISTS, &err, "create over a planted symlink");
    struct stat st;
    ck_assert_msg(stat(victim, &st) == 0 && st.st_size == 8,
                  "create through a symlink changed its target");
    ck_assert_msg(lstat(path, &st) == 0 && S_ISLNK(st.st_mode),
                  "a refused create removed a link it did not make");
    ck_assert(unlink(path) == 0);

    /* A link to a valid region of the same name elsewhere. */
    snprintf(sub, sizeof sub, "%s/sub", test_dir);
    ck_assert(mkdir(sub, 0700) == 0);
    s.dir = sub;
    r = create_ok(&s);
    kvshm_region_close(&r);
    snprintf(real, sizeof real, "%s/%s", sub, name);
    ck_assert_msg(symlink(real, path) == 0, "symlink: %s", strerror(errno));
    struct kvshm_open_opts o = opts_for(0, false);
    memset(&err, 0, sizeof err);
    rc = kvshm_region_open(test_dir, name, &o, &r, &err);
    if (rc == MPIKVS_OK)
        kvshm_region_close(&r);
    ck_assert_msg(rc < 0, "open followed a symlink to a region: got %d (%s)",
                  rc, rcname(rc));
    /* Which code is not specified; that it is explained is. */
    assert_rc(rc, rc, &err, "open of a symlink (err.code and text)");
}
END_TEST

/* --------------------------------------------------------------- growable */

/* Counts the held files named like region "data"; each must be held by
 * this process. */
static int count_held(const struct kvshm_held *h, void *arg)
{
    char want[KVSHM_NAME_MAX];

    name_of(want, "data");
    if (strcmp(h->name, want) == 0) {
        ck_assert_int_eq(h->pid, getpid());
        (*(int *)arg)++;
    }
    return 0;
}

/* A region whose name is gone: opened only through a holder, found once
 * however many descriptors hold it, and gone with the last one. */
START_TEST(test_held)
{
    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, 64 * KiB);
    struct kvshm_region *made = create_ok(&s), *other, *r;
    struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, false), held;
    char name[KVSHM_NAME_MAX], path[PATH_MAX], real[PATH_MAX],
        proc[64], link[PATH_MAX];
    ssize_t len;
    int n = 0;

    /* the creator holds it through its name, not the O_TMPFILE it was
     * made as, whose link would read "DIR/#INODE (deleted)" */
    path_of(path, "data");
    ck_assert_msg(realpath(path, real) != NULL, "realpath %s", path);
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", made->fd);
    len = readlink(proc, link, sizeof link - 1);
    ck_assert_msg(len > 0, "readlink %s: %s", proc, strerror(errno));
    link[len] = '\0';
    ck_assert_str_eq(link, real);

    other = open_ok("data", &o);
    name_of(name, "data");
    ck_assert_int_eq(kvshm_region_unlink(test_dir, name), MPIKVS_OK);
    expect_open("data", &o, MPIKVS_ERR_NOTFOUND, "its name unlinked");
    held = o;
    held.held = true;
    r = open_ok("data", &held);
    ck_assert_msg(memcmp(r->base, made->base, KVSHM_HEADER_SIZE) == 0,
                  "the held region is not the one made");
    kvshm_region_close(&r);
    ck_assert_int_eq(kvshm_held_scan(test_dir, count_held, &n), 0);
    ck_assert_msg(n == 1, "two descriptors of one file: found %d times", n);

    kvshm_region_close(&other);
    kvshm_region_close(&made);
    n = 0;
    ck_assert_int_eq(kvshm_held_scan(test_dir, count_held, &n), 0);
    ck_assert_msg(n == 0, "found %d times after the last holder closed", n);
    expect_open("data", &held, MPIKVS_ERR_NOTFOUND, "no holder left");
}
END_TEST

START_TEST(test_grow)
{
    const uint64_t size = 64 * KiB, max = MiB, grown = 256 * KiB;
    struct kvshm_region_spec s = spec_for("tier-entries",
                                          KVSHM_KIND_TIER_ENTRIES, size);
    s.max_size = max;
    struct kvshm_region *w = create_ok(&s);
    const struct kvshm_header *h = kvshm_region_header(w);

    ck_assert_msg(h->flags & KVSHM_FLAG_GROWABLE, "growable region lacks "
                  "KVSHM_FLAG_GROWABLE (flags %#x)", h->flags);
    ck_assert_msg(h->size == size && h->max_size == max,
                  "header size/max_size %" PRIu64 "/%" PRIu64 ", expected %"
                  PRIu64 "/%" PRIu64, h->size, h->max_size, size, max);
    ck_assert_msg(w->map_len >= max, "growable region mapped %" PRIu64
                  " bytes, less than max_size %" PRIu64, w->map_len, max);

    /* A reader from before the growth. */
    struct kvshm_open_opts o = opts_for(KVSHM_KIND_TIER_ENTRIES, false);
    struct kvshm_region *rd = open_ok("tier-entries", &o);
    ck_assert_msg(rd->size == size, "reader size %" PRIu64 ", expected %"
                  PRIu64, rd->size, size);
    ck_assert_msg(rd->map_len >= max, "reader mapped %" PRIu64 " bytes, "
                  "less than max_size %" PRIu64, rd->map_len, max);

    void *base = w->base;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_grow(w, grown, &err);
    assert_rc(rc, MPIKVS_OK, &err, "grow %" PRIu64 " -> %" PRIu64, size,
              grown);
    ck_assert_msg(w->base == base, "grow moved the mapping");
    ck_assert_msg(w->size == grown, "after grow: r->size %" PRIu64
                  ", expected %" PRIu64, w->size, grown);
    struct stat st = stat_tag("tier-entries");
    ck_assert_msg((uint64_t)st.st_size == grown, "after grow: file size %jd,"
                  " expected %" PRIu64, (intmax_t)st.st_size, grown);
    ck_assert_msg((uint64_t)st.st_blocks * 512 >= grown, "after grow: only "
                  "%jd bytes allocated", (intmax_t)st.st_blocks * 512);

    /* Store at the very end of the new part, through the old mapping. */
    uint8_t *wb = (uint8_t *)w->base;
    for (uint64_t i = grown - 4096; i < grown; i++)
        wb[i] = pattern(i);

    rc = kvshm_region_refresh(rd);
    assert_rc(rc, MPIKVS_OK, NULL, "refresh of a reader after grow");
    ck_assert_msg(rd->size == grown, "reader after refresh: size %" PRIu64
                  ", expected %" PRIu64, rd->size, grown);
    const uint8_t *rb = (const uint8_t *)rd->base;
    for (uint64_t i = grown - 4096; i < grown; i++)
        ck_assert_msg(rb[i] == pattern(i), "reader byte %" PRIu64
                      ": expected %u, got %u", i, pattern(i), rb[i]);

    /* A new opener accepts a file grown past its creation size. */
    struct kvshm_region *rd2 = open_ok("tier-entries", &o);
    ck_assert_msg(rd2->size == grown, "new opener size %" PRIu64
                  ", expected %" PRIu64, rd2->size, grown);
    ck_assert_msg(((uint8_t *)rd2->base)[grown - 1] == pattern(grown - 1),
                  "new opener does not see the grown part");
    kvshm_region_close(&rd2);

    /* Beyond max_size: FULL, nothing changes. */
    memset(&err, 0, sizeof err);
    rc = kvshm_region_grow(w, 2 * max, &err);
    assert_rc(rc, MPIKVS_ERR_FULL, &err, "grow beyond max_size");
    ck_assert_msg(w->size == grown, "failed grow changed r->size to %" PRIu64
                  ", expected %" PRIu64, w->size, grown);
    st = stat_tag("tier-entries");
    ck_assert_msg((uint64_t)st.st_size == grown, "failed grow changed the "
                  "file size to %jd, expected %" PRIu64,
                  (intmax_t)st.st_size, grown);

    /* Exactly max_size is allowed, and its last byte is usable. */
    memset(&err, 0, sizeof err);
    rc = kvshm_region_grow(w, max, &err);
    assert_rc(rc, MPIKVS_OK, &err, "grow to exactly max_size");
    ((volatile uint8_t *)w->base)[max - 1] = 0x3c;
    rc = kvshm_region_refresh(rd);
    assert_rc(rc, MPIKVS_OK, NULL, "second refresh");
    ck_assert_msg(rd->size == max && ((uint8_t *)rd->base)[max - 1] == 0x3c,
                  "reader at max_size: size %" PRIu64 ", last byte %u",
                  rd->size, ((uint8_t *)rd->base)[max - 1]);
    memset(&err, 0, sizeof err);
    rc = kvshm_region_grow(w, max + 1, &err);
    assert_rc(rc, MPIKVS_ERR_FULL, &err, "grow to max_size + 1");

    kvshm_region_close(&rd);
    kvshm_region_close(&w);

    /* Growing a fixed region, or through a read-only mapping, is a misuse:
     * FULL (max_size is the size) or INVAL, and the file keeps its size. */
    s = spec_for("data", KVSHM_KIND_DATA, size);
    w = create_ok(&s);
    rd = open_ok("tier-entries", &o);
    struct kvshm_region *misuse[2] = { w, rd };
    const char *what[2] = { "fixed region", "read-only opener" };
    const char *tag[2] = { "data", "tier-entries" };
    for (int i = 0; i < 2; i++) {
        uint64_t was = misuse[i]->size;
        memset(&err, 0, sizeof err);
        rc = kvshm_region_grow(misuse[i], was * 2, &err);
        assert_rc(rc, rc == MPIKVS_ERR_INVAL ? MPIKVS_ERR_INVAL
                                             : MPIKVS_ERR_FULL, &err,
                  "grow of a %s (FULL or INVAL expected)", what[i]);
        ck_assert_msg(misuse[i]->size == was &&
                      (uint64_t)stat_tag(tag[i]).st_size == was,
                      "refused grow of a %s changed its size", what[i]);
    }
    kvshm_region_close(&rd);
    kvshm_region_close(&w);
}
END_TEST

/* ------------------------------------------------------------------ owner */

START_TEST(test_owner_for_user)
{
    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, 64 * KiB);
    s.uid = NOBODY;
    s.gid = NOGROUP;
    struct kvshm_region *r = create_ok(&s);
    const struct kvshm_header *h = kvshm_region_header(r);
    ck_assert_msg(h->uid == NOBODY && h->gid == NOGROUP, "header uid:gid "
                  "%u:%u, expected 65534:65534", h->uid, h->gid);
    kvshm_region_close(&r);

    struct stat st = stat_tag("data");
    ck_assert_msg(st.st_uid == NOBODY && st.st_gid == NOGROUP,
                  "file owner %u:%u, expected 65534:65534", st.st_uid,
                  st.st_gid);
    ck_assert_msg((st.st_mode & 07777) == 0600, "mode %04o, expected 0600",
                  st.st_mode & 07777);

    /* 0 is root, not "any". */
    struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, false);
    o.expect_uid = 0;
    struct kvshm_region *rr;
    mpikvs_error_t err;
    int rc = try_open("data", &o, &rr, &err);
    if (rc == MPIKVS_OK)
        kvshm_region_close(&rr);
    assert_rc(rc, MPIKVS_ERR_OWNER, &err, "open of a uid 65534 region "
              "with expect_uid 0");
    ck_assert_msg(has_number(err.text, NOBODY) && has_number(err.text, 0),
                  "owner error text should name both uids (65534 and 0): "
                  "\"%.511s\"", err.text);

    o.expect_uid = NOBODY;
    expect_open("data", &o, MPIKVS_OK, "creation for uid 65534, "
                "expect_uid 65534");
    o.expect_uid = KVSHM_ANY_UID;
    expect_open("data", &o, MPIKVS_OK, "creation for uid 65534, "
                "expect_uid KVSHM_ANY_UID");

    /* And the other way round: a root region refused to a user. */
    make_region("root", KVSHM_KIND_DATA, 8 * KiB, 0);
    o.expect_uid = 0;
    expect_open("root", &o, MPIKVS_OK, "creation by root, expect_uid 0");
    o.expect_uid = NOBODY;
    expect_open("root", &o, MPIKVS_ERR_OWNER, "creation by root, "
                "expect_uid 65534");
}
END_TEST

/* Open tag as uid/gid 65534 in a child; return what the open returned. */
static int open_as_nobody(const char *tag, bool writable)
{
    char name[KVSHM_NAME_MAX];
    int pfd[2];
    name_of(name, tag);
    ck_assert_msg(pipe(pfd) == 0, "pipe: %s", strerror(errno));

    pid_t pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int rc = INT_MIN;       /* "could not drop privileges" */
        close(pfd[0]);
        if (setgroups(0, NULL) == 0 && setgid(NOGROUP) == 0 &&
            setuid(NOBODY) == 0) {
            struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, writable);
            struct kvshm_region *r = NULL;
            mpikvs_error_t err = {0};
            rc = kvshm_region_open(test_dir, name, &o, &r, &err);
            if (rc == MPIKVS_OK)
                kvshm_region_close(&r);
        }
        ssize_t n = write(pfd[1], &rc, sizeof rc);
        _exit(n == sizeof rc ? 0 : 1);
    }
    close(pfd[1]);
    int rc = INT_MAX, status;
    ssize_t n = read(pfd[0], &rc, sizeof rc);
    close(pfd[0]);
    waitpid(pid, &status, 0);
    ck_assert_msg(n == sizeof rc && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0,
                  "child opening %s as uid 65534 did not report (status %#x)",
                  tag, status);
    ck_assert_msg(rc != INT_MIN, "child could not become uid 65534");
    return rc;
}

START_TEST(test_owner_eacces)
{
    /* Let uid 65534 reach the files, so only their mode decides. */
    ck_assert_msg(chmod(run_dir, 0711) == 0 && chmod(test_dir, 0711) == 0,
                  "chmod test directories: %s", strerror(errno));

    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);    /* root, 0600 */
    struct kvshm_region_spec s = spec_for("mine", KVSHM_KIND_DATA, 8 * KiB);
    s.uid = NOBODY;
    s.gid = NOGROUP;
    struct kvshm_region *r = create_ok(&s);
    kvshm_region_close(&r);

    for (int writable = 0; writable < 2; writable++) {
        int rc = open_as_nobody("data", writable);
        assert_rc(rc, -EACCES, NULL, "uid 65534 opening a root-owned 0600 "
                  "region %s", writable ? "writable" : "read-only");
        rc = open_as_nobody("mine", writable);
        assert_rc(rc, MPIKVS_OK, NULL, "uid 65534 opening its own region "
                  "%s", writable ? "writable" : "read-only");
    }
}
END_TEST

/* ------------------------------------------------------------- corruption */

static const char *field_at(size_t off)
{
    static const struct { size_t off; const char *name; } f[] = {
        { offsetof(struct kvshm_header, magic), "magic" },
        { offsetof(struct kvshm_header, format_version), "format_version" },
        { offsetof(struct kvshm_header, kind), "kind" },
        { offsetof(struct kvshm_header, format_id), "format_id" },
        { offsetof(struct kvshm_header, size), "size" },
        { offsetof(struct kvshm_header, max_size), "max_size" },
        { offsetof(struct kvshm_header, header_size), "header_size" },
        { offsetof(struct kvshm_header, flags), "flags" },
        { offsetof(struct kvshm_header, created), "created" },
        { offsetof(struct kvshm_header, uid), "uid" },
        { offsetof(struct kvshm_header, gid), "gid" },
        { offsetof(struct kvshm_header, step), "step" },
        { offsetof(struct kvshm_header, reserved0), "reserved0" },
        { offsetof(struct kvshm_header, job), "job" },
        { offsetof(struct kvshm_header, node), "node" },
        { offsetof(struct kvshm_header, tag), "tag" },
        { offsetof(struct kvshm_header, reserved), "reserved" },
        { offsetof(struct kvshm_header, checksum), "checksum" },
    };
    const char *name = "?";
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].off <= off)
            name = f[i].name;
    return name;
}

START_TEST(test_bad_magic)
{
    struct kvshm_open_opts o = opts_for(0, false);
    struct kvshm_header h;

    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);
    read_header("data", &h);
    h.magic[0] ^= 0x20;                 /* "MPIKVSrg" -> "mPIKVSrg" */
    write_header("data", &h, false);
    expect_open("data", &o, MPIKVS_ERR_FOREIGN, "magic byte 0 changed");
    write_header("data", &h, true);
    expect_open("data", &o, MPIKVS_ERR_FOREIGN, "magic byte 0 changed, "
                "checksum fixed");
    memset(h.magic, 0, sizeof h.magic);
    write_header("data", &h, true);
    expect_open("data", &o, MPIKVS_ERR_FOREIGN, "magic zeroed");
}
END_TEST

START_TEST(test_foreign_files)
{
    struct kvshm_open_opts o = opts_for(0, false);
    static uint8_t buf[64 * 1024];
    uint64_t seed = 0x9e3779b97f4a7c15u;

    for (size_t i = 0; i < sizeof buf; i += 8) {
        uint64_t v = xorshift(&seed);
        memcpy(buf + i, &v, 8);
    }
    write_file("random", buf, sizeof buf);
    expect_open("random", &o, MPIKVS_ERR_FOREIGN, "a file of 64 KiB of "
                "random bytes");

    memset(buf, 0, sizeof buf);
    write_file("zeros", buf, 4096);
    expect_open("zeros", &o, MPIKVS_ERR_FOREIGN, "a file of 4096 zeros");

    memset(buf, 'x', 4096);
    memcpy(buf, "#!/bin/sh\necho hello\n", 21);
    write_file("script", buf, 4096);
    expect_open("script", &o, MPIKVS_ERR_FOREIGN, "a text file");
}
END_TEST

START_TEST(test_truncated_files)
{
    struct kvshm_open_opts o = opts_for(0, false);
    struct kvshm_header h;

    write_file("empty", "", 0);
    expect_open("empty", &o, MPIKVS_ERR_TRUNCATED, "an empty file");

    /* The start of a real header, cut short. */
    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);
    read_header("data", &h);
    write_file("short100", &h, 100);
    expect_open("short100", &o, MPIKVS_ERR_TRUNCATED, "a file of the first "
                "100 header bytes");
    write_file("short255", &h, KVSHM_HEADER_SIZE - 1);
    expect_open("short255", &o, MPIKVS_ERR_TRUNCATED, "a file of the first "
                "255 header bytes");
    write_file("short16", &h, 16);
    expect_open("short16", &o, MPIKVS_ERR_TRUNCATED, "a file of magic and "
                "version only");
}
END_TEST

START_TEST(test_version)
{
    struct kvshm_open_opts o = opts_for(0, false);
    struct kvshm_header h, orig;

    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);
    read_header("data", &orig);

    h = orig;
    h.format_version = KVSHM_FORMAT_VERSION + 1;
    write_header("data", &h, true);
    struct kvshm_region *r;
    mpikvs_error_t err;
    int rc = try_open("data", &o, &r, &err);
    if (rc == MPIKVS_OK)
        kvshm_region_close(&r);
    assert_rc(rc, MPIKVS_ERR_VERSION, &err, "format_version + 1, checksum "
              "fixed");
    ck_assert_msg(has_number(err.text, KVSHM_FORMAT_VERSION + 1),
                  "version error text should say which version it found "
                  "(%u): \"%.511s\"", KVSHM_FORMAT_VERSION + 1, err.text);

    /* A newer writer may checksum differently: the version comes first. */
    h.checksum ^= 0xdeadbeef;
    write_header("data", &h, false);
    expect_open("data", &o, MPIKVS_ERR_VERSION, "format_version + 1, "
                "checksum not matching");

    h = orig;
    h.format_version = 0;
    write_header("data", &h, true);
    expect_open("data", &o, MPIKVS_ERR_VERSION, "format_version 0");

    h = orig;
    h.format_id ^= 1;
    write_header("data", &h, true);
    expect_open("data", &o, MPIKVS_ERR_VERSION, "format_id changed, "
                "checksum fixed");

    write_header("data", &orig, false);
    expect_open("data", &o, MPIKVS_OK, "restoring the header");
}
END_TEST

START_TEST(test_bit_flips)
{
    struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, false);
    o.expect_uid = geteuid();
    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);
    int fd = open_file("data", O_RDWR);

    for (size_t off = 0; off < KVSHM_HEADER_SIZE; off++) {
        uint8_t byte, flipped;
        ck_assert(pread(fd, &byte, 1, (off_t)off) == 1);
        flipped = byte ^ (uint8_t)(1u << (off % 8));
        ck_assert(pwrite(fd, &flipped, 1, (off_t)off) == 1);

        struct kvshm_region *r;
        mpikvs_error_t err;
        int rc = try_open("data", &o, &r, &err);
        if (rc == MPIKVS_OK)
            kvshm_region_close(&r);
        if (off < offsetof(struct kvshm_header, format_version)) {
            assert_rc(rc, MPIKVS_ERR_FOREIGN, &err, "bit %zu of byte %zu "
                      "(%s) flipped", off % 8, off, field_at(off));
        } else if (off < offsetof(struct kvshm_header, size)) {
            /* Version and layout are checked before the checksum, since
             * another format may checksum other bytes: either is right. */
            if (rc != MPIKVS_ERR_CORRUPT)
                assert_rc(rc, MPIKVS_ERR_VERSION, &err, "bit %zu of byte "
                          "%zu (%s) flipped (VERSION or CORRUPT expected)",
                          off % 8, off, field_at(off));
            else
                assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "bit flip in %s",
                          field_at(off));
        } else {
            assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "bit %zu of byte %zu "
                      "(%s) flipped, checksum not fixed", off % 8, off,
                      field_at(off));
        }
        ck_assert(pwrite(fd, &byte, 1, (off_t)off) == 1);
    }
    close(fd);
    expect_open("data", &o, MPIKVS_OK, "all bits restored");
}
END_TEST

START_TEST(test_kind)
{
    struct kvshm_header h, orig;
    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);
    read_header("data", &orig);

    struct kvshm_open_opts any = opts_for(0, false);
    struct kvshm_open_opts want_data = opts_for(KVSHM_KIND_DATA, false);
    struct kvshm_open_opts want_layout = opts_for(KVSHM_KIND_LAYOUT, false);

    expect_open("data", &want_layout, MPIKVS_ERR_KIND, "nothing (data "
                "region opened as layout)");

    const uint32_t unknown[] = { 0, KVSHM_KIND_MAX + 1, 0x100, UINT32_MAX };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        h = orig;
        h.kind = unknown[i];
        write_header("data", &h, true);
        expect_open("data", &any, MPIKVS_ERR_CORRUPT, "kind set to unknown "
                    "%u, checksum fixed", unknown[i]);
    }

    h = orig;
    h.kind = KVSHM_KIND_LAYOUT;
    write_header("data", &h, true);
    expect_open("data", &want_data, MPIKVS_ERR_KIND, "kind data -> layout, "
                "checksum fixed, opts.kind data");
    expect_open("data", &any, MPIKVS_OK, "kind data -> layout, opts.kind 0");
    expect_open("data", &want_layout, MPIKVS_OK, "kind data -> layout, "
                "opts.kind layout");

    h = orig;
    h.kind = KVSHM_KIND_RMA_WINDOW;
    write_header("data", &h, true);
    {
        struct kvshm_region *r;
        mpikvs_error_t err;
        assert_rc(try_open("data", &want_data, &r, &err), MPIKVS_ERR_KIND,
                  &err, "rmacache window opened as data");
        ck_assert_msg(strstr(err.text, "is a rmacache region, expected a "
                                       "data region") != NULL,
                      "the refusal misnames the rmacache window: %s",
                      err.text);
    }

    /* Every kind is named in the refusal, the rmacache window's too (its
     * name comes from the one kind table, region_name.c). */
    for (uint32_t kind = 1; kind <= KVSHM_KIND_MAX; kind++) {
        struct kvshm_region *r;
        mpikvs_error_t err;
        char want[64];

        h = orig;
        h.kind = kind == KVSHM_KIND_DATA ? KVSHM_KIND_LAYOUT : kind;
        write_header("data", &h, true);
        int rc = try_open("data", &want_data, &r, &err);
        assert_rc(rc, MPIKVS_ERR_KIND, &err, "kind %u opened as data", kind);
        snprintf(want, sizeof want, "is a %s region, expected a data region",
                 kvshm_kind_name(h.kind));
        ck_assert_msg(strstr(err.text, want) != NULL,
                      "kind %u: message '%s' lacks '%s'", kind, err.text,
                      want);
        ck_assert_msg(strcmp(kvshm_kind_name(h.kind), "unknown") != 0,
                      "kind %u has no name", h.kind);
    }
}
END_TEST

START_TEST(test_size_field)
{
    struct kvshm_open_opts o = opts_for(0, false);
    struct kvshm_header h, orig;
    const uint64_t size = 64 * KiB;

    make_region("data", KVSHM_KIND_DATA, size, 0);
    read_header("data", &orig);

    /* The header claims more than the file has. */
    h = orig;
    h.size = h.max_size = 2 * size;
    write_header("data", &h, true);
    expect_open("data", &o, MPIKVS_ERR_TRUNCATED, "fixed region's size and "
                "max_size set to twice the file size, checksum fixed");

    /* The file has more than a fixed region's header allows. */
    h = orig;
    h.size = h.max_size = size / 2;
    write_header("data", &h, true);
    expect_open("data", &o, MPIKVS_ERR_SIZE, "fixed region's size and "
                "max_size set to half the file size, checksum fixed");

    /* Growable: header size beyond the file. */
    make_region("entries", KVSHM_KIND_TIER_ENTRIES, size, 4 * size);
    read_header("entries", &orig);
    h = orig;
    h.size = 2 * size;
    write_header("entries", &h, true);
    expect_open("entries", &o, MPIKVS_ERR_TRUNCATED, "growable region's "
                "size set to twice the file size, checksum fixed");

    /* A header size that is not what this format writes. */
    make_region("hsize", KVSHM_KIND_DATA, size, 0);
    read_header("hsize", &h);
    h.header_size = 128;
    write_header("hsize", &h, true);
    expect_open("hsize", &o, MPIKVS_ERR_CORRUPT, "header_size 128, "
                "checksum fixed");
}
END_TEST

START_TEST(test_file_resized)
{
    struct kvshm_open_opts o = opts_for(0, false);
    const uint64_t size = 64 * KiB;

    make_region("data", KVSHM_KIND_DATA, size, 0);
    const uint64_t shorter[] = { size - 1, size / 2, KVSHM_HEADER_SIZE,
                                 KVSHM_HEADER_SIZE - 1, 8, 0 };
    for (size_t i = 0; i < sizeof shorter / sizeof shorter[0]; i++) {
        resize_file("data", shorter[i]);
        expect_open("data", &o, MPIKVS_ERR_TRUNCATED, "ftruncate of a %"
                    PRIu64 "-byte region to %" PRIu64, size, shorter[i]);
    }

    make_region("fixed", KVSHM_KIND_DATA, size, 0);
    resize_file("fixed", size + 1);
    expect_open("fixed", &o, MPIKVS_ERR_SIZE, "fixed region extended by "
                "one byte");
    resize_file("fixed", 2 * size);
    expect_open("fixed", &o, MPIKVS_ERR_SIZE, "fixed region extended to "
                "twice its size");

    /* Growable: any size from size to max_size is fine, nothing else. */
    make_region("entries", KVSHM_KIND_TIER_ENTRIES, size, 4 * size);
    resize_file("entries", 2 * size);
    expect_open("entries", &o, MPIKVS_OK, "growable region extended within "
                "max_size");
    resize_file("entries", 4 * size);
    expect_open("entries", &o, MPIKVS_OK, "growable region extended to "
                "max_size");
    resize_file("entries", 4 * size + 4096);
    expect_open("entries", &o, MPIKVS_ERR_SIZE, "growable region extended "
                "beyond max_size");
    resize_file("entries", size / 2);
    expect_open("entries", &o, MPIKVS_ERR_TRUNCATED, "growable region cut "
                "below its creation size");
}
END_TEST

START_TEST(test_renamed)
{
    struct kvshm_open_opts o = opts_for(0, false);
    char from[PATH_MAX], to[PATH_MAX];

    make_region("data", KVSHM_KIND_DATA, 8 * KiB, 0);
    path_of(from, "data");
    path_of(to, "other");
    ck_assert_msg(rename(from, to) == 0, "rename: %s", strerror(errno));
    expect_open("other", &o, MPIKVS_ERR_CORRUPT, "renaming mpikvs.%s.%s.data"
                " to tag \"other\"", JOB, NODE);

    /* Another job or node in the name. */
    const char *names[] = { "mpikvs.4243.n001.other", "mpikvs.4242.n002.other"
    };
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", test_dir, names[i]);
        ck_assert_msg(rename(to, path) == 0, "rename: %s", strerror(errno));
        struct kvshm_region *r = NULL;
        mpikvs_error_t err = {0};
        int rc = kvshm_region_open(test_dir, names[i], &o, &r, &err);
        if (rc == MPIKVS_OK)
            kvshm_region_close(&r);
        assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "region of %s.%s.other "
                  "renamed to %s", JOB, NODE, names[i]);
        ck_assert(rename(path, to) == 0);
    }
}
END_TEST

START_TEST(test_header_check)
{
    struct kvshm_open_opts o = opts_for(KVSHM_KIND_DATA, false);
    struct kvshm_header h, orig;
    char name[KVSHM_NAME_MAX], other[KVSHM_NAME_MAX];
    const uint64_t size = 8 * KiB;
    mpikvs_error_t err = {0};

    make_region("data", KVSHM_KIND_DATA, size, 0);
    read_header("data", &orig);
    name_of(name, "data");
    name_of(other, "other");

    int rc = kvshm_header_check(&orig, size, geteuid(), name, &o, &err);
    assert_rc(rc, MPIKVS_OK, &err, "header_check of a fresh header");
    rc = kvshm_header_check(&orig, size, geteuid(), NULL, &o, &err);
    assert_rc(rc, MPIKVS_OK, &err, "header_check without a name");

    memset(&err, 0, sizeof err);
    rc = kvshm_header_check(&orig, size, geteuid(), other, &o, &err);
    assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "header_check against another "
              "name");

    memset(&err, 0, sizeof err);
    rc = kvshm_header_check(&orig, size - 1, geteuid(), name, &o, &err);
    assert_rc(rc, MPIKVS_ERR_TRUNCATED, &err, "header_check with a file one "
              "byte short");

    memset(&err, 0, sizeof err);
    rc = kvshm_header_check(&orig, size + 8, geteuid(), name, &o, &err);
    assert_rc(rc, MPIKVS_ERR_SIZE, &err, "header_check with a file 8 bytes "
              "too long");

    h = orig;
    h.reserved[3] = 1;
    memset(&err, 0, sizeof err);
    rc = kvshm_header_check(&h, size, geteuid(), name, &o, &err);
    assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "header_check, reserved byte "
              "changed, checksum not fixed");
}
END_TEST

/* ------------------------------------------------------------ reservation */

START_TEST(test_reservation)
{
    const uint64_t big = 16 * MiB;
    struct kvshm_region_spec s = spec_for("data", KVSHM_KIND_DATA, big);
    s.dir = tmpfs_dir;
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};

    int rc = kvshm_region_create(&s, &r, &err);
    if (rc == MPIKVS_OK)
        kvshm_region_close(&r);
    assert_rc(rc, MPIKVS_ERR_NOSPACE, &err, "create of 16 MiB on a 1 MiB "
              "tmpfs");
    ck_assert_msg(strstr(err.text, "cannot reserve") != NULL &&
                  strstr(err.text, "free") != NULL,
                  "NOSPACE text should say it \"cannot reserve\" and what "
                  "is \"free\": \"%.511s\"", err.text);
    ck_assert_msg(count_entries(tmpfs_dir) == 0, "a failed create left %d "
                  "file(s) in %s", count_entries(tmpfs_dir), tmpfs_dir);

    /* The mount itself works: a small region fits. */
    s.size = 256 * KiB;
    s.max_size = big;
    r = create_ok(&s);

    /* Growth that does not fit fails and keeps the size. */
    memset(&err, 0, sizeof err);
    rc = kvshm_region_grow(r, big, &err);
    assert_rc(rc, MPIKVS_ERR_NOSPACE, &err, "grow to 16 MiB on a 1 MiB "
              "tmpfs");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", r->path);
    struct stat st;
    ck_assert(stat(path, &st) == 0);
    ck_assert_msg(r->size == s.size && (uint64_t)st.st_size == s.size,
                  "failed grow: r->size %" PRIu64 ", file %jd, expected %"
                  PRIu64, r->size, (intmax_t)st.st_size, s.size);
    kvshm_region_close(&r);

    char name[KVSHM_NAME_MAX];
    name_of(name, "data");
    rc = kvshm_region_unlink(tmpfs_dir, name);
    assert_rc(rc, MPIKVS_OK, NULL, "unlink on the tmpfs");
    ck_assert_msg(count_entries(tmpfs_dir) == 0, "tmpfs not empty at end");
}
END_TEST

/* --------------------------------------------------------------- strerror */

START_TEST(test_strerror)
{
    for (int a = MPIKVS_ERR_LAST; a <= MPIKVS_ERR_FIRST; a++) {
        const char *ta = mpikvs_strerror(a);
        ck_assert_msg(ta != NULL && ta[0] != '\0', "code %d has no text", a);
        for (int b = MPIKVS_ERR_LAST; b < a; b++)
            ck_assert_msg(strcmp(ta, mpikvs_strerror(b)) != 0,
                          "codes %d and %d share the text \"%s\"", a, b, ta);
    }

    const int errnos[] = { ENOENT, EACCES, ENOMEM, ENOSPC };
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++) {
        char want[256];
        snprintf(want, sizeof want, "%s", strerror(errnos[i]));
        const char *got = mpikvs_strerror(-errnos[i]);
        ck_assert_msg(got != NULL && strcmp(got, want) == 0,
                      "mpikvs_strerror(-%d): expected \"%s\", got \"%s\"",
                      errnos[i], want, got ? got : "(null)");
    }

    const char *ok = mpikvs_strerror(MPIKVS_OK);
    const char *miss = mpikvs_strerror(MPIKVS_MISS);
    ck_assert_msg(ok != NULL && ok[0] != '\0', "MPIKVS_OK has no text");
    ck_assert_msg(miss != NULL && miss[0] != '\0', "MPIKVS_MISS has no "
                  "text");
    ck_assert_msg(strcmp(ok, miss) != 0, "OK and MISS share \"%s\"", ok);

    /* Codes no one defined still get some text. */
    const int odd[] = { 2, 1000, MPIKVS_ERR_LAST - 1, MPIKVS_ERR_FIRST + 1 };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        const char *t = mpikvs_strerror(odd[i]);
        ck_assert_msg(t != NULL && t[0] != '\0', "code %d has no text",
                      odd[i]);
    }
}
END_TEST

/* ------------------------------------------------------ data control block */

/* Data regions as the plugin and the library make them: kvshm_data_init
 * fills the control block before the region gets its name.  The damaged
 * ones are then read with kvshm_data_read_control(), the one check of a
 * control block: libmpikvs/open.c (attach_region, before and after laying
 * out the buckets) and mpikvs-stat both read the control block through
 * it, so a region it refuses is refused by the library's open too. */

struct data_fill {
    uint64_t                       max_ranks;
    const struct kvshm_data_shape *shape;    /* NULL: unformatted */
};

static int fill_data(void *base, uint64_t size, void *arg,
                     mpikvs_error_t *err)
{
    const struct data_fill *f = arg;
    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, f->max_ranks, f->shape, "t", err);
}

/* 8-byte keys, 32-byte values, 1 slot: 64-byte buckets, so that a count
 * of 2^58 of them is 2^64 bytes, which wraps to 0. */
static const struct kvshm_data_shape wrap_shape = {8, 32, 1, 0};

static struct kvshm_region *make_data(const char *tag, uint64_t size,
                                      uint64_t max_ranks,
                                      const struct kvshm_data_shape *shape)
{
    struct kvshm_region_spec spec = spec_for(tag, KVSHM_KIND_DATA, size);
    struct data_fill f = {max_ranks, shape};
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};

    spec.fill = fill_data;
    spec.fill_arg = &f;
    assert_rc(kvshm_region_create(&spec, &r, &err), MPIKVS_OK, &err,
              "create data region %s", tag);
    return r;
}

static struct kvshm_data_control *control_of(struct kvshm_region *r)
{
    return (struct kvshm_data_control *)((char *)r->base +
                                         KVSHM_DATA_CONTROL_OFFSET);
}

START_TEST(test_data_control_ok)
{
    struct kvshm_region *r = make_data("ok", 64 * KiB, 4, &wrap_shape);
    struct kvshm_region *u = make_data("unformatted", 64 * KiB, 4, NULL);
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};

    assert_rc(kvshm_data_read_control(r->base, r->size, "ok", &c, &err),
              MPIKVS_OK, &err, "a region as made");
    ck_assert_uint_eq(c.state, KVSHM_DATA_READY);
    ck_assert_uint_eq(c.bucket_size, 128);   /* a header line, a 48-byte slot */
    ck_assert_uint_eq(c.buckets_offset + c.nbuckets * c.bucket_size <=
                          r->size, 1);
    assert_rc(kvshm_data_read_control(u->base, u->size, "unformatted", &c,
                                      &err),
              MPIKVS_OK, &err, "a region not laid out yet");
    ck_assert_uint_eq(c.state, KVSHM_DATA_UNFORMATTED);
    /* not laid out: the bucket fields are nobody's yet, only the
     * counters are checked */
    control_of(u)->nbuckets = UINT64_MAX;
    control_of(u)->bucket_size = 3;
    assert_rc(kvshm_data_read_control(u->base, u->size, "unformatted", &c,
                                      &err),
              MPIKVS_OK, &err, "unformatted, garbage bucket fields");
    kvshm_region_close(&r);
    kvshm_region_close(&u);
}
END_TEST

/* Each field of the control block damaged, alone: the read fails with
 * MPIKVS_ERR_CORRUPT and names the field and its value. */
START_TEST(test_data_control_damaged)
{
    enum { KEY, VALUE, SLOTS, SLOT, BUCKET, NBUCKETS, BOFF, SOFF, RANKS,
           MODE, STATE };
    static const struct {
        int         field;
        uint64_t    value;
        bool        unformatted;   /* damage a region not laid out */
        const char *why;
    } cases[] = {
        {KEY, 0, false, "no key"},
        {KEY, UINT64_C(1) << 63, false, "slot size wraps"},
        {VALUE, UINT64_MAX - 7, false, "key + value wraps"},
        {KEY, KVSHM_KEY_SIZE_MAX + 1, false, "above the library's limit"},
        {VALUE, KVSHM_VALUE_SIZE_MAX + 1, false, "above the library's limit"},
        {SLOTS, 0, false, "no slot"},
        {SLOTS, UINT64_C(1) << 58, false, "bucket size wraps"},
        {SLOT, 0, false, "slot_size not the shape's"},
        {SLOT, UINT64_MAX, false, "slot_size not the shape's"},
        {BUCKET, 0, false, "bucket_size 0 (a division by it)"},
        {BUCKET, 192, false, "bucket_size not the shape's"},
        {NBUCKETS, 0, false, "no bucket"},
        {NBUCKETS, UINT64_C(1) << 57, false, "nbuckets * 128 wraps to 0"},
        {NBUCKETS, (UINT64_C(1) << 57) + 1, false,
         "nbuckets * 128 wraps to 128"},
        {NBUCKETS, 2000, false, "one bucket past the end"},
        {BOFF, 0, false, "buckets over the counters"},
        {BOFF, UINT64_MAX - 4095, false, "offset + size wraps"},
        {BOFF, 8192, false, "a page after where it goes"},
        {SOFF, 0, false, "counters over the header"},
        {SOFF, UINT64_MAX, false, "counters far out"},
        {RANKS, 0, false, "no rank"},
        {RANKS, UINT64_C(1) << 58, false, "ranks * 320 wraps to 0"},
        {RANKS, UINT64_MAX, false, "ranks * 320 wraps"},
        {RANKS, 513, false, "counters past the end"},
        {MODE, 3, false, "no such mode"},
        {STATE, 3, false, "no such state"},
        {STATE, UINT32_MAX, true, "no such state"},
        {SOFF, 64, true, "counters in the header"},
        {RANKS, UINT64_C(1) << 57, true, "ranks * 128 wraps to 0"},
        {BOFF, 0, true, "buckets over the counters"},
    };
    static const char *const names[] = {
        "key_size", "value_size", "slots_per_bucket", "slot_size",
        "bucket_size", "nbuckets", "buckets_offset", "stats_offset",
        "max_ranks", "mode", "state"};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tag[32], want[128];
        snprintf(tag, sizeof tag, "bad%zu", i);
        struct kvshm_region *r = make_data(
            tag, 64 * KiB, 4, cases[i].unformatted ? NULL : &wrap_shape);
        struct kvshm_data_control *c = control_of(r), out;
        mpikvs_error_t err = {0};

        switch (cases[i].field) {
        case KEY: c->key_size = cases[i].value; break;
        case VALUE: c->value_size = cases[i].value; break;
        case SLOTS: c->slots_per_bucket = cases[i].value; break;
        case SLOT: c->slot_size = cases[i].value; break;
        case BUCKET: c->bucket_size = cases[i].value; break;
        case NBUCKETS: c->nbuckets = cases[i].value; break;
        case BOFF: c->buckets_offset = cases[i].value; break;
        case SOFF: c->stats_offset = cases[i].value; break;
        case RANKS: c->max_ranks = cases[i].value; break;
        case MODE: c->mode = (uint32_t)cases[i].value; break;
        case STATE: c->state = (uint32_t)cases[i].value; break;
        }
        int rc = kvshm_data_read_control(r->base, r->size, tag, &out, &err);
        assert_rc(rc, MPIKVS_ERR_CORRUPT, &err, "%s %llu (%s)",
                  names[cases[i].field], (unsigned long long)cases[i].value,
                  cases[i].why);
        snprintf(want, sizeof want,
                 "%s has a corrupt control block: %s %llu is impossible",
                 tag, names[cases[i].field],
                 (unsigned long long)cases[i].value);
        ck_assert_msg(strstr(err.text, want) != NULL,
                      "%s %llu (%s): message \"%s\", want \"%s\"",
                      names[cases[i].field],
                      (unsigned long long)cases[i].value, cases[i].why,
                      err.text, want);
        kvshm_region_close(&r);
    }
}
END_TEST

/* What no single field shows: a table name without its end, a region
 * too small to hold a control block, and a region shrunk under its
 * buckets (kvshm_data_control_check on a copy, with a smaller size). */
START_TEST(test_data_control_sizes)
{
    struct kvshm_region *r = make_data("sizes", 64 * KiB, 4, &wrap_shape);
    struct kvshm_data_control c;
    mpikvs_error_t err = {0};

    assert_rc(kvshm_data_read_control(r->base, r->size, "sizes", &c, &err),
              MPIKVS_OK, &err, "as made");
    assert_rc(kvshm_data_control_check(&c, c.buckets_offset +
                                               c.bucket_size * c.nbuckets,
                                       "sizes", &err),
              MPIKVS_OK, &err, "every bucket in the region");
    assert_rc(kvshm_data_control_check(&c, c.buckets_offset +
                                               c.bucket_size * c.nbuckets - 1,
                                       "sizes", &err),
              MPIKVS_ERR_CORRUPT, &err, "the last bucket one byte short");
    ck_assert_msg(strstr(err.text, "nbuckets"), "%s", err.text);
    assert_rc(kvshm_data_control_check(&c, KVSHM_DATA_STATS_OFFSET - 1,
                                       "sizes", &err),
              MPIKVS_ERR_CORRUPT, &err, "no room for the control block");
    ck_assert_msg(strstr(err.text, "sizes is too small for a data region"),
                  "%s", err.text);
    assert_rc(kvshm_data_read_control(r->base, 100, "sizes", &c, &err),
              MPIKVS_ERR_CORRUPT, &err, "read with no room for it");
    memset(control_of(r)->table, 'x', sizeof control_of(r)->table);
    assert_rc(kvshm_data_read_control(r->base, r->size, "sizes", &c, &err),
              MPIKVS_ERR_CORRUPT, &err, "table name without its NUL");
    ck_assert_msg(strstr(err.text, "its table name has no end"), "%s",
                  err.text);
    kvshm_region_close(&r);
}
END_TEST

/* ------------------------------------------------------------------- main */

static TCase *region_tcase(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
    tcase_set_timeout(tc, 60);
    return tc;
}

static Suite *region_suite(bool root, bool have_tmpfs)
{
    Suite *s = suite_create("region");
    TCase *tc;

    tc = tcase_create("naming");
    tcase_add_test(tc, test_name_build);
    tcase_add_test(tc, test_name_reject);
    tcase_add_test(tc, test_name_parse);
    tcase_add_test(tc, test_unique_id);
    tcase_add_test(tc, test_job_dir);
    tcase_add_test(tc, test_job_dir_too_long);
    suite_add_tcase(s, tc);

    tc = region_tcase("lifecycle");
    tcase_add_test(tc, test_lifecycle);
    tcase_add_test(tc, test_create_exists);
    tcase_add_test(tc, test_create_invalid);
    tcase_add_test(tc, test_mode);
    tcase_add_test(tc, test_readonly_fault);
    tcase_add_test(tc, test_symlink);
    tcase_add_test(tc, test_held);
    tcase_add_test(tc, test_grow);
    suite_add_tcase(s, tc);

    tc = region_tcase("corruption");
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_foreign_files);
    tcase_add_test(tc, test_truncated_files);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_bit_flips);
    tcase_add_test(tc, test_kind);
    tcase_add_test(tc, test_size_field);
    tcase_add_test(tc, test_file_resized);
    tcase_add_test(tc, test_renamed);
    tcase_add_test(tc, test_header_check);
    suite_add_tcase(s, tc);

    tc = region_tcase("data control block");
    tcase_add_test(tc, test_data_control_ok);
    tcase_add_test(tc, test_data_control_damaged);
    tcase_add_test(tc, test_data_control_sizes);
    suite_add_tcase(s, tc);

    if (root) {
        tc = region_tcase("owner");
        tcase_add_test(tc, test_owner_for_user);
        tcase_add_test(tc, test_owner_eacces);
        suite_add_tcase(s, tc);
    }
    if (have_tmpfs) {
        tc = region_tcase("reservation");
        tcase_add_test(tc, test_reservation);
        suite_add_tcase(s, tc);
    }

    tc = tcase_create("strerror");
    tcase_add_test(tc, test_strerror);
    suite_add_tcase(s, tc);
    return s;
}

/* Mount a 1 MiB tmpfs for the reservation test.  Returns 1 if mounted,
 * 0 to skip (not root, or no permission to mount), -1 on another error. */
static int mount_tmpfs(bool root)
{
    if (!root) {
        printf("SKIP: reservation test needs root and mount(2) "
               "(not running as root)\n");
        return 0;
    }
    snprintf(tmpfs_dir, sizeof tmpfs_dir, "/tmp/kvtest.XXXXXX");
    if (mkdtemp(tmpfs_dir) == NULL) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", tmpfs_dir, strerror(errno));
        tmpfs_dir[0] = '\0';
        return -1;
    }
    if (mount("tmpfs", tmpfs_dir, "tmpfs", MS_NOSUID | MS_NODEV,
              "size=1m,mode=0700") != 0) {
        int e = errno;
        rmdir(tmpfs_dir);
        tmpfs_dir[0] = '\0';
        if (e == EPERM) {
            printf("SKIP: reservation test needs root and mount(2) "
                   "(mount: %s)\n", strerror(e));
            return 0;
        }
        fprintf(stderr, "FAIL: mount tmpfs: %s\n", strerror(e));
        return -1;
    }
    return 1;
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
        printf("SKIP: owner tests (create for uid 65534, MPIKVS_ERR_OWNER, "
               "-EACCES) need root\n");
    int tmpfs = mount_tmpfs(root);

    SRunner *sr = srunner_create(region_suite(root, tmpfs == 1));
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    remove_tree(run_dir);
    if (tmpfs == 1) {
        if (umount(tmpfs_dir) != 0)
            umount2(tmpfs_dir, MNT_DETACH);
        rmdir(tmpfs_dir);
    }
    return failed == 0 && tmpfs >= 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
