##
# shm/: the shared-memory formats and regions: region create/open/check
# and faulting in, data regions, the read-only tier, the job layout and
# the read-only scan mpikvs-stat uses.  Built on common/.
##
noinst_LTLIBRARIES += shm/libkvshm.la

SHM_CPPFLAGS = $(COMMON_CPPFLAGS) -I$(top_srcdir)/shm

shm_libkvshm_la_SOURCES = \
	shm/clock.h \
	shm/data_region.c \
	shm/data_region.h \
	shm/format.c \
	shm/format.h \
	shm/held.c \
	shm/held.h \
	shm/job_layout.c \
	shm/job_layout.h \
	shm/key_hash.h \
	shm/plan.c \
	shm/plan.h \
	shm/populate.c \
	shm/populate.h \
	shm/region.c \
	shm/region.h \
	shm/region_name.c \
	shm/region_name.h \
	shm/rma_region.c \
	shm/rma_region.h \
	shm/scan.c \
	shm/scan.h \
	shm/seqlock.h \
	shm/slot_read.h \
	shm/spin.h \
	shm/tier.c \
	shm/tier.h \
	shm/tier_private.h \
	shm/tier_read.c \
	shm/tier_write.c \
	shm/virtual_nodes.c \
	shm/virtual_nodes.h
# End of shm_libkvshm_la_SOURCES
shm_libkvshm_la_CPPFLAGS = $(SHM_CPPFLAGS)
shm_libkvshm_la_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
shm_libkvshm_la_LIBADD = common/libcommon.la $(XXHASH_LIBS) -lpthread
