/*
 * stat_region.c - makes mpikvs regions for the tests of mpikvs-stat,
 * with the shm core's own calls, as the SPANK plugin makes them: the
 * regions of a Slurm job that is not running here, a job layout, a tier
 * with entries, a data region nobody has laid out.
 *
 *   stat_region data DIR JOB NODE TAG [options]     laid-out data region
 *   stat_region raw DIR JOB NODE TAG [options]      data region left for
 *                                                   its first opener
 *   stat_region layout DIR JOB NODE [options]       job layout (tag
 *                                                   "layout"), root's 0640
 *   stat_region tier DIR JOB NODE PREFIX [options]  tier with --entries
 *   stat_region rma DIR JOB NODE ID [options]       window region of
 *                                                   libmpikvs-rmacache
 *
 * options: --step N (default: none, as libmpikvs makes them), --uid U,
 * --gid G (owner; needs root), --size BYTES (data region, default 1 MiB),
 * --entries N (tier, default 10), --nodes N (layout), --table NAME
 * (default "kvs"); for data and raw, --sparse BYTES (then make the file
 * a sparse one of BYTES, its header saying so) and --max-ranks N (then
 * say the control block has counters for N ranks), as a user could make
 * their own region; for rma, --max-ranks N (then the control block
 * claims N ranks, and the file is a sparse one of the size they take).
  Prints the region names it made, one a line; exits
 * 0, or 1 with the error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data_region.h"
#include "errors_internal.h"
#include "job_layout.h"
#include "region.h"
#include "rma_region.h"
#include "tier.h"

struct args {
    const char *cmd, *dir, *job, *node, *tag;
    uint32_t    step;
    uid_t       uid;
    gid_t       gid;
    uint64_t    size, entries, sparse, max_ranks;
    uint32_t    nodes;
    const char *table;
};

static int fill_data(void *base, uint64_t size, void *arg,
                     mpikvs_error_t *err)
{
    const struct args *a = arg;
    struct kvshm_data_shape shape = {16, 32, 4, 0};

    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, 8,
                           strcmp(a->cmd, "raw") ? &shape : NULL, a->table,
                           err);
}

static struct kvshm_region_spec spec_of(const struct args *a,
                                        const char *tag)
{
    struct kvshm_region_spec s = {
        .dir = a->dir, .job = a->job, .node = a->node, .tag = tag,
        .uid = a->uid, .gid = a->gid, .mode = 0600, .step = a->step,
    };
    return s;
}

/* Rewrite the region at path in place (not through a mapping): a sparse
 * file of a->sparse bytes whose header says so, and/or a control block
 * with counters for a->max_ranks ranks. */
static int doctor_data(const struct args *a, const char *path,
                       mpikvs_error_t *err)
{
    struct kvshm_header h;
    struct kvshm_data_control c;
    int fd, rc = MPIKVS_OK;

    fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return kvshm_fail(err, -errno, "cannot open %s", path);
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
        pread(fd, &c, sizeof(c), KVSHM_DATA_CONTROL_OFFSET) !=
            (ssize_t)sizeof(c)) {
        rc = kvshm_fail(err, -EIO, "cannot read %s", path);
        goto out;
    }
    if (a->sparse) {
        h.size = h.max_size = a->sparse;
        h.checksum = kvshm_header_checksum(&h);
        if (ftruncate(fd, (off_t)a->sparse) != 0) {
            rc = kvshm_fail(err, -errno, "cannot extend %s", path);
            goto out;
        }
    }
    if (a->max_ranks) {
        c.max_ranks = a->max_ranks;
        c.buckets_offset = kvshm_data_buckets_offset(a->max_ranks);
    }
    if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
        pwrite(fd, &c, sizeof(c), KVSHM_DATA_CONTROL_OFFSET) !=
            (ssize_t)sizeof(c))
        rc = kvshm_fail(err, -EIO, "cannot write %s", path);
out:
    close(fd);
    return rc;
}

static int make_data(const struct args *a, mpikvs_error_t *err)
{
    struct kvshm_region_spec s = spec_of(a, a->tag);
    struct kvshm_region *r = NULL;
    int rc;

    s.kind = KVSHM_KIND_DATA;
    s.size = a->size;
    s.fill = fill_data;
    s.fill_arg = (void *)a;
    rc = kvshm_region_create(&s, &r, err);
    if (rc == MPIKVS_OK && (a->sparse || a->max_ranks))
        rc = doctor_data(a, r->path, err);
    if (rc == MPIKVS_OK)
        printf("%s\n", r->path);
    kvshm_region_close(&r);
    return rc;
}

static int make_layout(const struct args *a, mpikvs_error_t *err)
{
    struct kvshm_job_table table;
    struct kvshm_job_layout l = {
        .scope = KVSHM_SCOPE_JOB, .step = a->step == KVSHM_NO_STEP ? 0
                                                                   : a->step,
        .nnodes = a->nodes, .node_index = 0, .tasks_on_node = 2,
        .dht_size = a->size, .ntables = 1, .tables = &table,
        .nodelist = (char *)"mpikvs[1-2]", .config_text = NULL,
    };
    struct kvshm_region_spec s = spec_of(a, "layout");
    int rc;

    rc = kvshm_job_table_tags(KVSHM_SCOPE_JOB, l.step, a->table, &table, err);
    if (rc != MPIKVS_OK)
        return rc;
    table.data_bytes = a->size;
    table.tier_bytes = 0;
    table.tier_prefix[0] = '\0';
    snprintf(l.job, sizeof(l.job), "%s", a->job);
    snprintf(l.node, sizeof(l.node), "%s", a->node);
    l.request_hash = kvshm_job_request_hash(l.dht_size, NULL);
    s.uid = 0;
    s.mode = 0640;
    rc = kvshm_job_layout_create(&s, &l, err);
    if (rc == MPIKVS_OK)
        printf("%s/mpikvs.%s.%s.layout\n", a->dir, a->job, a->node);
    return rc;
}

static int make_tier(const struct args *a, mpikvs_error_t *err)
{
    struct kvshm_tier_spec s = {.region = spec_of(a, a->tag),
                                .buckets = 64,
                                .initial_bytes = 64u << 10,
                                .max_bytes = 1u << 20};
    struct kvshm_tier *t = NULL;
    int rc;

    rc = kvshm_tier_create(&s, &t, err);
    for (uint64_t i = 0; rc == MPIKVS_OK && i < a->entries; i++) {
        unsigned char key[16] = {0}, value[32];
        memcpy(key, &i, sizeof(i));
        memset(value, (int)(i & 0xff), sizeof(value));
        rc = kvshm_tier_put(t, key, sizeof(key), value, sizeof(value), err);
    }
    kvshm_tier_close(&t);
    if (rc == MPIKVS_OK)
        printf("%s/mpikvs.%s.%s.%s-index\n%s/mpikvs.%s.%s.%s-entries\n",
               a->dir, a->job, a->node, a->tag, a->dir, a->job, a->node,
               a->tag);
    return rc;
}

/* A window's region as libmpikvs-rmacache makes it: 2 ranks, rings of
 * 4 KiB. */
#define RMA_RING 4096u

static int fill_rma(void *base, uint64_t size, void *arg,
                    mpikvs_error_t *err)
{
    (void)size, (void)err;
    kvshm_rma_init(base, arg, 2, 2, RMA_RING);
    return MPIKVS_OK;
}

/* Rewrite the window's region at path in place: its control block
 * claims a->max_ranks ranks, the header and the file the size they take
 * (a sparse file). */
static int doctor_rma(const struct args *a, const char *path,
                      mpikvs_error_t *err)
{
    struct kvshm_header h;
    struct kvshm_rma_control c;
    struct kvshm_rma_layout l;
    int fd, rc;

    if ((rc = kvshm_rma_layout(a->max_ranks, RMA_RING, &l, err)) != MPIKVS_OK)
        return rc;
    fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return kvshm_fail(err, -errno, "cannot open %s", path);
    rc = MPIKVS_OK;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
        pread(fd, &c, sizeof(c), KVSHM_HEADER_SIZE) != (ssize_t)sizeof(c)) {
        rc = kvshm_fail(err, -EIO, "cannot read %s", path);
        goto out;
    }
    c.nranks = c.win_ranks = a->max_ranks;
    c.ranks_offset = l.ranks_offset;
    c.segments_offset = l.segments_offset;
    c.segment_size = l.segment_size;
    h.size = h.max_size = l.region_size;
    h.checksum = kvshm_header_checksum(&h);
    if (ftruncate(fd, (off_t)l.region_size) != 0)
        rc = kvshm_fail(err, -errno, "cannot extend %s", path);
    else if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
             pwrite(fd, &c, sizeof(c), KVSHM_HEADER_SIZE) != (ssize_t)sizeof(c))
        rc = kvshm_fail(err, -EIO, "cannot write %s", path);
out:
    close(fd);
    return rc;
}

static int make_rma(const struct args *a, mpikvs_error_t *err)
{
    char tag[KVSHM_TAG_MAX];
    struct kvshm_region_spec s;
    struct kvshm_region *r = NULL;
    struct kvshm_rma_layout l;
    int rc;

    if ((rc = kvshm_rma_tag(a->tag, tag, err)) != MPIKVS_OK ||
        (rc = kvshm_rma_layout(2, RMA_RING, &l, err)) != MPIKVS_OK)
        return rc;
    s = spec_of(a, tag);
    s.kind = KVSHM_KIND_RMA_WINDOW;
    s.size = s.max_size = l.region_size;
    s.fill = fill_rma;
    s.fill_arg = &l;
    rc = kvshm_region_create(&s, &r, err);
    if (rc == MPIKVS_OK && a->max_ranks)
        rc = doctor_rma(a, r->path, err);
    if (rc == MPIKVS_OK)
        printf("%s\n", r->path);
    kvshm_region_close(&r);
    return rc;
}

static int parse(int argc, char **argv, struct args *a)
{
    int positional = !strcmp(argv[1], "layout") ? 3 : 4;

    memset(a, 0, sizeof(*a));
    a->cmd = argv[1];
    a->step = KVSHM_NO_STEP;
    a->uid = KVSHM_ANY_UID;
    a->gid = (gid_t)-1;
    a->size = 1u << 20;
    a->entries = 10;
    a->nodes = 2;
    a->table = "kvs";
    if (argc < 2 + positional)
        return -1;
    a->dir = argv[2];
    a->job = argv[3];
    a->node = argv[4];
    a->tag = positional == 4 ? argv[5] : "layout";
    for (int i = 2 + positional; i < argc; i += 2) {
        const char *v = argv[i + 1];
        if (i + 1 >= argc)
            return -1;
        if (!strcmp(argv[i], "--step"))
            a->step = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--uid"))
            a->uid = (uid_t)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--gid"))
            a->gid = (gid_t)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--size"))
            a->size = strtoull(v, NULL, 10);
        else if (!strcmp(argv[i], "--entries"))
            a->entries = strtoull(v, NULL, 10);
        else if (!strcmp(argv[i], "--nodes"))
            a->nodes = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--table"))
            a->table = v;
        else if (!strcmp(argv[i], "--sparse"))
            a->sparse = strtoull(v, NULL, 10);
        else if (!strcmp(argv[i], "--max-ranks"))
            a->max_ranks = strtoull(v, NULL, 10);
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    mpikvs_error_t err = {0, ""};
    struct args a;
    int rc;

    if (argc < 2 || parse(argc, argv, &a) != 0) {
        fprintf(stderr, "usage: stat_region data|raw|tier|rma DIR JOB NODE TAG "
                        "[options]\n       stat_region layout DIR JOB NODE "
                        "[options]\n");
        return 2;
    }
    if (!strcmp(a.cmd, "data") || !strcmp(a.cmd, "raw"))
        rc = make_data(&a, &err);
    else if (!strcmp(a.cmd, "layout"))
        rc = make_layout(&a, &err);
    else if (!strcmp(a.cmd, "tier"))
        rc = make_tier(&a, &err);
    else if (!strcmp(a.cmd, "rma"))
        rc = make_rma(&a, &err);
    else {
        fprintf(stderr, "stat_region: unknown command '%s'\n", a.cmd);
        return 2;
    }
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "stat_region: %s\n", err.text);
        return 1;
    }
    return 0;
}
