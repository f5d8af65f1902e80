##
# tests/python/: the Python module and its example under mpirun.
##
if MPIKVS_PYTHON
TESTS += \
	tests/python/examples.sh \
	tests/python/pytest.sh

# the C side of tests/python/bench.py (not run by the suite)
check_PROGRAMS += tests/python/bench-c
tests_python_bench_c_SOURCES = tests/python/bench-c.c
tests_python_bench_c_CPPFLAGS = -I$(top_srcdir)/include
tests_python_bench_c_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_python_bench_c_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)
endif
EXTRA_DIST += \
	tests/python/bench.py \
	tests/python/examples.sh \
	tests/python/no_numpy.py \
	tests/python/pytest.sh \
	tests/python/python-env.sh \
	tests/python/run_pytest.py \
	tests/python/test_mpikvs.py
