/*
 * transport_ucx_serve.c - the leader's side of keys shipped whole to its
 * node over UCX (transport_ucx_ship.c is the sender's): its serving
 * worker applies each key with the bucket protocol (bucket.h) on the
 * node's shared memory, as the node's own ranks do, and answers once per
 * message.  Lock-free mode only.
 *
 * The keys run on the leader's table with a stats block of their own
 * (struct ucx_serving), in the helper or in the leader's own progress,
 * under server_lock; the rank's calls go on using the handle meanwhile,
 * of which the serving side reads only what open set and nothing changes
 * (the shape kvs_key_make reads, the node's number).  What it counts is
 * the node's business, not a rank's, and is dropped at close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "forget.h"
#include "key.h"
#include "route.h"
#include "slot.h"
#include "transport_ucx_state.h"
#include "transport_ucx_serve.h"
#include "transport_ucx_ship.h"
#include "transport_ucx_wait.h"

/* The table the shipped keys run on. */
struct ucx_serving {
    struct kvs_table        table;   /* the leader's, but ... */
    struct kvshm_rank_stats stats;   /* ... counted here */
};

static void answer_sent(void *req, ucs_status_t status, void *buf)
{
    (void)status;
    free(buf);
    ucp_request_free(req);
}

/* One shipped key of the node's, applied: its status, or the slot
 * choice of a put (enum slot_choice, SLOT_PRESENT included). */
static int32_t apply(struct ucx_serving *v, const struct kvs_key *k,
                     uint32_t kind, const unsigned char *value,
                     unsigned char *out)
{
    struct kvs_access a = {&v->table, &kvs_shared_io, k, NULL, 0, 0, false};
    int rc;

    switch (kind) {
    case KVS_SHIP_PUT:
        if ((rc = kvs_bucket_put(&a, value)) >= 0)
            kvs_count_put(&v->table, rc);
        return rc;
    case KVS_SHIP_PUT_ABSENT:
        return kvs_bucket_put_absent(&a, value, out);
    case KVS_SHIP_FORGET:
        return kvs_bucket_forget(&a);
    default:
        KVS_COUNT(&v->table, direct, 1);
        return kvs_bucket_get(&a, out);
    }
}

/* The serving worker's handler of shipped keys (in the helper, or in the
 * leader's own progress; under server_lock): apply them to the node's
 * region, as the node's ranks do, and answer on the sender's endpoint.
 * A message without the open's secret is dropped; one that is not what
 * the sender's library sends is answered with errors, never applied. */
static ucs_status_t serve_keys(void *arg, const void *header,
                               size_t header_length, void *data,
                               size_t length,
                               const ucp_am_recv_param_t *param)
{
    struct ucx_transport *s = arg;
    struct ucx_serving *v = s->serving;
    const mpikvs_t *kvs = s->kvs;
    const unsigned char *d = data;
    struct ship_head h;
    unsigned char *answer, *values;
    bool whole;

    if (header_length != sizeof(h) || !v ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK;   /* nobody to answer: the sender's wait fails */
    memcpy(&h, header, sizeof(h));
    if (!ucx_secret_ok(s, h.secret))
        return UCS_OK;
    if (h.count > ucx_ship_capacity(&v->table))
        h.count = 0;   /* answered with a length the sender refuses */
    if (h.kind > KVS_SHIP_FORGET)
        h.count = 0;   /* answered with a length the sender refuses */
    size_t stride = ucx_ship_stride(&v->table, h.kind);
    size_t len = ucx_ship_answer_len(&v->table, h.count, h.kind);
    if (!(answer = malloc(sizeof(h) + len)))
        return UCS_OK;
    memcpy(answer, &h, sizeof(h));
    values = answer + sizeof(h) + h.count * sizeof(int32_t);
    whole = length == h.count * stride;
    for (uint32_t i = 0; i < h.count; i++) {
        struct kvs_key k;
        int32_t st = MPIKVS_ERR_TRANSPORT;
        if (whole) {
            kvs_key_make(kvs, d + i * stride, &k);
            st = k.node != kvs->node   /* another table's key */
                     ? MPIKVS_ERR_MISMATCH
                     : apply(v, &k, h.kind,
                             d + i * stride + v->table.key_size,
                             values + i * v->table.value_size);
        }
        /* a value that is not an answer goes out zeroed: no old heap,
         * and no torn slot's bytes */
        if (ucx_ship_answers_value(h.kind) &&
            !ucx_ship_answer_has_value(h.kind, st))
            memset(values + i * v->table.value_size, 0,
                   v->table.value_size);
        memcpy(answer + sizeof(h) + i * sizeof(st), &st, sizeof(st));
    }
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .flags = UCP_AM_SEND_FLAG_EAGER,
        .cb.send = answer_sent,
        .user_data = answer};
    ucs_status_ptr_t req = ucp_am_send_nbx(param->reply_ep, UCX_AM_SHIP_ANSWER,
                                           answer, sizeof(h),
                                           answer + sizeof(h), len, &p);
    if (!UCS_PTR_IS_PTR(req))   /* done, or failed: no callback comes */
        free(answer);
    return UCS_OK;
}

int ucx_serving_open(mpikvs_t *kvs, struct ucx_transport *s)
{
    ucs_status_t st;

    if (!kvs_routes_may_ship(kvs))
        return MPIKVS_OK;
    if (!(s->serving = calloc(1, sizeof(*s->serving))))
        return kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
    s->serving->table = kvs->tab;
    s->serving->table.stats = &s->serving->stats;
    st = ucx_set_am_handler(s->server, UCX_AM_SHIP, serve_keys, s);
    if (st != UCS_OK)
        return ucx_fail(kvs, "setting the shipped keys' handler", st);
    return MPIKVS_OK;
}

void ucx_serving_close(struct ucx_transport *s)
{
    free(s->serving);
    s->serving = NULL;
}
