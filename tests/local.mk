##
# tests/: Check unit tests, and checks of the built artefacts.
##
# The tests see every internal header: they check the parts from inside.
TESTS_CPPFLAGS = $(SHM_CPPFLAGS) -I$(top_srcdir)/libmpikvs

# The MPI jobs start through tests/mpi-launch.sh, which gives the launcher
# of the MPI configure found its own options.
TESTS_ENVIRONMENT = \
	CK_DEFAULT_TIMEOUT=300 \
	top_builddir=$(top_builddir) top_srcdir=$(top_srcdir) \
	MPIRUN=$(abs_top_srcdir)/tests/mpi-launch.sh \
	MPICC=$(MPICC) MPIEXEC=$(MPIEXEC) MPI_FAMILY=$(MPI_FAMILY)

check_PROGRAMS += \
	tests/check_bucket \
	tests/check_config \
	tests/check_job_layout \
	tests/check_near_key \
	tests/check_populate \
	tests/check_region \
	tests/check_region_name \
	tests/check_rmacache_index \
	tests/check_round \
	tests/check_save_header \
	tests/check_tier
# End of check_PROGRAMS

TESTS += \
	tests/check_bucket \
	tests/check_config \
	tests/check_job_layout \
	tests/check_near_key \
	tests/check_populate \
	tests/check_region \
	tests/check_region_name \
	tests/check_rmacache_index \
	tests/check_round \
	tests/check_save_header \
	tests/check_tier \
	tests/check-exports.sh \
	tests/examples.sh \
	tests/install.sh \
	tests/mpikvs-config.sh
# End of TESTS

# regions whose system calls fail, under fiu-run (tests/region-fiu.sh)
if MPIKVS_HAVE_FIU
check_PROGRAMS += tests/check_region_fiu
TESTS += tests/region-fiu.sh
tests_check_region_fiu_SOURCES = tests/check_region_fiu.c tests/shm_check.h
tests_check_region_fiu_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_region_fiu_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_region_fiu_LDADD = shm/libkvshm.la $(CHECK_LIBS) -lfiu
endif

# the bucket protocol from the library's own sources, without MPI (the
# headers only); again under ThreadSanitizer where configure found it
CHECK_BUCKET_SOURCES = tests/check_bucket.c libmpikvs/bucket.c libmpikvs/slot.c
tests_check_bucket_SOURCES = $(CHECK_BUCKET_SOURCES)
tests_check_bucket_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_bucket_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(MPI_CFLAGS) $(XXHASH_CFLAGS) -pthread
tests_check_bucket_LDADD = shm/libkvshm.la $(CHECK_LIBS) $(XXHASH_LIBS) -lpthread
if MPIKVS_HAVE_TSAN
check_PROGRAMS += tests/check_bucket_tsan
TESTS += tests/check_bucket_tsan
tests_check_bucket_tsan_SOURCES = $(CHECK_BUCKET_SOURCES)
tests_check_bucket_tsan_CPPFLAGS = $(TESTS_CPPFLAGS)
# -Wno-tsan: TSan does not model the lone fence of put-if-absent's claim
# (bucket.c); the one-winner assertion checks what it orders
tests_check_bucket_tsan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(MPI_CFLAGS) $(XXHASH_CFLAGS) -pthread -fsanitize=thread -Wno-tsan -g -O1
tests_check_bucket_tsan_LDFLAGS = -fsanitize=thread
tests_check_bucket_tsan_LDADD = shm/libkvshm.la $(CHECK_LIBS) $(XXHASH_LIBS) -lpthread
endif

tests_check_config_SOURCES = tests/check_config.c
tests_check_config_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_config_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_config_LDADD = shm/libkvshm.la $(CHECK_LIBS)

tests_check_job_layout_SOURCES = tests/check_job_layout.c tests/shm_check.h
tests_check_job_layout_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_job_layout_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_check_job_layout_LDADD = shm/libkvshm.la $(CHECK_LIBS)

# a kernel without MADV_POPULATE_* is a wrapped madvise (check_populate.c)
tests_check_populate_SOURCES = tests/check_populate.c tests/shm_check.h
tests_check_populate_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_populate_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_populate_LDADD = shm/libkvshm.la $(CHECK_LIBS)
tests_check_populate_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=madvise

tests_check_region_SOURCES = tests/check_region.c tests/shm_check.h
tests_check_region_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_region_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_check_region_LDADD = shm/libkvshm.la $(CHECK_LIBS)

# the save file's format, from the library's source (it has no MPI)
tests_check_save_header_SOURCES = tests/check_save_header.c libmpikvs/save_format.c
tests_check_save_header_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_save_header_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_check_save_header_LDADD = $(CHECK_LIBS) $(XXHASH_LIBS)

tests_check_region_name_SOURCES = tests/check_region_name.c tests/shm_check.h
tests_check_region_name_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_region_name_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_region_name_LDADD = shm/libkvshm.la $(CHECK_LIBS)

# the index and node segments of libmpikvs-rmacache, built from their
# sources: no MPI
tests_check_rmacache_index_SOURCES = tests/check_rmacache_index.c rmacache/index.c \
	rmacache/node.c
tests_check_rmacache_index_CPPFLAGS = $(SHM_CPPFLAGS) -I$(top_srcdir)/rmacache
tests_check_rmacache_index_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -pthread
tests_check_rmacache_index_LDADD = shm/libkvshm.la $(CHECK_LIBS) -lpthread

tests_check_near_key_SOURCES = tests/check_near_key.c
tests_check_near_key_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_near_key_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_near_key_LDADD = shm/libkvshm.la $(CHECK_LIBS)

tests_check_round_SOURCES = tests/check_round.c
tests_check_round_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_round_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_round_LDADD = shm/libkvshm.la $(CHECK_LIBS)

tests_check_tier_SOURCES = tests/check_tier.c
tests_check_tier_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_check_tier_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_tier_LDADD = shm/libkvshm.la $(CHECK_LIBS) -lpthread

EXTRA_DIST += \
	tests/check-exports.sh \
	tests/config \
	tests/examples.sh \
	tests/install.sh \
	tests/mpi-launch.sh \
	tests/mpikvs-config.sh \
	tests/region-fiu.sh
# End of EXTRA_DIST (tests)

##
# tests/stat/: mpikvs-stat: a Check test of shm/scan.c, and shell tests
# that run the tool against regions made by libmpikvs under mpirun
# (run-stat-tests.sh) and by spank_mpikvs in a real Slurm job
# (run-stat-slurm-tests.sh), with small helper programs; a run outside
# Slurm that ends without mpikvs_close, in MPI_Abort or killed leaves
# nothing, and mpikvs-stat reads it while it runs (run-noleak-tests.sh).
##
check_PROGRAMS += \
	tests/stat/check_scan \
	tests/stat/json_get \
	tests/stat/stat_job \
	tests/stat/stat_region
# End of check_PROGRAMS (stat)

TESTS += \
	tests/stat/check_scan \
	tests/stat/run-stat-tests.sh \
	tests/stat/run-noleak-tests.sh \
	tests/stat/run-stat-slurm-tests.sh
# End of TESTS (stat)

tests_stat_check_scan_SOURCES = tests/stat/check_scan.c tests/shm_check.h
tests_stat_check_scan_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_stat_check_scan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_stat_check_scan_LDADD = shm/libkvshm.la $(CHECK_LIBS) -lpthread

tests_stat_json_get_SOURCES = tests/stat/json_get.c
tests_stat_json_get_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_stat_json_get_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_stat_json_get_LDADD = $(JANSSON_LIBS)

tests_stat_stat_job_SOURCES = tests/stat/stat_job.c
tests_stat_stat_job_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_stat_stat_job_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_stat_stat_job_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

tests_stat_stat_region_SOURCES = tests/stat/stat_region.c
tests_stat_stat_region_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_stat_stat_region_LDADD = shm/libkvshm.la

EXTRA_DIST += \
	tests/stat/common.sh \
	tests/stat/run-noleak-tests.sh \
	tests/stat/run-stat-slurm-tests.sh \
	tests/stat/run-stat-tests.sh
# End of EXTRA_DIST (stat)

##
# tests/bench-tier.sh: mpikvs-bench dht --tier under mpirun on 2 virtual
# nodes, small numbers; asserts what the run does, never its timings.
# tests/bench-open.sh: mpikvs-bench open at np 2 to 6 (one node, 2 virtual
# nodes), a few repetitions: its fields and the library's counted MPI
# calls, never its timings.
# tests/bench-dht.sh: mpikvs-bench dht --work-us, --remote-gets and
# --transport at np 2: what they print, never their timings.
# tests/bench-persist.sh: mpikvs-bench persist at np 2 on 2 virtual
# nodes, a small table: its fields, never its timings.
# tests/bench-transport.sh, tests/bench-mpis.sh and
# tests/bench-demo-slurm.sh are no tests: they measure the transports side
# by side, two builds against two MPIs side by side, and the demo through
# the test Slurm cluster against mpirun (run them by hand, see their heads).
##
TESTS += \
	tests/bench-dht.sh \
	tests/bench-open.sh \
	tests/bench-persist.sh \
	tests/bench-tier.sh
# End of TESTS (bench)

EXTRA_DIST += \
	tests/bench-dht.sh \
	tests/bench-open.sh \
	tests/bench-demo-slurm.sh \
	tests/bench-mpis.sh \
	tests/bench-persist.sh \
	tests/bench-tier.sh \
	tests/bench-transport.sh \
	tests/plain-mpirun.sh
# End of EXTRA_DIST (bench)

##
# tests/demo/: mpikvs-reactive-transport under mpirun on small grids:
# hits, the error bound, reproducible no-cache runs, refusals, outputs,
# nothing left in its private shm directory.  Run when configure built the
# demo (SUNDIALS found); run-slurm-tests.sh skips its demo job likewise.
##
if MPIKVS_DEMO
TESTS += \
	tests/demo/reactive-transport.sh
# End of TESTS (demo)
TESTS_ENVIRONMENT += demo_built=yes
else
TESTS_ENVIRONMENT += demo_built=no
endif

EXTRA_DIST += \
	tests/demo/reactive-transport.sh \
	tests/slurm/demo-job.sh
# End of EXTRA_DIST (demo)
