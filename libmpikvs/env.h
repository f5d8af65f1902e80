/*
 * env.h - the environment libmpikvs reads (env.c).
 */
#ifndef MPIKVS_ENV_H
#define MPIKVS_ENV_H

/* The environment libmpikvs reads, in one place (env.c). */
struct mpikvs_env {
    const char *shm_dir;        /* MPIKVS_SHM_DIR, or NULL */
    const char *layout;         /* MPIKVS_LAYOUT: the SPANK plugin's */
    const char *config;         /* MPIKVS_CONFIG: a file path */
    const char *job_config_path;/* SLURM_SPANK_MPIKVS_JOB_CONFIG_PATH: the
                                 * job's --dht-config, for messages */
    unsigned    virtual_nodes;  /* MPIKVS_VIRTUAL_NODES, 0 if unset */
    const char *close_timeout;  /* MPIKVS_CLOSE_TIMEOUT, or NULL */
    const char *timeout;        /* MPIKVS_TIMEOUT, or NULL */
    const char *transport;      /* MPIKVS_TRANSPORT, or NULL */
    const char *ucx_ops;        /* MPIKVS_UCX_OPS, or NULL */
    const char *populate;       /* MPIKVS_POPULATE, or NULL */
    const char *verbose;        /* MPIKVS_VERBOSE, or NULL */
};

void kvs_env_read(struct mpikvs_env *env);

#endif /* MPIKVS_ENV_H */
