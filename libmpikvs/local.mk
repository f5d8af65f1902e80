##
# libmpikvs/: the library, the distributed hash table over MPI RMA.  Its
# public headers are in include/; the headers here are its own.
##
lib_LTLIBRARIES += libmpikvs/libmpikvs.la

libmpikvs_libmpikvs_la_SOURCES = \
	libmpikvs/absent.c \
	libmpikvs/async.c \
	libmpikvs/async.h \
	libmpikvs/batch.c \
	libmpikvs/batch.h \
	libmpikvs/bounded_comm.c \
	libmpikvs/bounded_comm.h \
	libmpikvs/bucket.c \
	libmpikvs/bucket.h \
	libmpikvs/bucket_far.c \
	libmpikvs/bucket_far.h \
	libmpikvs/clear.c \
	libmpikvs/clear.h \
	libmpikvs/close.c \
	libmpikvs/close.h \
	libmpikvs/counters.c \
	libmpikvs/describe.c \
	libmpikvs/describe.h \
	libmpikvs/env.c \
	libmpikvs/env.h \
	libmpikvs/errors.c \
	libmpikvs/errors.h \
	libmpikvs/fence.c \
	libmpikvs/forget.c \
	libmpikvs/forget.h \
	libmpikvs/handle.h \
	libmpikvs/key.h \
	libmpikvs/local.c \
	libmpikvs/local.h \
	libmpikvs/locks.c \
	libmpikvs/locks.h \
	libmpikvs/mpi_impl.c \
	libmpikvs/mpi_impl.h \
	libmpikvs/near.c \
	libmpikvs/near.h \
	libmpikvs/node_tier.h \
	libmpikvs/nodes.c \
	libmpikvs/nodes.h \
	libmpikvs/open.c \
	libmpikvs/open_env.c \
	libmpikvs/open_env.h \
	libmpikvs/open_region.c \
	libmpikvs/open_region.h \
	libmpikvs/open_resolve.c \
	libmpikvs/open_resolve.h \
	libmpikvs/ops.c \
	libmpikvs/ops.h \
	libmpikvs/persist.c \
	libmpikvs/persist.h \
	libmpikvs/persist_file.c \
	libmpikvs/persist_file.h \
	libmpikvs/round_key.c \
	libmpikvs/route.c \
	libmpikvs/route.h \
	libmpikvs/save_format.c \
	libmpikvs/save_format.h \
	libmpikvs/slot.c \
	libmpikvs/slot.h \
	libmpikvs/stats.c \
	libmpikvs/stats.h \
	libmpikvs/tier.c \
	libmpikvs/transport.c \
	libmpikvs/transport.h \
	libmpikvs/transport_mpi.c \
	libmpikvs/transport_mpi.h \
	libmpikvs/unlink_names.c \
	libmpikvs/unlink_names.h \
	libmpikvs/verify.c \
	libmpikvs/verify.h
# End of libmpikvs_libmpikvs_la_SOURCES
libmpikvs_libmpikvs_la_CPPFLAGS = $(SHM_CPPFLAGS) -I$(top_srcdir)/libmpikvs
# what the library's sources need, also where a test builds them in
LIBMPIKVS_CFLAGS = $(MPI_CFLAGS) $(XXHASH_CFLAGS) $(UCX_CFLAGS) -pthread
LIBMPIKVS_LIBS = shm/libkvshm.la $(MPI_LIBS) $(UCX_LIBS) -lpthread
libmpikvs_libmpikvs_la_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS)
libmpikvs_libmpikvs_la_LIBADD = $(LIBMPIKVS_LIBS)
if MPIKVS_HAVE_UCX
libmpikvs_libmpikvs_la_SOURCES += libmpikvs/transport_ucx.c \
	libmpikvs/transport_ucx.h \
	libmpikvs/transport_ucx_mem.c \
	libmpikvs/transport_ucx_mem.h \
	libmpikvs/transport_ucx_serve.c \
	libmpikvs/transport_ucx_serve.h \
	libmpikvs/transport_ucx_ship.c \
	libmpikvs/transport_ucx_ship.h \
	libmpikvs/transport_ucx_state.h \
	libmpikvs/transport_ucx_wait.c \
	libmpikvs/transport_ucx_wait.h
endif
# The ABI's version, libtool's current:revision:age (the soname is
# libmpikvs.so.CURRENT-AGE).  At each release whose library changed:
# revision + 1; then, if any interface (a function, or a struct the
# caller passes) was added, removed or changed: current + 1, revision 0;
# then, if only added (every older program still works, as the sized
# structs let a field or counter be): age + 1; if one was removed or
# changed incompatibly: age 0.  1:0:0 is the first ABI with sized
# options and statistics (mpikvs(7), HISTORY).
# The exported symbols are listed in libmpikvs.sym, one a line: the
# functions the public headers declare (tests/check-exports.sh).
libmpikvs_libmpikvs_la_LDFLAGS = $(AM_LDFLAGS) -version-info 1:0:0 \
	-export-symbols $(top_srcdir)/libmpikvs/libmpikvs.sym
EXTRA_libmpikvs_libmpikvs_la_DEPENDENCIES = libmpikvs/libmpikvs.sym
EXTRA_DIST += libmpikvs/libmpikvs.sym

include_HEADERS += \
	include/mpikvs.h \
	include/mpikvs_statistics.h \
	include/mpikvs_errors.h
# End of include_HEADERS
