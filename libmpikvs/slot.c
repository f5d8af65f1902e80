/*
 * slot.c - reading, choosing and writing the slots of a bucket.
 *
 * The bucket's format is format.h's; a slot is read as slot_read.h says,
 * the same protocol mpikvs-stat's scanner uses, which also says why a
 * torn slot cannot verify and how a lock-free writer claims a slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slot.h"
#include "slot_read.h"
#include "spin.h"

#ifdef KVS_TEST_HOOKS
void (*kvs_test_torn_hook)(struct mpikvs *kvs, uint64_t bucket,
                           uint64_t slot);
#endif

#define NONE UINT64_MAX

enum slot_found kvs_slot_find(const struct kvs_table *t, unsigned char *bucket,
                              bool shared, const struct kvs_key *k,
                              void *value, uint64_t *torn_slot,
                              uint64_t *torn_meta)
{
    for (uint64_t i = 0; i < t->slots; i++) {
        uint64_t meta = kvshm_meta_load(bucket, i, shared);

        if (!kvshm_meta_live(meta) || kvshm_meta_tag(meta) != k->tag)
            continue;
        KVS_COUNT(t, probes, 1);
        /* straight into value, verified there (mpikvs(3): its content
         * is undefined unless the get hits) */
        switch (kvshm_slot_read(meta, kvs_slot_at(t, bucket, i),
                                t->slot_size, t->key_size,
                                t->value_size, shared, k->bytes, k->seed,
                                value)) {
        case KVSHM_SLOT_READ_FREE:
        case KVSHM_SLOT_READ_INVALID:
        case KVSHM_SLOT_READ_OTHER:
        case KVSHM_SLOT_READ_CLEARED:   /* not from a lookup */
            continue;
        case KVSHM_SLOT_READ_VERIFIED:
            return SLOT_HIT;
        case KVSHM_SLOT_READ_TORN:
            *torn_slot = i;
            *torn_meta = meta;
            return SLOT_TORN;
        }
    }
    return SLOT_MISS;
}

/* Stamps are a bucket's own clock (format.h): 32 bits that wrap, compared
 * as serial numbers, which holds while a bucket's stamps lie within 2^31
 * writes of each other. */
static bool newer(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

/* Whether process pid has exited but is not reaped yet (a zombie still
 * answers kill(2)): its state in /proc/<pid>/stat, after the command's
 * closing parenthesis. */
static bool exited(pid_t pid)
{
    char path[32], st[512];
    const char *paren;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return false;
    n = read(fd, st, sizeof(st) - 1);
    close(fd);
    if (n <= 0)
        return false;
    st[n] = '\0';
    paren = strrchr(st, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

bool kvs_slot_owner_dead(uint64_t meta)
{
    pid_t owner = (pid_t)kvshm_meta_stamp(meta);

    /* 0: a claim through the transport, whose owner is not ours to see */
    if (owner <= 0)
        return false;
    if (kill(owner, 0) == -1)
        return errno == ESRCH;
    return exited(owner);
}

static bool may_take(enum slot_takeover takeover, uint64_t meta)
{
    return takeover == TAKEOVER_ANY ||
           (takeover == TAKEOVER_DEAD && kvs_slot_owner_dead(meta));
}

/* Whether live slot i (meta) of bucket was written before the table's
 * latest clear: its key's tag in the generation of k's record is not
 * its tag.  A key read while a write that claims nothing rewrites it
 * may say so wrongly: then a put takes a slot it could take anyway. */
static bool cleared(const struct kvs_table *t, const unsigned char *bucket,
                    bool shared, const struct kvs_key *k, uint64_t i,
                    uint64_t meta)
{
    return !kvshm_slot_of_generation(
        meta,
        kvshm_slot_key_hash(kvs_slot_at(t, (unsigned char *)bucket, i),
                            kvs_table_hash_size(t), shared),
        k->generation);
}

bool kvs_slot_pick(const struct kvs_table *t, unsigned char *bucket,
                   bool shared, bool keys, const struct kvs_key *k,
                   enum slot_takeover takeover, struct slot_pick *p)
{
    uint64_t update = NONE, mine_busy = NONE, free_slot = NONE;
    uint64_t oldest = NONE;
    uint32_t newest = 0, oldest_stamp = 0;
    bool any = false;
    uint64_t metas[t->slots];

    for (uint64_t i = 0; i < t->slots; i++) {
        uint64_t m = metas[i] = kvshm_meta_load(bucket, i, shared);
        uint32_t stamp = kvshm_meta_stamp(m);

        if (!kvshm_meta_live(m)) {
            if (free_slot == NONE || i == k->preferred)
                free_slot = i;
            continue;
        }
        if (m & KVSHM_SLOT_BUSY) {   /* its stamp field is its owner */
            if (kvshm_meta_tag(m) == k->tag && mine_busy == NONE)
                mine_busy = i;
            continue;
        }
        if (!any || newer(stamp, newest))
            newest = stamp;
        any = true;
        /* Our key, even in a slot that does not verify: overwrite it. */
        if (kvshm_meta_tag(m) == k->tag && update == NONE &&
            kvshm_slot_equal(kvs_slot_at(t, bucket, i),
                             KVSHM_SLOT_KV_OFFSET, t->key_size, k->bytes,
                             shared))
            update = i;
        if (oldest == NONE || newer(oldest_stamp, stamp)) {
            oldest = i;
            oldest_stamp = stamp;
        }
    }
    if (update != NONE) {
        p->slot = update;
        p->choice = SLOT_UPDATE;
    } else if (mine_busy != NONE) {
        /* Likely a put of this key, halfway: after it, ours updates it. */
        p->slot = mine_busy;
        p->seen = metas[mine_busy];
        if (!may_take(takeover, p->seen))
            return false;
        p->choice = SLOT_UPDATE;
    } else if (free_slot != NONE) {
        p->slot = free_slot;
        p->choice = SLOT_FREE;
    } else if (oldest != NONE) {
        p->slot = oldest;
        p->choice = SLOT_EVICT;
        /* a table that was never cleared has nothing to ask */
        if (keys && k->generation &&
            cleared(t, bucket, shared, k, oldest, metas[oldest])) {
            p->choice = SLOT_FREE;
            uint64_t m = metas[k->preferred];
            if (k->preferred != oldest && !(m & KVSHM_SLOT_BUSY) &&
                cleared(t, bucket, shared, k, k->preferred, m))
                p->slot = k->preferred;
        }
    } else {   /* every slot is claimed: one that may be taken over */
        p->slot = 0;
        p->seen = metas[0];
        for (uint64_t i = 0; i < t->slots; i++) {
            if (may_take(takeover, metas[i])) {
                p->slot = i;
                break;
            }
            if (i + 1 == t->slots)
                return false;
        }
        p->choice = SLOT_EVICT;
    }
    p->seen = metas[p->slot];
    p->meta = KVSHM_SLOT_OCCUPIED |
              ((uint64_t)k->tag << KVSHM_SLOT_TAG_SHIFT) |
              ((uint64_t)(uint32_t)(newest + 1u) << KVSHM_SLOT_STAMP_SHIFT);
    return true;
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

bool kvs_slot_busy_wait(struct kvs_busy *w)
{
    if (w->waits++ < KVS_SLOT_SPIN_WAITS) {
        kvs_slot_backoff(0);
        return true;
    }
    if (w->deadline == 0)
        w->deadline = kvshm_now_ms() + KVS_SLOT_STALL_MS;
    else if (kvshm_now_ms() >= w->deadline)
        return false;
    kvs_slot_backoff(1);
    return true;
}

/* len bytes of src into the claimed slot from byte from, as readers
 * read them (slot_read.h): relaxed atomic stores of whole words; a
 * partial first or last word keeps its other bytes (only the claimer
 * writes the slot). */
static void slot_store(unsigned char *slot, size_t from, const void *src,
                       size_t len)
{
    const unsigned char *p = src;
    uint64_t *w = (uint64_t *)slot + from / 8, word;
    size_t off = from % 8;

    if (off && len) {
        size_t n = 8 - off < len ? 8 - off : len;
        word = __atomic_load_n(w, __ATOMIC_RELAXED);
        memcpy((unsigned char *)&word + off, p, n);
        __atomic_store_n(w++, word, __ATOMIC_RELAXED);
        p += n;
        len -= n;
    }
    for (; len >= 8; w++, p += 8, len -= 8) {
        memcpy(&word, p, 8);
        __atomic_store_n(w, word, __ATOMIC_RELAXED);
    }
    if (len) {
        word = __atomic_load_n(w, __ATOMIC_RELAXED);
        memcpy(&word, p, len);
        __atomic_store_n(w, word, __ATOMIC_RELAXED);
    }
}

void kvs_slot_write_claimed(const struct kvs_table *t, unsigned char *bucket,
                            uint64_t i, const struct kvs_key *k,
                            const void *value)
{
    unsigned char *slot = kvs_slot_at(t, bucket, i);
    uint64_t sum;

    slot_store(slot, KVSHM_SLOT_KV_OFFSET, k->bytes, t->key_size);
    slot_store(slot, kvshm_slot_value_offset(t->key_size), value,
               t->value_size);
    /* From the caller's value, not the slot's bytes: another writer that
     * took the slot over may be writing them now. */
    sum = kvshm_slot_checksum(value, t->value_size, k->seed);
    /* Release: a reader that loads this checksum sees the key and value
     * above, so a finished write always verifies. */
    __atomic_store_n((uint64_t *)(slot +
                                  kvshm_slot_checksum_offset(t->slot_size)),
                     sum, __ATOMIC_RELEASE);
}

enum absent_step kvs_slot_absent_step(const struct kvs_table *t,
                                      unsigned char *bucket, bool shared,
                                      bool owners, const struct kvs_key *k,
                                      uint64_t mine, uint64_t mine_was,
                                      void *present, uint64_t *wait_slot,
                                      uint64_t *wait_meta)
{
    enum absent_step step = ABSENT_WRITE;

    for (uint64_t i = 0; i < t->slots; i++) {
        /* our slot as it was before the claim: the pick may have taken
         * the key's own slot, written since the lookup */
        uint64_t meta = i == mine ? mine_was
                                  : kvshm_meta_load(bucket, i, shared);

        if (!kvshm_meta_live(meta) || kvshm_meta_tag(meta) != k->tag)
            continue;
        if (i == mine && (meta & KVSHM_SLOT_BUSY))
            continue;   /* a dead owner's claim, taken over: ours */
        if ((meta & KVSHM_SLOT_BUSY) &&
            !(owners && kvs_slot_owner_dead(meta))) {
            if (i < mine) {
                step = ABSENT_YIELD;
            } else if (step == ABSENT_WRITE) {
                step = ABSENT_WAIT;
                *wait_slot = i;
                *wait_meta = meta;
            }
            continue;
        }
        /* written, or a dead owner's claim: the key if it verifies */
        if (kvshm_slot_read(meta, kvs_slot_at(t, bucket, i),
                            t->slot_size, t->key_size, t->value_size,
                            shared, k->bytes, k->seed, present) ==
            KVSHM_SLOT_READ_VERIFIED)
            return ABSENT_PRESENT;
    }
    return step;
}

void kvs_slot_image(const struct kvs_table *t, const struct kvs_key *k,
                    const void *value, unsigned char *out)
{
    uint64_t sum = kvshm_slot_checksum(value, t->value_size, k->seed);
    uint64_t end = kvshm_slot_value_offset(t->key_size) + t->value_size;
    uint64_t at = kvshm_slot_checksum_offset(t->slot_size);

    memcpy(out + KVSHM_SLOT_KV_OFFSET, k->bytes, t->key_size);
    memcpy(out + kvshm_slot_value_offset(t->key_size), value,
           t->value_size);
    memset(out + end, 0, at - end);
    memcpy(out + at, &sum, sizeof(sum));
}

bool kvs_slot_invalidate(unsigned char *bucket, uint64_t i, uint64_t meta)
{
    if (meta & KVSHM_SLOT_BUSY)
        return false;
    /* Only the slot as the torn read saw it: every write stores a new
     * meta (its stamp) first, so a writer that rewrote the slot since
     * keeps its fresh write. */
    return __atomic_compare_exchange_n(kvs_meta_at(bucket, i), &meta,
                                       meta | KVSHM_SLOT_INVALID, false,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
