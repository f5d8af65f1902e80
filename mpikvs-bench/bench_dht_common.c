/*
 * bench_dht_common.c - what the two runs of "mpikvs-bench dht" share
 * (bench_dht.h): failing the whole job, the job's counters, the nodes
 * to size a table for, those an open handle formed, and sizes as text.  bench_dht.c (the paper's
 * phases) and bench_dht_tier.c (--tier) both call these; neither calls
 * the other's helpers.
 */
#include <errno.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_dht.h"
#include "mpikvs.h"

#define SUB DHT_SUB

/* A failed call on one rank leaves the others in a collective: after the
 * message, MPI_Abort ends the whole job with status 1. */
void dht_fail(const mpikvs_t *kvs, int rank, const char *call, int rc)
{
    const char *more = mpikvs_last_error(kvs);

    fprintf(stderr, "%s: %s: rank %d: %s: %s%s%s%s\n", BENCH_PROG, SUB,
            rank, call, mpikvs_strerror(rc), more && *more ? " (" : "",
            more && *more ? more : "", more && *more ? ")" : "");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_FAIL);
    exit(BENCH_EXIT_FAIL);
}

void dht_job_stats(mpikvs_t *kvs, int rank, mpikvs_stats_t *st)
{
    int rc = mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, st, sizeof *st);

    if (rc != MPIKVS_OK)
        dht_fail(kvs, rank, "mpikvs_stats", rc);
}

void dht_stats_diff(const mpikvs_stats_t *a, const mpikvs_stats_t *b,
                    mpikvs_stats_t *d)
{
    double esum = mpikvs_stat_double(b->verify_error_sum) -
                  mpikvs_stat_double(a->verify_error_sum);

#define DIFF_COUNTER(name, label, text) d->name = b->name - a->name;
    MPIKVS_STATISTICS(DIFF_COUNTER)
#undef DIFF_COUNTER
    /* the statistics that hold doubles: the sum's growth as a double,
     * the largest as it is at b (mpikvs_statistics.h) */
    memcpy(&d->verify_error_sum, &esum, sizeof(esum));
    d->verify_error_max = b->verify_error_max;
}

int dht_nodes_to_size_for(int np)
{
    MPI_Comm local;
    int lr, leader, hosts;
    const char *v = getenv("MPIKVS_VIRTUAL_NODES");

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lr);
    leader = lr == 0;
    MPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&local);
    if (v && *v) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (!errno && *end == '\0' && v[0] != '-' && n >= 1 &&
            n <= (unsigned long)np)
            return (int)n;
    }
    return hosts;
}

void dht_nodes(const mpikvs_t *kvs, int rank, int *nodes,
               bool *virtual_nodes)
{
    mpikvs_info_t in = {.size = sizeof in};
    int rc = mpikvs_info(kvs, &in);

    if (rc != MPIKVS_OK)
        dht_fail(kvs, rank, "mpikvs_info", rc);
    *nodes = (int)in.nodes;
    *virtual_nodes = in.virtual_nodes != 0;
}

void dht_size_text(uint64_t bytes, char *buf, size_t len)
{
    if (!bytes)
        snprintf(buf, len, "the job's size");
    else if (bytes < (UINT64_C(1) << 20))
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
}

int dht_agree(int rank, int np, const char *what, const char *why)
{
    int mine = why ? rank : np, first;

    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == np)
        return 0;
    if (first == rank) {
        fprintf(stderr, "%s: %s: rank %d: %s\n", BENCH_PROG, what, rank, why);
        fflush(stderr);
    }
    return BENCH_EXIT_FAIL;
}

void dht_quiet_barrier(void)
{
    const struct timespec pause = {0, DHT_QUIET_WAIT_NS};
    MPI_Request rq;
    int done = 0;

    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    for (;;) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&pause, NULL);
    }
}

FILE *dht_temp_config(const char *stem, char *path, size_t plen, char *why,
                      size_t len)
{
    const char *dir = getenv("TMPDIR");
    FILE *f;
    int fd;

    if ((size_t)snprintf(path, plen, "%s/%s.XXXXXX",
                         dir && *dir ? dir : "/tmp", stem) >= plen) {
        path[0] = '\0';
        snprintf(why, len, "TMPDIR is too long for a file name");
        return NULL;
    }
    if ((fd = mkstemp(path)) < 0) {
        snprintf(why, len, "cannot make the temporary config %.900s: %s "
                           "(set TMPDIR to a writable directory)",
                 path, strerror(errno));
        path[0] = '\0';
        return NULL;
    }
    if (!(f = fdopen(fd, "w"))) {
        snprintf(why, len, "cannot write the temporary config %.900s: %s",
                 path, strerror(errno));
        close(fd);
        return NULL;
    }
    return f;
}
