/*
 * tier.c - the node tier inside the DHT (CLaMPI's caching of remote gets,
 * on SHMEMPMI's read-only tier).
 *
 * A get whose home is another node first looks in its own node's tier;
 * on a tier miss it goes remote, and a remote hit is recorded in the
 * rank's bounded buffer.  At mpikvs_fence the node's ranks hand their
 * records to the node's leader, the tier's only writer, which publishes
 * them (shm/tier.c: a reader sees an entry whole or not at all); the
 * next epoch finds them with no MPI call.
 *
 * Modes, per table: off (no tier), always (entries are never dropped: a
 * surrogate cache, where a key's value never changes) and user (entries
 * hold until mpikvs_tier_invalidate).  A put updates the key's home; the
 * tier keeps serving the value it has until it is invalidated.
 *
 * A tier that cannot be read (its writer died in mid-publication and no
 * writer has repaired it yet, shm/tier.h; or damage) is a miss of the
 * tier: the get goes to the key's home, as any tier miss does.  After one
 * such lookup the rank skips the tier until the next fence (where a new
 * writer may have taken over), so it waits out the stall timeout once per
 * epoch, not once per get; tier_stalls counts them.
 *
 * A full tier stops taking entries (counted as dropped).  The alternative,
 * rebuilding it around the most-hit entries, needs a hit count per entry,
 * i.e. readers writing to shared memory on every hit, which is exactly
 * what makes the tier's reads cheap and flat in the number of readers.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "key.h"
#include "mpi_impl.h"
#include "node_tier.h"
#include "tier.h"
#include "verify.h"

#define RECORDS_MIN 256u
#define RECORDS_MAX 65536u
/* The floor of RECORDS_MIN records holds while they take at most this:
 * 256 records of 1 MiB values would be 256 MiB a rank, and as much again
 * per rank at the leader's gather, for a tier that may hold a few. */
#define RECORDS_MIN_BYTES (UINT64_C(4) << 20)

/* A remote hit kept for the fence: the key's tier hash, the key, the
 * value; the leader publishes it without hashing the key again. */
static size_t record_size(const mpikvs_t *kvs)
{
    return sizeof(uint64_t) + kvs->tab.key_size + kvs->tab.value_size;
}

/* The tier's name and size: the plugin's, or "<table>" and the plan's
 * (open.c). */
static bool tier_wanted(const mpikvs_t *kvs, const char **prefix,
                        uint64_t *bytes)
{
    const struct kvshm_table_config *t = kvs->table;

    if (!t || !t->tier.enabled || t->tier.caching == KVSHM_CACHING_OFF)
        return false;
    if (kvs->layout) {
        for (size_t i = 0; i < kvs->layout->ntables; i++) {
            const struct kvshm_job_table *jt = &kvs->layout->tables[i];
            if (strcmp(jt->name, t->name) == 0 && jt->tier_bytes) {
                *prefix = jt->tier_prefix;
                *bytes = jt->tier_bytes;
                return true;
            }
        }
        return false;   /* the plugin made none: caching stays off */
    }
    *prefix = t->name;
    *bytes = kvs->tier_bytes;
    return *bytes > 0;
}

static int make_records(mpikvs_t *kvs, uint64_t tier_bytes)
{
    uint64_t entries = tier_bytes / kvshm_entry_size(kvs->tab.key_size,
                                                     kvs->tab.value_size);
    uint64_t cap = entries / (uint64_t)kvs->local_size;
    uint64_t gather_cap = (uint64_t)INT_MAX / (uint64_t)kvs->local_size /
                          record_size(kvs);
    uint64_t floor = RECORDS_MIN_BYTES / record_size(kvs);

    /* a rank cannot usefully record more than its share of the tier,
     * and the node's records must fit one MPI_Gatherv */
    if (floor > RECORDS_MIN)
        floor = RECORDS_MIN;
    if (cap < floor)   /* floor >= 3: a record is at most ~1.1 MiB */
        cap = floor;
    if (cap > RECORDS_MAX)
        cap = RECORDS_MAX;
    if (cap > gather_cap)
        cap = gather_cap;
    kvs->records_cap = (size_t)cap;
    kvs->records = malloc(kvs->records_cap * record_size(kvs));
    /* a filter of what this epoch recorded already: a key read again
     * in the same epoch is not recorded twice */
    kvs->recorded = calloc(2 * kvs->records_cap, sizeof(uint64_t));
    if (kvs->local_rank == 0) {   /* what the leader gathers at fences */
        kvs->gather_counts = malloc(sizeof(int) * (size_t)kvs->local_size);
        kvs->gather_displs = malloc(sizeof(int) * (size_t)kvs->local_size);
    }
    if (!kvs->records || !kvs->recorded ||
        (kvs->local_rank == 0 && (!kvs->gather_counts ||
                                  !kvs->gather_displs)))
        return kvs_fail(kvs, -ENOMEM, "out of memory for the tier's "
                                      "records");
    return MPIKVS_OK;
}

int kvs_tier_open(mpikvs_t *kvs, const char *job, const char *node)
{
    struct kvshm_tier_reader_opts ro = {.expect_uid = geteuid()};
    const char *dir = kvs->shm_dir[0] ? kvs->shm_dir : NULL;
    const char *prefix = NULL;
    mpikvs_error_t err;
    uint64_t bytes = 0;
    int rc = MPIKVS_OK;

    if (!tier_wanted(kvs, &prefix, &bytes))
        return MPIKVS_OK;
    kvs->caching = kvs->table->tier.caching;
    snprintf(kvs->tier_prefix, sizeof(kvs->tier_prefix), "%s", prefix);
    snprintf(kvs->tier_job, sizeof(kvs->tier_job), "%s", job);
    snprintf(kvs->tier_node, sizeof(kvs->tier_node), "%s", node);

    /* The leader is the writer: of the plugin's tier, or of one it makes. */
    if (kvs->local_rank == 0) {
        if (kvs->layout) {
            rc = kvshm_tier_open_writer(dir, job, node, prefix, &ro,
                                        &kvs->tier, &err);
            if (rc == MPIKVS_ERR_EXISTS) {
                /* another step of the job publishes: read only */
                rc = kvshm_tier_open(dir, job, node, prefix, &ro, &kvs->tier,
                                     &err);
            } else if (rc == MPIKVS_OK) {
                kvs->tier_writer = true;
            }
        } else {
            struct kvshm_tier_spec spec = {.region = {
                .dir = dir, .job = job, .node = node, .tag = prefix,
                .uid = KVSHM_ANY_UID, .gid = (gid_t)-1,
                .step = KVSHM_NO_STEP}};
            kvshm_tier_spec_for_bytes(&spec, bytes, kvs->tab.key_size,
                                      kvs->tab.value_size);
            rc = kvshm_tier_create(&spec, &kvs->tier, &err);
            kvs->tier_created = kvs->tier_writer = rc == MPIKVS_OK;
        }
        if (rc != MPIKVS_OK)
            kvs_fail(kvs, rc, "%s", err.text);
    }
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, kvs->node_comm) != MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast in the node");
    if (rc != MPIKVS_OK)
        return kvs->local_rank == 0
                   ? rc
                   : kvs_fail(kvs, rc, "the node's first rank could not "
                                       "set up tier %s: %s",
                              prefix, mpikvs_strerror(rc));
    if (kvs->local_rank != 0) {
        rc = kvshm_tier_open(dir, job, node, prefix, &ro, &kvs->tier, &err);
        if (rc != MPIKVS_OK)
            return kvs_fail(kvs, rc, "%s", err.text);
    }
    return make_records(kvs, bytes);
}

void kvs_tier_close(mpikvs_t *kvs)
{
    kvshm_tier_close(&kvs->tier);
    if (kvs->tier_created)
        kvshm_tier_unlink(kvs->shm_dir[0] ? kvs->shm_dir : NULL,
                          kvs->tier_job, kvs->tier_node, kvs->tier_prefix);
    free(kvs->records);
    free(kvs->recorded);
    free(kvs->gather_counts);
    free(kvs->gather_displs);
    kvs->records = NULL;
    kvs->recorded = NULL;
    kvs->gather_counts = kvs->gather_displs = NULL;
}

/* What a tier lookup's code means for a get: a hit, or a miss of the
 * tier (the key's home answers).  Only a caller's error is an error. */
static int tier_outcome(mpikvs_t *kvs, int rc, size_t len)
{
    switch (rc) {
    case MPIKVS_OK:
        if (len == kvs->tab.value_size) {
            KVS_COUNT(&kvs->tab, tier_hits, 1);
            return MPIKVS_OK;
        }
        break;   /* not one of ours: go to the key's home */
    case MPIKVS_MISS:
    case MPIKVS_ERR_TOOBIG:   /* not one of ours either */
        break;
    case MPIKVS_ERR_STALLED:
    case MPIKVS_ERR_CORRUPT:
        kvs->tier_skip = true;   /* until the next fence */
        KVS_COUNT(&kvs->tab, tier_stalls, 1);
        break;
    default:
        return kvs_fail(kvs, rc, "the node tier %s: %s", kvs->tier_prefix,
                        mpikvs_strerror(rc));
    }
    KVS_COUNT(&kvs->tab, tier_misses, 1);
    return MPIKVS_MISS;
}

int kvs_tier_lookup(mpikvs_t *kvs, const struct kvs_key *k, void *value)
{
    size_t len = 0;
    int rc;

    if (kvs->tier_skip) {
        KVS_COUNT(&kvs->tab, tier_misses, 1);
        return MPIKVS_MISS;
    }
    rc = kvshm_tier_get_hashed(kvs->tier, k->hash, k->bytes, kvs->tab.key_size,
                               value, kvs->tab.value_size, &len);
    return tier_outcome(kvs, rc, len);
}

/* Remember a remote hit for the next fence; a full buffer drops it. */
void kvs_tier_record(mpikvs_t *kvs, const struct kvs_key *k,
                     const void *value)
{
    size_t slots = 2 * kvs->records_cap;
    uint64_t h = k->hash | 1;   /* 0 marks free */
    size_t i = (size_t)(h % slots);
    unsigned char *rec;

    while (kvs->recorded[i] && kvs->recorded[i] != h)
        i = (i + 1) % slots;
    if (kvs->recorded[i] == h)
        return;
    if (kvs->records_count == kvs->records_cap) {
        KVS_COUNT(&kvs->tab, tier_dropped, 1);
        return;
    }
    kvs->recorded[i] = h;
    rec = kvs->records + kvs->records_count++ * record_size(kvs);
    memcpy(rec, &k->hash, sizeof(k->hash));
    memcpy(rec + sizeof(k->hash), k->bytes, kvs->tab.key_size);
    memcpy(rec + sizeof(k->hash) + kvs->tab.key_size, value,
           kvs->tab.value_size);
}

/* The record of k, if this epoch has one, out of the buffer: the last
 * record takes its place.  The filter keeps k's hash, so that k is not
 * recorded again before the next fence (a cache may miss a key; it must
 * not publish a value the program rejected). */
void kvs_tier_unrecord(mpikvs_t *kvs, const struct kvs_key *k)
{
    size_t rs = record_size(kvs);

    for (size_t i = 0; i < kvs->records_count; i++) {
        unsigned char *rec = kvs->records + i * rs;
        if (memcmp(rec, &k->hash, sizeof(k->hash)) != 0 ||
            memcmp(rec + sizeof(k->hash), k->bytes, kvs->tab.key_size) != 0)
            continue;
        if (i + 1 < kvs->records_count)
            memcpy(rec, kvs->records + (kvs->records_count - 1) * rs, rs);
        kvs->records_count--;
        return;
    }
}

static void forget_records(mpikvs_t *kvs)
{
    /* the filter holds exactly the keys recorded: none, nothing to clear */
    if (kvs->records_count)
        memset(kvs->recorded, 0, 2 * kvs->records_cap * sizeof(uint64_t));
    kvs->records_count = 0;
}

/* The leader: every record it was handed that the tier does not hold. */
static void publish_records(mpikvs_t *kvs, const unsigned char *recs,
                            size_t n)
{
    size_t rs = record_size(kvs), len;
    unsigned char *probe = kvs->slot_image;   /* value_size bytes at least */
    bool full = !kvs->tier_writer;

    for (size_t i = 0; i < n; i++) {
        const unsigned char *key = recs + i * rs + sizeof(uint64_t);
        mpikvs_error_t err;
        uint64_t hash;
        int rc;
        if (full) {
            KVS_COUNT(&kvs->tab, tier_dropped, 1);
            continue;
        }
        memcpy(&hash, recs + i * rs, sizeof(hash));
        if (kvshm_tier_get_hashed(kvs->tier, hash, key, kvs->tab.key_size,
                                  probe, kvs->tab.value_size,
                                  &len) == MPIKVS_OK)
            continue;   /* another rank of the node had it too */
        rc = kvshm_tier_put_hashed(kvs->tier, hash, key, kvs->tab.key_size,
                                   key + kvs->tab.key_size, kvs->tab.value_size,
                                   &err);
        if (rc == MPIKVS_OK) {
            KVS_COUNT(&kvs->tab, tier_published, 1);
        } else {
            full = true;   /* entries are all one size: none fits now */
            KVS_COUNT(&kvs->tab, tier_dropped, 1);
        }
    }
}

/* Collective over the node: the ranks' records to the leader, which
 * publishes them.  Part of mpikvs_fence. */
int kvs_tier_publish(mpikvs_t *kvs)
{
    int mine = (int)(kvs->records_count * record_size(kvs)), total = 0;
    int *counts = kvs->gather_counts, *displs = kvs->gather_displs;
    unsigned char *all = NULL;
    int room = 1, rc = MPIKVS_OK, mpi_rc;

    if (!kvs->tier)
        return MPIKVS_OK;
    kvs->tier_skip = false;   /* a new epoch: try the tier again */
    mpi_rc = MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0,
                        kvs->node_comm);
    if (mpi_rc == MPI_SUCCESS && kvs->local_rank == 0) {
        for (int r = 0; r < kvs->local_size; r++) {
            displs[r] = total;
            total += counts[r];   /* bounded by make_records */
        }
        all = malloc(total ? (size_t)total : 1);
        room = all != NULL;
    }
    /* Every rank takes part whatever happens, or the others would hang:
     * a leader short of memory tells them to skip the gather, and their
     * records are counted as dropped. */
    if (mpi_rc == MPI_SUCCESS)
        mpi_rc = MPI_Bcast(&room, 1, MPI_INT, 0, kvs->node_comm);
    if (mpi_rc == MPI_SUCCESS && room)
        mpi_rc = MPI_Gatherv(kvs->records, mine, MPI_BYTE, all, counts,
                             displs, MPI_BYTE, 0, kvs->node_comm);
    if (mpi_rc != MPI_SUCCESS)
        rc = kvs_mpi_fail(kvs, "gathering the node tier's records", mpi_rc);
    else if (!room)
        rc = kvs_fail(kvs, -ENOMEM, "out of memory publishing the node "
                                    "tier: %d bytes of records",
                      total);
    else if (kvs->local_rank == 0)
        publish_records(kvs, all, (size_t)total / record_size(kvs));
    if (!room)
        KVS_COUNT(&kvs->tab, tier_dropped, kvs->records_count);
    forget_records(kvs);
    free(all);
    return rc;
}

void kvs_tier_drop_records(mpikvs_t *kvs)
{
    if (kvs->tier)
        forget_records(kvs);
}

int kvs_tier_empty(mpikvs_t *kvs)
{
    mpikvs_error_t err;

    if (kvs->tier && kvs->local_rank == 0 && kvs->tier_writer &&
        kvshm_tier_clear(kvs->tier, &err) != MPIKVS_OK)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s", err.text);
    return MPIKVS_OK;
}

int kvs_tier_invalidate(mpikvs_t *kvs)
{
    int rc = MPIKVS_OK;

    /* off: nothing to drop; always: entries are never dropped (but
     * mpikvs_clear empties every tier) */
    if (kvs->tier && kvs->caching == KVSHM_CACHING_USER) {
        forget_records(kvs);   /* read before the invalidation */
        /* The epoch ends here for every reader of the node before the
         * leader empties the tier under them. */
        int mpi_rc = MPI_Barrier(kvs->node_comm);
        if (mpi_rc != MPI_SUCCESS)
            rc = kvs_mpi_fail(kvs, "MPI_Barrier in mpikvs_tier_invalidate",
                              mpi_rc);
        else
            rc = kvs_tier_empty(kvs);
    }
    /* Nobody reads the tier of the next epoch before it is clear. */
    int mpi_rc = MPI_Barrier(kvs->comm);
    if (mpi_rc != MPI_SUCCESS && rc == MPIKVS_OK)
        rc = kvs_mpi_fail(kvs, "MPI_Barrier in mpikvs_tier_invalidate",
                          mpi_rc);
    return rc;
}

int mpikvs_get_ref(mpikvs_t *kvs, const void *key, const void **value)
{
    struct kvs_key k;
    const void *ref;
    size_t len;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_get_ref");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_get_ref: key and value must not be NULL");
    *value = NULL;
    if (!kvs->tier)
        return MPIKVS_MISS;
    if (kvs->tier_skip) {
        KVS_COUNT(&kvs->tab, tier_misses, 1);
        return MPIKVS_MISS;
    }
    len = 0;
    kvs_key_make(kvs, key, &k);
    rc = kvshm_tier_get_ref_hashed(kvs->tier, k.hash, k.bytes,
                                   kvs->tab.key_size, &ref, &len, NULL);
    rc = tier_outcome(kvs, rc, len);
    if (rc == MPIKVS_OK)
        *value = ref;
    return kvs_verify_hit(kvs, &k, rc);
}
