/*
 * errors.c - the error reporting every call of libmpikvs shares: the
 * detail of the last failure, per handle, or per thread for a failure
 * that has no handle to keep it in (mpikvs_open, mpikvs_close, any call
 * given a NULL handle); and the agreement of the ranks on the outcome of
 * a step of open.
 */
#include <stdarg.h>

#include "errors_internal.h"
#include "handle.h"

/* The detail of a failure without a handle, for mpikvs_last_error(NULL):
 * per thread, as the calls that set it are. */
static _Thread_local mpikvs_error_t no_handle_error;

int kvs_fail(mpikvs_t *kvs, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    kvshm_vfail(kvs ? &kvs->err : &no_handle_error, code, fmt, ap);
    va_end(ap);
    return code;
}

int kvs_no_handle(const char *call)
{
    return kvs_fail(NULL, MPIKVS_ERR_INVAL,
                    "%s: the handle is NULL: pass the one mpikvs_open set "
                    "(if open failed, or mpikvs_close set it to NULL, "
                    "there is none: check their return codes)", call);
}

/* Every rank learns the worst outcome of a step of open; a rank that
 * succeeded where another failed says so. */
int kvs_agree(mpikvs_t *kvs, int rc)
{
    int mine = rc < 0 ? rc : 0, worst;

    if (MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, kvs->comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "MPI_Allreduce failed while opening");
    if (worst < 0 && mine == 0)
        kvs_fail(kvs, worst, "another rank failed to open: %s",
                 mpikvs_strerror(worst));
    return worst < 0 ? worst : rc;
}

const char *mpikvs_last_error(const mpikvs_t *kvs)
{
    return kvs ? kvs->err.text : no_handle_error.text;
}
