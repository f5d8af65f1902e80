/*
 * header.cpp - mpikvs.h in C++ (tests/api/header-cxx.sh compiles it with
 * g++ and every warning an error): the declarations link as C, and
 * MPIKVS_OPTIONS_INIT initialises the options without a warning, also
 * before C++20, which has no designated initialisers.
 */
#include <mpikvs.h>

extern "C" int open_with_sizes(MPI_Comm comm, size_t key, size_t value,
                               mpikvs_t **kvs);

int open_with_sizes(MPI_Comm comm, size_t key, size_t value, mpikvs_t **kvs)
{
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    mpikvs_stats_t st;

    opt.key_size = key;
    opt.value_size = value;
    int rc = mpikvs_open(comm, &opt, kvs);
    if (rc == MPIKVS_OK)
        rc = mpikvs_stats(*kvs, MPIKVS_SCOPE_RANK, &st, sizeof st);
    return rc;
}
