/*
 * env.c - the environment libmpikvs reads, in one place.
 *
 * The SPANK plugin (spank_mpikvs(8)) exports these to every task of a
 * step; without it, MPIKVS_CONFIG and MPIKVS_VIRTUAL_NODES are the ones a
 * user sets by hand.
 */
#include <stdlib.h>

#include "handle.h"
#include "size.h"

static const char *nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void kvs_env_read(struct mpikvs_env *env)
{
    const char *v;

    env->shm_dir = nonempty("MPIKVS_SHM_DIR");
    env->job_id = nonempty("MPIKVS_JOB_ID");
    env->node_name = nonempty("MPIKVS_NODE_NAME");
    env->config = nonempty("MPIKVS_CONFIG");
    env->dht_size = 0;
    if ((v = nonempty("MPIKVS_DHT_SIZE")))
        kvshm_parse_size(v, "MPIKVS_DHT_SIZE", 1, &env->dht_size, NULL);
    env->virtual_nodes = 0;
    if ((v = nonempty("MPIKVS_VIRTUAL_NODES"))) {
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        /* nonsense is reported by open, which knows the rank count */
        env->virtual_nodes = *end || n > 1u << 20 ? UINT32_MAX
                                                  : (unsigned)n;
    }
}
