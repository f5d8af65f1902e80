# SYNOPSIS
#   MPIKVS_CHECK_FORTRAN, MPIKVS_CHECK_PYTHON
# DESCRIPTION
#   The bindings of other languages, each built by default when what it
#   needs is found, left out (and said so in the summary) when not, and
#   required by --enable-X.
#
#   MPIKVS_PROG_FC (before LT_INIT) and MPIKVS_CHECK_FORTRAN: the module mpikvs (fortran/) is compiled by the
#   Fortran wrapper of the build's MPI (MPIFC; default: the one beside
#   MPICC, mpicc -> mpifort, mpicc.mpich -> mpifort.mpich), because it
#   uses that MPI's mpi_f08 module; its C part needs gfortran's
#   ISO_Fortran_binding.h.  Sets FC, FCFLAGS_f90, have_fortran and the
#   conditional MPIKVS_FORTRAN.
#
#   MPIKVS_CHECK_PYTHON: the extension module mpikvs (python/) needs
#   Python 3's headers (python3-dev) and mpi4py's C API (python3-mpi4py),
#   and that mpi4py be built for the build's MPI: Debian's is Open MPI's,
#   so an MPICH build leaves Python out.  Sets PYTHON_CPPFLAGS,
#   MPI4PY_CPPFLAGS, PYTHON_EXT_SUFFIX, have_python and the conditional
#   MPIKVS_PYTHON; pyexecdir is where the Python looks under exec_prefix.
AC_DEFUN([MPIKVS_PROG_FC], [
  AC_REQUIRE([MPIKVS_CHECK_MPI])
  AC_ARG_ENABLE([fortran],
    [AS_HELP_STRING([--enable-fortran],
      [build the Fortran module mpikvs (default: when the MPI's Fortran wrapper and gfortran are found)])],
    [], [enable_fortran=auto])
  AC_ARG_VAR([MPIFC], [Fortran wrapper of the MPI (default: the mpifort beside MPICC)])
  AS_IF([test "x$enable_fortran" != xno && test -z "$MPIFC"],
    [mpikvs_fc=`basename "$MPICC" | sed 's/mpicc/mpifort/'`
     AS_IF([test -x "`dirname "$MPICC"`/$mpikvs_fc"],
       [MPIFC=`dirname "$MPICC"`/$mpikvs_fc], [MPIFC=$mpikvs_fc])])
  AS_IF([test "x$enable_fortran" = xno], [FC=no], [FC=$MPIFC])
  # automake and libtool need FC's variables whether or not the module
  # is built; before LT_INIT, so that libtool configures its FC tag
  AC_PROG_FC([$FC])
])

AC_DEFUN([MPIKVS_CHECK_FORTRAN], [
  AC_REQUIRE([MPIKVS_PROG_FC])
  have_fortran=no
  fortran_why=
  AS_IF([test "x$enable_fortran" = xno],
    [fortran_why="--disable-fortran"],
   [test -z "$FC" || test "x$FC" = xno],
    [fortran_why="no Fortran wrapper $MPIFC"],
    [AC_LANG_PUSH([Fortran])
     AC_FC_SRCEXT([f90], [], [fortran_why="$FC cannot compile .f90 files (install gfortran, or name the MPI's Fortran wrapper with MPIFC=)"])
     AS_IF([test -z "$fortran_why"],
       [AC_MSG_CHECKING([whether $FC compiles use mpi_f08 and use mpi])
        AC_COMPILE_IFELSE([AC_LANG_SOURCE([[
program t
  use mpi_f08, only: MPI_Comm, MPI_COMM_WORLD
  type(MPI_Comm) :: c
  c = MPI_COMM_WORLD
end program t]])],
          [AC_COMPILE_IFELSE([AC_LANG_SOURCE([[
program t
  use mpi, only: MPI_COMM_WORLD
  integer :: c
  c = MPI_COMM_WORLD
end program t]])],
             [AC_MSG_RESULT([yes])],
             [AC_MSG_RESULT([no])
              fortran_why="$FC cannot compile use mpi"])],
          [AC_MSG_RESULT([no])
           fortran_why="$FC cannot compile use mpi_f08 (install gfortran)"])])
     AC_LANG_POP([Fortran])
     AS_IF([test -z "$fortran_why"],
       [AC_CHECK_HEADER([ISO_Fortran_binding.h], [],
         [fortran_why="no ISO_Fortran_binding.h for $CC (install gfortran)"])])])
  AS_IF([test -z "$fortran_why"], [have_fortran=yes])
  # where make install puts mpikvs.mod: beside the MPIs' module files in
  # Debian's layout (module format 15: gfortran 8 to 14); said once here
  # for fortran/local.mk and fortran/mpikvs-fortran.pc
  AC_ARG_VAR([fmoddir], [where the Fortran module file mpikvs.mod is installed (default: LIBDIR/fortran/gfortran-mod-15/mpikvs)])
  AS_IF([test -z "$fmoddir"], [fmoddir='${libdir}/fortran/gfortran-mod-15/mpikvs'])
  AS_CASE([$enable_fortran:$have_fortran],
    [yes:no], [AC_MSG_ERROR([--enable-fortran: $fortran_why])],
    [auto:no], [AC_MSG_WARN([the Fortran module is not built: $fortran_why])])
  AM_CONDITIONAL([MPIKVS_FORTRAN], [test "$have_fortran" = yes])
])

AC_DEFUN([MPIKVS_CHECK_PYTHON], [
  AC_REQUIRE([MPIKVS_CHECK_MPI])
  AC_ARG_ENABLE([python],
    [AS_HELP_STRING([--enable-python],
      [build the Python module mpikvs (default: when python3-dev and python3-mpi4py for this MPI are found)])],
    [], [enable_python=auto])
  have_python=no
  python_why=
  # A Python first in PATH (pyenv's, a virtualenv's) often has no
  # mpi4py while the system's has: without PYTHON=, take the first of
  # PATH's and the system's that imports mpi4py, else AM_PATH_PYTHON's.
  AS_IF([test "x$enable_python" != xno && test -z "$PYTHON"], [
    AC_MSG_CHECKING([for a Python 3 with mpi4py])
    for mpikvs_py in python3 python /usr/bin/python3; do
      AS_IF([$mpikvs_py -c 'import sys, mpi4py; sys.exit(sys.version_info < (3, 7))' >/dev/null 2>&1],
        [PYTHON=`command -v $mpikvs_py`; break])
    done
    AC_MSG_RESULT([${PYTHON:-none}])])
  AS_IF([test "x$enable_python" = xno],
    [python_why="--disable-python"; PYTHON=:],
    [AM_PATH_PYTHON([3.7], [], [:])])
  AS_IF([test -z "$python_why" && test "x$PYTHON" = x:],
    [python_why="no Python 3 (install python3-dev)"])
  AS_IF([test -z "$python_why"], [
    AC_MSG_CHECKING([for Python.h of $PYTHON])
    mpikvs_pyinc=`$PYTHON -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])' 2>/dev/null`
    AS_IF([test -n "$mpikvs_pyinc" && test -f "$mpikvs_pyinc/Python.h"],
      [AC_MSG_RESULT([$mpikvs_pyinc])
       PYTHON_CPPFLAGS="-I$mpikvs_pyinc"
       PYTHON_EXT_SUFFIX=`$PYTHON -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))'`],
      [AC_MSG_RESULT([no])
       python_why="no Python.h for $PYTHON (install python3-dev)"])])
  AS_IF([test -z "$python_why"], [
    AC_MSG_CHECKING([for mpi4py's C API])
    mpikvs_mpi4py=`$PYTHON -c 'import mpi4py; print(mpi4py.get_include())' 2>/dev/null`
    AS_IF([test -n "$mpikvs_mpi4py" && test -f "$mpikvs_mpi4py/mpi4py/mpi4py.h"],
      [AC_MSG_RESULT([$mpikvs_mpi4py])
       MPI4PY_CPPFLAGS="-I$mpikvs_mpi4py"],
      [AC_MSG_RESULT([no])
       python_why="no mpi4py for $PYTHON (install python3-mpi4py)"])])
  AS_IF([test -z "$python_why"], [
    # mpi4py.MPI links one MPI library; a module of another MPI's ABI in
    # the same process would crash.  get_vendor() needs no MPI_Init.
    AC_MSG_CHECKING([which MPI mpi4py is built for])
    mpikvs_vendor=`$PYTHON -c 'import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; print(MPI.get_vendor()[[0]])' 2>/dev/null`
    AC_MSG_RESULT([${mpikvs_vendor:-unknown}])
    AS_CASE([$MPI_FAMILY:$mpikvs_vendor],
      [openmpi:"Open MPI"|mpich:MPICH|mpich:"Intel MPI"|mpich:MVAPICH*|other:*], [],
      [python_why="mpi4py is built for ${mpikvs_vendor:-another MPI}, this build for $MPI_FAMILY"])])
  AS_IF([test -z "$python_why"], [have_python=yes
    # Where this Python looks under a prefix: Debian's is
    # lib/python3.X/dist-packages (/usr/local's is on its sys.path),
    # which AM_PATH_PYTHON's site-packages is not.
    mpikvs_pylib=`$PYTHON -c 'import sysconfig; p = sysconfig.get_path("platlib"); print(p[[p.rfind("/lib/") + 1:]])'`
    AS_CASE([$mpikvs_pylib], [lib/python*], [pyexecdir="\${exec_prefix}/$mpikvs_pylib"])])
  AS_CASE([$enable_python:$have_python],
    [yes:no], [AC_MSG_ERROR([--enable-python: $python_why])],
    [auto:no], [AC_MSG_WARN([the Python module is not built: $python_why])])
  AC_SUBST([PYTHON_CPPFLAGS])
  AC_SUBST([MPI4PY_CPPFLAGS])
  AC_SUBST([PYTHON_EXT_SUFFIX])
  AM_CONDITIONAL([MPIKVS_PYTHON], [test "$have_python" = yes])
])
