/*
 * bench_mpi_count.h - counting the MPI calls libmpikvs makes, through
 * the MPI profiling interface (bench_mpi_count.c).
 *
 * mpikvs-bench defines the MPI functions listed here; the library's
 * calls of them (and the bench's own) reach these definitions, which
 * pass on to the PMPI_ entry points and, while counting is on, count
 * the call and the bytes it brings to this rank.  "mpikvs-bench open"
 * counts the calls of one mpikvs_open and one mpikvs_close.
 */
#ifndef MPIKVS_CONTRIB_BENCH_MPI_COUNT_H
#define MPIKVS_CONTRIB_BENCH_MPI_COUNT_H

#include <stdint.h>

#define BENCH_MPI_CALLS(X)                                              \
    X(COMM_DUP, "MPI_Comm_dup") X(COMM_SPLIT, "MPI_Comm_split")           \
    X(COMM_SPLIT_TYPE, "MPI_Comm_split_type")                           \
    X(COMM_FREE, "MPI_Comm_free") X(ALLGATHER, "MPI_Allgather")           \
    X(BCAST, "MPI_Bcast") X(ALLREDUCE, "MPI_Allreduce")                 \
    X(BARRIER, "MPI_Barrier") X(IBARRIER, "MPI_Ibarrier")               \
    X(WIN_CREATE, "MPI_Win_create") X(WIN_FREE, "MPI_Win_free")

#define BENCH_MPI_CALL_ENUM(id, name) BENCH_MPI_##id,
enum bench_mpi_call { BENCH_MPI_CALLS(BENCH_MPI_CALL_ENUM) BENCH_MPI_NCALLS };
#undef BENCH_MPI_CALL_ENUM

extern const char *const bench_mpi_call_name[BENCH_MPI_NCALLS];

struct bench_mpi_counts {
    uint64_t calls[BENCH_MPI_NCALLS];
    uint64_t bytes[BENCH_MPI_NCALLS];   /* received by this rank */
};

/* Count the calls into *into from now on; NULL stops. */
void bench_mpi_count_into(struct bench_mpi_counts *into);

#endif /* MPIKVS_CONTRIB_BENCH_MPI_COUNT_H */
