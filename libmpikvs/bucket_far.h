/*
 * bucket_far.h - the bucket I/O through the transport (bucket_far.c):
 * where a bucket, a slot, a meta word and a lock word are in a node's
 * region, and the reads and writes of them.
 */
#ifndef MPIKVS_BUCKET_FAR_H
#define MPIKVS_BUCKET_FAR_H

#include "bucket.h"
#include "handle.h"
#include "key.h"
#include "transport.h"

/* Displacement of a bucket in its node's region, of slot i of the
 * bucket and of its meta word, ... */
static inline uint64_t kvs_bucket_disp(const mpikvs_t *kvs, uint64_t bucket)
{
    return kvs->tab.buckets_offset + bucket * kvs->tab.bucket_size;
}

static inline uint64_t kvs_slot_disp(const mpikvs_t *kvs, uint64_t bucket,
                                     uint64_t i)
{
    return kvs_bucket_disp(kvs, bucket) +
           kvshm_bucket_slot_offset(kvs->tab.slots, kvs->tab.slot_size, i);
}

static inline uint64_t kvs_meta_disp(const mpikvs_t *kvs, uint64_t bucket,
                                     uint64_t i)
{
    return kvs_bucket_disp(kvs, bucket) + kvshm_bucket_meta_offset(i);
}

/* ... and of its lock word (the fine-lock mode's). */
static inline uint64_t kvs_lock_disp(const mpikvs_t *kvs, uint64_t bucket)
{
    return kvs_bucket_disp(kvs, bucket) + KVSHM_BUCKET_LOCK_OFFSET;
}

/* The I/Os (bucket_far.c says which is which). */
extern const struct kvs_bucket_io kvs_far_claimed_io;
extern const struct kvs_bucket_io kvs_far_unclaimed_io;
extern const struct kvs_bucket_io kvs_far_locked_io;

/* Issue the read of a key's bucket into into, or the writes of slot i
 * of its bucket: its meta word *meta and its image (kvs_slot_image);
 * complete after the transport's flush, until which meta and image must
 * stay as they are. */
int kvs_read_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *into);
int kvs_write_slot(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                   const uint64_t *meta, const unsigned char *image);

/* kvs_read_bucket and the flush that completes it: the bucket is in
 * into on MPIKVS_OK. */
int kvs_fetch_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *into);

#endif /* MPIKVS_BUCKET_FAR_H */
