/*
 * clock.h - the one clock of deadlines and timeouts: CLOCK_MONOTONIC, so
 * that a change of the wall clock neither ends a wait early nor makes it
 * last.  Used by the library, rmacache and the tools alike.
 */
#ifndef MPIKVS_SHM_CLOCK_H
#define MPIKVS_SHM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t kvshm_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * A deadline for a wait on other processes that counts only the time
 * this process was looking: a look at the clock more than
 * KVSHM_ABSENT_MS after the one before (this process was stopped, or
 * not scheduled for that long) moves the deadline on by the gap.  A
 * peer is not late for an answer this process could not see: a rank
 * resumed after a SIGSTOP first takes what arrived while it was
 * stopped, rather than giving up on a step the others finished long
 * ago (and so falling a step behind them).
 */
#define KVSHM_ABSENT_MS 1000u

struct kvshm_deadline {
    uint64_t last;   /* the last look */
    uint64_t at;
};

static inline void kvshm_deadline_start(struct kvshm_deadline *d,
                                        uint64_t timeout_ms)
{
    d->last = kvshm_now_ms();
    d->at = d->last + timeout_ms;
}

/* Whether the deadline has passed (a look: call it in the wait's loop). */
static inline bool kvshm_deadline_passed(struct kvshm_deadline *d)
{
    uint64_t now = kvshm_now_ms();

    if (now - d->last > KVSHM_ABSENT_MS)
        d->at += now - d->last;
    d->last = now;
    return now >= d->at;
}

#endif /* MPIKVS_SHM_CLOCK_H */
