##
# mpi-kvs/: libmpikvs, the distributed hash table over MPI RMA.
##
lib_LTLIBRARIES += libmpikvs.la

libmpikvs_la_SOURCES = \
	mpi-kvs/batch.c \
	mpi-kvs/env.c \
	mpi-kvs/handle.h \
	mpi-kvs/locks.c \
	mpi-kvs/nodes.c \
	mpi-kvs/open.c \
	mpi-kvs/ops.c \
	mpi-kvs/osc.c \
	mpi-kvs/slot.c \
	mpi-kvs/slot.h \
	mpi-kvs/stats.c \
	mpi-kvs/tier.c
# End of libmpikvs_la_SOURCES
libmpikvs_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) $(XXHASH_CFLAGS)
libmpikvs_la_LIBADD = shm/libkvshm.la $(MPI_LIBS)
libmpikvs_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-export-symbols-regex '^mpikvs_'

include_HEADERS += \
	mpi-kvs/mpikvs.h
# End of include_HEADERS (mpi-kvs)
