/*
 * mpi_impl.h - what differs between MPI implementations (mpi_impl.c).
 */
#ifndef MPIKVS_MPI_IMPL_H
#define MPIKVS_MPI_IMPL_H

#include "mpikvs.h"

/* What differs between MPI implementations (mpi_impl.c). */
enum kvs_mpi_family { KVS_MPI_OPENMPI, KVS_MPI_MPICH, KVS_MPI_OTHER };

/* The running MPI library: its version's first line, and its family. */
const char *kvs_mpi_library(void);
enum kvs_mpi_family kvs_mpi_family(void);
/* mpikvs_open's first step: MPIKVS_ERR_MPI, naming the mismatch, when
 * the process runs another MPI than the library was built for, or was
 * started by another MPI's launcher. */
int kvs_check_mpi_impl(void);
/* A failed MPI call: its error string in kvs->err, with this MPI's
 * remedy where there is one, MPIKVS_ERR_MPI. */
int kvs_mpi_fail(mpikvs_t *kvs, const char *what, int mpi_rc);
/* MPIKVS_ERR_MPI, with the remedy, when this MPI's one-sided atomics
 * cannot be used; need says what needs them ("the fine-lock mode"). */
int kvs_check_osc(mpikvs_t *kvs, const char *need);

#endif /* MPIKVS_MPI_IMPL_H */
