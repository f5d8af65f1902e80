/*
 * round_key.c - mpikvs_round_key: a table's canonical key from doubles.
 */
#include "errors.h"
#include "handle.h"
#include "round.h"

int mpikvs_round_key(mpikvs_t *kvs, const double *in, size_t n, void *key)
{
    mpikvs_error_t err;
    int rc;

    if (!kvs)
        return kvs_no_handle("mpikvs_round_key");
    if (!kvs->table)
        return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                        "mpikvs_round_key needs a job config with key "
                        "fields (options.config or MPIKVS_CONFIG)");
    if (!kvs->table->key.fields)
        return kvs_fail(kvs, MPIKVS_ERR_CONFIG,
                        "table '%s' has a raw key of %zu bytes: no fields "
                        "to round",
                        kvs->table->name, kvs->table->key.size);
    if (!in || !key)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_round_key: in and key must not be NULL");
    rc = kvshm_key_from_doubles(&kvs->table->key, in, n, key, &err);
    if (rc != MPIKVS_OK)
        return kvs_fail(kvs, rc, "%s", err.text);
    return MPIKVS_OK;
}
