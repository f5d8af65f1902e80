/*
 * region_seeds.c - the seed corpus of fuzz_region.c, made by the library
 * itself so that it always has this build's format: a data region laid
 * out (one slot written as libmpikvs writes it) and one not laid out, a
 * job layout, and a tier with a few entries, also as a dead writer
 * leaves it in mid-publication (odd sequence).  Each seed is written
 * twice, as is and with the mode bit that has the target fix the headers.
 *
 *   region_seeds OUTDIR
 */
#define _GNU_SOURCE   /* nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "data_region.h"
#include "format.h"
#include "job_layout.h"
#include "region.h"
#include "slot_read.h"
#include "tier.h"

#define JOB  "fz"
#define NODE "n1"

static char work[64];
static const char *outdir;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "region_seeds: %s: %s\n", what, why);
    exit(1);
}

static unsigned char *slurp(const char *tag, size_t *len)
{
    char path[256];
    struct stat st;
    unsigned char *buf;
    FILE *f;

    snprintf(path, sizeof(path), "%s/mpikvs.%s.%s.%s", work, JOB, NODE, tag);
    if (stat(path, &st) != 0 || !(f = fopen(path, "rb")))
        die(path, strerror(errno));
    buf = malloc((size_t)st.st_size + 1);
    if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        die(path, "cannot read");
    fclose(f);
    *len = (size_t)st.st_size;
    return buf;
}

/* OUTDIR/name and OUTDIR/name-fixed: mode byte, then the parts. */
static void seed(const char *name, unsigned mode, const unsigned char *a,
                 size_t alen, const unsigned char *b, size_t blen)
{
    for (unsigned fixed = 0; fixed < 2; fixed++) {
        char path[512];
        unsigned char m = (unsigned char)(mode | (fixed ? 4u : 0u));
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s%s", outdir, name,
                 fixed ? "-fixed" : "");
        if (!(f = fopen(path, "wb")))
            die(path, strerror(errno));
        fwrite(&m, 1, 1, f);
        if (b) {
            unsigned char n[4] = {(unsigned char)alen,
                                  (unsigned char)(alen >> 8),
                                  (unsigned char)(alen >> 16),
                                  (unsigned char)(alen >> 24)};
            fwrite(n, 1, 4, f);
        }
        fwrite(a, 1, alen, f);
        if (b)
            fwrite(b, 1, blen, f);
        if (fclose(f) != 0)
            die(path, strerror(errno));
    }
}

static const struct kvshm_data_shape shape = {8, 32, 1, 0};

static int fill_data(void *base, uint64_t size, void *arg,
                     mpikvs_error_t *err)
{
    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, 2, arg, "t", err);
}

static void data_seeds(void)
{
    struct kvshm_region_spec s = {
        .dir = work, .job = JOB, .node = NODE, .kind = KVSHM_KIND_DATA,
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .step = KVSHM_NO_STEP,
        .fill = fill_data,
    };
    struct kvshm_region *r = NULL;
    mpikvs_error_t err;
    unsigned char *img;
    size_t len;

    s.size = kvshm_data_buckets_offset(2) + 4 * kvshm_bucket_size(&shape);
    s.tag = "ready";
    s.fill_arg = (void *)&shape;
    if (kvshm_region_create(&s, &r, &err) != MPIKVS_OK)
        die("data region", err.text);
    {
        /* one slot of bucket 1 as libmpikvs writes it (libmpikvs/slot.c) */
        const uint64_t slot_size = kvshm_slot_size(&shape);
        unsigned char *bucket = (unsigned char *)r->base +
                                kvshm_data_buckets_offset(2) +
                                kvshm_bucket_size(&shape);
        unsigned char *slot =
            bucket + kvshm_bucket_slot_offset(1, slot_size, 0);
        unsigned char *kv = slot + KVSHM_SLOT_KV_OFFSET;
        XXH128_hash_t h;
        uint64_t meta, sum;
        memcpy(kv, "key00001value of thirty-two bytes, padded", 40);
        h = kvshm_key_hash(kv, 8);
        meta = KVSHM_SLOT_OCCUPIED |
               ((uint64_t)kvshm_key_tag(h, 0) << KVSHM_SLOT_TAG_SHIFT);
        memcpy(bucket + kvshm_bucket_meta_offset(0), &meta, sizeof(meta));
        sum = kvshm_slot_checksum(kv + 8, 32,
                                  kvshm_slot_checksum_seed(h.low64));
        memcpy(slot + kvshm_slot_checksum_offset(slot_size), &sum,
               sizeof(sum));
    }
    kvshm_region_close(&r);
    img = slurp("ready", &len);
    seed("data-ready", 0, img, len, NULL, 0);
    free(img);

    s.tag = "unformatted";
    s.fill_arg = NULL;
    s.size = kvshm_data_buckets_offset(2) + 4096;
    if (kvshm_region_create(&s, &r, &err) != MPIKVS_OK)
        die("data region", err.text);
    kvshm_region_close(&r);
    img = slurp("unformatted", &len);
    seed("data-unformatted", 0, img, len, NULL, 0);
    free(img);
}

static void layout_seed(void)
{
    struct kvshm_job_table table;
    struct kvshm_job_layout l = {
        .scope = KVSHM_SCOPE_JOB, .nnodes = 1, .tasks_on_node = 2,
        .dht_size = 1 << 20, .ntables = 1, .tables = &table,
        .nodelist = (char *)NODE,
        .config_text = (char *)"{\"version\":1,\"tables\":{\"t\":{"
                               "\"key\":{\"key_size\":8},"
                               "\"value\":{\"value_size\":32}}}}",
    };
    struct kvshm_region_spec s = {
        .dir = work, .job = JOB, .node = NODE, .tag = "layout",
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .step = 0,
    };
    mpikvs_error_t err;
    unsigned char *img;
    size_t len;

    if (kvshm_job_table_tags(KVSHM_SCOPE_JOB, 0, "t", &table, &err) !=
        MPIKVS_OK)
        die("table tags", err.text);
    table.data_bytes = 1 << 20;
    table.tier_bytes = 0;
    snprintf(l.job, sizeof(l.job), JOB);
    snprintf(l.node, sizeof(l.node), NODE);
    l.request_hash = kvshm_job_request_hash(l.dht_size, l.config_text);
    if (kvshm_job_layout_create(&s, &l, &err) != MPIKVS_OK)
        die("job layout", err.text);
    img = slurp("layout", &len);
    seed("layout", 1, img, len, NULL, 0);
    free(img);
}

static void tier_seeds(void)
{
    static const char *const keys[] = {"alpha", "beta", "gamma", "delta"};
    struct kvshm_tier_spec s = {
        .region = {.dir = work, .job = JOB, .node = NODE, .tag = "t",
                   .uid = KVSHM_ANY_UID, .gid = (gid_t)-1,
                   .step = KVSHM_NO_STEP},
        .max_bytes = 8192, .initial_bytes = 4096, .buckets = 8,
    };
    struct kvshm_tier *t = NULL;
    mpikvs_error_t err;
    unsigned char *index, *entries;
    size_t ilen, elen;

    if (kvshm_tier_create(&s, &t, &err) != MPIKVS_OK)
        die("tier", err.text);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (kvshm_tier_put(t, keys[i], strlen(keys[i]), "value", 5, &err) !=
            MPIKVS_OK)
            die("tier put", err.text);
    kvshm_tier_close(&t);
    index = slurp("t-index", &ilen);
    entries = slurp("t-entries", &elen);
    seed("tier", 2, index, ilen, entries, elen);
    /* as a writer killed in mid-publication leaves it */
    ((struct kvshm_tier_control *)(index + KVSHM_HEADER_SIZE))->seq |= 1;
    seed("tier-torn", 2, index, ilen, entries, elen);
    free(index);
    free(entries);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: region_seeds OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    snprintf(work, sizeof(work), "/tmp/region-seeds.XXXXXX");
    if (!mkdtemp(work))
        die("mkdtemp", strerror(errno));
    data_seeds();
    layout_seed();
    tier_seeds();
    nftw(work, rm_entry, 4, FTW_DEPTH | FTW_PHYS);
    return 0;
}
