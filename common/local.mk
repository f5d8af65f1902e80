##
# common/: what the library, the SPANK plugin and the tools share that is
# not shared memory: the job config, sizes, key rounding and the text of
# the return codes.  Headers here are seen by the targets that link it.
##
noinst_LTLIBRARIES += common/libcommon.la

COMMON_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/common

common_libcommon_la_SOURCES = \
	common/errors.c \
	common/errors_internal.h \
	common/job_config.c \
	common/job_config.h \
	common/names.c \
	common/names.h \
	common/near_key.c \
	common/near_key.h \
	common/record.h \
	common/round.c \
	common/round.h \
	common/size.c \
	common/size.h
# End of common_libcommon_la_SOURCES
common_libcommon_la_CPPFLAGS = $(COMMON_CPPFLAGS)
common_libcommon_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
common_libcommon_la_LIBADD = $(JANSSON_LIBS) -lm
