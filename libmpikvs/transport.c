/*
 * transport.c - which transport a handle uses.
 *
 * auto is UCX where it starts on every rank, else MPI one-sided; the
 * coarse-lock mode locks MPI windows, so auto is MPI there.
 */
#include "config.h"

#include <stdio.h>

#include "errors.h"
#include "route.h"
#include "transport.h"
#include "transport_mpi.h"
#ifdef HAVE_UCX
#include "transport_ucx.h"
#endif

#ifdef HAVE_UCX
/* The open of one transport failed on every rank alike (the transports
 * agree on each step): let go of what it made, to try the next. */
static void drop(mpikvs_t *kvs)
{
    if (kvs->tp)
        kvs->tp->close(kvs, true);
    kvs->tp = NULL;
    kvs->tp_state = NULL;
}
#endif

static int open_ucx(mpikvs_t *kvs)
{
#ifdef HAVE_UCX
    kvs->transport = KVSHM_TRANSPORT_UCX;
    return kvs_transport_ucx_open(kvs);
#else
    return kvs_fail(kvs, MPIKVS_ERR_TRANSPORT,
                    "transport ucx: this libmpikvs was built without UCX "
                    "(configure --without-ucx); ask for mpi or auto");
#endif
}

/* What auto chose and why, for mpikvs_info (handle.h). */
#define AUTO_WHY(kvs, ...)                                              \
    snprintf((kvs)->opened.transport_why,                               \
             sizeof((kvs)->opened.transport_why), __VA_ARGS__)

/* The transport kvs->transport asks for, opened. */
static int open_chosen(mpikvs_t *kvs)
{
    int rc;

    switch (kvs->transport) {
    case KVSHM_TRANSPORT_AUTO:
#ifdef HAVE_UCX
        if (kvs->mode != KVSHM_MODE_COARSE_LOCK) {
            if (open_ucx(kvs) == MPIKVS_OK) {
                AUTO_WHY(kvs, "UCX started on every rank");
                return MPIKVS_OK;
            }
            /* UCX does not start here: MPIKVS_TRANSPORT=ucx says why,
             * and so does mpikvs_info; the open has not failed */
            AUTO_WHY(kvs, "UCX did not start, so MPI one-sided: %s",
                     kvs->err.text);
            kvs->err.text[0] = '\0';
            drop(kvs);
        } else {
            AUTO_WHY(kvs, "the coarse-lock mode locks MPI windows");
        }
#else
        AUTO_WHY(kvs, "this libmpikvs was built without UCX");
#endif
        /* fall through */
    case KVSHM_TRANSPORT_MPI:
        kvs->transport = KVSHM_TRANSPORT_MPI;
        rc = kvs_transport_mpi_open(kvs);
        break;
    case KVSHM_TRANSPORT_UCX:
        rc = open_ucx(kvs);
        break;
    default:
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "transport %d is unknown",
                        (int)kvs->transport);
    }
    if (rc == MPIKVS_OK && kvs->mode == KVSHM_MODE_COARSE_LOCK &&
        !kvs->tp->lock_node)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "the coarse-lock mode needs the mpi transport (it "
                        "locks MPI windows), not %s",
                        kvshm_transport_name(kvs->transport));
    return rc;
}

int kvs_transport_open(mpikvs_t *kvs)
{
    int rc = open_chosen(kvs);

    /* the way to each node, once: every operation reads it */
    return rc == MPIKVS_OK ? kvs_routes_set(kvs) : rc;
}
