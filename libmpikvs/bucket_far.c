/*
 * bucket_far.c - the bucket I/O through the transport (bucket.h): a
 * bucket of another node (or, in the fine-lock mode, of any) read into
 * the handle's scratch copy, its slots written back, completed by the
 * transport's flush before the call returns.
 *
 * Three of them, one per way the writers of a bucket race:
 *   claimed    lock-free where the transport's atomics are the CPU's
 *              (transport.h, cpu_atomic): a slot claimed with the
 *              target's compare-and-swap, as the home node's ranks claim
 *              it;
 *   unclaimed  lock-free without (the mpi transport): a slot written as
 *              picked, since a remote compare-and-swap would not be
 *              atomic with the home node's; two puts that pick one free
 *              slot at once, one here and one on the key's node, may
 *              then lose one key (a later miss, never a wrong value;
 *              mpikvs(7));
 *   locked     the lock modes: the caller's lock keeps every other writer
 *              out of the bucket.
 * Lock-free, a slot that does not verify stays as it is: marking it would
 * take a remote compare-and-swap on the meta word, which the home node's
 * ranks change with CPU atomics, and the claimed I/O's is one only where
 * they are the CPU's; a put of the key overwrites the slot, and a reader
 * on the home node invalidates it.  Under a lock, meta is still as read,
 * and one write of the meta word marks the slot invalid.
 *
 * Two read paths (the route's far_slot, chosen for each node when the
 * routes are set: kvs_far_slot_choose).
 * Bucket: a get reads the whole bucket, one transfer, into the scratch
 * copy, and copies the value from there.  Slot: it reads the bucket's
 * header, then only the key, value and checksum of a slot of the key's
 * tag, the value straight into the caller's buffer, where it is
 * verified; a put writes key, value and checksum from where they are,
 * with no slot image.  The first is one round trip for all the slots'
 * bytes, the second two round trips for one slot's: slot sizes decide.
 * Either way a torn slot is told by its checksum, as the transport's
 * bytes come in no order (slot_read.h).
 */
#include <string.h>

#include "bucket_far.h"
#include "route.h"
#include "slot.h"

/* The read path of a table whose slots are slot_size bytes, to a node
 * whose region is mapped here or not, where the config asks for far_read
 * (auto: by size). */
bool kvs_far_slot_choose(enum kvshm_far_read far_read, uint64_t slot_size,
                         bool mapped)
{
    if (far_read == KVSHM_FAR_READ_BUCKET)
        return false;
    if (far_read == KVSHM_FAR_READ_SLOT)
        return true;
    return slot_size >= (mapped ? KVS_FAR_SLOT_MIN_MAPPED
                                : KVS_FAR_SLOT_MIN_NETWORK);
}

static bool slot_path(const mpikvs_t *kvs, uint32_t node)
{
    return kvs_route(kvs, node)->far_slot;
}

void kvs_count_bucket_read(mpikvs_t *kvs, bool hit)
{
    /* the bucket's transfer, and a hit's copy out of it */
    KVS_COUNT(&kvs->tab, moved, kvs->tab.bucket_size);
    KVS_COUNT(&kvs->tab, copies, hit ? 2 : 1);
}

/* The header and the slots of k's tag that it names, into the scratch
 * copy at their places (after one flush each): what a pick and a look
 * read of a bucket (slot.h), and nothing else. */
static int fetch_sparse(mpikvs_t *kvs, const struct kvs_key *k,
                        unsigned char *into)
{
    int rc = kvs_read_header(kvs, k, into);

    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    for (uint64_t i = 0; i < kvs->tab.slots && rc == MPIKVS_OK; i++) {
        uint64_t meta = kvshm_meta_load(into, i, false);
        if (kvshm_meta_live(meta) && kvshm_meta_tag(meta) == k->tag)
            rc = kvs->tp->read(kvs, k->node, kvs_slot_disp(kvs, k->bucket, i),
                               kvs_slot_at(&kvs->tab, into, i),
                               kvs->tab.slot_size);
    }
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

static int far_bucket(struct kvs_access *a, unsigned char **b)
{
    *b = a->kvs->scratch;
    return slot_path(a->kvs, a->k->node)
               ? fetch_sparse(a->kvs, a->k, a->kvs->scratch)
               : kvs_fetch_bucket(a->kvs, a->k, a->kvs->scratch);
}

/* The get's look-up: the whole bucket, or its header and then each slot
 * of k's tag until one verifies (the first that is k's key and does not
 * verify is torn: the protocol reads again). */
static int far_find(struct kvs_access *a, void *value, uint64_t *torn,
                    uint64_t *meta)
{
    mpikvs_t *kvs = a->kvs;
    const struct kvs_key *k = a->k;
    unsigned char *probe = kvs->scratch;
    uint64_t i = 0;
    int rc;

    if (!slot_path(kvs, k->node) || !value) {
        if ((rc = kvs_fetch_bucket(kvs, k, kvs->scratch)) != MPIKVS_OK)
            return rc;
        enum slot_found f = kvs_slot_find(&kvs->tab, kvs->scratch, false,
                                          k, value, torn, meta);
        kvs_count_bucket_read(kvs, f == SLOT_HIT);
        return (int)f;
    }
    if ((rc = kvs_read_header(kvs, k, probe)) == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    if (rc != MPIKVS_OK)
        return rc;
    KVS_COUNT(&kvs->tab, moved, kvshm_bucket_header_size(kvs->tab.slots));
    while ((i = kvs_probe_next(kvs, probe, k, i)) < kvs->tab.slots) {
        enum kvshm_slot_read r;
        if ((rc = kvs_read_slot_parts(kvs, k, i, probe, value)) ==
            MPIKVS_OK)
            rc = kvs->tp->flush(kvs, k->node);
        if (rc != MPIKVS_OK)
            return rc;
        r = kvs_probe_verify(kvs, probe, k, value);
        if (r == KVSHM_SLOT_READ_VERIFIED)
            return SLOT_HIT;
        if (r == KVSHM_SLOT_READ_TORN) {
            *torn = i;
            *meta = kvshm_meta_load(probe, i, false);
            return SLOT_TORN;
        }
        i++;
    }
    return SLOT_MISS;
}

/* The target's CPU runs the compare-and-swap (transport.h, cpu_atomic),
 * a locked instruction there, and completes it before the next read:
 * the fence put-if-absent asks for. */
static int far_cas(struct kvs_access *a, uint64_t i, uint64_t expect,
                   uint64_t desired, uint64_t *seen, bool fence)
{
    mpikvs_t *kvs = a->kvs;
    int rc = kvs->tp->cas64(kvs, a->k->node,
                            kvs_meta_disp(kvs, a->k->bucket, i), expect,
                            desired, seen);

    (void)fence;
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, a->k->node) : rc;
}

/* The slot's image, and before it an unclaimed slot's meta word; then
 * the flush: complete at the target before the image is reused, another
 * rank may read the slot, or (claimed) BUSY goes. */
static int far_write(struct kvs_access *a, unsigned char *b, uint64_t i,
                     const uint64_t *meta, const void *value)
{
    mpikvs_t *kvs = a->kvs;
    const struct kvs_key *k = a->k;
    int rc;

    (void)b;
    if (slot_path(kvs, k->node)) {   /* no image: key, value and checksum */
        rc = meta ? kvs->tp->write(kvs, k->node,
                                   kvs_meta_disp(kvs, k->bucket, i), meta,
                                   sizeof(*meta))
                  : MPIKVS_OK;
        if (rc == MPIKVS_OK)
            rc = kvs_write_slot_parts(kvs, k, i, value, &kvs->put_sum);
    } else {
        kvs_slot_image(&kvs->tab, k, value, kvs->slot_image);
        rc = meta ? kvs_write_slot(kvs, k, i, meta, kvs->slot_image)
                  : kvs->tp->write(kvs, k->node,
                                   kvs_slot_disp(kvs, k->bucket, i),
                                   kvs->slot_image, kvs->tab.slot_size);
    }
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

static int leave_torn(struct kvs_access *a, unsigned char *b, uint64_t i,
                      uint64_t meta)
{
    (void)a;
    (void)b;
    (void)i;
    (void)meta;
    return 0;
}

static int invalidate_locked(struct kvs_access *a, unsigned char *b,
                             uint64_t i, uint64_t meta)
{
    mpikvs_t *kvs = a->kvs;
    uint64_t word = meta | KVSHM_SLOT_INVALID;
    int rc;

    (void)b;
    rc = kvs->tp->write(kvs, a->k->node,
                        kvs_meta_disp(kvs, a->k->bucket, i), &word,
                        sizeof(word));
    if (rc == MPIKVS_OK)   /* before word goes out of scope */
        rc = kvs->tp->flush(kvs, a->k->node);
    return rc == MPIKVS_OK ? 1 : rc;
}

const struct kvs_bucket_io kvs_far_claimed_io = {
    .shared = false,
    .locked = false,
    .bucket = far_bucket,
    .find = far_find,
    .cas = far_cas,
    .write = far_write,
    .invalidate = leave_torn};

const struct kvs_bucket_io kvs_far_unclaimed_io = {
    .shared = false,
    .locked = false,
    .bucket = far_bucket,
    .find = far_find,
    .cas = NULL,
    .write = far_write,
    .invalidate = leave_torn};

const struct kvs_bucket_io kvs_far_locked_io = {
    .shared = false,
    .locked = true,
    .bucket = far_bucket,
    .find = far_find,
    .cas = NULL,
    .write = far_write,
    .invalidate = invalidate_locked};

int kvs_read_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *into)
{
    return kvs->tp->read(kvs, k->node, kvs_bucket_disp(kvs, k->bucket), into,
                         kvs->tab.bucket_size);
}

int kvs_write_slot(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                   const uint64_t *meta, const unsigned char *image)
{
    int rc = kvs->tp->write(kvs, k->node, kvs_meta_disp(kvs, k->bucket, i),
                            meta, sizeof(*meta));

    if (rc != MPIKVS_OK)
        return rc;
    return kvs->tp->write(kvs, k->node, kvs_slot_disp(kvs, k->bucket, i),
                          image, kvs->tab.slot_size);
}

int kvs_fetch_bucket(mpikvs_t *kvs, const struct kvs_key *k,
                     unsigned char *into)
{
    int rc = kvs_read_bucket(kvs, k, into);

    /* The bucket must be in our buffer before we read it. */
    return rc == MPIKVS_OK ? kvs->tp->flush(kvs, k->node) : rc;
}

int kvs_read_header(mpikvs_t *kvs, const struct kvs_key *k,
                    unsigned char *probe)
{
    return kvs->tp->read(kvs, k->node, kvs_bucket_disp(kvs, k->bucket), probe,
                         kvshm_bucket_header_size(kvs->tab.slots));
}

uint64_t kvs_probe_next(const mpikvs_t *kvs, const unsigned char *probe,
                        const struct kvs_key *k, uint64_t from)
{
    for (; from < kvs->tab.slots; from++) {
        uint64_t meta = kvshm_meta_load(probe, from, false);
        if (kvshm_meta_live(meta) && kvshm_meta_tag(meta) == k->tag)
            break;
    }
    return from;
}

/* Where a probe keeps a slot's key and checksum: after the header. */
static unsigned char *probe_key(const mpikvs_t *kvs, unsigned char *probe)
{
    return probe + kvshm_bucket_header_size(kvs->tab.slots);
}

static unsigned char *probe_sum(const mpikvs_t *kvs, unsigned char *probe)
{
    return probe_key(kvs, probe) + kvshm_align8(kvs->tab.key_size);
}

uint64_t kvs_probe_size(const mpikvs_t *kvs)
{
    return kvshm_bucket_header_size(kvs->tab.slots) +
           kvshm_align8(kvs->tab.key_size) + KVSHM_SLOT_CHECKSUM_SIZE;
}

/* Where slot i of k's bucket keeps its three parts, in k's node's region,
 * and their sizes: key, value, checksum. */
struct slot_parts {
    uint64_t disp[3];
    size_t   len[3];
};

static struct slot_parts slot_parts(const mpikvs_t *kvs,
                                    const struct kvs_key *k, uint64_t i)
{
    uint64_t slot = kvs_slot_disp(kvs, k->bucket, i);

    return (struct slot_parts){
        .disp = {slot + KVSHM_SLOT_KV_OFFSET,
                 slot + kvshm_slot_value_offset(kvs->tab.key_size),
                 slot + kvshm_slot_checksum_offset(kvs->tab.slot_size)},
        .len = {kvs->tab.key_size, kvs->tab.value_size,
                KVSHM_SLOT_CHECKSUM_SIZE}};
}

int kvs_read_slot_parts(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                        unsigned char *probe, void *value)
{
    struct slot_parts p = slot_parts(kvs, k, i);
    void *into[3] = {probe_key(kvs, probe), value, probe_sum(kvs, probe)};
    int rc = MPIKVS_OK;

    for (int j = 0; j < 3 && rc == MPIKVS_OK; j++) {
        rc = kvs->tp->read(kvs, k->node, p.disp[j], into[j], p.len[j]);
        KVS_COUNT(&kvs->tab, moved, p.len[j]);
    }
    KVS_COUNT(&kvs->tab, copies, 1);
    return rc;
}

enum kvshm_slot_read kvs_probe_verify(mpikvs_t *kvs, unsigned char *probe,
                                      const struct kvs_key *k,
                                      const void *value)
{
    uint64_t sum;

    KVS_COUNT(&kvs->tab, probes, 1);
    if (memcmp(probe_key(kvs, probe), k->bytes, kvs->tab.key_size) != 0)
        return KVSHM_SLOT_READ_OTHER;
    memcpy(&sum, probe_sum(kvs, probe), sizeof(sum));
    return kvshm_slot_checksum(value, kvs->tab.value_size, k->seed) == sum
               ? KVSHM_SLOT_READ_VERIFIED
               : KVSHM_SLOT_READ_TORN;
}

int kvs_write_slot_parts(mpikvs_t *kvs, const struct kvs_key *k, uint64_t i,
                         const void *value, uint64_t *sum)
{
    struct slot_parts p = slot_parts(kvs, k, i);
    const void *from[3] = {k->bytes, value, sum};
    int rc = MPIKVS_OK;

    *sum = kvshm_slot_checksum(value, kvs->tab.value_size, k->seed);
    for (int j = 0; j < 3 && rc == MPIKVS_OK; j++)
        rc = kvs->tp->write(kvs, k->node, p.disp[j], from[j], p.len[j]);
    return rc;
}
