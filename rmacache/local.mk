##
# rmacache/: libmpikvs-rmacache, a PMPI interposer that caches the data
# of MPI_Get for unchanged MPI programs (mpikvs-rmacache(7)).  Loaded by
# LD_PRELOAD, so it is a plain shared object without a version, and it
# exports the MPI_ calls only.  The wrappers of the calls that order a
# process after another's write are generated from mpi.h at build time.
##
lib_LTLIBRARIES += rmacache/libmpikvs-rmacache.la

rmacache_libmpikvs_rmacache_la_SOURCES = \
	rmacache/advice.c \
	rmacache/cache.c \
	rmacache/config.c \
	rmacache/index.c \
	rmacache/index.h \
	rmacache/node.c \
	rmacache/node.h \
	rmacache/node_region.c \
	rmacache/repeats.c \
	rmacache/rma.c \
	rmacache/rmacache.h \
	rmacache/sync.c \
	rmacache/win.c
# End of rmacache_libmpikvs_rmacache_la_SOURCES
nodist_rmacache_libmpikvs_rmacache_la_SOURCES = rmacache/ordering.c
rmacache_libmpikvs_rmacache_la_CPPFLAGS = $(SHM_CPPFLAGS) -I$(top_srcdir)/rmacache
# XXHASH_CFLAGS: repeats.c hashes what a transparent window fetched
rmacache_libmpikvs_rmacache_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) $(XXHASH_CFLAGS) -pthread -O2
# shm/: the node tier's regions; common/: the sizes of
# MPIKVS_RMACACHE_BYTES (kvshm_parse_size)
rmacache_libmpikvs_rmacache_la_LIBADD = shm/libkvshm.la $(MPI_LIBS) -lpthread
# -shared: no static archive; nothing links it.
rmacache_libmpikvs_rmacache_la_LDFLAGS = $(AM_LDFLAGS) -shared -avoid-version \
	-export-symbols-regex '^MPI_'

# Nor a libtool archive: only LD_PRELOAD loads it, by the .so's name.
# libtool's uninstall finds the .so through the .la, so it is removed
# here by name.
install-exec-hook: install-exec-rmacache
install-exec-rmacache:
	rm -f $(DESTDIR)$(libdir)/libmpikvs-rmacache.la
uninstall-hook: uninstall-rmacache
uninstall-rmacache:
	rm -f $(DESTDIR)$(libdir)/libmpikvs-rmacache.so

rmacache/ordering.c: $(top_srcdir)/rmacache/ordering.list $(top_srcdir)/rmacache/gen-ordering.sh
	$(AM_V_GEN)$(MKDIR_P) rmacache && \
	$(SHELL) $(top_srcdir)/rmacache/gen-ordering.sh \
		$(top_srcdir)/rmacache/ordering.list $(CC) -E $(MPI_CFLAGS) >$@.tmp && \
	mv $@.tmp $@
BUILT_SOURCES += rmacache/ordering.c
CLEANFILES += rmacache/ordering.c rmacache/ordering.c.tmp

EXTRA_DIST += \
	rmacache/gen-ordering.sh \
	rmacache/ordering.list
# End of EXTRA_DIST (rmacache)
