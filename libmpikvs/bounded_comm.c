/*
 * bounded_comm.c - collectives that give up (bounded_comm.h): each step a
 * nonblocking collective on a duplicate of the handle's communicator,
 * tested until it completes or MPIKVS_TIMEOUT has passed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bounded_comm.h"
#include "spin.h"

struct kvs_bcomm {
    mpikvs_t   *kvs;
    const char *call;
    MPI_Comm    comm;
    bool        lost;      /* a step given up on: the buffers stay */
    /* what MPI may still write after a give-up: never on a caller's stack */
    int         ints[2];
    uint64_t    words[2];
    char        bytes[KVS_BCOMM_MAX_BCAST];
    uint64_t   *gathered;  /* 2 words per rank */
};

/* Test req until it completes, or give up after kvs->timeout seconds:
 * spin for a while (a step of a few ranks is quick), then nap. */
static int wait_bounded(struct kvs_bcomm *b, MPI_Request *req,
                        const char *what)
{
    mpikvs_t *kvs = b->kvs;
    uint64_t start = kvshm_now_ms(), deadline = start + kvs->timeout * 1000ull;
    int done = 0;

    for (unsigned round = 0;; round++) {
        int mrc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (mrc != MPI_SUCCESS) {
            b->lost = true;
            return kvs_mpi_fail(kvs, what, mrc);
        }
        if (done)
            return MPIKVS_OK;
        if (kvshm_now_ms() >= deadline) {
            b->lost = true;
            return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                            "%s: not every rank took part in its %s within "
                            "%u s (MPIKVS_TIMEOUT): a rank is stopped, "
                            "died or is stuck; this rank gave up, and the "
                            "call failed", b->call, what, kvs->timeout);
        }
        if (kvshm_now_ms() - start >= 10) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = 100000};
            nanosleep(&ts, NULL);
        }
    }
}

/* A step after a give-up: fail at once, the text of the give-up kept. */
static int given_up(struct kvs_bcomm *b)
{
    b->kvs->err.code = MPIKVS_ERR_STALLED;
    return MPIKVS_ERR_STALLED;
}

static int posted(struct kvs_bcomm *b, int mrc, MPI_Request *req,
                  const char *what)
{
    if (mrc != MPI_SUCCESS) {
        b->lost = true;   /* the others may wait in it: never reuse */
        return kvs_mpi_fail(b->kvs, what, mrc);
    }
    return wait_bounded(b, req, what);
}

int kvs_bcomm_open(mpikvs_t *kvs, const char *call, struct kvs_bcomm **out)
{
    struct kvs_bcomm *b = calloc(1, sizeof(*b));
    MPI_Request req;
    int rc;

    *out = NULL;
    if (b)
        b->gathered = calloc((size_t)kvs->size * 2, sizeof(uint64_t));
    if (!b || !b->gathered) {
        if (b)
            free(b);
        /* the others wait in the duplicate for this rank, bounded */
        return kvs_fail(kvs, -ENOMEM, "%s: out of memory", call);
    }
    b->kvs = kvs;
    b->call = call;
    b->comm = MPI_COMM_NULL;
    rc = posted(b, MPI_Comm_idup(kvs->comm, &b->comm, &req), &req,
                "MPI_Comm_idup");
    if (rc != MPIKVS_OK) {
        kvs_bcomm_close(&b);
        return rc;
    }
    *out = b;
    return MPIKVS_OK;
}

int kvs_bcomm_agree(struct kvs_bcomm *b, int rc)
{
    mpikvs_t *kvs = b->kvs;
    MPI_Request req;
    int step;

    if (b->lost)
        return given_up(b);
    b->ints[0] = rc < 0 ? rc : 0;
    step = posted(b, MPI_Iallreduce(MPI_IN_PLACE, &b->ints[0], 1, MPI_INT,
                                    MPI_MIN, b->comm, &req),
                  &req, "MPI_Iallreduce");
    if (step != MPIKVS_OK)
        return step;
    if (b->ints[0] == 0)
        return rc;
    /* the lowest rank with the worst code tells the others its text */
    b->ints[1] = (rc < 0 ? rc : 0) == b->ints[0] ? kvs->rank : kvs->size;
    step = posted(b, MPI_Iallreduce(MPI_IN_PLACE, &b->ints[1], 1, MPI_INT,
                                    MPI_MIN, b->comm, &req),
                  &req, "MPI_Iallreduce");
    if (step != MPIKVS_OK)
        return step;
    memcpy(b->bytes, kvs->err.text, sizeof(kvs->err.text));
    step = posted(b, MPI_Ibcast(b->bytes, sizeof(kvs->err.text), MPI_CHAR,
                                b->ints[1], b->comm, &req),
                  &req, "MPI_Ibcast");
    if (step != MPIKVS_OK)
        return step;
    memcpy(kvs->err.text, b->bytes, sizeof(kvs->err.text));
    kvs->err.code = b->ints[0];
    return b->ints[0];
}

int kvs_bcomm_bcast(struct kvs_bcomm *b, void *buf, int len, int root)
{
    MPI_Request req;
    int rc;

    if (b->lost)
        return given_up(b);
    if (len < 0 || len > KVS_BCOMM_MAX_BCAST)
        return kvs_fail(b->kvs, MPIKVS_ERR_INVAL, "%s: a broadcast of %d "
                        "bytes", b->call, len);
    memcpy(b->bytes, buf, (size_t)len);
    rc = posted(b, MPI_Ibcast(b->bytes, len, MPI_BYTE, root, b->comm, &req),
                &req, "MPI_Ibcast");
    if (rc == MPIKVS_OK)
        memcpy(buf, b->bytes, (size_t)len);
    return rc;
}

int kvs_bcomm_allgather2(struct kvs_bcomm *b, const uint64_t mine[2],
                         uint64_t *all)
{
    MPI_Request req;
    int rc;

    if (b->lost)
        return given_up(b);
    memcpy(b->words, mine, sizeof(b->words));
    rc = posted(b, MPI_Iallgather(b->words, 2, MPI_UINT64_T, b->gathered, 2,
                                  MPI_UINT64_T, b->comm, &req),
                &req, "MPI_Iallgather");
    if (rc == MPIKVS_OK)
        memcpy(all, b->gathered, (size_t)b->kvs->size * 2 * sizeof(*all));
    return rc;
}

int kvs_bcomm_sum(struct kvs_bcomm *b, uint64_t mine, uint64_t *sum)
{
    MPI_Request req;
    int rc;

    if (b->lost)
        return given_up(b);
    b->words[0] = mine;
    rc = posted(b, MPI_Iallreduce(MPI_IN_PLACE, &b->words[0], 1,
                                  MPI_UINT64_T, MPI_SUM, b->comm, &req),
                &req, "MPI_Iallreduce");
    if (rc == MPIKVS_OK)
        *sum = b->words[0];
    return rc;
}

void kvs_bcomm_close(struct kvs_bcomm **bp)
{
    struct kvs_bcomm *b = *bp;

    *bp = NULL;
    if (!b || b->lost)
        return;   /* kept: a collective given up on may still land */
    if (b->comm != MPI_COMM_NULL)
        MPI_Comm_free(&b->comm);
    free(b->gathered);
    free(b);
}
