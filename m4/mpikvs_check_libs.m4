# SYNOPSIS
#   MPIKVS_CHECK_JANSSON, MPIKVS_CHECK_XXHASH, MPIKVS_CHECK_CHECK
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

AC_DEFUN([MPIKVS_CHECK_CHECK], [
  PKG_CHECK_MODULES([CHECK], [check >= 0.9.10], [],
    [AC_MSG_ERROR([Check (unit tests) not found; install check])])
])
