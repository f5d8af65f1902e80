/*
 * populate.c - fault a shared mapping in: a rank's share of the pages for
 * writing, then more of them for reading, up to a bound (populate.h).
 *
 * Why reading for the pages past the share: once a page is allocated and
 * zeroed, a read fault on a shared writable tmpfs or hugetlbfs mapping
 * enters it writable (no write-notify there), so a later store takes no
 * fault, and MADV_POPULATE_READ maps up to 16 resident pages a fault
 * (fault-around) where MADV_POPULATE_WRITE maps one: about 0.08 s against
 * 0.18 s a GiB of 4 KiB pages, a cost every rank pays.  A read of a page
 * not zeroed yet (another rank's share, still under way) zeroes it as a
 * write would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errors_internal.h"
#include "populate.h"
#include "size.h"

/* The kernel's numbers (Linux 5.14), for a C library older than them. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int kvshm_populate_parse(const char *text, const char *what, uint64_t *bound,
                         mpikvs_error_t *err)
{
    mpikvs_error_t why;

    if (strcmp(text, "all") == 0) {
        *bound = KVSHM_POPULATE_ALL;
        return MPIKVS_OK;
    }
    if (strcmp(text, "off") == 0) {
        *bound = 0;
        return MPIKVS_OK;
    }
    if (kvshm_parse_size(text, what, 0, bound, &why) == MPIKVS_OK)
        return MPIKVS_OK;
    return kvshm_fail(err, MPIKVS_ERR_INVAL,
                      "%s='%s' is not a size, 'all' or 'off' (how much of "
                      "the node's buckets each rank faults in at open, "
                      "e.g. 512M, or 0); unset it for the default of 1G",
                      what, text);
}

const char *kvshm_populate_text(uint64_t bound, char *buf, size_t len)
{
    if (bound == KVSHM_POPULATE_ALL)
        snprintf(buf, len, "all");
    else if (bound == 0)
        snprintf(buf, len, "off");
    else
        kvshm_format_bytes(buf, len, bound);
    return buf;
}

/* Fault in len bytes at p, page-aligned.  Returns 0 or an errno; *touched
 * once the kernel turned the advice down as unknown (EINVAL: before
 * Linux 5.14), from then on for every part. */
static int fault_in(char *p, uint64_t len, uint64_t page, bool write,
                    bool *touched)
{
    if (len == 0)
        return 0;
    if (!*touched) {
        if (madvise(p, len, write ? MADV_POPULATE_WRITE
                                  : MADV_POPULATE_READ) == 0)
            return 0;
        /* EFAULT and the like: a touch would raise SIGBUS where the
         * advice failed; let those pages fault in when they are used */
        if (errno != EINVAL)
            return errno;
        *touched = true;
    }
    for (uint64_t off = 0; off < len; off += page) {
        volatile uint64_t *w = (volatile uint64_t *)(p + off);
        /* An atomic OR of 0 stores the value it read, in one locked
         * step: a store another rank makes to the word meanwhile is not
         * lost.  volatile: a compiler may not turn it into a load. */
        if (write)
            __atomic_fetch_or(w, 0, __ATOMIC_RELAXED);
        else
            (void)__atomic_load_n(w, __ATOMIC_RELAXED);
    }
    return 0;
}

/* The first page of rank's share of pages: rank * pages / nranks,
 * without the product (pages may be 2^34). */
static uint64_t share_start(uint64_t pages, unsigned rank, unsigned nranks)
{
    return pages / nranks * rank + pages % nranks * rank / nranks;
}

struct kvshm_populated kvshm_populate(void *base, uint64_t len,
                                      unsigned rank, unsigned nranks,
                                      uint64_t bound)
{
    struct kvshm_populated done = {0, 0, false, 0};
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)base & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)base + len + page - 1) &
                   ~(uintptr_t)(page - 1);
    uint64_t pages = (hi - lo) / page, want, first, mine, rest, next, run;
    char *p = (char *)lo;
    int e;

    if (len == 0 || bound == 0 || nranks == 0 || rank >= nranks)
        return done;
    want = bound / page < pages ? bound / page : pages;
    first = share_start(pages, rank, nranks);
    mine = share_start(pages, rank + 1, nranks) - first;
    if (mine > want)
        mine = want;
    rest = want - mine;

    e = fault_in(p + first * page, mine * page, page, true, &done.touched);
    if (e) {
        done.error = e;
        return done;
    }
    done.share = done.bytes = mine * page;
    /* then on from the end of the share, around the end of the region;
     * rest never reaches back into the share */
    next = (first + mine) % pages;
    while (rest) {
        run = pages - next < rest ? pages - next : rest;
        e = fault_in(p + next * page, run * page, page, false,
                     &done.touched);
        if (e) {
            done.error = e;
            break;
        }
        done.bytes += run * page;
        rest -= run;
        next = 0;
    }
    return done;
}
