/*
 * slot.c - reading and writing the slots of a bucket.
 *
 * The slot's format is format.h's (struct kvshm_slot); it is read as
 * slot_read.h says, the same protocol mpikvs-stat's scanner uses, which
 * also says why a torn slot cannot verify.  A writer here stores meta,
 * then key and value, then the checksum with release (kvs_slot_store).
 */
#include <sched.h>
#include <string.h>
#include <time.h>

/* the slots' checksums inline (slot_read.h) */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "slot.h"
#include "slot_read.h"
#include "spin.h"

#ifdef KVS_TEST_HOOKS
void (*kvs_test_torn_hook)(mpikvs_t *kvs, uint64_t bucket, uint64_t slot);
#endif

static inline uint64_t *slot_meta(unsigned char *slot)
{
    return &((struct kvshm_slot *)slot)->meta;
}

static inline uint64_t *slot_checksum(const mpikvs_t *kvs,
                                      unsigned char *slot)
{
    return (uint64_t *)(slot + kvshm_slot_checksum_offset(kvs->slot_size));
}

/* Write stamps: microseconds of the wall clock, which all nodes share
 * closely enough to tell old from new, in 32 bits (they wrap every 71
 * minutes; ages are taken modulo that). */
static uint32_t clock_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000u +
                      (uint64_t)ts.tv_nsec / 1000u);
}

/* One writer's stamps strictly grow, even for puts in one microsecond,
 * so that a full bucket gives up the key this writer wrote longest ago.
 * last_stamp 0 is "none yet": compared with it, half of the clock's
 * values would read as older and every rank would count 1, 2, 3 instead,
 * and the stamps of two ranks' writes would meet (an invalidation tells
 * a rewritten slot by its new stamp). */
static uint32_t next_stamp(mpikvs_t *kvs)
{
    uint32_t now = clock_us();

    if (kvs->last_stamp && (int32_t)(now - kvs->last_stamp) <= 0)
        now = kvs->last_stamp + 1;
    if (now == 0)
        now = 1;
    kvs->last_stamp = now;
    return now;
}

/* How long ago a stamp was written; a stamp "from the future" (another
 * writer's clock or burst runs ahead) counts as brand new. */
static uint32_t age(uint32_t now, uint32_t stamp)
{
    int32_t d = (int32_t)(now - stamp);
    return d < 0 ? 0 : (uint32_t)d;
}

static bool live(uint64_t meta)
{
    return (meta & KVSHM_SLOT_OCCUPIED) && !(meta & KVSHM_SLOT_INVALID);
}

enum slot_found kvs_slot_find(const mpikvs_t *kvs, unsigned char *bucket,
                              bool shared, const void *key, void *value,
                              uint64_t *torn_slot, uint64_t *torn_meta)
{
    unsigned char copy[kvs->key_size + kvs->value_size];

    for (uint64_t i = 0; i < kvs->slots; i++) {
        uint64_t meta;

        switch (kvshm_slot_read(kvs_slot_at(kvs, bucket, i), kvs->slot_size,
                                kvs->key_size, kvs->value_size, shared, key,
                                copy, &meta)) {
        case KVSHM_SLOT_READ_FREE:
        case KVSHM_SLOT_READ_INVALID:
        case KVSHM_SLOT_READ_OTHER:
            continue;
        case KVSHM_SLOT_READ_VERIFIED:
            if (value)
                memcpy(value, copy + kvs->key_size, kvs->value_size);
            return SLOT_HIT;
        case KVSHM_SLOT_READ_TORN:
            *torn_slot = i;
            *torn_meta = meta;
            return SLOT_TORN;
        }
    }
    return SLOT_MISS;
}

uint64_t kvs_slot_choose(const mpikvs_t *kvs, const unsigned char *bucket,
                         const void *key, enum slot_choice *choice)
{
    uint64_t free_slot = UINT64_MAX, oldest = UINT64_MAX;
    uint32_t oldest_age = 0;
    uint32_t now = clock_us();

    /* My own burst of puts may have run the stamps ahead of the clock:
     * measure ages from the newest of mine, or they would all tie. */
    if (kvs->last_stamp && (int32_t)(kvs->last_stamp - now) > 0)
        now = kvs->last_stamp;

    for (uint64_t i = 0; i < kvs->slots; i++) {
        const unsigned char *slot =
            bucket + kvshm_bucket_slot_offset(kvs->slot_size, i);
        const struct kvshm_slot *sl = (const struct kvshm_slot *)slot;
        uint64_t meta = __atomic_load_n(&sl->meta, __ATOMIC_RELAXED);
        if (!live(meta)) {
            if (free_slot == UINT64_MAX)
                free_slot = i;
            continue;
        }
        /* Our key, even in a slot that does not verify: overwrite it. */
        if (memcmp(sl->kv, key, kvs->key_size) == 0) {
            *choice = SLOT_UPDATE;
            return i;
        }
        uint32_t a = age(now, (uint32_t)(meta >> KVSHM_SLOT_STAMP_SHIFT));
        if (oldest == UINT64_MAX || a > oldest_age) {
            oldest_age = a;
            oldest = i;
        }
    }
    if (free_slot != UINT64_MAX) {
        *choice = SLOT_FREE;
        return free_slot;
    }
    *choice = SLOT_EVICT;
    return oldest;
}

void kvs_slot_image(mpikvs_t *kvs, const void *key, const void *value,
                    unsigned char *out)
{
    uint64_t meta = KVSHM_SLOT_OCCUPIED |
                    ((uint64_t)next_stamp(kvs) << KVSHM_SLOT_STAMP_SHIFT);
    uint64_t sum;

    memset(out, 0, kvs->slot_size);
    memcpy(out + KVSHM_SLOT_META_OFFSET, &meta, sizeof(meta));
    memcpy(out + KVSHM_SLOT_KV_OFFSET, key, kvs->key_size);
    memcpy(out + kvshm_slot_value_offset(kvs->key_size), value,
           kvs->value_size);
    sum = kvshm_slot_checksum(out + KVSHM_SLOT_KV_OFFSET,
                              kvs->key_size + kvs->value_size);
    memcpy(out + kvshm_slot_checksum_offset(kvs->slot_size), &sum,
           sizeof(sum));
}

void kvs_slot_store(const mpikvs_t *kvs, unsigned char *slot,
                    const unsigned char *image)
{
    uint64_t meta, sum;

    memcpy(&meta, image + KVSHM_SLOT_META_OFFSET, sizeof(meta));
    memcpy(&sum, image + kvshm_slot_checksum_offset(kvs->slot_size),
           sizeof(sum));
    __atomic_store_n(slot_meta(slot), meta, __ATOMIC_RELAXED);
    memcpy(slot + KVSHM_SLOT_KV_OFFSET, image + KVSHM_SLOT_KV_OFFSET,
           kvshm_slot_checksum_offset(kvs->slot_size) - KVSHM_SLOT_KV_OFFSET);
    /* Release: a reader that loads this checksum sees the key and value
     * above, so a finished write always verifies. */
    __atomic_store_n(slot_checksum(kvs, slot), sum, __ATOMIC_RELEASE);
}

void kvs_slot_backoff(int attempt)
{
    if (attempt == 0) {
        for (int i = 0; i < 64; i++)
            kvshm_cpu_relax();
        /* On a loaded node the writer may be waiting for this CPU. */
        sched_yield();
    } else {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 100000};
        nanosleep(&ts, NULL);
    }
}

bool kvs_slot_invalidate(unsigned char *slot, uint64_t meta)
{
    /* Only the slot as the torn read saw it: every write stores a new
     * meta (its stamp) first, so a writer that rewrote the slot since
     * keeps its fresh write. */
    return __atomic_compare_exchange_n(slot_meta(slot), &meta,
                                       meta | KVSHM_SLOT_INVALID, false,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
