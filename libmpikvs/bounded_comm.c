/*
 * bounded_comm.c - the bounded steps of a save (bounded_comm.h): each a
 * gather to rank 0 and an answer from it, point-to-point on the handle's
 * communicator with the save's own tag, tested until complete or until
 * MPIKVS_TIMEOUT has passed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bounded_comm.h"
#include "clock.h"
#include "errors.h"
#include "mpi_impl.h"

/* 2^15: MPI guarantees tags up to at least 32767 */
#define SAVE_TAGS 32768u

/* A rank's message to rank 0 and rank 0's answer. */
struct up {
    int64_t v[2];
    char    text[sizeof(((mpikvs_error_t *)0)->text)];
};
struct down {
    int64_t v[3];
    char    bytes[KVS_BCOMM_MAX_BCAST];
};

struct kvs_bcomm {
    mpikvs_t    *kvs;
    const char  *call;
    int          tag;
    bool         lost;    /* a step given up on: everything below stays */
    MPI_Request *reqs;    /* rank 0: one per rank; the others: 2 */
    bool        *is_recv;
    struct up   *up;      /* rank 0: one per rank; the others: 1 */
    struct down *down;    /* the answer to all, or the one received */
    int64_t    (*each)[3];/* rank 0: the answer to each rank */
};

/* Whether n requests are all done, by one MPI_Test each rather than
 * MPI_Testall: MPICH's mpi.h declares the statuses an array, and gcc 12
 * takes MPI_STATUSES_IGNORE for one of size 0 (-Wstringop-overflow). */
static int test_all(int n, MPI_Request *reqs, int *done)
{
    *done = 1;
    for (int i = 0; i < n; i++) {
        int flag = 0, rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag)
            *done = 0;
    }
    return MPI_SUCCESS;
}

/* Wait for n requests, or give up after kvs->timeout seconds (of this
 * rank's looking: clock.h): spin for a while (a step is quick), then
 * nap.  A give-up cancels the receives still posted, so that no later
 * message lands in them. */
static int wait_bounded(struct kvs_bcomm *b, int n, const char *what)
{
    mpikvs_t *kvs = b->kvs;
    uint64_t start = kvshm_now_ms();
    struct kvshm_deadline deadline;
    int done = 0, mrc;

    kvshm_deadline_start(&deadline, kvs->timeout * 1000ull);
    for (;;) {
        mrc = test_all(n, b->reqs, &done);
        if (mrc != MPI_SUCCESS || done)
            break;
        if (kvshm_deadline_passed(&deadline))
            break;
        if (kvshm_now_ms() - start >= 10) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = 100000};
            nanosleep(&ts, NULL);
        }
    }
    if (mrc == MPI_SUCCESS && done)
        return MPIKVS_OK;
    b->lost = true;
    for (int i = 0; i < n; i++)
        if (b->is_recv[i] && b->reqs[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&b->reqs[i]);
            MPI_Wait(&b->reqs[i], MPI_STATUS_IGNORE);
        }
    if (mrc != MPI_SUCCESS)
        return kvs_mpi_fail(kvs, what, mrc);
    return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                    "%s: not every rank took part in its %s within %u s "
                    "(MPIKVS_TIMEOUT): a rank is stopped, died or is "
                    "stuck; this rank gave up, and the call failed",
                    b->call, what, kvs->timeout);
}

static int post_failed(struct kvs_bcomm *b, int mrc, const char *what)
{
    b->lost = true;   /* what was posted stays */
    return kvs_mpi_fail(b->kvs, what, mrc);
}

/*
 * One step: every rank but 0 sends up_len bytes of b->up[0] to rank 0,
 * which gets them in b->up[r] (its own in b->up[0]), makes the answers
 * with answer(b), and sends down_len bytes of b->down to everyone (where
 * one_answer) or b->each[r] to rank r; the others get theirs in b->down
 * (each[r] is down's first words).
 */
static int step(struct kvs_bcomm *b, int up_len, int down_len,
                bool one_answer, void (*answer)(struct kvs_bcomm *),
                const char *what)
{
    mpikvs_t *kvs = b->kvs;
    int mrc, n = 0, rc;

    if (b->lost) {
        kvs->err.code = MPIKVS_ERR_STALLED;   /* the give-up's text stays */
        return MPIKVS_ERR_STALLED;
    }
    if (kvs->rank != 0) {
        mrc = MPI_Isend(&b->up[0], up_len, MPI_BYTE, 0, b->tag, kvs->comm,
                        &b->reqs[0]);
        b->is_recv[0] = false;
        if (mrc != MPI_SUCCESS)
            return post_failed(b, mrc, what);
        mrc = MPI_Irecv(b->down, (int)sizeof(struct down), MPI_BYTE, 0,
                        b->tag, kvs->comm, &b->reqs[1]);
        b->is_recv[1] = true;
        if (mrc != MPI_SUCCESS)
            return post_failed(b, mrc, what);
        return wait_bounded(b, 2, what);
    }
    for (int r = 1; r < kvs->size; r++, n++) {
        mrc = MPI_Irecv(&b->up[r], (int)sizeof(struct up), MPI_BYTE, r,
                        b->tag, kvs->comm, &b->reqs[n]);
        b->is_recv[n] = true;
        if (mrc != MPI_SUCCESS)
            return post_failed(b, mrc, what);
    }
    if ((rc = wait_bounded(b, n, what)) != MPIKVS_OK)
        return rc;
    answer(b);
    for (int r = 1; r < kvs->size; r++) {
        void *answer_to = one_answer ? (void *)b->down : (void *)b->each[r];
        mrc = MPI_Isend(answer_to, down_len, MPI_BYTE, r, b->tag, kvs->comm,
                        &b->reqs[r - 1]);
        b->is_recv[r - 1] = false;
        if (mrc != MPI_SUCCESS)
            return post_failed(b, mrc, what);
    }
    return wait_bounded(b, n, what);
}

int kvs_bcomm_open(mpikvs_t *kvs, const char *call, struct kvs_bcomm **out)
{
    size_t n = kvs->rank == 0 ? (size_t)kvs->size : 1;
    size_t nreq = kvs->rank == 0 ? (size_t)kvs->size : 2;
    struct kvs_bcomm *b = calloc(1, sizeof(*b));

    *out = NULL;
    if (b) {
        b->reqs = calloc(nreq, sizeof(*b->reqs));
        b->is_recv = calloc(nreq, sizeof(*b->is_recv));
        b->up = calloc(n, sizeof(*b->up));
        b->down = calloc(1, sizeof(*b->down));
        b->each = calloc(n, sizeof(*b->each));
    }
    /* the number counts even when this rank cannot go on: the others'
     * next save is the next number too */
    if (!b || !b->reqs || !b->is_recv || !b->up || !b->down || !b->each) {
        kvs->saves++;
        kvs_bcomm_close(&b);
        return kvs_fail(kvs, -ENOMEM, "%s: out of memory", call);
    }
    b->kvs = kvs;
    b->call = call;
    b->tag = (int)(kvs->saves++ % SAVE_TAGS);
    *out = b;
    return MPIKVS_OK;
}

/* Rank 0: the worst code, and the text of the lowest rank with it. */
static void worst_of(struct kvs_bcomm *b)
{
    int who = 0;

    for (int r = 1; r < b->kvs->size; r++)
        if (b->up[r].v[0] < b->up[who].v[0])
            who = r;
    b->down->v[0] = b->up[who].v[0];
    memcpy(b->down->bytes, b->up[who].text, sizeof(b->up[who].text));
}

int kvs_bcomm_agree(struct kvs_bcomm *b, int rc)
{
    mpikvs_t *kvs = b->kvs;
    int64_t mine = rc < 0 ? rc : 0;
    int step_rc, len;

    b->up[0].v[0] = mine;
    /* the text only where there is a failure to tell */
    len = mine < 0 ? (int)sizeof(struct up) : (int)sizeof(int64_t);
    if (mine < 0)
        memcpy(b->up[0].text, kvs->err.text, sizeof(b->up[0].text));
    step_rc = step(b, len, (int)(sizeof(int64_t) * 3 + sizeof(kvs->err.text)),
                   true, worst_of, "agreement");
    if (step_rc != MPIKVS_OK)
        return step_rc;
    b->down->bytes[sizeof(kvs->err.text) - 1] = '\0';
    return kvs_agreed(kvs, rc, (int)b->down->v[0], b->down->bytes);
}

/* Rank 0: its bytes, already in down. */
static void as_is(struct kvs_bcomm *b)
{
    (void)b;
}

int kvs_bcomm_bcast(struct kvs_bcomm *b, void *buf, int len)
{
    int rc;

    if (len < 0 || len > KVS_BCOMM_MAX_BCAST)
        return kvs_fail(b->kvs, MPIKVS_ERR_INVAL, "%s: a broadcast of %d "
                        "bytes", b->call, len);
    if (b->kvs->rank == 0)
        memcpy(b->down->bytes, buf, (size_t)len);
    rc = step(b, 0, (int)(sizeof(int64_t) * 3) + len, true, as_is,
              "broadcast");
    if (rc == MPIKVS_OK && b->kvs->rank != 0)
        memcpy(buf, b->down->bytes, (size_t)len);
    return rc;
}

/* Rank 0: each rank's offset, the total, and whether any has more. */
static void offsets_of(struct kvs_bcomm *b)
{
    int64_t sum = 0, any = 0;

    for (int r = 0; r < b->kvs->size; r++) {
        b->each[r][0] = sum;
        sum += b->up[r].v[0];
        any |= b->up[r].v[1];
    }
    for (int r = 0; r < b->kvs->size; r++) {
        b->each[r][1] = sum;
        b->each[r][2] = any;
    }
    memcpy(b->down->v, b->each[0], sizeof(b->each[0]));
}

int kvs_bcomm_offsets(struct kvs_bcomm *b, uint64_t count, bool more,
                      uint64_t *before, uint64_t *total, bool *any)
{
    int rc;

    b->up[0].v[0] = (int64_t)count;
    b->up[0].v[1] = more;
    rc = step(b, (int)(sizeof(int64_t) * 2), (int)(sizeof(int64_t) * 3),
              false, offsets_of, "exchange of counts");
    if (rc == MPIKVS_OK) {
        *before = (uint64_t)b->down->v[0];
        *total = (uint64_t)b->down->v[1];
        *any = b->down->v[2] != 0;
    }
    return rc;
}

/* Rank 0: the sum of every rank's word. */
static void sum_of(struct kvs_bcomm *b)
{
    uint64_t sum = 0;

    for (int r = 0; r < b->kvs->size; r++)
        sum += (uint64_t)b->up[r].v[0];
    b->down->v[0] = (int64_t)sum;
}

int kvs_bcomm_sum(struct kvs_bcomm *b, uint64_t mine, uint64_t *sum)
{
    int rc;

    b->up[0].v[0] = (int64_t)mine;
    rc = step(b, (int)sizeof(int64_t), (int)(sizeof(int64_t) * 3), true,
              sum_of, "sum");
    if (rc == MPIKVS_OK)
        *sum = (uint64_t)b->down->v[0];
    return rc;
}

void kvs_bcomm_close(struct kvs_bcomm **bp)
{
    struct kvs_bcomm *b = *bp;

    *bp = NULL;
    if (!b || b->lost)
        return;   /* kept: a send given up on may still read its buffer */
    free(b->reqs);
    free(b->is_recv);
    free(b->up);
    free(b->down);
    free(b->each);
    free(b);
}
