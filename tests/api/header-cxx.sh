#!/bin/sh
# header-cxx.sh - include/mpikvs.h compiles as C++ (tests/api/header.cpp)
# with g++ (or $CXX) at -std=c++11 and C++17, every warning an error,
# -Wmissing-field-initializers and -Wzero-as-null-pointer-constant
# included: MPIKVS_OPTIONS_INIT is for C++ projects too.  Compiles only
# (no MPI C++ library is linked; MPI's own C++ bindings are left out).
# Skipped (77) without a C++ compiler.  MPI_CFLAGS comes from the build
# (tests/api/local.mk).
src=${top_srcdir:-.}
cxx=${CXX:-g++}
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "SKIP: no C++ compiler ($cxx; Debian: apt-get install g++)"
    exit 77
fi
rc=0
for std in c++11 c++17; do
    # shellcheck disable=SC2086
    if "$cxx" -std=$std -fsyntax-only -Wall -Wextra -Werror -pedantic \
        -Wmissing-field-initializers -Wzero-as-null-pointer-constant \
        -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX $MPI_CFLAGS \
        -I"$src/include" "$src/tests/api/header.cpp"; then
        echo "PASS mpikvs.h as $std with $cxx"
    else
        echo "FAIL mpikvs.h as $std with $cxx"
        rc=1
    fi
done
exit $rc
