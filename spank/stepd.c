/*
 * stepd.c - in slurmstepd, as root, before the tasks start: make this
 * node's regions for the job, write the job layout, and point the tasks
 * at it with MPIKVS_LAYOUT.
 *
 * This runs in init_post_opt, after the job's namespaces exist; with
 * job_container/tmpfs the regions are made inside the job's mount
 * namespace, in its private /dev/shm (namespace.c).
 *
 * Job scope: the first step on a node makes the regions; later steps
 * find the layout, check that they asked for the same size and config,
 * and use what is there.  The layout is made first, exclusively: it is
 * the claim that settles two steps starting at once, and the data
 * regions follow.  Step scope: every step makes its own regions, tagged
 * s<step>-, and removes them at its end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data_region.h"
#include "errors_internal.h"
#include "plugin.h"
#include "region.h"
#include "tier.h"

#include <slurm/slurm.h>   /* SLURM_BATCH_SCRIPT and the other step ids */

#define WAIT_FOR_CREATOR_S 120   /* another step making the job's regions */

static int get_step(spank_t sp, struct step *s)
{
    const char *name = getenv("SLURMD_NODENAME");   /* slurmstepd's own */
    char host[KVSHM_NODE_MAX] = "";

    if (spank_get_item(sp, S_JOB_ID, &s->job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &s->step) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &s->uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &s->gid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_NNODES, &s->nnodes) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_NODEID, &s->node_index) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &s->tasks) !=
            ESPANK_SUCCESS) {
        plugin_error("cannot get the step's ids from Slurm");
        return -1;
    }
    if (!name || !*name) {
        gethostname(host, sizeof(host) - 1);
        host[strcspn(host, ".")] = '\0';
        name = host;
    }
    kvshm_name_part_from(name, s->node, sizeof(s->node));
    snprintf(s->job_text, sizeof(s->job_text), "%u", s->job);
    return 0;
}

static uint64_t node_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* The config as sbatch/srun validated it, from the step's environment. */
static char *step_config_text(spank_t sp)
{
    size_t len = 64u << 10;
    char *buf = malloc(len);

    if (buf && spank_getenv(sp, CONFIG_ENV, buf, (int)len) == ESPANK_SUCCESS)
        return buf;
    free(buf);
    return NULL;
}

/* ---- what to make ---- */

static int plan_tables(const struct plugin *p, const struct step *s,
                       const struct kvshm_config *cfg, uint64_t size,
                       struct kvshm_job_layout *l)
{
    size_t n = cfg ? cfg->ntables : 1;
    mpikvs_error_t err;

    l->tables = calloc(n, sizeof(*l->tables));
    if (!l->tables) {
        plugin_error("out of memory");
        return -1;
    }
    l->ntables = n;
    for (size_t i = 0; i < n; i++) {
        const struct kvshm_table_config *t = cfg ? &cfg->tables[i] : NULL;
        struct kvshm_job_table *jt = &l->tables[i];
        if (kvshm_job_table_tags(p->req.scope, s->step, t ? t->name : "kvs",
                                 jt, &err) != MPIKVS_OK) {
            plugin_error("%s", err.text);
            return -1;
        }
        jt->data_bytes = t ? t->bytes - t->tier.bytes : size;
        jt->tier_bytes = t ? t->tier.bytes : 0;   /* 0: no tier */
        if (!jt->tier_bytes)
            jt->tier_prefix[0] = '\0';
    }
    return 0;
}

/* text: the config as it came from the submit side (the canonical dump
 * of a valid config, or NULL); the layout takes it over. */
static int plan_layout(spank_t sp, const struct plugin *p,
                       const struct step *s, const struct kvshm_config *cfg,
                       char *text, uint64_t size, struct kvshm_job_layout *l)
{
    char nodes[4096] = "";

    memset(l, 0, sizeof(*l));
    snprintf(l->job, sizeof(l->job), "%s", s->job_text);
    snprintf(l->node, sizeof(l->node), "%s", s->node);
    l->scope = p->req.scope;
    l->step = s->step;
    l->nnodes = s->nnodes;
    l->node_index = s->node_index;
    l->tasks_on_node = s->tasks;
    l->dht_size = size;
    if (spank_getenv(sp, "SLURM_STEP_NODELIST", nodes, sizeof(nodes)) !=
        ESPANK_SUCCESS)
        spank_getenv(sp, "SLURM_JOB_NODELIST", nodes, sizeof(nodes));
    l->nodelist = strdup(nodes);
    l->config_text = text;
    if (!l->nodelist) {
        plugin_error("out of memory");
        return -1;
    }
    l->request_hash = kvshm_job_request_hash(size, l->config_text);
    return plan_tables(p, s, cfg, size, l);
}

static void free_layout(struct kvshm_job_layout *l)
{
    free(l->tables);
    free(l->nodelist);
    free(l->config_text);
}

/* ---- making it ---- */

static struct kvshm_region_spec region_spec(const struct plugin *p,
                                            const struct step *s,
                                            const char *tag)
{
    struct kvshm_region_spec spec = {
        .dir = p->site.shm_dir, .job = s->job_text, .node = s->node,
        .tag = tag, .uid = s->uid, .gid = s->gid, .mode = 0600,
        .step = s->step,
    };
    return spec;
}

struct data_fill {
    const struct kvshm_table_config *table;   /* NULL: no config */
    uint64_t                         max_ranks;
};

static int fill_data(void *base, uint64_t size, void *arg,
                     mpikvs_error_t *err)
{
    const struct data_fill *f = arg;
    const struct kvshm_table_config *t = f->table;
    struct kvshm_data_shape shape;

    if (t) {
        shape.key_size = t->key.size;
        shape.value_size = t->value.size;
        shape.slots_per_bucket = t->slots_per_bucket;
        shape.mode = (uint32_t)t->mode;
    }
    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, f->max_ranks, t ? &shape : NULL,
                           t ? t->name : "kvs", err);
}

static int make_tier(const struct plugin *p, const struct step *s,
                     const struct kvshm_job_table *jt,
                     const struct kvshm_table_config *t, mpikvs_error_t *err)
{
    struct kvshm_tier_spec spec = {.region = region_spec(p, s,
                                                         jt->tier_prefix)};
    struct kvshm_tier *tier = NULL;
    int rc;

    kvshm_tier_spec_for_bytes(&spec, jt->tier_bytes, t->key.size,
                              t->value.size);
    rc = kvshm_tier_create(&spec, &tier, err);
    kvshm_tier_close(&tier);
    return rc;
}

static int make_tables(const struct plugin *p, const struct step *s,
                       const struct kvshm_config *cfg,
                       const struct kvshm_job_layout *l)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct data_fill fill;
    mpikvs_error_t err;
    int rc;

    /* counters for this step's tasks, and for later steps' up to the
     * node's CPUs or the site's minimum */
    fill.max_ranks = s->tasks;
    if (fill.max_ranks < (uint64_t)(cpus > 0 ? cpus : 1))
        fill.max_ranks = (uint64_t)cpus;
    if (fill.max_ranks < p->site.min_ranks)
        fill.max_ranks = p->site.min_ranks;
    for (size_t i = 0; i < l->ntables; i++) {
        const struct kvshm_job_table *jt = &l->tables[i];
        struct kvshm_region_spec spec = region_spec(p, s, jt->data_tag);
        struct kvshm_region *r = NULL;
        fill.table = cfg ? &cfg->tables[i] : NULL;
        spec.kind = KVSHM_KIND_DATA;
        spec.size = jt->data_bytes;
        spec.fill = fill_data;
        spec.fill_arg = &fill;
        rc = kvshm_region_create(&spec, &r, &err);
        kvshm_region_close(&r);
        if (rc == MPIKVS_OK && jt->tier_bytes)
            rc = make_tier(p, s, jt, fill.table, &err);
        if (rc != MPIKVS_OK) {
            plugin_error("job %u step %u on %s: table %s: %s",
                         s->job, s->step, s->node, jt->name,
                         err.text);
            return -1;
        }
    }
    return 0;
}

/* Remove what a failed set-up made, by name: other steps' regions of
 * the job on this node stay. */
static void remove_made(const struct plugin *p, const struct step *s,
                        const struct kvshm_job_layout *l)
{
    char name[KVSHM_NAME_MAX + 1], tag[KVSHM_TAG_MAX];

    for (size_t i = 0; i < l->ntables; i++) {
        const struct kvshm_job_table *jt = &l->tables[i];
        if (kvshm_region_name(name, sizeof(name), s->job_text, s->node,
                              jt->data_tag, NULL) == MPIKVS_OK)
            kvshm_region_unlink(p->site.shm_dir, name);
        if (jt->tier_bytes)
            kvshm_tier_unlink(p->site.shm_dir, s->job_text, s->node,
                              jt->tier_prefix);
    }
    kvshm_job_layout_tag(p->req.scope, s->step, tag, sizeof(tag));
    if (kvshm_region_name(name, sizeof(name), s->job_text, s->node, tag,
                          NULL) == MPIKVS_OK)
        kvshm_region_unlink(p->site.shm_dir, name);
}

/* ---- a later step of the job ---- */

static int region_exists(const char *dir, const struct step *s,
                         const char *tag)
{
    char name[KVSHM_NAME_MAX + 1], path[512];
    struct stat st;

    if (kvshm_region_name(name, sizeof(name), s->job_text, s->node, tag,
                          NULL) != MPIKVS_OK)
        return 0;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static bool tables_ready(const struct plugin *p, const struct step *s,
                         const struct kvshm_job_layout *l)
{
    for (size_t i = 0; i < l->ntables; i++) {
        char tag[KVSHM_TAG_MAX];
        if (!region_exists(p->site.shm_dir, s, l->tables[i].data_tag))
            return false;
        if (!l->tables[i].tier_bytes)
            continue;
        snprintf(tag, sizeof(tag), "%s-entries", l->tables[i].tier_prefix);
        if (!region_exists(p->site.shm_dir, s, tag))
            return false;
    }
    return true;
}

static int join_job_regions(const struct plugin *p, const struct step *s,
                            const char *layout_path,
                            const struct kvshm_job_layout *want)
{
    struct kvshm_job_layout *have = NULL;
    mpikvs_error_t err;
    char had[32], asked[32];

    if (kvshm_job_layout_open(layout_path, &have, &err) != MPIKVS_OK) {
        plugin_error("job %u step %u: %s", s->job, s->step,
                     err.text);
        return -1;
    }
    if (have->request_hash != want->request_hash) {
        kvshm_format_bytes(had, sizeof(had), have->dht_size);
        kvshm_format_bytes(asked, sizeof(asked), want->dht_size);
        const char *cfg_had = have->config_text ? "a config" : "no config";
        const char *cfg_asked =
            !want->config_text ? "no config"
            : !have->config_text ? "a config"
            : strcmp(have->config_text, want->config_text) == 0
                ? "the same config"
                : "another config";
        plugin_error("job %u step %u: the job's DHT on %s was made by "
                     "step %u with %s per node and %s; this step asks for %s "
                     "and %s: give the same --dht-size and --dht-config, or "
                     "--dht-scope=step for a DHT of its own",
                     s->job, s->step, s->node, have->step, had, cfg_had,
                     asked, cfg_asked);
        kvshm_job_layout_free(have);
        return -1;
    }
    /* the step that made the layout may still be making the tables */
    for (int waited = 0; !tables_ready(p, s, have); waited++) {
        struct timespec pause = {0, 10000000};
        if (waited == WAIT_FOR_CREATOR_S * 100) {
            plugin_error("job %u step %u: step %u made the job's layout "
                         "on %s but not its regions within %d s",
                         s->job, s->step, have->step, s->node,
                         WAIT_FOR_CREATOR_S);
            kvshm_job_layout_free(have);
            return -1;
        }
        nanosleep(&pause, NULL);
    }
    kvshm_job_layout_free(have);
    return 0;
}

/* ---- the step ---- */

static bool is_helper_step(uint32_t step)
{
    return step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT ||
           step == SLURM_INTERACTIVE_STEP || step == SLURM_PENDING_STEP;
}

/* What the node's region work needs; it may run in a child (namespace.c). */
struct node_work {
    struct plugin                 *p;
    const struct step             *s;
    const struct kvshm_config     *cfg;
    const struct kvshm_job_layout *l;
    const char                    *layout_path;
};

/* Make the layout and the tables, or join the job's; returns 1 when
 * this step made them, 0 when it joined, -1 after removing what it made. */
static int make_node_regions(void *arg)
{
    const struct node_work *w = arg;
    struct plugin *p = w->p;
    const struct step *s = w->s;
    struct kvshm_region_spec spec;
    char tag[KVSHM_TAG_MAX];
    mpikvs_error_t err;
    int rc;

    kvshm_job_layout_tag(p->req.scope, s->step, tag, sizeof(tag));
    /* root's, readable by the job's group, written by nobody after this */
    spec = region_spec(p, s, tag);
    spec.uid = 0;
    spec.mode = 0640;
    rc = kvshm_job_layout_create(&spec, w->l, &err);
    if (rc == MPIKVS_ERR_EXISTS && p->req.scope == KVSHM_SCOPE_JOB)
        return join_job_regions(p, s, w->layout_path, w->l) == 0 ? 0 : -1;
    if (rc != MPIKVS_OK) {
        plugin_error("job %u step %u on %s: %s", s->job,
                     s->step, s->node, err.text);
        return -1;
    }
    if (make_tables(p, s, w->cfg, w->l) != 0) {
        remove_made(p, s, w->l);   /* leave nothing behind */
        return -1;
    }
    return 1;
}

static int set_up(spank_t sp, struct plugin *p, const struct step *s,
                  const struct kvshm_config *cfg,
                  const struct kvshm_job_layout *l)
{
    char tag[KVSHM_TAG_MAX], name[KVSHM_NAME_MAX + 1], path[512];
    struct node_work work = {p, s, cfg, l, path};
    mpikvs_error_t err;
    int rc;

    kvshm_job_layout_tag(p->req.scope, s->step, tag, sizeof(tag));
    if (kvshm_region_name(name, sizeof(name), s->job_text, s->node, tag,
                          &err) != MPIKVS_OK) {
        plugin_error("%s", err.text);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", p->site.shm_dir, name);
    if (spank_setenv(sp, "MPIKVS_LAYOUT", path, 1) != ESPANK_SUCCESS) {
        plugin_error("cannot set MPIKVS_LAYOUT for the tasks");
        return -1;
    }
    rc = in_job_namespace(p, s, make_node_regions, &work);
    p->made = rc == 1;
    return rc < 0 ? -1 : 0;
}

static int set_up_step(spank_t sp, struct plugin *p)
{
    struct kvshm_config *cfg = NULL;
    struct kvshm_job_layout l;
    struct step *s = &p->here;
    uint64_t size;
    char *text = NULL;
    int rc;

    if (!p->req.enabled || get_step(sp, s) != 0)
        return p->req.enabled ? -1 : 0;
    /* The batch script, the extern step and salloc's shell run no
     * tasks of an MPI job: nothing to make there. */
    if (is_helper_step(s->step))
        return 0;
    size = p->req.size_given ? p->req.size : p->site.default_size;
    if (site_check_size(&p->site, "--dht-size", size, node_memory()) != 0)
        return -1;
    if (p->req.config_path) {
        /* Never the user's file itself: this runs as root. */
        text = step_config_text(sp);
        if (!text) {
            plugin_error("job %u step %u: the config checked at submit "
                         "time (--dht-config=%s) did not reach %s with the "
                         "step's environment (%s): submit with an "
                         "environment that keeps SLURM_SPANK_* variables",
                         s->job, s->step, p->req.config_path, s->node,
                         CONFIG_ENV);
            return -1;
        }
        cfg = config_for_request(p->req.config_path, text, size);
        if (!cfg) {
            free(text);
            return -1;
        }
    }
    rc = plan_layout(sp, p, s, cfg, text, size, &l);
    if (rc == 0)
        rc = set_up(sp, p, s, cfg, &l);
    free_layout(&l);
    kvshm_config_free(cfg);
    return rc;
}

/* Failures are recorded (plugin_error) and reported by user_init, where
 * the user sees them; returning an error here would only tell srun
 * "Plugin initialization failed". */
int stepd_post_opt(spank_t sp, struct plugin *p)
{
    if (set_up_step(sp, p) != 0 && !p->failure[0])
        plugin_error("job %u step %u: the DHT could not be set up on %s",
                     p->here.job, p->here.step, p->here.node);
    return 0;
}
