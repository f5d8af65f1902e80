/*
 * transport_ucx_ship.c - keys shipped whole to their node over UCX.
 *
 * Without RMA (the context's default, transport_ucx.c), each read or
 * write is a message that the node's helper must be woken for: a put
 * would be two round trips (its bucket, then its slot), a batch one
 * message per bucket.  A shipped key is applied by the node's serving
 * worker itself, with the lock-free path its own ranks use: a flush sends
 * each node one active message with every key queued for it, and the
 * node answers once on the sender's endpoint, with a status (and a value)
 * per get or the slot choice per put.  Lock-free mode only: the lock
 * modes' lock words are the transport's.
 *
 * This file is the sender's side; the node's is transport_ucx_serve.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "route.h"
#include "slot.h"
#include "transport_ucx_state.h"
#include "transport_ucx_ship.h"
#include "transport_ucx_wait.h"

/* A message of queued keys, to one node. */
struct shipment {
    uint32_t         node;
    uint32_t         first, count;  /* its entries: order[first..] */
    struct ship_head head;
    ucs_status_ptr_t req;           /* the send, until complete */
    bool             answered;
    bool             garbled;       /* the answer was not one of ours */
    int              refused;       /* a key's error in it, else 0 */
    int              error;         /* the send's, else MPIKVS_OK */
};

/* A queued key: where its answer goes. */
struct ship_entry {
    uint32_t node;
    void    *value;   /* a get's value, a present one, or NULL */
    int     *status;
};

/* A rank's keys queued until the flush, and the messages in flight. */
struct ucx_shipping {
    struct ship_entry queue[BATCH_CHUNK];
    size_t            nqueued;
    enum kvs_ship_kind queued;   /* the kind queued */
    unsigned char    *payload;   /* entry e's key (and value) */
    unsigned char    *outbox;    /* the messages, by node */
    struct shipment   msgs[BATCH_CHUNK];
    size_t            nmsgs;
    bool              sent;      /* the queue went out (ucx_ship_post):
                                  * nothing joins it until its flush */
    uint32_t          order[BATCH_CHUNK];   /* entries by message */
    uint32_t          round;     /* of flushes: an answer to another is
                                  * ignored */
};

bool ucx_ships(const mpikvs_t *kvs, uint32_t node)
{
    const struct ucx_transport *s = ucx_state(kvs);

    return s->nodes && s->nodes[node].ships;
}

int ucx_ship(mpikvs_t *kvs, const struct kvs_key *k, enum kvs_ship_kind kind,
             const void *in, void *out, int *status)
{
    struct ucx_transport *s = ucx_state(kvs);
    struct ucx_shipping *q = s->ship;
    size_t stride = ucx_ship_stride(&kvs->tab, KVS_SHIP_PUT);
    int rc;

    if (s->nodes[k->node].lost != UCS_OK)
        return ucx_node_lost(kvs, k->node);
    /* one kind per flush, and at most a chunk: send what is queued */
    if (q->nqueued &&
        (q->nqueued == ucx_ship_capacity(&kvs->tab) || q->queued != kind ||
         q->sent) &&
        (rc = ucx_ship_flush(kvs)) != MPIKVS_OK)
        return rc;
    q->queue[q->nqueued] = (struct ship_entry){k->node, out, status};
    memcpy(q->payload + q->nqueued * stride, k->bytes, kvs->tab.key_size);
    if (ucx_ship_sends_value(kind))
        memcpy(q->payload + q->nqueued * stride + kvs->tab.key_size, in,
               kvs->tab.value_size);
    q->queued = kind;
    q->nqueued++;
    return MPIKVS_OK;
}

/* Group the queued entries into one message per node, in their order. */
static void pack_shipments(mpikvs_t *kvs, struct ucx_shipping *q)
{
    size_t stride = ucx_ship_stride(&kvs->tab, q->queued);
    size_t full = ucx_ship_stride(&kvs->tab, KVS_SHIP_PUT);
    bool taken[BATCH_CHUNK] = {false};
    uint32_t at = 0;

    q->nmsgs = 0;
    q->round++;
    for (uint32_t e = 0; e < q->nqueued; e++) {
        if (taken[e])
            continue;
        struct shipment *m = &q->msgs[q->nmsgs];
        *m = (struct shipment){.node = q->queue[e].node, .first = at};
        for (uint32_t f = e; f < q->nqueued; f++) {
            if (taken[f] || q->queue[f].node != m->node)
                continue;
            taken[f] = true;
            memcpy(q->outbox + at * stride, q->payload + f * full, stride);
            q->order[at++] = f;
            m->count++;
        }
        m->head = (struct ship_head){
            .token = (uint64_t)q->round << 32 | q->nmsgs,
            .count = m->count,
            .kind = q->queued};
        memcpy(m->head.secret, ucx_state(kvs)->secret,
               sizeof(m->head.secret));
        q->nmsgs++;
    }
}

static bool answered(void *arg)
{
    return ((const struct shipment *)arg)->answered;
}

/* Send every queued key to its node, not waiting for the answers (they
 * are taken in the caller's progress; ucx_ship_flush waits for them). */
int ucx_ship_post(mpikvs_t *kvs)
{
    struct ucx_transport *s = ucx_state(kvs);
    struct ucx_shipping *q = s->ship;
    size_t stride;
    int rc;

    if (!q || !q->nqueued || q->sent)   /* no ship: nothing is remote */
        return MPIKVS_OK;
    stride = ucx_ship_stride(&kvs->tab, q->queued);
    /* the last one given up on (below) is UCX's */
    if (!q->outbox &&
        !(q->outbox = malloc(ucx_ship_capacity(&kvs->tab) *
                             ucx_ship_stride(&kvs->tab, KVS_SHIP_PUT)))) {
        rc = kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
        for (size_t e = 0; e < q->nqueued; e++)
            *q->queue[e].status = rc;
        q->nqueued = 0;
        return rc;
    }
    pack_shipments(kvs, q);
    for (size_t i = 0; i < q->nmsgs; i++) {
        struct shipment *m = &q->msgs[i];
        ucp_request_param_t p = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            /* the node answers on the reply endpoint; eager: the data
             * is in the message, which the handler reads in place */
            .flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER};
        m->req = ucp_am_send_nbx(s->nodes[m->node].ep, UCX_AM_SHIP, &m->head,
                                 sizeof(m->head),
                                 q->outbox + m->first * stride,
                                 m->count * stride, &p);
        if (UCS_PTR_IS_ERR(m->req)) {
            m->error = ucx_wait_done(kvs, m->req, m->node, "shipping keys");
            m->req = NULL;
            m->answered = true;
        }
    }
    q->sent = true;
    return MPIKVS_OK;
}

bool ucx_ship_answered(const mpikvs_t *kvs)
{
    const struct ucx_shipping *q = ucx_state(kvs)->ship;

    for (size_t i = 0; q && q->sent && i < q->nmsgs; i++)
        if (!q->msgs[i].answered)
            return false;
    return true;
}

/* Send what is queued, if it has not gone yet, and wait for the answers:
 * each entry's status (and a get's value) is then in place. */
int ucx_ship_flush(mpikvs_t *kvs)
{
    struct ucx_transport *s = ucx_state(kvs);
    struct ucx_shipping *q = s->ship;
    int rc = MPIKVS_OK;

    if (!q || !q->nqueued)
        return MPIKVS_OK;
    if ((rc = ucx_ship_post(kvs)) != MPIKVS_OK)
        return rc;
    for (size_t i = 0; i < q->nmsgs; i++) {
        struct shipment *m = &q->msgs[i];
        int r = m->error;
        if (r == MPIKVS_OK)
            r = ucx_wait_until(kvs, answered, m, m->node, "shipping keys");
        if (r == MPIKVS_OK && m->garbled)
            r = kvs_fail(kvs, MPIKVS_ERR_TRANSPORT,
                         "UCX: node %u answered %u shipped keys with a "
                         "message of another size or kind (its leader "
                         "runs another table or library)",
                         m->node, m->count);
        if (r == MPIKVS_OK && m->refused)
            r = kvs_fail(kvs, m->refused,
                         "UCX: node %u refused a shipped key: %s (its "
                         "leader's table is not this one's)",
                         m->node, mpikvs_strerror(m->refused));
        if (r == MPIKVS_OK)
            r = ucx_wait_done(kvs, m->req, m->node, "shipping keys");
        else if (m->req && ucx_request_done(m->req))
            ucp_request_free(m->req);
        else if (m->req)   /* given up on: UCX may still read the outbox */
            q->outbox = NULL;
        m->req = NULL;
        for (uint32_t j = 0; r != MPIKVS_OK && j < m->count; j++)
            *q->queue[q->order[m->first + j]].status = r;
        if (rc == MPIKVS_OK)
            rc = r;
        if (r == MPIKVS_ERR_STALLED) {   /* the rest would wait as long */
            for (size_t j = i + 1; j < q->nmsgs; j++)
                for (uint32_t e = 0; e < q->msgs[j].count; e++)
                    *q->queue[q->order[q->msgs[j].first + e]].status = r;
            q->outbox = NULL;
            break;
        }
    }
    /* No answer may land in these entries any more.  An outbox given up
     * on is left to UCX (as are the requests: ucx_wait_done); the next
     * flush takes a new one. */
    q->nqueued = 0;
    q->nmsgs = 0;
    q->sent = false;
    return rc;
}

/* The calling worker's handler of a node's answer (in this rank's
 * progress, inside ucx_ship_flush's wait). */
static ucs_status_t take_answer(void *arg, const void *header,
                                size_t header_length, void *data,
                                size_t length,
                                const ucp_am_recv_param_t *param)
{
    struct ucx_transport *s = arg;
    struct ucx_shipping *q = s->ship;
    const mpikvs_t *kvs = s->kvs;
    const unsigned char *d = data;
    struct ship_head h;
    struct shipment *m;

    if (header_length != sizeof(h) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK;
    memcpy(&h, header, sizeof(h));
    if (!ucx_secret_ok(s, h.secret) || h.token >> 32 != q->round ||
        (uint32_t)h.token >= q->nmsgs)
        return UCS_OK;   /* not ours, or an answer given up on */
    m = &q->msgs[(uint32_t)h.token];
    if (m->answered)
        return UCS_OK;
    m->answered = true;
    if (h.count != m->count || h.kind != q->queued ||
        length != ucx_ship_answer_len(&kvs->tab, h.count, h.kind)) {
        m->garbled = true;
        return UCS_OK;
    }
    if (h.kind == KVS_SHIP_GET)
        KVS_COUNT(&kvs->tab, moved, length);
    for (uint32_t i = 0; i < h.count; i++) {
        const struct ship_entry *e = &q->queue[q->order[m->first + i]];
        int32_t st;
        memcpy(&st, d + i * sizeof(st), sizeof(st));
        *e->status = st;
        if (st < 0 && !m->refused)
            m->refused = st;
        if (e->value && ucx_ship_answer_has_value(h.kind, st)) {
            memcpy(e->value,
                   d + h.count * sizeof(st) + i * kvs->tab.value_size,
                   kvs->tab.value_size);
            /* UCX's receive of it, and this copy out */
            if (h.kind == KVS_SHIP_GET)
                KVS_COUNT(&kvs->tab, copies, 2);
        }
    }
    return UCS_OK;
}

/* What a rank needs to ship keys (all do: MPIKVS_UCX_OPS may differ
 * between ranks) and take the answers. */
int ucx_shipping_open(mpikvs_t *kvs, struct ucx_transport *s)
{
    ucs_status_t st;

    struct ucx_shipping *q = calloc(1, sizeof(*q));
    size_t full = ucx_ship_stride(&kvs->tab, KVS_SHIP_PUT);

    if (!(s->ship = q) ||
        !(q->payload = malloc(ucx_ship_capacity(&kvs->tab) * full)) ||
        !(q->outbox = malloc(ucx_ship_capacity(&kvs->tab) * full)))
        return kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
    st = ucx_set_am_handler(s->caller, UCX_AM_SHIP_ANSWER, take_answer, s);
    if (st != UCS_OK)
        return ucx_fail(kvs, "setting the answers' handler", st);
    return MPIKVS_OK;
}

/* Which nodes get their keys shipped whole: in the lock-free mode, every
 * node reached through UCX, unless the context has RMA (MPIKVS_UCX_OPS=
 * rma: buckets read and slots written). */
void ucx_shipping_choose(mpikvs_t *kvs, struct ucx_transport *s)
{
    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        struct ucx_node *nd = &s->nodes[n];
        nd->ships = kvs_routes_may_ship(kvs) && nd->ep &&
                    !nd->direct && !s->rma;
    }
}

void ucx_shipping_close(struct ucx_transport *s)
{
    if (s->ship) {
        free(s->ship->payload);
        free(s->ship->outbox);
    }
    free(s->ship);
    s->ship = NULL;
}
