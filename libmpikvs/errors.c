/*
 * errors.c - the error reporting every call of libmpikvs shares: the
 * detail of the last failure, per handle, or per thread for a failure
 * that has no handle to keep it in (mpikvs_open, mpikvs_close, any call
 * given a NULL handle); and the agreement of the ranks on the outcome of
 * a step that may fail on some of them only (kvs_agreed's rule).
 */
#include <stdarg.h>
#include <stdio.h>

#include "errors.h"
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

/*
 * The one rule by which the ranks agree on the outcome of a step that
 * may fail on some of them only: every rank returns the worst outcome
 * (the most negative code) and holds the text of the lowest rank that
 * has it.  So every rank reports the real cause, not "another rank
 * failed", and the code a rank returns always goes with its text (a rank
 * that failed less badly does not keep its own text beside another
 * rank's code).  How the outcomes travel is the caller's: collectives
 * here (kvs_agree, open and load), bounded messages for a save, which
 * must not wait forever for a stopped rank (bounded_comm.c).
 */
int kvs_agreed(mpikvs_t *kvs, int rc, int worst, const char *text)
{
    if (worst == 0)
        return rc;
    if (text != kvs->err.text)
        snprintf(kvs->err.text, sizeof(kvs->err.text), "%s", text);
    kvs->err.code = worst;
    return worst;
}

int kvs_agree(mpikvs_t *kvs, int rc)
{
    int mine = rc < 0 ? rc : 0, worst, who, me;

    if (MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, kvs->comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce failed");
    if (worst == 0)
        return rc;
    me = mine == worst ? kvs->rank : kvs->size;
    if (MPI_Allreduce(&me, &who, 1, MPI_INT, MPI_MIN, kvs->comm) !=
            MPI_SUCCESS ||
        MPI_Bcast(kvs->err.text, sizeof(kvs->err.text), MPI_CHAR, who,
                  kvs->comm) != MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast failed");
    return kvs_agreed(kvs, rc, worst, kvs->err.text);
}

const char *mpikvs_last_error(const mpikvs_t *kvs)
{
    return kvs ? kvs->err.text : no_handle_error.text;
}
