/*
 * tier_private.h - what the tier's files share (shm/tier.c: creation,
 * opening, closing; tier_write.c: the writer; tier_read.c: the readers).
 *
 * The one-writer contract.  A tier has at most one writer at a time,
 * across processes too: kvshm_tier_open_writer claims the control
 * block's writer_pid by compare-and-swap (tier.c), and only the process
 * holding the claim calls tier_write.c's functions.  The writer alone
 * stores into the regions, so it reads them plainly and never races
 * itself; every store a reader could follow is made inside a
 * publication (the control block's sequence lock, seqlock.h), and goes
 * through STORE, an atomic store, since readers load the same words
 * concurrently.  Readers (tier_read.c) never store into the regions;
 * they load through LOAD or the seqlock's read section, check every
 * offset against a snapshot before following it, and count in private
 * memory (struct kvshm_tier's counters).  A writer that died leaves the
 * claim to the next one, which repairs before it publishes
 * (kvshm_tier_writer_recover).
 */
#ifndef MPIKVS_SHM_TIER_PRIVATE_H
#define MPIKVS_SHM_TIER_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "key_hash.h"
#include "tier.h"

#define ENTRIES_START   KVSHM_HEADER_SIZE
#define MAX_BUCKETS     (UINT64_C(1) << 31)
#define MIN_ENTRY_SIZE  kvshm_entry_size(1, 0)
#define PAGE            UINT64_C(4096)

struct kvshm_tier {
    struct kvshm_region        *index;
    struct kvshm_region        *entries;
    struct kvshm_tier_control  *ctl;
    struct kvshm_tier_bucket   *buckets;
    unsigned char              *ebase;       /* entries region mapping */
    uint64_t                    max_buckets; /* what the index file holds
                                              * (its mapping is larger: a
                                              * read past the file is a
                                              * SIGBUS) */
    bool                        writer;
    bool                        claimed;     /* writer_pid is ours */
    unsigned                    stall_ms;
    /* this process's counters: private memory, never a shared line */
    uint64_t                    lookups, hits, misses, retries;
};

#define LOAD(p)        __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static inline uint64_t round_page(uint64_t n)
{
    return (n + PAGE - 1) & ~(PAGE - 1);
}

static inline struct kvshm_tier_entry *entry_at(const struct kvshm_tier *t,
                                                uint64_t off)
{
    return (struct kvshm_tier_entry *)(t->ebase + off);
}

static inline unsigned char *entry_key(struct kvshm_tier_entry *e)
{
    return (unsigned char *)(e + 1);
}

static inline unsigned char *entry_value(struct kvshm_tier_entry *e,
                                         uint64_t key_len)
{
    return entry_key(e) + kvshm_align8(key_len);
}

/* The entry checksum of format.h: of the value, seeded with the key's hash
 * and both lengths. */
static inline uint64_t value_sum(uint64_t hash, uint64_t key_len,
                                 const void *value, uint64_t value_len)
{
    return XXH3_64bits_withSeed(value, value_len,
                                kvshm_tier_checksum_seed(hash, key_len,
                                                         value_len));
}

/* The buckets an index of len bytes holds. */
static inline uint64_t buckets_in(uint64_t len)
{
    return len < KVSHM_TIER_BUCKETS_OFFSET
               ? 0
               : (len - KVSHM_TIER_BUCKETS_OFFSET) /
                     sizeof(struct kvshm_tier_bucket);
}

/* A reader's limits after the writer grew a region: the file sizes again
 * (a system call, only when a snapshot is past the limits it knows). */
static inline void refresh_limits(struct kvshm_tier *t)
{
    kvshm_region_refresh(t->index);
    kvshm_region_refresh(t->entries);
    t->max_buckets = buckets_in(t->index->size);
}

/*
 * The most steps a chain walk may take: the control block's entry count,
 * but never more entries than fit below top (a count of 1e19 over a
 * cyclic chain would never end).
 */
static inline uint64_t walk_bound(uint64_t entries, uint64_t top)
{
    uint64_t fit = top > ENTRIES_START ? (top - ENTRIES_START) /
                                             MIN_ENTRY_SIZE
                                       : 0;

    return entries < fit ? entries : fit;
}

/* The writer, just after its claim: repair what a writer that died in
 * mid-publication left (an odd seq, a control block that does not add
 * up) before anything is published (tier_write.c). */
void kvshm_tier_writer_recover(struct kvshm_tier *t);

#endif /* MPIKVS_SHM_TIER_PRIVATE_H */
