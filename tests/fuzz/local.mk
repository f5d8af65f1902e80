##
# tests/fuzz/: fuzz targets.  The suite replays each target's corpus with
# an ordinary build; `make fuzz` (configure --enable-fuzzing) runs libFuzzer
# for FUZZ_SECONDS per target, adding what it finds to fuzz-corpus/.
##
check_PROGRAMS += tests/fuzz/replay_config
tests_fuzz_replay_config_SOURCES = \
	tests/fuzz/fuzz_config.c \
	tests/fuzz/replay.c
tests_fuzz_replay_config_CPPFLAGS = $(TESTS_CPPFLAGS)
# End of tests_fuzz_replay_config_SOURCES
tests_fuzz_replay_config_LDADD = shm/libkvshm.la

# region headers and control blocks; region_seeds makes its corpus with
# the library, so that the seeds always have this build's format
check_PROGRAMS += \
	tests/fuzz/replay_region \
	tests/fuzz/region_seeds
# End of check_PROGRAMS (fuzz)
tests_fuzz_replay_region_SOURCES = \
	tests/fuzz/fuzz_region.c \
	tests/fuzz/replay.c
tests_fuzz_replay_region_CPPFLAGS = $(TESTS_CPPFLAGS)
# End of tests_fuzz_replay_region_SOURCES
tests_fuzz_replay_region_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
tests_fuzz_replay_region_LDADD = shm/libkvshm.la $(XXHASH_LIBS)
tests_fuzz_region_seeds_SOURCES = tests/fuzz/region_seeds.c
tests_fuzz_region_seeds_CPPFLAGS = $(TESTS_CPPFLAGS)
tests_fuzz_region_seeds_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
tests_fuzz_region_seeds_LDADD = shm/libkvshm.la $(XXHASH_LIBS)

TESTS += tests/fuzz-replay.sh

EXTRA_DIST += \
	tests/fuzz-replay.sh \
	tests/fuzz/corpus
# End of EXTRA_DIST (fuzz)

FUZZ_SECONDS = 60
fuzz_config_inputs = \
	$(srcdir)/tests/fuzz/fuzz_config.c \
	$(srcdir)/common/errors.c \
	$(srcdir)/common/job_config.c \
	$(srcdir)/common/size.c
# End of fuzz_config_inputs

fuzz_region_inputs = \
	$(srcdir)/tests/fuzz/fuzz_region.c \
	$(filter %.c,$(addprefix $(srcdir)/,$(shm_libkvshm_la_SOURCES)))
# End of fuzz_region_inputs

if FUZZING
tests/fuzz/fuzz_config: $(fuzz_config_inputs)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -I$(srcdir)/include -I$(srcdir)/common -I$(srcdir)/shm $(JANSSON_CFLAGS) $(fuzz_config_inputs) \
	    $(JANSSON_LIBS) -lm -o $@

tests/fuzz/fuzz_region: $(fuzz_region_inputs)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -I$(srcdir)/include -I$(srcdir)/common -I$(srcdir)/shm -I$(builddir) $(XXHASH_CFLAGS) $(JANSSON_CFLAGS) \
	    $(fuzz_region_inputs) $(XXHASH_LIBS) $(JANSSON_LIBS) -lm -lpthread \
	    -o $@

fuzz: tests/fuzz/fuzz_config tests/fuzz/fuzz_region tests/fuzz/region_seeds
	$(MKDIR_P) fuzz-corpus/config fuzz-corpus/region-seeds fuzz-corpus/region
	tests/fuzz/fuzz_config -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    fuzz-corpus/config $(srcdir)/tests/fuzz/corpus/config
	tests/fuzz/region_seeds fuzz-corpus/region-seeds
	tests/fuzz/fuzz_region -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -max_len=65536 fuzz-corpus/region fuzz-corpus/region-seeds

CLEANFILES += tests/fuzz/fuzz_config tests/fuzz/fuzz_region
else
fuzz:
	@echo "make fuzz needs ./configure --enable-fuzzing (clang, libclang-rt-14-dev)" >&2
	@exit 1
endif
.PHONY: fuzz
