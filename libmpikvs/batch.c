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

#include "ops.h"
#include "slot.h"

/* Own-node keys whose bucket lines are on their way while one is served:
 * enough to keep the core's outstanding misses busy (each key asks for
 * its header line and its preferred slot, kvs_bucket_prefetch), few
 * enough that they are not evicted before they are used. */
#define PREFETCH_AHEAD 8u

struct pending {
    size_t         index;    /* in the caller's arrays */
    struct kvs_key key;
    size_t         copy;     /* the bucket copy it reads (puts: shared by
                              * keys of one bucket) */
    bool           shipped;  /* sent whole to its home (transport.h) */
};

static int batch_room(mpikvs_t *kvs, size_t buckets)
{
    if (buckets * kvs->bucket_size <= kvs->batch_len)
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_INVAL, "a batch chunk of %zu buckets "
                                           "exceeds the buffer", buckets);
}

static int check_args(mpikvs_t *kvs, const char *call, size_t n,
                      const void *keys, const void *values, const void *st)
{
    if (n && (!keys || !values || !st))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: keys, values%s must not be NULL", call,
                        st == values ? "" : " and status");
    return MPIKVS_OK;
}

/* The first error of a batch wins: the one that stopped it. */
static int first_error(int rc, int next)
{
    return rc != MPIKVS_OK ? rc : next;
}

static unsigned char *copy_of(const mpikvs_t *kvs, size_t copy)
{
    return kvs->batch + copy * kvs->bucket_size;
}

/* Always inlined: see kvs_bucket_prefetch. */
static inline __attribute__((always_inline)) void
prefetch_own(const mpikvs_t *kvs, const struct kvs_key *keys, size_t n,
             size_t i)
{
    if (i < n && kvs_direct(kvs, &keys[i]))
        kvs_bucket_prefetch(kvs, &keys[i]);
}

/* The records of a chunk's keys, and the first own-node buckets asked
 * for (prefetch_own for the rest as the chunk goes). */
static void make_keys(const mpikvs_t *kvs, size_t n, const unsigned char *k,
                      struct kvs_key *keys)
{
    for (size_t i = 0; i < n; i++) {
        kvs_key_make(kvs, k + i * kvs->key_size, &keys[i]);
        if (i < PREFETCH_AHEAD)
            prefetch_own(kvs, keys, n, i);
    }
}

/* A get's steps over many keys: each key answered on this node as a single
 * get would be, the rest read from their homes together, with one flush,
 * then verified, counted and recorded one by one. */
static int get_chunk(mpikvs_t *kvs, size_t n, const unsigned char *k,
                     unsigned char *v, int *status)
{
    struct pending p[BATCH_CHUNK];
    struct kvs_key keys[BATCH_CHUNK];
    size_t np = 0;
    int rc = MPIKVS_OK;

    make_keys(kvs, n, k, keys);
    for (size_t i = 0; i < n && rc == MPIKVS_OK; i++) {
        struct kvs_key key = keys[i];
        prefetch_own(kvs, keys, n, i + PREFETCH_AHEAD);
        /* The own node's keys as they come (from shared memory); the
         * lock modes take a lock per bucket, which cannot overlap: their
         * batches run one key at a time. */
        if (kvs->mode != KVSHM_MODE_LOCKFREE || key.node == kvs->node) {
            status[i] = kvs_get(kvs, &key, v + i * kvs->value_size);
            rc = status[i] < 0 ? status[i] : MPIKVS_OK;
            continue;
        }
        if (kvs_get_tier(kvs, &key, v + i * kvs->value_size, &status[i])) {
            rc = status[i] < 0 ? status[i] : MPIKVS_OK;
            continue;
        }
        p[np] = (struct pending){.index = i, .key = key, .copy = np,
                                 .shipped = kvs_shipped(kvs, key.node)};
        rc = p[np].shipped
                 ? kvs->tp->ship(kvs, &key, KVS_SHIP_GET, NULL,
                                 v + i * kvs->value_size, &status[i])
                 : kvs_read_bucket(kvs, &key, copy_of(kvs, np));
        np++;
    }
    /* One flush completes them all, also after an error: nothing may
     * still be writing into the batch buffer when we return. */
    if (np)
        rc = first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES));
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++) {
        size_t i = p[j].index;
        unsigned char *value = v + i * kvs->value_size;
        uint64_t torn, meta;
        enum slot_found f;

        if (p[j].shipped) {   /* its home answered status[i] */
            KVS_COUNT(kvs, remote, 1);
            status[i] = kvs_get_done(kvs, &p[j].key, value, status[i]);
            rc = status[i] < 0 ? status[i] : MPIKVS_OK;
            continue;
        }
        f = kvs_slot_find(kvs, copy_of(kvs, j), false, &p[j].key, value,
                          &torn, &meta);
        if (f == SLOT_TORN) {
            /* The single path retries, with time for a writer between. */
            KVS_COUNT(kvs, checksum_retries, 1);
            status[i] = kvs_get_far(kvs, &p[j].key, value);
        } else {
            KVS_COUNT(kvs, remote, 1);
            status[i] = f == SLOT_HIT ? MPIKVS_OK : MPIKVS_MISS;
        }
        status[i] = kvs_get_done(kvs, &p[j].key, value, status[i]);
        rc = status[i] < 0 ? status[i] : MPIKVS_OK;
    }
    return rc;
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
 * other), write the slots' meta words and images, flush once.  Lock-free
 * with the CPU's atomics, where a slot is claimed with a round trip of
 * its own (kvs_put_claimed), one key at a time. */
static int put_remote_batch(mpikvs_t *kvs, struct pending *p, size_t np,
                            const unsigned char *v)
{
    unsigned char *images = kvs->batch_images;
    uint64_t metas[BATCH_CHUNK];
    bool written[BATCH_CHUNK] = {false};
    size_t copies = 0;
    int rc = MPIKVS_OK;

    if (kvs->mode == KVSHM_MODE_LOCKFREE && kvs->tp->cpu_atomic) {
        for (size_t j = 0; j < np && rc == MPIKVS_OK; j++)
            rc = kvs_put_claimed(kvs, &p[j].key,
                                 v + p[j].index * kvs->value_size);
        return rc;
    }
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
            rc = kvs_read_bucket(kvs, &p[j].key, copy_of(kvs, p[j].copy));
    rc = first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES));

    qsort(p, np, sizeof(*p), by_index);
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++) {
        unsigned char *bucket = copy_of(kvs, p[j].copy);
        unsigned char *image = images + j * kvs->slot_size;
        struct slot_pick pick;

        /* impatient: a batch does not wait for a slot the key's node is
         * writing (put_far does) */
        kvs_slot_pick(kvs, bucket, false, &p[j].key, false, &pick);
        kvs_slot_image(kvs, &p[j].key, v + p[j].index * kvs->value_size,
                       image);
        metas[j] = pick.meta;
        *kvs_meta_at(bucket, pick.slot) = pick.meta;
        memcpy(kvs_slot_at(kvs, bucket, pick.slot), image, kvs->slot_size);
        /* Two writes to one bucket between flushes land in no defined
         * order: complete the first before the second. */
        if (written[p[j].copy])
            rc = kvs->tp->flush(kvs, p[j].key.node);
        written[p[j].copy] = true;
        if (rc == MPIKVS_OK)
            rc = kvs_write_slot(kvs, &p[j].key, pick.slot, &metas[j], image);
        if (rc == MPIKVS_OK)
            kvs_count_put(kvs, pick.choice);
    }
    /* The images must have left before they are reused. */
    return first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES));
}

/* Shipped puts of a batch (transport.h): one flush sends each home its
 * keys, in the caller's order, and collects the slot choices. */
static int put_shipped_batch(mpikvs_t *kvs, const struct pending *p,
                             size_t np, const unsigned char *v)
{
    int choice[BATCH_CHUNK];
    int rc = MPIKVS_OK;

    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++)
        rc = kvs->tp->ship(kvs, &p[j].key, KVS_SHIP_PUT,
                           v + p[j].index * kvs->value_size, NULL,
                           &choice[j]);
    if (np)   /* also after an error: nothing may stay queued */
        rc = first_error(rc, kvs->tp->flush(kvs, KVS_ALL_NODES));
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++) {
        if (choice[j] < 0)
            rc = choice[j];
        else
            kvs_count_put(kvs, choice[j]);
    }
    return rc;
}

static int put_chunk(mpikvs_t *kvs, size_t n, const unsigned char *k,
                     const unsigned char *v)
{
    struct pending p[BATCH_CHUNK], s[BATCH_CHUNK];
    struct kvs_key keys[BATCH_CHUNK];
    size_t np = 0, ns = 0;
    int rc = MPIKVS_OK;

    make_keys(kvs, n, k, keys);
    for (size_t i = 0; i < n && rc == MPIKVS_OK; i++) {
        struct kvs_key key = keys[i];
        prefetch_own(kvs, keys, n, i + PREFETCH_AHEAD);
        /* the own node's keys in shared memory as they come; the lock
         * modes one key at a time (see get_chunk) */
        if (kvs->mode != KVSHM_MODE_LOCKFREE || key.node == kvs->node)
            rc = kvs_put(kvs, &key, v + i * kvs->value_size);
        else if (kvs_shipped(kvs, key.node))
            s[ns++] = (struct pending){.index = i, .key = key};
        else
            p[np++] = (struct pending){.index = i, .key = key};
    }
    if (rc == MPIKVS_OK && ns)
        rc = put_shipped_batch(kvs, s, ns, v);
    if (rc == MPIKVS_OK && np)
        rc = put_remote_batch(kvs, p, np, v);
    return rc;
}

int mpikvs_get_batch(mpikvs_t *kvs, size_t n, const void *keys, void *values,
                     int *status)
{
    const unsigned char *k = keys;
    unsigned char *v = values;
    int rc;

    if (!kvs)
        return MPIKVS_ERR_INVAL;
    if ((rc = check_args(kvs, "mpikvs_get_batch", n, keys, values, status)))
        return rc;
    for (size_t at = 0; at < n && rc == MPIKVS_OK; at += BATCH_CHUNK)
        rc = get_chunk(kvs, n - at < BATCH_CHUNK ? n - at : BATCH_CHUNK,
                       k + at * kvs->key_size, v + at * kvs->value_size,
                       status + at);
    return rc;
}

int mpikvs_put_batch(mpikvs_t *kvs, size_t n, const void *keys,
                     const void *values)
{
    const unsigned char *k = keys, *v = values;
    int rc;

    if (!kvs)
        return MPIKVS_ERR_INVAL;
    if ((rc = check_args(kvs, "mpikvs_put_batch", n, keys, values, values)))
        return rc;
    for (size_t at = 0; at < n && rc == MPIKVS_OK; at += BATCH_CHUNK)
        rc = put_chunk(kvs, n - at < BATCH_CHUNK ? n - at : BATCH_CHUNK,
                       k + at * kvs->key_size, v + at * kvs->value_size);
    return rc;
}
