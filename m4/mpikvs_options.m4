# SYNOPSIS
#   MPIKVS_ENABLE_SANITIZERS, MPIKVS_CHECK_TSAN, MPIKVS_ENABLE_WERROR
# DESCRIPTION
#   --enable-sanitizers builds everything with AddressSanitizer and
#   UndefinedBehaviorSanitizer (errors are fatal); MPIKVS_CHECK_TSAN sets
#   MPIKVS_HAVE_TSAN when $CC builds and runs a program with
#   -fsanitize=thread (not beside ASan), for tests/tsan; --enable-werror
#   turns warnings into errors, as CI builds.

AC_DEFUN([MPIKVS_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with ASan and UBSan])],
    [], [enable_sanitizers=no])
  MPIKVS_SANITIZER_CFLAGS=
  MPIKVS_SANITIZER_LDFLAGS=
  AS_IF([test "x$enable_sanitizers" = xyes], [
    mpikvs_san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    mpikvs_save_CFLAGS=$CFLAGS
    mpikvs_save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $mpikvs_san"
    LDFLAGS="$LDFLAGS $mpikvs_san"
    AC_MSG_CHECKING([whether $CC supports $mpikvs_san])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([$CC cannot build with sanitizers; install gcc (libasan, libubsan)])])
    CFLAGS=$mpikvs_save_CFLAGS
    LDFLAGS=$mpikvs_save_LDFLAGS
    MPIKVS_SANITIZER_CFLAGS="-g $mpikvs_san"
    MPIKVS_SANITIZER_LDFLAGS="$mpikvs_san"
  ])
  AM_CONDITIONAL([SANITIZERS], [test "x$enable_sanitizers" = xyes])
])

AC_DEFUN([MPIKVS_CHECK_TSAN], [
  have_tsan=no
  AS_IF([test "x$enable_sanitizers" = xyes],
    [have_tsan="no (not beside --enable-sanitizers)"],
    [mpikvs_save_CFLAGS=$CFLAGS
     mpikvs_save_LDFLAGS=$LDFLAGS
     CFLAGS="$CFLAGS -fsanitize=thread"
     LDFLAGS="$LDFLAGS -fsanitize=thread"
     AC_MSG_CHECKING([whether $CC builds and runs programs with -fsanitize=thread])
     dnl run too: a kernel whose mappings TSan does not expect fails at start
     AC_RUN_IFELSE([AC_LANG_PROGRAM([], [])], [have_tsan=yes], [],
       [have_tsan="no (cross-compiling)"])
     AC_MSG_RESULT([$have_tsan])
     CFLAGS=$mpikvs_save_CFLAGS
     LDFLAGS=$mpikvs_save_LDFLAGS])
  AM_CONDITIONAL([MPIKVS_HAVE_TSAN], [test "$have_tsan" = yes])
])

AC_DEFUN([MPIKVS_ENABLE_WERROR], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [], [enable_werror=no])
  MPIKVS_WERROR_CFLAGS=
  AS_IF([test "x$enable_werror" = xyes], [MPIKVS_WERROR_CFLAGS=-Werror])
])

# --enable-fuzzing: build the libFuzzer targets with clang (make fuzz).
AC_DEFUN([MPIKVS_ENABLE_FUZZING], [
  AC_ARG_ENABLE([fuzzing],
    [AS_HELP_STRING([--enable-fuzzing], [build libFuzzer targets with clang for make fuzz])],
    [], [enable_fuzzing=no])
  AC_ARG_VAR([FUZZ_CC], [clang with libFuzzer, for --enable-fuzzing (default: clang)])
  AS_IF([test "x$enable_fuzzing" = xyes], [
    AS_IF([test -z "$FUZZ_CC"], [AC_PATH_PROGS([FUZZ_CC], [clang clang-14], [no])])
    AS_IF([test "x$FUZZ_CC" = xno],
      [AC_MSG_ERROR([--enable-fuzzing needs clang; install clang and libclang-rt-14-dev])])
    AC_MSG_CHECKING([whether $FUZZ_CC links a libFuzzer target])
    cat > conftest-fuzz.c <<'_EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
_EOF
    AS_IF([$FUZZ_CC -fsanitize=fuzzer conftest-fuzz.c -o conftest-fuzz >&AS_MESSAGE_LOG_FD 2>&1],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       rm -f conftest-fuzz.c conftest-fuzz
       AC_MSG_ERROR([$FUZZ_CC cannot build with -fsanitize=fuzzer; install libclang-rt-14-dev])])
    rm -f conftest-fuzz.c conftest-fuzz
  ])
  AM_CONDITIONAL([FUZZING], [test "x$enable_fuzzing" = xyes])
])
