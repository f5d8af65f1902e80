/*
 * async.h - batches in flight, started and not yet waited for (async.c).
 */
#ifndef MPIKVS_ASYNC_H
#define MPIKVS_ASYNC_H

#include "mpikvs.h"

/* Complete every batch in flight (mpikvs_fence, mpikvs_tier_invalidate,
 * mpikvs_save); at close, also let go of them all, returning how many
 * were never waited for. */
void kvs_async_complete(mpikvs_t *kvs);
unsigned kvs_async_close(mpikvs_t *kvs);

/* Batches in flight: started and not yet waited for (mpikvs_clear
 * refuses to run with any). */
unsigned kvs_async_live(const mpikvs_t *kvs);

#endif /* MPIKVS_ASYNC_H */
