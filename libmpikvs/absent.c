/*
 * absent.c - mpikvs_put_if_absent: store a key only where no live slot
 * holds it, and say so when one does.  The protocol is the bucket's
 * (bucket.c says how one winner is found): on the own node's shared
 * memory, through the transport (lock-free with the CPU's atomics, one
 * winner too; under a lock nobody races; lock-free without them, the mpi
 * transport, a lookup then a put, which a racing put can still beat:
 * mpikvs(3)), or shipped to the key's node, whose serving thread runs it.
 */
#include "errors.h"
#include "mpikvs.h"
#include "ops.h"
#include "slot.h"

static int put_absent_direct(mpikvs_t *kvs, const struct kvs_key *k,
                             const void *value, void *present)
{
    struct kvs_access a = {&kvs->tab, &kvs_shared_io, k, kvs, 0, 0, false};
    int rc = kvs_bucket_put_absent(&a, value, present);

    return rc == MPIKVS_ERR_STALLED
               ? kvs_put_stalled(kvs, &a, "mpikvs_put_if_absent")
               : rc;
}

/* Another node's key, under the mode's lock (ops.h, kvs_locked).  in:
 * the value; out: where a present value goes, or NULL. */
static int put_absent_far(mpikvs_t *kvs, const struct kvs_key *k,
                          const void *in, void *out)
{
    const struct kvs_route *r = kvs_route(kvs, k->node);
    struct kvs_access a = {&kvs->tab, r->io, k, kvs, 0, 0, false};
    int rc;

    if (r->kind == KVS_ROUTE_SHIPPED)
        return kvs_ship_one(kvs, k, KVS_SHIP_PUT_ABSENT, in, out);
    rc = kvs_bucket_put_absent(&a, in, out);
    return rc == MPIKVS_ERR_STALLED
               ? kvs_put_stalled(kvs, &a, "mpikvs_put_if_absent")
               : rc;
}

int mpikvs_put_if_absent(mpikvs_t *kvs, const void *key, const void *value,
                         void *present)
{
    struct kvs_key k;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_put_if_absent");
    if (!key || !value)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_put_if_absent: key and value must not be "
                        "NULL");
    kvs_key_make(kvs, key, &k);
    rc = kvs_route(kvs, k.node)->kind == KVS_ROUTE_SHARED
             ? put_absent_direct(kvs, &k, value, present)
             : kvs_locked(kvs, &k, true, put_absent_far, value, present);
    if (rc < 0)
        return rc;
    if (rc == SLOT_PRESENT)
        return MPIKVS_PRESENT;
    kvs_count_put(&kvs->tab, rc);
    return kvs_near_put(kvs, "mpikvs_put_if_absent", key, value);
}
