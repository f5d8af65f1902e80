/*
 * spin.h - waiting for another process that holds something briefly:
 * the tier's writer in mid-publication (shm/tier.c), the holder of a
 * fine-lock bucket lock (libmpikvs/locks.c), a writer halfway through a
 * slot (libmpikvs/slot.c).  One place for how a waiter spins, when it
 * gives the CPU away and when it gives up.
 */
#ifndef MPIKVS_SHM_SPIN_H
#define MPIKVS_SHM_SPIN_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"

/* Tell the CPU this is a spin-wait (it slows the loop and frees the
 * core's resources for its sibling thread). */
static inline void kvshm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* How often (in rounds) a waiter that yields looks at the clock. */
#define KVSHM_SPIN_CLOCK_EVERY 64u

/*
 * Round `round` of a bounded wait: below spin_rounds, spin (the holder
 * is on another core and nearly done); from there on, give the CPU away
 * (on an oversubscribed node the holder may need it), and every
 * KVSHM_SPIN_CLOCK_EVERY-th round look at the clock: the first look
 * sets *deadline (0 before it) to timeout_ms from then, a look at or
 * past it gives up.  Returns false when the wait has to give up, true
 * to try again.
 */
static inline bool kvshm_spin_wait(unsigned round, unsigned spin_rounds,
                                   unsigned timeout_ms, uint64_t *deadline)
{
    if (round < spin_rounds) {
        kvshm_cpu_relax();
        return true;
    }
    sched_yield();
    if (round % KVSHM_SPIN_CLOCK_EVERY == 0) {
        uint64_t now = kvshm_now_ms();
        if (*deadline == 0)
            *deadline = now + timeout_ms;
        else if (now >= *deadline)
            return false;
    }
    return true;
}

#endif /* MPIKVS_SHM_SPIN_H */
