/*
 * transport_ucx.h - the ucx transport (transport_ucx.c; what its files
 * share is transport_ucx_state.h).
 */
#ifndef MPIKVS_TRANSPORT_UCX_H
#define MPIKVS_TRANSPORT_UCX_H

#include "handle.h"

/* Open it (transport.h, kvs_transport_open): kvs->tp is set on success. */
int kvs_transport_ucx_open(mpikvs_t *kvs);

#endif /* MPIKVS_TRANSPORT_UCX_H */
