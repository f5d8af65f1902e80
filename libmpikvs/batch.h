/*
 * batch.h - a chunk of a batch: at most BATCH_CHUNK keys, issued, then
 * finished (batch.c).  A blocking batch runs its chunks one after the
 * other; a batch in flight (async.c) issues one and finishes it later.
 */
#ifndef MPIKVS_BATCH_H
#define MPIKVS_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "handle.h"
#include "key.h"

/* A remote key of a chunk. */
struct pending {
    size_t         index;    /* in the caller's arrays */
    struct kvs_key key;
    size_t         copy;     /* the bucket copy it reads (puts: shared by
                              * keys of one bucket), or its probe */
    uint64_t       slot;     /* the slot path: the slot read, or the
                              * table's slots for none */
    bool           shipped;  /* sent whole to its home (transport.h) */
};

struct kvs_chunk {
    bool                 put;
    size_t               n;
    const unsigned char *keys;
    unsigned char       *values;   /* a put's are only read */
    int                 *status;   /* a get's */
    unsigned char       *copies;   /* BATCH_CHUNK bucket copies */
    struct pending       remote[BATCH_CHUNK];   /* read or shipped */
    struct pending       shipped[BATCH_CHUNK];  /* puts shipped */
    int                  choice[BATCH_CHUNK];   /* their answers */
    size_t               nremote, nshipped;
    int                  rc;       /* the first error */
};

/* Issue chunk c (its put, n, keys, values, status and copies set): the
 * own node's keys are done, the others are on their way.  Then finish it:
 * complete what was issued, verify, count; returns c->rc, the first
 * error, else MPIKVS_OK. */
void kvs_chunk_issue(mpikvs_t *kvs, struct kvs_chunk *c);
int kvs_chunk_finish(mpikvs_t *kvs, struct kvs_chunk *c);

/* What mpikvs_get_batch and its kin say of bad arguments. */
/* Enter n keys, whose values call just stored, into their
 * neighbourhoods (near.h); MPIKVS_OK without neighbourhoods. */
int kvs_near_put_batch(mpikvs_t *kvs, const char *call, size_t n,
                       const void *keys, const void *values);

int kvs_batch_args(mpikvs_t *kvs, const char *call, size_t n,
                   const void *keys, const void *values, const void *st);

/* The first error of a batch wins: the one that stopped it. */
static inline int kvs_first_error(int rc, int next)
{
    return rc != MPIKVS_OK ? rc : next;
}

#endif /* MPIKVS_BATCH_H */
