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
