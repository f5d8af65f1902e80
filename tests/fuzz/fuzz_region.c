/*
 * fuzz_region.c - libFuzzer target for region headers and control blocks.
 *
 * An input is a mode byte and the bytes of a region file:
 *
 *   mode & 3 == 0: a data region      mode & 3 == 1: a job layout
 *   mode & 3 == 2: a tier, then a 4-byte little-endian length n of its
 *                  index region, the index region, its entries region
 *   mode & 4:      make the header(s) look right first (magic, version,
 *                  format id, name, owner, sizes, checksums), so that the
 *                  fuzzer spends its time behind the header too
 *
 * The image is checked in memory (kvshm_header_check; the data control
 * block with kvshm_data_read_control and, when it passes, every slot
 * counted), then written as a real file in a private directory and
 * opened the way its readers open it: a data region as libmpikvs
 * attaches (read the control block, lay out an unformatted one, read it
 * again), a layout with kvshm_job_layout_open, a tier by a reader and
 * then by a writer, whose repair drops the entries that fail their
 * checksum.  Whatever the bytes: no crash, no read outside the file, no
 * leak, no wait of seconds, and a control block the check accepts has
 * its counters and buckets inside the file.  region_seeds.c makes the
 * seed corpus from regions the library itself creates.
 */
#define _GNU_SOURCE   /* nftw */
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "data_region.h"
#include "format.h"
#include "job_layout.h"
#include "region.h"
#include "scan.h"
#include "tier.h"

#define JOB  "fz"
#define NODE "n1"
#define MAX_IMAGE (UINT64_C(1) << 20)   /* larger inputs are cut */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(void)
{
    if (dir[0])
        nftw(dir, rm_entry, 4, FTW_DEPTH | FTW_PHYS);
}

/* Outside /dev/shm: a crash mid-run leaves its files in /tmp. */
static const char *private_dir(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/fuzz-region.XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    return dir;
}

/* The body checksum of a job layout (job_layout.c): XXH3-64 of the body
 * after the checksum word. */
static void fix_layout_body(unsigned char *img, size_t len)
{
    struct kvshm_layout_control *c =
        (struct kvshm_layout_control *)(img + KVSHM_HEADER_SIZE);

    if (len < KVSHM_HEADER_SIZE + sizeof(*c) || c->body_size < 8 ||
        c->body_size > len - KVSHM_HEADER_SIZE)
        return;
    c->body_checksum = XXH3_64bits(img + KVSHM_HEADER_SIZE + 8,
                                   c->body_size - 8);
}

static void fix_header(unsigned char *img, size_t len, uint32_t kind,
                       const char *tag)
{
    struct kvshm_header *h = (struct kvshm_header *)img;

    if (len < KVSHM_HEADER_SIZE)
        return;
    memcpy(h->magic, KVSHM_MAGIC, sizeof(h->magic));
    h->format_version = KVSHM_FORMAT_VERSION;
    h->kind = kind;
    h->format_id = kvshm_format_id();
    h->header_size = KVSHM_HEADER_SIZE;
    h->flags &= KVSHM_FLAG_GROWABLE;
    h->size = len;
    /* growable: a little room, never a mapping of terabytes */
    h->max_size = h->flags ? len + h->max_size % (UINT64_C(1) << 20) : len;
    h->uid = (uint32_t)geteuid();
    snprintf(h->job, sizeof(h->job), "%s", JOB);
    snprintf(h->node, sizeof(h->node), "%s", NODE);
    snprintf(h->tag, sizeof(h->tag), "%s", tag);
    h->checksum = kvshm_header_checksum(h);
}

static void write_file(const char *tag, const unsigned char *img,
                       size_t len)
{
    char path[256];
    int fd;

    snprintf(path, sizeof(path), "%s/mpikvs.%s.%s.%s", private_dir(), JOB,
             NODE, tag);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (len && write(fd, img, len) != (ssize_t)len))
        abort();
    close(fd);
}

static void unlink_file(const char *tag)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/mpikvs.%s.%s.%s", dir, JOB, NODE, tag);
    unlink(path);
}

/* What the one check promises its callers: counters and buckets inside
 * the region, computed without wrapping. */
static void check_promises(const struct kvshm_data_control *c, uint64_t size)
{
    uint64_t stats, buckets;

    if (c->stats_offset != KVSHM_DATA_STATS_OFFSET ||
        __builtin_mul_overflow(c->max_ranks,
                               (uint64_t)sizeof(struct kvshm_rank_stats),
                               &stats) ||
        __builtin_add_overflow(stats, c->stats_offset, &stats) ||
        stats > c->buckets_offset || c->buckets_offset > size)
        abort();
    if (c->state != KVSHM_DATA_READY)
        return;
    if (__builtin_mul_overflow(c->nbuckets, c->bucket_size, &buckets) ||
        __builtin_add_overflow(buckets, c->buckets_offset, &buckets) ||
        buckets > size || c->nbuckets == 0 ||
        c->bucket_size != kvshm_bucket_size(&(struct kvshm_data_shape){
                              c->key_size, c->value_size,
                              c->slots_per_bucket, c->mode}))
        abort();
}

static void in_memory(const unsigned char *img, size_t len)
{
    struct kvshm_open_opts any = {.kind = 0, .expect_uid = KVSHM_ANY_UID};
    struct kvshm_data_control c;
    struct kvshm_occupancy occ;
    mpikvs_error_t err;

    if (len >= KVSHM_HEADER_SIZE)
        kvshm_header_check((const struct kvshm_header *)img, len, geteuid(),
                           NULL, &any, &err);
    if (kvshm_data_read_control(img, len, "fuzz", &c, &err) != MPIKVS_OK)
        return;
    check_promises(&c, len);
    if (c.state == KVSHM_DATA_READY &&
        kvshm_data_occupancy(img, &c, &occ) == MPIKVS_OK &&
        occ.used + occ.invalid + occ.unverified + occ.free != occ.slots)
        abort();
}

/* As libmpikvs attaches (libmpikvs/open.c, attach_region). */
static void open_data(void)
{
    static const struct kvshm_data_shape shape = {8, 32, 1, 0};
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA, .writable = true,
                                 .expect_uid = geteuid()};
    struct kvshm_region *r = NULL;
    struct kvshm_data_control c;
    mpikvs_error_t err;
    char name[128];

    snprintf(name, sizeof(name), "mpikvs.%s.%s.data", JOB, NODE);
    if (kvshm_region_open(dir, name, &oo, &r, &err) != MPIKVS_OK)
        return;
    if (kvshm_data_read_control(r->base, r->size, name, &c, &err) ==
        MPIKVS_OK) {
        check_promises(&c, r->size);
        /* FORMATTING would make kvshm_data_format wait for seconds */
        if (c.state == KVSHM_DATA_UNFORMATTED &&
            kvshm_data_format((struct kvshm_data_control *)(
                                  (char *)r->base +
                                  KVSHM_DATA_CONTROL_OFFSET),
                              r->size, &shape, name, &err) == MPIKVS_OK) {
            /* laid out by the check's own rules: it must pass now */
            if (kvshm_data_read_control(r->base, r->size, name, &c, &err) !=
                MPIKVS_OK)
                abort();
            check_promises(&c, r->size);
        }
    }
    kvshm_region_close(&r);
}

static void open_layout(void)
{
    struct kvshm_job_layout *l = NULL;
    mpikvs_error_t err;
    char path[256];

    snprintf(path, sizeof(path), "%s/mpikvs.%s.%s.layout", dir, JOB, NODE);
    if (kvshm_job_layout_open(path, &l, &err) != MPIKVS_OK)
        return;
    for (size_t i = 0; i < l->ntables; i++)
        if (!memchr(l->tables[i].name, '\0', sizeof(l->tables[i].name)) ||
            !memchr(l->tables[i].data_tag, '\0',
                    sizeof(l->tables[i].data_tag)))
            abort();
    kvshm_job_layout_free(l);
}

/* The keys region_seeds.c puts, so that gets find something. */
static void use_tier(struct kvshm_tier *t, bool writer)
{
    static const char *const keys[] = {"alpha", "beta", "gamma", "delta"};
    struct kvshm_tier_stats st;
    mpikvs_error_t err;
    char value[64];
    size_t len;

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const void *ref;
        uint64_t gen;
        kvshm_tier_get(t, keys[i], strlen(keys[i]), value, sizeof(value),
                       &len);
        if (kvshm_tier_get_ref(t, keys[i], strlen(keys[i]), &ref, &len,
                               &gen) == MPIKVS_OK &&
            len)
            memcpy(value, ref, len < sizeof(value) ? len : sizeof(value));
    }
    kvshm_tier_stats(t, &st);
    if (writer) {
        kvshm_tier_put(t, "epsilon", 7, "5", 1, &err);
        kvshm_tier_put(t, keys[0], strlen(keys[0]), "updated", 7, &err);
        kvshm_tier_get(t, "epsilon", 7, value, sizeof(value), &len);
    }
}

static void open_tier(void)
{
    struct kvshm_tier_reader_opts o = {.stall_ms = 1,
                                       .expect_uid = geteuid()};
    struct kvshm_tier *t = NULL;
    mpikvs_error_t err;

    if (kvshm_tier_open(dir, JOB, NODE, "t", &o, &t, &err) == MPIKVS_OK) {
        use_tier(t, false);
        kvshm_tier_close(&t);
    }
    if (kvshm_tier_open_writer(dir, JOB, NODE, "t", &o, &t, &err) ==
        MPIKVS_OK) {
        use_tier(t, true);
        kvshm_tier_close(&t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned mode;
    size_t len, n;
    unsigned char *img;

    if (size < 1)
        return 0;
    mode = data[0];
    len = size - 1 < MAX_IMAGE ? size - 1 : MAX_IMAGE;
    /* a copy: the checks may rely on the control block's alignment */
    img = malloc(len ? len : 1);
    if (!img)
        abort();
    memcpy(img, data + 1, len);
    private_dir();

    switch (mode & 3) {
    case 0:
        if (mode & 4)
            fix_header(img, len, KVSHM_KIND_DATA, "data");
        in_memory(img, len);
        write_file("data", img, len);
        open_data();
        unlink_file("data");
        break;
    case 1:
        if (mode & 4) {
            fix_layout_body(img, len);
            fix_header(img, len, KVSHM_KIND_LAYOUT, "layout");
        }
        in_memory(img, len);
        write_file("layout", img, len);
        open_layout();
        unlink_file("layout");
        break;
    case 2: {
        unsigned char *entries;
        if (len < 4)
            break;
        n = (size_t)img[0] | (size_t)img[1] << 8 | (size_t)img[2] << 16 |
            (size_t)img[3] << 24;
        n = n < len - 4 ? n : len - 4;
        /* each part in its own buffer, aligned as a mapping is */
        memmove(img, img + 4, len - 4);
        len -= 4;
        entries = malloc(len - n ? len - n : 1);
        if (!entries)
            abort();
        memcpy(entries, img + n, len - n);
        if (mode & 4) {
            fix_header(img, n, KVSHM_KIND_TIER_INDEX, "t-index");
            fix_header(entries, len - n, KVSHM_KIND_TIER_ENTRIES,
                       "t-entries");
        }
        in_memory(img, n);
        write_file("t-index", img, n);
        write_file("t-entries", entries, len - n);
        free(entries);
        open_tier();
        unlink_file("t-index");
        unlink_file("t-entries");
        break;
    }
    default:
        in_memory(img, len);
        break;
    }
    free(img);
    return 0;
}
