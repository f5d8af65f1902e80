/*
 * dispatch.c - the entry points Slurm calls, and the options.
 *
 * Slurm loads the plugin in srun, sbatch and salloc (local and allocator
 * contexts), in slurmstepd (remote) and for the job epilog.  Each entry
 * point hands its context's work to that context's file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpikvs_errors.h"
#include "plugin.h"
#include "size.h"

SPANK_PLUGIN(mpikvs, 1);

static int option_size(int val, const char *optarg, int remote);
static int option_config(int val, const char *optarg, int remote);
static int option_scope(int val, const char *optarg, int remote);

static struct spank_option options[] = {
    {"dht-size", "SIZE",
     "mpikvs: DHT memory per node (e.g. 512M, 8G), reserved in /dev/shm "
     "for the job's regions",
     1, 0, option_size},
    {"dht-config", "FILE",
     "mpikvs: the job config (JSON, see mpikvs.json(5)); checked at submit "
     "time and sent with the job",
     1, 0, option_config},
    {"dht-scope", "job|step",
     "mpikvs: regions live for the whole job (default; later steps find "
     "the cache warm) or for one step",
     1, 0, option_scope},
    SPANK_OPTIONS_TABLE_END
};

static int option_size(int val, const char *optarg, int remote)
{
    struct request *r = &mpikvs_plugin.req;
    mpikvs_error_t err;

    (void)val;
    (void)remote;
    if (!optarg ||
        kvshm_parse_size(optarg, "--dht-size", 1, &r->size, &err) !=
            MPIKVS_OK) {
        plugin_error("%s", optarg ? err.text : "--dht-size needs a value");
        return -1;
    }
    snprintf(r->size_text, sizeof(r->size_text), "%s",
             strlen(optarg) < sizeof(r->size_text) ? optarg : "");
    r->size_given = true;
    r->enabled = true;
    return 0;   /* against the site's limits: site_checked_size, later */
}

static int option_config(int val, const char *optarg, int remote)
{
    struct request *r = &mpikvs_plugin.req;

    (void)val;
    (void)remote;
    if (!optarg || !*optarg) {
        plugin_error("--dht-config needs the path of a JSON file");
        return -1;
    }
    free(r->config_path);
    r->config_path = strdup(optarg);
    r->enabled = true;
    return r->config_path ? 0 : -1;
}

static int option_scope(int val, const char *optarg, int remote)
{
    struct request *r = &mpikvs_plugin.req;

    (void)val;
    (void)remote;
    if (optarg && strcmp(optarg, "job") == 0)
        r->scope = KVSHM_SCOPE_JOB;
    else if (optarg && strcmp(optarg, "step") == 0)
        r->scope = KVSHM_SCOPE_STEP;
    else {
        plugin_error("--dht-scope=%s: give job or step", optarg ? optarg : "");
        return -1;
    }
    return 0;
}

/* Called in every context before the options: site arguments first, so
 * that option callbacks can check against them.  Slurm also calls it in
 * slurmd itself, where a failure would stop slurmd from starting: there
 * a bad argument is only logged, and jobs are refused at submission. */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    int bad_site;

    memset(&mpikvs_plugin, 0, sizeof(mpikvs_plugin));
    mpikvs_plugin.req.scope = KVSHM_SCOPE_JOB;
    bad_site = site_parse(&mpikvs_plugin.site, ac, av) != 0;
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
        return 0;
    if (bad_site)
        return -1;
    for (struct spank_option *o = options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
            plugin_error("cannot register --%s", o->name);
            return -1;
        }
    return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    switch (spank_context()) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR:
        return alloc_post_opt(sp, &mpikvs_plugin);
    case S_CTX_REMOTE:
        return stepd_post_opt(sp, &mpikvs_plugin);
    default:
        return 0;
    }
}

/* In slurmstepd once the step's I/O exists: errors logged now reach
 * srun, so a failed set-up is told to the user here and stops the step
 * before any task starts. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (!mpikvs_plugin.failure[0])
        return 0;
    slurm_error("%s", mpikvs_plugin.failure);
    return -1;
}

/* Step end, in slurmstepd: step-scope regions go now.  Job-scope ones
 * stay for the next step and go in the job epilog. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    struct plugin *p = &mpikvs_plugin;

    int rc = 0;

    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE && p->made &&
        p->req.scope == KVSHM_SCOPE_STEP)
        rc = in_job_namespace(p, &p->here, cleanup_step, p) < 0 ? -1 : 0;
    free(p->req.config_path);
    p->req.config_path = NULL;
    return rc;
}

/* Job end, on every node of the job, whether or not a step ran there or
 * ended cleanly.  slurm_spank_init is not called here: the arguments are
 * parsed again.  A bad argument is logged but does not stop the cleanup
 * (the shm directory falls back to its default): a failed epilog would
 * drain the node and leave the job's memory taken. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    struct site site;
    uint32_t job;

    site_parse(&site, ac, av);
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
        plugin_error("job epilog: no job id");
        return -1;
    }
    return cleanup_regions(site.shm_dir, job, NULL, "") < 0 ? -1 : 0;
}

