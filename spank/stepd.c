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
#define _GNU_SOURCE   /* O_PATH, renameat2 */
#include <errno.h>
#include <fcntl.h>
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

#define PLANT_TRIES 5   /* removals of planted files per name, at most */

static int get_step(spank_t sp, struct step *s)
{
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
    /* slurmstepd's SLURMD_NODENAME */
    kvshm_this_node_part(s->node, sizeof(s->node));
    kvshm_slurm_job_part(s->job, s->job_text, sizeof(s->job_text));
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

/* The layout's table entries: each table's tags in this scope and its
 * plan. */
static int plan_tables(const struct plugin *p, const struct step *s,
                       const struct kvshm_plan *plan,
                       struct kvshm_job_layout *l)
{
    mpikvs_error_t err;

    l->tables = calloc(plan->ntables, sizeof(*l->tables));
    if (!l->tables) {
        plugin_error("out of memory");
        return -1;
    }
    l->ntables = plan->ntables;
    for (size_t i = 0; i < plan->ntables; i++) {
        const struct kvshm_table_plan *tp = &plan->tables[i];
        struct kvshm_job_table *jt = &l->tables[i];
        if (kvshm_job_table_tags(p->req.scope, s->step, tp->name, jt,
                                 &err) != MPIKVS_OK) {
            plugin_error("%s", err.text);
            return -1;
        }
        jt->data_bytes = tp->data_bytes;
        jt->tier_bytes = tp->tier_bytes;   /* 0: no tier */
        jt->near_bytes = tp->near_bytes;   /* 0: no neighbourhoods */
        jt->shape = tp->shape;
        if (!jt->tier_bytes)
            jt->tier_prefix[0] = '\0';
    }
    return 0;
}

/* text: the config as it came from the submit side (the canonical dump
 * of a valid config, or NULL); the layout takes it over. */
static int plan_layout(spank_t sp, const struct plugin *p,
                       const struct step *s, const struct kvshm_plan *plan,
                       char *text, struct kvshm_job_layout *l)
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
    l->dht_size = plan->dht_size;
    if (spank_getenv(sp, "SLURM_STEP_NODELIST", nodes, sizeof(nodes)) !=
        ESPANK_SUCCESS)
        spank_getenv(sp, "SLURM_JOB_NODELIST", nodes, sizeof(nodes));
    l->nodelist = strdup(nodes);
    l->config_text = text;
    if (!l->nodelist) {
        plugin_error("out of memory");
        return -1;
    }
    l->request_hash = kvshm_job_request_hash(l->dht_size, l->config_text);
    return plan_tables(p, s, plan, l);
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

/* The data region of a table entry, laid out as its plan says: buckets
 * of its shape after max_ranks counters, or (no shape: no job config)
 * for its first opener to lay out. */
static int fill_data(void *base, uint64_t size, void *arg,
                     mpikvs_error_t *err)
{
    const struct kvshm_job_table *jt = arg;
    struct kvshm_data_control *c =
        (struct kvshm_data_control *)((char *)base +
                                      KVSHM_DATA_CONTROL_OFFSET);
    struct kvshm_data_shape shape = {
        jt->shape.key_size, jt->shape.value_size, jt->shape.slots_per_bucket,
        jt->shape.mode};
    int rc;

    rc = kvshm_data_init(c, size, jt->shape.max_ranks,
                         jt->shape.key_size ? &shape : NULL, jt->name, err);
    /* plan.c counts the buckets as kvshm_data_init lays them out: the
     * layout tells the tasks what the region holds */
    if (rc == MPIKVS_OK && jt->shape.key_size &&
        c->nbuckets != jt->shape.nbuckets)
        rc = kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                        "table %s: the plan has %llu buckets, the region "
                        "laid out %llu",
                        jt->name, (unsigned long long)jt->shape.nbuckets,
                        (unsigned long long)c->nbuckets);
    return rc;
}

static int make_tier(const struct plugin *p, const struct step *s,
                     const struct kvshm_job_table *jt, mpikvs_error_t *err)
{
    struct kvshm_tier_spec spec = {.region = region_spec(p, s,
                                                         jt->tier_prefix)};
    struct kvshm_tier *tier = NULL;
    int rc;

    kvshm_tier_spec_for_bytes(&spec, jt->tier_bytes, jt->shape.key_size,
                              jt->shape.value_size);
    rc = kvshm_tier_create(&spec, &tier, err);
    kvshm_tier_close(&tier);
    return rc;
}

/* ---- names taken before the step ----
 *
 * The names mpikvs.<job>.<node>.* on a node are the job's: the plugin
 * makes them (the layout root's, the tables the job user's) and the job
 * epilog removes every one.  Still, anyone can make a file in /dev/shm
 * under a name of a job that has not started: a FIFO (opening it would
 * wait forever), a link (to be followed as root), a file with a header
 * of its own.  What is found under a name is looked at through an O_PATH
 * descriptor (nothing is opened for reading, no link is followed,
 * nothing waits) and judged by its type and owner alone.
 */
enum found {
    FOUND_NONE,    /* nothing there */
    FOUND_OURS,    /* what the plugin makes there: a regular file of root
                    * (layout) or of the job's user (table) */
    FOUND_PLANT,   /* what the plugin never makes there, of a user: it
                    * is removed */
    FOUND_KEPT,    /* root's, or a regular file of the job's user that
                    * this step did not make: left alone, the step fails */
    FOUND_ERROR    /* logged */
};

enum role { ROLE_LAYOUT, ROLE_TABLE };

struct seen {
    int         fd;    /* O_PATH, held so that the inode stays the one seen */
    struct stat st;
};

static enum found judge(const struct stat *st, const struct step *s,
                        enum role role)
{
    if (role == ROLE_LAYOUT) {   /* only root makes a layout */
        if (st->st_uid != 0)
            return FOUND_PLANT;
        return S_ISREG(st->st_mode) && st->st_gid == s->gid ? FOUND_OURS
                                                            : FOUND_KEPT;
    }
    if (st->st_uid == s->uid)
        return S_ISREG(st->st_mode) ? FOUND_OURS : FOUND_PLANT;
    return st->st_uid == 0 ? FOUND_KEPT : FOUND_PLANT;
}

static enum found look_at(int dirfd, const char *dir, const char *name,
                          const struct step *s, enum role role,
                          struct seen *seen)
{
    seen->fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (seen->fd < 0 && errno == ENOENT)
        return FOUND_NONE;
    if (seen->fd < 0 || fstat(seen->fd, &seen->st) != 0) {
        plugin_error("job %u step %u: cannot look at %s/%s: %s", s->job,
                     s->step, dir, name, strerror(errno));
        if (seen->fd >= 0)
            close(seen->fd);
        seen->fd = -1;
        return FOUND_ERROR;
    }
    return judge(&seen->st, s, role);
}

static void forget(struct seen *seen)
{
    if (seen->fd >= 0)
        close(seen->fd);
    seen->fd = -1;
}

/* Remove the planted file seen, and nothing else: its name is first moved
 * aside to a new name of this job (which the epilog would remove), what
 * was moved is checked to be the inode seen, and only that is removed;
 * anything else goes back.  0 when it is gone, 1 when something else
 * had taken the name (look again), -1 after logging. */
static int remove_plant(int dirfd, const char *dir, const char *name,
                        const struct step *s, const struct seen *seen)
{
    char tag[KVSHM_TAG_MAX], aside[KVSHM_NAME_MAX + 1];
    struct stat moved;
    bool same;
    int why = 0;

    kvshm_unique_id(tag, sizeof(tag));
    if (kvshm_region_name(aside, sizeof(aside), s->job_text, s->node, tag,
                          NULL) != MPIKVS_OK)
        return -1;
    if (renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE) != 0) {
        if (errno == ENOENT)   /* its owner removed it meanwhile */
            return 0;
        plugin_error("job %u step %u: cannot move %s/%s (%s of uid %u, "
                     "not made by this plugin) aside: %s",
                     s->job, s->step, dir, name,
                     kvshm_file_type(seen->st.st_mode),
                     (unsigned)seen->st.st_uid, strerror(errno));
        return -1;
    }
    same = fstatat(dirfd, aside, &moved, AT_SYMLINK_NOFOLLOW) == 0 &&
           moved.st_dev == seen->st.st_dev && moved.st_ino == seen->st.st_ino;
    if (same) {
        if (unlinkat(dirfd, aside, S_ISDIR(moved.st_mode) ? AT_REMOVEDIR
                                                          : 0) == 0) {
            slurm_info("%s: job %u step %u: removed %s/%s, %s of uid %u "
                       "that was not made by this plugin",
                       PLUGIN_NAME, s->job, s->step, dir, name,
                       kvshm_file_type(seen->st.st_mode),
                       (unsigned)seen->st.st_uid);
            return 0;
        }
        why = errno;   /* a directory with something in it */
    }
    /* what cannot go, or was put there after the look, goes back */
    if (renameat2(dirfd, aside, dirfd, name, RENAME_NOREPLACE) != 0) {
        plugin_error("job %u step %u: cannot put %s/%s back to %s: %s",
                     s->job, s->step, dir, aside, name, strerror(errno));
        return -1;
    }
    if (!same)
        return 1;
    plugin_error("job %u step %u: %s/%s is taken by %s of uid %u that this "
                 "plugin did not make, and it cannot be removed (%s): "
                 "remove it",
                 s->job, s->step, dir, name,
                 kvshm_file_type(seen->st.st_mode),
                 (unsigned)seen->st.st_uid, strerror(why));
    return -1;
}

/* What is under a name that this step did not make and may not remove:
 * the step fails, naming it. */
static int refuse_taken(const char *dir, const char *name,
                        const struct step *s, struct seen *seen)
{
    plugin_error("job %u step %u: %s/%s already exists (%s of uid %u gid "
                 "%u, not made by this step): it was left behind, remove it",
                 s->job, s->step, dir, name, kvshm_file_type(seen->st.st_mode),
                 (unsigned)seen->st.st_uid, (unsigned)seen->st.st_gid);
    forget(seen);
    return -1;
}

/* Make sure nothing is under a table's region name before it is made:
 * a plant is removed; a region of the job's user or anything of root's is
 * left alone and the step fails, naming it. */
static int clear_name(int dirfd, const char *dir, const char *name,
                      const struct step *s)
{
    for (int tries = 0; tries < PLANT_TRIES; tries++) {
        struct seen seen;
        enum found f = look_at(dirfd, dir, name, s, ROLE_TABLE, &seen);
        int rc;
        switch (f) {
        case FOUND_NONE:
            return 0;
        case FOUND_ERROR:
            return -1;
        case FOUND_OURS:
        case FOUND_KEPT:
            return refuse_taken(dir, name, s, &seen);
        case FOUND_PLANT:
            rc = remove_plant(dirfd, dir, name, s, &seen);
            forget(&seen);
            if (rc < 0)
                return -1;
            break;
        }
    }
    plugin_error("job %u step %u: %s/%s is planted again and again by "
                 "another user: the region cannot be made",
                 s->job, s->step, dir, name);
    return -1;
}

/* ---- the tables ---- */

/* The names of a table's regions: data, and the tier's two if it has one. */
static int table_names(const struct step *s, const struct kvshm_job_table *jt,
                       char names[3][KVSHM_NAME_MAX + 1], mpikvs_error_t *err)
{
    int rc = kvshm_region_name(names[0], KVSHM_NAME_MAX + 1, s->job_text,
                               s->node, jt->data_tag, err);

    if (rc != MPIKVS_OK || !jt->tier_bytes) {
        names[1][0] = names[2][0] = '\0';
        return rc;
    }
    return kvshm_tier_region_names(s->job_text, s->node, jt->tier_prefix,
                                   names[1], names[2], err);
}

/* Make table i's regions; *data_made tells whether its data region was
 * made when the tier then failed (the tier removes its own part). */
static int make_table(const struct plugin *p, const struct step *s,
                      const struct kvshm_job_table *jt, int dirfd,
                      bool *data_made)
{
    struct kvshm_region_spec spec = region_spec(p, s, jt->data_tag);
    char names[3][KVSHM_NAME_MAX + 1];
    struct kvshm_region *r = NULL;
    mpikvs_error_t err;
    int rc;

    *data_made = false;
    rc = table_names(s, jt, names, &err);
    for (int i = 0; rc == MPIKVS_OK && i < 3; i++)
        if (names[i][0] && clear_name(dirfd, p->site.shm_dir, names[i], s))
            return -1;
    if (rc == MPIKVS_OK) {
        spec.kind = KVSHM_KIND_DATA;
        spec.size = jt->data_bytes;
        spec.fill = fill_data;
        spec.fill_arg = (void *)jt;
        rc = kvshm_region_create(&spec, &r, &err);
        kvshm_region_close(&r);
        *data_made = rc == MPIKVS_OK;
    }
    if (rc == MPIKVS_OK && jt->tier_bytes)
        rc = make_tier(p, s, jt, &err);
    if (rc != MPIKVS_OK) {
        plugin_error("job %u step %u on %s: table %s: %s", s->job, s->step,
                     s->node, jt->name, err.text);
        return -1;
    }
    return 0;
}

/* Remove what a failed set-up made, by name: the layout, the first made
 * tables, and the data region of the next when data_made.  Other steps'
 * regions of the job on this node stay, and so does what was under a
 * name before. */
static void remove_made(const struct plugin *p, const struct step *s,
                        const struct kvshm_job_layout *l, size_t made,
                        bool data_made)
{
    char name[KVSHM_NAME_MAX + 1], tag[KVSHM_TAG_MAX];

    for (size_t i = 0; i < made + data_made && i < l->ntables; i++) {
        const struct kvshm_job_table *jt = &l->tables[i];
        if (kvshm_region_name(name, sizeof(name), s->job_text, s->node,
                              jt->data_tag, NULL) == MPIKVS_OK)
            kvshm_region_unlink(p->site.shm_dir, name);
        if (jt->tier_bytes && i < made)
            kvshm_tier_unlink(p->site.shm_dir, s->job_text, s->node,
                              jt->tier_prefix);
    }
    kvshm_job_layout_tag(p->req.scope, s->step, tag, sizeof(tag));
    if (kvshm_region_name(name, sizeof(name), s->job_text, s->node, tag,
                          NULL) == MPIKVS_OK)
        kvshm_region_unlink(p->site.shm_dir, name);
}

/* Counters for this step's tasks, and for later steps' up to the
 * node's CPUs or the site's minimum. */
static uint64_t max_ranks(const struct plugin *p, const struct step *s)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t n = s->tasks;

    if (n < (uint64_t)(cpus > 0 ? cpus : 1))
        n = (uint64_t)cpus;
    if (n < p->site.min_ranks)
        n = p->site.min_ranks;
    return n;
}

static int make_tables(const struct plugin *p, const struct step *s,
                       const struct kvshm_job_layout *l, int dirfd)
{
    bool data_made = false;
    size_t i;

    for (i = 0; i < l->ntables; i++)
        if (make_table(p, s, &l->tables[i], dirfd, &data_made) != 0)
            break;
    if (i == l->ntables)
        return 0;
    remove_made(p, s, l, i, data_made);   /* leave nothing behind */
    return -1;
}

/* ---- a later step of the job ---- */

/* Whether the layout's name still holds the layout this step read: the
 * step that made it removes it when its set-up fails. */
static bool same_file(int dirfd, const char *name, const struct stat *was)
{
    struct stat now;

    return fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
           now.st_dev == was->st_dev && now.st_ino == was->st_ino;
}

/* The tables are ready (1) when each region is a regular file of the
 * job's user: a plant under one of the names is not joined.  0: not yet;
 * -1 after logging. */
static int tables_ready(const struct plugin *p, const struct step *s,
                        const struct kvshm_job_layout *l, int dirfd)
{
    for (size_t i = 0; i < l->ntables; i++) {
        char names[3][KVSHM_NAME_MAX + 1];
        mpikvs_error_t err;
        if (table_names(s, &l->tables[i], names, &err) != MPIKVS_OK) {
            plugin_error("job %u step %u: %s", s->job, s->step, err.text);
            return -1;
        }
        for (int n = 0; n < 3; n++) {
            struct seen seen;
            enum found f;
            if (!names[n][0])
                continue;
            f = look_at(dirfd, p->site.shm_dir, names[n], s, ROLE_TABLE,
                        &seen);
            forget(&seen);
            if (f == FOUND_ERROR)
                return -1;
            if (f != FOUND_OURS)
                return 0;
        }
    }
    return 1;
}

static int join_job_regions(const struct plugin *p, const struct step *s,
                            const char *layout_path,
                            const struct kvshm_job_layout *want, int dirfd,
                            const struct seen *layout)
{
    const char *layout_name = strrchr(layout_path, '/') + 1;
    struct kvshm_job_layout *have = NULL;
    struct timespec deadline;
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
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += WAIT_FOR_CREATOR_S;
    for (int ready; (ready = tables_ready(p, s, have, dirfd)) != 1;) {
        struct timespec pause = {0, 10000000}, now;
        if (ready < 0) {
            kvshm_job_layout_free(have);
            return -1;
        }
        if (!same_file(dirfd, layout_name, &layout->st)) {
            plugin_error("job %u step %u: step %u, making the job's "
                         "regions on %s, failed and removed them (its "
                         "error is in its own output)",
                         s->job, s->step, have->step, s->node);
            kvshm_job_layout_free(have);
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > deadline.tv_sec ||
            (now.tv_sec == deadline.tv_sec &&
             now.tv_nsec >= deadline.tv_nsec)) {
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
    const struct kvshm_job_layout *l;
    const char                    *layout_path;
};

/* Make the layout, or find the job's; 1 when made, 0 when joined. */
static int make_or_join(const struct node_work *w, int dirfd)
{
    struct plugin *p = w->p;
    const struct step *s = w->s;
    const char *dir = p->site.shm_dir;
    const char *name = strrchr(w->layout_path, '/') + 1;
    struct kvshm_region_spec spec;
    char tag[KVSHM_TAG_MAX];
    mpikvs_error_t err;

    kvshm_job_layout_tag(p->req.scope, s->step, tag, sizeof(tag));
    /* root's, readable by the job's group, written by nobody after this */
    spec = region_spec(p, s, tag);
    spec.uid = 0;
    spec.mode = 0640;
    for (int tries = 0; tries < PLANT_TRIES; tries++) {
        struct seen seen;
        int rc = kvshm_job_layout_create(&spec, w->l, &err);
        if (rc == MPIKVS_OK)
            return 1;
        if (rc != MPIKVS_ERR_EXISTS) {
            plugin_error("job %u step %u on %s: %s", s->job, s->step,
                         s->node, err.text);
            return -1;
        }
        switch (look_at(dirfd, dir, name, s, ROLE_LAYOUT, &seen)) {
        case FOUND_NONE:   /* gone meanwhile: try again */
            break;
        case FOUND_ERROR:
            return -1;
        case FOUND_OURS:
            if (p->req.scope == KVSHM_SCOPE_JOB) {
                rc = join_job_regions(p, s, w->layout_path, w->l, dirfd,
                                      &seen);
                forget(&seen);
                return rc == 0 ? 0 : -1;
            }
            /* a step's layout is made by that step only */
            __attribute__((fallthrough));
        case FOUND_KEPT:
            return refuse_taken(dir, name, s, &seen);
        case FOUND_PLANT:
            rc = remove_plant(dirfd, dir, name, s, &seen);
            forget(&seen);
            if (rc < 0)
                return -1;
            break;
        }
    }
    plugin_error("job %u step %u: %s/%s is planted again and again by "
                 "another user: the job's layout cannot be made",
                 s->job, s->step, dir, name);
    return -1;
}

/* Make the layout and the tables, or join the job's; returns 1 when
 * this step made them, 0 when it joined, -1 after removing what it made. */
static int make_node_regions(void *arg)
{
    const struct node_work *w = arg;
    int dirfd, rc;

    /* the site's directory, named by root in plugstack.conf: a link
     * there is the site's own */
    dirfd = open(w->p->site.shm_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        plugin_error("job %u step %u: cannot open %s (plugstack argument "
                     "shm_dir): %s",
                     w->s->job, w->s->step, w->p->site.shm_dir,
                     strerror(errno));
        return -1;
    }
    rc = make_or_join(w, dirfd);
    if (rc == 1 && make_tables(w->p, w->s, w->l, dirfd) != 0)
        rc = -1;
    close(dirfd);
    return rc;
}

static int set_up(spank_t sp, struct plugin *p, const struct step *s,
                  const struct kvshm_job_layout *l)
{
    char tag[KVSHM_TAG_MAX], name[KVSHM_NAME_MAX + 1], path[512];
    struct node_work work = {p, s, l, path};
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
    struct kvshm_plan plan;
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
    if (site_checked_size(p, node_memory(), &size) != 0)
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
    }
    if (config_for_request(p, p->req.config_path, text, size, max_ranks(p, s),
                           &cfg, &plan) != 0) {
        free(text);
        return -1;
    }
    /* the layout keeps the text and the plan; the parsed config is no
     * longer needed */
    kvshm_config_free(cfg);
    rc = plan_layout(sp, p, s, &plan, text, &l);
    kvshm_plan_free(&plan);
    if (rc == 0)
        rc = set_up(sp, p, s, &l);
    free_layout(&l);
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
