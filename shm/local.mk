##
# shm/: the MPI-free core (regions, tier, config, rounding) shared by the library, the SPANK
# plugin and the tools, as one convenience library.
##
noinst_LTLIBRARIES += shm/libkvshm.la

shm_libkvshm_la_SOURCES = \
	shm/data_region.c \
	shm/data_region.h \
	shm/errors.c \
	shm/errors_internal.h \
	shm/format.c \
	shm/format.h \
	shm/job_config.c \
	shm/job_config.h \
	shm/job_layout.c \
	shm/job_layout.h \
	shm/layout.h \
	shm/mpikvs_errors.h \
	shm/region.c \
	shm/region.h \
	shm/round.c \
	shm/round.h \
	shm/size.c \
	shm/size.h \
	shm/tier.c \
	shm/tier.h
# End of shm_libkvshm_la_SOURCES
shm_libkvshm_la_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS) $(JANSSON_CFLAGS)
shm_libkvshm_la_LIBADD = $(XXHASH_LIBS) $(JANSSON_LIBS) -lm -lpthread

include_HEADERS += \
	shm/mpikvs_errors.h
# End of include_HEADERS

# mpikvs-stat's read-only view of a data region
shm_libkvshm_la_SOURCES += \
	shm/scan.c \
	shm/scan.h
# End of shm_libkvshm_la_SOURCES (scan)
