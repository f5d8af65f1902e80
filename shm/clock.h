/*
 * clock.h - the one clock of deadlines and timeouts: CLOCK_MONOTONIC, so
 * that a change of the wall clock neither ends a wait early nor makes it
 * last.  Used by the library, rmacache and the tools alike.
 */
#ifndef MPIKVS_SHM_CLOCK_H
#define MPIKVS_SHM_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t kvshm_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif /* MPIKVS_SHM_CLOCK_H */
