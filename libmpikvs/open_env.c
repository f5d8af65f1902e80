/*
 * open_env.c - the environment settings mpikvs_open reads into the
 * handle (open_env.h), and the buckets faulted in as MPIKVS_POPULATE
 * says.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "open_env.h"
#include "populate.h"

/* A whole number of seconds from the environment variable name (value v,
 * or NULL for dflt) into *secs; what: what it bounds, for the error. */
static int set_seconds(mpikvs_t *kvs, const char *name, const char *v,
                       unsigned dflt, const char *what, unsigned *secs)
{
    char *end;
    unsigned long n;

    *secs = dflt;
    if (!v)
        return MPIKVS_OK;
    errno = 0;
    n = strtoul(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || n < 1 || n > 86400)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "%s='%s' is not a number of seconds from 1 to 86400 "
                        "(%s); unset it for the default of %u s",
                        name, v, what, dflt);
    *secs = (unsigned)n;
    return MPIKVS_OK;
}

/* MPIKVS_CLOSE_TIMEOUT and MPIKVS_TIMEOUT. */
static int set_timeouts(mpikvs_t *kvs, const struct mpikvs_env *env)
{
    int rc = set_seconds(kvs, "MPIKVS_CLOSE_TIMEOUT", env->close_timeout,
                         MPIKVS_CLOSE_TIMEOUT_S,
                         "how long mpikvs_close waits for the other ranks",
                         &kvs->close_timeout);

    return rc != MPIKVS_OK
               ? rc
               : set_seconds(kvs, "MPIKVS_TIMEOUT", env->timeout,
                             MPIKVS_TIMEOUT_S,
                             "how long an operation waits for another "
                             "node's answer",
                             &kvs->timeout);
}

/* MPIKVS_UCX_OPS: how the ucx transport reaches another host's node. */
static int set_ucx_ops(mpikvs_t *kvs, const struct mpikvs_env *env)
{
    static const char *const names[] = {
        [KVS_UCX_OPS_AUTO] = "auto",
        [KVS_UCX_OPS_RMA] = "rma",
        [KVS_UCX_OPS_SHIP] = "ship"};
    const char *v = env->ucx_ops;

    kvs->ucx_ops = KVS_UCX_OPS_AUTO;
    if (!v)
        return MPIKVS_OK;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(v, names[i])) {
            kvs->ucx_ops = (enum kvs_ucx_ops)i;
            return MPIKVS_OK;
        }
    return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                    "MPIKVS_UCX_OPS='%s' is not auto, rma or ship (how the "
                    "ucx transport reaches another host's node); unset it "
                    "for auto", v);
}

/* MPIKVS_POPULATE: how much of the node's buckets each rank faults in at
 * open (populate_buckets). */
static int set_populate(mpikvs_t *kvs, const struct mpikvs_env *env,
                        uint64_t *bound)
{
    mpikvs_error_t err;

    *bound = KVSHM_POPULATE_DEFAULT;
    if (env->populate &&
        kvshm_populate_parse(env->populate, "MPIKVS_POPULATE", bound,
                             &err) != MPIKVS_OK)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL, "%s", err.text);
    return MPIKVS_OK;
}

/*
 * Fault the node's buckets in now, not in the first puts and gets: this
 * rank's share of the pages, which the node's ranks allocate and zero
 * together, then more of them for its own page table, up to bound
 * (shm/populate.h).  The default bound, 1 GiB a rank, maps a table of up
 * to 1 GiB whole in every rank, and caps what a rank spends on a larger
 * one: 2 MiB of page table (4 KiB pages), 0.1 to 0.3 s here; 128 ranks
 * mapping all of an 8 GiB table would hold 2 GiB of page tables.  It
 * never fails the open: a page left out faults in when it is first used.
 */
void kvs_populate_buckets(mpikvs_t *kvs, uint64_t bound)
{
    (void)kvshm_populate(kvs->tab.buckets,
                         kvs->tab.nbuckets * kvs->tab.bucket_size,
                         (unsigned)kvs->local_rank,
                         (unsigned)kvs->local_size, bound);
}

int kvs_apply_env(mpikvs_t *kvs, const struct mpikvs_env *env,
                  uint64_t *populate)
{
    int rc = set_timeouts(kvs, env);

    if (rc == MPIKVS_OK)
        rc = set_ucx_ops(kvs, env);
    if (rc == MPIKVS_OK)
        rc = set_populate(kvs, env, populate);
    return rc;
}
