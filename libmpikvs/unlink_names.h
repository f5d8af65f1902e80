/*
 * unlink_names.h - the regions' names removed once held (unlink_names.c).
 */
#ifndef MPIKVS_UNLINK_NAMES_H
#define MPIKVS_UNLINK_NAMES_H

#include "mpikvs.h"

/* Remove the names of the regions this rank made (without the plugin),
 * once every rank of the open holds them (unlink_names.c). */
void kvs_unlink_names(mpikvs_t *kvs);

#endif /* MPIKVS_UNLINK_NAMES_H */
