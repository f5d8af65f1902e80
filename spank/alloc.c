/*
 * alloc.c - the submit side: sbatch and salloc (allocator context) and
 * srun (local context).
 *
 * Bad input stops the job here, before it is queued, with one line per
 * problem naming the option and the value.  The config is read here,
 * where the user's file is, and its validated content travels with the
 * job: compute nodes never read the user's file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors_internal.h"
#include "plugin.h"
#include "region_name.h"

/* Below the kernel's limit for one environment string (128 KiB), with
 * room for the name: the config rides in the environment. */
#define CONFIG_TEXT_MAX (64u << 10)

static void log_diag(const struct kvshm_diag *diag, const char *fallback)
{
    const char *line = diag->text;

    if (!line) {
        plugin_error("--dht-config=%s", fallback);
        return;
    }
    while (*line) {
        size_t n = strcspn(line, "\n");
        /* each line starts "<path>: ", so it reads --dht-config=<path>: */
        plugin_error("--dht-config=%.*s", (int)n, line);
        line += n + (line[n] == '\n');
    }
}

/* The refusal of a size below the smallest usable one: its first line
 * is about the size ("--dht-size=4K is below ..."), the others, if
 * any, about the config's tables. */
static void log_size_refusal(struct kvshm_diag *diag)
{
    size_t n = strcspn(diag->text, "\n");
    char *rest = diag->text + n + (diag->text[n] == '\n');

    plugin_error("%.*s", (int)n, diag->text);
    if (*rest) {
        memmove(diag->text, rest, strlen(rest) + 1);
        log_diag(diag, "cannot be used");
    }
}

static int check_names(const char *path, const struct kvshm_config *cfg)
{
    int rc = 0;

    for (size_t i = 0; i < cfg->ntables; i++)
        if (kvshm_table_name_reads_as_step(cfg->tables[i].name)) {
            plugin_error("--dht-config=%s: tables.%s: names of the form "
                         "s<digits> and s<digits>-... are kept for "
                         "step-scope regions",
                         path, cfg->tables[i].name);
            rc = -1;
        }
    return rc;
}

int config_for_request(const struct plugin *p, const char *path,
                       const char *text, uint64_t size, uint64_t max_ranks,
                       struct kvshm_config **cfg, struct kvshm_plan *plan)
{
    const struct request *r = &p->req;
    struct kvshm_plan_input in = {
        .dht_size = size, .max_ranks = max_ranks,
        .size_what = r->size_given ? "--dht-size" : "default_size",
        .size_text = r->size_given && r->size_text[0] ? r->size_text : NULL};
    struct kvshm_diag diag = {0};
    int rc = MPIKVS_OK;

    *cfg = NULL;
    if (path)
        rc = text ? kvshm_config_parse(text, strlen(text), path, cfg, &diag)
                  : kvshm_config_load(path, cfg, &diag);
    in.config = *cfg;
    if (rc == MPIKVS_OK)
        rc = kvshm_plan_make(&in, plan, &diag);
    if (rc != MPIKVS_OK) {
        if (rc == -ENOMEM && !diag.text)
            plugin_error("out of memory");
        else if (rc == MPIKVS_ERR_TOOSMALL && diag.text)
            log_size_refusal(&diag);
        else
            log_diag(&diag, "cannot be used");
        kvshm_diag_free(&diag);
        kvshm_config_free(*cfg);
        *cfg = NULL;
        return -1;
    }
    if (*cfg && check_names(path, *cfg) != 0) {
        kvshm_plan_free(plan);
        kvshm_config_free(*cfg);
        *cfg = NULL;
        return -1;
    }
    return 0;
}

/* srun inside a job whose config sbatch or salloc already checked: the
 * same path means that content, even where the file is not readable. */
static const char *inherited_config(spank_context_t ctx, const char *path)
{
    const char *text = getenv(CONFIG_ENV);
    const char *from = getenv(CONFIG_PATH_ENV);

    if (ctx != S_CTX_LOCAL || !text || !from || strcmp(from, path) != 0)
        return NULL;
    return text;
}

static int carry(spank_t sp, spank_context_t ctx, const char *path,
                 const char *text)
{
    if (strlen(text) >= CONFIG_TEXT_MAX) {
        plugin_error("--dht-config=%s: the config is %zu bytes with "
                     "defaults filled in; at most %u can travel with a job",
                     path, strlen(text), CONFIG_TEXT_MAX - 1);
        return -1;
    }
    if (spank_job_control_setenv(sp, CONFIG_VAR, text, 1) != ESPANK_SUCCESS ||
        spank_job_control_setenv(sp, CONFIG_PATH_VAR, path, 1) !=
            ESPANK_SUCCESS) {
        plugin_error("cannot put the config in the job's environment");
        return -1;
    }
    /* srun's own environment becomes the step's, where slurmstepd reads
     * it; sbatch's job control variables reach the batch script as
     * SLURM_SPANK_* by themselves. */
    if (ctx == S_CTX_LOCAL &&
        (setenv(CONFIG_ENV, text, 1) != 0 ||
         setenv(CONFIG_PATH_ENV, path, 1) != 0)) {
        plugin_error("cannot set %s: out of memory", CONFIG_ENV);
        return -1;
    }
    return 0;
}

int alloc_post_opt(spank_t sp, struct plugin *p)
{
    spank_context_t ctx = spank_context();
    const struct request *r = &p->req;
    struct kvshm_config *cfg;
    struct kvshm_plan plan;
    uint64_t size;
    char *text;
    int rc;

    if (!r->enabled)
        return 0;
    if (site_checked_size(p, 0, &size) != 0)
        return -1;
    /* What the nodes will make of it: refused here if it cannot fit,
     * with counters for the site's min_ranks (a node counts at least
     * those; more for more CPUs or tasks, which it checks itself). */
    if (config_for_request(p, r->config_path,
                           r->config_path
                               ? inherited_config(ctx, r->config_path)
                               : NULL,
                           size, p->site.min_ranks, &cfg, &plan) != 0)
        return -1;
    kvshm_plan_free(&plan);
    if (!r->config_path)
        return 0;
    if (persist_check(r->config_path, cfg) != 0) {
        kvshm_config_free(cfg);
        return -1;
    }
    text = kvshm_config_dump(cfg);
    kvshm_config_free(cfg);
    if (!text) {
        plugin_error("out of memory");
        return -1;
    }
    rc = carry(sp, ctx, r->config_path, text);
    free(text);
    return rc;
}
