##
# tests/tsan/: the bucket protocol under ThreadSanitizer (tsan_slots.c),
# built from the library's own sources with -fsanitize=thread where the
# compiler builds and runs such a program (configure: MPIKVS_CHECK_TSAN;
# not with --enable-sanitizers, whose ASan excludes it).
##
if MPIKVS_HAVE_TSAN
check_PROGRAMS += tests/tsan/tsan_slots
TESTS += tests/tsan/run-tsan-slots.sh
tests_tsan_tsan_slots_SOURCES = tests/tsan/tsan_slots.c $(libmpikvs_libmpikvs_la_SOURCES)
tests_tsan_tsan_slots_CPPFLAGS = $(TESTS_CPPFLAGS) -I$(top_srcdir)/tests/mpi
# -Wno-tsan: TSan does not model a lone fence (bucket.c, fence.c); what
# bucket.c orders with one, a claim before the next look, the one-winner
# assertion checks by its outcome
tests_tsan_tsan_slots_CFLAGS = $(AM_CFLAGS) $(LIBMPIKVS_CFLAGS) -fsanitize=thread -Wno-tsan -g -O1
tests_tsan_tsan_slots_LDFLAGS = -fsanitize=thread
tests_tsan_tsan_slots_LDADD = $(LIBMPIKVS_LIBS)
endif

EXTRA_DIST += tests/tsan/run-tsan-slots.sh
