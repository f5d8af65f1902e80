/*
 * check_region_fiu.c - regions whose system calls fail: open(2) and
 * mmap(2) made to fail by libfiu's POSIX wrappers, in creating and
 * opening a region.  Each failure is a clear error naming what failed
 * and where, and leaves nothing behind: no file after a failed create, a
 * good region after a failed open.  (The space is reserved with
 * posix_fallocate, which libfiu does not wrap: check_region's full tmpfs
 * makes that fail.)
 *
 * Run by region-fiu.sh under `fiu-run -x`, which preloads the wrappers
 * and libfiu; the failure points are switched on around one call only
 * (fiu_enable, fiu_disable), so that Check's own work is left alone.
 * Without the wrappers loaded (not under fiu-run) every test fails: a
 * test that cannot make the call fail proves nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fiu-control.h>
#include <fiu.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "region.h"
#include "shm_check.h"

#define JOB  "fiu1"
#define NODE "n0"
#define SIZE (UINT64_C(1) << 20)

static struct kvshm_region_spec spec_for(const char *tag)
{
    struct kvshm_region_spec s = {
        .dir = test_dir, .job = JOB, .node = NODE, .tag = tag,
        .kind = KVSHM_KIND_DATA, .size = SIZE, .max_size = 0,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .mode = 0,
        .step = KVSHM_NO_STEP,
    };
    return s;
}

/* Fail the POSIX function behind point with errno e for one call's
 * duration: fiu_enable returns 0 where the point exists. */
static void fail_on(const char *point, int e)
{
    ck_assert_msg(fiu_enable(point, 1, (void *)(intptr_t)e, 0) == 0,
                  "fiu_enable(%s)", point);
}

/* The wrappers are there: a failing open(2) of /dev/null fails. */
static void assert_wrapped(void)
{
    fail_on("posix/io/oc/open", EIO);
    int fd = open("/dev/null", O_RDONLY);
    int e = errno;
    fiu_disable("posix/io/oc/open");
    if (fd >= 0)
        close(fd);
    ck_assert_msg(fd < 0 && e == EIO,
                  "open(2) did not fail: run this under `fiu-run -x` "
                  "(tests/region-fiu.sh)");
}

/* A create whose call behind point fails: error, text with what and
 * where, nothing left. */
static void create_fails(const char *point, const char *what)
{
    struct kvshm_region_spec s = spec_for("data");
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    int rc;

    assert_wrapped();
    fail_on(point, EIO);
    rc = kvshm_region_create(&s, &r, &err);
    fiu_disable(point);
    assert_rc(rc, -EIO, &err, "create with %s failing", point);
    ck_assert_msg(r == NULL, "a failed create returned a region");
    ck_assert_msg(strstr(err.text, what) && strstr(err.text, test_dir),
                  "the error does not say \"%s\" and where: %s", what,
                  err.text);
    ck_assert_msg(count_entries(test_dir) == 0,
                  "a failed create left %d file(s)", count_entries(test_dir));
}

START_TEST(create_open_fails)
{
    create_fails("posix/io/oc/open", "cannot create");
}
END_TEST

START_TEST(create_mmap_fails)
{
    create_fails("posix/mm/mmap", "cannot map");
}
END_TEST

/* An open of a good region whose call behind point fails. */
static void open_fails(const char *point)
{
    struct kvshm_region_spec s = spec_for("data");
    struct kvshm_open_opts o = {.kind = KVSHM_KIND_DATA, .writable = true,
                                .expect_uid = KVSHM_ANY_UID};
    struct kvshm_region *r = NULL;
    mpikvs_error_t err = {0};
    char name[KVSHM_NAME_MAX + 1];
    int rc;

    rc = kvshm_region_create(&s, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "create");
    kvshm_region_close(&r);
    rc = kvshm_region_name(name, sizeof name, JOB, NODE, "data", &err);
    assert_rc(rc, MPIKVS_OK, &err, "name");
    assert_wrapped();
    fail_on(point, EIO);
    rc = kvshm_region_open(test_dir, name, &o, &r, &err);
    fiu_disable(point);
    assert_rc(rc, -EIO, &err, "open with %s failing", point);
    ck_assert_msg(r == NULL, "a failed open returned a region");
    ck_assert_msg(strstr(err.text, name) != NULL,
                  "the error does not name the region: %s", err.text);
    /* and the region is still good */
    rc = kvshm_region_open(test_dir, name, &o, &r, &err);
    assert_rc(rc, MPIKVS_OK, &err, "open once %s works again", point);
    kvshm_region_close(&r);
}

START_TEST(open_open_fails)
{
    open_fails("posix/io/oc/open");
}
END_TEST

START_TEST(open_mmap_fails)
{
    open_fails("posix/mm/mmap");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("region_fiu");
    TCase *tc = tcase_create("faults");

    snprintf(run_dir, sizeof run_dir, "/dev/shm/kvtest.XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", run_dir, strerror(errno));
        return 1;
    }
    fiu_init(0);
    tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
    tcase_add_test(tc, create_open_fails);
    tcase_add_test(tc, create_mmap_fails);
    tcase_add_test(tc, open_open_fails);
    tcase_add_test(tc, open_mmap_fails);
    suite_add_tcase(s, tc);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(run_dir);
    return failed == 0 ? 0 : 1;
}
