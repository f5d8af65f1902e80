/*
 * bench_c.c - the C half of tests/fortran/bench_fortran: the same loop of
 * single gets of hit keys as the Fortran half, calling libmpikvs from C
 * in the same program run, so that the difference is the binding's cost
 * per call.
 */
#include <stdint.h>
#include <string.h>

#include <mpi.h>
#include <mpikvs.h>

/* bench_c_gets(COMM, NKEYS, ITERS, REPEATS, NS): keys of 80 bytes holding
 * 1..NKEYS in their first 8, values of 104; each rank puts them, then
 * gets them ITERS times in turn (all hits), REPEATS times; NS: the best
 * repeat's nanoseconds per get.  Returns an mpikvs code, or 1 on a miss. */
int bench_c_gets(MPI_Fint fcomm, int nkeys, int iters, int repeats,
                 double *ns)
{
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_t *kvs = NULL;
    unsigned char key[80], value[104];
    int rc;

    opt.key_size = sizeof key;
    opt.value_size = sizeof value;
    rc = mpikvs_open(MPI_Comm_f2c(fcomm), &opt, &kvs);
    if (rc != MPIKVS_OK)
        return rc;
    memset(key, 0, sizeof key);
    memset(value, 7, sizeof value);
    for (int64_t i = 1; i <= nkeys && rc == MPIKVS_OK; i++) {
        memcpy(key, &i, sizeof i);
        rc = mpikvs_put(kvs, key, value);
    }
    if (rc == MPIKVS_OK)
        rc = mpikvs_fence(kvs);
    *ns = 1e300;
    for (int r = 0; r < repeats && rc == MPIKVS_OK; r++) {
        double t = MPI_Wtime();

        for (int it = 0; it < iters && rc == MPIKVS_OK; it++) {
            int64_t i = 1 + it % nkeys;

            memcpy(key, &i, sizeof i);
            rc = mpikvs_get(kvs, key, value);
        }
        t = (MPI_Wtime() - t) * 1e9 / iters;
        if (t < *ns)
            *ns = t;
    }
    if (rc == MPIKVS_OK)
        rc = mpikvs_close(&kvs);
    else
        mpikvs_close(&kvs);
    return rc;
}
