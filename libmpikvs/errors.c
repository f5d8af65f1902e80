/*
 * errors.c - the error reporting every call of libmpikvs shares: the
 * detail of the last failure, per handle, or per thread for mpikvs_open
 * (which has no handle to keep it in).
 */
#include <stdarg.h>

#include "errors_internal.h"
#include "handle.h"

/* mpikvs_open's detail for a caller who has no handle to ask. */
static _Thread_local mpikvs_error_t open_error;

int kvs_fail(mpikvs_t *kvs, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    kvshm_vfail(kvs ? &kvs->err : &open_error, code, fmt, ap);
    va_end(ap);
    return code;
}

int kvs_mpi_fail(mpikvs_t *kvs, const char *what, int mpi_rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;

    MPI_Error_string(mpi_rc, text, &len);
    return kvs_fail(kvs, MPIKVS_ERR_MPI,
                    "%s failed: %s (for the window across nodes and the lock "
                    "modes, Open MPI needs OMPI_MCA_osc=ucx or pt2pt)",
                    what, text);
}

const char *mpikvs_last_error(const mpikvs_t *kvs)
{
    return kvs ? kvs->err.text : open_error.text;
}
