/*
 * transport_ucx_mem.c - a node's region read, written and changed
 * atomically through messages that its serving worker answers, where the
 * library's UCX context has no RMA (the default: transport_ucx.c says
 * why).
 *
 * Each operation is one active message to the node's serving worker with
 * the open's secret.  The worker checks the secret and the range (inside
 * the region; an atomic's word aligned), performs the operation with
 * loads, stores and the CPU's atomics, and answers on the sender's
 * endpoint with a status and, for a read or an atomic, the bytes.  This
 * is what UCX itself does where it emulates RMA with messages, less its
 * trust: UCX's emulation writes wherever a message says, for anyone who
 * connects.
 *
 * An operation is complete when its answer has been taken (in the
 * caller's progress); ucx_mem_flush waits for those of a node, or of
 * all.  An answer is matched by its token, a round and the operation's
 * place; the round changes once every operation issued in it has been
 * waited for, so an answer of an earlier round is dropped, and so is the
 * answer of an operation given up on (its buffer is forgotten then):
 * nothing lands in a buffer after its operation has failed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "transport_ucx_state.h"
#include "transport_ucx_mem.h"
#include "transport_ucx_wait.h"

enum mem_op { MEM_READ, MEM_WRITE, MEM_CAS, MEM_ADD };

/* The header of an operation, and of its answer (the same, with status
 * set). */
struct mem_head {
    uint64_t secret[KVS_UCX_SECRET_WORDS];
    uint64_t token;     /* the sender's, echoed */
    uint64_t disp;      /* in the node's region */
    uint64_t len;       /* a read's or write's bytes; an atomic's 8 */
    uint64_t operand;   /* cas: the word expected; add: the addend */
    uint64_t desired;   /* cas */
    uint32_t op;        /* enum mem_op */
    int32_t  status;    /* the answer's: MPIKVS_OK or an error */
};

/* An operation issued, until its answer. */
struct mem_pending {
    void    *into;       /* where the answer's bytes go, or NULL */
    uint64_t len;        /* how many it must bring */
    uint32_t node;
    bool     answered;
    bool     waited;     /* its outcome was returned */
    int      status;
};

struct ucx_mem {
    struct mem_pending *ops;   /* issued since the last flush */
    size_t              n, cap;
    uint32_t            round; /* of flushes */
};

static void sent(void *req, ucs_status_t status, void *buf)
{
    (void)status;
    free(buf);
    ucp_request_free(req);
}

/* Send a header and data as one eager message; msg is the caller's
 * malloc'ed copy of both, freed once UCX is done with it.  UCS_OK or why
 * not. */
static ucs_status_t send_msg(ucp_ep_h ep, unsigned id, void *msg,
                             size_t head, size_t len, uint32_t flags)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .flags = flags | UCP_AM_SEND_FLAG_EAGER,
        .cb.send = sent,
        .user_data = msg};
    ucs_status_ptr_t req = ucp_am_send_nbx(ep, id, msg, head,
                                           (char *)msg + head, len, &p);

    if (UCS_PTR_IS_PTR(req))   /* the callback frees msg */
        return UCS_OK;
    free(msg);
    return UCS_PTR_STATUS(req);
}

/* Issue one operation to node; *index: its place, to wait for. */
static int issue(mpikvs_t *kvs, uint32_t node, struct mem_head h,
                 const void *data, void *into, uint64_t into_len,
                 size_t *index)
{
    struct ucx_transport *s = ucx_state(kvs);
    struct ucx_mem *m = s->mem;
    size_t dlen = h.op == MEM_WRITE ? h.len : 0;
    unsigned char *msg;
    ucs_status_t st;

    if (s->nodes[node].lost != UCS_OK)
        return ucx_node_lost(kvs, node);
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 2 * BATCH_CHUNK;
        struct mem_pending *o = realloc(m->ops, cap * sizeof(*o));
        if (!o)
            return kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
        m->ops = o;
        m->cap = cap;
    }
    if (!(msg = malloc(sizeof(h) + dlen)))
        return kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
    memcpy(h.secret, s->secret, sizeof(h.secret));
    h.token = (uint64_t)m->round << 32 | m->n;
    memcpy(msg, &h, sizeof(h));
    if (dlen)
        memcpy(msg + sizeof(h), data, dlen);
    st = send_msg(s->nodes[node].ep, UCX_AM_MEM, msg, sizeof(h), dlen,
                  UCP_AM_SEND_FLAG_REPLY);
    if (st != UCS_OK)
        return ucx_fail(kvs, "sending a memory operation", st);
    m->ops[m->n] = (struct mem_pending){.into = into, .len = into_len,
                                        .node = node};
    *index = m->n++;
    return MPIKVS_OK;
}

static bool op_answered(void *arg)
{
    return ((const struct mem_pending *)arg)->answered;
}

/* Wait for operation i's answer: its status.  One given up on forgets
 * its buffer. */
static int wait_op(mpikvs_t *kvs, size_t i)
{
    struct mem_pending *o = &ucx_state(kvs)->mem->ops[i];
    int rc = ucx_wait_until(kvs, op_answered, o, o->node,
                            "a memory operation");

    o->waited = true;
    if (rc != MPIKVS_OK) {
        o->into = NULL;
        o->len = 0;
        return rc;
    }
    if (o->status != MPIKVS_OK)
        return kvs_fail(kvs, o->status,
                        "UCX: node %u refused a memory operation: %s (its "
                        "leader's region is not like this one's)",
                        o->node, mpikvs_strerror(o->status));
    return MPIKVS_OK;
}

int ucx_mem_read(mpikvs_t *kvs, uint32_t node, uint64_t disp, void *buf,
                 size_t len)
{
    size_t i;

    return issue(kvs, node,
                 (struct mem_head){.op = MEM_READ, .disp = disp, .len = len},
                 NULL, buf, len, &i);
}

int ucx_mem_write(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                  const void *buf, size_t len)
{
    size_t i;

    return issue(kvs, node,
                 (struct mem_head){.op = MEM_WRITE, .disp = disp, .len = len},
                 buf, NULL, 0, &i);
}

/* An atomic, waited for at once: its caller reads the word next. */
static int atomic_op(mpikvs_t *kvs, uint32_t node, struct mem_head h,
                     uint64_t *word)
{
    size_t i;
    int rc;

    h.len = sizeof(uint64_t);
    if ((rc = issue(kvs, node, h, NULL, word, sizeof(*word), &i)) !=
        MPIKVS_OK)
        return rc;
    return wait_op(kvs, i);
}

int ucx_mem_cas(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                uint64_t expect, uint64_t desired, uint64_t *seen)
{
    return atomic_op(kvs, node,
                     (struct mem_head){.op = MEM_CAS, .disp = disp,
                                       .operand = expect,
                                       .desired = desired},
                     seen);
}

int ucx_mem_add(mpikvs_t *kvs, uint32_t node, uint64_t disp, int64_t add,
                uint64_t *before)
{
    return atomic_op(kvs, node,
                     (struct mem_head){.op = MEM_ADD, .disp = disp,
                                       .operand = (uint64_t)add},
                     before);
}

bool ucx_mem_answered(const mpikvs_t *kvs)
{
    const struct ucx_mem *m = ucx_state(kvs)->mem;

    for (size_t i = 0; m && i < m->n; i++)
        if (!m->ops[i].answered)
            return false;
    return true;
}

/* Wait for the operations issued to node (or to every node) since they
 * were last waited for (the first error wins; the others are waited for
 * too, but none longer once its node has been given up on:
 * ucx_wait_until).  Those of other nodes stay in flight. */
int ucx_mem_flush(mpikvs_t *kvs, uint32_t node)
{
    struct ucx_mem *m = ucx_state(kvs)->mem;
    bool all_waited = true;
    int rc = MPIKVS_OK;

    if (!m)
        return MPIKVS_OK;
    for (size_t i = 0; i < m->n; i++) {
        struct mem_pending *o = &m->ops[i];
        if (o->waited)
            continue;
        if (node != KVS_ALL_NODES && o->node != node) {
            all_waited = false;
            continue;
        }
        int r = wait_op(kvs, i);
        if (rc == MPIKVS_OK)
            rc = r;
    }
    if (all_waited) {   /* an answer still to come is of a round gone */
        m->n = 0;
        m->round++;
    }
    return rc;
}

/* The calling worker's handler of an answer (in this rank's progress). */
static ucs_status_t take_answer(void *arg, const void *header,
                                size_t header_length, void *data,
                                size_t length,
                                const ucp_am_recv_param_t *param)
{
    struct ucx_transport *s = arg;
    struct ucx_mem *m = s->mem;
    struct mem_pending *o;
    struct mem_head h;

    if (header_length != sizeof(h) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK;
    memcpy(&h, header, sizeof(h));
    if (!ucx_secret_ok(s, h.secret) || h.token >> 32 != m->round ||
        (uint32_t)h.token >= m->n)
        return UCS_OK;   /* not ours, or given up on */
    o = &m->ops[(uint32_t)h.token];
    if (o->answered || o->waited)   /* a double, or given up on */
        return UCS_OK;
    o->answered = true;
    o->status = h.status;
    if (o->status == MPIKVS_OK && length != o->len)
        o->status = MPIKVS_ERR_TRANSPORT;
    else if (o->status == MPIKVS_OK && o->len)
        memcpy(o->into, data, o->len);
    return UCS_OK;
}

/* Whether h names a range of the region that its operation may touch. */
static bool in_region(const struct ucx_transport *s,
                      const struct mem_head *h)
{
    bool atomic = h->op == MEM_CAS || h->op == MEM_ADD;

    if (h->op > MEM_ADD || h->disp > s->region_size ||
        h->len > s->region_size - h->disp)
        return false;
    return !atomic ||
           (h->len == sizeof(uint64_t) && h->disp % sizeof(uint64_t) == 0);
}

/* The serving worker's handler of an operation (in the helper, or in the
 * leader's own progress; under server_lock).  One without the secret is
 * dropped; one outside the region is answered with an error. */
static ucs_status_t serve_op(void *arg, const void *header,
                             size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param)
{
    struct ucx_transport *s = arg;
    struct mem_head h;
    unsigned char *answer, *at;
    uint64_t *word;
    size_t alen = 0;

    if (header_length != sizeof(h) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK;
    memcpy(&h, header, sizeof(h));
    if (!ucx_secret_ok(s, h.secret))
        return UCS_OK;
    h.status = MPIKVS_OK;
    if (!in_region(s, &h) || (h.op == MEM_WRITE && length != h.len) ||
        (h.op != MEM_WRITE && length != 0))
        h.status = MPIKVS_ERR_MISMATCH;
    else if (h.op != MEM_WRITE)
        alen = h.len;
    if (!(answer = malloc(sizeof(h) + alen)))
        return UCS_OK;   /* the sender's wait fails */
    at = s->region + h.disp;
    word = (uint64_t *)(void *)at;
    if (h.status != MPIKVS_OK)
        ;
    else if (h.op == MEM_READ)
        memcpy(answer + sizeof(h), at, alen);
    else if (h.op == MEM_WRITE)
        memcpy(at, data, length);
    else if (h.op == MEM_CAS) {
        uint64_t seen = h.operand;
        __atomic_compare_exchange_n(word, &seen, h.desired, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        memcpy(answer + sizeof(h), &seen, sizeof(seen));
    } else {
        uint64_t before = __atomic_fetch_add(word, h.operand,
                                             __ATOMIC_SEQ_CST);
        memcpy(answer + sizeof(h), &before, sizeof(before));
    }
    memcpy(answer, &h, sizeof(h));
    send_msg(param->reply_ep, UCX_AM_MEM_ANSWER, answer, sizeof(h), alen,
             0);
    return UCS_OK;
}

int ucx_mem_open(mpikvs_t *kvs, struct ucx_transport *s)
{
    ucs_status_t st;

    if (!(s->mem = calloc(1, sizeof(*s->mem))))
        return kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
    st = ucx_set_am_handler(s->caller, UCX_AM_MEM_ANSWER, take_answer, s);
    return st == UCS_OK
               ? MPIKVS_OK
               : ucx_fail(kvs, "setting the memory answers' handler", st);
}

int ucx_mem_serve(mpikvs_t *kvs, struct ucx_transport *s)
{
    ucs_status_t st;

    s->region = kvs->region->base;
    s->region_size = kvs->region->size;
    st = ucx_set_am_handler(s->server, UCX_AM_MEM, serve_op, s);
    return st == UCS_OK
               ? MPIKVS_OK
               : ucx_fail(kvs, "setting the memory operations' handler",
                          st);
}

void ucx_mem_close(struct ucx_transport *s)
{
    if (s->mem)
        free(s->mem->ops);
    free(s->mem);
    s->mem = NULL;
}
