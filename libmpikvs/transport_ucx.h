/*
 * transport_ucx.h - what the files of the ucx transport share:
 * transport_ucx.c (setup, the progress helper, RMA and atomics, flush,
 * close), transport_ucx_ship.c (keys shipped whole to their node) and
 * transport_ucx_wait.c (bounded waits, and the errors).
 */
#ifndef MPIKVS_TRANSPORT_UCX_H
#define MPIKVS_TRANSPORT_UCX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ucp/api/ucp.h>

#include "transport.h"

struct ucx_node {
    ucp_ep_h     ep;
    ucp_rkey_h   rkey;
    uint64_t     base;
    ucs_status_t lost;   /* UCS_OK while the peer is there */
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
    ucp_context_h    context;
    ucp_worker_h     caller;     /* this rank's operations */
    struct ucx_node *nodes;      /* [nnodes] */
    struct pending_get *gets;    /* issued since the last flush */
    size_t           ngets, gets_cap;
    mpikvs_t        *kvs;        /* for the error handler */

    struct ucx_shipping *ship;   /* keys shipped whole, queued until
                                  * the flush (transport_ucx_ship.c) */

    /* the leader */
    ucp_worker_h     server;     /* serves the node's region */
    mpikvs_t        *served;     /* the node as the keys shipped to it
                                  * see it (transport_ucx_ship.c) */
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

/* transport_ucx_wait.c.  ucx_fail: a failed UCX call, MPIKVS_ERR_TRANSPORT.
 * ucx_node_lost: the error of a node that is gone.  ucx_wait_until:
 * progress until ready(arg), bounded, failed by a lost node (node, or
 * any with KVS_ALL_NODES).  ucx_wait_done: the same for a request (what
 * an _nbx call returned), freed once complete. */
int ucx_fail(mpikvs_t *kvs, const char *what, ucs_status_t st);
int ucx_node_lost(mpikvs_t *kvs, uint32_t node);
int ucx_wait_until(mpikvs_t *kvs, bool (*ready)(void *), void *arg,
                   uint32_t node, const char *what);
bool ucx_request_done(void *req);
int ucx_wait_done(mpikvs_t *kvs, ucs_status_ptr_t req, uint32_t node,
                  const char *what);

/* transport_ucx_ship.c: the transport's ships, ship and the shipped
 * part of its flush; at open, every rank's means to ship
 * (ucx_shipping_open), the leader's to serve (ucx_serving_open), and
 * once the endpoints work, which nodes are shipped to
 * (ucx_shipping_choose); ucx_shipping_close frees what they made. */
bool ucx_ships(const mpikvs_t *kvs, uint32_t node);
int ucx_ship(mpikvs_t *kvs, const struct kvs_key *k, enum kvs_ship_kind kind,
             const void *in, void *out, int *status);
int ucx_ship_flush(mpikvs_t *kvs);
int ucx_ship_post(mpikvs_t *kvs);
bool ucx_ship_answered(const mpikvs_t *kvs);
int ucx_shipping_open(mpikvs_t *kvs, struct ucx_transport *s);
int ucx_serving_open(mpikvs_t *kvs, struct ucx_transport *s);
void ucx_shipping_choose(mpikvs_t *kvs, struct ucx_transport *s);
void ucx_shipping_close(struct ucx_transport *s);

#endif /* MPIKVS_TRANSPORT_UCX_H */
