/*
 * transport.c - which transport a handle uses.
 */
#include "transport.h"

int kvs_transport_open(mpikvs_t *kvs)
{
    int rc;

    switch (kvs->transport) {
    case KVSHM_TRANSPORT_AUTO:   /* MPI is the only one so far */
    case KVSHM_TRANSPORT_MPI:
        kvs->transport = KVSHM_TRANSPORT_MPI;
        rc = kvs_transport_mpi_open(kvs);
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
