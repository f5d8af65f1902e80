/*
 * data_region.c - laying out a table's data region.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "data_region.h"
#include "errors_internal.h"
#include "job_config.h"

#define FORMAT_WAIT_MS 5000u   /* another opener laying out the buckets */

uint64_t kvshm_data_buckets_offset(uint64_t max_ranks)
{
    uint64_t stats_end = KVSHM_DATA_STATS_OFFSET +
                         max_ranks * sizeof(struct kvshm_rank_stats);

    return (stats_end + 4095) & ~UINT64_C(4095);
}

static int lay_out_buckets(struct kvshm_data_control *c, uint64_t region_size,
                           const struct kvshm_data_shape *s,
                           mpikvs_error_t *err)
{
    uint64_t bucket_size = kvshm_bucket_size(s);
    uint64_t need = kvshm_data_min_size(c->max_ranks, s);

    if (region_size < need) {
        char have[32];
        kvshm_format_bytes(have, sizeof(have), region_size);
        return kvshm_fail(err, MPIKVS_ERR_TOOSMALL,
                          "a region of %s cannot hold one bucket of %llu "
                          "bytes (%llu slots of %llu-byte keys and "
                          "%llu-byte values) after its counters for %llu "
                          "ranks: the smallest is %llu bytes",
                          have, (unsigned long long)bucket_size,
                          (unsigned long long)s->slots_per_bucket,
                          (unsigned long long)s->key_size,
                          (unsigned long long)s->value_size,
                          (unsigned long long)c->max_ranks,
                          (unsigned long long)need);
    }
    c->key_size = s->key_size;
    c->value_size = s->value_size;
    c->slots_per_bucket = s->slots_per_bucket;
    c->slot_size = kvshm_slot_size(s);
    c->bucket_size = bucket_size;
    c->nbuckets = (region_size - c->buckets_offset) / bucket_size;
    c->mode = s->mode;
    return MPIKVS_OK;
}

int kvshm_data_init(struct kvshm_data_control *c, uint64_t region_size,
                    uint64_t max_ranks, const struct kvshm_data_shape *shape,
                    const char *table, mpikvs_error_t *err)
{
    int rc;

    if (max_ranks == 0)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "a data region needs counters for 1 rank or more");
    c->stats_offset = KVSHM_DATA_STATS_OFFSET;
    c->max_ranks = max_ranks;
    c->buckets_offset = kvshm_data_buckets_offset(max_ranks);
    snprintf(c->table, sizeof(c->table), "%s", table);
    if (!shape) {
        c->state = KVSHM_DATA_UNFORMATTED;
        return MPIKVS_OK;
    }
    if ((rc = lay_out_buckets(c, region_size, shape, err)) != MPIKVS_OK)
        return rc;
    c->state = KVSHM_DATA_READY;
    return MPIKVS_OK;
}

static int check_shape(const struct kvshm_data_control *c,
                       const struct kvshm_data_shape *s, const char *name,
                       mpikvs_error_t *err)
{
    if (c->key_size == s->key_size && c->value_size == s->value_size &&
        c->slots_per_bucket == s->slots_per_bucket && c->mode == s->mode)
        return MPIKVS_OK;
    return kvshm_fail(err, MPIKVS_ERR_MISMATCH,
                      "region %s holds %llu-byte keys and %llu-byte values "
                      "in buckets of %llu slots, mode %s; this rank asked "
                      "for %llu, %llu and %llu, mode %s (open with the "
                      "sizes the region was made for, or in a new step "
                      "with --dht-scope=step)",
                      name, (unsigned long long)c->key_size,
                      (unsigned long long)c->value_size,
                      (unsigned long long)c->slots_per_bucket,
                      kvshm_mode_name((enum kvshm_mode)c->mode),
                      (unsigned long long)s->key_size,
                      (unsigned long long)s->value_size,
                      (unsigned long long)s->slots_per_bucket,
                      kvshm_mode_name((enum kvshm_mode)s->mode));
}

int kvshm_data_format(struct kvshm_data_control *c, uint64_t region_size,
                      const struct kvshm_data_shape *shape,
                      const char *region_name, mpikvs_error_t *err)
{
    struct timespec pause = {0, 1000000};
    unsigned waited_ms = 0;
    uint32_t state;
    int rc;

    for (;;) {
        state = KVSHM_DATA_UNFORMATTED;
        if (__atomic_compare_exchange_n(&c->state, &state,
                                        KVSHM_DATA_FORMATTING, false,
                                        __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE)) {
            rc = lay_out_buckets(c, region_size, shape, err);
            __atomic_store_n(&c->state,
                             rc == MPIKVS_OK ? KVSHM_DATA_READY
                                             : KVSHM_DATA_UNFORMATTED,
                             __ATOMIC_RELEASE);
            return rc;
        }
        if (state != KVSHM_DATA_FORMATTING)
            break;
        /* another opener is laying it out; if it gives up, try again */
        if (waited_ms++ == FORMAT_WAIT_MS)
            return kvshm_fail(err, MPIKVS_ERR_STALLED,
                              "region %s has been half laid out for %u s: "
                              "the process doing it died; remove the region "
                              "or start a new job",
                              region_name, FORMAT_WAIT_MS / 1000);
        nanosleep(&pause, NULL);
    }
    if (state != KVSHM_DATA_READY)
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "region %s has an unknown state %u", region_name,
                          state);
    return check_shape(c, shape, region_name, err);
}

/* ---- checking a control block someone else wrote ---- */

static int bad_field(mpikvs_error_t *err, const char *name, const char *what,
                     unsigned long long value)
{
    return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                      "%s has a corrupt control block: %s %llu is "
                      "impossible (the region was damaged, or was not made "
                      "by this mpikvs)",
                      name, what, value);
}

static int too_small(mpikvs_error_t *err, const char *name, uint64_t size)
{
    return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                      "%s is too small for a data region (%llu bytes)", name,
                      (unsigned long long)size);
}

/* The counters: where they are and that they end before the buckets. */
static int check_counters(const struct kvshm_data_control *c, uint64_t size,
                          const char *name, mpikvs_error_t *err)
{
    if (c->stats_offset != KVSHM_DATA_STATS_OFFSET)
        return bad_field(err, name, "stats_offset",
                         (unsigned long long)c->stats_offset);
    /* bounded first, so that kvshm_data_buckets_offset cannot wrap */
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

    /* the limits of a key and a value (job_config.h) */
    if (c->key_size == 0 || c->key_size > KVSHM_KEY_SIZE_MAX)
        return bad_field(err, name, "key_size",
                         (unsigned long long)c->key_size);
    if (c->value_size == 0 || c->value_size > KVSHM_VALUE_SIZE_MAX)
        return bad_field(err, name, "value_size",
                         (unsigned long long)c->value_size);
    if (c->slots_per_bucket == 0 || c->slots_per_bucket > KVSHM_SLOTS_MAX)
        return bad_field(err, name, "slots_per_bucket",
                         (unsigned long long)c->slots_per_bucket);
    if (c->mode > KVSHM_MODE_COARSE_LOCK)
        return bad_field(err, name, "mode", c->mode);
    /* the sizes are bounded now, so these products are small */
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

int kvshm_data_control_check(const struct kvshm_data_control *c,
                             uint64_t region_size, const char *name,
                             mpikvs_error_t *err)
{
    int rc;

    if (region_size < KVSHM_DATA_STATS_OFFSET)
        return too_small(err, name, region_size);
    if (!memchr(c->table, '\0', sizeof(c->table)))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s has a corrupt control block: its table name "
                          "has no end",
                          name);
    if ((rc = check_counters(c, region_size, name, err)) != MPIKVS_OK)
        return rc;
    switch (c->state) {
    case KVSHM_DATA_UNFORMATTED:
    case KVSHM_DATA_FORMATTING:
        return MPIKVS_OK;
    case KVSHM_DATA_READY:
        return check_buckets(c, region_size, name, err);
    default:
        return bad_field(err, name, "state", c->state);
    }
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

    if (size < KVSHM_DATA_STATS_OFFSET)
        return too_small(err, name, size);
    /* Acquire: once READY is seen, the geometry written before it is too
     * (kvshm_data_format stores READY with release). */
    state = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
    memcpy(out, c, sizeof(*out));
    out->state = state;
    return kvshm_data_control_check(out, size, name, err);
}
