/*
 * transport_ucx_serve.h - the leader's serving of keys shipped whole to
 * its node (transport_ucx_serve.c).  ucx_serving_open: at open, in the
 * lock-free mode, the table the keys run on and the serving worker's
 * handler; ucx_serving_close frees it, once the worker is gone.
 */
#ifndef MPIKVS_TRANSPORT_UCX_SERVE_H
#define MPIKVS_TRANSPORT_UCX_SERVE_H

#include "transport_ucx_state.h"

int ucx_serving_open(mpikvs_t *kvs, struct ucx_transport *s);
void ucx_serving_close(struct ucx_transport *s);

#endif /* MPIKVS_TRANSPORT_UCX_SERVE_H */
