/*
 * app.c - a user's program built by CMake against an installed mpikvs
 * (tests/cmake-project.sh): every rank puts a key, and after a barrier
 * and a fence gets the next rank's and checks its value, and the
 * package's version (MPIKVS_PACKAGE_VERSION, from CMakeLists.txt) is the
 * installed header's and the library's.  Prints "cmake-app: ok RANK"
 * when its open, put, get and close all worked; exits 1 on any
 * failure.
 */
#include <mpikvs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The value each rank puts under its key. */
static uint64_t value_of(uint64_t key)
{
    return key * 1000003u + 17u;
}

static int failed(int rank, const char *what, int rc)
{
    fprintf(stderr, "cmake-app: rank %d: %s: %s\n", rank, what,
            mpikvs_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    mpikvs_options_t opt;
    mpikvs_t *kvs = NULL;
    uint64_t key, value, got = 0;
    int rank, size, rc, bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    opt = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    opt.key_size = sizeof key;      /* 8 */
    opt.value_size = sizeof value;  /* 8 */
    rc = mpikvs_open(MPI_COMM_WORLD, &opt, &kvs);
    if (rc != MPIKVS_OK) {          /* then on every rank */
        failed(rank, "mpikvs_open", rc);
        MPI_Finalize();
        return 1;
    }

    key = 0x6b760000u + (uint64_t)rank;
    value = value_of(key);
    rc = mpikvs_put(kvs, &key, &value);
    if (rc != MPIKVS_OK)
        bad |= failed(rank, "mpikvs_put", rc);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = mpikvs_fence(kvs);
    if (rc != MPIKVS_OK)
        bad |= failed(rank, "mpikvs_fence", rc);

    key = 0x6b760000u + (uint64_t)((rank + 1) % size);
    rc = mpikvs_get(kvs, &key, &got);
    if (rc != MPIKVS_OK) {
        bad |= failed(rank, "mpikvs_get of the next rank's key", rc);
    } else if (got != value_of(key)) {
        fprintf(stderr, "cmake-app: rank %d: got %llu, not %llu\n", rank,
                (unsigned long long)got, (unsigned long long)value_of(key));
        bad = 1;
    }

    rc = mpikvs_close(&kvs);
    if (rc != MPIKVS_OK)
        bad |= failed(rank, "mpikvs_close", rc);
    if (strcmp(MPIKVS_PACKAGE_VERSION, MPIKVS_VERSION) != 0 ||
        strcmp(MPIKVS_VERSION, mpikvs_version()) != 0) {
        fprintf(stderr, "cmake-app: rank %d: the package is %s, the header "
                "%s, the library %s\n", rank, MPIKVS_PACKAGE_VERSION,
                MPIKVS_VERSION, mpikvs_version());
        bad = 1;
    }
    if (!bad)
        printf("cmake-app: ok %d\n", rank);
    MPI_Finalize();
    return bad;
}
