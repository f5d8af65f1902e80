/*
 * rt.h - what every part of mpikvs-reactive-transport shares: the program
 * name, exit statuses, and one way to carry an error message up to the
 * code that prints it.
 *
 * The program is a reactive-transport mini-app in the manner of POET
 * (Luebke et al., ICCS 2025, section 4.4): advection on a 2-D grid, one
 * kinetic chemistry solve (SUNDIALS CVODE) per cell and time step, and
 * libmpikvs as a surrogate cache for those solves.  One concern per file:
 *   options.c    command line                 (options.h)
 *   grid.c       the grid, halo rows, advection (grid.h)
 *   chemistry.c  the kinetic model and CVODE  (chemistry.h)
 *   cache.c      keys, batch get/put, reuse   (cache.h)
 *   run.c        one simulation run, timing   (run.h)
 *   report.c     summary, CSV, fields, gnuplot (report.h)
 *   rt.c         failures on their way up, failed MPI calls (rt.h)
 *   main.c       MPI, the order of the runs, exit status
 */
#ifndef MPIKVS_RT_H
#define MPIKVS_RT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define RT_PROG        "mpikvs-reactive-transport"
#define RT_EXIT_FAIL   1   /* the run failed (or its outputs could not be made) */
#define RT_EXIT_USAGE  2   /* bad command line */

/* A failure on its way up: what failed, with what value, what to do. */
struct rt_err {
    char text[512];
    bool echo;      /* only echoes another rank's failure: rank 0 says it */
};

/* Fill err (which may be NULL) and return -1, so that a failing function
 * can end with `return rt_fail(err, ...)`.  rt_echo is for a rank that
 * stops because another one failed. */
int rt_fail(struct rt_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int rt_echo(struct rt_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* This process's rank in MPI_COMM_WORLD, 0 before MPI_Init. */
int rt_world_rank(void);

/* Check the return code of an MPI call.  A failed MPI call leaves no
 * safe way to agree with the other ranks (every collective might hang),
 * so it ends the job: the message names the call and MPI's reason, and
 * MPI_Abort follows.  Regions of the cache are then left to the SPANK
 * plugin's cleanup, or to be removed by hand (see the man page). */
void rt_mpi(int rc, const char *call);

/* The same end for a collective call of libmpikvs that failed. */
void rt_abort(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif /* MPIKVS_RT_H */
