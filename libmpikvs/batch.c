/*
 * batch.c - many gets or puts with one flush.
 *
 * A batch runs the steps of a single get or put (ops.h) over many keys.
 * In the lock-free mode it issues the transport's reads of every remote
 * bucket, then flushes once, so the round trips overlap instead of adding
 * up; keys of the own node are served from shared memory in order, with
 * the lines of the next PREFETCH_AHEAD keys' buckets asked for ahead, so
 * that their cache misses overlap too.
 * The lock modes take a lock per bucket, which cannot overlap: they run
 * the batch one key at a time.
 *
 * Batches go out in chunks of at most BATCH_CHUNK buckets, into buffers
 * allocated once at open: they bound the memory a batch takes, and they
 * are never moved by realloc, which one-sided transports that cache
 * memory registrations (UCX) do not always notice.
 */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "bucket_far.h"
#include "errors.h"
#include "near.h"
#include "ops.h"
#include "slot.h"
#include "verify.h"

/* Own-node keys whose bucket lines are on their way while one is served:
 * enough to keep the core's outstanding misses busy (each key asks for
 * its header line and its preferred slot, kvs_bucket_prefetch), few
 * enough that they are not evicted before they are used. */
#define PREFETCH_AHEAD 8u

static int batch_room(mpikvs_t *kvs, size_t buckets)
{
    if (buckets * kvs->copy_size <= kvs->batch_len)
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_INVAL, "a batch chunk of %zu buckets "
                                           "exceeds the buffer", buckets);
}

int kvs_batch_args(mpikvs_t *kvs, const char *call, size_t n,
                   const void *keys, const void *values, const void *st)
{
    if (n && (!keys || !values || !st))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: keys, values%s must not be NULL", call,
                        st == values ? "" : " and status");
    return MPIKVS_OK;
}

static unsigned char *copy_of(const mpikvs_t *kvs,
                              const struct kvs_chunk *c, size_t copy)
{
    return c->copies + copy * kvs->copy_size;
}

/* Issue a get's read of k's bucket into its copy: the whole bucket, or
 * (the slot path) its header, then its slot (read_slots). */
static int read_copy(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *copy)
{
    return kvs_route(kvs, k->node)->far_slot ? kvs_read_header(kvs, k, copy)
                                             : kvs_read_bucket(kvs, k, copy);
}

/* Always inlined: see kvs_bucket_prefetch. */
static inline __attribute__((always_inline)) void
prefetch_own(const mpikvs_t *kvs, const struct kvs_key *keys, size_t n,
             size_t i)
{
    if (i < n && kvs_route(kvs, keys[i].node)->kind == KVS_ROUTE_SHARED)
        kvs_bucket_prefetch(&kvs->tab, &keys[i]);
}

/* The records of a chunk's keys, and the first own-node buckets asked
 * for (prefetch_own for the rest as the chunk goes). */
static void make_keys(const mpikvs_t *kvs, size_t n, const unsigned char *k,
                      struct kvs_key *keys)
{
    for (size_t i = 0; i < n; i++) {
        kvs_key_make(kvs, k + i * kvs->tab.key_size, &keys[i]);
        if (i < PREFETCH_AHEAD)
            prefetch_own(kvs, keys, n, i);
    }
}

/* A get's steps over many keys: each key answered on this node as a single
 * get would be, the rest read from their homes together (issue), then,
 * after one flush, verified, counted and recorded one by one (finish). */
static void get_issue(mpikvs_t *kvs, struct kvs_chunk *c)
{
    struct kvs_key keys[BATCH_CHUNK];
    unsigned char *v = c->values;
    int rc = MPIKVS_OK;

    make_keys(kvs, c->n, c->keys, keys);
    for (size_t i = 0; i < c->n && rc == MPIKVS_OK; i++) {
        struct kvs_key key = keys[i];
        struct pending *p = &c->remote[c->nremote];
        const struct kvs_route *r = kvs_route(kvs, key.node);
        prefetch_own(kvs, keys, c->n, i + PREFETCH_AHEAD);
        /* The own node's keys as they come (from shared memory); the
         * lock modes take a lock per bucket, which cannot overlap: their
         * batches run one key at a time. */
        if (r->kind == KVS_ROUTE_SHARED || r->locked) {
            c->status[i] = kvs_get(kvs, &key, v + i * kvs->tab.value_size);
            rc = c->status[i] < 0 ? c->status[i] : MPIKVS_OK;
            continue;
        }
        if (kvs_get_tier(kvs, &key, v + i * kvs->tab.value_size,
                         &c->status[i])) {
            rc = c->status[i] < 0 ? c->status[i] : MPIKVS_OK;
            continue;
        }
        *p = (struct pending){.index = i, .key = key, .copy = c->nremote,
                              .shipped = r->kind == KVS_ROUTE_SHIPPED};
        rc = p->shipped
                 ? kvs->tp->ship(kvs, &key, KVS_SHIP_GET, NULL,
                                 v + i * kvs->tab.value_size, &c->status[i])
                 : read_copy(kvs, &key, copy_of(kvs, c, p->copy));
        c->nremote++;
    }
    c->rc = rc;
}

/* The slot path's second round: for each key read by its header, the
 * first slot of its tag, key and checksum into the probe and the value
 * straight into the caller's array, all with one flush. */
static int read_slots(mpikvs_t *kvs, struct kvs_chunk *c)
{
    bool issued = false;
    int rc = MPIKVS_OK;

    for (size_t j = 0; j < c->nremote && rc == MPIKVS_OK; j++) {
        struct pending *p = &c->remote[j];
        unsigned char *probe = copy_of(kvs, c, p->copy);
        if (p->shipped || !kvs_route(kvs, p->key.node)->far_slot)
            continue;
        KVS_COUNT(&kvs->tab, moved, kvshm_bucket_header_size(kvs->tab.slots));
        p->slot = kvs_probe_next(kvs, probe, &p->key, 0);
        if (p->slot == kvs->tab.slots)
            continue;
        rc = kvs_read_slot_parts(kvs, &p->key, p->slot, probe,
                                 c->values + p->index * kvs->tab.value_size);
        issued = true;
    }
    return issued ? kvs_first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES))
                  : rc;
}

/* What a remote key's copy says (after read_slots on the slot path),
 * a slot that did not verify counted as a retry: SLOT_TORN also where
 * the one slot read was another key's, which the single path looks
 * past. */
static enum slot_found found_in_copy(mpikvs_t *kvs, struct kvs_chunk *c,
                                     const struct pending *p, void *value)
{
    uint64_t torn, meta;
    unsigned char *copy = copy_of(kvs, c, p->copy);
    enum slot_found f;

    if (!kvs_route(kvs, p->key.node)->far_slot) {
        f = kvs_slot_find(&kvs->tab, copy, false, &p->key, value, &torn,
                          &meta);
        kvs_count_bucket_read(kvs, f == SLOT_HIT);
    } else if (p->slot == kvs->tab.slots) {
        return SLOT_MISS;
    } else {
        switch (kvs_probe_verify(kvs, copy, &p->key, value)) {
        case KVSHM_SLOT_READ_VERIFIED:
            return SLOT_HIT;
        case KVSHM_SLOT_READ_OTHER:
            return SLOT_TORN;
        default:
            f = SLOT_TORN;
        }
    }
    if (f == SLOT_TORN)
        KVS_COUNT(&kvs->tab, checksum_retries, 1);
    return f;
}

static void get_finish(mpikvs_t *kvs, struct kvs_chunk *c)
{
    int rc = c->rc;

    if (rc == MPIKVS_OK && c->nremote)
        rc = read_slots(kvs, c);
    for (size_t j = 0; j < c->nremote && rc == MPIKVS_OK; j++) {
        const struct pending *p = &c->remote[j];
        int *status = &c->status[p->index];
        unsigned char *value = c->values + p->index * kvs->tab.value_size;
        enum slot_found f;

        if (p->shipped) {   /* its home answered *status */
            KVS_COUNT(&kvs->tab, remote, 1);
            *status = kvs_get_done(kvs, &p->key, value, *status);
            rc = *status < 0 ? *status : MPIKVS_OK;
            continue;
        }
        f = found_in_copy(kvs, c, p, value);
        if (f == SLOT_TORN) {
            /* The single path retries, with time for a writer between,
             * and reads past another key's slot of the tag. */
            *status = kvs_get_far(kvs, &p->key, value);
        } else {
            KVS_COUNT(&kvs->tab, remote, 1);
            *status = f == SLOT_HIT ? MPIKVS_OK : MPIKVS_MISS;
        }
        *status = kvs_get_done(kvs, &p->key, value, *status);
        rc = *status < 0 ? *status : MPIKVS_OK;
    }
    c->rc = rc;
}

static int by_home(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;

    if (x->key.node != y->key.node)
        return x->key.node < y->key.node ? -1 : 1;
    if (x->key.bucket != y->key.bucket)
        return x->key.bucket < y->key.bucket ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_index(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Remote puts of a batch: read each distinct bucket once, pick slots in
 * the caller's order on those copies (so keys that share a bucket see each
 * other), write the slots' meta words and images, flush once.  Where
 * the bucket I/O claims slots (lock-free with the CPU's atomics), each
 * claim is a round trip of its own: one key at a time. */
static int put_remote_batch(mpikvs_t *kvs, struct kvs_chunk *c)
{
    struct pending *p = c->remote;
    size_t np = 0;
    const unsigned char *v = c->values;
    unsigned char *images = kvs->batch_images;
    uint64_t metas[BATCH_CHUNK];
    bool written[BATCH_CHUNK] = {false};
    size_t copies = 0;
    int rc = MPIKVS_OK;

    /* the keys whose slots are claimed, one by one; the others stay */
    for (size_t j = 0; j < c->nremote && rc == MPIKVS_OK; j++) {
        struct kvs_access a = {&kvs->tab, kvs_route(kvs, p[j].key.node)->io,
                               &p[j].key, kvs, 0, 0, false};
        int choice;
        /* the slot path writes no images: a key at a time as well */
        if (!a.io->cas && !kvs_route(kvs, p[j].key.node)->far_slot) {
            p[np++] = p[j];
            continue;
        }
        choice = kvs_bucket_put(&a, v + p[j].index * kvs->tab.value_size);
        if (choice >= 0)
            kvs_count_put(&kvs->tab, choice);
        else
            rc = choice == MPIKVS_ERR_STALLED
                     ? kvs_put_stalled(kvs, &a, "mpikvs_put")
                     : choice;
    }
    if (rc != MPIKVS_OK || !np)
        return rc;
    qsort(p, np, sizeof(*p), by_home);
    for (size_t j = 0; j < np; j++) {
        bool same = j > 0 && p[j].key.node == p[j - 1].key.node &&
                    p[j].key.bucket == p[j - 1].key.bucket;
        p[j].copy = same ? p[j - 1].copy : copies++;
    }
    if ((rc = batch_room(kvs, copies)))
        return rc;
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++)
        if (j == 0 || p[j].copy != p[j - 1].copy)
            rc = kvs_read_bucket(kvs, &p[j].key,
                                 copy_of(kvs, c, p[j].copy));
    rc = kvs_first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES));

    qsort(p, np, sizeof(*p), by_index);
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++) {
        unsigned char *bucket = copy_of(kvs, c, p[j].copy);
        unsigned char *image = images + j * kvs->tab.slot_size;
        struct slot_pick pick;

        /* a batch does not wait for a slot the key's node is writing
         * (put_far does); here nothing is claimed anyway */
        kvs_slot_pick(&kvs->tab, bucket, false, true, &p[j].key,
                      TAKEOVER_ANY, &pick);
        kvs_slot_image(&kvs->tab, &p[j].key,
                       v + p[j].index * kvs->tab.value_size, image);
        metas[j] = pick.meta;
        *kvs_meta_at(bucket, pick.slot) = pick.meta;
        memcpy(kvs_slot_at(&kvs->tab, bucket, pick.slot), image,
               kvs->tab.slot_size);
        /* Two writes to one bucket between flushes land in no defined
         * order: complete the first before the second. */
        if (written[p[j].copy])
            rc = kvs->tp->flush(kvs, p[j].key.node);
        written[p[j].copy] = true;
        if (rc == MPIKVS_OK)
            rc = kvs_write_slot(kvs, &p[j].key, pick.slot, &metas[j], image);
        if (rc == MPIKVS_OK)
            kvs_count_put(&kvs->tab, pick.choice);
    }
    /* The images must have left before they are reused. */
    return kvs_first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES));
}

/* A put's steps over many keys: the own node's keys as they come, the
 * keys shipped to their homes sent together, in the caller's order
 * (issue); after the flush their slot choices counted, then the other
 * remote keys written (finish: put_remote_batch). */
static void put_issue(mpikvs_t *kvs, struct kvs_chunk *c)
{
    struct kvs_key keys[BATCH_CHUNK];
    const unsigned char *v = c->values;
    int rc = MPIKVS_OK;

    make_keys(kvs, c->n, c->keys, keys);
    for (size_t i = 0; i < c->n && rc == MPIKVS_OK; i++) {
        struct kvs_key key = keys[i];
        const struct kvs_route *r = kvs_route(kvs, key.node);
        prefetch_own(kvs, keys, c->n, i + PREFETCH_AHEAD);
        /* the own node's keys in shared memory as they come; the lock
         * modes one key at a time (see get_issue) */
        if (r->kind == KVS_ROUTE_SHARED || r->locked) {
            rc = kvs_put(kvs, &key, v + i * kvs->tab.value_size);
        } else if (r->kind == KVS_ROUTE_SHIPPED) {
            c->shipped[c->nshipped] = (struct pending){.index = i,
                                                       .key = key};
            rc = kvs->tp->ship(kvs, &key, KVS_SHIP_PUT,
                               v + i * kvs->tab.value_size, NULL,
                               &c->choice[c->nshipped]);
            c->nshipped++;
        } else {
            c->remote[c->nremote++] = (struct pending){.index = i,
                                                       .key = key};
        }
    }
    c->rc = rc;
}

static void put_finish(mpikvs_t *kvs, struct kvs_chunk *c)
{
    int rc = c->rc;

    for (size_t j = 0; j < c->nshipped && rc == MPIKVS_OK; j++) {
        if (c->choice[j] < 0)
            rc = c->choice[j];
        else
            kvs_count_put(&kvs->tab, c->choice[j]);
    }
    if (rc == MPIKVS_OK && c->nremote)
        rc = put_remote_batch(kvs, c);
    c->rc = rc;
}

void kvs_chunk_issue(mpikvs_t *kvs, struct kvs_chunk *c)
{
    c->nremote = c->nshipped = 0;
    if (c->put)
        put_issue(kvs, c);
    else
        get_issue(kvs, c);
}

int kvs_chunk_finish(mpikvs_t *kvs, struct kvs_chunk *c)
{
    /* One flush completes what the chunk issued, also after an error:
     * nothing may still be writing into its buffers when it is done,
     * and nothing may stay queued. */
    if (c->nshipped || (!c->put && c->nremote))
        c->rc = kvs_first_error(c->rc, kvs->tp->flush(kvs, KVS_ALL_NODES));
    if (c->put)
        put_finish(kvs, c);
    else
        get_finish(kvs, c);
    if (!c->put && c->rc == MPIKVS_OK)
        kvs_verify_batch(kvs, c->n, c->keys, c->status);
    return c->rc;
}

/* A blocking batch: chunk after chunk, into the handle's buffers. */
static int run_batch(mpikvs_t *kvs, bool put, size_t n, const void *keys,
                     const void *values, int *status)
{
    struct kvs_chunk chunk, *c = &chunk;   /* not zeroed: issue sets it */
    const unsigned char *k = keys;
    unsigned char *v = (unsigned char *)values;
    int rc = MPIKVS_OK;

    for (size_t at = 0; at < n && rc == MPIKVS_OK; at += BATCH_CHUNK) {
        c->put = put;
        c->n = n - at < BATCH_CHUNK ? n - at : BATCH_CHUNK;
        c->keys = k + at * kvs->tab.key_size;
        c->values = v + at * kvs->tab.value_size;
        c->status = status ? status + at : NULL;
        c->copies = kvs->batch;
        kvs_chunk_issue(kvs, c);
        rc = kvs_chunk_finish(kvs, c);
    }
    return rc;
}

int mpikvs_get_batch(mpikvs_t *kvs, size_t n, const void *keys, void *values,
                     int *status)
{
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_get_batch");
    if ((rc = kvs_batch_args(kvs, "mpikvs_get_batch", n, keys, values,
                             status)))
        return rc;
    return run_batch(kvs, false, n, keys, values, status);
}

int mpikvs_put_batch(mpikvs_t *kvs, size_t n, const void *keys,
                     const void *values)
{
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_put_batch");
    if ((rc = kvs_batch_args(kvs, "mpikvs_put_batch", n, keys, values,
                             values)))
        return rc;
    rc = run_batch(kvs, true, n, keys, values, NULL);
    return rc == MPIKVS_OK
               ? kvs_near_put_batch(kvs, "mpikvs_put_batch", n, keys, values)
               : rc;
}

int kvs_near_put_batch(mpikvs_t *kvs, const char *call, size_t n,
                       const void *keys, const void *values)
{
    mpikvs_t *near = kvs_near_table(kvs);
    int rc = MPIKVS_OK;

    for (size_t first = 0; near && first < n && rc == MPIKVS_OK;
         first += BATCH_CHUNK) {
        size_t m = n - first < BATCH_CHUNK ? n - first : BATCH_CHUNK;
        const unsigned char *entries;
        if ((rc = kvs_near_entries(
                 kvs, call, m, (const char *)keys + first * kvs->tab.key_size,
                 &entries)) != MPIKVS_OK)
            return rc;
        rc = mpikvs_put_batch(near, m, entries,
                              (const char *)values +
                                  first * kvs->tab.value_size);
        if (rc != MPIKVS_OK)
            return kvs_fail(kvs, rc, "%s: their neighbourhoods: %s", call,
                            mpikvs_last_error(near));
    }
    return rc;
}
