/*
 * transport_ucx_state.h - the state the files of the ucx transport share:
 * transport_ucx.c (setup, the progress helper, the operations, flush,
 * close), transport_ucx_ship.c (keys shipped whole to their node),
 * transport_ucx_serve.c (the node's side of them), transport_ucx_mem.c
 * (reads, writes and atomics as messages, where the context has no RMA)
 * and transport_ucx_wait.c (bounded waits, and the errors).
 *
 * Every message between the library's workers carries the open's secret
 * (KVS_UCX_SECRET_WORDS words drawn by rank 0 and broadcast over MPI):
 * a UCX worker accepts connections from any process that reaches its
 * address, so a message without the secret is dropped, never applied
 * and never answered.
 */
#ifndef MPIKVS_TRANSPORT_UCX_STATE_H
#define MPIKVS_TRANSPORT_UCX_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ucp/api/ucp.h>

#include "transport.h"

/* The active message ids of the library's workers. */
enum ucx_am_id {
    UCX_AM_SHIP = 1,        /* to a serving worker: keys to apply */
    UCX_AM_SHIP_ANSWER,     /* to a calling worker: what they gave */
    UCX_AM_MEM,             /* to a serving worker: a memory operation */
    UCX_AM_MEM_ANSWER       /* to a calling worker: its outcome */
};

#define KVS_UCX_SECRET_WORDS 2   /* 128 bits */

struct ucx_node {
    ucp_ep_h     ep;
    ucp_rkey_h   rkey;
    uint64_t     base;
    ucs_status_t lost;   /* UCS_OK while the peer is there */
    uint64_t     stalled_ms; /* when a wait for it was last given up on
                              * (transport_ucx_wait.c), else 0 */
    bool         puts;   /* puts issued since its last flush */
    bool         ships;  /* its keys are shipped whole (transport.h) */
    pid_t        pid;    /* of its leader, when on this host; else 0 */
    unsigned char *direct;          /* the region, mapped here: a node */
    struct kvshm_region *mapped;    /* of this host (see connect_nodes) */
};

/* A get not yet complete: UCX's flush does not wait for the gets it
 * emulates (their replies), so the flush waits for each. */
struct pending_get {
    ucs_status_ptr_t req;
    uint32_t         node;
};

struct ucx_transport {
    uint64_t         secret[KVS_UCX_SECRET_WORDS];
    bool             rma;        /* the context has UCX's RMA and atomics
                                  * (MPIKVS_UCX_OPS=rma): transport_ucx.c */
    ucp_context_h    context;
    ucp_worker_h     caller;     /* this rank's operations */
    struct ucx_node *nodes;      /* [nnodes] */
    struct pending_get *gets;    /* issued since the last flush */
    size_t           ngets, gets_cap;
    mpikvs_t        *kvs;        /* for the error handler */

    struct ucx_shipping *ship;   /* keys shipped whole, queued until
                                  * the flush (transport_ucx_ship.c) */
    struct ucx_mem  *mem;        /* memory operations as messages, until
                                  * the flush (transport_ucx_mem.c) */
    unsigned         wait_ms;    /* a wait's bound (MPIKVS_TIMEOUT) */

    /* the leader */
    ucp_worker_h     server;     /* serves the node's region */
    struct ucx_serving *serving; /* the table the keys shipped to the
                                  * node run on (transport_ucx_serve.c) */
    unsigned char   *region;     /* the node's region, for the memory */
    uint64_t         region_size;/* operations (transport_ucx_mem.c) */
    ucp_mem_h        memh;
    pthread_mutex_t  server_lock;/* one thread progresses server at a time */
    pthread_t        helper;
    bool             helper_started;
    atomic_bool      stopping;
    int              efd;
    bool             opened;     /* every step of open succeeded */
};

static inline struct ucx_transport *ucx_state(const mpikvs_t *kvs)
{
    return kvs->tp_state;
}

/* Whether a message's secret is the open's: every word compared, so that
 * the time taken tells nothing of where a guess went wrong. */
static inline bool ucx_secret_ok(const struct ucx_transport *s,
                                 const uint64_t secret[KVS_UCX_SECRET_WORDS])
{
    uint64_t diff = 0;

    for (int i = 0; i < KVS_UCX_SECRET_WORDS; i++)
        diff |= secret[i] ^ s->secret[i];
    return diff == 0;
}

/* Set the handler of an active message id on a worker. */
static inline ucs_status_t ucx_set_am_handler(ucp_worker_h worker,
                                              unsigned id,
                                              ucp_am_recv_callback_t cb,
                                              void *arg)
{
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = id,
        .cb = cb,
        .arg = arg};

    return ucp_worker_set_am_recv_handler(worker, &hp);
}

#endif /* MPIKVS_TRANSPORT_UCX_STATE_H */
