/*
 * job_layout.c - the job layout region: written once by the SPANK plugin,
 * read by every task.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "errors_internal.h"
#include "job_layout.h"

int kvshm_job_table_tags(enum kvshm_scope scope, uint32_t step,
                         const char *table, struct kvshm_job_table *out,
                         mpikvs_error_t *err)
{
    /* zeroed: the bytes after the tags go into the layout as they are */
    char prefix[KVSHM_TIER_PREFIX_MAX] = "", data_tag[KVSHM_TAG_MAX] = "";
    int rc = kvshm_table_tags(scope, step, table, prefix, data_tag, err);

    if (rc != MPIKVS_OK)
        return rc;
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", table);
    memcpy(out->tier_prefix, prefix, sizeof(out->tier_prefix));
    memcpy(out->data_tag, data_tag, sizeof(out->data_tag));
    return MPIKVS_OK;
}

uint64_t kvshm_job_request_hash(uint64_t dht_size, const char *config_text)
{
    /* no config and an empty one are different requests */
    if (!config_text)
        return XXH3_64bits_withSeed("no config", 9, dht_size);
    return XXH3_64bits_withSeed(config_text, strlen(config_text), dht_size);
}

static uint64_t body_checksum(const char *base, uint64_t body_size)
{
    const size_t skip = sizeof(uint64_t);   /* the checksum itself */

    return XXH3_64bits(base + KVSHM_HEADER_SIZE + skip, body_size - skip);
}

struct placement {
    uint64_t tables, nodelist, nodelist_len, config, config_len, end;
};

static struct placement place(const struct kvshm_job_layout *l)
{
    struct placement p;

    p.tables = KVSHM_HEADER_SIZE + sizeof(struct kvshm_layout_control);
    p.nodelist = p.tables + l->ntables * sizeof(struct kvshm_job_table);
    p.nodelist_len = l->nodelist ? strlen(l->nodelist) : 0;
    p.config = p.nodelist + p.nodelist_len + 1;
    p.config_len = l->config_text ? strlen(l->config_text) : 0;
    p.end = p.config + p.config_len + 1;
    return p;
}

static int write_body(void *base, uint64_t size, void *arg,
                      mpikvs_error_t *err)
{
    const struct kvshm_job_layout *l = arg;
    struct kvshm_layout_control *c =
        (struct kvshm_layout_control *)((char *)base + KVSHM_HEADER_SIZE);
    struct placement p = place(l);
    char *b = base;

    (void)err;
    (void)size;
    c->body_size = p.end - KVSHM_HEADER_SIZE;
    c->dht_size = l->dht_size;
    c->request_hash = l->request_hash;
    c->scope = (uint32_t)l->scope;
    c->step = l->step;
    c->nnodes = l->nnodes;
    c->node_index = l->node_index;
    c->tasks_on_node = l->tasks_on_node;
    c->ntables = (uint32_t)l->ntables;
    c->tables_offset = p.tables;
    c->nodelist_offset = p.nodelist;
    c->nodelist_len = p.nodelist_len;
    c->config_offset = p.config;
    c->config_len = p.config_len;
    if (l->ntables)
        memcpy(b + p.tables, l->tables,
               l->ntables * sizeof(struct kvshm_job_table));
    if (p.nodelist_len)
        memcpy(b + p.nodelist, l->nodelist, p.nodelist_len);
    if (p.config_len)
        memcpy(b + p.config, l->config_text, p.config_len);
    c->body_checksum = body_checksum(b, c->body_size);
    return MPIKVS_OK;
}

int kvshm_job_layout_create(const struct kvshm_region_spec *spec,
                            const struct kvshm_job_layout *l,
                            mpikvs_error_t *err)
{
    struct kvshm_region_spec rs = *spec;
    struct placement p = place(l);
    struct kvshm_region *r = NULL;
    int rc;

    if (l->ntables > KVSHM_JOB_LAYOUT_MAX_TABLES ||
        p.nodelist_len >= KVSHM_JOB_LAYOUT_MAX_TEXT ||
        p.config_len >= KVSHM_JOB_LAYOUT_MAX_TEXT)
        return kvshm_fail(err, MPIKVS_ERR_TOOBIG,
                          "the job layout is too big: %zu tables (at most "
                          "%u), a node list of %llu and a config of %llu "
                          "bytes (at most %u each)",
                          l->ntables, KVSHM_JOB_LAYOUT_MAX_TABLES,
                          (unsigned long long)p.nodelist_len,
                          (unsigned long long)p.config_len,
                          KVSHM_JOB_LAYOUT_MAX_TEXT - 1);
    rs.kind = KVSHM_KIND_LAYOUT;
    rs.size = (p.end + 4095) & ~UINT64_C(4095);
    rs.max_size = 0;
    rs.fill = write_body;
    rs.fill_arg = (void *)l;
    rc = kvshm_region_create(&rs, &r, err);
    kvshm_region_close(&r);
    return rc;
}

static bool text_ok(const char *base, uint64_t size, uint64_t off,
                    uint64_t len)
{
    return off <= size && len < size - off && base[off + len] == '\0' &&
           memchr(base + off, '\0', len) == NULL;
}

static char *copy_text(const char *base, uint64_t off, uint64_t len)
{
    char *s = malloc(len + 1);

    if (s)
        memcpy(s, base + off, len + 1);
    return s;
}

/* Check the body of a mapped layout region and copy it out. */
static int read_body(const struct kvshm_region *r, const char *name,
                     struct kvshm_job_layout *l, mpikvs_error_t *err)
{
    const char *b = r->base;
    const struct kvshm_header *h = r->base;
    const struct kvshm_layout_control *c =
        (const struct kvshm_layout_control *)(b + KVSHM_HEADER_SIZE);
    uint64_t size = r->size;
    size_t tables_len;

    if (size < KVSHM_HEADER_SIZE + sizeof(*c) ||
        c->body_size < sizeof(*c) ||
        c->body_size > size - KVSHM_HEADER_SIZE)
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "job layout %s is damaged (its body size %llu does "
                          "not fit the file): end the job",
                          name, (unsigned long long)c->body_size);
    if (body_checksum(b, c->body_size) != c->body_checksum)
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "job layout %s is damaged (its checksum does not "
                          "match): the node's regions cannot be trusted; "
                          "end the job",
                          name);
    tables_len = (size_t)c->ntables * sizeof(struct kvshm_job_table);
    if ((c->scope != KVSHM_SCOPE_JOB && c->scope != KVSHM_SCOPE_STEP) ||
        c->ntables > KVSHM_JOB_LAYOUT_MAX_TABLES ||
        c->tables_offset < KVSHM_HEADER_SIZE + sizeof(*c) ||
        c->tables_offset > size || tables_len > size - c->tables_offset ||
        !text_ok(b, size, c->nodelist_offset, c->nodelist_len) ||
        !text_ok(b, size, c->config_offset, c->config_len))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "job layout %s has fields out of range", name);
    memcpy(l->job, h->job, sizeof(l->job));
    memcpy(l->node, h->node, sizeof(l->node));
    l->scope = (enum kvshm_scope)c->scope;
    l->step = c->step;
    l->nnodes = c->nnodes;
    l->node_index = c->node_index;
    l->tasks_on_node = c->tasks_on_node;
    l->dht_size = c->dht_size;
    l->request_hash = c->request_hash;
    l->ntables = c->ntables;
    l->tables = calloc(c->ntables ? c->ntables : 1, sizeof(*l->tables));
    l->nodelist = copy_text(b, c->nodelist_offset, c->nodelist_len);
    l->config_text = c->config_len
                         ? copy_text(b, c->config_offset, c->config_len)
                         : NULL;
    if (!l->tables || !l->nodelist || (c->config_len && !l->config_text))
        return kvshm_fail(err, -ENOMEM, "out of memory reading %s", name);
    memcpy(l->tables, b + c->tables_offset, tables_len);
    for (size_t i = 0; i < l->ntables; i++) {
        struct kvshm_job_table *t = &l->tables[i];
        if (!memchr(t->name, '\0', sizeof(t->name)) ||
            !memchr(t->data_tag, '\0', sizeof(t->data_tag)) ||
            !memchr(t->tier_prefix, '\0', sizeof(t->tier_prefix)))
            return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                              "job layout %s has a table name without an "
                              "end",
                              name);
    }
    return MPIKVS_OK;
}

int kvshm_job_layout_open(const char *path, struct kvshm_job_layout **out,
                          mpikvs_error_t *err)
{
    /* Root (the plugin, or a job of root's) trusts only a layout of its
     * own: one of anyone else is refused before it is read. */
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_LAYOUT,
                                 .writable = false,
                                 .expect_uid = geteuid() == 0
                                                   ? 0
                                                   : KVSHM_ANY_UID};
    const char *slash = strrchr(path, '/');
    struct kvshm_region *r = NULL;
    struct kvshm_job_layout *l;
    char dir[4096];
    int rc;

    *out = NULL;
    if (!slash || slash == path || !slash[1] ||
        (size_t)(slash - path) >= sizeof(dir))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "'%s' is not the path of a job layout region "
                          "(DIR/mpikvs.JOB.NODE.layout)",
                          path);
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    rc = kvshm_region_open(dir, slash + 1, &oo, &r, err);
    if (rc != MPIKVS_OK)
        return rc;
    if (((const struct kvshm_header *)r->base)->uid != 0 &&
        ((const struct kvshm_header *)r->base)->uid != (uint32_t)geteuid()) {
        rc = kvshm_fail(err, MPIKVS_ERR_OWNER,
                        "job layout %s belongs to uid %u, neither root nor "
                        "this user: not trusted",
                        path, ((const struct kvshm_header *)r->base)->uid);
        kvshm_region_close(&r);
        return rc;
    }
    l = calloc(1, sizeof(*l));
    rc = l ? read_body(r, path, l, err)
           : kvshm_fail(err, -ENOMEM, "out of memory reading %s", path);
    kvshm_region_close(&r);
    if (rc != MPIKVS_OK) {
        kvshm_job_layout_free(l);
        return rc;
    }
    *out = l;
    return MPIKVS_OK;
}

void kvshm_job_layout_free(struct kvshm_job_layout *l)
{
    if (!l)
        return;
    free(l->tables);
    free(l->nodelist);
    free(l->config_text);
    free(l);
}
