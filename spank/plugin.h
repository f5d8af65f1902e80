/*
 * plugin.h - what the files of spank_mpikvs share.
 *
 * As in NVIDIA's pyxis, one file per Slurm context: dispatch.c (the
 * entry points Slurm calls and the options), state.c (the plugin's state
 * and its error reporting, which every other file uses), site.c (plugstack.conf
 * arguments), alloc.c (sbatch, salloc and srun on the submit side:
 * validate, carry the config), stepd.c (slurmstepd: make the node's
 * regions and the layout), namespace.c (doing that inside the job's
 * mount namespace), cleanup.c (removal at step and job end).
 *
 * Every message starts "spank_mpikvs: ", so a user or an admin can grep
 * for it in srun's output and in the slurmd log.
 */
#ifndef MPIKVS_SPANK_PLUGIN_H
#define MPIKVS_SPANK_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "job_config.h"
#include "job_layout.h"
#include "plan.h"

#define PLUGIN_NAME "spank_mpikvs"

/* The job config travels from the submit side to the nodes as JSON in
 * the job's environment: sbatch puts it in the job control environment
 * (the batch script then sees SLURM_SPANK_MPIKVS_JOB_CONFIG_JSON), srun
 * in its own environment, which becomes every step's.  Names of their
 * own: MPIKVS_CONFIG is the library's, a file path (mpikvs(3)). */
#define CONFIG_VAR       KVSHM_JOB_CONFIG_VAR       /* job control name */
#define CONFIG_PATH_VAR  KVSHM_JOB_CONFIG_PATH_VAR  /* the file it came from */
#define CONFIG_ENV       "SLURM_SPANK_" CONFIG_VAR
#define CONFIG_PATH_ENV  "SLURM_SPANK_" CONFIG_PATH_VAR

/* Bounds of the plugin's waits in slurmstepd: a later step of a job waits
 * for the step making the job's regions on the node at most
 * WAIT_FOR_CREATOR_S; the process doing the region work in the job's
 * namespace (namespace.c) is killed after WORK_LIMIT_S, which covers that
 * wait, and the step fails. */
#define WAIT_FOR_CREATOR_S 120
#define WORK_LIMIT_S       (WAIT_FOR_CREATOR_S + 60)

/* Site settings: plugstack.conf arguments. */
struct site {
    struct kvshm_limits limits;   /* max_size= */
    uint64_t default_size;    /* --dht-config without --dht-size */
    char     shm_dir[256];
    uint32_t min_ranks;       /* counters a data region has at least */
    char     ns_path[256];    /* the job's mount namespace file, with %j
                               * and %n; "" to work in slurmstepd's own */
};

/* The user's request, from the options. */
struct request {
    bool             enabled;     /* any option given */
    bool             size_given;
    uint64_t         size;        /* bytes per node */
    char             size_text[32];   /* --dht-size as given, for
                                       * messages ("" if longer) */
    char            *config_path; /* --dht-config, or NULL */
    enum kvshm_scope scope;
};

/* The step slurmstepd runs, and where. */
struct step {
    uint32_t job, step, nnodes, node_index, tasks;
    uid_t    uid;
    gid_t    gid;
    char     job_text[KVSHM_JOB_MAX];
    char     node[KVSHM_NODE_MAX];   /* as region names allow it */
};

/* The plugin's state in one process: Slurm calls it through free
 * functions, so it lives here, filled from the arguments and options. */
struct plugin {
    struct site    site;
    struct request req;
    /* slurmstepd: this step, and whether it made regions (for
     * slurm_spank_exit) */
    struct step here;
    bool     made;
    /* slurmstepd: why setting up failed.  Messages logged before the
     * step's I/O exists reach only the slurmd log; user_init says it
     * again once Slurm copies errors back to srun. */
    char     failure[1024];
    /* in a child working in the job's namespace: errors are written to
     * report_fd, a line each, for the parent to log */
    bool     child_reports;
    int      report_fd;
};

extern struct plugin mpikvs_plugin;

/* Log an error (prefixed "spank_mpikvs: ") and keep the first one of
 * the process in mpikvs_plugin.failure. */
void plugin_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* site.c: parse the plugstack.conf arguments into site (defaults first).
 * Each bad one is logged; returns 0 or -1. */
int site_parse(struct site *site, int ac, char **av);

/* site.c: the DHT size per node this request asks for (--dht-size or
 * the site's default_size), checked against the site's limits
 * (kvshm_limits_check; node_memory 0 where it is unknown, on the submit
 * host): once per process.  Logs and returns -1 when over. */
int site_checked_size(const struct plugin *p, uint64_t node_memory,
                      uint64_t *size);

/* alloc.c: sbatch/salloc/srun: validate the request, carry the config. */
int alloc_post_opt(spank_t sp, struct plugin *p);

/* alloc.c: load (path) or take (text) the config, parsed once, and
 * make the node's plan for it (kvshm_plan_make: the request's size per
 * node, max_ranks counters per data region: the site's min_ranks on the
 * submit side, the node's own in slurmstepd); logs each problem as one
 * line naming the option and the value, first the smallest usable size
 * where the size is below it.  Without a path, the plan of the one table
 * "kvs" and NULL.  Returns 0 (*cfg and *plan set) or -1. */
int config_for_request(const struct plugin *p, const char *path,
                       const char *text, uint64_t size, uint64_t max_ranks,
                       struct kvshm_config **cfg, struct kvshm_plan *plan);

/* persist.c: the config's persist paths, usable by the submitting
 * user (access(2) in sbatch, salloc or srun; nothing opened).  Logs each
 * problem; returns 0 or -1. */
int persist_check(const char *config_path, const struct kvshm_config *cfg);

/* stepd.c: make this node's regions, the layout, MPIKVS_LAYOUT. */
int stepd_post_opt(spank_t sp, struct plugin *p);

/* namespace.c: run work(arg) in the job's mount namespace when the site
 * names one (ns_path=), else right here.  work returns -1 on failure or
 * a result from 0 to 99, which is returned. */
int in_job_namespace(const struct plugin *p, const struct step *s,
                     int (*work)(void *), void *arg);

/* namespace.c: pattern with %j (job id), %n (node name) and %% filled
 * in for step s; -1 when it does not fit or has another escape. */
int namespace_expand(const char *pattern, const struct step *s, char *out,
                     size_t size);

/* cleanup.c: remove the regions of job whose tag starts with prefix
 * ("" for all) on node (NULL for every node) in dir; returns the count
 * removed, or -1 after logging. */
int cleanup_regions(const char *dir, uint32_t job, const char *node,
                    const char *tag_prefix);

/* cleanup.c: remove the step-scope regions of the plugin's step on this
 * node (a work function for in_job_namespace); 0 or -1. */
int cleanup_step(void *plugin);

#endif /* MPIKVS_SPANK_PLUGIN_H */
