##
# examples/: small programs a user starts from, quoted by the man pages.
# `make check` builds them and tests/examples.sh runs them; `make install`
# puts their sources, with the configs they take, in $(docdir)/examples
# (examplesdir, Makefile.am).
##
check_PROGRAMS += \
	examples/batches \
	examples/rmacache-get \
	examples/surrogate \
	examples/warm-start
# End of check_PROGRAMS (examples)

# The libmpikvs ones see the public header only, as a user's program.
EXAMPLES_CPPFLAGS = -I$(top_srcdir)/include
EXAMPLES_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
EXAMPLES_LDADD = libmpikvs/libmpikvs.la $(MPI_LIBS)

examples_batches_SOURCES = examples/batches.c
examples_batches_CPPFLAGS = $(EXAMPLES_CPPFLAGS)
examples_batches_CFLAGS = $(EXAMPLES_CFLAGS)
examples_batches_LDADD = $(EXAMPLES_LDADD)

examples_surrogate_SOURCES = examples/surrogate.c
examples_surrogate_CPPFLAGS = $(EXAMPLES_CPPFLAGS)
examples_surrogate_CFLAGS = $(EXAMPLES_CFLAGS)
examples_surrogate_LDADD = $(EXAMPLES_LDADD)

examples_warm_start_SOURCES = examples/warm-start.c
examples_warm_start_CPPFLAGS = $(EXAMPLES_CPPFLAGS)
examples_warm_start_CFLAGS = $(EXAMPLES_CFLAGS)
examples_warm_start_LDADD = $(EXAMPLES_LDADD)

# An unchanged MPI program: MPI only, the cache is preloaded.
examples_rmacache_get_SOURCES = examples/rmacache-get.c
examples_rmacache_get_CFLAGS = $(EXAMPLES_CFLAGS)
examples_rmacache_get_LDADD = $(MPI_LIBS)

dist_examples_DATA += \
	examples/batches.c \
	examples/rmacache-get.c \
	examples/surrogate.c \
	examples/warm-start.c \
	examples/warm-start.json
# End of dist_examples_DATA (examples)
