# SYNOPSIS
#   MPIKVS_CHECK_MPI
# DESCRIPTION
#   Find Open MPI's compiler wrapper (MPICC, overridable) and check that it
#   compiles and links an MPI program.  Fails naming the Debian packages.
AC_DEFUN([MPIKVS_CHECK_MPI], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  AC_PATH_PROGS([MPICC], [mpicc], [no])
  AS_IF([test "x$MPICC" = xno],
    [AC_MSG_ERROR([mpicc not found; install libopenmpi-dev and openmpi-bin, or set MPICC=/path/to/mpicc])])
  AC_MSG_CHECKING([whether $MPICC links an MPI program])
  AC_LANG_PUSH([C])
  mpikvs_save_CC=$CC
  CC=$MPICC
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                  [[MPI_Init(0, 0); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([$MPICC cannot build an MPI program; install libopenmpi-dev])])
  CC=$mpikvs_save_CC
  AC_LANG_POP([C])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [no])
  AS_IF([test "x$MPIRUN" = xno],
    [AC_MSG_ERROR([mpirun not found; install openmpi-bin])])
])

# The MPI flags, so libmpikvs and MPI programs build with the ordinary CC
# (one compiler for the whole tree, sanitizers included).
AC_DEFUN([MPIKVS_MPI_FLAGS], [
  MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
  MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
  AS_IF([test -z "$MPI_LIBS"],
    [AC_MSG_ERROR([$MPICC does not print its flags (--showme); mpikvs needs Open MPI: install libopenmpi-dev])])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
])
