/*
 * persist.c - mpikvs_save and mpikvs_load: a table's entries in one file,
 * written and read by every rank at once with MPI-IO.
 *
 * The file (integers in the byte order of the writer, which the header
 * names; a reader of another order refuses it):
 *
 *   header (256 bytes) | block 0 | block 1 | ... | block blocks - 1
 *
 * Every block is block_bytes long: its count of entries and an XXH3-64
 * of the rest of the block (seeded with the block's index and count, so
 * a block moved or repeated does not verify), then up to block_entries
 * entries, each the key and then the value, zeroes after the last.  A
 * block of fewer entries ends a rank's share of a round, so the file
 * size is exactly header + blocks * block_bytes and says itself whether
 * it was cut.
 *
 * Save: every rank scans its part of its node's buckets (local.c: slots
 * that verify, never a torn one) into a round of blocks; the ranks learn
 * their offsets in the file (through rank 0) and each writes its round
 * through a file handle of its own; the header comes last.  Every
 * step that waits for the other ranks is bounded (bounded_comm.c): a
 * rank stopped or dead in the middle fails the save of the others with
 * MPIKVS_ERR_STALLED, never a hang.  The file is written
 * as "<path>.partial.XXXXXX", a new file of rank 0's own (persist_file.c),
 * every write's count checked, synced, its size checked and renamed to
 * path, so path is either the old file or the whole new one.
 *
 * Load: rank 0 checks the header and the file size, every rank then
 * verifies its share of the blocks, and only when the whole file
 * verifies does any rank put anything: each rank reads its share again,
 * sends every entry to a rank of the entry's home node in this table
 * (one alltoallv a round) and puts what it receives through the normal
 * put, in shared memory.  A put that evicts (its bucket was full) counts
 * as an entry that did not fit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "async.h"
#include "bounded_comm.h"
#include "errors.h"
#include "key_hash.h"
#include "local.h"
#include "mpi_impl.h"
#include "ops.h"
#include "persist.h"
#include "persist_file.h"
#include "save_format.h"
#include "round.h"

/* A rank's round, the blocks it has in memory at once: 32 blocks of
 * small entries (8 MiB of them), fewer of large ones (a block is one
 * entry past SAVE_BLOCK_TARGET: 7 entries of 1 MiB), at least one. */
#define SAVE_ROUND_BLOCKS 32u
#define SAVE_ROUND_BYTES  ((uint64_t)SAVE_ROUND_BLOCKS * SAVE_BLOCK_TARGET)

static size_t entry_size(const mpikvs_t *kvs)
{
    return kvs->tab.key_size + kvs->tab.value_size;
}

/* The blocks of a round, for blocks of entry_bytes bytes of entries. */
static uint64_t round_blocks(uint64_t entry_bytes)
{
    uint64_t n = SAVE_ROUND_BYTES / entry_bytes;

    return n < 1 ? 1 : n > SAVE_ROUND_BLOCKS ? SAVE_ROUND_BLOCKS : n;
}

static uint64_t rules(const struct kvshm_record *r)
{
    return r ? kvshm_record_rules_id(r) : 0;
}

/* This table's header: sizes and rules, the block shape. */
static void header_make(const mpikvs_t *kvs, struct save_header *h)
{
    size_t esize = entry_size(kvs);

    memset(h, 0, sizeof(*h));
    memcpy(h->magic, SAVE_MAGIC, sizeof(h->magic));
    h->version = SAVE_VERSION;
    h->header_size = SAVE_HEADER_SIZE;
    h->byte_order = SAVE_BYTE_ORDER;
    h->key_size = kvs->tab.key_size;
    h->value_size = kvs->tab.value_size;
    h->key_rules = rules(kvs->table ? &kvs->table->key : NULL);
    h->value_rules = rules(kvs->table ? &kvs->table->value : NULL);
    h->block_entries = kvs_save_block_entries(esize);
    h->block_bytes = sizeof(struct save_block) + h->block_entries * esize;
    h->nbuckets = kvs->tab.nbuckets;
    h->slots_per_bucket = (uint32_t)kvs->tab.slots;
    h->nnodes = kvs->nnodes;
    h->created = (int64_t)time(NULL);
    if (kvs->table)
        snprintf(h->table, sizeof(h->table), "%s", kvs->table->name);
}

static int file_fail(mpikvs_t *kvs, const char *what, const char *path,
                     int mpi_rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;

    MPI_Error_string(mpi_rc, text, &len);
    return kvs_fail(kvs, MPIKVS_ERR_MPI, "%s %s: %s", what, path, text);
}

static int check_path(mpikvs_t *kvs, const char *call, const char *path)
{
    if (!path || !*path)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s: path is NULL or empty",
                        call);
    /* room for the save's partial name */
    if (strlen(path) + KVS_PARTIAL_SUFFIX_LEN >= KVSHM_PERSIST_PATH_MAX)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: the path is longer than %zu bytes", call,
                        KVSHM_PERSIST_PATH_MAX - 1 - KVS_PARTIAL_SUFFIX_LEN);
    return MPIKVS_OK;
}

/* ---- save ---- */

/* A rank's round of blocks, filled by the scan. */
struct round {
    unsigned char *buf;         /* max_blocks blocks */
    uint64_t       max_blocks;  /* a round's, and one bucket's entries */
    uint64_t       nblocks;     /* begun, the last maybe not full */
    uint64_t       entries;     /* of this rank, every round */
    size_t         esize, block_bytes, block_entries;
};

static struct save_block *round_block(struct round *r, uint64_t i)
{
    return (struct save_block *)(r->buf + i * r->block_bytes);
}

static int round_add(mpikvs_t *kvs, const unsigned char *entry, void *arg)
{
    struct round *r = arg;
    struct save_block *b = r->nblocks ? round_block(r, r->nblocks - 1)
                                      : NULL;

    (void)kvs;
    if (!b || b->count == r->block_entries) {
        b = round_block(r, r->nblocks++);
        b->count = 0;
    }
    memcpy((unsigned char *)(b + 1) + b->count * r->esize, entry, r->esize);
    b->count++;
    r->entries++;
    return 0;
}

/* Room left in the round, in entries. */
static uint64_t round_room(const struct round *r)
{
    uint64_t used = r->nblocks ? r->nblocks - 1 : 0, in_last = 0;

    if (r->nblocks)
        in_last = ((struct save_block *)(r->buf + (r->nblocks - 1) *
                                                      r->block_bytes))
                      ->count;
    return (r->max_blocks - used) * r->block_entries - in_last;
}

/* A write of len bytes at offset at of file name returned mrc and st: all
 * of them written?  A full file system can cut a write that MPI-IO does
 * not fail (ompio says so on stderr only); the count shows it. */
static int write_done(mpikvs_t *kvs, const char *name, MPI_Offset at,
                      int len, int mrc, MPI_Status *st)
{
    int got = 0;

    if (mrc != MPI_SUCCESS)
        return file_fail(kvs, "mpikvs_save: writing", name, mrc);
    if (MPI_Get_count(st, MPI_BYTE, &got) != MPI_SUCCESS || got != len)
        return kvs_fail(kvs, -ENOSPC,
                        "mpikvs_save: wrote %d of %d bytes at offset %lld "
                        "of %s (a full file system or a quota, or an I/O "
                        "error; MPI-IO may say which on stderr): the save "
                        "failed and the file it replaces was left as it "
                        "was", got, len, (long long)at, name);
    return MPIKVS_OK;
}

/* Write the rounds of every rank; *blocks gets the count of all. */
static int save_rounds(mpikvs_t *kvs, struct kvs_bcomm *b, MPI_File fh,
                       const char *name, struct round *r, uint64_t *blocks,
                       uint64_t *torn)
{
    uint64_t first, end, base = 0;
    int rc = MPIKVS_OK;

    kvs_local_share(kvs, kvs->local_rank, kvs->local_size, &first, &end);
    for (;;) {
        uint64_t before = 0, total = 0;
        bool more = false;
        r->nblocks = 0;
        /* whole buckets, as many as surely fit */
        while (rc == MPIKVS_OK && first < end &&
               round_room(r) >= kvs->tab.slots) {
            uint64_t n = round_room(r) / kvs->tab.slots;
            if (n > end - first)
                n = end - first;
            rc = kvs_scan_local(kvs, first, first + n, round_add, r, torn);
            first += n;
        }
        if (rc == -ENOMEM)
            rc = kvs_fail(kvs, rc, "mpikvs_save: out of memory");
        int step = kvs_bcomm_offsets(b, rc == MPIKVS_OK ? r->nblocks : 0,
                                     first < end || rc != MPIKVS_OK, &before,
                                     &total, &more);
        if (step != MPIKVS_OK) {
            rc = step;
            break;
        }
        for (uint64_t i = 0; rc == MPIKVS_OK && i < r->nblocks; i++) {
            struct save_block *blk = round_block(r, i);
            unsigned char *tail = (unsigned char *)(blk + 1) + blk->count *
                                                                   r->esize;
            memset(tail, 0, (r->block_entries - blk->count) * r->esize);
            blk->checksum = kvs_save_block_sum(blk, base + before + i,
                                               r->block_bytes);
        }
        if (rc == MPIKVS_OK && r->nblocks) {   /* this rank's, alone */
            MPI_Offset at = (MPI_Offset)(SAVE_HEADER_SIZE +
                                         (base + before) * r->block_bytes);
            int len = (int)(r->nblocks * r->block_bytes);
            MPI_Status st;
            int mrc = MPI_File_write_at(fh, at, r->buf, len, MPI_BYTE, &st);
            rc = write_done(kvs, name, at, len, mrc, &st);
        }
        /* a rank that failed stops the others at the next round */
        if ((rc = kvs_bcomm_agree(b, rc)) != MPIKVS_OK)
            break;
        base += total;
        if (!more)
            break;
    }
    *blocks = base;
    return rc;
}

/* Rank 0, after every rank's writes and syncs: the file holds every
 * byte of the save.  (A write cut short at its end, a full file system,
 * that MPI-IO reported as whole would show here.) */
static int check_size(mpikvs_t *kvs, MPI_File fh, const char *name,
                      uint64_t want)
{
    MPI_Offset size = 0;
    int mrc = MPI_File_get_size(fh, &size);

    if (mrc != MPI_SUCCESS)
        return file_fail(kvs, "mpikvs_save: size of", name, mrc);
    if ((uint64_t)size != want)
        return kvs_fail(kvs, -ENOSPC,
                        "mpikvs_save: %s holds %lld bytes after the "
                        "writes, the save is %llu (the file system is "
                        "full, or a quota): the save failed and the file "
                        "it replaces was left as it was", name,
                        (long long)size, (unsigned long long)want);
    return MPIKVS_OK;
}

int mpikvs_save(mpikvs_t *kvs, const char *path)
{
    struct kvs_partial part = {.fd = -1};
    struct save_header h;
    struct round r = {0};
    struct kvs_bcomm *b = NULL;
    uint64_t blocks = 0, torn = 0, entries = 0;
    MPI_File fh = MPI_FILE_NULL;
    int rc, mrc;

    if (!kvs)
        return kvs_no_handle("mpikvs_save");
    kvs_async_complete(kvs);   /* its puts in the file */
    /* every wait for the other ranks from here on is bounded */
    if ((rc = kvs_bcomm_open(kvs, "mpikvs_save", &b)) != MPIKVS_OK)
        return rc;
    rc = check_path(kvs, "mpikvs_save", path);
    if ((rc = kvs_bcomm_agree(b, rc)) != MPIKVS_OK) {
        kvs_bcomm_close(&b);
        return rc;
    }
    header_make(kvs, &h);
    r.esize = entry_size(kvs);
    r.block_bytes = h.block_bytes;
    r.block_entries = h.block_entries;
    /* a scan takes whole buckets: a round holds one bucket's entries at
     * least, or it would never take one (a bucket of 64 slots of 1 MiB
     * values against 7 blocks) */
    r.max_blocks = round_blocks(h.block_entries * r.esize);
    if (r.max_blocks * r.block_entries < kvs->tab.slots)
        r.max_blocks = (kvs->tab.slots + r.block_entries - 1) /
                       r.block_entries;
    r.buf = malloc(r.max_blocks * r.block_bytes);
    if (!r.buf)
        rc = kvs_fail(kvs, -ENOMEM, "mpikvs_save: out of memory");
    /* rank 0 makes the file, a new one of its own (persist_file.c); the
     * others open it by the name it made */
    if (rc == MPIKVS_OK && kvs->rank == 0)
        rc = kvs_partial_create(kvs, path, &part);
    if ((rc = kvs_bcomm_agree(b, rc)) == MPIKVS_OK)
        rc = kvs_bcomm_bcast(b, part.name, sizeof(part.name));
    /* each rank its own handle, so that no MPI-IO call waits for another
     * rank; no MPI_MODE_CREATE, which would make a file where rank 0's is
     * not */
    if ((rc = kvs_bcomm_agree(b, rc)) == MPIKVS_OK) {
        mrc = MPI_File_open(MPI_COMM_SELF, part.name, MPI_MODE_WRONLY,
                            MPI_INFO_NULL, &fh);
        if (mrc != MPI_SUCCESS) {
            rc = file_fail(kvs, "mpikvs_save: cannot open", part.name, mrc);
            fh = MPI_FILE_NULL;
        }
    }
    rc = kvs_bcomm_agree(b, rc);
    if (rc == MPIKVS_OK)
        rc = save_rounds(kvs, b, fh, part.name, &r, &blocks, &torn);
    if (rc == MPIKVS_OK)
        rc = kvs_bcomm_sum(b, r.entries, &entries);
    if (rc == MPIKVS_OK && kvs->rank == 0) {
        MPI_Status st;
        h.blocks = blocks;
        h.entries = entries;
        h.checksum = kvs_save_header_sum(&h);
        mrc = MPI_File_write_at(fh, 0, &h, sizeof(h), MPI_BYTE, &st);
        rc = write_done(kvs, part.name, 0, sizeof(h), mrc, &st);
    }
    /* every rank's bytes synced, agreed, then rank 0 syncs its handle
     * again and checks the size: MPI-IO's rule for seeing what other
     * handles wrote */
    rc = kvs_bcomm_agree(b, rc);
    if (rc == MPIKVS_OK && (mrc = MPI_File_sync(fh)) != MPI_SUCCESS)
        rc = file_fail(kvs, "mpikvs_save: cannot sync", part.name, mrc);
    rc = kvs_bcomm_agree(b, rc);
    if (rc == MPIKVS_OK && kvs->rank == 0) {
        if ((mrc = MPI_File_sync(fh)) != MPI_SUCCESS)
            rc = file_fail(kvs, "mpikvs_save: cannot sync", part.name, mrc);
        else
            rc = check_size(kvs, fh, part.name,
                            SAVE_HEADER_SIZE + blocks * h.block_bytes);
    }
    rc = kvs_bcomm_agree(b, rc);
    if (fh != MPI_FILE_NULL)
        MPI_File_close(&fh);
    /* path is the old file or the whole new one; a failed save removes
     * its own partial file and nothing else */
    if (kvs->rank == 0) {
        if (rc == MPIKVS_OK)
            rc = kvs_partial_commit(kvs, &part, path);
        else
            kvs_partial_discard(&part);
    }
    rc = kvs_bcomm_agree(b, rc);
    kvs_bcomm_close(&b);
    if (rc == MPIKVS_OK) {
        KVS_COUNT(&kvs->tab, saved, r.entries);
        KVS_COUNT(&kvs->tab, save_torn, torn);
    }
    free(r.buf);
    return rc;
}

/* ---- load ---- */

/* Rank 0: the header of the file of size bytes, and whether this table
 * can take its entries (save_format.c). */
static int check_header(mpikvs_t *kvs, const char *path,
                        const struct save_header *h, uint64_t size)
{
    struct save_header mine;
    char why[400];
    int rc;

    header_make(kvs, &mine);
    rc = kvs_save_header_check(h, size, &mine, why, sizeof(why));
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "mpikvs_load: %s %s", path, why);
    return MPIKVS_OK;
}

/* Rank 0 reads and checks the header; every rank gets it. */
static int load_header(mpikvs_t *kvs, MPI_File fh, const char *path,
                       struct save_header *h)
{
    int rc = MPIKVS_OK, mrc;

    memset(h, 0, sizeof(*h));
    if (kvs->rank == 0) {
        MPI_Offset size = 0;
        MPI_Status st;
        int got = 0;
        if ((mrc = MPI_File_get_size(fh, &size)) != MPI_SUCCESS)
            rc = file_fail(kvs, "mpikvs_load: size of", path, mrc);
        else if ((mrc = MPI_File_read_at(fh, 0, h, sizeof(*h), MPI_BYTE,
                                         &st)) != MPI_SUCCESS)
            rc = file_fail(kvs, "mpikvs_load: reading", path, mrc);
        if (rc == MPIKVS_OK) {
            MPI_Get_count(&st, MPI_BYTE, &got);
            rc = check_header(kvs, path, h,
                              (uint64_t)size < (uint64_t)got ? (uint64_t)got
                                                             : (uint64_t)size);
        }
    }
    if (MPI_Bcast(h, sizeof(*h), MPI_BYTE, 0, kvs->comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast failed");
    return kvs_agree(kvs, rc);
}

/* Every rank's share of the blocks, in rounds of round blocks (the
 * same on every rank: the reads are collective). */
struct share {
    uint64_t first, end, rounds, round;
};

static void share_of(const mpikvs_t *kvs, const struct save_header *h,
                     struct share *s)
{
    uint64_t most = (h->blocks + (uint64_t)kvs->size - 1) /
                    (uint64_t)kvs->size;

    s->first = (uint64_t)(((unsigned __int128)h->blocks * (unsigned)kvs->rank) /
                          (unsigned)kvs->size);
    s->end = (uint64_t)(((unsigned __int128)h->blocks *
                         (unsigned)(kvs->rank + 1)) / (unsigned)kvs->size);
    s->round = round_blocks(h->block_bytes - sizeof(struct save_block));
    s->rounds = (most + s->round - 1) / s->round;
}

/* Read round i of the share (collective) and verify its blocks; *n gets
 * how many. */
static int read_round(mpikvs_t *kvs, MPI_File fh, const char *path,
                      const struct save_header *h, const struct share *s,
                      uint64_t i, unsigned char *buf, uint64_t *n,
                      uint64_t *entries)
{
    uint64_t first = s->first + i * s->round;
    MPI_Status st;
    int mrc, len, got = 0;

    *n = first < s->end ? s->end - first : 0;
    if (*n > s->round)
        *n = s->round;
    len = (int)(*n * h->block_bytes);   /* check_header bounds it */
    mrc = MPI_File_read_at_all(fh,
                               (MPI_Offset)(SAVE_HEADER_SIZE +
                                            first * h->block_bytes),
                               buf, len, MPI_BYTE, &st);
    if (mrc != MPI_SUCCESS)
        return file_fail(kvs, "mpikvs_load: reading", path, mrc);
    /* the file cut since its size was checked: never verify the bytes
     * of an earlier round left in buf */
    if (MPI_Get_count(&st, MPI_BYTE, &got) != MPI_SUCCESS || got != len)
        return kvs_fail(kvs, MPIKVS_ERR_TRUNCATED,
                        "mpikvs_load: read %d of %d bytes of %s at block "
                        "%llu: the file was cut while it was loaded",
                        got, len, path, (unsigned long long)first);
    for (uint64_t j = 0; j < *n; j++) {
        struct save_block *b =
            (struct save_block *)(buf + j * h->block_bytes);
        if (b->count > h->block_entries ||
            b->checksum !=
                kvs_save_block_sum(b, first + j, h->block_bytes))
            return kvs_fail(kvs, MPIKVS_ERR_CORRUPT,
                            "mpikvs_load: block %llu of %s (at byte %llu) "
                            "does not verify: the file is damaged; nothing "
                            "was loaded", (unsigned long long)(first + j),
                            path,
                            (unsigned long long)(SAVE_HEADER_SIZE +
                                                 (first + j) *
                                                     h->block_bytes));
        *entries += b->count;
    }
    return MPIKVS_OK;
}

/* Pass 1: the whole file verifies, and holds the entries it says. */
static int verify_file(mpikvs_t *kvs, MPI_File fh, const char *path,
                       const struct save_header *h, const struct share *s,
                       unsigned char *buf)
{
    uint64_t entries = 0, all = 0, n;
    int rc = MPIKVS_OK;

    for (uint64_t i = 0; i < s->rounds; i++) {
        if (rc == MPIKVS_OK)
            rc = read_round(kvs, fh, path, h, s, i, buf, &n, &entries);
        else   /* keep up with the others' collective reads */
            MPI_File_read_at_all(fh, 0, buf, 0, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    if ((rc = kvs_agree(kvs, rc)) != MPIKVS_OK)
        return rc;
    if (MPI_Allreduce(&entries, &all, 1, MPI_UINT64_T, MPI_SUM, kvs->comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce failed");
    if (all != h->entries)
        rc = kvs_fail(kvs, MPIKVS_ERR_CORRUPT,
                      "mpikvs_load: %s holds %llu entries, its header says "
                      "%llu: the file is damaged; nothing was loaded", path,
                      (unsigned long long)all,
                      (unsigned long long)h->entries);
    return rc;
}

/* Where an entry goes: the ranks of each node, in comm order. */
struct homes {
    int *ranks;        /* [size]: grouped by node */
    int *start;        /* [nnodes + 1]: node n's are start[n]..start[n+1] */
};

static int homes_make(mpikvs_t *kvs, struct homes *hm)
{
    uint32_t *node = malloc((size_t)kvs->size * sizeof(*node));
    int *cursor = malloc(kvs->nnodes * sizeof(*cursor));
    int rc = MPIKVS_OK;

    hm->ranks = malloc((size_t)kvs->size * sizeof(*hm->ranks));
    hm->start = calloc(kvs->nnodes + 1u, sizeof(*hm->start));
    if (!node || !cursor || !hm->ranks || !hm->start)
        rc = kvs_fail(kvs, -ENOMEM, "mpikvs_load: out of memory");
    if ((rc = kvs_agree(kvs, rc)) == MPIKVS_OK &&
        MPI_Allgather(&kvs->node, 1, MPI_UINT32_T, node, 1, MPI_UINT32_T,
                      kvs->comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allgather failed");
    if (rc == MPIKVS_OK) {   /* a counting sort of the ranks by node */
        for (int r = 0; r < kvs->size; r++)
            hm->start[node[r] + 1]++;
        for (uint32_t n = 0; n < kvs->nnodes; n++)
            hm->start[n + 1] += hm->start[n];
        memcpy(cursor, hm->start, kvs->nnodes * sizeof(*cursor));
        for (int r = 0; r < kvs->size; r++)
            hm->ranks[cursor[node[r]]++] = r;
    }
    free(node);
    free(cursor);
    return rc;
}

static int home_rank(const struct homes *hm, const struct kvs_key *k)
{
    int n = hm->start[k->node + 1] - hm->start[k->node];

    return hm->ranks[hm->start[k->node] + (int)(k->hash % (uint64_t)n)];
}

/* Pass 2, one round: the entries of buf's n blocks to their home ranks,
 * and what comes here put.  Each entry's key is hashed once, where it is
 * read: the hash picks the home rank and travels with the entry (a wire
 * entry: the hash, then the entry), so the home rank does not hash it
 * again.  Counts and displacements are in wire entries (the type entry),
 * so that a round of a large job stays within an int. */
#define WIRE_HASH sizeof(XXH128_hash_t)

struct route {
    int          *counts, *displs, *rcounts, *rdispls, *at;  /* [size] */
    MPI_Datatype  entry;    /* WIRE_HASH + key_size + value_size bytes */
};

static int put_round(mpikvs_t *kvs, const struct save_header *h,
                     const unsigned char *buf, uint64_t n,
                     const struct homes *hm, struct route *rt)
{
    size_t esize = entry_size(kvs), wsize = WIRE_HASH + esize;
    uint64_t total = 0, got = 0, i = 0;
    unsigned char *send = NULL, *recv = NULL;
    XXH128_hash_t *hash = NULL;
    int *home = NULL, rc = MPIKVS_OK;
    struct kvs_key k;

    memset(rt->counts, 0, (size_t)kvs->size * sizeof(int));
    for (uint64_t j = 0; j < n; j++)
        total += ((const struct save_block *)(buf + j * h->block_bytes))
                     ->count;
    hash = malloc(total * sizeof(*hash) + 1);
    home = malloc(total * sizeof(*home) + 1);
    if (!hash || !home)
        rc = kvs_fail(kvs, -ENOMEM, "mpikvs_load: out of memory");
    for (uint64_t j = 0; rc == MPIKVS_OK && j < n; j++) {
        const struct save_block *b =
            (const struct save_block *)(buf + j * h->block_bytes);
        for (uint64_t e = 0; e < b->count; e++, i++) {
            const unsigned char *x = (const unsigned char *)(b + 1) +
                                     e * esize;
            hash[i] = kvshm_key_hash(x, kvs->tab.key_size);
            kvs_key_from_hash(kvs, x, hash[i], &k);
            home[i] = home_rank(hm, &k);
            rt->counts[home[i]]++;
        }
    }
    for (int r = 0, d = 0; r < kvs->size; d += rt->counts[r], r++)
        rt->displs[r] = rt->at[r] = d;
    if (rc == MPIKVS_OK && !(send = malloc(total * wsize + 1)))
        rc = kvs_fail(kvs, -ENOMEM, "mpikvs_load: out of memory");
    i = 0;
    for (uint64_t j = 0; rc == MPIKVS_OK && j < n; j++) {
        const struct save_block *b =
            (const struct save_block *)(buf + j * h->block_bytes);
        for (uint64_t e = 0; e < b->count; e++, i++) {
            unsigned char *to = send + (size_t)rt->at[home[i]]++ * wsize;
            memcpy(to, &hash[i], WIRE_HASH);
            memcpy(to + WIRE_HASH, (const unsigned char *)(b + 1) + e * esize,
                   esize);
        }
    }
    if (MPI_Alltoall(rt->counts, 1, MPI_INT, rt->rcounts, 1, MPI_INT,
                     kvs->comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Alltoall failed");
    for (int r = 0, d = 0; r < kvs->size; d += rt->rcounts[r], r++) {
        rt->rdispls[r] = d;
        got += (uint64_t)rt->rcounts[r];
    }
    if (rc == MPIKVS_OK && !(recv = malloc(got * wsize + 1)))
        rc = kvs_fail(kvs, -ENOMEM, "mpikvs_load: out of memory");
    if ((rc = kvs_agree(kvs, rc)) == MPIKVS_OK &&
        MPI_Alltoallv(send, rt->counts, rt->displs, rt->entry, recv,
                      rt->rcounts, rt->rdispls, rt->entry,
                      kvs->comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Alltoallv failed");
    for (uint64_t e = 0; rc == MPIKVS_OK && e < got; e++) {
        const unsigned char *w = recv + e * wsize;
        XXH128_hash_t kh;

        memcpy(&kh, w, WIRE_HASH);   /* unaligned in the wire entry */
        kvs_key_from_hash(kvs, w + WIRE_HASH, kh, &k);
        rc = kvs_put(kvs, &k, w + WIRE_HASH + kvs->tab.key_size);
        if (rc == MPIKVS_OK) {
            KVS_COUNT(&kvs->tab, loaded, 1);
            rc = kvs_near_put(kvs, "mpikvs_load", w + WIRE_HASH,
                              w + WIRE_HASH + kvs->tab.key_size);
        }
    }
    free(hash);
    free(home);
    free(send);
    free(recv);
    return rc;
}

static int put_file(mpikvs_t *kvs, MPI_File fh, const char *path,
                    const struct save_header *h, const struct share *s,
                    unsigned char *buf)
{
    struct homes hm = {0};
    int *ints = malloc(5 * (size_t)kvs->size * sizeof(int));
    struct route rt = {.entry = MPI_DATATYPE_NULL};
    uint64_t entries = 0, n;
    int rc = ints ? MPIKVS_OK
                  : kvs_fail(kvs, -ENOMEM, "mpikvs_load: out of memory");

    if (rc == MPIKVS_OK) {
        rt.counts = ints;
        rt.displs = ints + kvs->size;
        rt.rcounts = ints + 2 * kvs->size;
        rt.rdispls = ints + 3 * kvs->size;
        rt.at = ints + 4 * kvs->size;
        if (MPI_Type_contiguous((int)(WIRE_HASH + entry_size(kvs)), MPI_BYTE,
                                &rt.entry) !=
                MPI_SUCCESS ||
            MPI_Type_commit(&rt.entry) != MPI_SUCCESS)
            rc = kvs_fail(kvs, MPIKVS_ERR_MPI,
                          "mpikvs_load: MPI_Type_contiguous failed");
    }
    if ((rc = kvs_agree(kvs, rc)) == MPIKVS_OK)
        rc = homes_make(kvs, &hm);
    rc = kvs_agree(kvs, rc);
    for (uint64_t i = 0; rc == MPIKVS_OK && i < s->rounds; i++) {
        /* verified again: the file may have changed since pass 1 */
        rc = read_round(kvs, fh, path, h, s, i, buf, &n, &entries);
        if ((rc = kvs_agree(kvs, rc)) == MPIKVS_OK)
            rc = put_round(kvs, h, buf, n, &hm, &rt);
        rc = kvs_agree(kvs, rc);
    }
    if (rt.entry != MPI_DATATYPE_NULL)
        MPI_Type_free(&rt.entry);
    free(hm.ranks);
    free(hm.start);
    free(ints);
    return rc;
}

/* at_open (the config's load): a file not there yet is a cold start,
 * and a table that holds entries (a job-scope region an earlier step
 * filled) is left as it is. */
static int load(mpikvs_t *kvs, const char *path, unsigned flags,
                mpikvs_load_report_t *report, bool at_open)
{
    struct save_header h;
    struct share s;
    MPI_File fh = MPI_FILE_NULL;
    unsigned char *buf = NULL;
    uint64_t first, end, loaded0, evicted0;
    int rc, mrc, any = 0, mine;

    if (!kvs)
        return kvs_no_handle("mpikvs_load");
    kvs_async_complete(kvs);   /* the table as it is, before the file */
    rc = check_path(kvs, "mpikvs_load", path);
    if (rc == MPIKVS_OK && (flags & ~MPIKVS_LOAD_MERGE))
        rc = kvs_fail(kvs, MPIKVS_ERR_INVAL,
                      "mpikvs_load: flags 0x%x has bits that are not "
                      "MPIKVS_LOAD_MERGE", flags);
    if ((rc = kvs_agree(kvs, rc)) != MPIKVS_OK)
        return rc;
    if (!(flags & MPIKVS_LOAD_MERGE)) {
        kvs_local_share(kvs, kvs->local_rank, kvs->local_size, &first, &end);
        mine = kvs_local_any(kvs, first, end);
        if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, kvs->comm) !=
            MPI_SUCCESS)
            return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allreduce failed");
        /* at open, a region an earlier step of the job filled is
         * warm already */
        if (any && at_open) {
            kvs->opened.persist = MPIKVS_PERSIST_KEPT;
            return MPIKVS_OK;
        }
        if (any)
            return kvs_fail(kvs, MPIKVS_ERR_NOTEMPTY,
                            "mpikvs_load: the table already holds entries "
                            "(a region kept from an earlier step, or puts "
                            "before the load): %s was not loaded; pass "
                            "MPIKVS_LOAD_MERGE to load into it anyway",
                            path);
    }
    /* a FIFO or a device would block MPI_File_open, or read something
     * else: every rank looks at what its path names first */
    rc = kvs_load_check_file(kvs, path);
    if ((rc = kvs_agree(kvs, rc)) == MPIKVS_OK) {
        mrc = MPI_File_open(kvs->comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL,
                            &fh);
        if (mrc != MPI_SUCCESS) {
            rc = file_fail(kvs, "mpikvs_load: cannot open", path, mrc);
            fh = MPI_FILE_NULL;
        }
    }
    if ((rc = kvs_agree(kvs, rc)) != MPIKVS_OK) {
        if (fh != MPI_FILE_NULL)
            MPI_File_close(&fh);
        /* the config's load before the first save: a cold start */
        if (rc == -ENOENT && at_open) {
            kvs->err.text[0] = '\0';
            kvs->opened.persist = MPIKVS_PERSIST_NO_FILE;
            return MPIKVS_OK;
        }
        return rc;
    }
    rc = load_header(kvs, fh, path, &h);
    if (rc == MPIKVS_OK) {
        share_of(kvs, &h, &s);
        buf = malloc(s.round * h.block_bytes);
        rc = kvs_agree(kvs, buf ? MPIKVS_OK
                            : kvs_fail(kvs, -ENOMEM,
                                       "mpikvs_load: out of memory"));
    }
    if (rc == MPIKVS_OK)
        rc = verify_file(kvs, fh, path, &h, &s, buf);
    loaded0 = kvs->tab.stats->loaded;
    evicted0 = kvs->tab.stats->evictions;
    if (rc == MPIKVS_OK)
        rc = put_file(kvs, fh, path, &h, &s, buf);
    KVS_COUNT(&kvs->tab, load_unfit, kvs->tab.stats->evictions - evicted0);
    MPI_File_close(&fh);
    free(buf);
    /* every rank sees what was put; agreed, as the report's sum below
     * is collective */
    if (rc == MPIKVS_OK)
        rc = kvs_agree(kvs, mpikvs_fence(kvs));
    if (rc == MPIKVS_OK && report) {
        uint64_t me[2] = {kvs->tab.stats->loaded - loaded0,
                          kvs->tab.stats->evictions - evicted0},
                 sum[2];
        mrc = MPI_Allreduce(me, sum, 2, MPI_UINT64_T, MPI_SUM, kvs->comm);
        if (mrc != MPI_SUCCESS)
            return kvs_mpi_fail(kvs, "MPI_Allreduce in mpikvs_load", mrc);
        report->entries = h.entries;
        report->loaded = sum[0];
        report->not_fitting = sum[1];
    }
    return rc;
}

int mpikvs_load(mpikvs_t *kvs, const char *path, unsigned flags,
                mpikvs_load_report_t *report)
{
    return load(kvs, path, flags, report, false);
}

int kvs_load_at_open(mpikvs_t *kvs, const char *path)
{
    /* what it did, for mpikvs_info: loaded, unless load says otherwise */
    kvs->opened.persist = MPIKVS_PERSIST_LOADED;
    return load(kvs, path, 0, &kvs->opened.persist_report, true);
}
