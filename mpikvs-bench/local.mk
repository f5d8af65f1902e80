##
# mpikvs-bench/: benchmarks that print numbers (mpikvs-bench(1)).
##
bin_PROGRAMS += mpikvs-bench/mpikvs-bench

mpikvs_bench_mpikvs_bench_SOURCES = \
	mpikvs-bench/mpikvs-bench.c \
	mpikvs-bench/bench.c \
	mpikvs-bench/bench.h \
	mpikvs-bench/bench_clear.c \
	mpikvs-bench/bench_dht.c \
	mpikvs-bench/bench_dht.h \
	mpikvs-bench/bench_dht_common.c \
	mpikvs-bench/bench_dht_large.c \
	mpikvs-bench/bench_dht_large.h \
	mpikvs-bench/bench_dht_tier.c \
	mpikvs-bench/bench_dht_tier.h \
	mpikvs-bench/bench_keys.c \
	mpikvs-bench/bench_keys.h \
	mpikvs-bench/bench_mpi_count.c \
	mpikvs-bench/bench_mpi_count.h \
	mpikvs-bench/bench_near.c \
	mpikvs-bench/bench_open.c \
	mpikvs-bench/bench_persist.c \
	mpikvs-bench/bench_rmacache.c \
	mpikvs-bench/bench_round.c \
	mpikvs-bench/bench_subcommands.h \
	mpikvs-bench/bench_tier.c
# End of mpikvs_bench_mpikvs_bench_SOURCES
mpikvs_bench_mpikvs_bench_CPPFLAGS = $(SHM_CPPFLAGS)
mpikvs_bench_mpikvs_bench_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -O2
mpikvs_bench_mpikvs_bench_LDADD = libmpikvs/libmpikvs.la shm/libkvshm.la \
	$(MPI_LIBS) -lm -ldl
