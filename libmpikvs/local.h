/*
 * local.h - the own node's entries, read where they are (local.c): what
 * mpikvs_foreach_local visits, mpikvs_save writes and mpikvs_load asks
 * about.
 */
#ifndef MPIKVS_LOCAL_H
#define MPIKVS_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "handle.h"

/* Called with an entry's copy: its key, then its value (key_size +
 * value_size bytes, valid during the call).  Nonzero stops the scan. */
typedef int (*kvs_entry_fn)(mpikvs_t *kvs, const unsigned char *entry,
                            void *arg);

/* Visit every live entry of the own node's buckets [first, end) that
 * verifies, each key once per bucket (the newest of two slots of one
 * key).  A slot that does not verify is read again (MPIKVS_CHECKSUM_
 * RETRIES times), then left out and counted in *torn (may be NULL); it
 * is never marked invalid: a scan writes nothing.  Returns 0, or what fn
 * returned to stop, or -ENOMEM. */
int kvs_scan_local(mpikvs_t *kvs, uint64_t first, uint64_t end,
                   kvs_entry_fn fn, void *arg, uint64_t *torn);

/* Whether any slot of the own node's buckets [first, end) is live
 * (written and not invalid) and of the table's generation: by its meta
 * word alone, and in a table cleared before, its key's hash. */
bool kvs_local_any(const mpikvs_t *kvs, uint64_t first, uint64_t end);

/* The part [*first, *end) of the own node's buckets that is local rank
 * part's of parts. */
static inline void kvs_local_share(const mpikvs_t *kvs, int part, int parts,
                                   uint64_t *first, uint64_t *end)
{
    *first = (uint64_t)(((unsigned __int128)kvs->tab.nbuckets *
                         (unsigned)part) / (unsigned)parts);
    *end = (uint64_t)(((unsigned __int128)kvs->tab.nbuckets *
                       (unsigned)(part + 1)) / (unsigned)parts);
}

#endif /* MPIKVS_LOCAL_H */
