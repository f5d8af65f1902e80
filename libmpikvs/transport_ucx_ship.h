/*
 * transport_ucx_ship.h - keys shipped whole to their node over UCX: the
 * messages' format, which the sender (transport_ucx_ship.c) and the
 * node's serving side (transport_ucx_serve.c) share, and the sender's
 * calls: the transport's ships, ship and the shipped part of its flush;
 * at open, every rank's means to ship (ucx_shipping_open), and once the
 * endpoints work, which nodes are shipped to (ucx_shipping_choose);
 * ucx_shipping_close frees what they made.
 */
#ifndef MPIKVS_TRANSPORT_UCX_SHIP_H
#define MPIKVS_TRANSPORT_UCX_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "slot.h"   /* SLOT_PRESENT */
#include "transport_ucx_state.h"

/* The header of a shipment of keys and of its answer. */
struct ship_head {
    uint64_t secret[KVS_UCX_SECRET_WORDS];   /* the open's */
    uint64_t token;   /* the sender's, echoed: which of its messages */
    uint32_t count;   /* keys */
    uint32_t kind;    /* enum kvs_ship_kind: keys for a get, answered
                       * with statuses, then a value each; (key, value)
                       * pairs for a put, answered with slot choices; for
                       * a put-if-absent, answered with both; keys for a
                       * forget, answered with statuses */
};

/* Whether a shipment of kind carries a value per key (the puts), and
 * its answer one (a get, a put-if-absent): a forget has neither. */
static inline bool ucx_ship_sends_value(uint32_t kind)
{
    return kind == KVS_SHIP_PUT || kind == KVS_SHIP_PUT_ABSENT;
}

static inline bool ucx_ship_answers_value(uint32_t kind)
{
    return kind == KVS_SHIP_GET || kind == KVS_SHIP_PUT_ABSENT;
}

/* A key's bytes in a shipment: the key, and for a put its value. */
static inline size_t ucx_ship_stride(const struct kvs_table *t,
                                     uint32_t kind)
{
    return t->key_size + (ucx_ship_sends_value(kind) ? t->value_size : 0);
}

/* The answer: an int32_t status per key, then, for a get and a
 * put-if-absent, a value each. */
static inline size_t ucx_ship_answer_len(const struct kvs_table *t,
                                         uint32_t count, uint32_t kind)
{
    return count * (sizeof(int32_t) +
                    (ucx_ship_answers_value(kind) ? t->value_size : 0));
}

/* Keys a shipment holds at most: a chunk's, or fewer where values are
 * large, so that a message (and the buffers of both sides for it) stays
 * within UCX_SHIP_BYTES whatever the value size; at least one. */
#define UCX_SHIP_BYTES (UINT64_C(4) << 20)
static inline uint32_t ucx_ship_capacity(const struct kvs_table *t)
{
    size_t one = sizeof(int32_t) + t->key_size + t->value_size;
    size_t n = UCX_SHIP_BYTES / one;

    return n < 1 ? 1 : n > BATCH_CHUNK ? BATCH_CHUNK : (uint32_t)n;
}

/* Whether a key's answer of status st carries a value: a get's hit, a
 * put-if-absent's present value.  Any other value in an answer goes
 * out zeroed and is never read. */
static inline bool ucx_ship_answer_has_value(uint32_t kind, int32_t st)
{
    return (kind == KVS_SHIP_GET && st == MPIKVS_OK) ||
           (kind == KVS_SHIP_PUT_ABSENT && st == SLOT_PRESENT);
}

bool ucx_ships(const mpikvs_t *kvs, uint32_t node);
int ucx_ship(mpikvs_t *kvs, const struct kvs_key *k, enum kvs_ship_kind kind,
             const void *in, void *out, int *status);
int ucx_ship_flush(mpikvs_t *kvs);
int ucx_ship_post(mpikvs_t *kvs);
bool ucx_ship_answered(const mpikvs_t *kvs);
int ucx_shipping_open(mpikvs_t *kvs, struct ucx_transport *s);
void ucx_shipping_choose(mpikvs_t *kvs, struct ucx_transport *s);
void ucx_shipping_close(struct ucx_transport *s);

#endif /* MPIKVS_TRANSPORT_UCX_SHIP_H */
