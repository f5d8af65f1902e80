/*
 * check_scan.c - Check tests of shm/scan.c: reading a data region from
 * outside its job.  Slots are written here the way libmpikvs writes them
 * (libmpikvs/slot.c: meta, key and value, then the checksum with release);
 * the MPI tests of mpikvs-stat check the same against the library itself.
 */
#define _GNU_SOURCE /* nftw in shm_check.h */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "../shm_check.h"
#include "data_region.h"
#include "region.h"
#include "scan.h"
#include "slot_read.h"

#define KEY   16u
#define VALUE 32u

static const struct kvshm_data_shape shape = {KEY, VALUE, 4, 0};

struct made {
    struct kvshm_region       *writer;   /* mapped read-write */
    struct kvshm_region       *reader;   /* PROT_READ, as mpikvs-stat */
    struct kvshm_data_control *control;  /* in the writer's mapping */
};

static int fill(void *base, uint64_t size, void *arg, mpikvs_error_t *err)
{
    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, 4, arg, "t", err);
}

static void make(struct made *m, const struct kvshm_data_shape *s,
                 uint64_t size)
{
    struct kvshm_region_spec spec = {
        .dir = test_dir, .job = "j1", .node = "n1", .tag = "t-data",
        .kind = KVSHM_KIND_DATA, .size = size, .uid = KVSHM_ANY_UID,
        .gid = (gid_t)-1, .step = KVSHM_NO_STEP, .fill = fill,
        .fill_arg = (void *)s,
    };
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA,
                                 .expect_uid = KVSHM_ANY_UID};
    mpikvs_error_t err;

    assert_rc(kvshm_region_create(&spec, &m->writer, &err), MPIKVS_OK, &err,
              "create");
    assert_rc(kvshm_region_open(test_dir, "mpikvs.j1.n1.t-data", &oo,
                                &m->reader, &err),
              MPIKVS_OK, &err, "open read-only");
    m->control = (struct kvshm_data_control *)((char *)m->writer->base +
                                               KVSHM_DATA_CONTROL_OFFSET);
}

static void unmake(struct made *m)
{
    kvshm_region_close(&m->reader);
    kvshm_region_close(&m->writer);
}

static unsigned char *bucket_at(const struct made *m, uint64_t bucket)
{
    const struct kvshm_data_control *c = m->control;
    return (unsigned char *)m->writer->base + c->buckets_offset +
           bucket * c->bucket_size;
}

static unsigned char *slot_at(const struct made *m, uint64_t bucket,
                              uint64_t i)
{
    const struct kvshm_data_control *c = m->control;
    return bucket_at(m, bucket) +
           kvshm_bucket_slot_offset(c->slots_per_bucket, c->slot_size, i);
}

static uint64_t *meta_at(const struct made *m, uint64_t bucket, uint64_t i)
{
    return (uint64_t *)(bucket_at(m, bucket) + kvshm_bucket_meta_offset(i));
}

/* A slot as libmpikvs writes it, in the region's generation; a wrong
 * checksum if damaged. */
static void write_slot(const struct made *m, uint64_t bucket, uint64_t i,
                       uint32_t n, bool damaged)
{
    unsigned char *slot = slot_at(m, bucket, i), kv[KEY + VALUE];
    XXH128_hash_t h;
    uint64_t meta, sum;

    for (unsigned b = 0; b < sizeof(kv); b++)
        kv[b] = (unsigned char)(n * 7u + b);
    h = kvshm_key_hash(kv, KEY);
    meta = KVSHM_SLOT_OCCUPIED |
           ((uint64_t)kvshm_key_tag(h, m->control->generation)
            << KVSHM_SLOT_TAG_SHIFT) |
           ((uint64_t)(n + 1) << KVSHM_SLOT_STAMP_SHIFT);
    sum = kvshm_slot_checksum(kv + KEY, VALUE,
                              kvshm_slot_checksum_seed(h.low64));
    __atomic_store_n(meta_at(m, bucket, i), meta, __ATOMIC_RELAXED);
    memcpy(slot + KVSHM_SLOT_KV_OFFSET, kv, sizeof(kv));
    __atomic_store_n((uint64_t *)(slot + kvshm_slot_checksum_offset(
                                             m->control->slot_size)),
                     damaged ? sum ^ 1 : sum, __ATOMIC_RELEASE);
}

static void read_control(const struct made *m, struct kvshm_data_control *c,
                         int want, const char *needle)
{
    mpikvs_error_t err = {0, ""};
    int rc = kvshm_data_read_control(m->reader->base, m->reader->size,
                                     "mpikvs.j1.n1.t-data", c, &err);

    assert_rc(rc, want, &err, "read control (%s)", needle ? needle : "");
    if (needle)
        ck_assert_msg(strstr(err.text, needle), "'%s' not in \"%s\"",
                      needle, err.text);
}

START_TEST(control_of_a_ready_region)
{
    struct kvshm_data_control c;
    struct made m;

    make(&m, &shape, 1u << 20);
    read_control(&m, &c, MPIKVS_OK, NULL);
    ck_assert_uint_eq(c.state, KVSHM_DATA_READY);
    ck_assert_uint_eq(c.key_size, KEY);
    ck_assert_uint_eq(c.value_size, VALUE);
    ck_assert_uint_eq(c.slots_per_bucket, 4);
    ck_assert_uint_eq(c.max_ranks, 4);
    ck_assert_uint_gt(c.nbuckets, 1000);
    ck_assert_str_eq(c.table, "t");
    unmake(&m);
}
END_TEST

START_TEST(a_region_not_laid_out_has_counters_only)
{
    struct kvshm_data_control c;
    struct kvshm_occupancy o;
    struct made m;

    make(&m, NULL, 1u << 20);
    read_control(&m, &c, MPIKVS_OK, NULL);
    ck_assert_uint_eq(c.state, KVSHM_DATA_UNFORMATTED);
    ck_assert_uint_eq(c.max_ranks, 4);
    ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                     MPIKVS_ERR_INVAL);
    ck_assert_uint_eq(o.slots, 0);
    unmake(&m);
}
END_TEST

/* Each damaged field is refused, naming the field. */
START_TEST(a_damaged_control_block_is_refused)
{
    static const struct {
        const char *field;
        size_t      offset;
        uint64_t    value;
        int         width;
    } cases[] = {
        {"key_size", offsetof(struct kvshm_data_control, key_size), 0, 8},
        {"value_size", offsetof(struct kvshm_data_control, value_size),
         KVSHM_VALUE_SIZE_MAX + 1, 8},
        {"slots_per_bucket",
         offsetof(struct kvshm_data_control, slots_per_bucket), 65, 8},
        {"slot_size", offsetof(struct kvshm_data_control, slot_size), 72, 8},
        {"bucket_size", offsetof(struct kvshm_data_control, bucket_size),
         8, 8},
        {"nbuckets", offsetof(struct kvshm_data_control, nbuckets),
         UINT64_MAX / 2, 8},
        {"nbuckets", offsetof(struct kvshm_data_control, nbuckets), 0, 8},
        {"buckets_offset",
         offsetof(struct kvshm_data_control, buckets_offset), 512, 8},
        {"stats_offset", offsetof(struct kvshm_data_control, stats_offset),
         0, 8},
        {"max_ranks", offsetof(struct kvshm_data_control, max_ranks), 0, 8},
        {"max_ranks", offsetof(struct kvshm_data_control, max_ranks),
         UINT64_MAX, 8},
        {"mode", offsetof(struct kvshm_data_control, mode), 3, 4},
        {"state", offsetof(struct kvshm_data_control, state), 7, 4},
    };
    struct kvshm_data_control c, saved;
    struct made m;

    make(&m, &shape, 1u << 20);
    saved = *m.control;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *field = (char *)m.control + cases[i].offset;
        if (cases[i].width == 8)
            memcpy(field, &cases[i].value, 8);
        else {
            uint32_t v = (uint32_t)cases[i].value;
            memcpy(field, &v, 4);
        }
        read_control(&m, &c, MPIKVS_ERR_CORRUPT, cases[i].field);
        *m.control = saved;
    }
    memset(m.control->table, 'x', sizeof(m.control->table));
    read_control(&m, &c, MPIKVS_ERR_CORRUPT, "table name");
    unmake(&m);
}
END_TEST

START_TEST(slots_are_counted_by_what_a_reader_finds)
{
    struct kvshm_data_control c;
    struct kvshm_occupancy o;
    struct made m;
    unsigned char *slot;

    make(&m, &shape, 1u << 20);
    /* bucket 0 full of good slots; bucket 1: a good, an invalid and a
     * damaged one; bucket 7: one good one */
    for (uint32_t i = 0; i < 4; i++)
        write_slot(&m, 0, i, i, false);
    write_slot(&m, 1, 0, 10, false);
    write_slot(&m, 1, 1, 11, false);
    *meta_at(&m, 1, 1) |= KVSHM_SLOT_INVALID;
    write_slot(&m, 1, 2, 12, true);
    write_slot(&m, 7, 3, 13, false);
    read_control(&m, &c, MPIKVS_OK, NULL);
    ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                     MPIKVS_OK);
    ck_assert_uint_eq(o.buckets, c.nbuckets);
    ck_assert_uint_eq(o.slots, 4 * c.nbuckets);
    ck_assert_uint_eq(o.used, 6);
    ck_assert_uint_eq(o.invalid, 1);
    ck_assert_uint_eq(o.unverified, 1);
    ck_assert_uint_eq(o.free, o.slots - 8);
    ck_assert_uint_eq(o.full_buckets, 1);
    /* a torn copy: the key changed after its checksum was written */
    slot = slot_at(&m, 7, 3);
    slot[8] ^= 0xff;
    ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                     MPIKVS_OK);
    ck_assert_uint_eq(o.used, 5);
    ck_assert_uint_eq(o.unverified, 2);
    unmake(&m);
}
END_TEST

/* mpikvs_clear: slots of an earlier generation are free. */
START_TEST(slots_of_before_a_clear_are_free)
{
    struct kvshm_data_control c;
    struct kvshm_occupancy o;
    struct made m;

    make(&m, &shape, 1u << 20);
    for (uint32_t i = 0; i < 4; i++)
        write_slot(&m, 0, i, i, false);
    write_slot(&m, 1, 0, 10, false);
    m.control->generation = 1;   /* a clear */
    write_slot(&m, 1, 1, 11, false);
    read_control(&m, &c, MPIKVS_OK, NULL);
    ck_assert_uint_eq(c.generation, 1);
    ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                     MPIKVS_OK);
    ck_assert_uint_eq(o.used, 1);
    ck_assert_uint_eq(o.unverified, 0);
    ck_assert_uint_eq(o.free, o.slots - 1);
    ck_assert_uint_eq(o.full_buckets, 0);
    /* the slots of generation 1, after another clear */
    m.control->generation = 2;
    write_slot(&m, 0, 0, 12, false);
    read_control(&m, &c, MPIKVS_OK, NULL);
    ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                     MPIKVS_OK);
    ck_assert_uint_eq(o.used, 1);
    ck_assert_uint_eq(o.free, o.slots - 1);
    unmake(&m);
}
END_TEST

/* ---- a writer at work while the buckets are scanned ---- */

struct writer {
    const struct made *m;
    uint64_t           buckets;
    atomic_bool        stop;
    _Atomic uint64_t   writes;   /* rounds, read by the scanning thread */
};

static void *write_forever(void *arg)
{
    struct writer *w = arg;
    uint32_t n = 0;

    while (!atomic_load(&w->stop)) {
        for (uint64_t b = 0; b < w->buckets; b++)
            for (uint64_t i = 0; i < 4; i++)
                write_slot(w->m, b, i, n++, false);
        w->writes++;
    }
    return NULL;
}

static double elapsed(const struct timespec *from, const struct timespec *to)
{
    return (double)(to->tv_sec - from->tv_sec) +
           1e-9 * (double)(to->tv_nsec - from->tv_nsec);
}

START_TEST(a_scan_tolerates_a_writer)
{
    struct writer w = {.buckets = 64};
    struct kvshm_data_control c;
    struct kvshm_occupancy o;
    struct timespec start, now;
    unsigned scans = 0;
    pthread_t t;
    struct made m;

    make(&m, &shape, 256u << 10);
    w.m = &m;
    atomic_init(&w.stop, false);
    read_control(&m, &c, MPIKVS_OK, NULL);
    ck_assert_int_eq(pthread_create(&t, NULL, write_forever, &w), 0);
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                         MPIKVS_OK);
        /* every slot is counted once, and only slots the writer touches
         * are ever anything but free */
        ck_assert_uint_eq(o.used + o.invalid + o.unverified + o.free,
                          o.slots);
        ck_assert_uint_le(o.used + o.unverified, 4 * w.buckets);
        ck_assert_uint_eq(o.invalid, 0);
        scans++;
        clock_gettime(CLOCK_MONOTONIC, &now);
        /* a full second, and on a slow machine until both sides have
         * had their turns (at most 30 s) */
    } while (elapsed(&start, &now) < 1.0 ||
             ((scans <= 10 || w.writes <= 10) &&
              elapsed(&start, &now) < 30.0));
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    /* the writer is done: every slot it wrote verifies */
    ck_assert_int_eq(kvshm_data_occupancy(m.reader->base, &c, &o),
                     MPIKVS_OK);
    ck_assert_uint_eq(o.used, 4 * w.buckets);
    ck_assert_uint_eq(o.unverified, 0);
    ck_assert_uint_eq(o.full_buckets, w.buckets);
    ck_assert_msg(scans > 10 && w.writes > 10,
                  "too little overlap: %u scans, %llu rounds of writes",
                  scans, (unsigned long long)w.writes);
    unmake(&m);
}
END_TEST

static Suite *scan_suite(void)
{
    Suite *s = suite_create("scan");
    TCase *tc = tcase_create("data region");

    tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
    tcase_add_test(tc, control_of_a_ready_region);
    tcase_add_test(tc, a_region_not_laid_out_has_counters_only);
    tcase_add_test(tc, a_damaged_control_block_is_refused);
    tcase_add_test(tc, slots_are_counted_by_what_a_reader_finds);
    tcase_add_test(tc, slots_of_before_a_clear_are_free);
    tcase_add_test(tc, a_scan_tolerates_a_writer);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    snprintf(run_dir, sizeof run_dir, "/dev/shm/kvscan.XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", run_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    sr = srunner_create(scan_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(run_dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
