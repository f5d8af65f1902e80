/*
 * bounded_comm.h - the steps of an mpikvs_save that need the other ranks,
 * each wait bounded by MPIKVS_TIMEOUT (kvs->timeout).
 *
 * A rank that does not come (stopped, killed, stuck) makes the others
 * return MPIKVS_ERR_STALLED instead of waiting forever.  The steps are
 * point-to-point messages through rank 0 on the handle's communicator,
 * tagged with the save's number, not collectives: a collective given up
 * on cannot be cancelled and would be matched by the next one (MPI
 * matches collectives by order), while a message of a save given up on
 * carries that save's tag, so no later save ever receives it.  The
 * receives of a step given up on are cancelled; its sends, and every
 * buffer a late message may still use, are kept, never freed (a few
 * bytes per rank per given-up save).  After a give-up every later step
 * of the save fails at once.
 */
#ifndef MPIKVS_BOUNDED_COMM_H
#define MPIKVS_BOUNDED_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "handle.h"

struct kvs_bcomm;

/* The bounded steps of one save (call names it in errors).  Every rank
 * calls it once per save, so the saves' numbers (their tags) agree. */
int kvs_bcomm_open(mpikvs_t *kvs, const char *call, struct kvs_bcomm **out);

/* Every rank's rc becomes the worst of them (the most negative), with
 * the text of the lowest rank that has it in kvs->err: kvs_agreed's rule
 * (errors.c), over the bounded steps. */
int kvs_bcomm_agree(struct kvs_bcomm *b, int rc);

/* len bytes at buf (at most KVS_BCOMM_MAX_BCAST) from rank 0. */
#define KVS_BCOMM_MAX_BCAST 4096
int kvs_bcomm_bcast(struct kvs_bcomm *b, void *buf, int len);

/* Each rank's count: *before gets the sum of the lower ranks' counts,
 * *total all of them, *any whether a rank's more is true. */
int kvs_bcomm_offsets(struct kvs_bcomm *b, uint64_t count, bool more,
                      uint64_t *before, uint64_t *total, bool *any);

/* The sum of every rank's mine. */
int kvs_bcomm_sum(struct kvs_bcomm *b, uint64_t mine, uint64_t *sum);

/* Free the steps' buffers, or keep them where a step was given up on
 * (see above); *b becomes NULL. */
void kvs_bcomm_close(struct kvs_bcomm **b);

#endif
