/*
 * test_corrupt.c - libmpikvs refuses a data region whose control block is
 * damaged, with MPIKVS_ERR_CORRUPT and a message that names the field,
 * instead of storing wherever the damaged offsets point.
 *
 *   test_corrupt DIR     (MPI, np 1; run-corrupt-test.sh)
 *
 * The program makes a job-scope table "kvs" as the SPANK plugin makes it
 * (a job layout and a data region in DIR; MPIKVS_LAYOUT names the
 * layout), then, one field at a time, makes the data region anew,
 * damages that field of its control block and calls mpikvs_open.  The
 * region as made opens, stores and finds; every damaged one is refused.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "data_region.h"
#include "job_layout.h"
#include "mpikvs.h"
#include "mpitest.h"
#include "region.h"

#define JOB  "corrupttest"
#define NODE "n1"
#define DATA (UINT64_C(1) << 20)

/* 8-byte keys, 32-byte values, 1 slot: 64-byte buckets, so that 2^58
 * buckets are 2^64 bytes, which wraps to 0. */
static const struct kvshm_data_shape shape = {8, 32, 1, 0};

static const char *dir;
static struct kvshm_job_table table;

static int fill(void *base, uint64_t size, void *arg, mpikvs_error_t *err)
{
    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, 4, arg, "kvs", err);
}

static void make_layout(void)
{
    struct kvshm_job_layout l = {
        .scope = KVSHM_SCOPE_JOB, .step = 0, .nnodes = 1, .node_index = 0,
        .tasks_on_node = 1, .dht_size = DATA, .ntables = 1, .tables = &table,
        .nodelist = (char *)NODE, .config_text = NULL,
    };
    struct kvshm_region_spec s = {
        .dir = dir, .job = JOB, .node = NODE, .tag = "layout",
        .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .step = 0,
    };
    mpikvs_error_t err;

    if (kvshm_job_table_tags(KVSHM_SCOPE_JOB, 0, "kvs", &table, &err) !=
        MPIKVS_OK)
        mt_abort(err.text);
    table.data_bytes = DATA;
    table.tier_bytes = 0;
    table.tier_prefix[0] = '\0';
    snprintf(l.job, sizeof(l.job), JOB);
    snprintf(l.node, sizeof(l.node), NODE);
    l.request_hash = kvshm_job_request_hash(l.dht_size, NULL);
    if (kvshm_job_layout_create(&s, &l, &err) != MPIKVS_OK)
        mt_abort(err.text);
}

/* The data region anew; damage(c) changes its control block. */
static void make_data(bool formatted,
                      void (*damage)(struct kvshm_data_control *, uint64_t),
                      uint64_t value)
{
    struct kvshm_region_spec s = {
        .dir = dir, .job = JOB, .node = NODE, .tag = table.data_tag,
        .kind = KVSHM_KIND_DATA, .size = DATA, .uid = KVSHM_ANY_UID,
        .gid = (gid_t)-1, .step = 0, .fill = fill,
        .fill_arg = formatted ? (void *)&shape : NULL,
    };
    struct kvshm_region *r = NULL;
    mpikvs_error_t err;
    char name[KVSHM_NAME_MAX];

    if (kvshm_region_name(name, sizeof(name), JOB, NODE, table.data_tag,
                          &err) != MPIKVS_OK)
        mt_abort(err.text);
    kvshm_region_unlink(dir, name);
    if (kvshm_region_create(&s, &r, &err) != MPIKVS_OK)
        mt_abort(err.text);
    if (damage)
        damage((struct kvshm_data_control *)((char *)r->base +
                                             KVSHM_DATA_CONTROL_OFFSET),
               value);
    kvshm_region_close(&r);
}

static int open_table(mpikvs_t **kvs)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = shape.key_size,
                          .value_size = shape.value_size,
                          .slots_per_bucket = 1};
    return mpikvs_open(MPI_COMM_WORLD, &o, kvs);
}

#define DAMAGE(field)                                                    \
    static void damage_##field(struct kvshm_data_control *c, uint64_t v) \
    {                                                                    \
        c->field = v;                                                    \
    }
DAMAGE(key_size)
DAMAGE(value_size)
DAMAGE(slot_size)
DAMAGE(bucket_size)
DAMAGE(nbuckets)
DAMAGE(buckets_offset)
DAMAGE(stats_offset)
DAMAGE(max_ranks)

static const struct {
    const char *field;
    void (*damage)(struct kvshm_data_control *, uint64_t);
    uint64_t value;
    bool formatted;
    const char *why;
} cases[] = {
    {"nbuckets", damage_nbuckets, UINT64_C(1) << 57, true,
     "2^57 buckets of 128 bytes wrap to 0 bytes"},
    {"nbuckets", damage_nbuckets, (UINT64_C(1) << 57) + 1, true,
     "wraps to 128 bytes"},
    {"nbuckets", damage_nbuckets, DATA / 128, true, "past the end"},
    {"buckets_offset", damage_buckets_offset, UINT64_MAX - 4095, true,
     "offset plus the buckets wraps"},
    {"buckets_offset", damage_buckets_offset, 0, true,
     "buckets over header and counters"},
    {"buckets_offset", damage_buckets_offset, 0, false,
     "the first open would lay the buckets out over the header"},
    {"stats_offset", damage_stats_offset, UINT64_C(1) << 62, true,
     "counters far outside the mapping"},
    {"stats_offset", damage_stats_offset, 0, false,
     "counters over the header"},
    {"max_ranks", damage_max_ranks, UINT64_C(1) << 58, true,
     "ranks * 320 bytes wrap to 0"},
    {"slot_size", damage_slot_size, 8, true, "not the shape's"},
    {"bucket_size", damage_bucket_size, 192, true, "not the shape's"},
    {"key_size", damage_key_size, UINT64_C(1) << 63, true,
     "the slot size wraps"},
    {"value_size", damage_value_size, UINT64_MAX - 7, true,
     "key + value wraps"},
};

int main(int argc, char **argv)
{
    mpikvs_t *kvs = NULL;
    char layout[4096];
    int rc, size;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2 || size != 1)
        mt_abort("usage: mpirun -np 1 test_corrupt DIR");
    dir = argv[1];
    mt_phase("setup");
    make_layout();
    snprintf(layout, sizeof(layout), "%s/mpikvs.%s.%s.layout", dir, JOB,
             NODE);
    setenv("MPIKVS_LAYOUT", layout, 1);

    mt_phase("the region as made");
    make_data(true, NULL, 0);
    rc = open_table(&kvs);
    EXPECT(rc == MPIKVS_OK, "open of the undamaged region: %d, %s", rc,
           mpikvs_last_error(NULL));
    if (rc == MPIKVS_OK) {
        char key[8] = "key0001", value[32] = "value", got[32] = "";
        EXPECT(mpikvs_put(kvs, key, value) == MPIKVS_OK, "put");
        EXPECT(mpikvs_get(kvs, key, got) == MPIKVS_OK &&
                   memcmp(got, value, sizeof(value)) == 0,
               "get of what was put");
        EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
    }

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[128];
        const char *text;

        mt_phase(cases[i].why);
        make_data(cases[i].formatted, cases[i].damage, cases[i].value);
        kvs = NULL;
        rc = open_table(&kvs);
        text = mpikvs_last_error(NULL);
        snprintf(want, sizeof(want),
                 "has a corrupt control block: %s %" PRIu64
                 " is impossible",
                 cases[i].field, cases[i].value);
        EXPECT(rc == MPIKVS_ERR_CORRUPT && kvs == NULL,
               "%s %" PRIu64 " (%s, %s region): open returned %d (%s), "
               "want MPIKVS_ERR_CORRUPT",
               cases[i].field, cases[i].value, cases[i].why,
               cases[i].formatted ? "a laid-out" : "an unformatted", rc,
               text ? text : "");
        EXPECT(rc == MPIKVS_OK || (text && strstr(text, want)),
               "%s %" PRIu64 ": message \"%s\", want \"...%s\"",
               cases[i].field, cases[i].value, text ? text : "", want);
        if (rc == MPIKVS_OK)
            mpikvs_close(&kvs);   /* do not store through it */
    }
    rc = mt_finish();
    MPI_Finalize();
    return rc;
}
