/*
 * near.c - a table's neighbourhoods (near.h): their state and the
 * options of their table, the member keys the callers put and forget,
 * and mpikvs_get_near.
 *
 * Members are stored as copies (key and value in the member's slot), not
 * as locations of the table's slots: a query is then one bucket read,
 * and a member is verified by its own checksum, never a pointer into a
 * slot that was evicted or rewritten since (mpikvs(7) "Surrogates" gives
 * the measurement).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "key.h"
#include "locks.h"
#include "near.h"
#include "near_key.h"
#include "route.h"
#include "slot.h"
#include "transport.h"

struct kvs_near {
    mpikvs_t                  *table;   /* the neighbourhoods' own */
    const struct kvshm_record *key;     /* the table's key */
    const struct kvshm_record *coarse;  /* its coarser key */
    size_t                     coarse_size, key_size, value_size;
    size_t                     ninputs; /* of a key: its numeric fields */
    unsigned char             *entry;   /* coarse key | key: a member's key */
    unsigned char             *entries; /* BATCH_CHUNK of them */
    /* a query's members as found: slot copies (member key | value), each
     * one's inputs and steps, distances, their order */
    unsigned char             *found;
    double                    *inputs, *steps, *distance;
    double                    *query_inputs, *query_steps;
    uint32_t                  *order;
};

mpikvs_t *kvs_near_table(const mpikvs_t *kvs)
{
    return kvs->near ? kvs->near->table : NULL;
}

size_t mpikvs_near_inputs(const mpikvs_t *kvs)
{
    return kvs && kvs->near ? kvs->near->ninputs : 0;
}

static void near_free(struct kvs_near *n)
{
    if (!n)
        return;
    free(n->entry);
    free(n->entries);
    free(n->found);
    free(n->inputs);
    free(n->steps);
    free(n->distance);
    free(n->query_inputs);
    free(n->query_steps);
    free(n->order);
    free(n);
}

static struct kvs_near *near_alloc(const struct kvshm_table_config *t)
{
    struct kvs_near *n = calloc(1, sizeof(*n));
    size_t members = t->near.members, member;

    if (!n)
        return NULL;
    n->key = &t->key;
    n->coarse = &t->near.key;
    n->coarse_size = t->near.key.size;
    n->key_size = t->key.size;
    n->value_size = t->value.size;
    n->ninputs = kvshm_key_ninputs(&t->key);
    member = n->coarse_size + n->key_size + n->value_size;
    n->entry = malloc(n->coarse_size + n->key_size);
    n->entries = malloc(BATCH_CHUNK * (n->coarse_size + n->key_size));
    n->found = malloc(members * member);
    n->inputs = malloc(members * n->ninputs * sizeof(double) + 1);
    n->steps = malloc(members * n->ninputs * sizeof(double) + 1);
    n->distance = malloc(members * sizeof(double));
    n->query_inputs = malloc(n->ninputs * sizeof(double) + 1);
    n->query_steps = malloc(n->ninputs * sizeof(double) + 1);
    n->order = malloc(members * sizeof(uint32_t));
    if (!n->entry || !n->entries || !n->found || !n->inputs || !n->steps ||
        !n->distance || !n->query_inputs || !n->query_steps || !n->order) {
        near_free(n);
        return NULL;
    }
    return n;
}

int kvs_near_prepare(mpikvs_t *kvs, mpikvs_options_t *opt,
                     size_t *hash_prefix)
{
    const struct kvshm_table_config *t = kvs->table;
    struct kvs_near *n;
    int rc;

    if (!t || !t->near.enabled || !kvs->near_bytes)
        return MPIKVS_OK;   /* none asked for, or none planned */
    n = near_alloc(t);
    rc = n ? MPIKVS_OK
           : kvs_fail(kvs, -ENOMEM, "out of memory for the neighbourhoods");
    if ((rc = kvs_agree(kvs, rc)) != MPIKVS_OK) {
        near_free(n);
        return rc;
    }
    *opt = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    opt->key_size = n->coarse_size + n->key_size;
    opt->value_size = n->value_size;
    opt->size_per_node = kvs->near_bytes;
    opt->slots_per_bucket = t->near.members;
    opt->mode = kvshm_mode_name(kvs->mode);
    opt->transport = kvshm_transport_name(kvs->transport);
    *hash_prefix = n->coarse_size;
    kvs->near = n;
    return MPIKVS_OK;
}

void kvs_near_attach(mpikvs_t *kvs, mpikvs_t *table)
{
    kvs->near->table = table;
}

mpikvs_t *kvs_near_detach(mpikvs_t *kvs)
{
    struct kvs_near *n = kvs->near;
    mpikvs_t *table = n ? n->table : NULL;

    kvs->near = NULL;
    near_free(n);
    return table;
}

/* A member's key: key's coarse key, then key. */
static int member_key(const struct kvs_near *n, const void *key,
                      unsigned char *out)
{
    memcpy(out + n->coarse_size, key, n->key_size);
    return kvshm_key_coarsen(n->key, n->coarse, key, out);
}

/* A key the table took that its neighbourhood cannot: said once, in the
 * handle's text. */
static int bad_key(mpikvs_t *kvs, const char *call, int rc)
{
    return kvs_fail(kvs, rc,
                    "%s: the key's fields do not make a coarser key for "
                    "the neighbourhoods (%s): are they keys of "
                    "mpikvs_round_key?",
                    call, mpikvs_strerror(rc));
}

int kvs_near_entry(mpikvs_t *kvs, const char *call, const void *key,
                   const unsigned char **entry)
{
    struct kvs_near *n = kvs->near;
    int rc;

    *entry = NULL;
    if (!n)
        return MPIKVS_OK;
    if ((rc = member_key(n, key, n->entry)) != MPIKVS_OK)
        return bad_key(kvs, call, rc);
    *entry = n->entry;
    return MPIKVS_OK;
}

int kvs_near_entries(mpikvs_t *kvs, const char *call, size_t count,
                     const void *keys, const unsigned char **entries)
{
    struct kvs_near *n = kvs->near;
    size_t entry = n ? n->coarse_size + n->key_size : 0;
    int rc;

    *entries = NULL;
    if (!n)
        return MPIKVS_OK;
    for (size_t i = 0; i < count; i++)
        if ((rc = member_key(n, (const char *)keys + i * n->key_size,
                             n->entries + i * entry)) != MPIKVS_OK)
            return bad_key(kvs, call, rc);
    *entries = n->entries;
    return MPIKVS_OK;
}

int kvs_near_flush(mpikvs_t *kvs)
{
    mpikvs_t *t = kvs->near ? kvs->near->table : NULL;
    int rc;

    if (!t)
        return MPIKVS_OK;
    rc = t->tp->flush(t, KVS_ALL_NODES);
    return rc == MPIKVS_OK ? rc : kvs_fail(kvs, rc, "%s", t->err.text);
}

/* ---- the query ---- */

/* What a query hands to the bucket read: the query and its output. */
struct near_query {
    struct kvs_near *n;
    size_t           found;
};

/* A slot of the neighbourhoods' table copied as a scan copies one
 * (slot_read.h): the checksum first (acquire, in shared memory), then
 * key and value; whether they verify, the seed from the copied key.  The
 * tag its meta word had is the generation's (key.h): a write since
 * stores a current one too. */
static bool member_copy(const mpikvs_t *t, const unsigned char *slot,
                        bool shared, unsigned char *copy)
{
    const uint64_t *sum_at = (const uint64_t *)(
        slot + kvshm_slot_checksum_offset(t->tab.slot_size));
    uint64_t sum = shared ? __atomic_load_n(sum_at, __ATOMIC_ACQUIRE)
                          : *sum_at;
    uint64_t seed;

    kvshm_slot_copy(copy, slot, KVSHM_SLOT_KV_OFFSET,
                    t->tab.key_size + t->tab.value_size, shared);
    seed = kvshm_slot_checksum_seed(
        kvshm_key_hash(copy, t->tab.key_size).low64);
    return kvshm_slot_checksum(copy + t->tab.key_size, t->tab.value_size,
                               seed) == sum;
}

/* Slot i of bucket b, if it is a member of k's neighbourhood: copied and
 * verified (key, value and checksum together), its coarse key k's,
 * then its inputs and distance to the query.  A slot that does not
 * verify (a write in flight) is left out: a member may be missing. */
static void take_member(mpikvs_t *t, const struct kvs_key *k,
                        const unsigned char *b, bool shared, uint64_t i,
                        struct near_query *q)
{
    struct kvs_near *n = q->n;
    size_t member = n->coarse_size + n->key_size + n->value_size;
    uint64_t meta = kvshm_meta_load(b, i, shared);
    unsigned char *copy = n->found + q->found * member;
    double *in = n->inputs + q->found * n->ninputs;
    double *steps = n->steps + q->found * n->ninputs;

    if (!kvshm_meta_live(meta) || kvshm_meta_tag(meta) != k->tag ||
        !member_copy(t, kvs_slot_at(&t->tab, (unsigned char *)b, i), shared,
                     copy) ||
        memcmp(copy, k->bytes, n->coarse_size) != 0)
        return;   /* torn, or another coarse key's of the same tag */
    if (kvshm_key_inputs(n->key, copy + n->coarse_size, in) != MPIKVS_OK ||
        kvshm_key_steps(n->key, copy + n->coarse_size, steps) != MPIKVS_OK)
        return;   /* no key of the table's fields: not a member */
    n->distance[q->found] = kvshm_key_distance(
        n->ninputs, n->query_inputs, n->query_steps, in, steps);
    n->order[q->found] = (uint32_t)q->found;
    q->found++;
}

/* The members of k's neighbourhood in its bucket (the caller holds the
 * lock the mode needs, kvs_locked). */
static int read_members(mpikvs_t *t, const struct kvs_key *k, const void *in,
                        void *out)
{
    const struct kvs_route *r = kvs_route(t, k->node);
    struct kvs_access a = {&t->tab, r->io, k, t, 0, 0, false};
    struct near_query *q = out;
    unsigned char *b;
    int rc;

    (void)in;
    if ((rc = r->io->bucket(&a, &b)) != MPIKVS_OK)
        return rc;
    for (uint64_t i = 0; i < t->tab.slots; i++)
        take_member(t, k, b, r->io->shared, i, q);
    return MPIKVS_OK;
}

/* Nearest first; equal distances in slot order, so that every rank
 * returns the same members in the same order. */
static void sort_members(struct kvs_near *n, size_t found)
{
    for (size_t i = 1; i < found; i++) {
        uint32_t o = n->order[i];
        size_t j = i;
        while (j > 0 && n->distance[n->order[j - 1]] > n->distance[o]) {
            n->order[j] = n->order[j - 1];
            j--;
        }
        n->order[j] = o;
    }
}

static int check_out(mpikvs_t *kvs, const char *call, const mpikvs_near_t *o)
{
    struct kvs_near *n = kvs->near;

    if (!n)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: table %s has no neighbourhoods: give it a "
                        "\"near\" setting (mpikvs.json(5))",
                        call, kvs->table ? kvs->table->name : "(no config)");
    if (!o)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s: near is NULL", call);
    if (o->max == 0)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: near.max is 0: ask for at least one member",
                        call);
    if (!o->distances || !o->values ||
        (n->ninputs && !o->inputs))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: near.distances, near.inputs and near.values "
                        "must not be NULL",
                        call);
    if (o->inputs_len < o->max * n->ninputs)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: near.inputs_len is %zu doubles, short of "
                        "near.max %zu members of %zu inputs (%zu)",
                        call, o->inputs_len, o->max, n->ninputs,
                        o->max * n->ninputs);
    if (o->values_len < o->max * n->value_size)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: near.values_len is %zu bytes, short of "
                        "near.max %zu values of %zu bytes (%zu)",
                        call, o->values_len, o->max, n->value_size,
                        o->max * n->value_size);
    if (o->keys && o->keys_len < o->max * n->key_size)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s: near.keys_len is %zu bytes, short of near.max "
                        "%zu keys of %zu bytes (%zu)",
                        call, o->keys_len, o->max, n->key_size,
                        o->max * n->key_size);
    return MPIKVS_OK;
}

/* One query, its arguments checked: the nearest members into o. */
static int near_one(mpikvs_t *kvs, const void *key, mpikvs_near_t *o)
{
    struct kvs_near *n = kvs->near;
    size_t member = n->coarse_size + n->key_size + n->value_size;
    struct near_query q = {n, 0};
    struct kvs_key k;
    int rc;

    o->found = 0;
    if ((rc = member_key(n, key, n->entry)) != MPIKVS_OK ||
        (rc = kvshm_key_inputs(n->key, key, n->query_inputs)) !=
            MPIKVS_OK ||
        (rc = kvshm_key_steps(n->key, key, n->query_steps)) != MPIKVS_OK)
        return bad_key(kvs, "mpikvs_get_near", rc);
    /* placed by its coarse key; no seed: each member's comes from its
     * own copy (member_copy) */
    kvs_key_from_hash(n->table, n->entry,
                      kvshm_key_hash(n->entry, n->coarse_size), &k);
    rc = kvs_locked(n->table, &k, false, read_members, NULL, &q);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", mpikvs_last_error(n->table));
    sort_members(n, q.found);
    o->found = q.found < o->max ? q.found : o->max;
    for (size_t i = 0; i < o->found; i++) {
        uint32_t m = n->order[i];
        const unsigned char *copy = n->found + m * member;
        o->distances[i] = n->distance[m];
        memcpy(o->inputs + i * n->ninputs, n->inputs + m * n->ninputs,
               n->ninputs * sizeof(double));
        memcpy((char *)o->values + i * n->value_size,
               copy + n->coarse_size + n->key_size, n->value_size);
        if (o->keys)
            memcpy((char *)o->keys + i * n->key_size, copy + n->coarse_size,
                   n->key_size);
    }
    KVS_COUNT(&kvs->tab, near_queries, 1);
    KVS_COUNT(&kvs->tab, near_members, o->found);
    return o->found ? MPIKVS_OK : MPIKVS_MISS;
}

int mpikvs_get_near(mpikvs_t *kvs, const void *key, mpikvs_near_t *near)
{
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_get_near");
    if (!key)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_get_near: key must not be NULL");
    if ((rc = check_out(kvs, "mpikvs_get_near", near)) != MPIKVS_OK)
        return rc;
    return near_one(kvs, key, near);
}

int mpikvs_get_near_batch(mpikvs_t *kvs, size_t count, const void *keys,
                          mpikvs_near_t *near, int *status)
{
    int rc = MPIKVS_OK;

    if (!kvs)
        return kvs_no_handle("mpikvs_get_near_batch");
    if (count && (!keys || !near || !status))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_get_near_batch: keys, near and status must "
                        "not be NULL");
    for (size_t i = 0; i < count && rc == MPIKVS_OK; i++)
        rc = check_out(kvs, "mpikvs_get_near_batch", &near[i]);
    for (size_t i = 0; i < count && rc == MPIKVS_OK; i++) {
        status[i] = near_one(kvs, (const char *)keys + i * kvs->tab.key_size,
                             &near[i]);
        if (status[i] < 0)
            rc = status[i];
    }
    return rc;
}
