##
# libmpikvs/: the library, the distributed hash table over MPI RMA.  Its
# public headers are in include/; the headers here are its own.
##
lib_LTLIBRARIES += libmpikvs/libmpikvs.la

libmpikvs_libmpikvs_la_SOURCES = \
	libmpikvs/absent.c \
	libmpikvs/async.c \
	libmpikvs/batch.c \
	libmpikvs/batch.h \
	libmpikvs/bounded_comm.c \
	libmpikvs/bounded_comm.h \
	libmpikvs/bucket.c \
	libmpikvs/bucket.h \
	libmpikvs/bucket_far.c \
	libmpikvs/bucket_far.h \
	libmpikvs/counters.c \
	libmpikvs/describe.c \
	libmpikvs/describe.h \
	libmpikvs/env.c \
	libmpikvs/env.h \
	libmpikvs/errors.c \
	libmpikvs/errors.h \
	libmpikvs/fence.c \
	libmpikvs/handle.h \
	libmpikvs/key.h \
	libmpikvs/local.c \
	libmpikvs/local.h \
	libmpikvs/locks.c \
	libmpikvs/locks.h \
	libmpikvs/mpi_impl.c \
	libmpikvs/mpi_impl.h \
	libmpikvs/node_tier.h \
	libmpikvs/nodes.c \
	libmpikvs/nodes.h \
	libmpikvs/open.c \
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
	libmpikvs/unlink_names.h
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
libmpikvs_libmpikvs_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-export-symbols-regex '^mpikvs_'

include_HEADERS += \
	include/mpikvs.h \
	include/mpikvs_counters.h \
	include/mpikvs_errors.h
# End of include_HEADERS
