/*
 * save_format.c - the save file's checksums and the check of its header
 * (save_format.h).  Every size in a header read from a file is bounded
 * before it is multiplied: a crafted header (its checksum is no secret)
 * must not make a block that claims more than it holds.
 */
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "mpikvs_errors.h"
#include "save_format.h"

uint64_t kvs_save_header_sum(const struct save_header *h)
{
    return XXH3_64bits(h, offsetof(struct save_header, checksum));
}

uint64_t kvs_save_block_sum(const struct save_block *b, uint64_t index,
                            size_t block_bytes)
{
    return XXH3_64bits_withSeed(b + 1, block_bytes - sizeof(*b),
                                SAVE_BLOCK_SEED ^ (index * UINT64_C(
                                    0x9e3779b97f4a7c15)) ^ b->count);
}

uint64_t kvs_save_block_entries(size_t esize)
{
    return SAVE_BLOCK_TARGET / esize ? SAVE_BLOCK_TARGET / esize : 1;
}

int kvs_save_header_check(const struct save_header *h, uint64_t size,
                          const struct save_header *mine, char *why,
                          size_t len)
{
    uint64_t esize = mine->key_size + mine->value_size, want;

    if (size < SAVE_HEADER_SIZE) {
        snprintf(why, len, "is %llu bytes, shorter than a save file's "
                 "header: not a whole mpikvs save file",
                 (unsigned long long)size);
        return size && memcmp(h->magic, SAVE_MAGIC, 8) == 0
                   ? MPIKVS_ERR_TRUNCATED
                   : MPIKVS_ERR_FOREIGN;
    }
    if (memcmp(h->magic, SAVE_MAGIC, 8) != 0) {
        snprintf(why, len, "is not an mpikvs save file (it does not start "
                 "with %s)", SAVE_MAGIC);
        return MPIKVS_ERR_FOREIGN;
    }
    if (h->byte_order != SAVE_BYTE_ORDER || h->version != SAVE_VERSION) {
        snprintf(why, len, "was saved in another format (version %u, or "
                 "another byte order); this library reads version %u",
                 h->version, SAVE_VERSION);
        return MPIKVS_ERR_VERSION;
    }
    if (h->checksum != kvs_save_header_sum(h)) {
        snprintf(why, len, "has a header that does not verify (its "
                 "checksum): the file is damaged");
        return MPIKVS_ERR_CORRUPT;
    }
    if (h->key_size != mine->key_size || h->value_size != mine->value_size) {
        snprintf(why, len, "holds keys of %llu and values of %llu bytes, "
                 "this table keys of %llu and values of %llu: load it into "
                 "a table of its sizes", (unsigned long long)h->key_size,
                 (unsigned long long)h->value_size,
                 (unsigned long long)mine->key_size,
                 (unsigned long long)mine->value_size);
        return MPIKVS_ERR_MISMATCH;
    }
    if (h->key_rules != mine->key_rules ||
        h->value_rules != mine->value_rules) {
        snprintf(why, len, "was saved from a table whose %s rules differ "
                 "from this table's (fields, types, digits or zero_below "
                 "in the config): its keys would not be the keys this job "
                 "makes; load it into a table with the config it was "
                 "saved with",
                 h->key_rules != mine->key_rules ? "key" : "value");
        return MPIKVS_ERR_MISMATCH;
    }
    /* block_entries at most what a save writes (mine's), so that
     * block_entries * esize and a round's buffer stay small: before
     * this bound, 16 + block_entries * esize could wrap around to a
     * 16-byte block that claims any count */
    if (h->header_size != SAVE_HEADER_SIZE || !h->block_entries ||
        h->block_entries > mine->block_entries ||
        h->block_bytes !=
            sizeof(struct save_block) + h->block_entries * esize ||
        h->blocks > (UINT64_MAX - SAVE_HEADER_SIZE) / h->block_bytes ||
        h->entries > h->blocks * h->block_entries) {
        snprintf(why, len, "has an inconsistent header (blocks of %llu "
                 "entries and %llu bytes, %llu blocks, %llu entries; a "
                 "save writes blocks of %llu entries of %llu bytes here): "
                 "the file is damaged or crafted",
                 (unsigned long long)h->block_entries,
                 (unsigned long long)h->block_bytes,
                 (unsigned long long)h->blocks,
                 (unsigned long long)h->entries,
                 (unsigned long long)mine->block_entries,
                 (unsigned long long)esize);
        return MPIKVS_ERR_CORRUPT;
    }
    want = SAVE_HEADER_SIZE + h->blocks * h->block_bytes;
    if (size < want) {
        snprintf(why, len, "is %llu bytes, its header says %llu: the file "
                 "was cut short (a copy or a save that did not finish)",
                 (unsigned long long)size, (unsigned long long)want);
        return MPIKVS_ERR_TRUNCATED;
    }
    if (size > want) {
        snprintf(why, len, "is %llu bytes, its header says %llu: something "
                 "was appended or the header is wrong",
                 (unsigned long long)size, (unsigned long long)want);
        return MPIKVS_ERR_SIZE;
    }
    return MPIKVS_OK;
}
