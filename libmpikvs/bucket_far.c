/*
 * bucket_far.c - the bucket I/O through the transport (bucket.h): a
 * bucket of another node (or, in the fine-lock mode, of any) read into
 * the handle's scratch copy, its slots written back, completed by the
 * transport's flush before the call returns.
 *
 * Three of them, one per way the writers of a bucket race:
 *   claimed    lock-free where the transport's atomics are the CPU's
 *              (transport.h, cpu_atomic): a slot claimed with the
 *              target's compare-and-swap, as the home node's ranks claim
 *              it;
 *   unclaimed  lock-free without (the mpi transport): a slot written as
 *              picked, since a remote compare-and-swap would not be
 *              atomic with the home node's; two puts that pick one free
 *              slot at once, one here and one on the key's node, may
 *              then lose one key (a later miss, never a wrong value;
 *              mpikvs(7));
 *   locked     the lock modes: the caller's lock keeps every other writer
 *              out of the bucket.
 * Lock-free, a slot that does not verify stays as it is: marking it would
 * take a remote compare-and-swap on the meta word, which the home node's
 * ranks change with CPU atomics, and the claimed I/O's is one only where
 * they are the CPU's; a put of the key overwrites the slot, and a reader
 * on the home node invalidates it.  Under a lock, meta is still as read,
 * and one write of the meta word marks the slot invalid.
 */
#include "bucket_far.h"
#include "slot.h"

static int far_bucket(struct kvs_access *a, unsigned char **b)
{
    *b = a->kvs->scratch;
    return kvs_fetch_bucket(a->kvs, a->k, a->kvs->scratch);
}

/* The target's CPU runs the compare-and-swap (transport.h, cpu_atomic),
 * a locked instruction there, and completes it before the next read:
 * the fence put-if-absent asks for. */
static int far_cas(struct kvs_access *a, uint64_t i, uint64_t expect,
                   uint64_t desired, uint64_t *seen, bool fence)
{
    mpikvs_t *kvs = a->kvs;
    int rc = kvs->tp->cas64(kvs, a->k->node,
                            kvs_meta_disp(kvs, a->k->bucket, i), expect,
                            desired, seen);

    (void)fence;
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, a->k->node) : rc;
}

/* The slot's image, and before it an unclaimed slot's meta word; then
 * the flush: complete at the target before the image is reused, another
 * rank may read the slot, or (claimed) BUSY goes. */
static int far_write(struct kvs_access *a, unsigned char *b, uint64_t i,
                     const uint64_t *meta, const void *value)
{
    mpikvs_t *kvs = a->kvs;
    const struct kvs_key *k = a->k;
    int rc;

    (void)b;
    kvs_slot_image(&kvs->tab, k, value, kvs->slot_image);
    rc = meta ? kvs_write_slot(kvs, k, i, meta, kvs->slot_image)
              : kvs->tp->write(kvs, k->node,
                               kvs_slot_disp(kvs, k->bucket, i),
                               kvs->slot_image, kvs->tab.slot_size);
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

static int leave_torn(struct kvs_access *a, unsigned char *b, uint64_t i,
                      uint64_t meta)
{
    (void)a;
    (void)b;
    (void)i;
    (void)meta;
    return 0;
}

static int invalidate_locked(struct kvs_access *a, unsigned char *b,
                             uint64_t i, uint64_t meta)
{
    mpikvs_t *kvs = a->kvs;
    uint64_t word = meta | KVSHM_SLOT_INVALID;
    int rc;

    (void)b;
    rc = kvs->tp->write(kvs, a->k->node,
                        kvs_meta_disp(kvs, a->k->bucket, i), &word,
                        sizeof(word));
    if (rc == MPIKVS_OK)   /* before word goes out of scope */
        rc = kvs->tp->flush(kvs, a->k->node);
    return rc == MPIKVS_OK ? 1 : rc;
}

const struct kvs_bucket_io kvs_far_claimed_io = {
    .shared = false,
    .locked = false,
    .bucket = far_bucket,
    .cas = far_cas,
    .write = far_write,
    .invalidate = leave_torn};

const struct kvs_bucket_io kvs_far_unclaimed_io = {
    .shared = false,
    .locked = false,
    .bucket = far_bucket,
    .cas = NULL,
    .write = far_write,
    .invalidate = leave_torn};

const struct kvs_bucket_io kvs_far_locked_io = {
    .shared = false,
    .locked = true,
    .bucket = far_bucket,
    .cas = NULL,
    .write = far_write,
    .invalidate = invalidate_locked};

int kvs_read_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *into)
{
    return kvs->tp->read(kvs, k->node, kvs_bucket_disp(kvs, k->bucket), into,
                         kvs->tab.bucket_size);
}

int kvs_write_slot(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                   const uint64_t *meta, const unsigned char *image)
{
    int rc = kvs->tp->write(kvs, k->node, kvs_meta_disp(kvs, k->bucket, i),
                            meta, sizeof(*meta));

    if (rc != MPIKVS_OK)
        return rc;
    return kvs->tp->write(kvs, k->node, kvs_slot_disp(kvs, k->bucket, i),
                          image, kvs->tab.slot_size);
}

int kvs_fetch_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *into)
{
    int rc = kvs_read_bucket(kvs, k, into);

    /* The bucket must be in our buffer before we read it. */
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}
