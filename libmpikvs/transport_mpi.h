/*
 * transport_mpi.h - the mpi transport: MPI one-sided communication
 * (transport_mpi.c).
 */
#ifndef MPIKVS_TRANSPORT_MPI_H
#define MPIKVS_TRANSPORT_MPI_H

#include "handle.h"

/* Open it (transport.h, kvs_transport_open): kvs->tp is set on success. */
int kvs_transport_mpi_open(mpikvs_t *kvs);

#endif /* MPIKVS_TRANSPORT_MPI_H */
