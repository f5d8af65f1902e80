/*
 * check_bucket.c - the bucket protocol (libmpikvs/bucket.h) without MPI:
 * a table laid out by shm's kvshm_data_init in a private mapping, and the
 * library's own bucket.c and slot.c run on it, by one thread or by two at
 * once (two ranks of a node).
 *
 *   find     a put is found by a get, with its value; another key is a
 *            miss, and a second put of a key updates its slot;
 *   pick     a full bucket evicts the key written longest ago;
 *   claim    a put of a key whose slot the other thread holds claimed
 *            waits for the claim and then updates that slot;
 *   absent   rounds of new keys offered by both threads at once with
 *            put-if-absent: one winner per key, the loser shown the
 *            winner's value;
 *   torn     a slot whose value no longer matches its checksum is read
 *            again, then given up on as a miss and marked invalid; a put
 *            of the key writes it again;
 *   copy     the same protocol over an I/O without compare-and-swap (a
 *            private copy written back, as the lock modes' transport is):
 *            put, get, put-if-absent as a lookup then a put, and a torn
 *            slot marked invalid by a write.
 *
 * Built twice: plainly, and with -fsanitize=thread where configure found
 * ThreadSanitizer (check_bucket_tsan), whose reports end the run.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bucket.h"
#include "data_region.h"
#include "handle.h"
#include "key.h"
#include "slot.h"

#define KS 16u
#define VS 24u

#if defined(__SANITIZE_THREAD__)
/* Halt at the first report, with a status of its own. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "halt_on_error=1 exitcode=66";
}
#endif

/* A table of nbuckets buckets in a private mapping, with a stats block
 * per thread (two), and a handle only for kvs_key_make's shape. */
struct table {
    unsigned char   *region;
    size_t           size;
    struct kvs_table t[2];
    mpikvs_t         shape;
};

static void table_make(struct table *tb, uint64_t buckets, unsigned slots)
{
    struct kvshm_data_shape shape = {KS, VS, slots, KVSHM_MODE_LOCKFREE};
    struct kvshm_data_control *c;
    mpikvs_error_t err;

    tb->size = kvshm_data_buckets_offset(2) +
               buckets * kvshm_bucket_size(&shape);
    tb->region = mmap(NULL, tb->size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(tb->region, MAP_FAILED);
    c = (struct kvshm_data_control *)(tb->region + KVSHM_DATA_CONTROL_OFFSET);
    ck_assert_msg(kvshm_data_init(c, tb->size, 2, &shape, "check", &err) ==
                      MPIKVS_OK,
                  "kvshm_data_init: %s", err.text);
    ck_assert_uint_eq(c->nbuckets, buckets);
    for (unsigned i = 0; i < 2; i++) {
        struct kvs_table *t = &tb->t[i];
        t->key_size = KS;
        t->value_size = VS;
        t->slots = c->slots_per_bucket;
        t->slot_size = c->slot_size;
        t->bucket_size = c->bucket_size;
        t->nbuckets = c->nbuckets;
        t->buckets_offset = c->buckets_offset;
        t->buckets = tb->region + c->buckets_offset;
        t->stats = (struct kvshm_rank_stats *)(tb->region +
                                               KVSHM_DATA_STATS_OFFSET) + i;
        t->pid = (uint32_t)getpid();
    }
    memset(&tb->shape, 0, sizeof(tb->shape));
    tb->shape.tab = tb->t[0];
    tb->shape.nnodes = 1;
}

static void table_free(struct table *tb)
{
    munmap(tb->region, tb->size);
}

/* Key n's bytes, and a value that names the key and a version. */
static void key_of(unsigned n, unsigned char *key)
{
    memset(key, 0, KS);
    memcpy(key, &n, sizeof(n));
}

static void value_of(unsigned n, unsigned version, unsigned char *v)
{
    memset(v, (int)(n * 31u + version), VS);
    memcpy(v, &n, sizeof(n));
    memcpy(v + sizeof(n), &version, sizeof(version));
}

static unsigned version_in(const unsigned char *v)
{
    unsigned version;

    memcpy(&version, v + sizeof(unsigned), sizeof(version));
    return version;
}

/* One operation of thread i's table through io. */
static int op_get(struct table *tb, unsigned i, const struct kvs_bucket_io *io,
                  const unsigned char *key, struct kvs_key *k, void *value)
{
    struct kvs_access a = {&tb->t[i], io, k, NULL, 0, 0, false};

    kvs_key_make(&tb->shape, key, k);
    return kvs_bucket_get(&a, value);
}

static int op_put(struct table *tb, unsigned i, const struct kvs_bucket_io *io,
                  const unsigned char *key, const void *value)
{
    struct kvs_key k;
    struct kvs_access a = {&tb->t[i], io, &k, NULL, 0, 0, false};

    kvs_key_make(&tb->shape, key, &k);
    return kvs_bucket_put(&a, value);
}

static int op_absent(struct table *tb, unsigned i,
                     const struct kvs_bucket_io *io, const unsigned char *key,
                     const void *value, void *present)
{
    struct kvs_key k;
    struct kvs_access a = {&tb->t[i], io, &k, NULL, 0, 0, false};

    kvs_key_make(&tb->shape, key, &k);
    return kvs_bucket_put_absent(&a, value, present);
}

static unsigned char *bucket_of(struct table *tb, const struct kvs_key *k)
{
    return tb->t[0].buckets + k->bucket * tb->t[0].bucket_size;
}

/* The slot of k's bucket holding key (its bytes), or slots. */
static uint64_t slot_of(struct table *tb, const struct kvs_key *k)
{
    unsigned char *b = bucket_of(tb, k);
    uint64_t i;

    for (i = 0; i < tb->t[0].slots; i++)
        if (kvshm_meta_live(kvshm_meta_load(b, i, true)) &&
            memcmp(kvs_slot_at(&tb->t[0], b, i) + KVSHM_SLOT_KV_OFFSET,
                   k->bytes, KS) == 0)
            break;
    return i;
}

/* ---- find, pick ---- */

START_TEST(test_find)
{
    struct table tb;
    unsigned char key[KS], v[VS], got[VS];
    struct kvs_key k;

    table_make(&tb, 4, 4);
    key_of(1, key);
    value_of(1, 1, v);
    ck_assert_int_eq(op_put(&tb, 0, &kvs_shared_io, key, v), SLOT_FREE);
    ck_assert_int_eq(op_get(&tb, 1, &kvs_shared_io, key, &k, got), MPIKVS_OK);
    ck_assert_mem_eq(got, v, VS);
    key_of(2, key);
    ck_assert_int_eq(op_get(&tb, 1, &kvs_shared_io, key, &k, got),
                     MPIKVS_MISS);
    key_of(1, key);
    value_of(1, 2, v);
    ck_assert_int_eq(op_put(&tb, 1, &kvs_shared_io, key, v), SLOT_UPDATE);
    ck_assert_int_eq(op_get(&tb, 0, &kvs_shared_io, key, &k, got), MPIKVS_OK);
    ck_assert_uint_eq(version_in(got), 2);
    table_free(&tb);
}
END_TEST

START_TEST(test_pick_evicts_oldest)
{
    struct table tb;
    unsigned char key[KS], v[VS], got[VS];
    unsigned slots;
    struct kvs_key k;

    table_make(&tb, 1, 4);   /* one bucket: every key is in it */
    slots = (unsigned)tb.t[0].slots;
    for (unsigned n = 0; n < slots; n++) {
        key_of(n, key);
        value_of(n, 1, v);
        ck_assert_int_eq(op_put(&tb, 0, &kvs_shared_io, key, v), SLOT_FREE);
    }
    key_of(slots, key);
    value_of(slots, 1, v);
    ck_assert_int_eq(op_put(&tb, 0, &kvs_shared_io, key, v), SLOT_EVICT);
    key_of(0, key);   /* the first written is the one evicted */
    ck_assert_int_eq(op_get(&tb, 0, &kvs_shared_io, key, &k, got),
                     MPIKVS_MISS);
    for (unsigned n = 1; n <= slots; n++) {
        key_of(n, key);
        ck_assert_int_eq(op_get(&tb, 1, &kvs_shared_io, key, &k, got),
                         MPIKVS_OK);
    }
    table_free(&tb);
}
END_TEST

/* ---- claim: a put waits for the other thread's claim ---- */

struct claim_arg {
    struct table *tb;
    atomic_int    started;
    int           rc;
};

static void *put_behind_claim(void *p)
{
    struct claim_arg *c = p;
    unsigned char key[KS], v[VS];

    key_of(7, key);
    value_of(7, 3, v);
    atomic_store(&c->started, 1);
    c->rc = op_put(c->tb, 1, &kvs_shared_io, key, v);
    return NULL;
}

START_TEST(test_claim_waited_for)
{
    struct table tb;
    struct claim_arg c = {&tb, 0, 0};
    unsigned char key[KS], v[VS], got[VS];
    struct kvs_key k;
    uint64_t *meta, seen, claim, was;
    pthread_t th;

    table_make(&tb, 4, 4);
    key_of(7, key);
    value_of(7, 1, v);
    ck_assert_int_eq(op_put(&tb, 0, &kvs_shared_io, key, v), SLOT_FREE);
    kvs_key_make(&tb.shape, key, &k);
    meta = kvs_meta_at(bucket_of(&tb, &k), slot_of(&tb, &k));
    /* thread 0 claims the key's slot, as a put does before it writes */
    seen = was = __atomic_load_n(meta, __ATOMIC_ACQUIRE);
    claim = kvs_slot_claim(was, tb.t[0].pid);
    ck_assert(__atomic_compare_exchange_n(meta, &seen, claim, false,
                                          __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    ck_assert_int_eq(pthread_create(&th, NULL, put_behind_claim, &c), 0);
    /* bounded: the other put is waiting for the claim, or about to */
    for (int i = 0; i < 100000 && !atomic_load(&c.started); i++)
        sched_yield();
    ck_assert(atomic_load(&c.started));
    value_of(7, 2, v);
    kvs_slot_write_claimed(&tb.t[0], bucket_of(&tb, &k), slot_of(&tb, &k),
                           &k, v);
    seen = claim;   /* released: the slot's meta word as it was */
    ck_assert(__atomic_compare_exchange_n(meta, &seen, was, false,
                                          __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    pthread_join(th, NULL);
    /* after the claim, the waiting put updated the same slot */
    ck_assert_int_eq(c.rc, SLOT_UPDATE);
    ck_assert_int_eq(op_get(&tb, 0, &kvs_shared_io, key, &k, got), MPIKVS_OK);
    ck_assert_uint_eq(version_in(got), 3);
    table_free(&tb);
}
END_TEST

/* ---- absent: two threads, one winner per key ---- */

#define ROUNDS 10000u

struct absent_arg {
    struct table      *tb;
    unsigned           id;
    pthread_barrier_t *barrier;
    int                rc[ROUNDS];
    unsigned char      seen[ROUNDS][VS];
};

static void *offer(void *p)
{
    struct absent_arg *a = p;
    unsigned char key[KS], v[VS];

    for (unsigned r = 0; r < ROUNDS; r++) {
        key_of(1000 + r, key);
        value_of(1000 + r, 10 + a->id, v);
        pthread_barrier_wait(a->barrier);
        a->rc[r] = op_absent(a->tb, a->id, &kvs_shared_io, key, v,
                             a->seen[r]);
    }
    return NULL;
}

START_TEST(test_absent_one_winner)
{
    struct table tb;
    pthread_barrier_t barrier;
    static struct absent_arg a[2];
    pthread_t th[2];
    unsigned char key[KS], got[VS];
    struct kvs_key k;

    table_make(&tb, 16384, 8);   /* no bucket overflows */
    pthread_barrier_init(&barrier, NULL, 2);
    for (unsigned i = 0; i < 2; i++) {
        a[i].tb = &tb;
        a[i].id = i;
        a[i].barrier = &barrier;
        ck_assert_int_eq(pthread_create(&th[i], NULL, offer, &a[i]), 0);
    }
    for (unsigned i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (unsigned r = 0; r < ROUNDS; r++) {
        int won0 = a[0].rc[r] >= 0 && a[0].rc[r] != SLOT_PRESENT;
        int won1 = a[1].rc[r] >= 0 && a[1].rc[r] != SLOT_PRESENT;
        unsigned winner = won0 ? 0 : 1;
        ck_assert_msg(a[0].rc[r] >= 0 && a[1].rc[r] >= 0,
                      "round %u: %d %d", r, a[0].rc[r], a[1].rc[r]);
        ck_assert_msg(won0 + won1 == 1, "round %u: %d winners", r,
                      won0 + won1);
        /* the loser was shown the winner's value */
        ck_assert_uint_eq(version_in(a[1 - winner].seen[r]), 10 + winner);
        key_of(1000 + r, key);
        ck_assert_int_eq(op_get(&tb, 0, &kvs_shared_io, key, &k, got),
                         MPIKVS_OK);
        ck_assert_uint_eq(version_in(got), 10 + winner);
    }
    pthread_barrier_destroy(&barrier);
    table_free(&tb);
}
END_TEST

/* ---- torn: a slot that does not verify ---- */

START_TEST(test_torn_invalidated)
{
    struct table tb;
    unsigned char key[KS], v[VS], got[VS];
    struct kvs_key k;
    uint64_t i, retries0, inval0;
    unsigned char *slot;

    table_make(&tb, 4, 4);
    key_of(9, key);
    value_of(9, 1, v);
    ck_assert_int_eq(op_put(&tb, 0, &kvs_shared_io, key, v), SLOT_FREE);
    kvs_key_make(&tb.shape, key, &k);
    i = slot_of(&tb, &k);
    slot = kvs_slot_at(&tb.t[0], bucket_of(&tb, &k), i);
    __atomic_fetch_xor(slot + kvshm_slot_value_offset(KS), 0x40,
                       __ATOMIC_RELAXED);
    retries0 = tb.t[1].stats->checksum_retries;
    inval0 = tb.t[1].stats->invalidations;
    ck_assert_int_eq(op_get(&tb, 1, &kvs_shared_io, key, &k, got),
                     MPIKVS_MISS);
    ck_assert_uint_eq(tb.t[1].stats->checksum_retries - retries0,
                      MPIKVS_CHECKSUM_RETRIES);
    ck_assert_uint_eq(tb.t[1].stats->invalidations - inval0, 1);
    ck_assert(kvshm_meta_load(bucket_of(&tb, &k), i, true) &
              KVSHM_SLOT_INVALID);
    /* a put of the key writes it again, whole */
    value_of(9, 2, v);
    ck_assert_int_ge(op_put(&tb, 0, &kvs_shared_io, key, v), 0);
    ck_assert_int_eq(op_get(&tb, 1, &kvs_shared_io, key, &k, got),
                     MPIKVS_OK);
    ck_assert_uint_eq(version_in(got), 2);
    table_free(&tb);
}
END_TEST

/* ---- copy: an I/O without compare-and-swap, over a private copy ---- */

static unsigned char copy_buf[4096];
static unsigned copy_writes;

static int copy_bucket(struct kvs_access *a, unsigned char **b)
{
    memcpy(copy_buf, a->t->buckets + a->k->bucket * a->t->bucket_size,
           a->t->bucket_size);
    *b = copy_buf;
    return MPIKVS_OK;
}

static int copy_write(struct kvs_access *a, unsigned char *b, uint64_t i,
                      const uint64_t *meta, const void *value)
{
    unsigned char *home = a->t->buckets + a->k->bucket * a->t->bucket_size;
    unsigned char image[256];

    (void)b;
    ck_assert_ptr_nonnull(meta);   /* nothing is claimed */
    kvs_slot_image(a->t, a->k, value, image);
    *kvs_meta_at(home, i) = *meta;
    memcpy(kvs_slot_at(a->t, home, i), image, a->t->slot_size);
    copy_writes++;
    return MPIKVS_OK;
}

static int copy_invalidate(struct kvs_access *a, unsigned char *b,
                           uint64_t i, uint64_t meta)
{
    unsigned char *home = a->t->buckets + a->k->bucket * a->t->bucket_size;

    (void)b;
    *kvs_meta_at(home, i) = meta | KVSHM_SLOT_INVALID;
    return 1;
}

static const struct kvs_bucket_io copy_io = {
    .shared = false,
    .locked = true,
    .bucket = copy_bucket,
    .cas = NULL,
    .write = copy_write,
    .invalidate = copy_invalidate};

START_TEST(test_copy_io)
{
    struct table tb;
    unsigned char key[KS], v[VS], got[VS];
    struct kvs_key k;
    uint64_t i, inval0;
    unsigned char *slot;

    table_make(&tb, 4, 4);
    ck_assert_uint_le(tb.t[0].bucket_size, sizeof(copy_buf));
    key_of(5, key);
    value_of(5, 1, v);
    copy_writes = 0;
    ck_assert_int_eq(op_put(&tb, 0, &copy_io, key, v), SLOT_FREE);
    ck_assert_uint_eq(copy_writes, 1);
    ck_assert_int_eq(op_get(&tb, 1, &kvs_shared_io, key, &k, got), MPIKVS_OK);
    ck_assert_mem_eq(got, v, VS);
    /* put-if-absent without compare-and-swap: a lookup, then a put */
    value_of(5, 2, v);
    ck_assert_int_eq(op_absent(&tb, 1, &copy_io, key, v, got), SLOT_PRESENT);
    ck_assert_uint_eq(version_in(got), 1);
    ck_assert_uint_eq(copy_writes, 1);
    key_of(6, key);
    ck_assert_int_eq(op_absent(&tb, 1, &copy_io, key, v, got), SLOT_FREE);
    ck_assert_int_eq(op_get(&tb, 0, &copy_io, key, &k, got), MPIKVS_OK);
    ck_assert_uint_eq(version_in(got), 2);
    /* torn, read through the copy: invalidated by a write */
    kvs_key_make(&tb.shape, key, &k);
    i = slot_of(&tb, &k);
    slot = kvs_slot_at(&tb.t[0], bucket_of(&tb, &k), i);
    slot[kvshm_slot_value_offset(KS)] ^= 0x01;
    inval0 = tb.t[0].stats->invalidations;
    ck_assert_int_eq(op_get(&tb, 0, &copy_io, key, &k, got), MPIKVS_MISS);
    ck_assert_uint_eq(tb.t[0].stats->invalidations - inval0, 1);
    ck_assert(kvshm_meta_load(bucket_of(&tb, &k), i, false) &
              KVSHM_SLOT_INVALID);
    table_free(&tb);
}
END_TEST

static Suite *bucket_suite(void)
{
    Suite *s = suite_create("bucket");
    TCase *tc = tcase_create("protocol");

    tcase_add_test(tc, test_find);
    tcase_add_test(tc, test_pick_evicts_oldest);
    tcase_add_test(tc, test_claim_waited_for);
    tcase_add_test(tc, test_absent_one_winner);
    tcase_add_test(tc, test_torn_invalidated);
    tcase_add_test(tc, test_copy_io);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bucket_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
