##
# python/: the Python module mpikvs (mpikvs_python(3)), a C extension
# over mpi4py's C API, installed as $(pyexecdir)/mpikvs.so.
##
if MPIKVS_PYTHON
pyexec_LTLIBRARIES = python/mpikvs.la
python_mpikvs_la_SOURCES = \
	python/batches.c \
	python/buffers.c \
	python/call.c \
	python/comm.c \
	python/errors.c \
	python/handle.c \
	python/mpikvs_module.c \
	python/mpikvs_py.h
python_mpikvs_la_CPPFLAGS = $(PYTHON_CPPFLAGS) $(MPI4PY_CPPFLAGS) -I$(top_srcdir)/include
python_mpikvs_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
python_mpikvs_la_LIBADD = libmpikvs/libmpikvs.la $(MPI_LIBS)
# a module Python opens by name: mpikvs.so, no version, no archive,
# nothing exported but its entry point
python_mpikvs_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^PyInit_mpikvs$$'

python_installed = $(DESTDIR)$(pyexecdir)/mpikvs

# the example, beside the C ones (etc/local.mk's examplesdir)
pyexamplesdir = $(docdir)/examples
dist_pyexamples_DATA = examples/surrogate.py

man_MANS += man/mpikvs_python.3
endif
# Nor a libtool archive beside it in Python's directory; libtool's
# uninstall finds the .so through the .la, so it is removed by name.
# (The hooks are unconditional, as automake wants; without the module
# python_installed is empty and they do nothing.)
install-exec-hook: install-exec-python
install-exec-python:
	@if test -n "$(python_installed)"; then rm -f "$(python_installed).la"; fi
uninstall-hook: uninstall-python
uninstall-python:
	@if test -n "$(python_installed)"; then rm -f "$(python_installed).so"; fi
EXTRA_DIST += \
	man/mpikvs_python.3.in
