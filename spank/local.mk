##
# spank/: spank_mpikvs.so, the Slurm SPANK plugin.  It exports only the
# slurm_spank_* entry points and the symbols Slurm looks up by name;
# Slurm's own functions are resolved in the process that loads it.
##
spank_LTLIBRARIES = spank/spank_mpikvs.la

spank_spank_mpikvs_la_SOURCES = \
	spank/alloc.c \
	spank/cleanup.c \
	spank/dispatch.c \
	spank/namespace.c \
	spank/persist.c \
	spank/plugin.h \
	spank/site.c \
	spank/state.c \
	spank/stepd.c
# End of spank_spank_mpikvs_la_SOURCES
spank_spank_mpikvs_la_CPPFLAGS = $(SHM_CPPFLAGS) $(SLURM_CPPFLAGS)
spank_spank_mpikvs_la_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
spank_spank_mpikvs_la_LIBADD = shm/libkvshm.la
spank_spank_mpikvs_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-shared -Wl,--version-script=$(top_srcdir)/spank/spank_mpikvs.map
EXTRA_spank_spank_mpikvs_la_DEPENDENCIES = spank/spank_mpikvs.map

EXTRA_DIST += \
	spank/spank_mpikvs.map
# End of EXTRA_DIST (spank)
