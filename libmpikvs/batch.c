/*
 * batch.c - many gets or puts with one flush.
 *
 * In the lock-free mode a batch issues the MPI_Get of every remote bucket,
 * then flushes once, so the round trips overlap instead of adding up.
 * Keys of the own node are served directly as they come.  The lock modes
 * take a lock per bucket, which cannot overlap: they run the batch one key
 * at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "slot.h"

/*
 * Batches go out in chunks of at most BATCH_CHUNK buckets, into a buffer
 * allocated once at open: it bounds the memory a batch takes, and the
 * buffer is never moved by realloc, which one-sided transports that cache
 * memory registrations (UCX) do not always notice.
 */

struct pending {
    size_t             index;    /* in the caller's arrays */
    struct mpikvs_home home;
    size_t             copy;     /* the bucket copy it reads (puts: shared
                                  * by keys of one bucket) */
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

static int get_bucket(mpikvs_t *kvs, const struct mpikvs_home *home,
                      unsigned char *into)
{
    int rc = MPI_Get(into, (int)kvs->bucket_size, MPI_BYTE,
                     kvs->leaders[home->node],
                     (MPI_Aint)kvs_bucket_disp(kvs, home->bucket),
                     (int)kvs->bucket_size, MPI_BYTE, kvs->win);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "MPI_Get in a batch", rc);
}

static int get_chunk(mpikvs_t *kvs, size_t n, const void *keys, void *values,
                     int *status)
{
    const unsigned char *k = keys;
    unsigned char *v = values;
    struct pending *p = NULL;
    size_t np = 0;
    int rc = MPIKVS_OK;

    if (kvs->mode != KVSHM_MODE_LOCKFREE || !kvs->has_win) {
        for (size_t i = 0; i < n; i++) {
            status[i] = kvs_get_one(kvs, k + i * kvs->key_size,
                                    v + i * kvs->value_size);
            if (status[i] < 0)
                return status[i];
        }
        return MPIKVS_OK;
    }
    p = malloc(sizeof(*p) * (n ? n : 1));
    if (!p || batch_room(kvs, n)) {
        free(p);
        return p ? kvs->err.code
                 : kvs_fail(kvs, -ENOMEM, "out of memory for a batch");
    }
    /* Issue every remote read; serve the own node's keys meanwhile. */
    for (size_t i = 0; i < n && rc == MPIKVS_OK; i++) {
        struct mpikvs_home home = kvs_home(kvs, k + i * kvs->key_size);
        if (home.node == kvs->node) {
            status[i] = kvs_get_at(kvs, home, k + i * kvs->key_size,
                                   v + i * kvs->value_size);
            rc = status[i] < 0 ? status[i] : MPIKVS_OK;
            continue;
        }
        if (kvs->tier) {   /* the node tier first, as a single get */
            status[i] = kvs_tier_lookup(kvs, k + i * kvs->key_size,
                                        v + i * kvs->value_size);
            if (status[i] == MPIKVS_OK)
                kvs_count_get(kvs, status[i]);
            if (status[i] != MPIKVS_MISS) {
                rc = status[i] < 0 ? status[i] : MPIKVS_OK;
                continue;
            }
        }
        p[np] = (struct pending){.index = i, .home = home, .copy = np};
        rc = get_bucket(kvs, &home, kvs->batch + np * kvs->bucket_size);
        np++;
    }
    /* One flush completes them all, also after an error: nothing may
     * still be writing into the batch buffer when we return. */
    if (np && kvs_flush_nodes(kvs) != MPIKVS_OK && rc == MPIKVS_OK)
        rc = MPIKVS_ERR_MPI;
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++) {
        size_t i = p[j].index;
        uint64_t torn, meta;
        enum slot_found f = kvs_slot_find(kvs,
                                          kvs->batch + j * kvs->bucket_size,
                                          false, k + i * kvs->key_size,
                                          v + i * kvs->value_size, &torn,
                                          &meta);
        if (f == SLOT_TORN) {
            /* The single path retries, with time for a writer between. */
            KVS_COUNT(kvs, checksum_retries, 1);
            status[i] = kvs_get_home(kvs, p[j].home, k + i * kvs->key_size,
                                     v + i * kvs->value_size);
            rc = status[i] < 0 ? status[i] : MPIKVS_OK;
        } else {
            status[i] = f == SLOT_HIT ? MPIKVS_OK : MPIKVS_MISS;
            KVS_COUNT(kvs, remote, 1);
            kvs_count_get(kvs, status[i]);
        }
        if (status[i] == MPIKVS_OK && kvs->tier)
            kvs_tier_record(kvs, k + i * kvs->key_size,
                            v + i * kvs->value_size);
    }
    free(p);
    return rc;
}

static int by_home(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;

    if (x->home.node != y->home.node)
        return x->home.node < y->home.node ? -1 : 1;
    if (x->home.bucket != y->home.bucket)
        return x->home.bucket < y->home.bucket ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_index(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Remote puts of a batch: read each distinct bucket once, choose slots in
 * the caller's order on those copies (so keys that share a bucket see each
 * other), put the slot images, flush once. */
static int put_remote_batch(mpikvs_t *kvs, struct pending *p, size_t np,
                            const unsigned char *k, const unsigned char *v)
{
    unsigned char *images = NULL;
    unsigned char *written = NULL;
    size_t copies = 0;
    int rc = MPIKVS_OK;

    qsort(p, np, sizeof(*p), by_home);
    for (size_t j = 0; j < np; j++) {
        bool same = j > 0 && p[j].home.node == p[j - 1].home.node &&
                    p[j].home.bucket == p[j - 1].home.bucket;
        p[j].copy = same ? p[j - 1].copy : copies++;
    }
    if ((rc = batch_room(kvs, copies)))
        return rc;
    images = malloc(np * kvs->slot_size);
    written = calloc(copies, 1);
    if (!images || !written) {
        free(images);
        free(written);
        return kvs_fail(kvs, -ENOMEM, "out of memory for a batch");
    }
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++)
        if (j == 0 || p[j].copy != p[j - 1].copy)
            rc = get_bucket(kvs, &p[j].home,
                            kvs->batch + p[j].copy * kvs->bucket_size);
    if (kvs_flush_nodes(kvs) != MPIKVS_OK && rc == MPIKVS_OK)
        rc = MPIKVS_ERR_MPI;

    qsort(p, np, sizeof(*p), by_index);
    for (size_t j = 0; j < np && rc == MPIKVS_OK; j++) {
        unsigned char *bucket = kvs->batch + p[j].copy * kvs->bucket_size;
        unsigned char *image = images + j * kvs->slot_size;
        int target = kvs->leaders[p[j].home.node];
        enum slot_choice c;
        uint64_t s = kvs_slot_choose(kvs, bucket, k + p[j].index *
                                                      kvs->key_size, &c);

        kvs_slot_image(kvs, k + p[j].index * kvs->key_size,
                       v + p[j].index * kvs->value_size, image);
        memcpy(kvs_slot_at(kvs, bucket, s), image, kvs->slot_size);
        /* Two puts to one bucket in one epoch land in no defined order:
         * complete the first before the second. */
        if (written[p[j].copy] && MPI_Win_flush(target, kvs->win))
            rc = kvs_mpi_fail(kvs, "MPI_Win_flush in a batch", MPI_ERR_OTHER);
        written[p[j].copy] = 1;
        if (rc == MPIKVS_OK &&
            MPI_Put(image, (int)kvs->slot_size, MPI_BYTE, target,
                    (MPI_Aint)(kvs_bucket_disp(kvs, p[j].home.bucket) +
                               kvshm_bucket_slot_offset(kvs->slot_size, s)),
                    (int)kvs->slot_size, MPI_BYTE, kvs->win) != MPI_SUCCESS)
            rc = kvs_mpi_fail(kvs, "MPI_Put in a batch", MPI_ERR_OTHER);
        if (rc == MPIKVS_OK) {
            KVS_COUNT(kvs, puts, 1);
            kvs_count_choice(kvs, c);
        }
    }
    /* The images must have left before they are freed. */
    if (kvs_flush_nodes(kvs) != MPIKVS_OK && rc == MPIKVS_OK)
        rc = MPIKVS_ERR_MPI;
    free(images);
    free(written);
    return rc;
}

static int put_chunk(mpikvs_t *kvs, size_t n, const void *keys,
                     const void *values)
{
    const unsigned char *k = keys, *v = values;
    struct pending *p;
    size_t np = 0;
    int rc = MPIKVS_OK;

    if (kvs->mode != KVSHM_MODE_LOCKFREE || !kvs->has_win) {
        for (size_t i = 0; i < n && rc == MPIKVS_OK; i++)
            rc = kvs_put_one(kvs, k + i * kvs->key_size,
                             v + i * kvs->value_size);
        return rc;
    }
    p = malloc(sizeof(*p) * (n ? n : 1));
    if (!p)
        return kvs_fail(kvs, -ENOMEM, "out of memory for a batch");
    for (size_t i = 0; i < n && rc == MPIKVS_OK; i++) {
        struct mpikvs_home home = kvs_home(kvs, k + i * kvs->key_size);
        if (home.node == kvs->node)
            rc = kvs_put_at(kvs, home, k + i * kvs->key_size,
                            v + i * kvs->value_size);
        else
            p[np++] = (struct pending){.index = i, .home = home};
    }
    if (rc == MPIKVS_OK && np)
        rc = put_remote_batch(kvs, p, np, k, v);
    free(p);
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
