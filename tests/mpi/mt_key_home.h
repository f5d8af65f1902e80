/*
 * mt_key_home.h - for the MPI tests that build the library's sources
 * (they see its key record): a key whose home is a given node.
 */
#ifndef MPIKVS_MT_KEY_HOME_H
#define MPIKVS_MT_KEY_HOME_H

#include "key.h"
#include "mpitest.h"

/* Key a of tag whose home is node: the first of the deterministic row
 * mt_make_key(tag, a, b, ...), b = 0, 1, ..., that kvs places there;
 * its record is the return value. */
static inline struct kvs_key mt_key_home(const mpikvs_t *kvs, uint32_t tag,
                                         uint32_t a, uint32_t node,
                                         unsigned char *key, size_t ksize)
{
    for (uint64_t b = 0;; b++) {
        struct kvs_key k;
        mt_make_key(tag, a, b, key, ksize);
        kvs_key_make(kvs, key, &k);
        if (k.node == node)
            return k;
    }
}

#endif /* MPIKVS_MT_KEY_HOME_H */
