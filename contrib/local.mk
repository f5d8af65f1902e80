##
# contrib/: programs built on mpikvs.
##
bin_PROGRAMS += \
	contrib/mpikvs-bench \
	contrib/mpikvs-config
# End of bin_PROGRAMS

contrib_mpikvs_bench_SOURCES = \
	contrib/mpikvs-bench.c \
	contrib/bench.h \
	contrib/bench_dht.c \
	contrib/bench_dht.h \
	contrib/bench_dht_tier.c \
	contrib/bench_keys.c \
	contrib/bench_keys.h \
	contrib/bench_round.c \
	contrib/bench_tier.c
# End of contrib_mpikvs_bench_SOURCES
contrib_mpikvs_bench_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -O2
contrib_mpikvs_bench_LDADD = libmpikvs.la shm/libkvshm.la $(MPI_LIBS) -lm

contrib_mpikvs_config_SOURCES = contrib/mpikvs-config.c
contrib_mpikvs_config_LDADD = shm/libkvshm.la

# The reactive-transport demo: mpikvs as the surrogate cache of a
# chemistry solved with SUNDIALS CVODE (contrib/reactive_transport/rt.h).
bin_PROGRAMS += \
	contrib/mpikvs-reactive-transport
# End of bin_PROGRAMS (reactive transport)

contrib_mpikvs_reactive_transport_SOURCES = \
	contrib/reactive_transport/cache.c \
	contrib/reactive_transport/cache.h \
	contrib/reactive_transport/chemistry.c \
	contrib/reactive_transport/chemistry.h \
	contrib/reactive_transport/grid.c \
	contrib/reactive_transport/grid.h \
	contrib/reactive_transport/main.c \
	contrib/reactive_transport/options.c \
	contrib/reactive_transport/options.h \
	contrib/reactive_transport/report.c \
	contrib/reactive_transport/report.h \
	contrib/reactive_transport/rt.h \
	contrib/reactive_transport/run.c \
	contrib/reactive_transport/run.h
# End of contrib_mpikvs_reactive_transport_SOURCES
contrib_mpikvs_reactive_transport_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -O2
contrib_mpikvs_reactive_transport_LDADD = libmpikvs.la $(MPI_LIBS) \
	$(SUNDIALS_LIBS)

# mpikvs-stat: the admin tool; one file per concern (see mpikvs-stat.c)
bin_PROGRAMS += \
	contrib/mpikvs-stat
# End of bin_PROGRAMS (mpikvs-stat)

contrib_mpikvs_stat_SOURCES = \
	contrib/mpikvs-stat.c \
	contrib/stat_counters.c \
	contrib/stat_counters.h \
	contrib/stat_format.c \
	contrib/stat_gc.c \
	contrib/stat_gc.h \
	contrib/stat_json.c \
	contrib/stat_liveness.c \
	contrib/stat_liveness.h \
	contrib/stat_output.h \
	contrib/stat_regions.c \
	contrib/stat_regions.h \
	contrib/stat_report.c \
	contrib/stat_report.h \
	contrib/stat_text.c
# End of contrib_mpikvs_stat_SOURCES
contrib_mpikvs_stat_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
contrib_mpikvs_stat_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(XXHASH_CFLAGS)
contrib_mpikvs_stat_LDADD = shm/libkvshm.la $(JANSSON_LIBS) $(SLURM_LIBS) -lm
