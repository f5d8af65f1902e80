/*
 * tier.h - the read-only lookup tier: one writer, many lock-free readers.
 *
 * Two regions (SHMEMPMI's SHMEM-2 design): "<prefix>-index" holds a
 * control block and the buckets (head and tail offsets), "<prefix>-entries"
 * holds the entries (key, value, next offset) and only grows.  Every link
 * is an offset, so the entries region grows in place and the index is
 * rebuilt (the paper's Algorithm 3) without moving an entry.
 *
 * What a reader sees.  The writer brackets every change a reader could
 * follow (linking an entry, an in-place update, a rebuild) with a
 * sequence lock in the control block.  A lookup reads the sequence,
 * walks the chain with every offset bounds-checked, copies what it
 * returns, and reads the sequence again; if the writer published in
 * between, it starts over.  So a lookup returns the tier as it was
 * before or after each publication, never a half-written entry, and it
 * never takes a lock, never makes a system call, and never writes to
 * shared memory on its way.  Every entry carries a checksum of its key and
 * value (format.h), and a lookup checks what it returns against it: a
 * half-written value is never a hit.  A reader that finds the writer in
 * the middle of a publication for longer than its stall timeout (a writer
 * that died) gets MPIKVS_ERR_STALLED instead of hanging.
 *
 * A writer that died.  The next writer (kvshm_tier_open_writer() takes
 * over the claim of a dead process) finds seq odd and repairs the tier
 * before anything else: entries whose checksum fails are dropped
 * (counted in the stats), the index is relinked from the entries, and seq
 * is even again.  Every chain walk of the writer is bounded too; a
 * damaged index found on the way is repaired the same way.
 *
 * Zero copy.  kvshm_tier_get_ref() returns a pointer into the entries
 * region and the generation it was found in; the bytes are the value for
 * as long as kvshm_tier_ref_valid() says the generation is current.  The
 * mapping itself stays valid until kvshm_tier_close(), also across
 * growth: both regions are mapped with their maximum size from the start.
 *
 * Updates.  A put of an existing key with a value of the same length
 * rewrites the value in place; with another length it appends a new
 * entry, links it in the old one's place and marks the old one dead.
 *
 * Threads: a tier object is used by one thread at a time.  Any number of
 * processes may hold readers of the same tier; exactly one holds the
 * writer.
 */
#ifndef MPIKVS_SHM_TIER_H
#define MPIKVS_SHM_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "region.h"

#define KVSHM_TIER_DEFAULT_MAX_BYTES     (UINT64_C(1) << 30)
#define KVSHM_TIER_DEFAULT_INITIAL_BYTES (UINT64_C(1) << 20)
#define KVSHM_TIER_DEFAULT_BUCKETS       1024u
#define KVSHM_TIER_DEFAULT_MAX_LOAD      1.0
#define KVSHM_TIER_DEFAULT_STALL_MS      10000u

struct kvshm_tier;

struct kvshm_tier_spec {
    struct kvshm_region_spec region; /* dir, job, node, owner, step; tag is
                                      * the prefix; kind and sizes unused */
    uint64_t max_bytes;      /* entries region limit; 0: default (1 GiB) */
    uint64_t initial_bytes;  /* entries region at creation; 0: 1 MiB */
    uint64_t buckets;        /* initial buckets (rounded up to 2^k); 0: 1024 */
    double   max_load;       /* rebuild when entries/buckets exceeds it;
                              * 0: 1.0 */
};

struct kvshm_tier_reader_opts {
    unsigned stall_ms;       /* 0: KVSHM_TIER_DEFAULT_STALL_MS */
    uid_t    expect_uid;     /* as struct kvshm_open_opts; 0 is root */
    bool     held;           /* as struct kvshm_open_opts */
};

struct kvshm_tier_stats {
    /* from the shared control block */
    uint64_t entries, nbuckets, live_bytes, dead_bytes, entries_top,
             entries_size, updates, rebuilds, rebuild_failures, growths,
             clears, writer_pid,
             dropped,   /* entries whose checksum failed at a rebuild */
             repairs;   /* writers that repaired what a dead one left */
    double   load_factor;
    /* this process's own lookups (never shared: kept off the hit path's
     * shared cache lines) */
    uint64_t lookups, hits, misses, retries;
};

/* Size a tier of bytes in all (index and entries) for entries of these
 * key and value lengths: every byte reserved at creation, a bucket for
 * each entry that fits.  Sets max_bytes, initial_bytes and buckets. */
void kvshm_tier_spec_for_bytes(struct kvshm_tier_spec *spec, uint64_t bytes,
                               size_t key_len, size_t value_len);

/* Create both regions and return the writer.  Each region is complete
 * (header and control block) before it has a name.  With an explicit
 * owner (spec->region.uid is not KVSHM_ANY_UID: the SPANK plugin makes
 * the tier as root for the job user) the tier is made for that owner:
 * *writer holds no writer claim, may not put, and its close touches
 * nothing in the regions, which their owner may truncate at any time;
 * the owner's process opens it with kvshm_tier_open_writer().  On failure
 * nothing is left behind.  Returns MPIKVS_OK or a code of
 * kvshm_region_create(). */
int kvshm_tier_create(const struct kvshm_tier_spec *spec,
                      struct kvshm_tier **writer, mpikvs_error_t *err);

/* Open an existing tier read-only (PROT_READ).  opts may be NULL. */
int kvshm_tier_open(const char *dir, const char *job, const char *node,
                    const char *prefix,
                    const struct kvshm_tier_reader_opts *opts,
                    struct kvshm_tier **reader, mpikvs_error_t *err);

/* Open an existing tier (one the SPANK plugin made) as its writer.  A
 * tier has one writer at a time: MPIKVS_ERR_EXISTS while another live
 * process holds it.  The claim of a process that is gone is taken over,
 * and what it left in mid-publication repaired (see above).
 * kvshm_tier_close() lets go of it. */
int kvshm_tier_open_writer(const char *dir, const char *job,
                           const char *node, const char *prefix,
                           const struct kvshm_tier_reader_opts *opts,
                           struct kvshm_tier **writer, mpikvs_error_t *err);

/* Writer only: drop every entry, in one publication.  References taken
 * before it are no longer valid. */
int kvshm_tier_clear(struct kvshm_tier *t, mpikvs_error_t *err);

/* Writer only: insert key, or replace its value.  Grows the entries
 * region and rebuilds the index as needed.  Returns MPIKVS_OK,
 * MPIKVS_ERR_FULL (entries region at max_bytes), MPIKVS_ERR_NOSPACE,
 * MPIKVS_ERR_TOOBIG (key or value over 2^31 bytes), MPIKVS_ERR_INVAL. */
int kvshm_tier_put(struct kvshm_tier *t, const void *key, size_t key_len,
                   const void *value, size_t value_len, mpikvs_error_t *err);

/* Copy the value of key into value (capacity cap); *value_len gets its
 * length.  Returns MPIKVS_OK, MPIKVS_MISS, MPIKVS_ERR_TOOBIG (cap too
 * small; *value_len says how much is needed), MPIKVS_ERR_STALLED,
 * MPIKVS_ERR_INVAL (no key, or no buffer with cap > 0) or
 * MPIKVS_ERR_CORRUPT (a link out of bounds, or an entry whose checksum
 * fails, while no writer was at work: the regions were damaged, or a
 * writer died and none has repaired the tier yet). */
int kvshm_tier_get(struct kvshm_tier *t, const void *key, size_t key_len,
                   void *value, size_t cap, size_t *value_len);

/* The same, for a caller that has hashed the key already: hash must be
 * kvshm_tier_key_hash(key, key_len) (key_hash.h), or the key is not
 * found (get) or is stored where no lookup finds it (put). */
int kvshm_tier_put_hashed(struct kvshm_tier *t, uint64_t hash,
                          const void *key, size_t key_len, const void *value,
                          size_t value_len, mpikvs_error_t *err);
int kvshm_tier_get_hashed(struct kvshm_tier *t, uint64_t hash,
                          const void *key, size_t key_len, void *value,
                          size_t cap, size_t *value_len);
int kvshm_tier_get_ref_hashed(struct kvshm_tier *t, uint64_t hash,
                              const void *key, size_t key_len,
                              const void **value, size_t *value_len,
                              uint64_t *gen);

/* Zero copy: *value points at the value inside the mapping (8-byte
 * aligned), *gen is the generation it was found in.  Returns as
 * kvshm_tier_get, but never MPIKVS_ERR_TOOBIG. */
int kvshm_tier_get_ref(struct kvshm_tier *t, const void *key, size_t key_len,
                       const void **value, size_t *value_len, uint64_t *gen);

/* Whether the bytes behind a reference of generation gen are still the
 * value (no publication since).  Read them first, then ask. */
bool kvshm_tier_ref_valid(const struct kvshm_tier *t, uint64_t gen);

/* The current generation (even; changes with every publication). */
uint64_t kvshm_tier_generation(const struct kvshm_tier *t);

void kvshm_tier_stats(const struct kvshm_tier *t,
                      struct kvshm_tier_stats *out);

/* Unmap and free; the regions stay.  *t becomes NULL. */
void kvshm_tier_close(struct kvshm_tier **t);

/* Remove both regions of a tier.  Returns MPIKVS_OK, or the first error
 * (a part that is already gone is not an error). */
int kvshm_tier_unlink(const char *dir, const char *job, const char *node,
                      const char *prefix);

#endif /* MPIKVS_SHM_TIER_H */
