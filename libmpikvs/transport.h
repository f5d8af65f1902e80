/*
 * transport.h - how a rank reaches the data region of another node.
 *
 * Every operation names a node and a displacement from the start of that
 * node's data region (a bucket, a slot, a lock word).  It is issued
 * without waiting; its effect at the target, and the bytes or the word it
 * returns, are there once flush() of that node (or of every node) has
 * returned.  Two writes to one place between two flushes land in no
 * defined order.
 *
 * Keys of the own node in the lock-free mode never come here: they are
 * loads and stores of shared memory.  The fine-lock mode takes every
 * bucket, the own node's too, through the transport, so that its lock
 * words see one kind of atomics only.
 *
 * Atomicity: cas64 and fetch_add64 are atomic with each other.  Whether
 * they are also atomic with the CPU atomics of the ranks on the target
 * node is cpu_atomic.  Where it is false, a remote rank must not change a
 * word that the home node's ranks change with CPU atomics (a slot's meta
 * in the lock-free mode): a lock-free reader from another node leaves a
 * slot that does not verify as it is.
 */
#ifndef MPIKVS_TRANSPORT_H
#define MPIKVS_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handle.h"
#include "key.h"

#define KVS_ALL_NODES UINT32_MAX   /* flush(): every node */

/* What a key is shipped for (ship, below). */
enum kvs_ship_kind {
    KVS_SHIP_GET,
    KVS_SHIP_PUT,
    KVS_SHIP_PUT_ABSENT,
    KVS_SHIP_FORGET     /* mpikvs_forget: the key only, a status back */
};

struct kvs_transport {
    bool cpu_atomic;   /* see above */

    int (*read)(mpikvs_t *kvs, uint32_t node, uint64_t disp, void *buf,
                size_t len);
    int (*write)(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                 const void *buf, size_t len);
    /* *seen: the word before, after the flush; swapped if it was expect */
    int (*cas64)(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                 uint64_t expect, uint64_t desired, uint64_t *seen);
    /* *before: the word before the add (add 0: an atomic read) */
    int (*fetch_add64)(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                       int64_t add, uint64_t *before);
    int (*flush)(mpikvs_t *kvs, uint32_t node);
    /* Whether node's region is mapped into this process, so that a read
     * is a copy with no round trip to pay (NULL: none is); the read path
     * of its buckets follows (route.c). */
    bool (*mapped)(const mpikvs_t *kvs, uint32_t node);

    /* Keys shipped whole to their home node, which applies them itself
     * (NULL where the transport has none).  The node's serving process
     * runs the lock-free get or put on its region, as its own ranks do,
     * and answers once for all the keys a flush sends it: one message
     * each way, where reading the bucket and writing a slot are one or
     * two round trips per key.  ships(): whether node's keys go this way
     * (asked in the lock-free mode only).  ship(): queue k's operation:
     * a get (out receives the value), a put (in is copied at once) or a
     * put-if-absent (both: out, if not NULL, receives a present value)
     * or a forget (neither); *status, after the flush: MPIKVS_OK or
     * MPIKVS_MISS for a get and a forget, the slot choice (enum
     * slot_choice, SLOT_PRESENT included) for the puts, or an error. */
    bool (*ships)(const mpikvs_t *kvs, uint32_t node);
    int (*ship)(mpikvs_t *kvs, const struct kvs_key *k,
                enum kvs_ship_kind kind, const void *in, void *out,
                int *status);

    /* For batches in flight while the caller works (async.c); NULL where
     * the transport cannot: the flush then does all of it.  post(): send
     * what ship() queued, not waiting for the answers, so that the home
     * nodes work on it meanwhile.  poll(): progress without waiting;
     * true once everything issued since the last flush is complete, so
     * that the flush will not wait. */
    int (*post)(mpikvs_t *kvs);
    bool (*poll)(mpikvs_t *kvs);

    /* The coarse-lock mode's lock of a whole node's region, held across
     * the operations of one get or put (and their flushes).  NULL in a
     * transport that does not offer it: the mode then is refused. */
    int (*lock_node)(mpikvs_t *kvs, uint32_t node, bool exclusive);
    int (*unlock_node)(mpikvs_t *kvs, uint32_t node);

    /* Let go of what this rank uses to reach the others, before the
     * close's barriers (NULL: nothing to do): a transport whose closing
     * needs the peers does it while they all still serve. */
    void (*release)(mpikvs_t *kvs);

    /* Let go of what open made.  together: every rank came to close (the
     * collective frees may run).  Returns true while the region is still
     * exposed to the other ranks (it then must stay mapped). */
    bool (*close)(mpikvs_t *kvs, bool together);
};

/* Pick the transport kvs->transport asks for (AUTO: the best one this
 * job can use) and open it; collective over kvs->comm, after the node's
 * region is attached.  kvs->tp is set on success. */
int kvs_transport_open(mpikvs_t *kvs);

#endif /* MPIKVS_TRANSPORT_H */
