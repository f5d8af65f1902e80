/*
 * async.c - batches in flight while the caller works:
 * mpikvs_get_batch_start, mpikvs_put_batch_start, mpikvs_test and
 * mpikvs_wait.
 *
 * A request is a blocking batch cut where it would wait: its chunks
 * (batch.h) are issued, the home nodes work on them (the transport's
 * post sends shipped keys at once; reads are on their way), and the
 * chunk is finished later, when the caller tests or waits.  One chunk is
 * in flight per handle at a time, of the oldest request not finished:
 * requests complete in the order they were started, so puts of one key
 * in two requests land in that order, and the memory a handle holds for
 * them is one chunk's buffers plus a small record per request, up to
 * KVS_REQUESTS_MAX of them.
 *
 * Other calls may run meanwhile: a flush of theirs completes the chunk's
 * transfers too, into the chunk's own buffers (its bucket copies are not
 * the blocking batches' buffer), and the ucx transport flushes shipped
 * keys that went out before it queues new ones.  mpikvs_fence and
 * mpikvs_close complete every request first (fence: a remote hit enters
 * the node tier only before the barrier that publishes it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "batch.h"
#include "errors.h"
#include "ops.h"

/* Requests a handle holds at once, started and not yet waited for. */
#define KVS_REQUESTS_MAX 1024u

#define NONE UINT32_MAX

struct request {
    uint32_t             gen;    /* bumped when it ends: a stale id is
                                  * refused, not mistaken */
    bool                 used, done, put;
    size_t               n, at;  /* keys; those before at are finished */
    const unsigned char *keys;
    unsigned char       *values;
    int                 *status;
    int                  rc;     /* the first error */
    uint32_t             next;   /* the next unfinished one, or NONE */
};

struct kvs_async {
    struct request   req[KVS_REQUESTS_MAX];
    uint32_t         live;          /* used */
    uint32_t         head, tail;    /* unfinished, oldest first */
    bool             inflight;      /* chunk is head's, issued */
    struct kvs_chunk chunk;
    unsigned char   *copies;        /* its bucket copies */
};

static struct kvs_async *async_state(mpikvs_t *kvs)
{
    struct kvs_async *a = kvs->async;

    if (a)
        return a;
    if (!(a = calloc(1, sizeof(*a))) ||
        !(a->copies = malloc(kvs->batch_len))) {
        free(a);
        return NULL;
    }
    a->head = a->tail = NONE;
    kvs->async = a;
    return a;
}

/* Issue the next chunk of the oldest unfinished request, if none is in
 * flight; the transport sends what it can at once. */
static void issue_next(mpikvs_t *kvs, struct kvs_async *a)
{
    struct kvs_chunk *c = &a->chunk;
    struct request *r;

    if (a->inflight || a->head == NONE)
        return;
    r = &a->req[a->head];
    c->put = r->put;
    c->n = r->n - r->at < BATCH_CHUNK ? r->n - r->at : BATCH_CHUNK;
    c->keys = r->keys + r->at * kvs->tab.key_size;
    c->values = r->values + r->at * kvs->tab.value_size;
    c->status = r->status ? r->status + r->at : NULL;
    c->copies = a->copies;
    kvs_chunk_issue(kvs, c);
    if (c->rc == MPIKVS_OK && kvs->tp->post)
        c->rc = kvs->tp->post(kvs);
    a->inflight = true;
}

/* Finish the chunk in flight (waits for what it still lacks), then issue
 * the next. */
static void advance(mpikvs_t *kvs, struct kvs_async *a)
{
    struct request *r;
    int rc;

    if (!a->inflight) {
        issue_next(kvs, a);
        return;
    }
    r = &a->req[a->head];
    rc = kvs_chunk_finish(kvs, &a->chunk);
    a->inflight = false;
    r->rc = kvs_first_error(r->rc, rc);
    r->at += a->chunk.n;
    if (r->at >= r->n || r->rc != MPIKVS_OK) {
        r->done = true;
        a->head = r->next;
        if (a->head == NONE)
            a->tail = NONE;
    }
    issue_next(kvs, a);
}

/* Whether the chunk in flight can be finished without waiting. */
static bool ready(mpikvs_t *kvs, const struct kvs_async *a)
{
    return a->inflight && (!kvs->tp->poll || kvs->tp->poll(kvs));
}

static int start(mpikvs_t *kvs, const char *call, bool put, size_t n,
                 const void *keys, void *values, int *status,
                 mpikvs_request_t *out)
{
    struct kvs_async *a;
    struct request *r = NULL;
    uint32_t i;
    int rc;

    if (!kvs)
        return kvs_no_handle(call);
    if (!out)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s: request must not be "
                                               "NULL", call);
    out->id = 0;
    if ((rc = kvs_batch_args(kvs, call, n, keys, values,
                             put ? values : (void *)status)))
        return rc;
    if (!(a = async_state(kvs)))
        return kvs_fail(kvs, -ENOMEM, "%s: out of memory", call);
    if (a->live == KVS_REQUESTS_MAX)
        return kvs_fail(kvs, -EAGAIN, "%s: %u batches are in flight, the "
                        "most a handle holds: wait for one first", call,
                        KVS_REQUESTS_MAX);
    for (i = 0; a->req[i].used; i++)
        ;
    r = &a->req[i];
    *r = (struct request){.gen = r->gen, .used = true, .done = n == 0,
                          .put = put, .n = n, .keys = keys,
                          .values = values, .status = status,
                          .next = NONE};
    a->live++;
    if (!r->done) {
        if (a->tail != NONE)
            a->req[a->tail].next = i;
        else
            a->head = i;
        a->tail = i;
    }
    /* the one in flight may be complete already: make room for this */
    if (ready(kvs, a))
        advance(kvs, a);
    issue_next(kvs, a);
    out->id = (uint64_t)r->gen << 32 | (i + 1);
    return MPIKVS_OK;
}

int mpikvs_get_batch_start(mpikvs_t *kvs, size_t n, const void *keys,
                           void *values, int *status, mpikvs_request_t *req)
{
    return start(kvs, "mpikvs_get_batch_start", false, n, keys, values,
                 status, req);
}

int mpikvs_put_batch_start(mpikvs_t *kvs, size_t n, const void *keys,
                           const void *values, mpikvs_request_t *req)
{
    /* only read: a chunk's values are the caller's either way */
    int rc = start(kvs, "mpikvs_put_batch_start", true, n, keys,
                   (void *)values, NULL, req);

    /* the neighbourhoods take the keys now, the batch's table later */
    return rc == MPIKVS_OK ? kvs_near_put_batch(kvs, "mpikvs_put_batch_start",
                                                n, keys, values)
                           : rc;
}

/* The request req names, or NULL with the handle's error set. */
static struct request *lookup(mpikvs_t *kvs, const char *call,
                              const mpikvs_request_t *req)
{
    struct kvs_async *a = kvs->async;
    uint64_t i = req ? (req->id & UINT32_MAX) : 0;

    if (a && i >= 1 && i <= KVS_REQUESTS_MAX && a->req[i - 1].used &&
        a->req[i - 1].gen == (uint32_t)(req->id >> 32))
        return &a->req[i - 1];
    kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s: %s", call,
             !req ? "request must not be NULL"
                  : "no batch in flight has this request (it was waited "
                    "for already, or not started on this handle)");
    return NULL;
}

/* A request that is done: its result; it ends, and *req with it. */
static int end(mpikvs_t *kvs, struct request *r, mpikvs_request_t *req)
{
    int rc = r->rc;

    r->used = false;
    r->gen++;
    kvs->async->live--;
    req->id = 0;
    return rc;
}

int mpikvs_test(mpikvs_t *kvs, mpikvs_request_t *req, int *done)
{
    struct request *r;

    if (!kvs)
        return kvs_no_handle("mpikvs_test");
    if (!done)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "mpikvs_test: done must "
                                               "not be NULL");
    *done = 0;
    if (!(r = lookup(kvs, "mpikvs_test", req)))
        return MPIKVS_ERR_INVAL;
    /* finish what has arrived, up to this request; without the
     * transport's poll a chunk is finished with its flush */
    while (!r->done && ready(kvs, kvs->async))
        advance(kvs, kvs->async);
    if (!r->done)
        return MPIKVS_OK;
    *done = 1;
    return end(kvs, r, req);
}

int mpikvs_wait(mpikvs_t *kvs, mpikvs_request_t *req)
{
    struct request *r;

    if (!kvs)
        return kvs_no_handle("mpikvs_wait");
    if (!(r = lookup(kvs, "mpikvs_wait", req)))
        return MPIKVS_ERR_INVAL;
    while (!r->done)
        advance(kvs, kvs->async);
    return end(kvs, r, req);
}

void kvs_async_complete(mpikvs_t *kvs)
{
    struct kvs_async *a = kvs->async;

    while (a && a->head != NONE)
        advance(kvs, a);
}

unsigned kvs_async_live(const mpikvs_t *kvs)
{
    return kvs->async ? kvs->async->live : 0;
}

unsigned kvs_async_close(mpikvs_t *kvs)
{
    struct kvs_async *a = kvs->async;
    unsigned live;

    if (!a)
        return 0;
    kvs_async_complete(kvs);
    live = a->live;
    free(a->copies);
    free(a);
    kvs->async = NULL;
    return live;
}
