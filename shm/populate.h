/*
 * populate.h - fault a region's mapping in before the hot path uses it.
 *
 * A page of a region costs two faults: the first toucher on the node
 * allocates and zeroes it (posix_fallocate only reserved it), and every
 * process that maps the region then takes one more to enter it in its
 * own page table.  Both would otherwise land in the first puts and gets.
 * The node's ranks populate a region together: each takes its share of
 * the pages first, so the node's pages are zeroed once and in parallel,
 * then goes on around the region for its own page table, up to a bound.
 * The bound is per rank because page tables are: 4 KiB pages cost 2 MiB
 * of page table per GiB mapped, in each process that maps them.
 *
 * Nothing is written: the region may be in use by other ranks already.
 */
#ifndef MPIKVS_SHM_POPULATE_H
#define MPIKVS_SHM_POPULATE_H

#include <stdbool.h>
#include <stdint.h>

#include "mpikvs_errors.h"

#define KVSHM_POPULATE_ALL     UINT64_MAX
#define KVSHM_POPULATE_DEFAULT (UINT64_C(1) << 30)

/* Parse a bound as MPIKVS_POPULATE gives it, named what in messages: a
 * size ("512M", kvshm_parse_size), "0" or "off" (none) or "all".
 * Returns MPIKVS_OK or MPIKVS_ERR_INVAL with a message that quotes
 * what='text'. */
int kvshm_populate_parse(const char *text, const char *what, uint64_t *bound,
                         mpikvs_error_t *err);

/* "1 GiB", "all", "off": a bound for messages and benchmark headings. */
const char *kvshm_populate_text(uint64_t bound, char *buf, size_t len);

struct kvshm_populated {
    uint64_t bytes;     /* faulted in, share included */
    uint64_t share;     /* of it, this rank's share of the pages */
    bool     touched;   /* the kernel lacks MADV_POPULATE_*: touched */
    int      error;     /* an errno that stopped it early, or 0 */
};

/* Fault in at most bound bytes of [base, base + len), a mapping that
 * nranks processes of the node share, as their rank-th: its share of the
 * pages (rank * pages / nranks on) for writing, which allocates and zeroes
 * them, then the pages after it, around the end, for reading, which on a
 * shared writable mapping enters them writable.  On a kernel without
 * MADV_POPULATE_WRITE (before Linux 5.14) it touches one word a page
 * instead, with an atomic OR of 0 or a load.  A failure only stops it
 * (the pages left fault in when used), so it returns what it did. */
struct kvshm_populated kvshm_populate(void *base, uint64_t len,
                                      unsigned rank, unsigned nranks,
                                      uint64_t bound);

#endif /* MPIKVS_SHM_POPULATE_H */
