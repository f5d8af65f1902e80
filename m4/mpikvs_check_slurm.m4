# SYNOPSIS
#   MPIKVS_CHECK_SLURM
# DESCRIPTION
#   Find <slurm/spank.h>, in PREFIX/include with --with-slurm=PREFIX, else
#   in the system include path.  Sets SLURM_CPPFLAGS.  The SPANK plugin is
#   built against these headers and loads only into that Slurm release.
#   --with-spank-dir=DIR says where spank_mpikvs.so goes (spankdir;
#   default LIBDIR/slurm).
AC_DEFUN([MPIKVS_CHECK_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=PREFIX], [Slurm installation prefix (headers in PREFIX/include)])],
    [], [with_slurm=check])
  AS_CASE(["$with_slurm"],
    [no], [AC_MSG_ERROR([mpikvs needs Slurm's spank.h; --without-slurm is not supported])],
    [yes|check], [SLURM_CPPFLAGS=],
    [SLURM_CPPFLAGS="-I$with_slurm/include"])
  mpikvs_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  AC_CHECK_HEADER([slurm/spank.h], [],
    [AS_IF([test "x$with_slurm" = xcheck || test "x$with_slurm" = xyes],
       [AC_MSG_ERROR([slurm/spank.h not found; install libslurm-dev or use --with-slurm=PREFIX])],
       [AC_MSG_ERROR([slurm/spank.h not found under $with_slurm/include; check --with-slurm=$with_slurm])])])
  CPPFLAGS=$mpikvs_save_CPPFLAGS
  AC_SUBST([SLURM_CPPFLAGS])
  AC_ARG_WITH([spank-dir],
    [AS_HELP_STRING([--with-spank-dir=DIR], [where to install spank_mpikvs.so (default LIBDIR/slurm)])],
    [spankdir=$withval], [spankdir='${libdir}/slurm'])
  AC_SUBST([spankdir])
])
