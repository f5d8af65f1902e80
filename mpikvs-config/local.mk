##
# mpikvs-config/: check a job config, show its plan and a rounded key
# (mpikvs-config(1)).
##
bin_PROGRAMS += mpikvs-config/mpikvs-config

mpikvs_config_mpikvs_config_SOURCES = mpikvs-config/mpikvs-config.c
mpikvs_config_mpikvs_config_CPPFLAGS = $(SHM_CPPFLAGS)
mpikvs_config_mpikvs_config_LDADD = shm/libkvshm.la
