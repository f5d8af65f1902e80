##
# tests/api/: the public interface.  The ABI kept: v1/ is include/ as
# it was when the library's version became 1:0:0 (libmpikvs/local.mk),
# never edited: abi_v1 is built against it and runs against the library
# of the tree (run-abi-test.sh), so that a field or counter added cannot
# break a program built before.  header-cxx.sh compiles include/mpikvs.h as C++.
# check-errors.sh holds mpikvs_strerror and the man pages' tables of
# return codes against their list (errors_list prints it).
##
check_PROGRAMS += \
	tests/api/abi_v1 \
	tests/api/errors_list
# End of check_PROGRAMS (api)
TESTS += \
	tests/api/check-errors.sh \
	tests/api/header-cxx.sh \
	tests/api/run-abi-test.sh
# End of TESTS (api)

# not TESTS_CPPFLAGS: the program sees v1's header, not include/
tests_api_abi_v1_SOURCES = tests/api/abi_v1.c
tests_api_abi_v1_CPPFLAGS =
tests_api_abi_v1_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_api_abi_v1_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_api_errors_list_SOURCES = tests/api/errors_list.c
tests_api_errors_list_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_api_errors_list_LDADD = shm/libkvshm.la

# header-cxx.sh compiles with MPI's include directories
AM_TESTS_ENVIRONMENT = MPI_CFLAGS='$(MPI_CFLAGS)'; export MPI_CFLAGS;

EXTRA_DIST += \
	tests/api/check-errors.sh \
	tests/api/header-cxx.sh \
	tests/api/header.cpp \
	tests/api/run-abi-test.sh \
	tests/api/v1/mpikvs.h \
	tests/api/v1/mpikvs_errors.h \
	tests/api/v1/mpikvs_statistics.h
# End of EXTRA_DIST (api)
