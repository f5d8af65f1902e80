/*
 * env.c - the environment libmpikvs reads, in one place.
 *
 * The SPANK plugin (spank_mpikvs(8)) exports MPIKVS_LAYOUT to every task
 * of a step; the job layout region it names carries everything else.
 * Without the plugin, MPIKVS_CONFIG, MPIKVS_SHM_DIR and
 * MPIKVS_VIRTUAL_NODES are the ones a user sets by hand (under it, an
 * MPIKVS_CONFIG must name the job's config, whose --dht-config path the
 * plugin's SLURM_SPANK_MPIKVS_JOB_CONFIG_PATH tells for messages);
 * MPIKVS_CLOSE_TIMEOUT bounds mpikvs_close, MPIKVS_TIMEOUT a wait for
 * another node's answer, MPIKVS_TRANSPORT picks
 * the transport to other nodes (MPIKVS_UCX_OPS how ucx reaches them), and
 * MPIKVS_POPULATE bounds what open faults in, in either case;
 * MPIKVS_VERBOSE=1 has rank 0 print what an open chose (describe.c).
 */
#include <stdlib.h>

#include "env.h"
#include "handle.h"
#include "virtual_nodes.h"

static const char *nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void kvs_env_read(struct mpikvs_env *env)
{
    env->shm_dir = nonempty("MPIKVS_SHM_DIR");
    env->layout = nonempty("MPIKVS_LAYOUT");
    env->config = nonempty("MPIKVS_CONFIG");
    env->job_config_path = nonempty("SLURM_SPANK_" KVSHM_JOB_CONFIG_PATH_VAR);
    env->close_timeout = nonempty("MPIKVS_CLOSE_TIMEOUT");
    env->timeout = nonempty("MPIKVS_TIMEOUT");
    env->transport = nonempty("MPIKVS_TRANSPORT");
    env->ucx_ops = nonempty("MPIKVS_UCX_OPS");
    env->populate = nonempty("MPIKVS_POPULATE");
    env->verbose = nonempty("MPIKVS_VERBOSE");
    /* by the rule rmacache shares; nonsense is reported by open, which
     * knows the rank count */
    if (kvshm_virtual_nodes_parse(nonempty(KVSHM_VIRTUAL_NODES_VAR),
                                  KVSHM_VIRTUAL_NODES_MAX,
                                  &env->virtual_nodes, NULL) != MPIKVS_OK)
        env->virtual_nodes = UINT32_MAX;
}
