/*
 * clear.h - the table's generation: agreed at open, bumped by
 * mpikvs_clear (clear.c).
 */
#ifndef MPIKVS_CLEAR_H
#define MPIKVS_CLEAR_H

#include <stdbool.h>

#include "mpikvs.h"

/* Collective: every node's leader reads its region's generation (bump:
 * increments it first), the ranks agree on the largest, the leaders of
 * regions behind it raise theirs to it, and every rank keeps it in
 * kvs->generation.  MPIKVS_OK or MPIKVS_ERR_MPI. */
int kvs_generation_agree(mpikvs_t *kvs, bool bump);

#endif /* MPIKVS_CLEAR_H */
