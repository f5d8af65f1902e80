##
# tests/abi/: the ABI kept.  v1/ is include/ as it was when the library's
# version became 1:0:0 (libmpikvs/local.mk), never edited: abi_v1 is
# built against it and runs against the library of the tree
# (run-abi-test.sh), so that a field or counter added cannot break a
# program built before.  header-cxx.sh compiles include/mpikvs.h as C++.
##
check_PROGRAMS += tests/abi/abi_v1
TESTS += \
	tests/abi/header-cxx.sh \
	tests/abi/run-abi-test.sh
# End of TESTS (abi)

# not TESTS_CPPFLAGS: the program sees v1's header, not include/
tests_abi_abi_v1_SOURCES = tests/abi/abi_v1.c
tests_abi_abi_v1_CPPFLAGS =
tests_abi_abi_v1_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_abi_abi_v1_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

# header-cxx.sh compiles with MPI's include directories
AM_TESTS_ENVIRONMENT = MPI_CFLAGS='$(MPI_CFLAGS)'; export MPI_CFLAGS;

EXTRA_DIST += \
	tests/abi/header-cxx.sh \
	tests/abi/header.cpp \
	tests/abi/run-abi-test.sh \
	tests/abi/v1/mpikvs.h \
	tests/abi/v1/mpikvs_counters.h \
	tests/abi/v1/mpikvs_errors.h
# End of EXTRA_DIST (abi)
