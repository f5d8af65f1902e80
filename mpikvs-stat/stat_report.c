/*
 * stat_report.c - mpikvs-stat: reading what one job holds on the node.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errors_internal.h"
#include "stat_liveness.h"
#include "stat_output.h"
#include "stat_report.h"

/* Arrays here grow by doubling, so one whose count is 0 or a power of
 * two is full.  Returns the array with room for one more element (moved,
 * perhaps), or NULL when out of memory (the array is then unchanged). */
static void *room_for_one(void *array, size_t count, size_t elem)
{
    if (count & (count - 1))
        return array;
    return realloc(array, (count ? 2 * count : 1) * elem);
}

static int add_problem(struct stat_job_report *rep,
                       const struct stat_region *r, int code,
                       const char *text)
{
    struct stat_problem *p;

    p = room_for_one(rep->problems, rep->nproblems, sizeof(*p));
    if (!p)
        return -1;
    rep->problems = p;
    p = &rep->problems[rep->nproblems++];
    p->region = r;
    p->code = code;
    snprintf(p->text, sizeof(p->text), "%s", text);
    return 0;
}

static struct stat_node_report *node_of(struct stat_job_report *rep,
                                        const char *node)
{
    struct stat_node_report *n;

    for (size_t i = 0; i < rep->nnodes; i++)
        if (strcmp(rep->nodes[i].node, node) == 0)
            return &rep->nodes[i];
    n = room_for_one(rep->nodes, rep->nnodes, sizeof(*n));
    if (!n)
        return NULL;
    rep->nodes = n;
    n = &rep->nodes[rep->nnodes++];
    memset(n, 0, sizeof(*n));
    snprintf(n->node, sizeof(n->node), "%s", node);
    return n;
}

static const struct stat_region *find_region(
    const struct stat_region_list *list, const char *node, const char *tag)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->regions[i].node, node) == 0 &&
            strcmp(list->regions[i].tag, tag) == 0)
            return &list->regions[i];
    return NULL;
}

/* ---- one region of each kind ---- */

/* A file that shrinks under its mapping (truncated by hand while it is
 * read) raises SIGBUS at the next load; that load becomes a problem of
 * the report instead of the end of mpikvs-stat (what the interrupted
 * read had allocated is lost then). */
static sigjmp_buf bus_jump;
static volatile sig_atomic_t bus_armed;

static void on_bus(int sig)
{
    if (bus_armed)
        siglongjmp(bus_jump, 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* fn(arg, err), with a SIGBUS in it made an error about what (the
 * regions fn reads). */
static int guarded(int (*fn)(void *arg, mpikvs_error_t *err), void *arg,
                   const char *what, mpikvs_error_t *err)
{
    struct sigaction bus = {.sa_handler = on_bus}, old_bus;
    int rc;

    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, &old_bus);
    if (sigsetjmp(bus_jump, 1) == 0) {
        bus_armed = 1;
        rc = fn(arg, err);
    } else {
        rc = kvshm_fail(err, MPIKVS_ERR_TRUNCATED,
                        "%s shrank while it was read (truncated by hand?)",
                        what);
    }
    bus_armed = 0;
    sigaction(SIGBUS, &old_bus, NULL);
    return rc;
}

/* Whether the region opened on fd is the file that was listed and
 * judged as r (the name may lead to another file now). */
static int same_file(int fd, const char *dir, const struct stat_region *r,
                     struct stat *st, mpikvs_error_t *err)
{
    if (fstat(fd, st) != 0)
        return kvshm_fail(err, -errno, "cannot stat %s/%s: %s", dir,
                          r->name, strerror(errno));
    if (st->st_dev != r->st.st_dev || st->st_ino != r->st.st_ino)
        return kvshm_fail(err, MPIKVS_ERR_FOREIGN,
                          "%s/%s was replaced since it was listed; not "
                          "reading it",
                          dir, r->name);
    return MPIKVS_OK;
}

/* Open the listed region r of this kind, read-only, if it is still the
 * file that was listed, and its owner the one the listing read from its
 * header (a file of another owner under the name since then is
 * refused).  MPIKVS_OK, or an error in err and nothing open. */
static int open_listed(const struct stat_region *r, const char *dir,
                       uint32_t kind, struct kvshm_region **region,
                       struct stat *st, mpikvs_error_t *err)
{
    struct kvshm_open_opts oo = {.kind = kind, .writable = false,
                                 .expect_uid = (uid_t)r->header.uid,
                                 .held = r->unlinked};
    int rc = kvshm_region_open(dir, r->name, &oo, region, err);

    if (rc == MPIKVS_OK &&
        (rc = same_file((*region)->fd, dir, r, st, err)) != MPIKVS_OK)
        kvshm_region_close(region);
    return rc;
}

struct table_read {
    const struct kvshm_region  *region;
    const struct stat_region   *r;
    const struct stat          *st;
    const char                 *dir;
    bool                        scan;
    struct stat_table_report   *t;
    struct stat_counter_values *counters;
};

/* The transports of the ranks' blocks, each named once, in the order of
 * the first rank that uses it. */
static void read_transports(const void *base,
                            const struct kvshm_data_control *c, char *buf,
                            size_t len)
{
    uint64_t seen[8];
    size_t nseen = 0;

    buf[0] = '\0';
    for (uint64_t r = 0; r < c->max_ranks && nseen < 8; r++) {
        uint64_t v = __atomic_load_n(
            &kvshm_data_rank_stats(base, c, r)->transport, __ATOMIC_RELAXED);
        size_t i = 0;

        while (i < nseen && seen[i] != v)
            i++;
        if (v == KVSHM_TRANSPORT_AUTO || i < nseen)
            continue;
        seen[nseen++] = v;
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
                 nseen > 1 ? ", " : "", stat_transport_name(v));
    }
}

/* The control block, counters and slots of the table mapped at base.
 * Only what the file holds is read: a sparse file whose control block
 * claims billions of ranks or buckets would make every page read a new
 * page of the shm directory, and the counters gigabytes of memory. */
static int read_table(void *arg, mpikvs_error_t *err)
{
    struct table_read *a = arg;
    const struct kvshm_data_control *c = &a->t->control;
    uint64_t need, held = (uint64_t)a->st->st_blocks * 512;
    char need_s[32], held_s[32];
    int rc;

    rc = kvshm_data_read_control(a->region->base, a->region->size,
                                 a->r->name, &a->t->control, err);
    if (rc != MPIKVS_OK)
        return rc;
    /* checked: the buckets end in the file, so no sum wraps */
    need = c->buckets_offset;
    if (a->scan && c->state == KVSHM_DATA_READY)
        need += c->nbuckets * c->bucket_size;
    if (need > held) {
        kvshm_format_bytes(need_s, sizeof(need_s), need);
        kvshm_format_bytes(held_s, sizeof(held_s), held);
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s/%s is sparse: its control block claims "
                          "counters for %llu ranks%s (%s to read), but only "
                          "%s of the file is allocated (libmpikvs reserves "
                          "all of a region); not reading it",
                          a->dir, a->r->name,
                          (unsigned long long)c->max_ranks,
                          c->state == KVSHM_DATA_READY ? " and its buckets"
                                                       : "",
                          need_s, held_s);
    }
    stat_escape(a->t->table, sizeof(a->t->table), c->table,
                sizeof(c->table));
    if (stat_counters_read(a->region->base, c, a->counters) != 0)
        return kvshm_fail(err, -ENOMEM, "out of memory");
    a->t->counters = a->counters;
    read_transports(a->region->base, c, a->t->transport,
                    sizeof(a->t->transport));
    if (a->scan && c->state == KVSHM_DATA_READY) {
        rc = kvshm_data_occupancy(a->region->base, c, &a->t->occupancy);
        if (rc != MPIKVS_OK)
            return kvshm_fail(err, rc, "out of memory");
        a->t->scanned = true;
    }
    return MPIKVS_OK;
}

static int read_data(struct stat_job_report *rep, struct stat_node_report *n,
                     const struct stat_region *r,
                     const struct stat_report_opts *opts)
{
    struct stat_counter_values *counters;
    struct kvshm_region *region = NULL;
    struct stat_table_report *t;
    struct table_read a;
    mpikvs_error_t err;
    struct stat st;
    char what[4200];
    int rc;

    rc = open_listed(r, opts->dir, KVSHM_KIND_DATA, &region, &st, &err);
    if (rc != MPIKVS_OK)
        return add_problem(rep, r, rc, err.text);
    t = room_for_one(n->tables, n->ntables, sizeof(*t));
    if (t)   /* realloc may have moved, and freed, the old array */
        n->tables = t;
    counters = calloc(stat_ncounter_groups, sizeof(*counters));
    if (!t || !counters) {
        free(counters);
        kvshm_region_close(&region);
        return -1;
    }
    t = &n->tables[n->ntables];
    memset(t, 0, sizeof(*t));
    t->region = r;

    a = (struct table_read){region, r, &st, opts->dir, opts->scan, t,
                            counters};
    snprintf(what, sizeof(what), "%s/%s", opts->dir, r->name);
    rc = guarded(read_table, &a, what, &err);
    kvshm_region_close(&region);

    if (rc == MPIKVS_OK) {
        n->ntables++;
        return 0;
    }
    stat_counters_free(counters);
    free(counters);
    t->counters = NULL;
    return rc == -ENOMEM ? -1 : add_problem(rep, r, rc, err.text);
}

static int read_layout(struct stat_job_report *rep,
                       struct stat_node_report *n,
                       const struct stat_region *r,
                       const struct stat_report_opts *opts)
{
    struct kvshm_job_layout *layout = NULL;
    struct stat_layout_report *l;
    mpikvs_error_t err;
    char path[4096];
    int rc;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", opts->dir, r->name) >=
        sizeof(path))
        return add_problem(rep, r, MPIKVS_ERR_NAME, "path too long");
    rc = kvshm_job_layout_open(path, &layout, &err);
    if (rc != MPIKVS_OK)
        return add_problem(rep, r, rc, err.text);
    l = room_for_one(n->layouts, n->nlayouts, sizeof(*l));
    if (!l) {
        kvshm_job_layout_free(layout);
        return -1;
    }
    n->layouts = l;
    l = &n->layouts[n->nlayouts++];
    l->region = r;
    l->layout = layout;
    return 0;
}

struct tier_read {
    const char                         *dir;
    const struct stat_region           *r;
    const char                         *prefix;
    const struct kvshm_tier_reader_opts *opts;
    struct kvshm_tier                 **tier;
    struct kvshm_tier_stats            *stats;
};

/* Open the tier, read its figures and close it; a SIGBUS on the way
 * leaves *tier for the caller to close. */
static int read_tier_stats(void *arg, mpikvs_error_t *err)
{
    struct tier_read *a = arg;
    int rc;

    rc = kvshm_tier_open(a->dir, a->r->job, a->r->node, a->prefix, a->opts,
                         a->tier, err);
    if (rc != MPIKVS_OK)
        return rc;
    kvshm_tier_stats(*a->tier, a->stats);
    kvshm_tier_close(a->tier);
    return MPIKVS_OK;
}

/* A tier, found by either of its regions; each tier once per node. */
static int read_tier(struct stat_job_report *rep, struct stat_node_report *n,
                     const struct stat_region_list *list,
                     const struct stat_region *r,
                     const struct stat_report_opts *opts)
{
    /* both regions of the owner the listing read from r's header */
    struct kvshm_tier_reader_opts to = {.expect_uid = (uid_t)r->header.uid,
                                        .held = r->unlinked};
    char prefix[KVSHM_TAG_MAX], index_tag[KVSHM_TAG_MAX],
        entries_tag[KVSHM_TAG_MAX], what[4400];
    struct kvshm_tier *tier = NULL;
    struct stat_tier_report *t;
    struct tier_read a;
    mpikvs_error_t err;
    int rc;

    if (!kvshm_tag_table_prefix(r->tag, r->header.kind, prefix))
        return add_problem(rep, r, MPIKVS_ERR_NAME,
                           "a tier region whose tag does not end in "
                           "-index or -entries");
    for (size_t i = 0; i < n->ntiers; i++)
        if (strcmp(n->tiers[i].prefix, prefix) == 0)
            return 0;
    t = room_for_one(n->tiers, n->ntiers, sizeof(*t));
    if (!t)
        return -1;
    n->tiers = t;
    t = &n->tiers[n->ntiers];
    memset(t, 0, sizeof(*t));
    a = (struct tier_read){opts->dir, r, prefix, &to, &tier, &t->stats};
    snprintf(what, sizeof(what), "the tier %s/mpikvs.%s.%s.%s-index/-entries",
             opts->dir, r->job, r->node, prefix);
    rc = guarded(read_tier_stats, &a, what, &err);
    if (tier)   /* open when a SIGBUS came after the open */
        kvshm_tier_close(&tier);
    if (rc != MPIKVS_OK)
        return add_problem(rep, r, rc, err.text);
    n->ntiers++;
    snprintf(t->prefix, sizeof(t->prefix), "%s", prefix);
    /* the prefix opened the tier: its tags fit */
    kvshm_tier_tags(prefix, index_tag, entries_tag, NULL);
    t->index = find_region(list, r->node, index_tag);
    t->entries = find_region(list, r->node, entries_tag);
    return 0;
}

struct rma_read {
    const struct kvshm_region *region;
    const struct stat         *st;
    const char                *dir;
    struct stat_rma_report    *t;
};

/* The control block, the ranks and their counters of the window's
 * region mapped at base.  As for a table (read_table), only a region
 * whose file holds what its control block claims is read: a sparse one
 * claiming 65536 ranks would make each rank's segment header a new page
 * of the shm directory (256 MiB for one planted file). */
static int read_rma_window(void *arg, mpikvs_error_t *err)
{
    struct rma_read *a = arg;
    struct stat_rma_report *t = a->t;
    const void *base = a->region->base;
    char name[sizeof(t->control.name)], need_s[32], held_s[32], ring_s[32];
    uint64_t held = (uint64_t)a->st->st_blocks * 512;
    struct kvshm_rma_layout l;
    int rc;

    rc = kvshm_rma_read_control(base, a->region->size, t->region->name,
                                &t->control, err);
    if (rc != MPIKVS_OK)
        return rc;
    /* the control block passed its check: its layout is valid */
    kvshm_rma_layout(t->control.nranks, t->control.ring_size, &l, err);
    if (l.region_size > held) {
        kvshm_format_bytes(need_s, sizeof(need_s), l.region_size);
        kvshm_format_bytes(held_s, sizeof(held_s), held);
        kvshm_format_bytes(ring_s, sizeof(ring_s), t->control.ring_size);
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s/%s is sparse: its control block claims %llu "
                          "ranks with rings of %s (%s), but only %s of the "
                          "file is allocated (libmpikvs-rmacache reserves "
                          "all of a region); not reading it",
                          a->dir, t->region->name,
                          (unsigned long long)t->control.nranks, ring_s,
                          need_s, held_s);
    }
    kvshm_rma_name(base, name, sizeof(name));
    stat_escape(t->name, sizeof(t->name), name, sizeof(name));
    t->ranks = calloc(t->control.nranks, sizeof(*t->ranks));
    if (!t->ranks || stat_counters_read_rma(base, &t->control, &t->counters))
        return kvshm_fail(err, -ENOMEM, "out of memory");
    for (uint64_t r = 0; r < t->control.nranks; r++) {
        const struct kvshm_rma_rank *b = kvshm_rma_rank(base, &t->control, r);
        const struct kvshm_rma_segment *s =
            kvshm_rma_segment(base, &t->control, r);
        t->ranks[r] = (struct stat_rma_rank){
            __atomic_load_n(&b->pid, __ATOMIC_RELAXED),
            __atomic_load_n(&b->win_rank, __ATOMIC_RELAXED),
            __atomic_load_n(&b->mode, __ATOMIC_RELAXED),
            __atomic_load_n(&s->head, __ATOMIC_RELAXED)};
    }
    return MPIKVS_OK;
}

static void rma_report_free(struct stat_rma_report *t)
{
    free(t->ranks);
    t->ranks = NULL;
    stat_counters_free_one(&t->counters);
}

static int read_rma(struct stat_job_report *rep, struct stat_node_report *n,
                    const struct stat_region *r,
                    const struct stat_report_opts *opts)
{
    struct kvshm_region *region = NULL;
    struct stat_rma_report *t;
    mpikvs_error_t err;
    struct stat st;
    char what[4200];
    int rc;

    rc = open_listed(r, opts->dir, KVSHM_KIND_RMA_WINDOW, &region, &st, &err);
    if (rc != MPIKVS_OK)
        return add_problem(rep, r, rc, err.text);
    t = room_for_one(n->rma, n->nrma, sizeof(*t));
    if (!t) {
        kvshm_region_close(&region);
        return -1;
    }
    n->rma = t;
    t = &n->rma[n->nrma];
    memset(t, 0, sizeof(*t));
    t->region = r;
    snprintf(what, sizeof(what), "%s/%s", opts->dir, r->name);
    rc = guarded(read_rma_window, &(struct rma_read){region, &st, opts->dir, t},
                 what, &err);
    kvshm_region_close(&region);
    if (rc == MPIKVS_OK) {
        n->nrma++;
        return 0;
    }
    rma_report_free(t);
    return rc == -ENOMEM ? -1 : add_problem(rep, r, rc, err.text);
}

/* ---- the whole report ---- */

int stat_report_build(const struct stat_region_list *list,
                      const struct stat_report_opts *opts,
                      struct stat_job_report *out)
{
    memset(out, 0, sizeof(*out));
    if (list->count)
        snprintf(out->job, sizeof(out->job), "%s", list->regions[0].job);
    stat_liveness_of_job(list->regions, list->count, &out->liveness);
    for (size_t i = 0; i < list->count; i++) {
        const struct stat_region *r = &list->regions[i];
        struct stat_node_report *n;
        int rc = 0;

        if (opts->only_name && strcmp(opts->only_name, r->name) != 0)
            continue;
        if (r->error != MPIKVS_OK) {
            rc = add_problem(out, r, r->error, r->error_text);
        } else if (!(n = node_of(out, r->node))) {
            rc = -1;
        } else {
            switch (r->header.kind) {
            case KVSHM_KIND_DATA:
                rc = read_data(out, n, r, opts);
                break;
            case KVSHM_KIND_LAYOUT:
                rc = read_layout(out, n, r, opts);
                break;
            case KVSHM_KIND_TIER_INDEX:
            case KVSHM_KIND_TIER_ENTRIES:
                rc = read_tier(out, n, list, r, opts);
                break;
            case KVSHM_KIND_RMA_WINDOW:
                rc = read_rma(out, n, r, opts);
                break;
            }
        }
        if (rc != 0) {
            stat_report_free(out);
            return -1;
        }
    }
    if (stat_totals_build(out, &out->totals) != 0) {
        stat_report_free(out);
        return -1;
    }
    return 0;
}

void stat_report_free(struct stat_job_report *rep)
{
    for (size_t i = 0; i < rep->nnodes; i++) {
        struct stat_node_report *n = &rep->nodes[i];
        for (size_t j = 0; j < n->nlayouts; j++)
            kvshm_job_layout_free(n->layouts[j].layout);
        for (size_t j = 0; j < n->ntables; j++) {
            if (n->tables[j].counters)
                stat_counters_free(n->tables[j].counters);
            free(n->tables[j].counters);
        }
        for (size_t j = 0; j < n->nrma; j++)
            rma_report_free(&n->rma[j]);
        free(n->layouts);
        free(n->tables);
        free(n->tiers);
        free(n->rma);
    }
    free(rep->nodes);
    free(rep->problems);
    stat_totals_free(&rep->totals);
    memset(rep, 0, sizeof(*rep));
}

const struct stat_table_report *stat_report_table_of_tier(
    const struct stat_node_report *node, const struct stat_tier_report *t)
{
    char prefix[KVSHM_TAG_MAX];

    for (size_t i = 0; i < node->ntables; i++)
        if (kvshm_tag_table_prefix(node->tables[i].region->tag,
                                   KVSHM_KIND_DATA, prefix) &&
            strcmp(prefix, t->prefix) == 0)
            return &node->tables[i];
    return NULL;
}
