/*
 * check_rmacache_index.c - the index of libmpikvs-rmacache without MPI
 * (rmacache/index.h): lookups, the memory budget, eviction when full,
 * clearing, range invalidation, and a long random run against a model;
 * the node tier's segments (rmacache/node.h): publish, read, gen,
 * withdraw, overwrite, and a reader racing the writer; the window's
 * region that holds them (shm/rma_region.h): its layout and the checks
 * of its control block.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "node.h"
#include "rma_region.h"

/* A window's region of nranks segments in memory (zero, as a new file
 * is), laid out; *c its checked control block. */
static void *new_region(uint64_t nranks, uint64_t ring, struct kvshm_rma_control *c,
                        uint64_t *size)
{
    struct kvshm_rma_layout l;
    mpikvs_error_t          err;
    void                   *base;

    ck_assert_int_eq(kvshm_rma_layout(nranks, ring, &l, &err), MPIKVS_OK);
    base = calloc(1, l.region_size);
    ck_assert_ptr_nonnull(base);
    kvshm_rma_init(base, &l, nranks, nranks + 1, ring);
    ck_assert_int_eq(kvshm_rma_read_control(base, l.region_size, "r", c, &err), MPIKVS_OK);
    if (size)
        *size = l.region_size;
    return base;
}

static void fill(unsigned char *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(seed * 2654435761u + i * 40503u);
}

static int holds(const struct rc_index *ix, int t, uint64_t d, size_t len, uint32_t seed)
{
    unsigned char  want[4096];
    const void    *got = rc_index_lookup(ix, t, d, len);

    fill(want, len, seed);
    return got && !memcmp(got, want, len);
}

START_TEST(test_insert_lookup)
{
    struct rc_index ix;
    unsigned char   b[100];

    ck_assert_int_eq(rc_index_init(&ix, 1 << 16, 4), 0);
    ck_assert_ptr_null(rc_index_lookup(&ix, 1, 0, 8));
    fill(b, 8, 1);
    ck_assert_int_eq(rc_index_insert(&ix, 1, 0, 8, b), 0);
    ck_assert(holds(&ix, 1, 0, 8, 1));
    /* the key is the whole triple */
    ck_assert_ptr_null(rc_index_lookup(&ix, 2, 0, 8));
    ck_assert_ptr_null(rc_index_lookup(&ix, 1, 8, 8));
    ck_assert_ptr_null(rc_index_lookup(&ix, 1, 0, 4));
    /* an insert of the same key replaces */
    fill(b, 8, 2);
    ck_assert_int_eq(rc_index_insert(&ix, 1, 0, 8, b), 0);
    ck_assert(holds(&ix, 1, 0, 8, 2));
    ck_assert_uint_eq(ix.entries, 1);
    /* out of range targets and sizes are refused */
    ck_assert_int_eq(rc_index_insert(&ix, 4, 0, 8, b), -1);
    ck_assert_int_eq(rc_index_insert(&ix, -1, 0, 8, b), -1);
    ck_assert_int_eq(rc_index_insert(&ix, 0, 0, rc_index_max_len(1 << 16) + 1, b), -1);
    rc_index_fini(&ix);
}
END_TEST

START_TEST(test_bad_budget)
{
    struct rc_index ix;

    ck_assert_int_eq(rc_index_init(&ix, 100, 1), -1);
    ck_assert_int_eq(rc_index_init(&ix, 1 << 16, 0), -1);
}
END_TEST

/* Far more data than the budget: the newest entries stay, the oldest
 * go, the ring never holds more than the budget. */
START_TEST(test_budget_evicts_oldest)
{
    struct rc_index ix;
    unsigned char   b[1000];
    const size_t    budget = 64 * 1024;

    ck_assert_int_eq(rc_index_init(&ix, budget, 2), 0);
    for (uint32_t i = 0; i < 2000; i++) {
        fill(b, sizeof b, i);
        ck_assert_int_eq(rc_index_insert(&ix, 0, (uint64_t)i * 1000, sizeof b, b), 0);
        ck_assert_uint_le(ix.head - ix.tail, budget);
    }
    ck_assert(holds(&ix, 0, 1999u * 1000, sizeof b, 1999));
    ck_assert(holds(&ix, 0, 1990u * 1000, sizeof b, 1990));
    ck_assert_ptr_null(rc_index_lookup(&ix, 0, 0, sizeof b));
    ck_assert_uint_gt(ix.evictions, 1900);
    ck_assert_uint_le(ix.entries * (sizeof b + 8), budget);
    rc_index_fini(&ix);
}
END_TEST

/* Many small entries fill the buckets: a full index still inserts and
 * finds the newest in one bucket's probe. */
START_TEST(test_full_buckets)
{
    struct rc_index ix;
    unsigned char   b[8];
    size_t          found = 0;

    ck_assert_int_eq(rc_index_init(&ix, 1 << 16, 1), 0);
    for (uint32_t i = 0; i < 100000; i++) {
        fill(b, 8, i);
        ck_assert_int_eq(rc_index_insert(&ix, 0, (uint64_t)i * 8, 8, b), 0);
        ck_assert(holds(&ix, 0, (uint64_t)i * 8, 8, i));
    }
    ck_assert_uint_le(ix.entries, ix.nbuckets * RC_WAYS);
    for (uint32_t i = 100000 - 100; i < 100000; i++)
        found += holds(&ix, 0, (uint64_t)i * 8, 8, i);
    /* the last hundred mostly survive: a bucket drops its oldest */
    ck_assert_uint_ge(found, 90);
    rc_index_fini(&ix);
}
END_TEST

START_TEST(test_clear)
{
    struct rc_index ix;
    unsigned char   b[64];

    ck_assert_int_eq(rc_index_init(&ix, 1 << 16, 2), 0);
    fill(b, 64, 7);
    rc_index_insert(&ix, 0, 0, 64, b);
    rc_index_insert(&ix, 1, 0, 64, b);
    rc_index_clear(&ix);
    ck_assert_ptr_null(rc_index_lookup(&ix, 0, 0, 64));
    ck_assert_ptr_null(rc_index_lookup(&ix, 1, 0, 64));
    ck_assert_uint_eq(ix.entries, 0);
    rc_index_insert(&ix, 1, 0, 64, b);
    ck_assert(holds(&ix, 1, 0, 64, 7));
    rc_index_fini(&ix);
}
END_TEST

START_TEST(test_invalidate_range)
{
    struct rc_index ix;
    unsigned char   b[16];

    ck_assert_int_eq(rc_index_init(&ix, 1 << 16, 3), 0);
    fill(b, 16, 3);
    rc_index_insert(&ix, 1, 100, 16, b); /* [100, 116) */
    rc_index_insert(&ix, 1, 200, 16, b); /* [200, 216) */
    rc_index_insert(&ix, 2, 100, 16, b);
    /* touching ends do not overlap */
    ck_assert_uint_eq(rc_index_invalidate(&ix, 1, 116, 84), 0);
    ck_assert_uint_eq(rc_index_invalidate(&ix, 1, 90, 10), 0);
    ck_assert_uint_eq(rc_index_invalidate(&ix, 1, 115, 1), 1);
    ck_assert_ptr_null(rc_index_lookup(&ix, 1, 100, 16));
    ck_assert(holds(&ix, 1, 200, 16, 3));
    ck_assert(holds(&ix, 2, 100, 16, 3));
    ck_assert_uint_eq(rc_index_invalidate(&ix, 1, 0, UINT64_MAX), 1);
    ck_assert(holds(&ix, 2, 100, 16, 3));
    ck_assert_uint_eq(ix.entries, 1);
    rc_index_fini(&ix);
}
END_TEST

/* A random mix of inserts, invalidations and clears against a model of
 * what was written last: a lookup finds nothing or the latest data. */
START_TEST(test_random_model)
{
    enum { N = 512 };
    static uint32_t ver[N];  /* 0: not valid */
    struct rc_index ix;
    unsigned char   b[4096];
    uint64_t        x = 88172645463325252ULL;

    ck_assert_int_eq(rc_index_init(&ix, 1 << 18, 4), 0);
    memset(ver, 0, sizeof ver);
    for (uint32_t step = 1; step < 200000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int      k = (int)(x % N), t = k % 4;
        size_t   len = 1 + (size_t)(k * 37) % 4000;
        uint64_t d = (uint64_t)k * 8192;
        unsigned op = (unsigned)(x >> 40) % 100;

        if (op < 60) {
            fill(b, len, step);
            ck_assert_int_eq(rc_index_insert(&ix, t, d, len, b), 0);
            ver[k] = step;
        } else if (op < 97) {
            const void *got = rc_index_lookup(&ix, t, d, len);
            if (got) {
                ck_assert_uint_ne(ver[k], 0);
                fill(b, len, ver[k]);
                ck_assert(!memcmp(got, b, len));
            }
        } else if (op < 99) {
            rc_index_invalidate(&ix, t, d, 1);
            ver[k] = 0;
            ck_assert_ptr_null(rc_index_lookup(&ix, t, d, len));
        } else {
            rc_index_clear(&ix);
            memset(ver, 0, sizeof ver);
        }
        ck_assert_uint_le(ix.head - ix.tail, ix.ring_size);
    }
    rc_index_fini(&ix);
}
END_TEST

START_TEST(test_node_publish_read)
{
    struct kvshm_rma_control c;
    void          *base = new_region(2, 1 << 16, &c, NULL);
    void          *seg = kvshm_rma_segment(base, &c, 1);
    unsigned char  b[256], out[256], big[(1 << 14) + 8];

    fill(b, sizeof b, 9);
    ck_assert_int_eq(rc_node_read(seg, 1, 64, sizeof b, 1, out), 0);
    ck_assert_int_eq(rc_node_publish(seg, 1, 64, sizeof b, 1, b), 1);
    /* more than a quarter of the ring is not published */
    ck_assert_int_eq(rc_node_publish(seg, 1, 0, sizeof big, 1, big), 0);
    ck_assert_int_eq(rc_node_read(seg, 1, 64, sizeof b, 1, out), 1);
    ck_assert(!memcmp(out, b, sizeof b));
    /* another gen, target, displacement or length is not it */
    ck_assert_int_eq(rc_node_read(seg, 1, 64, sizeof b, 2, out), 0);
    ck_assert_int_eq(rc_node_read(seg, 2, 64, sizeof b, 1, out), 0);
    ck_assert_int_eq(rc_node_read(seg, 1, 72, sizeof b, 1, out), 0);
    ck_assert_int_eq(rc_node_read(seg, 1, 64, 128, 1, out), 0);
    /* a withdrawn range is gone */
    rc_node_withdraw(seg, 1, 100, 1);
    ck_assert_int_eq(rc_node_read(seg, 1, 64, sizeof b, 1, out), 0);
    /* an entry overwritten by the ring is refused */
    rc_node_publish(seg, 1, 64, sizeof b, 1, b);
    for (uint32_t i = 0; i < 2000; i++)
        rc_node_publish(seg, 3, (uint64_t)i * 4096, sizeof b, 1, b);
    ck_assert_int_eq(rc_node_read(seg, 1, 64, sizeof b, 1, out), 0);
    /* a slot whose fields a writer is changing (its new pos, the old
     * len) names data past the ring's end: not read */
    {
        struct kvshm_rma_slot *s = (struct kvshm_rma_slot *)((char *)seg +
                                                             sizeof(struct kvshm_rma_segment));
        const uint64_t ring = c.ring_size, tail = ((struct kvshm_rma_segment *)seg)->tail;
        uint32_t       i = 0;

        while (i < KVSHM_RMA_SLOTS && !(s[i].gen && s[i].len == sizeof b))
            i++;
        ck_assert_uint_lt(i, KVSHM_RMA_SLOTS); /* the ring's entries are in slots */
        ck_assert_int_eq(rc_node_read(seg, s[i].target, s[i].disp, sizeof b, 1, out), 1);
        s[i].pos = (tail / ring + 2) * ring - 8; /* past the tail, 8 bytes before the end */
        ck_assert_int_eq(rc_node_read(seg, s[i].target, s[i].disp, sizeof b, 1, out), 0);
    }
    /* the other rank's segment saw none of it */
    ck_assert_int_eq(rc_node_read(kvshm_rma_segment(base, &c, 0), 3, 0, sizeof b, 1, out),
                     0);
    free(base);
}
END_TEST

/* The region's layout, the bounds of its inputs, and a control block a
 * reader refuses. */
START_TEST(test_rma_region)
{
    struct kvshm_rma_control c, got;
    struct kvshm_rma_layout  l;
    mpikvs_error_t           err;
    uint64_t                 size;
    char                     name[64];
    unsigned char           *base = new_region(3, 4096, &c, &size);

    ck_assert_uint_eq(c.nranks, 3);
    ck_assert_uint_eq(c.win_ranks, 4);
    ck_assert_uint_eq(c.segments_offset % KVSHM_RMA_PAGE, 0);
    ck_assert_uint_eq(c.segment_size % KVSHM_RMA_PAGE, 0);
    ck_assert_uint_eq(size, c.segments_offset + 3 * c.segment_size);
    for (uint64_t r = 0; r < 3; r++) {
        struct kvshm_rma_segment *s = kvshm_rma_segment(base, &c, r);
        ck_assert_uint_eq(s->ring_size, 4096);
        ck_assert_uint_eq(s->ready, 1);
        ck_assert_ptr_eq(&kvshm_rma_rank(base, &c, r)->counters,
                         (void *)(base + c.ranks_offset + r * sizeof(struct kvshm_rma_rank)));
    }
    /* inputs out of bounds */
    ck_assert_int_eq(kvshm_rma_layout(0, 4096, &l, &err), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_rma_layout(KVSHM_RMA_MAX_RANKS + 1, 4096, &l, &err),
                     MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_rma_layout(1, 4097, &l, &err), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_rma_layout(1, 0, &l, &err), MPIKVS_ERR_INVAL);
    /* a file shorter than its control block claims */
    ck_assert_int_eq(kvshm_rma_read_control(base, size - 1, "r", &got, &err),
                     MPIKVS_ERR_CORRUPT);
    ck_assert_int_eq(kvshm_rma_read_control(base, 100, "r", &got, &err),
                     MPIKVS_ERR_CORRUPT);
    /* fields that disagree with the layout */
    struct kvshm_rma_control *live = (struct kvshm_rma_control *)(base + KVSHM_HEADER_SIZE);
    live->nranks = UINT64_MAX;
    ck_assert_int_eq(kvshm_rma_read_control(base, size, "r", &got, &err),
                     MPIKVS_ERR_CORRUPT);
    live->nranks = 4;
    ck_assert_int_eq(kvshm_rma_read_control(base, size, "r", &got, &err),
                     MPIKVS_ERR_CORRUPT);
    live->nranks = 3;
    live->segments_offset += 8;
    ck_assert_int_eq(kvshm_rma_read_control(base, size, "r", &got, &err),
                     MPIKVS_ERR_CORRUPT);
    ck_assert(strstr(err.text, "segments_offset"));
    live->segments_offset -= 8;
    live->win_ranks = 2;
    ck_assert_int_eq(kvshm_rma_read_control(base, size, "r", &got, &err),
                     MPIKVS_ERR_CORRUPT);
    live->win_ranks = 4;
    ck_assert_int_eq(kvshm_rma_read_control(base, size, "r", &got, &err), MPIKVS_OK);
    /* the name, cut to its field, and the modes */
    kvshm_rma_set_name(base, "halo");
    kvshm_rma_name(base, name, sizeof name);
    ck_assert_str_eq(name, "halo");
    kvshm_rma_set_name(base, "0123456789012345678901234567890123456789012345678901234567890123456789");
    kvshm_rma_name(base, name, sizeof name);
    ck_assert_uint_eq(strlen(name), 63);
    ck_assert_str_eq(kvshm_rma_mode_name(KVSHM_RMA_READONLY), "readonly");
    ck_assert_str_eq(kvshm_rma_mode_name(7), "?");
    free(base);
}
END_TEST

struct race {
    void       *seg;
    atomic_int  stop;
    long        reads, torn;
};

static void *race_reader(void *arg)
{
    struct race  *r = arg;
    unsigned char out[512];

    while (!atomic_load(&r->stop)) {
        for (int k = 0; k < 8; k++)
            if (rc_node_read(r->seg, 0, (uint64_t)k * 512, sizeof out, 1, out)) {
                r->reads++;
                for (size_t i = 1; i < sizeof out; i++)
                    if (out[i] != out[0]) {
                        r->torn++;
                        break;
                    }
            }
    }
    return NULL;
}

/* A reader never accepts an entry torn by the writer's next ones. */
START_TEST(test_node_race)
{
    struct kvshm_rma_control c;
    void          *base = new_region(1, 8192, &c, NULL);
    struct race   r = {.seg = kvshm_rma_segment(base, &c, 0)};
    pthread_t     th;
    unsigned char b[512];

    pthread_create(&th, NULL, race_reader, &r);
    for (uint32_t i = 0; i < 400000; i++) {
        memset(b, (int)(i & 0xff), sizeof b);
        rc_node_publish(r.seg, 0, (uint64_t)(i % 8) * 512, sizeof b, 1, b);
    }
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    ck_assert_int_eq(r.torn, 0);
    free(base);
}
END_TEST

static Suite *index_suite(void)
{
    Suite *s = suite_create("rmacache_index");
    TCase *tc = tcase_create("index");

    tcase_add_test(tc, test_insert_lookup);
    tcase_add_test(tc, test_bad_budget);
    tcase_add_test(tc, test_budget_evicts_oldest);
    tcase_add_test(tc, test_full_buckets);
    tcase_add_test(tc, test_clear);
    tcase_add_test(tc, test_invalidate_range);
    tcase_add_test(tc, test_random_model);
    suite_add_tcase(s, tc);
    tc = tcase_create("node");
    tcase_add_test(tc, test_node_publish_read);
    tcase_add_test(tc, test_node_race);
    tcase_add_test(tc, test_rma_region);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(index_suite());
    int      failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
