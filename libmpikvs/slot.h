/*
 * slot.h - the slots of a bucket: finding a key, verifying, choosing where
 * a put goes.  The same code reads a bucket in shared memory (own node)
 * and a bucket copied by MPI_Get.
 */
#ifndef MPIKVS_SLOT_H
#define MPIKVS_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handle.h"

enum slot_found {
    SLOT_HIT,        /* the key, verified; value copied out */
    SLOT_MISS,       /* not in the bucket */
    SLOT_TORN        /* the key is there but its slot does not verify */
};

/* What a put does to the slot it picked. */
enum slot_choice {
    SLOT_UPDATE,     /* the key's own slot */
    SLOT_FREE,       /* empty or invalid */
    SLOT_EVICT       /* another key's, written longest ago */
};

static inline unsigned char *kvs_slot_at(const mpikvs_t *kvs,
                                     unsigned char *bucket, uint64_t i)
{
    return bucket + kvshm_bucket_slot_offset(kvs->slot_size, i);
}

/* Look key up in a bucket.  From shared memory (shared == true) every
 * slot read is ordered against its writer (acquire on the checksum);
 * from a private copy it is plain.  On SLOT_TORN, *torn_slot is the
 * index of the slot that did not verify and *torn_meta the meta word
 * that read saw, the one to invalidate against. */
enum slot_found kvs_slot_find(const mpikvs_t *kvs, unsigned char *bucket,
                          bool shared, const void *key, void *value,
                          uint64_t *torn_slot, uint64_t *torn_meta);

/* Between two reads of a slot that did not verify (attempt 0, 1, ...):
 * give a writer that is halfway through it time to finish.  Bounded:
 * a spin, then the CPU handed over, then a sleep of 100 us. */
void kvs_slot_backoff(int attempt);

/* Pick the slot a put of key goes to, in a bucket (shared or a copy). */
uint64_t kvs_slot_choose(const mpikvs_t *kvs, const unsigned char *bucket,
                     const void *key, enum slot_choice *choice);

/* Build the image of a slot holding key and value (meta with the stamp,
 * checksum) in out (slot_size bytes). */
void kvs_slot_image(mpikvs_t *kvs, const void *key, const void *value,
                    unsigned char *out);

/* Write a slot image into a slot in shared memory, in the order readers
 * rely on: meta, key and value, then the checksum with release. */
void kvs_slot_store(const mpikvs_t *kvs, unsigned char *slot,
                       const unsigned char *image);

/* Mark a slot of shared memory invalid if its meta is still meta, the
 * word its torn read saw; true if it did. */
bool kvs_slot_invalidate(unsigned char *slot, uint64_t meta);

#ifdef KVS_TEST_HOOKS
/* Tests only: tests/mpi/test_fault builds its own copy of the library's
 * sources with KVS_TEST_HOOKS; libmpikvs has no hook.  Called when a
 * reader has retried a slot of (bucket, slot) that does not verify, just
 * before it acts on it, so that a test can rewrite the slot at the worst
 * moment. */
extern void (*kvs_test_torn_hook)(mpikvs_t *kvs, uint64_t bucket,
                                  uint64_t slot);
#define KVS_TORN_HOOK(kvs, bucket, slot)                                \
    do {                                                                \
        if (kvs_test_torn_hook)                                         \
            kvs_test_torn_hook((kvs), (bucket), (slot));                \
    } while (0)
#else
#define KVS_TORN_HOOK(kvs, bucket, slot) ((void)0)
#endif

#endif /* MPIKVS_SLOT_H */
