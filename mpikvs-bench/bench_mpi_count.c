/*
 * bench_mpi_count.c - the MPI functions mpikvs-bench counts
 * (bench_mpi_count.h): each counts, while counting is on, and calls its
 * PMPI_ entry point.  Nothing here calls into the rest of the bench.
 */
#include <mpi.h>
#include <stddef.h>

#include "bench_mpi_count.h"

#define BENCH_MPI_CALL_NAME(id, name) name,
const char *const bench_mpi_call_name[BENCH_MPI_NCALLS] = {
    BENCH_MPI_CALLS(BENCH_MPI_CALL_NAME)};
#undef BENCH_MPI_CALL_NAME

static struct bench_mpi_counts *counts;

void bench_mpi_count_into(struct bench_mpi_counts *into)
{
    counts = into;
}

static void count(enum bench_mpi_call c, uint64_t bytes)
{
    if (!counts)
        return;
    counts->calls[c]++;
    counts->bytes[c] += bytes;
}

static uint64_t type_bytes(MPI_Datatype t, int n)
{
    int size = 0;

    PMPI_Type_size(t, &size);
    return (uint64_t)size * (uint64_t)(n > 0 ? n : 0);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out)
{
    count(BENCH_MPI_COMM_DUP, 0);
    return PMPI_Comm_dup(comm, out);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out)
{
    count(BENCH_MPI_COMM_SPLIT, 0);
    return PMPI_Comm_split(comm, color, key, out);
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
                        MPI_Comm *out)
{
    count(BENCH_MPI_COMM_SPLIT_TYPE, 0);
    return PMPI_Comm_split_type(comm, type, key, info, out);
}

int MPI_Comm_free(MPI_Comm *comm)
{
    count(BENCH_MPI_COMM_FREE, 0);
    return PMPI_Comm_free(comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype,
                  void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int n = 0;

    if (counts)
        PMPI_Comm_size(comm, &n);
    count(BENCH_MPI_ALLGATHER, type_bytes(rtype, rcount) * (uint64_t)n);
    return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Bcast(void *buf, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    int me = root;

    if (counts)
        PMPI_Comm_rank(comm, &me);
    count(BENCH_MPI_BCAST, me == root ? 0 : type_bytes(t, n));
    return PMPI_Bcast(buf, n, t, root, comm);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int n, MPI_Datatype t,
                  MPI_Op op, MPI_Comm comm)
{
    count(BENCH_MPI_ALLREDUCE, counts ? type_bytes(t, n) : 0);
    return PMPI_Allreduce(sbuf, rbuf, n, t, op, comm);
}

int MPI_Barrier(MPI_Comm comm)
{
    count(BENCH_MPI_BARRIER, 0);
    return PMPI_Barrier(comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    count(BENCH_MPI_IBARRIER, 0);
    return PMPI_Ibarrier(comm, req);
}

int MPI_Win_create(void *base, MPI_Aint size, int unit, MPI_Info info,
                   MPI_Comm comm, MPI_Win *win)
{
    count(BENCH_MPI_WIN_CREATE, 0);
    return PMPI_Win_create(base, size, unit, info, comm, win);
}

int MPI_Win_free(MPI_Win *win)
{
    count(BENCH_MPI_WIN_FREE, 0);
    return PMPI_Win_free(win);
}
