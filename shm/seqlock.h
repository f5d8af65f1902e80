/*
 * seqlock.h - the sequence lock of shared memory with one writer and
 * readers that never write: the read-only tier's control block
 * (shm/tier.c), an rmacache window's name (shm/rma_region.c) and each
 * slot of its node tier (rmacache/node.c).
 *
 * A sequence word is even while what it guards is stable and odd while
 * the writer changes it.  The writer's side, for every change a reader
 * could follow:
 *
 *     seq = s + 1 (relaxed); release fence; ...stores...; seq = s + 2 (release)
 *
 * and a reader's side:
 *
 *     s1 = seq (acquire); ...loads...; acquire fence; s2 = seq (relaxed)
 *
 * If a reader's loads saw any store of a change, the fences make that
 * change's odd seq visible to its second load, so s1 != s2 and it
 * retries (or gives up).  An s1 that is odd means a change under way:
 * the reader waits or gives up without trusting what it loaded.
 *
 * The guarded fields are loaded and stored as relaxed atomics, or, for
 * bulk bytes (the tier's keys and values, the node tier's ring), with
 * plain memcmp/memcpy: the usual seqlock compromise, since what such a
 * racy read returns is thrown away unless the sequence proves it stable.
 * A reader never follows what it read before the sequence vouched for it
 * without checking it against the bounds it can trust (the tier checks
 * every offset; the node tier never copies past its ring).
 *
 * The sequence cannot vouch for a writer that died in mid-change: it
 * leaves seq odd.  Readers then see the change as under way forever;
 * who writes next must repair before it publishes (the tier's repair:
 * it keeps seq odd until the guarded state is consistent again).
 *
 * One writer per sequence word: a second concurrent writer would undo
 * the parity.  The functions come for 64- and 32-bit words (kvshm_seq_*
 * and kvshm_seq32_*), since the rmacache slots are 32-bit.
 */
#ifndef MPIKVS_SHM_SEQLOCK_H
#define MPIKVS_SHM_SEQLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define KVSHM_SEQLOCK_FUNCTIONS(prefix, type)                               \
    /* The writer starts a change: seq odd, ordered before every store   \
     * of the change.  Returns the (even) seq it started from, or the    \
     * odd one a dead writer left (the change goes on from it). */        \
    static inline type prefix##_write_begin(type *seq)                    \
    {                                                                     \
        type s = __atomic_load_n(seq, __ATOMIC_RELAXED);                  \
                                                                          \
        if (!(s & 1))                                                     \
            __atomic_store_n(seq, (type)(s + 1), __ATOMIC_RELAXED);       \
        /* a reader that sees any store of the change sees the odd seq  \
         * on its second load */                                          \
        __atomic_thread_fence(__ATOMIC_RELEASE);                          \
        return s;                                                         \
    }                                                                     \
                                                                          \
    /* The writer ends its change: the next even seq, released, so a     \
     * reader that loads it sees everything the change stored. */         \
    static inline void prefix##_write_end(type *seq)                      \
    {                                                                     \
        type s = __atomic_load_n(seq, __ATOMIC_RELAXED);                  \
                                                                          \
        __atomic_store_n(seq, (type)((s | 1) + 1), __ATOMIC_RELEASE);     \
    }                                                                     \
                                                                          \
    /* A reader's first load: odd means a change under way. */            \
    static inline type prefix##_read_begin(const type *seq)               \
    {                                                                     \
        return __atomic_load_n(seq, __ATOMIC_ACQUIRE);                    \
    }                                                                     \
                                                                          \
    /* After its loads: whether they saw one stable state, the one of    \
     * s1 (from _read_begin). */                                          \
    static inline bool prefix##_read_stable(const type *seq, type s1)     \
    {                                                                     \
        /* orders the loads before the check: if any saw a change's     \
         * store, the second load sees that change's seq */               \
        __atomic_thread_fence(__ATOMIC_ACQUIRE);                          \
        return !(s1 & 1) && __atomic_load_n(seq, __ATOMIC_RELAXED) == s1; \
    }

KVSHM_SEQLOCK_FUNCTIONS(kvshm_seq, uint64_t)
KVSHM_SEQLOCK_FUNCTIONS(kvshm_seq32, uint32_t)

#undef KVSHM_SEQLOCK_FUNCTIONS

#endif /* MPIKVS_SHM_SEQLOCK_H */
