/*
 * slot.h - the slots of a bucket: finding a key, verifying, choosing and
 * claiming where a put goes.  The same code reads a bucket in shared
 * memory (own node) and a bucket copied by the transport.
 */
#ifndef MPIKVS_SLOT_H
#define MPIKVS_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "key.h"

enum slot_found {
    SLOT_HIT,        /* the key, verified; value copied out */
    SLOT_MISS,       /* not in the bucket */
    SLOT_TORN        /* the key is there but its slot does not verify */
};

/* What a put does to the slot it picked. */
enum slot_choice {
    SLOT_UPDATE,     /* the key's own slot */
    SLOT_FREE,       /* empty or invalid */
    SLOT_EVICT,      /* another key's, written longest ago */
    SLOT_PRESENT     /* none: the key was there (put-if-absent) */
};

static inline unsigned char *kvs_slot_at(const struct kvs_table *t,
                                         unsigned char *bucket, uint64_t i)
{
    return bucket + kvshm_bucket_slot_offset(t->slots, t->slot_size, i);
}

static inline uint64_t *kvs_meta_at(unsigned char *bucket, uint64_t i)
{
    return (uint64_t *)(bucket + kvshm_bucket_meta_offset(i));
}

/* Ask for the lines a lookup of k needs, together: the bucket's header
 * and k's preferred slot, where k is unless the bucket was full when it
 * was written.  So a hit costs one miss's time, not two in a row.  The
 * slot's lines are asked for one by one, up to its fourth, and this is
 * always inlined: GCC counts a prefetch as no effect at all, so it
 * deletes a loop of them, and a call of a function that only prefetches
 * (a longer slot's further lines come as the copy reaches them). */
static inline __attribute__((always_inline)) unsigned char *
kvs_bucket_prefetch(const struct kvs_table *t, const struct kvs_key *k)
{
    unsigned char *b = t->buckets + k->bucket * t->bucket_size;
    const unsigned char *slot = kvs_slot_at(t, b, k->preferred);
    const unsigned char *last = slot + t->slot_size - 1;

    __builtin_prefetch(b);
    __builtin_prefetch(slot);
    if (t->slot_size > KVSHM_CACHELINE)
        __builtin_prefetch(slot + KVSHM_CACHELINE);
    if (t->slot_size > 2 * KVSHM_CACHELINE)
        __builtin_prefetch(slot + 2 * KVSHM_CACHELINE);
    __builtin_prefetch(last);
    return b;
}

/* Look k up in a bucket.  From shared memory (shared == true) every slot
 * read is ordered against its writer (acquire on meta and checksum);
 * from a private copy it is plain.  Only slots whose tag is k's are read
 * past the header.  On SLOT_TORN, *torn_slot is the index of the slot
 * that did not verify and *torn_meta the meta word that read saw, the
 * one to invalidate against. */
enum slot_found kvs_slot_find(const struct kvs_table *t, unsigned char *bucket,
                              bool shared, const struct kvs_key *k,
                              void *value, uint64_t *torn_slot,
                              uint64_t *torn_meta);

/* Between two reads of a slot that did not verify (attempt 0, 1, ...):
 * give a writer that is halfway through it time to finish.  Bounded:
 * a spin, then the CPU handed over, then a sleep of 100 us. */
void kvs_slot_backoff(int attempt);

/* After read attempt (0, 1, ...) of a slot that did not verify: false
 * once MPIKVS_CHECKSUM_RETRIES reads were made (give up on it), else
 * true, after the backoff that lets its writer finish (wait: none under
 * a lock, where no writer is halfway).  Every reader's retries are
 * these. */
static inline bool kvs_slot_retry(int attempt, bool wait)
{
    if (attempt + 1 >= MPIKVS_CHECKSUM_RETRIES)
        return false;
    if (wait)
        kvs_slot_backoff(attempt);
    return true;
}

/* Where a put goes: the slot, its meta word as seen, and the meta word
 * the put writes (OCCUPIED, the key's tag, the bucket's next stamp).
 * When the pick has to wait, slot and seen are the BUSY slot it waits
 * for. */
struct slot_pick {
    uint64_t         slot;
    uint64_t         seen;
    uint64_t         meta;
    enum slot_choice choice;
};

/*
 * Claims.  A writer claims a slot with a compare-and-swap of its meta
 * word to the claim word: BUSY, the key's tag, and in the stamp's place
 * the claim's owner, the pid of the process that writes the slot in
 * shared memory (the own node's ranks and its leader's serving thread),
 * or 0 for a claim made through the transport from another node, whose
 * process the home node cannot see.  Releasing the claim writes the
 * meta word with the stamp.  A claim is never taken over because it is
 * old: its writer may be stopped, descheduled or waiting for a page, and
 * would write after the taker.  Only the claim of an owner known dead
 * (kill(pid, 0) says ESRCH: same node, same pid namespace) is taken
 * over (an exited process not reaped yet, a zombie, counts as dead);
 * every other one is waited for, up to KVS_SLOT_STALL_MS, and then
 * the put gives up with MPIKVS_ERR_STALLED.
 */
static inline uint64_t kvs_slot_claim(uint64_t meta, uint32_t owner)
{
    return (meta & ~(~UINT64_C(0) << KVSHM_SLOT_STAMP_SHIFT)) |
           (uint64_t)owner << KVSHM_SLOT_STAMP_SHIFT | KVSHM_SLOT_BUSY;
}

/* The owner a claim of this process carries: its pid in shared memory,
 * 0 through the transport. */
static inline uint32_t kvs_slot_owner(const struct kvs_table *t, bool shared)
{
    return shared ? t->pid : 0u;
}

/* Whether the claim in meta (BUSY) is an owner's that is known dead. */
bool kvs_slot_owner_dead(uint64_t meta);

/* Which BUSY slots in a put's way a pick may take over. */
enum slot_takeover {
    TAKEOVER_NONE,   /* none: wait for every one */
    TAKEOVER_DEAD,   /* those of an owner known dead (a bucket in shared
                      * memory only: a pid of this node) */
    TAKEOVER_ANY     /* any: the writes that claim nothing (the lock
                      * modes, and the mpi transport's lock-free remote
                      * puts, which may lose a key anyway: mpikvs(7)) */
};

/* Pick the slot a put of k goes to, in a bucket (shared or a copy):
 * k's own, else a free one (k's preferred slot if it is free), else the
 * one written longest ago.  A slot written before the table's latest
 * clear (key_hash.h, generations) is always older than every slot
 * written since, so it goes first; where the pick would evict and keys
 * says the slots' keys are in bucket (not a copy of only the slots of
 * k's tag, bucket_far.c), it asks the oldest slot's key whether it is of
 * an earlier generation, and takes such a slot (k's preferred one first,
 * if it is one too) as free: the table is empty there, nothing is
 * evicted.  false: a slot of k's tag is BUSY (a put, likely of k, is
 * writing it), or every slot is, and takeover does not allow taking it:
 * wait and pick again, or there would be two slots of k. */
bool kvs_slot_pick(const struct kvs_table *t, unsigned char *bucket,
                   bool shared, bool keys, const struct kvs_key *k,
                   enum slot_takeover takeover, struct slot_pick *p);

/* How long a put waits for a live claim in its way before it gives up
 * with MPIKVS_ERR_STALLED; a write of a slot takes microseconds, a
 * stopped or descheduled writer may hold one for many milliseconds. */
#define KVS_SLOT_STALL_MS 5000u
/* Waits that spin (the writer is on another core and nearly done)
 * before the waiter naps and looks whether the claim's owner is dead. */
#define KVS_SLOT_SPIN_WAITS 8u

/* A put's wait for claims in its way, from zero. */
struct kvs_busy {
    unsigned waits;
    uint64_t deadline;   /* ms, set by the first nap */
};

/* One wait: a spin (and the CPU handed over), after KVS_SLOT_SPIN_WAITS
 * a nap of 100 us.  false once the wait has lasted KVS_SLOT_STALL_MS:
 * give up. */
bool kvs_slot_busy_wait(struct kvs_busy *w);

/* The takeover a wait allows: none while it spins, and in shared memory
 * then the claims of owners known dead (under a lock: any). */
static inline enum slot_takeover kvs_slot_takeover(const struct kvs_busy *w,
                                                   bool shared, bool locked)
{
    if (locked)
        return TAKEOVER_ANY;
    return shared && w->waits >= KVS_SLOT_SPIN_WAITS ? TAKEOVER_DEAD
                                                      : TAKEOVER_NONE;
}

/* Key, value and checksum written in place into slot i of a bucket in
 * shared memory, whose claim the caller holds, as readers read them. */
void kvs_slot_write_claimed(const struct kvs_table *t, unsigned char *bucket,
                            uint64_t i, const struct kvs_key *k,
                            const void *value);

/* What a put-if-absent that holds the claim of slot mine does next, from
 * a look at its bucket after the claim (absent.c says why this decides):
 * the key verified in a slot (mine_was is the meta word mine had before
 * the claim; present, if not NULL, gets the value), a live claim of the
 * key's tag before mine (give the claim back, wait, start again), one
 * after it (wait, look again; *wait_slot and *wait_meta say which), or
 * none (write).  With owners true (a bucket in shared memory, after the
 * spins), a claim of an owner known dead is no claim: its slot counts
 * only if it verifies. */
enum absent_step {
    ABSENT_WRITE,
    ABSENT_WAIT,
    ABSENT_YIELD,
    ABSENT_PRESENT
};
enum absent_step kvs_slot_absent_step(const struct kvs_table *t,
                                      unsigned char *bucket, bool shared,
                                      bool owners, const struct kvs_key *k,
                                      uint64_t mine, uint64_t mine_was,
                                      void *present, uint64_t *wait_slot,
                                      uint64_t *wait_meta);

/* The slot's bytes for a write through the transport: key, value,
 * padding, checksum (slot_size bytes, into out). */
void kvs_slot_image(const struct kvs_table *t, const struct kvs_key *k,
                    const void *value, unsigned char *out);

/* Mark slot i of a bucket in shared memory invalid if its meta is still
 * meta, the word its torn read saw; true if it did.  A BUSY slot is a
 * write in flight, not damage: left alone. */
bool kvs_slot_invalidate(unsigned char *bucket, uint64_t i, uint64_t meta);

#ifdef KVS_TEST_HOOKS
/* Tests only: tests/mpi/test_fault builds its own copy of the library's
 * sources with KVS_TEST_HOOKS; libmpikvs has no hook.  Called when a
 * reader has retried a slot of (bucket, slot) that does not verify, just
 * before it acts on it, so that a test can rewrite the slot at the worst
 * moment. */
extern void (*kvs_test_torn_hook)(struct mpikvs *kvs, uint64_t bucket,
                                  uint64_t slot);
#define KVS_TORN_HOOK(kvs, bucket, slot)                                \
    do {                                                                \
        if (kvs_test_torn_hook && (kvs))                                \
            kvs_test_torn_hook((kvs), (bucket), (slot));                \
    } while (0)
#else
#define KVS_TORN_HOOK(kvs, bucket, slot) ((void)0)
#endif

#endif /* MPIKVS_SLOT_H */
