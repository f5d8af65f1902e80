/*
 * open.h - opening a handle of the library's own (open.c): a table a
 * handle keeps beside its own, such as its neighbourhoods (near.c).
 */
#ifndef MPIKVS_OPEN_H
#define MPIKVS_OPEN_H

#include <stddef.h>

#include "handle.h"

/* Open a table over parent's ranks (collective) from opt alone: no job
 * layout, config, node tier or warm start; its buckets read with RMA
 * where the transport could ship keys; a key's home, bucket and tag from
 * the hash of its first hash_prefix bytes (0: all of them), its slot's
 * checksum seeded with the hash of all of them.  Its failure's text is
 * mpikvs_last_error(NULL)'s. */
int kvs_open_child(mpikvs_t *parent, const mpikvs_options_t *opt,
                   size_t hash_prefix, mpikvs_t **out);

#endif /* MPIKVS_OPEN_H */
