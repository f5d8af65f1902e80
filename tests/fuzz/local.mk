##
# tests/fuzz/: fuzz targets.  The suite replays each target's corpus with
# an ordinary build; `make fuzz` (configure --enable-fuzzing) runs libFuzzer
# for FUZZ_SECONDS per target, adding what it finds to fuzz-corpus/.
##
check_PROGRAMS += tests/fuzz/replay_config
tests_fuzz_replay_config_SOURCES = \
	tests/fuzz/fuzz_config.c \
	tests/fuzz/replay.c
# End of tests_fuzz_replay_config_SOURCES
tests_fuzz_replay_config_LDADD = shm/libkvshm.la

TESTS += tests/fuzz-replay.sh

EXTRA_DIST += \
	tests/fuzz-replay.sh \
	tests/fuzz/corpus
# End of EXTRA_DIST (fuzz)

FUZZ_SECONDS = 60
fuzz_config_inputs = \
	$(srcdir)/tests/fuzz/fuzz_config.c \
	$(srcdir)/shm/errors.c \
	$(srcdir)/shm/job_config.c \
	$(srcdir)/shm/size.c
# End of fuzz_config_inputs

if FUZZING
tests/fuzz/fuzz_config: $(fuzz_config_inputs)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -I$(srcdir)/shm $(JANSSON_CFLAGS) $(fuzz_config_inputs) \
	    $(JANSSON_LIBS) -lm -o $@

fuzz: tests/fuzz/fuzz_config
	$(MKDIR_P) fuzz-corpus/config
	tests/fuzz/fuzz_config -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    fuzz-corpus/config $(srcdir)/tests/fuzz/corpus/config

CLEANFILES += tests/fuzz/fuzz_config
else
fuzz:
	@echo "make fuzz needs ./configure --enable-fuzzing (clang, libclang-rt-14-dev)" >&2
	@exit 1
endif
.PHONY: fuzz
