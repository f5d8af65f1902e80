/*
 * scan.c - reading a data region from outside its job (scan.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "data_region.h"
#include "errors_internal.h"
#include "job_config.h"
#include "scan.h"
#include "slot_read.h"

enum slot_kind { SLOT_FREE, SLOT_INVALID, SLOT_USED, SLOT_UNVERIFIED };

/* One slot, read as libmpikvs reads one (slot_read.h): a slot caught in
 * the middle of a write does not verify; one written before the table's
 * latest clear is free (a put takes it as such: libmpikvs/slot.c). */
static enum slot_kind read_slot(const unsigned char *bucket, uint64_t i,
                                const struct kvshm_data_control *c,
                                unsigned char *copy)
{
    switch (kvshm_slot_scan(bucket, i, kvshm_meta_load(bucket, i, true),
                            c->slots_per_bucket, c->slot_size, c->key_size,
                            c->value_size, true, c->generation, copy)) {
    case KVSHM_SLOT_READ_FREE:
    case KVSHM_SLOT_READ_CLEARED:
        return SLOT_FREE;
    case KVSHM_SLOT_READ_INVALID:
        return SLOT_INVALID;
    case KVSHM_SLOT_READ_VERIFIED:
        return SLOT_USED;
    case KVSHM_SLOT_READ_OTHER:     /* a lookup's */
    case KVSHM_SLOT_READ_TORN:
        break;
    }
    return SLOT_UNVERIFIED;
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
            switch (read_slot(bucket, i, c, copy)) {
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
