# SYNOPSIS
#   MPIKVS_CHECK_MPI
# DESCRIPTION
#   The MPI the user names (MPICC, an argument or the environment; default
#   mpicc) is the MPI of the build, or configure stops saying why.  Its
#   flags come from the wrapper: Open MPI's --showme:compile/--showme:link,
#   or the MPICH family's -compile_info/-link_info (MPICH, Intel MPI,
#   MVAPICH); a wrapper that prints neither (Cray's cc, say) must be the
#   compiler itself (CC=$MPICC).  Sets and substitutes MPICC (absolute),
#   MPI_CFLAGS, MPI_LIBS, MPI_FAMILY (openmpi, mpich or other, from mpi.h),
#   MPI_LIBRARY_VERSION (MPI_Get_library_version's first line, to its
#   first comma) and MPIEXEC, the launcher of that MPI.
AC_DEFUN([MPIKVS_CHECK_MPI], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper of the MPI to build with (default: mpicc)])
  AC_ARG_VAR([MPIEXEC], [the launcher of that MPI (default: the mpiexec beside MPICC)])
  mpikvs_mpi_install="install libopenmpi-dev and openmpi-bin, or libmpich-dev and mpich, or name your MPI's C wrapper with MPICC="
  AS_IF([test -z "$MPICC"], [MPICC=mpicc])
  AS_CASE([$MPICC],
    [*/*], [AS_IF([test -x "$MPICC"], [],
              [AC_MSG_ERROR([MPICC=$MPICC is not an executable file; $mpikvs_mpi_install])])],
    [mpikvs_mpicc_path=`command -v "$MPICC" 2>/dev/null`
     AS_CASE([$mpikvs_mpicc_path], [*/*], [],
       [AC_MSG_ERROR([MPICC=$MPICC: no such program on PATH; $mpikvs_mpi_install])])
     MPICC=$mpikvs_mpicc_path])
  # Debian's mpicc is a chain of alternatives (mpicc -> /etc/alternatives/mpi
  # -> mpicc.openmpi -> opal_wrapper): keep the last link named mpicc*, the
  # wrapper as its MPI names it, so that the launcher found beside it, and
  # what the install records (cmake/), stay that MPI's when the
  # alternative changes.
  mpikvs_mpicc_named=$MPICC
  mpikvs_link=$MPICC
  mpikvs_hops=0
  while test -h "$mpikvs_link" && test $mpikvs_hops -lt 16; do
    mpikvs_hops=`expr $mpikvs_hops + 1`
    mpikvs_to=`readlink "$mpikvs_link"`
    AS_CASE([$mpikvs_to], [/*], [],
      [mpikvs_to=`dirname "$mpikvs_link"`/$mpikvs_to])
    AS_CASE([`basename "$mpikvs_to"`], [mpicc*], [MPICC=$mpikvs_to])
    mpikvs_link=$mpikvs_to
  done

  AC_MSG_CHECKING([how $MPICC gives its flags])
  AS_IF([MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` &&
         MPI_LIBS=`$MPICC --showme:link 2>/dev/null` && test -n "$MPI_LIBS"],
    [AC_MSG_RESULT([--showme (Open MPI)])],
   [mpikvs_ci=`$MPICC -compile_info 2>/dev/null` &&
    mpikvs_li=`$MPICC -link_info 2>/dev/null` && test -n "$mpikvs_li"],
    [AC_MSG_RESULT([-compile_info and -link_info (MPICH family)])
     # Both print the whole command: the compiler, then its flags.  What
     # compiles goes to MPI_CFLAGS, what links to MPI_LIBS.
     MPI_CFLAGS=
     for mpikvs_w in `echo "$mpikvs_ci" | sed 's/^[[^ ]]* //'`; do
       AS_CASE([$mpikvs_w], [-I*|-D*|-pthread|-isystem*],
         [MPI_CFLAGS="$MPI_CFLAGS $mpikvs_w"])
     done
     MPI_LIBS=
     for mpikvs_w in `echo "$mpikvs_li" | sed 's/^[[^ ]]* //'`; do
       AS_CASE([$mpikvs_w], [-L*|-l*|-Wl,*|-pthread|*.so|*.so.*|*.a],
         [MPI_LIBS="$MPI_LIBS $mpikvs_w"])
     done
     MPI_CFLAGS=`echo $MPI_CFLAGS`
     MPI_LIBS=`echo $MPI_LIBS`],
   [test "x`command -v "$CC" 2>/dev/null`" = "x$mpikvs_mpicc_named"],
    [AC_MSG_RESULT([none: it is the compiler (CC=$MPICC)])
     MPI_CFLAGS=
     MPI_LIBS=],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([$MPICC prints its flags neither with --showme:compile (Open MPI) nor with -compile_info (MPICH, Intel MPI, MVAPICH): is it an MPI C wrapper?  $mpikvs_mpi_install; or, for a wrapper that is the compiler (Cray's cc), configure with CC=$MPICC])])

  AC_MSG_CHECKING([whether $MPICC's flags link an MPI program])
  AC_LANG_PUSH([C])
  mpikvs_save_CFLAGS=$CFLAGS
  mpikvs_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $MPI_CFLAGS"
  LIBS="$MPI_LIBS $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                  [[MPI_Init(0, 0); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([$MPICC: an MPI program built with its flags ($CC $MPI_CFLAGS ... $MPI_LIBS) does not link: is it an MPI C wrapper, its MPI's library installed?  See config.log; $mpikvs_mpi_install])])

  # The family, from the header: the library may be another of its ABI at
  # run time, which libmpikvs asks itself (libmpikvs/mpi_impl.c).
  AC_MSG_CHECKING([which MPI family mpi.h is])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef OPEN_MPI
#error not Open MPI
#endif]])], [MPI_FAMILY=openmpi],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef MPICH_VERSION
#error not MPICH
#endif]])], [MPI_FAMILY=mpich], [MPI_FAMILY=other])])
  AC_MSG_RESULT([$MPI_FAMILY])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#if MPI_VERSION < 3 || (MPI_VERSION == 3 && MPI_SUBVERSION < 1)
#error older than MPI-3.1
#endif]])], [],
    [AC_MSG_ERROR([$MPICC's mpi.h is older than MPI-3.1, which mpikvs needs (MPI_Win_lock_all, MPI_Fetch_and_op, the MPI_T interface)])])

  # MPI_Get_library_version may be called before MPI_Init (MPI-3.1,
  # 8.1.1): no launcher is needed.
  AC_MSG_CHECKING([the MPI library's version])
  AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#include <stdio.h>]], [[
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    FILE *f = fopen("conftest.mpiver", "w");
    if (!f || MPI_Get_library_version(v, &len) != MPI_SUCCESS)
        return 1;
    fprintf(f, "%s\n", v);
    return fclose(f) != 0;]])],
    [MPI_LIBRARY_VERSION=`sed -n '/[[^[:space:]]]/{s/[[[:space:]]][[[:space:]]]*/ /g;s/^ //;s/,.*//;s/ *$//;p;q;}' conftest.mpiver`],
    [AC_MSG_RESULT([failed])
     AC_MSG_ERROR([a program built with $MPICC's flags does not run (MPI_Get_library_version); see config.log: LD_LIBRARY_PATH may lack the MPI library])],
    [MPI_LIBRARY_VERSION="unknown (cross-compiling)"])
  rm -f conftest.mpiver
  AC_MSG_RESULT([$MPI_LIBRARY_VERSION])
  CFLAGS=$mpikvs_save_CFLAGS
  LIBS=$mpikvs_save_LIBS
  AC_LANG_POP([C])

  # The launcher beside the wrapper: mpicc.mpich -> mpiexec.mpich.
  AS_IF([test -z "$MPIEXEC"],
    [mpikvs_dir=`dirname "$MPICC"`
     mpikvs_base=`basename "$MPICC"`
     for mpikvs_l in `echo "$mpikvs_base" | sed 's/mpicc/mpiexec/'` \
                     `echo "$mpikvs_base" | sed 's/mpicc/mpirun/'`; do
       AS_IF([test "x$mpikvs_l" != "x$mpikvs_base" && test -x "$mpikvs_dir/$mpikvs_l"],
         [MPIEXEC=$mpikvs_dir/$mpikvs_l; break])
     done])
  AS_IF([test -z "$MPIEXEC"], [AC_PATH_PROGS([MPIEXEC], [mpiexec mpirun], [no])])
  AS_IF([test "x$MPIEXEC" = xno],
    [AC_MSG_ERROR([no mpiexec beside $MPICC nor on PATH; install your MPI's launcher (openmpi-bin, mpich), or name it with MPIEXEC=])])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPI_FAMILY])
  AC_SUBST([MPI_LIBRARY_VERSION])
  AM_CONDITIONAL([MPIKVS_OPENMPI], [test "x$MPI_FAMILY" = xopenmpi])
])
