/*
 * bounded_comm.h - collectives that give up: the steps of an mpikvs_save
 * over its own duplicate of the handle's communicator, each wait for the
 * other ranks bounded by MPIKVS_TIMEOUT (kvs->timeout).
 *
 * A rank that does not come (stopped, killed, stuck) makes the others
 * return MPIKVS_ERR_STALLED instead of waiting in a collective forever;
 * the handle's own communicator never sees a collective given up on, so
 * its later calls still match.  A collective cannot be cancelled in MPI:
 * one given up on stays posted, and may still complete when the missing
 * rank comes, into buffers of the bounded communicator's own, which are
 * never freed for that reason (a few bytes per given-up save).  After a
 * give-up every later step fails at once, without posting anything.
 */
#ifndef MPIKVS_BOUNDED_COMM_H
#define MPIKVS_BOUNDED_COMM_H

#include <stdint.h>

#include "handle.h"

struct kvs_bcomm;

/* Duplicate kvs->comm (MPI_Comm_idup), bounded; call names the caller in
 * errors.  On failure *out is NULL and kvs->err says why. */
int kvs_bcomm_open(mpikvs_t *kvs, const char *call, struct kvs_bcomm **out);

/* Every rank's rc becomes the worst of them (the most negative), with
 * the text of the lowest rank that has it in kvs->err. */
int kvs_bcomm_agree(struct kvs_bcomm *b, int rc);

/* len bytes at buf (at most KVS_BCOMM_MAX_BCAST) from rank root. */
#define KVS_BCOMM_MAX_BCAST 4096
int kvs_bcomm_bcast(struct kvs_bcomm *b, void *buf, int len, int root);

/* Each rank's two words into all[2 * size]. */
int kvs_bcomm_allgather2(struct kvs_bcomm *b, const uint64_t mine[2],
                         uint64_t *all);

/* The sum of every rank's mine. */
int kvs_bcomm_sum(struct kvs_bcomm *b, uint64_t mine, uint64_t *sum);

/* Free the duplicate, or keep it and its buffers where a step was given
 * up on (see above); *b becomes NULL. */
void kvs_bcomm_close(struct kvs_bcomm **b);

#endif
