/*
 * tier.c - the read-only lookup tier: one writer, lock-free readers;
 * here its creation, opening and closing (the writer: tier_write.c, the
 * readers: tier_read.c, what they share and the one-writer contract:
 * tier_private.h).
 *
 * Readers and the writer meet in the control block's sequence lock
 * (format.h), whose protocol seqlock.h explains: the writer makes seq
 * odd around every change a reader could follow (a publication), and a
 * reader whose loads saw any store of one retries.  While it walks, a
 * reader may see links and lengths from the middle of a publication;
 * every offset is therefore checked against the snapshot of entries_top
 * before it is followed, and a chain walk is bounded by the entry count,
 * so a torn read costs a retry, never a fault or a loop.  Both regions
 * are mapped for their largest size, beyond the end of their files:
 * every limit (buckets, entries_top) is taken from the file sizes, never
 * from the mappings (a read past the end of a file is a SIGBUS), and the
 * entry count from the control block is capped by what entries_top can
 * hold.  Key and value bytes are read with plain memcmp/memcpy
 * (seqlock.h).  Then the value is checked against the entry's checksum
 * as well: the sequence cannot vouch for a writer that died in
 * mid-publication, so a hit is only ever a value that verifies.
 *
 * A writer killed in mid-publication leaves seq odd and possibly a half
 * written value or half linked chain.  The next writer repairs before it
 * publishes anything: it keeps seq odd, drops every entry that does not
 * verify, relinks the index from the entries and ends on an even seq.
 * The writer's own chain walks are bounded like a reader's; one that finds
 * the index damaged repairs it too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors_internal.h"
#include "tier_private.h"

static uint64_t pow2_ceil(uint64_t n)
{
    uint64_t p = 1;

    while (p < n)
        p <<= 1;
    return p;
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
    if (writer)
        kvshm_tier_writer_recover(t);
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
