/*
 * scan.c - reading a data region from outside its job (scan.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "data_region.h"
#include "errors_internal.h"
#include "job_config.h"
#include "scan.h"

#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

enum slot_kind { SLOT_FREE, SLOT_INVALID, SLOT_USED, SLOT_UNVERIFIED };

/* One slot, read in libmpikvs' order (mpi-kvs/slot.c): meta, then the
 * checksum with acquire, then a copy of key and value.  A writer stores
 * meta, key and value, then the checksum with release, so a finished
 * write verifies, and a copy that mixes two writes verifies only by a
 * 64-bit accident. */
static enum slot_kind read_slot(const unsigned char *slot,
                                const struct kvshm_data_control *c,
                                unsigned char *copy)
{
    size_t kv_len = c->key_size + c->value_size;
    uint64_t meta, sum;

    meta = LOAD_ACQUIRE((const uint64_t *)slot);
    if (!(meta & KVSHM_SLOT_OCCUPIED))
        return SLOT_FREE;
    if (meta & KVSHM_SLOT_INVALID)
        return SLOT_INVALID;
    sum = LOAD_ACQUIRE((const uint64_t *)(slot + c->slot_size - 8));
    memcpy(copy, slot + 8, kv_len);
    return XXH3_64bits_withSeed(copy, kv_len, KVSHM_SLOT_CHECKSUM_SEED) == sum
               ? SLOT_USED
               : SLOT_UNVERIFIED;
}

int kvshm_data_occupancy(const void *base, const struct kvshm_data_control *c,
                         struct kvshm_occupancy *out)
{
    const unsigned char *bucket =
        (const unsigned char *)base + c->buckets_offset;
    unsigned char *copy;

    memset(out, 0, sizeof(*out));
    if (c->state != KVSHM_DATA_READY)
        return MPIKVS_ERR_INVAL;
    /* Hash a private copy: the bytes in the region may change while the
     * hash runs, and what is compared must be what was hashed. */
    copy = malloc(c->key_size + c->value_size);
    if (!copy)
        return -ENOMEM;
    out->buckets = c->nbuckets;
    out->slots = c->nbuckets * c->slots_per_bucket;
    for (uint64_t b = 0; b < c->nbuckets; b++, bucket += c->bucket_size) {
        bool room = false;
        for (uint64_t i = 0; i < c->slots_per_bucket; i++) {
            const unsigned char *slot = bucket + 8 + i * c->slot_size;
            switch (read_slot(slot, c, copy)) {
            case SLOT_FREE:
                out->free++;
                room = true;
                break;
            case SLOT_INVALID:
                out->invalid++;
                room = true;
                break;
            case SLOT_USED:
                out->used++;
                break;
            case SLOT_UNVERIFIED:
                out->unverified++;
                break;
            }
        }
        out->full_buckets += !room;
    }
    free(copy);
    return MPIKVS_OK;
}
