##
# mpikvs-stat/: the admin tool: what a node's regions hold, and --gc of
# the regions of jobs that are gone.  One file per concern (mpikvs-stat.c).
##
bin_PROGRAMS += mpikvs-stat/mpikvs-stat

mpikvs_stat_mpikvs_stat_SOURCES = \
	mpikvs-stat/mpikvs-stat.c \
	mpikvs-stat/stat_counters.c \
	mpikvs-stat/stat_counters.h \
	mpikvs-stat/stat_format.c \
	mpikvs-stat/stat_gc.c \
	mpikvs-stat/stat_gc.h \
	mpikvs-stat/stat_json.c \
	mpikvs-stat/stat_liveness.c \
	mpikvs-stat/stat_liveness.h \
	mpikvs-stat/stat_output.h \
	mpikvs-stat/stat_regions.c \
	mpikvs-stat/stat_regions.h \
	mpikvs-stat/stat_report.c \
	mpikvs-stat/stat_report.h \
	mpikvs-stat/stat_text.c \
	mpikvs-stat/stat_totals.c \
	mpikvs-stat/stat_totals.h
# End of mpikvs_stat_mpikvs_stat_SOURCES
mpikvs_stat_mpikvs_stat_CPPFLAGS = $(SHM_CPPFLAGS) $(SLURM_CPPFLAGS)
mpikvs_stat_mpikvs_stat_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(XXHASH_CFLAGS)
mpikvs_stat_mpikvs_stat_LDADD = shm/libkvshm.la $(JANSSON_LIBS) $(SLURM_LIBS) -lm
