/*
 * tier_write.c - the tier's one writer (tier_private.h states the
 * contract): publications, put, clear, the index's rebuild and the
 * repair after a writer that died.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors_internal.h"
#include "seqlock.h"
#include "tier_private.h"

static bool entry_verifies(struct kvshm_tier_entry *e)
{
    return kvshm_tier_key_hash(entry_key(e), e->key_len) == e->hash &&
           value_sum(e->hash, e->key_len, entry_value(e, e->key_len),
                     e->value_len) == e->checksum;
}

/* ---- the writer's side of the sequence lock ---- */

static void publish_begin(struct kvshm_tier *t)
{
    kvshm_seq_write_begin(&t->ctl->seq);
}

static void publish_end(struct kvshm_tier *t)
{
    kvshm_seq_write_end(&t->ctl->seq);
}

/* An entry offset the writer may follow: inside the entries in use, and
 * the whole entry too. */
static struct kvshm_tier_entry *entry_in(const struct kvshm_tier *t,
                                         uint64_t off, uint64_t top)
{
    struct kvshm_tier_entry *e;

    if (off < ENTRIES_START || off % KVSHM_TIER_UNIT ||
        off + sizeof(*e) > top)
        return NULL;
    e = entry_at(t, off);
    if (off + kvshm_entry_size(e->key_len, e->value_len) > top)
        return NULL;
    return e;
}

/* The writer's view of the control block: what a repair must fix before
 * the writer may trust it. */
static bool control_sane(const struct kvshm_tier *t)
{
    const struct kvshm_tier_control *ctl = t->ctl;
    uint64_t n = ctl->nbuckets;

    return n && !(n & (n - 1)) && n <= t->max_buckets &&
           KVSHM_TIER_BUCKETS_OFFSET + n * sizeof(struct kvshm_tier_bucket) <=
               t->index->size &&
           ctl->entries_top >= ENTRIES_START &&
           ctl->entries_top <= t->entries->size &&
           ctl->entries_top % KVSHM_TIER_UNIT == 0;
}

static void link_at_tail(struct kvshm_tier *t, struct kvshm_tier_bucket *b,
                         uint32_t unit)
{
    if (b->head == 0)
        STORE(&b->head, unit);
    else
        STORE(&entry_at(t, (uint64_t)b->tail * KVSHM_TIER_UNIT)->next, unit);
    STORE(&b->tail, unit);
}

/*
 * Check every entry below limit (the writer alone changes them: plain
 * reads, no publication needed).  A live entry that does not verify is
 * marked dead, so no relink links it again; readers never follow the
 * flag and check values themselves.  Stops at the first entry that cannot
 * be an entry (its lengths run past limit): what lies beyond cannot be
 * parsed.  Returns the end of the last whole entry.
 */
static uint64_t sweep(struct kvshm_tier *t, uint64_t limit)
{
    uint64_t off = ENTRIES_START;

    while (off + sizeof(struct kvshm_tier_entry) <= limit) {
        struct kvshm_tier_entry *e = entry_at(t, off);
        if (e->key_len == 0 || e->key_len > INT32_MAX ||
            e->value_len > INT32_MAX || !entry_in(t, off, limit))
            break;
        if (!(e->flags & KVSHM_ENTRY_DEAD) && !entry_verifies(e)) {
            STORE(&e->flags, e->flags | KVSHM_ENTRY_DEAD);
            t->ctl->dropped++;
        }
        off += kvshm_entry_size(e->key_len, e->value_len);
    }
    return off;
}

/*
 * Relink every live entry below top into nbuckets buckets, in entry
 * order, and set the counts from what was linked.  Inside a publication.
 */
static void relink(struct kvshm_tier *t, uint64_t nbuckets, uint64_t top)
{
    struct kvshm_tier_control *ctl = t->ctl;
    uint64_t off, mask = nbuckets - 1, live = 0, live_bytes = 0;

    STORE(&ctl->nbuckets, nbuckets);
    memset(t->buckets, 0, nbuckets * sizeof(struct kvshm_tier_bucket));
    for (off = ENTRIES_START; off < top;) {
        struct kvshm_tier_entry *e = entry_at(t, off);
        uint64_t size = kvshm_entry_size(e->key_len, e->value_len);
        if (!(e->flags & KVSHM_ENTRY_DEAD)) {
            STORE(&e->next, 0);
            link_at_tail(t, &t->buckets[e->hash & mask],
                         (uint32_t)(off / KVSHM_TIER_UNIT));
            live++;
            live_bytes += size;
        }
        off += size;
    }
    STORE(&ctl->entries, live);
    STORE(&ctl->entries_top, top);
    ctl->live_bytes = live_bytes;
    ctl->dead_bytes = top - ENTRIES_START - live_bytes;
}

/*
 * Algorithm 3 of the SHMEMPMI paper: a bigger bucket array, then every
 * live entry relinked in entry order.  Entries do not move, so offsets
 * held anywhere stay valid.  A tier whose index cannot grow keeps working
 * at a higher load factor: the failure is counted, not returned.
 */
static void rebuild(struct kvshm_tier *t, uint64_t new_buckets)
{
    struct kvshm_tier_control *ctl = t->ctl;
    uint64_t top, need = round_page(KVSHM_TIER_BUCKETS_OFFSET +
                                    new_buckets *
                                        sizeof(struct kvshm_tier_bucket));

    /* the index grows (its file) up to its mapping */
    if (new_buckets > buckets_in(t->index->map_len) ||
        kvshm_region_grow(t->index, need, NULL) != MPIKVS_OK) {
        ctl->rebuild_failures++;
        return;
    }
    t->max_buckets = buckets_in(t->index->size);
    top = sweep(t, ctl->entries_top);   /* outside: readers go on */
    publish_begin(t);
    relink(t, new_buckets, top);
    publish_end(t);
    ctl->rebuilds++;
}

/*
 * Make a tier the last writer left in any state consistent again: keep
 * (or make) seq odd, so readers wait instead of following links, drop
 * what does not verify, relink everything from the entries themselves,
 * and end on the even seq after it.
 */
static void repair(struct kvshm_tier *t)
{
    struct kvshm_tier_control *ctl = t->ctl;
    uint64_t n = ctl->nbuckets, limit, top;

    kvshm_seq_write_begin(&ctl->seq);   /* odd already if a writer died */
    if (!n || (n & (n - 1)) || n > t->max_buckets ||
        KVSHM_TIER_BUCKETS_OFFSET + n * sizeof(struct kvshm_tier_bucket) >
            t->index->size) {
        /* the most buckets the index holds now */
        for (n = 1; n * 2 <= t->max_buckets &&
                    KVSHM_TIER_BUCKETS_OFFSET +
                            n * 2 * sizeof(struct kvshm_tier_bucket) <=
                        t->index->size;
             n *= 2)
            ;
    }
    limit = ctl->entries_top;
    if (limit < ENTRIES_START || limit > t->entries->size ||
        limit % KVSHM_TIER_UNIT)
        limit = t->entries->size;
    top = sweep(t, limit);
    relink(t, n, top);
    kvshm_seq_write_end(&ctl->seq);
    ctl->repairs++;
}

static int grow_entries(struct kvshm_tier *t, uint64_t need,
                        mpikvs_error_t *err)
{
    uint64_t size = t->entries->size * 2;

    if (need > t->entries->map_len) {
        char used[32], max[32];
        kvshm_format_bytes(used, sizeof(used), t->ctl->entries_top);
        kvshm_format_bytes(max, sizeof(max), t->entries->map_len);
        return kvshm_fail(err, MPIKVS_ERR_FULL,
                          "tier %s is full: %s of %s used", t->entries->path,
                          used, max);
    }
    if (size < need)
        size = round_page(need);
    if (size > t->entries->map_len)
        size = t->entries->map_len;
    int rc = kvshm_region_grow(t->entries, size, err);
    if (rc == MPIKVS_OK)
        t->ctl->growths++;
    return rc;
}

struct place {
    struct kvshm_tier_bucket *b;
    struct kvshm_tier_entry  *old, *prev;   /* the key's entry, its chain
                                             * predecessor; NULL: none */
    uint64_t                  off;          /* of old */
};

/*
 * The writer's walk of key's chain, bounded like a reader's: at most
 * walk_bound() + 1 steps, every link inside the entries in use, and a
 * chain that ends where its bucket's tail says.  false: the index is
 * damaged.  control_sane() has checked entries_top.
 */
static bool find(struct kvshm_tier *t, uint64_t hash, const void *key,
                 size_t key_len, struct place *p)
{
    struct kvshm_tier_control *ctl = t->ctl;
    uint64_t top = ctl->entries_top, steps = 0, off;
    uint64_t bound = walk_bound(ctl->entries, top) + 1;
    struct kvshm_tier_entry *e = NULL;

    *p = (struct place){.b = &t->buckets[hash & (ctl->nbuckets - 1)]};
    for (off = (uint64_t)p->b->head * KVSHM_TIER_UNIT; off;
         off = (uint64_t)e->next * KVSHM_TIER_UNIT) {
        if (e)
            p->prev = e;
        e = entry_in(t, off, top);
        if (!e || ++steps > bound)
            return false;
        if (e->hash == hash && e->key_len == key_len &&
            memcmp(entry_key(e), key, key_len) == 0) {
            p->old = e;
            p->off = off;
            return true;
        }
    }
    p->prev = NULL;
    /* appending follows the tail: it must be the chain's last entry */
    return e ? (uint64_t)p->b->tail * KVSHM_TIER_UNIT ==
                   (uint64_t)((unsigned char *)e - t->ebase)
             : p->b->tail == 0;
}

int kvshm_tier_put(struct kvshm_tier *t, const void *key, size_t key_len,
                   const void *value, size_t value_len, mpikvs_error_t *err)
{
    return kvshm_tier_put_hashed(t, kvshm_tier_key_hash(key, key_len), key,
                                 key_len, value, value_len, err);
}

int kvshm_tier_put_hashed(struct kvshm_tier *t, uint64_t hash,
                          const void *key, size_t key_len, const void *value,
                          size_t value_len, mpikvs_error_t *err)
{
    struct kvshm_tier_control *ctl;
    struct kvshm_tier_entry *old, *e;
    struct place p;
    uint64_t top, size;
    uint32_t unit;
    int rc;

    if (!t || !t->writer)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "only the tier's writer may put");
    if (!key || key_len == 0 || (!value && value_len))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "a tier key needs at least one byte");
    if (key_len > INT32_MAX || value_len > INT32_MAX)
        return kvshm_fail(err, MPIKVS_ERR_TOOBIG,
                          "tier key of %zu or value of %zu bytes is over 2 GiB",
                          key_len, value_len);
    ctl = t->ctl;
    if (!control_sane(t) || !find(t, hash, key, key_len, &p)) {
        /* damaged under us (no writer but us changes it): rebuild the
         * index from the entries, once */
        repair(t);
        if (!find(t, hash, key, key_len, &p))
            return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                              "tier %s is damaged beyond repair",
                              t->index->path);
    }
    old = p.old;

    if (old && old->value_len == value_len) {
        publish_begin(t);
        memcpy(entry_value(old, key_len), value, value_len);
        STORE(&old->checksum, value_sum(hash, key_len, value, value_len));
        publish_end(t);
        ctl->updates++;
        return MPIKVS_OK;
    }

    /* A new entry is written past entries_top, where no reader looks,
     * and only then linked in one publication. */
    size = kvshm_entry_size(key_len, value_len);
    top = ctl->entries_top;
    if (top + size > t->entries->size) {
        rc = grow_entries(t, top + size, err);
        if (rc != MPIKVS_OK)
            return rc;
    }
    if ((top + size) / KVSHM_TIER_UNIT > UINT32_MAX)
        return kvshm_fail(err, MPIKVS_ERR_FULL, "tier %s is full",
                          t->entries->path);
    e = entry_at(t, top);
    memset(e, 0, size);
    e->hash = hash;
    e->key_len = (uint32_t)key_len;
    e->value_len = (uint32_t)value_len;
    memcpy(entry_key(e), key, key_len);
    if (value_len)
        memcpy(entry_value(e, key_len), value, value_len);
    e->checksum = value_sum(hash, key_len, entry_value(e, key_len),
                            value_len);
    unit = (uint32_t)(top / KVSHM_TIER_UNIT);

    publish_begin(t);
    if (old) {
        uint32_t old_unit = (uint32_t)(p.off / KVSHM_TIER_UNIT);
        e->next = old->next;
        if (p.prev)
            STORE(&p.prev->next, unit);
        else
            STORE(&p.b->head, unit);
        if (p.b->tail == old_unit)
            STORE(&p.b->tail, unit);
        STORE(&old->flags, old->flags | KVSHM_ENTRY_DEAD);
    } else {
        link_at_tail(t, p.b, unit);
        STORE(&ctl->entries, ctl->entries + 1);
    }
    STORE(&ctl->entries_top, top + size);
    publish_end(t);

    if (old) {
        uint64_t old_size = kvshm_entry_size(old->key_len, old->value_len);
        ctl->dead_bytes += old_size;
        ctl->live_bytes += size - old_size;
        ctl->updates++;
    } else {
        ctl->live_bytes += size;
        if ((double)ctl->entries * 1000.0 >
            (double)ctl->max_load_milli * (double)ctl->nbuckets)
            rebuild(t, ctl->nbuckets * 2);
    }
    return MPIKVS_OK;
}

int kvshm_tier_clear(struct kvshm_tier *t, mpikvs_error_t *err)
{
    struct kvshm_tier_control *ctl;

    if (!t || !t->writer)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "only the tier's writer may clear it");
    ctl = t->ctl;
    if (!control_sane(t))
        repair(t);   /* nbuckets says how much to clear */
    /* One publication: a reader finds every entry or, after it, none.
     * The entry bytes stay until new entries overwrite them, past the
     * new entries_top where no reader follows a link. */
    publish_begin(t);
    memset(t->buckets, 0, ctl->nbuckets * sizeof(struct kvshm_tier_bucket));
    STORE(&ctl->entries, 0);
    STORE(&ctl->entries_top, ENTRIES_START);
    publish_end(t);
    ctl->live_bytes = 0;
    ctl->dead_bytes = 0;
    ctl->clears++;
    return MPIKVS_OK;
}


void kvshm_tier_writer_recover(struct kvshm_tier *t)
{
    /* An odd seq with the claim ours: the last writer died publishing. */
    if ((LOAD(&t->ctl->seq) & 1) || !control_sane(t))
        repair(t);
}
