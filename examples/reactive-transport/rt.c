/*
 * rt.c - the failure helpers every part of mpikvs-reactive-transport
 * calls (rt.h): an error message on its way up, and the end of the job
 * after a failed MPI or collective libmpikvs call.  They live in a file
 * of their own so that the parts depend on them, not on main.c.
 */
#include "rt.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_world_rank(void)
{
    int rank = 0, up = 0;

    if (MPI_Initialized(&up) == MPI_SUCCESS && up)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

static int vfail(struct rt_err *err, bool echo, const char *fmt, va_list ap)
{
    if (err) {
        /* fmt may print err->text itself: format into a copy */
        char text[sizeof(err->text)];
        vsnprintf(text, sizeof(text), fmt, ap);
        memcpy(err->text, text, sizeof(text));
        err->echo = echo;
    }
    return -1;
}

int rt_fail(struct rt_err *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfail(err, false, fmt, ap);
    va_end(ap);
    return -1;
}

int rt_echo(struct rt_err *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfail(err, true, fmt, ap);
    va_end(ap);
    return -1;
}

void rt_abort(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: rank %d: ", RT_PROG, rt_world_rank());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (ending the job: the ranks can no longer agree on "
                    "a clean stop)\n");
    MPI_Abort(MPI_COMM_WORLD, RT_EXIT_FAIL);
    exit(RT_EXIT_FAIL);   /* MPI_Abort does not return; if it did */
}

void rt_mpi(int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (rc == MPI_SUCCESS)
        return;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", rc);
    rt_abort("%s failed: %s", call, text);
}
