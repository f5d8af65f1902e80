/*
 * tier_read.c - the tier's lock-free readers (tier_private.h): a lookup
 * is a read section of the control block's sequence lock (seqlock.h)
 * over a bounded chain walk, and a hit is only a value that verifies.
 */
#include <sched.h>
#include <string.h>

#include "seqlock.h"
#include "spin.h"
#include "tier_private.h"

enum walk_result { WALK_FOUND, WALK_MISS, WALK_TORN };

/*
 * Ask for an entry's first four cache lines at once: the header, the key
 * and (for the 80-byte keys and 104-byte values of a surrogate cache) the
 * value then arrive in one memory latency instead of one after another.
 */
static inline void prefetch_entry(const struct kvshm_tier_entry *e)
{
    const char *p = (const char *)e;

    __builtin_prefetch(p + 64);
    __builtin_prefetch(p + 128);
    __builtin_prefetch(p + 192);
}

/*
 * Follow the chain of hash in a snapshot (nbuckets, top, entries).
 * Anything out of bounds means the snapshot raced a publication, or a
 * region is damaged: limits past the files are never read.
 */
static enum walk_result walk(const struct kvshm_tier *t, uint64_t hash,
                             const void *key, size_t key_len,
                             uint64_t nbuckets, uint64_t top,
                             uint64_t entries, struct kvshm_tier_entry **found,
                             uint32_t *value_len)
{
    uint64_t off, steps = 0, bound = walk_bound(entries, top);

    if (nbuckets == 0 || (nbuckets & (nbuckets - 1)) ||
        nbuckets > t->max_buckets || top > t->entries->size)
        return WALK_TORN;
    off = (uint64_t)LOAD(&t->buckets[hash & (nbuckets - 1)].head) *
          KVSHM_TIER_UNIT;
    while (off) {
        struct kvshm_tier_entry *e;
        uint32_t klen;

        if (off < ENTRIES_START || off + sizeof(*e) > top || ++steps > bound)
            return WALK_TORN;
        e = entry_at(t, off);
        prefetch_entry(e);
        klen = LOAD(&e->key_len);
        if (LOAD(&e->hash) == hash && klen == key_len) {
            /* loaded once: the length checked is the length copied */
            uint32_t vlen = LOAD(&e->value_len);
            if (off + kvshm_entry_size(klen, vlen) > top)
                return WALK_TORN;
            if (memcmp(entry_key(e), key, key_len) == 0) {
                *found = e;
                *value_len = vlen;
                return WALK_FOUND;
            }
        }
        off = (uint64_t)LOAD(&e->next) * KVSHM_TIER_UNIT;
    }
    return WALK_MISS;
}

/*
 * The writer is in mid-publication.  Spin briefly (publications are
 * short), then yield the core (on an oversubscribed node the writer may
 * need it), and give up when the writer has been gone for stall_ms.
 */
static int wait_for_writer(struct kvshm_tier *t, unsigned *spins,
                           uint64_t *deadline)
{
    return kvshm_spin_wait(++*spins, 256, t->stall_ms, deadline)
               ? MPIKVS_OK
               : MPIKVS_ERR_STALLED;
}

/* How often a lookup re-reads an entry that does not verify under a
 * stable seq before it calls the entry damaged. */
#define BAD_ENTRY_RETRIES 4u

/*
 * One consistent lookup.  With value/cap it copies the value inside the
 * read section; *entry and *gen describe what was found.  A hit is only
 * a value that matches the entry's checksum: with value, the copy; else
 * the bytes in place, checked inside the read section.
 */
static int lookup(struct kvshm_tier *t, uint64_t hash, const void *key,
                  size_t key_len, void *value, size_t cap, size_t *value_len,
                  struct kvshm_tier_entry **entry, uint64_t *gen)
{
    struct kvshm_tier_control *ctl = t->ctl;
    uint64_t deadline = 0;
    unsigned spins = 0, bad = 0;

    t->lookups++;
    for (;;) {
        struct kvshm_tier_entry *e = NULL;
        enum walk_result r;
        uint64_t s1, sum = 0, nbuckets, top;
        uint32_t vlen = 0;
        bool whole = false;

        s1 = kvshm_seq_read_begin(&ctl->seq);
        if (s1 & 1) {
            int rc = wait_for_writer(t, &spins, &deadline);
            if (rc != MPIKVS_OK)
                return rc;
            continue;
        }
        nbuckets = LOAD(&ctl->nbuckets);
        top = LOAD(&ctl->entries_top);
        if (nbuckets > t->max_buckets || top > t->entries->size)
            refresh_limits(t);   /* the writer grew a region, or damage */
        r = walk(t, hash, key, key_len, nbuckets, top, LOAD(&ctl->entries),
                 &e, &vlen);
        if (r == WALK_FOUND) {
            sum = LOAD(&e->checksum);
            if (!value)
                whole = value_sum(hash, key_len, entry_value(e, key_len),
                                  vlen) == sum;
            else if (vlen <= cap)
                memcpy(value, entry_value(e, key_len), vlen);
        }
        if (!kvshm_seq_read_stable(&ctl->seq, s1)) {
            t->retries++;
            continue;
        }
        if (r == WALK_TORN)
            return MPIKVS_ERR_CORRUPT; /* out of bounds with no writer */
        if (r == WALK_MISS) {
            t->misses++;
            return MPIKVS_MISS;
        }
        if (value && vlen <= cap)
            whole = value_sum(hash, key_len, value, vlen) == sum;
        else if (value)
            whole = true;   /* TOOBIG copies nothing: no value to trust */
        if (!whole) {
            /* Stable seq, yet a value that does not verify: a writer
             * that died mid-publication with no successor yet to repair,
             * or damage.  Never a hit. */
            t->retries++;
            if (++bad >= BAD_ENTRY_RETRIES)
                return MPIKVS_ERR_CORRUPT;
            sched_yield();
            continue;
        }
        t->hits++;
        *value_len = vlen;
        *entry = e;
        *gen = s1;
        return value && vlen > cap ? MPIKVS_ERR_TOOBIG : MPIKVS_OK;
    }
}

int kvshm_tier_get(struct kvshm_tier *t, const void *key, size_t key_len,
                   void *value, size_t cap, size_t *value_len)
{
    if (!key)
        return MPIKVS_ERR_INVAL;
    return kvshm_tier_get_hashed(t, kvshm_tier_key_hash(key, key_len), key,
                                 key_len, value, cap, value_len);
}

int kvshm_tier_get_hashed(struct kvshm_tier *t, uint64_t hash,
                          const void *key, size_t key_len, void *value,
                          size_t cap, size_t *value_len)
{
    struct kvshm_tier_entry *e;
    uint64_t gen;
    size_t len = 0;
    int rc;

    if (!t || !key || key_len == 0 || (!value && cap))
        return MPIKVS_ERR_INVAL;
    rc = lookup(t, hash, key, key_len, value ? value : (void *)"", cap, &len,
                &e, &gen);
    if (value_len && (rc == MPIKVS_OK || rc == MPIKVS_ERR_TOOBIG))
        *value_len = len;
    return rc;
}

int kvshm_tier_get_ref(struct kvshm_tier *t, const void *key, size_t key_len,
                       const void **value, size_t *value_len, uint64_t *gen)
{
    if (!key)
        return MPIKVS_ERR_INVAL;
    return kvshm_tier_get_ref_hashed(t, kvshm_tier_key_hash(key, key_len),
                                     key, key_len, value, value_len, gen);
}

int kvshm_tier_get_ref_hashed(struct kvshm_tier *t, uint64_t hash,
                              const void *key, size_t key_len,
                              const void **value, size_t *value_len,
                              uint64_t *gen)
{
    struct kvshm_tier_entry *e;
    size_t len = 0;
    uint64_t g = 0;
    int rc;

    if (!t || !key || key_len == 0 || !value)
        return MPIKVS_ERR_INVAL;
    rc = lookup(t, hash, key, key_len, NULL, 0, &len, &e, &g);
    if (rc != MPIKVS_OK)
        return rc;
    *value = entry_value(e, key_len);
    if (value_len)
        *value_len = len;
    if (gen)
        *gen = g;
    return MPIKVS_OK;
}

bool kvshm_tier_ref_valid(const struct kvshm_tier *t, uint64_t gen)
{
    /* the caller's reads of the referenced bytes were its read section */
    return kvshm_seq_read_stable(&t->ctl->seq, gen);
}

uint64_t kvshm_tier_generation(const struct kvshm_tier *t)
{
    return __atomic_load_n(&t->ctl->seq, __ATOMIC_ACQUIRE) & ~UINT64_C(1);
}

