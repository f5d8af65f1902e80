/*
 * save_format.h - the save file's header and blocks (the format is
 * described at the top of persist.c), their checksums, and the check of
 * a header read from a file (save_format.c).  Nothing here does I/O or
 * MPI, so the check is tested on crafted headers by itself
 * (tests/check_save_header.c).
 */
#ifndef MPIKVS_SAVE_FORMAT_H
#define MPIKVS_SAVE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define SAVE_MAGIC        "MPIKVSsv"
#define SAVE_VERSION      1u
#define SAVE_HEADER_SIZE  256u
#define SAVE_BYTE_ORDER   UINT64_C(0x0102030405060708)
#define SAVE_BLOCK_SEED   UINT64_C(0x6d70696b76736276)   /* "mpikvsbv" */
#define SAVE_BLOCK_TARGET (UINT64_C(1) << 18)   /* entry bytes of a block */

struct save_header {
    char     magic[8];          /* SAVE_MAGIC */
    uint32_t version;           /* SAVE_VERSION */
    uint32_t header_size;       /* SAVE_HEADER_SIZE */
    uint64_t byte_order;        /* SAVE_BYTE_ORDER as the writer stores it */
    uint64_t key_size, value_size;
    uint64_t key_rules, value_rules;   /* kvshm_record_rules_id() */
    uint64_t block_entries, block_bytes;
    uint64_t blocks, entries;
    uint64_t nbuckets;          /* of the table saved, for the curious */
    uint32_t slots_per_bucket, nnodes;
    int64_t  created;           /* seconds since the epoch */
    char     table[32];
    uint8_t  pad[104];
    uint64_t checksum;          /* XXH3-64 of the bytes before it */
};

struct save_block {
    uint64_t count;
    uint64_t checksum;
};

_Static_assert(sizeof(struct save_header) == SAVE_HEADER_SIZE,
               "a save file's header is 256 bytes");

/* XXH3-64 of the header's bytes before its checksum. */
uint64_t kvs_save_header_sum(const struct save_header *h);

/* Of the whole block of block_bytes past its count and checksum, zeroes
 * included, seeded with its index and count: a flipped bit anywhere in
 * the file is found, and a block moved or repeated does not verify. */
uint64_t kvs_save_block_sum(const struct save_block *b, uint64_t index,
                            size_t block_bytes);

/* The entries of a block a save writes, for entries of esize bytes:
 * SAVE_BLOCK_TARGET bytes of them, or one. */
uint64_t kvs_save_block_entries(size_t esize);

/* The header h of a file of size bytes, against mine, the header this
 * table would write (its sizes, rules and block shape).  Returns
 * MPIKVS_OK, or MPIKVS_ERR_FOREIGN, _VERSION, _CORRUPT, _MISMATCH,
 * _TRUNCATED or _SIZE with why (len bytes) saying what is wrong, to
 * follow the file's name. */
int kvs_save_header_check(const struct save_header *h, uint64_t size,
                          const struct save_header *mine, char *why,
                          size_t len);

#endif
