/*
 * forget.h - removing a key from its bucket (forget.c): the protocol
 * over a bucket I/O (bucket.h), which mpikvs_forget runs on the own
 * node's shared memory and through the transport, and a node's serving
 * thread runs for a forget shipped to it (transport_ucx_serve.c).
 */
#ifndef MPIKVS_FORGET_H
#define MPIKVS_FORGET_H

#include "bucket.h"

/* Remove every slot of a->k's bucket that holds the key: MPIKVS_OK if
 * one was removed, MPIKVS_MISS if none held it, or an error:
 * MPIKVS_ERR_STALLED after KVS_SLOT_STALL_MS of a live claim of the key's
 * tag (a->stall_slot and stall_meta name it, as a put's). */
int kvs_bucket_forget(struct kvs_access *a);

#endif /* MPIKVS_FORGET_H */
