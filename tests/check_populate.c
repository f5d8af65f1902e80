/*
 * check_populate.c - unit tests of shm/populate.h, and of regions on the
 * file systems a site gives mpikvs for huge pages (mpikvs(7)):
 *
 *   - MPIKVS_POPULATE's values: accepted, and refused with a text that
 *     quotes them;
 *   - which pages a rank's populate enters in its own page table (read
 *     from /proc/self/pagemap): its share of the region first, then on
 *     around the end, up to the bound; none with a bound of 0; and never
 *     a byte changed;
 *   - the same through the fallback of a kernel without MADV_POPULATE_*
 *     (madvise wrapped to refuse them with EINVAL, as Linux < 5.14 does);
 *   - as root, in a tmpfs mounted huge=within_size: a region is mapped
 *     with huge pages;
 *   - as root, in a hugetlbfs mount, when the kernel has free huge pages
 *     (vm.nr_hugepages): a region is made of whole huge pages, is opened
 *     again (a writable mapping extends a hugetlbfs file to its end),
 *     unmapped at close, grows, and a reservation beyond the free huge
 *     pages fails saying so.
 *
 * The mounts are made by main() before the tests fork and removed at the
 * end (a failed test's process ends before its teardown).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "mpikvs_errors.h"
#include "populate.h"
#include "region.h"
#include "shm_check.h"

#define JOB  "4243"
#define NODE "n001"
#define MiB  (UINT64_C(1) << 20)

/* Set in main() before the tests fork: "" when not mounted. */
static char huge_tmpfs_dir[64];
static char hugetlbfs_dir[64];
static uint64_t huge_free;   /* free huge pages of hugetlbfs' size */

/* Linux < 5.14 in a test's process: madvise refuses MADV_POPULATE_*
 * (-Wl,--wrap=madvise in tests/local.mk). */
static bool old_kernel;

int __real_madvise(void *addr, size_t len, int advice);
int __wrap_madvise(void *addr, size_t len, int advice);

int __wrap_madvise(void *addr, size_t len, int advice)
{
    if (old_kernel &&
        (advice == MADV_POPULATE_READ || advice == MADV_POPULATE_WRITE)) {
        errno = EINVAL;
        return -1;
    }
    return __real_madvise(addr, len, advice);
}

/* ---------------------------------------------------------------- helpers */

static uint64_t page_size(void)
{
    return (uint64_t)sysconf(_SC_PAGESIZE);
}

static struct kvshm_region_spec spec_in(const char *dir, const char *tag,
                                        uint64_t size, uint64_t max_size)
{
    struct kvshm_region_spec s = {
        .dir = dir, .job = JOB, .node = NODE, .tag = tag,
        .kind = KVSHM_KIND_DATA, .size = size, .max_size = max_size,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .step = KVSHM_NO_STEP};
    return s;
}

static struct kvshm_region *create_in(const char *dir, const char *tag,
                                      uint64_t size, uint64_t max_size)
{
    struct kvshm_region_spec s = spec_in(dir, tag, size, max_size);
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_create(&s, &r, &err);

    assert_rc(rc, MPIKVS_OK, &err, "create %s in %s (size %" PRIu64
              ", max %" PRIu64 ")", tag, dir, size, max_size);
    return r;
}

static struct kvshm_region *open_in(const char *dir, const char *tag)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA, .writable = true,
                                 .expect_uid = geteuid()};
    char name[KVSHM_NAME_MAX + 1];
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc = kvshm_region_name(name, sizeof name, JOB, NODE, tag, &err);

    assert_rc(rc, MPIKVS_OK, &err, "name of %s", tag);
    rc = kvshm_region_open(dir, name, &oo, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open %s in %s", name, dir);
    return r;
}

static void unlink_in(const char *dir, const char *tag)
{
    char name[KVSHM_NAME_MAX + 1];

    ck_assert(kvshm_region_name(name, sizeof name, JOB, NODE, tag, NULL) ==
              MPIKVS_OK);
    ck_assert_msg(kvshm_region_unlink(dir, name) == MPIKVS_OK,
                  "unlink %s in %s", name, dir);
}

/* Is the page at p in this process's page table? */
static bool present(const void *p)
{
    uint64_t entry = 0, page = page_size();
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    ssize_t got;

    ck_assert_msg(fd >= 0, "open /proc/self/pagemap: %s", strerror(errno));
    got = pread(fd, &entry, sizeof entry,
                (off_t)((uintptr_t)p / page * sizeof entry));
    close(fd);
    ck_assert_msg(got == (ssize_t)sizeof entry, "read /proc/self/pagemap");
    return entry >> 63;
}

/* A region of npages pages (the header's page is the first), every page
 * stamped with its number, then mapped again, by open, with no page in
 * the page table. */
static struct kvshm_region *stamped(uint64_t npages)
{
    uint64_t page = page_size();
    struct kvshm_region *r = create_in(test_dir, "pop", npages * page, 0);

    for (uint64_t i = 1; i < npages; i++)
        memcpy((char *)r->base + i * page + 8, &i, sizeof i);
    kvshm_region_close(&r);
    r = open_in(test_dir, "pop");
    for (uint64_t i = 1; i < npages; i++)
        ck_assert_msg(!present((char *)r->base + i * page),
                      "page %" PRIu64 " is mapped before populate", i);
    return r;
}

/* Every page of the count from page from on (around the end) must be
 * mapped; returns how many of the others are (fault-around maps
 * neighbours of a read fault). */
static uint64_t check_pages(const struct kvshm_region *r, uint64_t npages,
                            uint64_t from, uint64_t count)
{
    uint64_t page = page_size(), extra = 0;

    for (uint64_t i = 0; i < npages; i++) {
        bool inside = (i + npages - from) % npages < count;
        bool mapped = present((char *)r->base + i * page);
        if (inside)
            ck_assert_msg(mapped, "page %" PRIu64 " not mapped (populated "
                          "%" PRIu64 " pages from %" PRIu64 ")", i, count,
                          from);
        else
            extra += mapped;
    }
    return extra;
}

static void check_stamps(const struct kvshm_region *r, uint64_t npages)
{
    uint64_t page = page_size();

    for (uint64_t i = 1; i < npages; i++) {
        uint64_t v;
        memcpy(&v, (char *)r->base + i * page + 8, sizeof v);
        ck_assert_msg(v == i, "page %" PRIu64 " holds %" PRIu64
                      " after populate", i, v);
        for (uint64_t w = 0; w < page; w += 8)
            if (w != 8)
                ck_assert_msg(*(const uint64_t *)((char *)r->base + i * page +
                                                  w) == 0,
                              "page %" PRIu64 " word %" PRIu64 " changed",
                              i, w / 8);
    }
}

/* ------------------------------------------------------------------ parse */

START_TEST(test_parse)
{
    static const struct {
        const char *text;
        uint64_t    bound;
    } good[] = {{"0", 0}, {"off", 0}, {"all", KVSHM_POPULATE_ALL},
                {"4096", 4096}, {"512M", 512 * MiB}, {"1G", 1024 * MiB},
                {"1.5G", 1536 * MiB}, {"0k", 0}};
    static const char *const bad[] = {"", " ", "yes", "ALL", "Off", "-1",
                                      "1e3", "1GB", "1G,2G", "1 G", "none",
                                      "99999999999999999999"};
    mpikvs_error_t err;
    uint64_t b;
    char want[64];

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        b = 1234;
        memset(&err, 0, sizeof err);
        int rc = kvshm_populate_parse(good[i].text, "MPIKVS_POPULATE", &b,
                                      &err);
        assert_rc(rc, MPIKVS_OK, &err, "parse '%s'", good[i].text);
        ck_assert_msg(b == good[i].bound, "'%s' gave %" PRIu64 ", not %"
                      PRIu64, good[i].text, b, good[i].bound);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        int rc = kvshm_populate_parse(bad[i], "MPIKVS_POPULATE", &b, &err);
        assert_rc(rc, MPIKVS_ERR_INVAL, &err, "parse '%s'", bad[i]);
        snprintf(want, sizeof want, "MPIKVS_POPULATE='%s'", bad[i]);
        ck_assert_msg(strstr(err.text, want) != NULL,
                      "the message does not quote %s: \"%s\"", want,
                      err.text);
    }
}
END_TEST

START_TEST(test_text)
{
    char buf[32];

    ck_assert_str_eq(kvshm_populate_text(KVSHM_POPULATE_ALL, buf, sizeof buf),
                     "all");
    ck_assert_str_eq(kvshm_populate_text(0, buf, sizeof buf), "off");
    ck_assert_str_eq(kvshm_populate_text(KVSHM_POPULATE_DEFAULT, buf,
                                         sizeof buf), "1.0 GiB");
}
END_TEST

/* --------------------------------------------------------------- populate */

/* One rank's populate of a stamped region of 1024 pages: which pages it
 * maps, what it says it did, and that it changed nothing. */
static void one_rank(unsigned rank, unsigned nranks, uint64_t bound,
                     uint64_t want_share, uint64_t want_pages, bool touched)
{
    const uint64_t npages = 1024, page = page_size();
    struct kvshm_region *r = stamped(npages);
    uint64_t first = npages * rank / nranks;
    struct kvshm_populated d =
        kvshm_populate(r->base, npages * page, rank, nranks, bound);

    ck_assert_msg(d.error == 0, "populate stopped: %s", strerror(d.error));
    ck_assert_msg(d.touched == touched, "touched %d, want %d", d.touched,
                  touched);
    ck_assert_msg(d.share == want_share * page && d.bytes == want_pages * page,
                  "rank %u of %u, bound %" PRIu64 ": %" PRIu64 " bytes (share "
                  "%" PRIu64 "), want %" PRIu64 " (share %" PRIu64 ")",
                  rank, nranks, bound, d.bytes, d.share, want_pages * page,
                  want_share * page);
    uint64_t extra = check_pages(r, npages, first, want_pages);
    /* a read fault maps resident neighbours in its 64 KiB window
     * (fault-around): at most 15 pages each side of the read part; a
     * write fault none */
    ck_assert_msg(extra <= (want_pages > want_share ? 30 : 0),
                  "%" PRIu64 " pages mapped beyond the %" PRIu64
                  " populated", extra, want_pages);
    check_stamps(r, npages);
    kvshm_region_close(&r);
    unlink_in(test_dir, "pop");
}

START_TEST(test_all_one_rank)
{
    one_rank(0, 1, KVSHM_POPULATE_ALL, 1024, 1024, false);
}
END_TEST

START_TEST(test_all_share_first)
{
    /* pages 256..511 for writing, then 512..1023 and 0..255 */
    one_rank(1, 4, KVSHM_POPULATE_ALL, 256, 1024, false);
}
END_TEST

START_TEST(test_bound_wraps)
{
    /* 768..1023 its share, then 2 MiB in all: 0..255 after the end */
    one_rank(3, 4, 2 * MiB / page_size() * page_size(), 256,
             2 * MiB / page_size(), false);
}
END_TEST

START_TEST(test_bound_in_share)
{
    /* rank 2 of 3: pages 682..1023; 25 pages of them */
    one_rank(2, 3, 25 * page_size() + 100, 25, 25, false);
}
END_TEST

START_TEST(test_off)
{
    one_rank(0, 2, 0, 0, 0, false);
    one_rank(2, 2, KVSHM_POPULATE_ALL, 0, 0, false);   /* no such rank */
}
END_TEST

START_TEST(test_old_kernel)
{
    old_kernel = true;
    one_rank(1, 4, KVSHM_POPULATE_ALL, 256, 1024, true);
    one_rank(3, 4, 2 * MiB / page_size() * page_size(), 256,
             2 * MiB / page_size(), true);
}
END_TEST

/* An unaligned area: every page it touches, no more. */
START_TEST(test_unaligned)
{
    const uint64_t npages = 1024, page = page_size();
    struct kvshm_region *r = stamped(npages);
    struct kvshm_populated d =
        kvshm_populate((char *)r->base + 100, 10 * page, 0, 1,
                       KVSHM_POPULATE_ALL);

    ck_assert_msg(d.bytes == 11 * page, "%" PRIu64 " bytes, want 11 pages",
                  d.bytes);
    ck_assert_msg(check_pages(r, npages, 0, 11) == 0,
                  "pages mapped beyond the area");
    check_stamps(r, npages);
    kvshm_region_close(&r);
    unlink_in(test_dir, "pop");
}
END_TEST

/* ------------------------------------------------------------- huge pages */

/* kB of the mapping at p that a field of /proc/self/smaps gives. */
static uint64_t smaps_kb(const void *p, const char *field)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool in = false;
    uint64_t kb = 0;
    size_t flen = strlen(field);

    ck_assert_msg(f != NULL, "open /proc/self/smaps: %s", strerror(errno));
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && strncmp(line, field, flen) == 0 && line[flen] == ':')
            kb = strtoull(line + flen + 1, NULL, 10);
    }
    fclose(f);
    return kb;
}

START_TEST(test_huge_tmpfs)
{
    struct kvshm_region *r = create_in(huge_tmpfs_dir, "huge", 4 * MiB, 0);
    struct kvshm_populated d =
        kvshm_populate(r->base, r->size, 0, 1, KVSHM_POPULATE_ALL);

    ck_assert_msg(d.error == 0 && d.bytes == 4 * MiB, "populate: %" PRIu64
                  " bytes, %s", d.bytes, strerror(d.error));
    ck_assert_msg(smaps_kb(r->base, "ShmemPmdMapped") >= 2048,
                  "a 4 MiB region in a huge=within_size tmpfs is mapped "
                  "with %" PRIu64 " kB of huge pages",
                  smaps_kb(r->base, "ShmemPmdMapped"));
    kvshm_region_close(&r);
    unlink_in(huge_tmpfs_dir, "huge");
}
END_TEST

START_TEST(test_hugetlbfs)
{
    const uint64_t huge = 2 * MiB;
    struct kvshm_region *r, *again;
    struct stat st;
    unsigned char vec;
    void *base;

    /* a fixed region of a huge page and a bit: two of them */
    r = create_in(hugetlbfs_dir, "fixed", huge + 4096, 0);
    ck_assert_msg(r->size == 2 * huge && r->map_len == 2 * huge &&
                  kvshm_region_header(r)->size == 2 * huge &&
                  kvshm_region_header(r)->max_size == 2 * huge,
                  "size %" PRIu64 ", mapped %" PRIu64 ", header %" PRIu64
                  "/%" PRIu64 ": want whole huge pages", r->size, r->map_len,
                  kvshm_region_header(r)->size,
                  kvshm_region_header(r)->max_size);
    ck_assert(fstat(r->fd, &st) == 0 && (uint64_t)st.st_size == 2 * huge);
    ((char *)r->base)[huge + 4095] = 7;
    again = open_in(hugetlbfs_dir, "fixed");
    ck_assert_msg(again->size == 2 * huge &&
                  ((char *)again->base)[huge + 4095] == 7,
                  "reopened: size %" PRIu64, again->size);
    struct kvshm_populated d =
        kvshm_populate(again->base, again->size, 1, 2, KVSHM_POPULATE_ALL);
    ck_assert_msg(d.error == 0 && d.bytes == 2 * huge, "populate: %" PRIu64
                  " bytes, %s", d.bytes, strerror(d.error));
    base = again->base;
    kvshm_region_close(&again);
    ck_assert_msg(mincore(base, 4096, &vec) != 0 && errno == ENOMEM,
                  "the reopened mapping is still there after close");
    base = r->base;
    kvshm_region_close(&r);
    ck_assert_msg(mincore(base, 4096, &vec) != 0 && errno == ENOMEM,
                  "the creator's mapping is still there after close");
    unlink_in(hugetlbfs_dir, "fixed");

    /* a growable one grows, and is opened again */
    r = create_in(hugetlbfs_dir, "grow", 4096, 3 * huge - 1);
    ck_assert_msg(r->size == huge && r->map_len == 3 * huge,
                  "growable: size %" PRIu64 ", mapped %" PRIu64, r->size,
                  r->map_len);
    mpikvs_error_t err = {0};
    int rc = kvshm_region_grow(r, 2 * huge, &err);
    assert_rc(rc, MPIKVS_OK, &err, "grow to two huge pages");
    again = open_in(hugetlbfs_dir, "grow");
    kvshm_region_close(&again);
    kvshm_region_close(&r);
    unlink_in(hugetlbfs_dir, "grow");

    /* more than the free huge pages */
    struct kvshm_region_spec s =
        spec_in(hugetlbfs_dir, "big", (huge_free + 1) * huge, 0);
    memset(&err, 0, sizeof err);
    rc = kvshm_region_create(&s, &r, &err);
    assert_rc(rc, MPIKVS_ERR_NOSPACE, &err, "create of %" PRIu64
              " huge pages with %" PRIu64 " free", huge_free + 1, huge_free);
    ck_assert_msg(strstr(err.text, "huge pages") &&
                  strstr(err.text, "vm.nr_hugepages"),
                  "the text says nothing of huge pages: \"%s\"", err.text);
    ck_assert_msg(count_entries(hugetlbfs_dir) == 0, "left in %s",
                  hugetlbfs_dir);
}
END_TEST

/* ------------------------------------------------------------------ mounts */

/* Free huge pages of the default size, from /proc/meminfo. */
static uint64_t free_huge_pages(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long n = 0, kb = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "HugePages_Free: %llu", &n);
        sscanf(line, "Hugepagesize: %llu kB", &kb);
    }
    fclose(f);
    return kb == 2048 ? n : 0;   /* the test's sizes are of 2 MiB pages */
}

/* Mount fstype with options at a new directory in dir (64 bytes);
 * false (with a SKIP line saying why) when that cannot be done here. */
static bool mount_at(char *dir, const char *fstype, const char *options,
                     const char *what)
{
    snprintf(dir, 64, "/tmp/kvpop.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        printf("SKIP: %s: mkdtemp: %s\n", what, strerror(errno));
        dir[0] = '\0';
        return false;
    }
    if (mount("none", dir, fstype, MS_NOSUID | MS_NODEV, options) != 0) {
        printf("SKIP: %s: mount -t %s -o %s: %s\n", what, fstype, options,
               strerror(errno));
        rmdir(dir);
        dir[0] = '\0';
        return false;
    }
    return true;
}

static void unmount_at(char *dir)
{
    if (!dir[0])
        return;
    remove_tree(dir);
    if (umount(dir) != 0)
        umount2(dir, MNT_DETACH);
    rmdir(dir);
}

static Suite *populate_suite(void)
{
    Suite *s = suite_create("populate");
    TCase *tc;

    tc = tcase_create("bound");
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_text);
    suite_add_tcase(s, tc);

    tc = tcase_create("pages");
    tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_all_one_rank);
    tcase_add_test(tc, test_all_share_first);
    tcase_add_test(tc, test_bound_wraps);
    tcase_add_test(tc, test_bound_in_share);
    tcase_add_test(tc, test_off);
    tcase_add_test(tc, test_old_kernel);
    tcase_add_test(tc, test_unaligned);
    suite_add_tcase(s, tc);

    tc = tcase_create("huge pages");
    tcase_set_timeout(tc, 60);
    if (huge_tmpfs_dir[0])
        tcase_add_test(tc, test_huge_tmpfs);
    if (hugetlbfs_dir[0])
        tcase_add_test(tc, test_hugetlbfs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    bool root = geteuid() == 0;
    int failed;

    snprintf(run_dir, sizeof run_dir, "/dev/shm/kvpop.XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", run_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    if (!root) {
        printf("SKIP: huge page tests need root (mount)\n");
    } else {
        mount_at(huge_tmpfs_dir, "tmpfs", "size=8m,huge=within_size,mode=0700",
                 "a tmpfs with huge pages");
        huge_free = free_huge_pages();
        if (huge_free < 4)
            printf("SKIP: hugetlbfs: %" PRIu64 " free huge pages of 2 MiB, "
                   "the test needs 4 (vm.nr_hugepages)\n", huge_free);
        else
            mount_at(hugetlbfs_dir, "hugetlbfs", "mode=0700", "hugetlbfs");
    }

    SRunner *sr = srunner_create(populate_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    remove_tree(run_dir);
    unmount_at(huge_tmpfs_dir);
    unmount_at(hugetlbfs_dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
