# SYNOPSIS
#   MPIKVS_CHECK_JANSSON, MPIKVS_CHECK_XXHASH, MPIKVS_CHECK_UCX,
#   MPIKVS_CHECK_CHECK
# DESCRIPTION
#   pkg-config checks of the libraries mpikvs uses, each failing with the
#   Debian package to install.

AC_DEFUN([MPIKVS_CHECK_JANSSON], [
  PKG_CHECK_MODULES([JANSSON], [jansson >= 2.10], [],
    [AC_MSG_ERROR([jansson >= 2.10 not found; install libjansson-dev])])
])

AC_DEFUN([MPIKVS_CHECK_XXHASH], [
  PKG_CHECK_MODULES([XXHASH], [libxxhash >= 0.8], [],
    [AC_MSG_ERROR([xxhash >= 0.8 (XXH3) not found; install libxxhash-dev])])
])

# UCX, the library's network transport to other nodes (libmpikvs/
# transport_ucx.c).  Required unless --without-ucx, which builds the MPI
# one-sided transport only.
AC_DEFUN([MPIKVS_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--without-ucx],
      [build libmpikvs without its UCX transport (MPI one-sided only)])],
    [], [with_ucx=yes])
  have_ucx=no
  AS_IF([test "$with_ucx" != no], [
    PKG_CHECK_MODULES([UCX], [ucx >= 1.12], [have_ucx=yes],
      [AC_MSG_ERROR([UCX >= 1.12 not found; install libucx-dev, or configure --without-ucx for the MPI transport only])])])
  AS_IF([test "$have_ucx" = yes],
    [AC_DEFINE([HAVE_UCX], [1], [Define to 1 to build the UCX transport])])
  AC_SUBST([UCX_CFLAGS])
  AC_SUBST([UCX_LIBS])
  AM_CONDITIONAL([MPIKVS_HAVE_UCX], [test "$have_ucx" = yes])
])

# Check is needed by `make check` only: without it the library, the plugin
# and the tools still build, and `make check` stops with what to install.
AC_DEFUN([MPIKVS_CHECK_CHECK], [
  PKG_CHECK_MODULES([CHECK], [check >= 0.9.10], [have_check=yes],
    [have_check=no
     AC_MSG_WARN([Check (unit tests) not found: `make check` needs it; install check])])
  AM_CONDITIONAL([MPIKVS_HAVE_CHECK], [test "$have_check" = yes])
])

# libfiu, for the tests that make system calls fail (fiu-run -x and its
# preloaded POSIX wrappers).  Optional: without it those tests are built
# no more and say so.
AC_DEFUN([MPIKVS_CHECK_FIU], [
  AC_CHECK_HEADER([fiu-control.h],
    [AC_CHECK_LIB([fiu], [fiu_enable], [have_fiu=yes], [have_fiu=no])],
    [have_fiu=no])
  AS_IF([test "$have_fiu" = yes], [AC_PATH_PROG([FIU_RUN], [fiu-run])])
  AS_IF([test "$have_fiu" = yes && test -z "$FIU_RUN"], [have_fiu=no])
  AS_IF([test "$have_fiu" != yes],
    [AC_MSG_WARN([libfiu not found: the fault-injection tests need it; install libfiu-dev fiu-utils])])
  AM_CONDITIONAL([MPIKVS_HAVE_FIU], [test "$have_fiu" = yes])
])

# libslurm, for mpikvs-stat to ask slurmctld whether a region's job is
# still alive.  Optional: without it mpikvs-stat judges by mappings only.
AC_DEFUN([MPIKVS_CHECK_LIBSLURM], [
  mpikvs_save_LIBS=$LIBS
  mpikvs_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  AS_IF([test -n "$SLURM_CPPFLAGS"], [LIBS="-L$with_slurm/lib $LIBS"])
  AC_CHECK_HEADER([slurm/slurm.h],
    [AC_CHECK_LIB([slurm], [slurm_load_job],
       [have_libslurm=yes
        SLURM_LIBS="${SLURM_CPPFLAGS:+-L$with_slurm/lib }-lslurm"
        AC_DEFINE([HAVE_LIBSLURM], [1], [Define to 1 to ask slurmctld about jobs through libslurm])],
       [have_libslurm=no])],
    [have_libslurm=no])
  LIBS=$mpikvs_save_LIBS
  CPPFLAGS=$mpikvs_save_CPPFLAGS
  AC_SUBST([SLURM_LIBS])
])

# SUNDIALS CVODE (stiff BDF with a dense direct solver), needed only by the
# reactive-transport demo.  --enable-demo requires it, --disable-demo skips
# it, and by default the demo is built when it is found.  Debian's
# libsundials-dev has no pkg-config files, so look for the header and the
# libraries.
AC_DEFUN([MPIKVS_CHECK_SUNDIALS], [
  AC_ARG_ENABLE([demo],
    [AS_HELP_STRING([--enable-demo],
      [build the reactive-transport demo, which needs SUNDIALS CVODE (default: when found)])],
    [], [enable_demo=auto])
  have_sundials=no
  AS_IF([test "$enable_demo" != no], [
    AC_CHECK_HEADER([cvode/cvode.h],
      [AC_CHECK_LIB([sundials_cvode], [CVodeCreate], [have_sundials=yes], [],
        [-lsundials_nvecserial])])])
  AS_CASE([$enable_demo:$have_sundials],
    [yes:no], [AC_MSG_ERROR([--enable-demo: SUNDIALS CVODE not found; install libsundials-dev])],
    [auto:no], [AC_MSG_WARN([SUNDIALS CVODE not found: the reactive-transport demo is not built; install libsundials-dev])])
  AS_IF([test "$have_sundials" = yes], [enable_demo=yes], [enable_demo=no])
  SUNDIALS_LIBS="-lsundials_cvode -lsundials_sunlinsoldense -lsundials_sunmatrixdense -lsundials_nvecserial -lm"
  AC_SUBST([SUNDIALS_LIBS])
  AM_CONDITIONAL([MPIKVS_DEMO], [test "$enable_demo" = yes])
])
