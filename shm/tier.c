/*
 * tier.c - the read-only lookup tier: one writer, lock-free readers.
 *
 * Readers and the writer meet in the control block's sequence lock
 * (format.h), whose protocol seqlock.h explains: the writer makes seq
 * odd around every change a reader could follow (a publication), and a
 * reader whose loads saw any store of one retries.  While it walks, a
 * reader may see links and lengths from
 * the middle of a publication; every offset is therefore checked against
 * the snapshot of entries_top before it is followed, and a chain walk is
 * bounded by the entry count, so a torn read costs a retry, never a fault
 * or a loop.  Both regions are mapped for their largest size, beyond the
 * end of their files: every limit (buckets, entries_top) is taken from
 * the file sizes, never from the mappings (a read past the end of a file
 * is a SIGBUS), and the entry count from the control block is capped by
 * what entries_top can hold.  Key and value bytes are read with plain
 * memcmp/memcpy (seqlock.h).  Then the value is checked against the
 * entry's checksum as well: the sequence
 * cannot vouch for a writer that died in mid-publication, so a hit is
 * only ever a value that verifies.
 *
 * A writer killed in mid-publication leaves seq odd and possibly a half
 * written value or half linked chain.  The next writer repairs before it
 * publishes anything: it keeps seq odd, drops every entry that does not
 * verify, relinks the index from the entries and ends on an even seq.
 * The writer's own chain walks are bounded like a reader's; one that finds
 * the index damaged repairs it too.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "errors_internal.h"
#include "key_hash.h"
#include "seqlock.h"
#include "spin.h"
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

enum walk_result { WALK_FOUND, WALK_MISS, WALK_TORN };

#define LOAD(p)        __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static uint64_t pow2_ceil(uint64_t n)
{
    uint64_t p = 1;

    while (p < n)
        p <<= 1;
    return p;
}

static uint64_t round_page(uint64_t n)
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

/* ---- creation and opening ---- */

static int check_tier_spec(const struct kvshm_tier_spec *spec,
                           uint64_t *max_bytes, uint64_t *initial,
                           uint64_t *buckets, double *max_load,
                           mpikvs_error_t *err)
{
    *max_bytes = spec->max_bytes ? spec->max_bytes
                                 : KVSHM_TIER_DEFAULT_MAX_BYTES;
    *initial = spec->initial_bytes ? spec->initial_bytes
                                   : KVSHM_TIER_DEFAULT_INITIAL_BYTES;
    *buckets = pow2_ceil(spec->buckets ? spec->buckets
                                       : KVSHM_TIER_DEFAULT_BUCKETS);
    *max_load = spec->max_load > 0 ? spec->max_load
                                   : KVSHM_TIER_DEFAULT_MAX_LOAD;
    if (*max_bytes > KVSHM_TIER_MAX_BYTES || *max_bytes < PAGE)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "tier size %llu is out of range 4 KiB..32 GiB",
                          (unsigned long long)*max_bytes);
    *initial = round_page(*initial < *max_bytes ? *initial : *max_bytes);
    if (*initial > *max_bytes)
        *initial = *max_bytes;
    if (*buckets > MAX_BUCKETS)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "tier bucket count %llu is above 2^31",
                          (unsigned long long)*buckets);
    if (!(*max_load < 1e12))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "tier load factor %g is out of range", *max_load);
    return MPIKVS_OK;
}

/* The buckets an index of len bytes holds. */
static uint64_t buckets_in(uint64_t len)
{
    return len < KVSHM_TIER_BUCKETS_OFFSET
               ? 0
               : (len - KVSHM_TIER_BUCKETS_OFFSET) /
                     sizeof(struct kvshm_tier_bucket);
}

/* Point the tier at the parts of its mapped regions.  The index mapping
 * was reserved for the most buckets the tier may ever have; what may be
 * read is what its file holds. */
static void attach(struct kvshm_tier *t)
{
    char *index = t->index->base;

    t->ctl = (struct kvshm_tier_control *)(index + KVSHM_HEADER_SIZE);
    t->buckets = (struct kvshm_tier_bucket *)(index +
                                              KVSHM_TIER_BUCKETS_OFFSET);
    t->ebase = t->entries->base;
    t->max_buckets = buckets_in(t->index->size);
}

/* A reader's limits after the writer grew a region: the file sizes again
 * (a system call, only when a snapshot is past the limits it knows). */
static void refresh_limits(struct kvshm_tier *t)
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

void kvshm_tier_spec_for_bytes(struct kvshm_tier_spec *spec, uint64_t bytes,
                               size_t key_len, size_t value_len)
{
    uint64_t entry = kvshm_entry_size(key_len, value_len);
    uint64_t buckets = 64, index_bytes;

    /* a bucket for every entry that fits, the rest for entries */
    while (buckets * 2 * (entry + sizeof(struct kvshm_tier_bucket)) <= bytes)
        buckets *= 2;
    index_bytes = round_page(KVSHM_TIER_BUCKETS_OFFSET +
                             buckets * sizeof(struct kvshm_tier_bucket));
    spec->max_bytes = bytes > index_bytes + PAGE
                          ? (bytes - index_bytes) & ~(PAGE - 1)
                          : PAGE;
    spec->initial_bytes = spec->max_bytes;
    spec->buckets = buckets;
}

struct index_fill {
    uint64_t buckets, max_load_milli, writer_pid;
};

/* The control block, written before the index region has a name: once
 * named it belongs to its owner, who may truncate it under any mapping.
 * Fresh pages from posix_fallocate are zero: no bucket is linked. */
static int fill_index(void *base, uint64_t size, void *arg,
                      mpikvs_error_t *err)
{
    const struct index_fill *f = arg;
    struct kvshm_tier_control *ctl =
        (struct kvshm_tier_control *)((char *)base + KVSHM_HEADER_SIZE);

    (void)size;
    (void)err;
    ctl->nbuckets = f->buckets;
    ctl->entries_top = ENTRIES_START;
    ctl->hash_seed = KVSHM_KEY_SEED;
    ctl->max_load_milli = f->max_load_milli;
    ctl->writer_pid = f->writer_pid;
    return MPIKVS_OK;
}

int kvshm_tier_create(const struct kvshm_tier_spec *spec,
                      struct kvshm_tier **out, mpikvs_error_t *err)
{
    char index_name[KVSHM_NAME_MAX + 1], entries_name[KVSHM_NAME_MAX + 1];
    struct kvshm_region_spec rs = spec->region;
    uint64_t max_bytes, initial, buckets, max_buckets, most_entries;
    double max_load;
    struct kvshm_tier *t;
    struct index_fill fill;
    /* Made for another owner (the SPANK plugin, as root, for the job
     * user): that owner's process becomes the writer, and nothing here
     * touches the regions once they are named. */
    bool for_owner = spec->region.uid != KVSHM_ANY_UID;
    int rc;

    *out = NULL;
    rc = check_tier_spec(spec, &max_bytes, &initial, &buckets, &max_load,
                         err);
    if (rc != MPIKVS_OK)
        return rc;
    rc = kvshm_tier_region_names(rs.job, rs.node, rs.tag, index_name,
                                 entries_name, err);
    if (rc != MPIKVS_OK)
        return rc;
    t = calloc(1, sizeof(*t));
    if (!t)
        return kvshm_fail(err, -ENOMEM, "out of memory creating a tier");

    /* Reserve address space for the largest index the entries can ever
     * need, so a rebuild never moves the mapping under a reader. */
    most_entries = max_bytes / MIN_ENTRY_SIZE;
    max_buckets = pow2_ceil((uint64_t)((double)most_entries / max_load) + 1);
    if (max_buckets < buckets)
        max_buckets = buckets;
    if (max_buckets > MAX_BUCKETS)
        max_buckets = MAX_BUCKETS;

    char index_tag[KVSHM_TAG_MAX], entries_tag[KVSHM_TAG_MAX];
    /* the prefix made names above: the tags fit */
    kvshm_tier_tags(spec->region.tag, index_tag, entries_tag, NULL);
    rs.tag = index_tag;
    rs.kind = KVSHM_KIND_TIER_INDEX;
    rs.size = round_page(KVSHM_TIER_BUCKETS_OFFSET +
                         buckets * sizeof(struct kvshm_tier_bucket));
    rs.max_size = round_page(KVSHM_TIER_BUCKETS_OFFSET +
                             max_buckets * sizeof(struct kvshm_tier_bucket));
    fill.buckets = buckets;
    fill.max_load_milli = (uint64_t)(max_load * 1000.0);
    fill.writer_pid = for_owner ? 0 : (uint64_t)getpid();
    rs.fill = fill_index;
    rs.fill_arg = &fill;
    rc = kvshm_region_create(&rs, &t->index, err);
    if (rc != MPIKVS_OK)
        goto fail;

    rs.tag = entries_tag;
    rs.kind = KVSHM_KIND_TIER_ENTRIES;
    rs.size = initial;
    rs.max_size = max_bytes;
    rs.fill = NULL;   /* zero pages: no entry yet */
    rc = kvshm_region_create(&rs, &t->entries, err);
    if (rc != MPIKVS_OK)
        goto fail;

    attach(t);
    t->writer = t->claimed = !for_owner;
    t->stall_ms = KVSHM_TIER_DEFAULT_STALL_MS;
    *out = t;
    return MPIKVS_OK;

fail:
    if (t->index) {
        kvshm_region_close(&t->index);
        kvshm_region_unlink(spec->region.dir, index_name);
    }
    free(t);
    return rc;
}

/*
 * One writer at a time, also across processes that open the same tier
 * (two steps of a job on a node): the writer's pid in the control block,
 * taken by compare-and-swap, given back at close.  A pid that no longer
 * runs (a writer that died) is taken over.
 */
static int claim_writer(struct kvshm_tier *t, const char *prefix,
                        mpikvs_error_t *err)
{
    uint64_t self = (uint64_t)getpid(), cur;

    for (;;) {
        cur = __atomic_load_n(&t->ctl->writer_pid, __ATOMIC_ACQUIRE);
        if (cur == self)
            return MPIKVS_OK;
        if (cur != 0 && (kill((pid_t)cur, 0) == 0 || errno != ESRCH))
            return kvshm_fail(err, MPIKVS_ERR_EXISTS,
                              "tier %s already has a writer (pid %llu)",
                              prefix, (unsigned long long)cur);
        if (__atomic_compare_exchange_n(&t->ctl->writer_pid, &cur, self,
                                        false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return MPIKVS_OK;
    }
}

static bool control_sane(const struct kvshm_tier *t);
static void repair(struct kvshm_tier *t);

static int open_tier(const char *dir, const char *job, const char *node,
                     const char *prefix,
                     const struct kvshm_tier_reader_opts *opts, bool writer,
                     struct kvshm_tier **out, mpikvs_error_t *err)
{
    char index_name[KVSHM_NAME_MAX + 1], entries_name[KVSHM_NAME_MAX + 1];
    struct kvshm_open_opts oo = {.expect_uid = opts ? opts->expect_uid
                                                    : geteuid(),
                                 .writable = writer,
                                 .held = opts && opts->held};
    struct kvshm_tier *t;
    uint64_t index_len;
    int rc;

    *out = NULL;
    rc = kvshm_tier_region_names(job, node, prefix, index_name, entries_name,
                                 err);
    if (rc != MPIKVS_OK)
        return rc;
    t = calloc(1, sizeof(*t));
    if (!t)
        return kvshm_fail(err, -ENOMEM, "out of memory opening a tier");
    oo.kind = KVSHM_KIND_TIER_INDEX;
    rc = kvshm_region_open(dir, index_name, &oo, &t->index, err);
    if (rc != MPIKVS_OK)
        goto fail;
    oo.kind = KVSHM_KIND_TIER_ENTRIES;
    rc = kvshm_region_open(dir, entries_name, &oo, &t->entries, err);
    if (rc != MPIKVS_OK)
        goto fail;
    index_len = t->index->map_len;
    if (buckets_in(t->index->size) == 0 ||
        index_len < KVSHM_TIER_BUCKETS_OFFSET ||
        t->entries->map_len > KVSHM_TIER_MAX_BYTES) {
        rc = kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                        "tier %s has impossible region sizes", prefix);
        goto fail;
    }
    attach(t);
    if (LOAD(&t->ctl->hash_seed) != KVSHM_KEY_SEED) {
        /* its entries' hashes are not the ones we would look for */
        rc = kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                        "tier %s hashes its keys with seed %#llx, not "
                        "%#llx: damaged, or made by another mpikvs", prefix,
                        (unsigned long long)LOAD(&t->ctl->hash_seed),
                        (unsigned long long)KVSHM_KEY_SEED);
        goto fail;
    }
    t->stall_ms = opts && opts->stall_ms ? opts->stall_ms
                                         : KVSHM_TIER_DEFAULT_STALL_MS;
    if (writer && (rc = claim_writer(t, prefix, err)) != MPIKVS_OK)
        goto fail;
    t->writer = t->claimed = writer;
    /* An odd seq with the claim ours: the last writer died publishing. */
    if (writer && ((LOAD(&t->ctl->seq) & 1) || !control_sane(t)))
        repair(t);
    *out = t;
    return MPIKVS_OK;

fail:
    kvshm_region_close(&t->index);
    kvshm_region_close(&t->entries);
    free(t);
    return rc;
}

int kvshm_tier_open(const char *dir, const char *job, const char *node,
                    const char *prefix,
                    const struct kvshm_tier_reader_opts *opts,
                    struct kvshm_tier **reader, mpikvs_error_t *err)
{
    return open_tier(dir, job, node, prefix, opts, false, reader, err);
}

int kvshm_tier_open_writer(const char *dir, const char *job,
                           const char *node, const char *prefix,
                           const struct kvshm_tier_reader_opts *opts,
                           struct kvshm_tier **writer, mpikvs_error_t *err)
{
    return open_tier(dir, job, node, prefix, opts, true, writer, err);
}

void kvshm_tier_close(struct kvshm_tier **tp)
{
    struct kvshm_tier *t = tp ? *tp : NULL;

    if (!t)
        return;
    if (t->claimed) {   /* let the next writer in */
        uint64_t self = (uint64_t)getpid();
        __atomic_compare_exchange_n(&t->ctl->writer_pid, &self, 0, false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
    kvshm_region_close(&t->index);
    kvshm_region_close(&t->entries);
    free(t);
    *tp = NULL;
}

int kvshm_tier_unlink(const char *dir, const char *job, const char *node,
                      const char *prefix)
{
    char index_name[KVSHM_NAME_MAX + 1], entries_name[KVSHM_NAME_MAX + 1];
    int rc, rc2;

    rc = kvshm_tier_region_names(job, node, prefix, index_name, entries_name,
                                 NULL);
    if (rc != MPIKVS_OK)
        return rc;
    rc = kvshm_region_unlink(dir, index_name);
    rc2 = kvshm_region_unlink(dir, entries_name);
    if (rc == MPIKVS_ERR_NOTFOUND)
        rc = MPIKVS_OK;
    if (rc2 == MPIKVS_ERR_NOTFOUND)
        rc2 = MPIKVS_OK;
    return rc != MPIKVS_OK ? rc : rc2;
}

/* ---- the writer ---- */

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

/* ---- readers ---- */

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

void kvshm_tier_stats(const struct kvshm_tier *t, struct kvshm_tier_stats *out)
{
    const struct kvshm_tier_control *ctl = t->ctl;

    memset(out, 0, sizeof(*out));
    out->entries = LOAD(&ctl->entries);
    out->nbuckets = LOAD(&ctl->nbuckets);
    out->live_bytes = LOAD(&ctl->live_bytes);
    out->dead_bytes = LOAD(&ctl->dead_bytes);
    out->entries_top = LOAD(&ctl->entries_top);
    out->updates = LOAD(&ctl->updates);
    out->rebuilds = LOAD(&ctl->rebuilds);
    out->rebuild_failures = LOAD(&ctl->rebuild_failures);
    out->growths = LOAD(&ctl->growths);
    out->clears = LOAD(&ctl->clears);
    out->writer_pid = LOAD(&ctl->writer_pid);
    out->dropped = LOAD(&ctl->dropped);
    out->repairs = LOAD(&ctl->repairs);
    out->entries_size = t->entries->size;
    if (!t->writer) {
        struct kvshm_region *r = t->entries;
        kvshm_region_refresh(r);
        out->entries_size = r->size;
    }
    out->load_factor = out->nbuckets ? (double)out->entries /
                                           (double)out->nbuckets
                                     : 0.0;
    out->lookups = t->lookups;
    out->hits = t->hits;
    out->misses = t->misses;
    out->retries = t->retries;
}
