/*
 * transport_ucx_wait.h - the ucx transport's bounded waits, and its errors
 * (transport_ucx_wait.c).
 */
#ifndef MPIKVS_TRANSPORT_UCX_WAIT_H
#define MPIKVS_TRANSPORT_UCX_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include "transport_ucx_state.h"

/* ucx_fail: a failed UCX call, MPIKVS_ERR_TRANSPORT.
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

#endif /* MPIKVS_TRANSPORT_UCX_WAIT_H */
