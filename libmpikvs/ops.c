/*
 * ops.c - one get or put, in each consistency mode.
 *
 * lockfree, home on my node:   the bucket in shared memory, no MPI.
 * lockfree, home elsewhere:    MPI_Get of the bucket, one flush; a put
 *                              then MPI_Puts one slot image, one flush.
 * fine-lock:                   the same through MPI, between a bucket
 *                              lock and its release, also on my node.
 * coarse-lock:                 the same between MPI_Win_lock/unlock of
 *                              the home node's window.
 */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "slot.h"

/* A key's home: one 128-bit XXH3, its halves mapped onto the nodes and
 * the buckets by multiply-shift (no modulo bias, no division). */
struct mpikvs_home kvs_home(const mpikvs_t *kvs, const void *key)
{
    XXH128_hash_t h = XXH3_128bits(key, kvs->key_size);
    struct mpikvs_home home = {
        .node = (uint32_t)(((unsigned __int128)h.high64 * kvs->nnodes) >> 64),
        .bucket = (uint64_t)(((unsigned __int128)h.low64 * kvs->nbuckets) >>
                             64),
    };
    return home;
}

static bool direct(const mpikvs_t *kvs, const struct mpikvs_home *home)
{
    return kvs->mode == KVSHM_MODE_LOCKFREE && home->node == kvs->node;
}

/* ---- the own node, lock-free ---- */

/* Ask for every line of the bucket at once: the slots' misses then
 * overlap instead of following one another as the scan reaches them. */
static inline unsigned char *prefetch_bucket(const mpikvs_t *kvs,
                                             uint64_t bucket)
{
    unsigned char *b = kvs->buckets + bucket * kvs->bucket_size;

    for (uint64_t off = 0; off < kvs->bucket_size; off += 64)
        __builtin_prefetch(b + off);
    return b;
}

static int get_direct(mpikvs_t *kvs, uint64_t bucket, const void *key,
                      void *value)
{
    unsigned char *b = prefetch_bucket(kvs, bucket);

    KVS_COUNT(kvs, direct, 1);
    for (int attempt = 0;; attempt++) {
        uint64_t torn = 0, meta = 0;
        enum slot_found f = kvs_slot_find(kvs, b, true, key, value, &torn,
                                          &meta);
        if (f == SLOT_HIT)
            return MPIKVS_OK;
        if (f == SLOT_MISS)
            return MPIKVS_MISS;
        KVS_COUNT(kvs, checksum_retries, 1);
        if (attempt + 1 >= MPIKVS_CHECKSUM_RETRIES) {
            KVS_TORN_HOOK(kvs, bucket, torn);
            /* Against the meta of the read that failed, not a fresh load:
             * a slot rewritten since is another write, and valid. */
            if (kvs_slot_invalidate(kvs_slot_at(kvs, b, torn), meta))
                KVS_COUNT(kvs, invalidations, 1);
            return MPIKVS_MISS;
        }
        /* A writer of this slot may be halfway: let it finish. */
        kvs_slot_backoff(attempt);
    }
}

void kvs_count_choice(mpikvs_t *kvs, int c)
{
    if (c == SLOT_UPDATE)
        KVS_COUNT(kvs, updates, 1);
    else if (c == SLOT_EVICT)
        KVS_COUNT(kvs, evictions, 1);
}

static int put_direct(mpikvs_t *kvs, uint64_t bucket, const void *key,
                      const void *value)
{
    unsigned char *b = prefetch_bucket(kvs, bucket);
    enum slot_choice c;
    uint64_t i = kvs_slot_choose(kvs, b, key, &c);

    kvs_slot_image(kvs, key, value, kvs->slot_image);
    kvs_slot_store(kvs, kvs_slot_at(kvs, b, i), kvs->slot_image);
    kvs_count_choice(kvs, c);
    return MPIKVS_OK;
}

/* ---- through MPI ---- */

/* Complete every operation on the window: one flush per node's leader
 * rather than MPI_Win_flush_all, which Open MPI 4.1's ucx component
 * returned from with gets still outstanding (batches then read stale
 * buckets; seen in tests/mpi with OMPI_MCA_osc=ucx). */
int kvs_flush_nodes(mpikvs_t *kvs)
{
    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        int rc = MPI_Win_flush(kvs->leaders[n], kvs->win);
        if (rc != MPI_SUCCESS)
            return kvs_mpi_fail(kvs, "MPI_Win_flush", rc);
    }
    return MPIKVS_OK;
}

static int fetch_bucket(mpikvs_t *kvs, int target, uint64_t bucket,
                        unsigned char *into)
{
    int rc = MPI_Get(into, (int)kvs->bucket_size, MPI_BYTE, target,
                     (MPI_Aint)kvs_bucket_disp(kvs, bucket),
                     (int)kvs->bucket_size, MPI_BYTE, kvs->win);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Get of a bucket", rc);
    /* The bucket must be in our buffer before we read it. */
    rc = MPI_Win_flush(target, kvs->win);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Win_flush after MPI_Get", rc);
    return MPIKVS_OK;
}

static int put_slot(mpikvs_t *kvs, int target, uint64_t bucket, uint64_t i,
                    const unsigned char *image)
{
    MPI_Aint disp = (MPI_Aint)(kvs_bucket_disp(kvs, bucket) +
                               kvshm_bucket_slot_offset(kvs->slot_size, i));
    int rc = MPI_Put(image, (int)kvs->slot_size, MPI_BYTE, target, disp,
                     (int)kvs->slot_size, MPI_BYTE, kvs->win);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Put of a slot", rc);
    /* Complete at the target before the caller may reuse the image or
     * another rank may read the slot. */
    rc = MPI_Win_flush(target, kvs->win);
    if (rc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, "MPI_Win_flush after MPI_Put", rc);
    return MPIKVS_OK;
}

/* Mark a remote slot invalid: only its meta word, in one put.  Only in
 * the lock modes, where the caller's lock keeps every writer out of the
 * bucket, so meta is still as read; there every access to the slot goes
 * through MPI. */
static int invalidate_remote(mpikvs_t *kvs, int target, uint64_t bucket,
                             uint64_t i, uint64_t meta)
{
    static const int count = 1;
    uint64_t word = meta | KVSHM_SLOT_INVALID;
    MPI_Aint disp = (MPI_Aint)(kvs_bucket_disp(kvs, bucket) +
                               kvshm_bucket_slot_offset(kvs->slot_size, i));
    int rc = MPI_Put(&word, count, MPI_UINT64_T, target, disp, count,
                     MPI_UINT64_T, kvs->win);

    if (rc == MPI_SUCCESS)
        rc = MPI_Win_flush(target, kvs->win);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "invalidating a slot", rc);
}

/* Read the key from a bucket through MPI (the caller holds whatever lock
 * the mode needs): retry a slot that does not verify, then give up with a
 * miss.
 *
 * Lock-free, a reader from another node does not mark the slot invalid:
 * that would take a remote compare-and-swap on the meta word, which the
 * home node's ranks change with CPU atomics, and no one-sided component
 * makes the two atomic with each other (pt2pt swaps in software at the
 * target, rdma and ucx with the network card's atomics).  A put of the key
 * overwrites the slot, and a reader on the home node invalidates it. */
static int get_remote(mpikvs_t *kvs, int target, uint64_t bucket,
                      const void *key, void *value)
{
    unsigned char *b = kvs->scratch;

    KVS_COUNT(kvs, remote, 1);
    for (int attempt = 0;; attempt++) {
        uint64_t torn = 0, meta = 0;
        int rc = fetch_bucket(kvs, target, bucket, b);
        if (rc != MPIKVS_OK)
            return rc;
        enum slot_found f = kvs_slot_find(kvs, b, false, key, value, &torn,
                                          &meta);
        if (f == SLOT_HIT)
            return MPIKVS_OK;
        if (f == SLOT_MISS)
            return MPIKVS_MISS;
        KVS_COUNT(kvs, checksum_retries, 1);
        if (attempt + 1 >= MPIKVS_CHECKSUM_RETRIES) {
            KVS_TORN_HOOK(kvs, bucket, torn);
            if (kvs->mode == KVSHM_MODE_LOCKFREE)
                return MPIKVS_MISS;
            KVS_COUNT(kvs, invalidations, 1);
            rc = invalidate_remote(kvs, target, bucket, torn, meta);
            return rc == MPIKVS_OK ? MPIKVS_MISS : rc;
        }
        /* Under a lock no writer is halfway: the slot stays as it is. */
        if (kvs->mode == KVSHM_MODE_LOCKFREE)
            kvs_slot_backoff(attempt);
    }
}

static int put_remote(mpikvs_t *kvs, int target, uint64_t bucket,
                      const void *key, const void *value)
{
    enum slot_choice c;
    uint64_t i;
    int rc = fetch_bucket(kvs, target, bucket, kvs->scratch);

    if (rc != MPIKVS_OK)
        return rc;
    i = kvs_slot_choose(kvs, kvs->scratch, key, &c);
    kvs_slot_image(kvs, key, value, kvs->slot_image);
    rc = put_slot(kvs, target, bucket, i, kvs->slot_image);
    if (rc == MPIKVS_OK)
        kvs_count_choice(kvs, c);
    return rc;
}

/* ---- the modes' brackets ---- */

static int coarse_lock(mpikvs_t *kvs, int target, bool exclusive)
{
    int rc = MPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED,
                          target, 0, kvs->win);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "MPI_Win_lock", rc);
}

static int coarse_unlock(mpikvs_t *kvs, int target)
{
    int rc = MPI_Win_unlock(target, kvs->win);
    return rc == MPI_SUCCESS ? MPIKVS_OK
                             : kvs_mpi_fail(kvs, "MPI_Win_unlock", rc);
}

static int lock(mpikvs_t *kvs, int target, uint64_t bucket, bool exclusive)
{
    switch (kvs->mode) {
    case KVSHM_MODE_FINE_LOCK:
        return kvs_bucket_lock(kvs, target, kvs_bucket_disp(kvs, bucket),
                               exclusive);
    case KVSHM_MODE_COARSE_LOCK:
        return coarse_lock(kvs, target, exclusive);
    default:
        return MPIKVS_OK;
    }
}

static int unlock(mpikvs_t *kvs, int target, uint64_t bucket, bool exclusive)
{
    switch (kvs->mode) {
    case KVSHM_MODE_FINE_LOCK:
        return kvs_bucket_unlock(kvs, target, kvs_bucket_disp(kvs, bucket),
                                 exclusive);
    case KVSHM_MODE_COARSE_LOCK:
        return coarse_unlock(kvs, target);
    default:
        return MPIKVS_OK;
    }
}

int kvs_get_one(mpikvs_t *kvs, const void *key, void *value)
{
    struct mpikvs_home home = kvs_home(kvs, key);
    return kvs_get_at(kvs, home, key, value);
}

int kvs_get_at(mpikvs_t *kvs, struct mpikvs_home home, const void *key,
               void *value)
{
    int rc;

    /* Another node's key: the node tier may have it, with no MPI call. */
    if (kvs->tier && home.node != kvs->node) {
        rc = kvs_tier_lookup(kvs, key, value);
        if (rc != MPIKVS_MISS) {
            if (rc == MPIKVS_OK)
                kvs_count_get(kvs, rc);
            return rc;
        }
    }
    rc = kvs_get_home(kvs, home, key, value);
    if (rc == MPIKVS_OK && kvs->tier && home.node != kvs->node)
        kvs_tier_record(kvs, key, value);
    return rc;
}

int kvs_get_home(mpikvs_t *kvs, struct mpikvs_home home, const void *key,
                 void *value)
{
    int target, rc, rc2;

    if (direct(kvs, &home))
        rc = get_direct(kvs, home.bucket, key, value);
    else {
        target = kvs->leaders[home.node];
        rc = lock(kvs, target, home.bucket, false);
        if (rc != MPIKVS_OK)
            return rc;
        rc = get_remote(kvs, target, home.bucket, key, value);
        rc2 = unlock(kvs, target, home.bucket, false);
        if (rc >= 0 && rc2 != MPIKVS_OK)
            rc = rc2;
    }
    kvs_count_get(kvs, rc);
    return rc;
}

void kvs_count_get(mpikvs_t *kvs, int rc)
{
    KVS_COUNT(kvs, gets, 1);
    if (rc == MPIKVS_OK)
        KVS_COUNT(kvs, hits, 1);
    else if (rc == MPIKVS_MISS)
        KVS_COUNT(kvs, misses, 1);
}

int kvs_put_one(mpikvs_t *kvs, const void *key, const void *value)
{
    struct mpikvs_home home = kvs_home(kvs, key);
    return kvs_put_at(kvs, home, key, value);
}

int kvs_put_at(mpikvs_t *kvs, struct mpikvs_home home, const void *key,
               const void *value)
{
    int target, rc, rc2;

    if (direct(kvs, &home))
        rc = put_direct(kvs, home.bucket, key, value);
    else {
        target = kvs->leaders[home.node];
        rc = lock(kvs, target, home.bucket, true);
        if (rc != MPIKVS_OK)
            return rc;
        rc = put_remote(kvs, target, home.bucket, key, value);
        rc2 = unlock(kvs, target, home.bucket, true);
        if (rc == MPIKVS_OK)
            rc = rc2;
    }
    if (rc == MPIKVS_OK)
        KVS_COUNT(kvs, puts, 1);
    return rc;
}

/* ---- the public single operations ---- */

int mpikvs_get(mpikvs_t *kvs, const void *key, void *value)
{
    if (!kvs)
        return MPIKVS_ERR_INVAL;
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_get: key and value must not be NULL");
    return kvs_get_one(kvs, key, value);
}

int mpikvs_put(mpikvs_t *kvs, const void *key, const void *value)
{
    if (!kvs)
        return MPIKVS_ERR_INVAL;
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_put: key and value must not be NULL");
    return kvs_put_one(kvs, key, value);
}
