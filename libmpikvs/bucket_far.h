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

/* The read paths (bucket_far.c says why two), a node's chosen as its
 * route is set (route.c): the config's far_read (job_config.h), bucket,
 * slot, or auto, which reads single slots where a slot is this many
 * bytes or more.  Measured with mpikvs-bench dht --value-size (np 2, two
 * virtual nodes, mpikvs(7)): where the node's region is mapped, a round
 * trip is a copy's start, and single slots were as fast at 512-byte
 * values and faster from 1 KiB on (0.99 against 1.12 us); through the
 * mpi transport (osc pt2pt over tcp) a round trip costs what a few
 * hundred KiB do, and the whole bucket was faster up to 256 KiB values
 * (332 against 488 us), single slots at 1 MiB (676 against 932 us). */
#define KVS_FAR_SLOT_MIN_MAPPED  (UINT64_C(1) << 10)
#define KVS_FAR_SLOT_MIN_NETWORK (UINT64_C(512) << 10)
bool kvs_far_slot_choose(enum kvshm_far_read far_read, uint64_t slot_size,
                         bool mapped);

/* The slot path's pieces, for a get and for a batch's gets.  A probe
 * (kvs_probe_size bytes) holds a bucket's header, then the key and the
 * checksum of one slot.  Issue the read of k's bucket header into it;
 * the next slot from from on that the header says may hold k (slots: none);
 * issue the reads of slot i's key and checksum into the probe and its
 * value into value; after the flush, what the slot holds (VERIFIED,
 * OTHER for another key, TORN). */
uint64_t kvs_probe_size(const mpikvs_t *kvs);
int kvs_read_header(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *probe);
uint64_t kvs_probe_next(const mpikvs_t *kvs, const unsigned char *probe,
                        const struct kvs_key *k, uint64_t from);
int kvs_read_slot_parts(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                        unsigned char *probe, void *value);
enum kvshm_slot_read kvs_probe_verify(mpikvs_t *kvs, unsigned char *probe,
                                      const struct kvs_key *k,
                                      const void *value);

/* Count a get's whole-bucket read in moved and copies: the transfer,
 * and a hit's copy of the value out of the bucket. */
void kvs_count_bucket_read(mpikvs_t *kvs, bool hit);

/* Issue the writes of slot i's key (k's bytes), value (from value) and
 * checksum (into *sum first, which must stay until the flush). */
int kvs_write_slot_parts(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                         const void *value, uint64_t *sum);

#endif /* MPIKVS_BUCKET_FAR_H */
