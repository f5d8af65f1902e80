/*
 * shm_check.h - what the Check tests of shm/ share: a private directory
 * per test under one run directory in /dev/shm, and assertions on return
 * codes and error texts.
 *
 * main() makes run_dir (mkdtemp) before the tests fork and removes it
 * with everything in it at the end: in fork mode a failed assertion ends
 * a test's process before its teardown runs, and nothing may be left in
 * /dev/shm even then.  The checked fixture setup_dir/teardown_dir gives
 * each test its own test_dir inside it.
 */
#ifndef MPIKVS_TESTS_SHM_CHECK_H
#define MPIKVS_TESTS_SHM_CHECK_H

#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpikvs_errors.h"

/* Set in main() before the tests fork, so every test process sees it. */
static char run_dir[64];
/* Set by the checked fixture, in the test's own process. */
static char test_dir[128];

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;                   /* keep going: remove all that can go */
}

static void remove_tree(const char *dir)
{
    if (dir[0] != '\0')
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void setup_dir(void)
{
    snprintf(test_dir, sizeof test_dir, "%s/t.XXXXXX", run_dir);
    ck_assert_msg(mkdtemp(test_dir) != NULL, "mkdtemp %s: %s", test_dir,
                  strerror(errno));
}

static void teardown_dir(void)
{
    remove_tree(test_dir);
}

/* The entries of dir, "." and ".." aside. */
static int __attribute__((unused)) count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* mpikvs_strerror() for messages; a NULL from it must not crash them. */
static const char *rcname(int rc)
{
    const char *s = mpikvs_strerror(rc);
    return s ? s : "(null)";
}

/* Assert that a call returned want and, for a failure, that err repeats
 * the code and carries a text.  err may be NULL (a call given none). */
static void __attribute__((format(printf, 4, 5), unused))
assert_rc(int rc, int want, const mpikvs_error_t *err, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ck_assert_msg(rc == want,
                  "%s: expected %d (%s), got %d (%s); err.text \"%.511s\"",
                  what, want, rcname(want), rc, rcname(rc),
                  err ? err->text : "");
    if (err == NULL || rc == MPIKVS_OK || rc == MPIKVS_MISS)
        return;
    ck_assert_msg(err->code == rc, "%s: err.code is %d, the call returned %d",
                  what, err->code, rc);
    ck_assert_msg(memchr(err->text, '\0', sizeof err->text) != NULL,
                  "%s: err.text is not terminated", what);
    ck_assert_msg(err->text[0] != '\0', "%s: err.text is empty (code %d)",
                  what, rc);
}

/* Does text hold n as a whole number (not part of a longer one)? */
static bool __attribute__((unused))
has_number(const char *text, unsigned long long n)
{
    char num[32];
    int len = snprintf(num, sizeof num, "%llu", n);

    for (const char *p = text; (p = strstr(p, num)) != NULL; p++) {
        bool left = p == text || !isdigit((unsigned char)p[-1]);
        bool right = !isdigit((unsigned char)p[len]);
        if (left && right)
            return true;
    }
    return false;
}

#endif /* MPIKVS_TESTS_SHM_CHECK_H */
