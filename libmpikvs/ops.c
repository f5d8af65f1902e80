/*
 * ops.c - one get and one put.
 *
 * A get (kvs_get), top to bottom: the key's record, made once where the
 * key came in; then, for a key of the own node in the lock-free mode, its
 * bucket in shared memory; for another node's key, the node tier; else
 * the key's bucket through the transport, under the lock the mode takes;
 * the slot verified against its checksum; the answer counted, and a
 * remote hit kept for the node tier.
 *
 * A put (kvs_put): the own node's bucket in shared memory (lock-free: a
 * slot claimed with a compare-and-swap and written in place), or under
 * the mode's lock the bucket read through the transport, a slot chosen
 * on that copy, and the slot's meta word and image written back.
 *
 * Where the transport ships keys whole (transport.h, ships), a lock-free
 * get or put of another node's key is sent to that node, which runs the
 * own-node steps above on its region and answers.
 *
 * A batch (batch.c) runs the same steps over many records.
 */
#include <string.h>

#include "errors.h"
#include "near.h"
#include "node_tier.h"
#include "ops.h"
#include "slot.h"
#include "verify.h"

static void count_get(mpikvs_t *kvs, int rc)
{
    KVS_COUNT(&kvs->tab, gets, 1);
    if (rc == MPIKVS_OK)
        KVS_COUNT(&kvs->tab, hits, 1);
    else if (rc == MPIKVS_MISS)
        KVS_COUNT(&kvs->tab, misses, 1);
}

int kvs_put_stalled(mpikvs_t *kvs, const struct kvs_access *a,
                    const char *what)
{
    uint32_t owner = kvshm_meta_stamp(a->stall_meta);

    /* a node the transport gave up on: its detail (not tried, or did
     * not answer) stays */
    if (!a->claim_stalled)
        return MPIKVS_ERR_STALLED;
    return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                    "%s: bucket %llu of node %u: slot %llu has been claimed "
                    "by %s%lu for %u ms (a writer stopped or stuck; it is "
                    "taken over only once its process is gone)",
                    what, (unsigned long long)a->k->bucket, a->k->node,
                    (unsigned long long)a->stall_slot,
                    owner ? "pid " : "another node's process (0) ",
                    (unsigned long)owner, KVS_SLOT_STALL_MS);
}

/* ---- the own node, lock-free ---- */

static int get_direct(mpikvs_t *kvs, const struct kvs_key *k,
                      void *value)
{
    struct kvs_access a = {&kvs->tab, &kvs_shared_io, k, kvs, 0, 0, false};

    KVS_COUNT(&kvs->tab, direct, 1);
    return kvs_bucket_get(&a, value);
}

static int put_direct(mpikvs_t *kvs, const struct kvs_key *k,
                      const void *value)
{
    struct kvs_access a = {&kvs->tab, &kvs_shared_io, k, kvs, 0, 0, false};
    int c = kvs_bucket_put(&a, value);

    if (c >= 0)
        kvs_count_put(&kvs->tab, c);
    else if (c == MPIKVS_ERR_STALLED)
        return kvs_put_stalled(kvs, &a, "mpikvs_put");
    return c;
}

/* ---- through the transport ---- */

int kvs_ship_one(mpikvs_t *kvs, const struct kvs_key *k,
                 enum kvs_ship_kind kind, const void *in, void *out)
{
    int status = MPIKVS_OK;
    int rc = kvs->tp->ship(kvs, k, kind, in, out, &status);

    if (rc == MPIKVS_OK)
        rc = kvs->tp->flush(kvs, k->node);
    if (rc != MPIKVS_OK)
        return rc;
    /* the node's serving thread has no handle to say it in: say it here */
    if (status == MPIKVS_ERR_STALLED)
        return kvs_fail(kvs, status,
                        "node %u: a put of a key shipped to it waited %u ms "
                        "for another writer's claim of a slot of bucket "
                        "%llu (a writer of that node stopped or stuck)",
                        k->node, KVS_SLOT_STALL_MS,
                        (unsigned long long)k->bucket);
    return status;
}

/* Read the key from its bucket through the transport (the caller holds
 * whatever lock the mode needs), or ship the get to its node. */
static int get_far(mpikvs_t *kvs, const struct kvs_key *k, const void *in,
                   void *value)
{
    const struct kvs_route *r = kvs_route(kvs, k->node);
    struct kvs_access a = {&kvs->tab, r->io, k, kvs, 0, 0, false};

    (void)in;
    KVS_COUNT(&kvs->tab, remote, 1);
    if (r->kind == KVS_ROUTE_SHIPPED)
        return kvs_ship_one(kvs, k, KVS_SHIP_GET, NULL, value);
    return kvs_bucket_get(&a, value);
}

/* A put through the transport (the caller holds whatever lock the mode
 * needs), or shipped to the key's node; counted. */
static int put_far(mpikvs_t *kvs, const struct kvs_key *k, const void *value,
                   void *out)
{
    const struct kvs_route *r = kvs_route(kvs, k->node);
    struct kvs_access a = {&kvs->tab, r->io, k, kvs, 0, 0, false};
    int rc;

    (void)out;
    if (r->kind == KVS_ROUTE_SHIPPED)
        rc = kvs_ship_one(kvs, k, KVS_SHIP_PUT, value, NULL);
    else if ((rc = kvs_bucket_put(&a, value)) == MPIKVS_ERR_STALLED)
        return kvs_put_stalled(kvs, &a, "mpikvs_put");
    if (rc >= 0)
        kvs_count_put(&kvs->tab, rc);
    return rc < 0 ? rc : MPIKVS_OK;
}

/* ---- the get and the put ---- */

bool kvs_get_tier(mpikvs_t *kvs, const struct kvs_key *k, void *value,
                  int *rc)
{
    if (!kvs->tier || k->node == kvs->node)
        return false;
    *rc = kvs_tier_lookup(kvs, k, value);
    if (*rc == MPIKVS_OK)
        count_get(kvs, *rc);
    return *rc != MPIKVS_MISS;
}

int kvs_get_far(mpikvs_t *kvs, const struct kvs_key *k, void *value)
{
    return kvs_locked(kvs, k, false, get_far, NULL, value);
}

int kvs_get_done(mpikvs_t *kvs, const struct kvs_key *k, const void *value,
                 int rc)
{
    if (rc < 0)
        return rc;
    count_get(kvs, rc);
    if (rc == MPIKVS_OK && kvs->tier && k->node != kvs->node)
        kvs_tier_record(kvs, k, value);
    return rc;
}

int kvs_get(mpikvs_t *kvs, const struct kvs_key *k, void *value)
{
    int rc;

    if (kvs_route(kvs, k->node)->kind == KVS_ROUTE_SHARED)
        rc = get_direct(kvs, k, value);
    else if (kvs_get_tier(kvs, k, value, &rc))
        return rc;   /* another node's key, in this node's tier */
    else
        rc = kvs_get_far(kvs, k, value);
    return kvs_get_done(kvs, k, value, rc);
}

int kvs_put(mpikvs_t *kvs, const struct kvs_key *k, const void *value)
{
    if (kvs_route(kvs, k->node)->kind == KVS_ROUTE_SHARED) {
        int rc = put_direct(kvs, k, value);
        return rc < 0 ? rc : MPIKVS_OK;
    }
    return kvs_locked(kvs, k, true, put_far, value, NULL);
}

/* ---- the public single operations ---- */

int mpikvs_get(mpikvs_t *kvs, const void *key, void *value)
{
    struct kvs_key k;

    if (!kvs)
        return kvs_no_handle("mpikvs_get");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_get: key and value must not be NULL");
    kvs_key_make(kvs, key, &k);
    return kvs_verify_hit(kvs, &k, kvs_get(kvs, &k, value));
}

int mpikvs_put(mpikvs_t *kvs, const void *key, const void *value)
{
    struct kvs_key k;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_put");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_put: key and value must not be NULL");
    kvs_key_make(kvs, key, &k);
    rc = kvs_put(kvs, &k, value);
    return rc == MPIKVS_OK ? kvs_near_put(kvs, "mpikvs_put", key, value) : rc;
}

int kvs_near_put(mpikvs_t *kvs, const char *call, const void *key,
                 const void *value)
{
    const unsigned char *entry;
    int rc = kvs_near_entry(kvs, call, key, &entry);

    if (rc != MPIKVS_OK || !entry)
        return rc;
    rc = mpikvs_put(kvs_near_table(kvs), entry, value);
    return rc == MPIKVS_OK ? rc
                           : kvs_fail(kvs, rc, "%s: its neighbourhood: %s",
                                      call,
                                      mpikvs_last_error(kvs_near_table(kvs)));
}
