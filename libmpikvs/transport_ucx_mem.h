/*
 * transport_ucx_mem.h - memory operations as messages, where the UCX
 * context has no RMA (transport_ucx_mem.c).
 */
#ifndef MPIKVS_TRANSPORT_UCX_MEM_H
#define MPIKVS_TRANSPORT_UCX_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transport_ucx_state.h"

/* Where the context has no RMA, a read or write of
 * len bytes at disp of node's region, or an atomic on the word there
 * (ucx_mem_cas: *seen the word before, swapped if it was expect;
 * ucx_mem_add: *before the word before the add), each completed by
 * ucx_mem_flush of its node (or of KVS_ALL_NODES).  At open, every
 * rank's means to send them and take the answers (ucx_mem_open), the
 * leader's to serve them (ucx_mem_serve); ucx_mem_close frees. */
int ucx_mem_read(mpikvs_t *kvs, uint32_t node, uint64_t disp, void *buf,
                 size_t len);
int ucx_mem_write(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                  const void *buf, size_t len);
int ucx_mem_cas(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                uint64_t expect, uint64_t desired, uint64_t *seen);
int ucx_mem_add(mpikvs_t *kvs, uint32_t node, uint64_t disp, int64_t add,
                uint64_t *before);
int ucx_mem_flush(mpikvs_t *kvs, uint32_t node);
bool ucx_mem_answered(const mpikvs_t *kvs);
int ucx_mem_open(mpikvs_t *kvs, struct ucx_transport *s);
int ucx_mem_serve(mpikvs_t *kvs, struct ucx_transport *s);
void ucx_mem_close(struct ucx_transport *s);

#endif /* MPIKVS_TRANSPORT_UCX_MEM_H */
