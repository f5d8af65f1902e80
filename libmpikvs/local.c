/*
 * local.c - the own node's entries, read in its shared memory as every
 * reader reads a slot (shm/slot_read.h): mpikvs_foreach_local, and the
 * scans of mpikvs_save and mpikvs_load.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "local.h"
#include "errors.h"
#include "slot.h"   /* kvs_slot_retry */

/* Read slot i of bucket b until it verifies or is not live any more:
 * true with the entry in copy and its meta in *meta.  A slot written
 * before the latest mpikvs_clear is not live (clear.c). */
static bool read_slot(mpikvs_t *kvs, const unsigned char *b, uint64_t i,
                      unsigned char *copy, uint64_t *meta, uint64_t *torn)
{
    for (int attempt = 0;; attempt++) {
        *meta = kvshm_meta_load(b, i, true);
        switch (kvshm_slot_scan(b, i, *meta, kvs->tab.slots,
                                kvs->tab.slot_size, kvs->tab.key_size,
                                kvs->tab.value_size, true, kvs->generation,
                                copy)) {
        case KVSHM_SLOT_READ_VERIFIED:
            return true;
        case KVSHM_SLOT_READ_TORN:
            break;
        default:   /* free, invalid or cleared (OTHER is a lookup's) */
            return false;
        }
        if (!kvs_slot_retry(attempt, true)) {
            if (torn)
                (*torn)++;
            return false;
        }
    }
}

int kvs_scan_local(mpikvs_t *kvs, uint64_t first, uint64_t end,
                   kvs_entry_fn fn, void *arg, uint64_t *torn)
{
    size_t esize = kvs->tab.key_size + kvs->tab.value_size;
    unsigned char *copies = malloc(kvs->tab.slots * esize);
    uint64_t *stamps = malloc(kvs->tab.slots * sizeof(*stamps));
    int rc = 0;

    if (!copies || !stamps) {
        free(copies);
        free(stamps);
        return -ENOMEM;
    }
    for (uint64_t bi = first; bi < end && rc == 0; bi++) {
        const unsigned char *b = kvs->tab.buckets + bi * kvs->tab.bucket_size;
        uint64_t n = 0, meta;

        for (uint64_t i = 0; i < kvs->tab.slots; i++) {
            unsigned char *c = copies + n * esize;
            uint64_t j;
            if (!read_slot(kvs, b, i, c, &meta, torn))
                continue;
            /* A key evicted and put again while the scan crossed its
             * bucket may be read in two slots: keep the newer (a BUSY
             * one is being written now; its stamp field is its owner). */
            for (j = 0; j < n; j++)
                if (memcmp(copies + j * esize, c, kvs->tab.key_size) == 0)
                    break;
            if (j < n) {
                if ((meta & KVSHM_SLOT_BUSY) ||
                    kvshm_meta_stamp(meta) - (uint32_t)stamps[j] <
                        UINT32_C(1) << 31) {
                    memcpy(copies + j * esize, c, esize);
                    stamps[j] = kvshm_meta_stamp(meta);
                }
                continue;
            }
            stamps[n++] = kvshm_meta_stamp(meta);
        }
        for (uint64_t j = 0; j < n && rc == 0; j++)
            rc = fn(kvs, copies + j * esize, arg);
    }
    free(copies);
    free(stamps);
    return rc;
}

bool kvs_local_any(const mpikvs_t *kvs, uint64_t first, uint64_t end)
{
    for (uint64_t bi = first; bi < end; bi++) {
        unsigned char *b = kvs->tab.buckets + bi * kvs->tab.bucket_size;
        for (uint64_t i = 0; i < kvs->tab.slots; i++) {
            uint64_t meta = kvshm_meta_load(b, i, true);
            /* a claimed slot is a put of this generation under way */
            if (kvshm_meta_live(meta) &&
                ((meta & KVSHM_SLOT_BUSY) || !kvs->generation ||
                 kvshm_slot_of_generation(
                     meta,
                     kvshm_slot_key_hash(kvs_slot_at(&kvs->tab, b, i),
                                         kvs->tab.key_size, true),
                     kvs->generation)))
                return true;
        }
    }
    return false;
}

struct user_fn {
    mpikvs_entry_fn fn;
    void           *arg;
};

static int call_user(mpikvs_t *kvs, const unsigned char *entry, void *arg)
{
    const struct user_fn *u = arg;

    return u->fn(entry, entry + kvs->tab.key_size, u->arg);
}

int mpikvs_foreach_local(mpikvs_t *kvs, mpikvs_entry_fn fn, void *arg)
{
    struct user_fn u = {fn, arg};
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_foreach_local");
    if (!fn)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_foreach_local: fn is NULL");
    rc = kvs_scan_local(kvs, 0, kvs->tab.nbuckets, call_user, &u, NULL);
    if (rc == -ENOMEM)
        return kvs_fail(kvs, rc, "mpikvs_foreach_local: out of memory for "
                                 "%llu slot copies",
                        (unsigned long long)kvs->tab.slots);
    return rc;
}
