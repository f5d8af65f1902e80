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

static int bad_field(mpikvs_error_t *err, const char *name, const char *what,
                     unsigned long long value)
{
    return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                      "%s has a corrupt control block: %s %llu is "
                      "impossible (the region was damaged, or was not made "
                      "by this mpikvs)",
                      name, what, value);
}

/* The counters: where they are and that they end before the buckets. */
static int check_counters(const struct kvshm_data_control *c, uint64_t size,
                          const char *name, mpikvs_error_t *err)
{
    if (c->stats_offset != KVSHM_DATA_CONTROL_OFFSET + sizeof(*c))
        return bad_field(err, name, "stats_offset",
                         (unsigned long long)c->stats_offset);
    if (c->max_ranks == 0 ||
        c->max_ranks > size / sizeof(struct kvshm_rank_stats))
        return bad_field(err, name, "max_ranks",
                         (unsigned long long)c->max_ranks);
    if (c->buckets_offset != kvshm_data_buckets_offset(c->max_ranks) ||
        c->buckets_offset > size)
        return bad_field(err, name, "buckets_offset",
                         (unsigned long long)c->buckets_offset);
    return MPIKVS_OK;
}

/* The buckets: the shape the sizes give, and all of them in the file. */
static int check_buckets(const struct kvshm_data_control *c, uint64_t size,
                         const char *name, mpikvs_error_t *err)
{
    struct kvshm_data_shape shape;

    if (c->key_size == 0 || c->key_size > KVSHM_RECORD_MAX)
        return bad_field(err, name, "key_size",
                         (unsigned long long)c->key_size);
    if (c->value_size == 0 || c->value_size > KVSHM_RECORD_MAX)
        return bad_field(err, name, "value_size",
                         (unsigned long long)c->value_size);
    if (c->slots_per_bucket == 0 || c->slots_per_bucket > KVSHM_SLOTS_MAX)
        return bad_field(err, name, "slots_per_bucket",
                         (unsigned long long)c->slots_per_bucket);
    if (c->mode > KVSHM_MODE_COARSE_LOCK)
        return bad_field(err, name, "mode", c->mode);
    shape.key_size = c->key_size;
    shape.value_size = c->value_size;
    shape.slots_per_bucket = c->slots_per_bucket;
    shape.mode = c->mode;
    if (c->slot_size != kvshm_slot_size(&shape))
        return bad_field(err, name, "slot_size",
                         (unsigned long long)c->slot_size);
    if (c->bucket_size != kvshm_bucket_size(&shape))
        return bad_field(err, name, "bucket_size",
                         (unsigned long long)c->bucket_size);
    /* division, not multiplication: a damaged count must not wrap */
    if (c->nbuckets == 0 ||
        c->nbuckets > (size - c->buckets_offset) / c->bucket_size)
        return bad_field(err, name, "nbuckets",
                         (unsigned long long)c->nbuckets);
    return MPIKVS_OK;
}

int kvshm_data_read_control(const void *base, uint64_t size,
                            const char *name,
                            struct kvshm_data_control *out,
                            mpikvs_error_t *err)
{
    const struct kvshm_data_control *c =
        (const struct kvshm_data_control *)((const char *)base +
                                            KVSHM_DATA_CONTROL_OFFSET);
    uint32_t state;
    int rc;

    if (size < KVSHM_DATA_CONTROL_OFFSET + sizeof(*c))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s is too small for a data region (%llu bytes)",
                          name, (unsigned long long)size);
    /* Acquire: once READY is seen, the geometry written before it is too
     * (kvshm_data_format stores READY with release). */
    state = LOAD_ACQUIRE(&c->state);
    memcpy(out, c, sizeof(*out));
    out->state = state;
    if (!memchr(out->table, '\0', sizeof(out->table)))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s has a corrupt control block: its table name "
                          "has no end",
                          name);
    if ((rc = check_counters(out, size, name, err)) != MPIKVS_OK)
        return rc;
    switch (state) {
    case KVSHM_DATA_UNFORMATTED:
    case KVSHM_DATA_FORMATTING:
        return MPIKVS_OK;
    case KVSHM_DATA_READY:
        return check_buckets(out, size, name, err);
    default:
        return bad_field(err, name, "state", state);
    }
}

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
