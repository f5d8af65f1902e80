/*
 * locks.h - the lock modes (locks.c): the fine-lock mode's lease and bucket
 * lock words, and the bracket of every locked operation.
 */
#ifndef MPIKVS_LOCKS_H
#define MPIKVS_LOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "mpikvs.h"

struct kvs_key;

/* The fine-lock mode's share of open (collective, after the node's data
 * region is attached): the node leaders take the table's lease, refusing
 * while another live open holds it, and every rank agrees on a new lock
 * epoch.  kvs_locks_close gives the lease back (once no rank of the open
 * can take a lock any more). */
int kvs_locks_open(mpikvs_t *kvs);
void kvs_locks_close(mpikvs_t *kvs);

/* Run op on k's bucket under the lock its route takes: none (lock-free),
 * the bucket's lock word (fine-lock), the node's whole region
 * (coarse-lock); exclusive for a write.  The result: op's error, else the
 * unlock's error, else op's result. */
typedef int (*kvs_locked_op)(mpikvs_t *kvs, const struct kvs_key *k,
                             const void *in, void *out);
int kvs_locked(mpikvs_t *kvs, const struct kvs_key *k, bool exclusive,
               kvs_locked_op op, const void *in, void *out);

/* The fine-lock mode's lock word of a bucket (locks.c); its displacement
 * in the node's region. */
int kvs_bucket_lock(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                    bool exclusive);
int kvs_bucket_unlock(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                      bool exclusive);

#endif /* MPIKVS_LOCKS_H */
