/*
 * tsan_slots.c - the bucket protocol under ThreadSanitizer.
 *
 * The MPI tests race processes, whose memory orders no tool checks.
 * Here THREADS threads of one process play the ranks of one node: each
 * has its own handle (a copy, with its own counters block, as each rank
 * has) over one table laid out by shm's own kvshm_data_init in private
 * memory, and they call the library's own-node paths at once:
 * mpikvs_put (slot claims, kvs_bucket_put), mpikvs_get (the direct
 * read, retries and the invalidation of a torn slot), mpikvs_put_if_absent
 * (absent.c's claim, look and decision) and mpikvs_foreach_local (the
 * scan).  Built with -fsanitize=thread: a plain access that races an
 * atomic one, or an atomic whose order does not publish what a reader
 * then reads, is a report, and a report ends the run with status 66
 * (__tsan_default_options below; TSAN_OPTIONS may add to it).
 *
 * The assertions are the torture test's (tests/mpi/test_torture.c):
 *   hot      every thread puts, gets, offers and scans HOT keys of a
 *            table of few buckets (evictions all the time), and now and
 *            then flips a bit of a slot (the gets invalidate it); every
 *            hit and every entry a scan shows is a whole value of its
 *            key (self-checking values, mpitest.h), never torn or
 *            another's;
 *   once     rounds of new keys offered by every thread at once with
 *            put-if-absent: exactly one MPIKVS_OK per key, every loser
 *            shown the winner's value, a get afterwards returns it;
 *   claims   a claim whose owner lives (this process) stops a put and a
 *            put-if-absent of its tag for KVS_SLOT_STALL_MS, then they
 *            fail with MPIKVS_ERR_STALLED naming the owner's pid and
 *            nothing written; the claim of an owner that exited (reaped,
 *            or a zombie) is taken over at once.
 * No call may fail.  Prints the counts; exit 0 when all hold, 1 when
 * one does not, 66 on a ThreadSanitizer report.
 *
 *   tsan_slots [--ops N] [--rounds R]
 */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data_region.h"
#include "handle.h"
#include "key.h"
#include "mpikvs.h"
#include "route.h"
#include "slot.h"
#include "mpitest.h"   /* mt_make_key, mt_make_value, mt_value_ok */

#define THREADS   4u
#define KS        20u  /* not a multiple of 8: a word holds key and value */
#define VS        104u
#define HOT       32u
#define HOT_BYTES 4096u     /* the hot phase's buckets: a few */
#define ONCE_KEYS 256u
#define ONCE_SLOTS 16u
#define TAG_HOT   21u
#define TAG_ONCE  22u
#define TAG_CLAIM 23u

/* Halt at the first report, with a status of its own. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "halt_on_error=1 exitcode=66";
}

struct table {
    unsigned char *region;
    mpikvs_t       kvs[THREADS];   /* one handle a thread */
};

static atomic_ulong failures;
static pthread_barrier_t barrier;

__attribute__((format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
    va_list ap;

    if (atomic_fetch_add(&failures, 1) >= 10)
        return;
    va_start(ap, fmt);
    fputs("tsan_slots: FAIL ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* A table of bytes of buckets with slots a bucket, laid out by shm as a
 * data region is, in private memory; a handle for each thread. */
static void table_make(struct table *t, uint64_t bytes, unsigned slots)
{
    struct kvshm_data_shape shape = {KS, VS, slots, KVSHM_MODE_LOCKFREE};
    uint64_t size = kvshm_data_buckets_offset(THREADS) + bytes;
    struct kvshm_data_control *c;
    mpikvs_error_t err;

    t->region = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!t->region) {
        fprintf(stderr, "tsan_slots: out of memory\n");
        exit(1);
    }
    memset(t->region, 0, size);
    c = (struct kvshm_data_control *)(t->region + KVSHM_DATA_CONTROL_OFFSET);
    if (kvshm_data_init(c, size, THREADS, &shape, "tsan", &err) !=
        MPIKVS_OK) {
        fprintf(stderr, "tsan_slots: kvshm_data_init: %s\n", err.text);
        exit(1);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        mpikvs_t *k = &t->kvs[i];
        memset(k, 0, sizeof(*k));
        k->mode = KVSHM_MODE_LOCKFREE;
        k->tab.key_size = KS;
        k->tab.value_size = VS;
        k->tab.slots = c->slots_per_bucket;
        k->tab.slot_size = c->slot_size;
        k->tab.bucket_size = c->bucket_size;
        k->tab.nbuckets = c->nbuckets;
        k->tab.buckets = t->region + c->buckets_offset;
        k->tab.stats = (struct kvshm_rank_stats *)(t->region +
                                               KVSHM_DATA_STATS_OFFSET) + i;
        k->nnodes = 1;
        k->node = 0;
        k->tab.pid = (uint32_t)getpid();
        /* no transport: one node, its buckets in shared memory */
        if (kvs_routes_set(k) != MPIKVS_OK) {
            fprintf(stderr, "tsan_slots: %s\n", mpikvs_last_error(k));
            exit(1);
        }
    }
}

static uint64_t table_sum(const struct table *t, size_t field)
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < THREADS; i++)
        sum += *(const uint64_t *)((const char *)t->kvs[i].tab.stats + field);
    return sum;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;   /* xorshift64* */

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

/* ---- hot: puts, gets, offers and scans of a few keys ---- */

struct hot_arg {
    struct table *t;
    unsigned      id;
    uint64_t      ops, hits, misses, present, scanned;
};

static void check_value(const unsigned char *key, const unsigned char *val,
                        const char *what)
{
    uint64_t ver = 0, k;

    if (mt_value_ok(key, KS, val, VS, &ver))
        return;
    memcpy(&k, key + 8, 8);
    fail("%s: key %llu: a value that is not the key's (version field "
         "%#llx)", what, (unsigned long long)k, (unsigned long long)ver);
}

static int scanned_entry(const void *key, const void *value, void *arg)
{
    struct hot_arg *a = arg;

    a->scanned++;
    check_value(key, value, "scan");
    return 0;
}

/* Flip a bit of a word of some slot's value, as a stray write would:
 * the slot stops verifying until it is written again, and the gets
 * that find it torn invalidate it (the word is one the readers load). */
static void damage(mpikvs_t *kvs, uint64_t r)
{
    uint64_t b = (r >> 8) % kvs->tab.nbuckets, i = (r >> 24) % kvs->tab.slots;
    unsigned char *slot = kvs->tab.buckets + b * kvs->tab.bucket_size +
                          kvshm_bucket_slot_offset(kvs->tab.slots,
                                                   kvs->tab.slot_size, i);

    __atomic_fetch_xor((uint64_t *)(slot + kvshm_align8(
                                               kvshm_slot_value_offset(KS))),
                       UINT64_C(1) << (r % 64), __ATOMIC_RELAXED);
}

static void *hot_run(void *p)
{
    struct hot_arg *a = p;
    mpikvs_t *kvs = &a->t->kvs[a->id];
    uint64_t seed = 0x9e3779b97f4a7c15ULL * (a->id + 1);
    uint64_t version = (uint64_t)(a->id + 1) << 40;
    unsigned char key[KS], val[VS];

    pthread_barrier_wait(&barrier);
    for (uint64_t i = 0; i < a->ops; i++) {
        uint64_t r = rng_next(&seed);
        unsigned op = (unsigned)(r >> 32) % 100;
        int rc;

        mt_make_key(TAG_HOT, 0, r % HOT, key, KS);
        if (op < 45) {
            mt_make_value(key, KS, ++version, val, VS);
            if ((rc = mpikvs_put(kvs, key, val)) != MPIKVS_OK)
                fail("mpikvs_put = %d: %s", rc, mpikvs_last_error(kvs));
        } else if (op < 90) {
            memset(val, 0xee, VS);
            rc = mpikvs_get(kvs, key, val);
            if (rc == MPIKVS_OK) {
                a->hits++;
                check_value(key, val, "get");
            } else if (rc == MPIKVS_MISS) {
                a->misses++;
            } else {
                fail("mpikvs_get = %d: %s", rc, mpikvs_last_error(kvs));
            }
        } else if (op < 99) {
            unsigned char seen[VS];
            mt_make_value(key, KS, ++version, val, VS);
            rc = mpikvs_put_if_absent(kvs, key, val, seen);
            if (rc == MPIKVS_PRESENT) {
                a->present++;
                check_value(key, seen, "put-if-absent's present value");
            } else if (rc != MPIKVS_OK) {
                fail("mpikvs_put_if_absent = %d: %s", rc,
                     mpikvs_last_error(kvs));
            }
        } else if (r & 1) {
            if ((rc = mpikvs_foreach_local(kvs, scanned_entry, a)) != 0)
                fail("mpikvs_foreach_local = %d: %s", rc,
                     mpikvs_last_error(kvs));
        } else {
            damage(kvs, r);
        }
    }
    return NULL;
}

static void hot_phase(uint64_t ops)
{
    struct table t;
    struct hot_arg a[THREADS];
    pthread_t th[THREADS];
    uint64_t hits = 0, misses = 0, present = 0, scanned = 0;

    table_make(&t, HOT_BYTES, 4);
    for (unsigned i = 0; i < THREADS; i++) {
        a[i] = (struct hot_arg){.t = &t, .id = i, .ops = ops};
        pthread_create(&th[i], NULL, hot_run, &a[i]);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        hits += a[i].hits;
        misses += a[i].misses;
        present += a[i].present;
        scanned += a[i].scanned;
    }
    printf("tsan_slots (hot): %u threads, %llu ops each on %u keys in %llu "
           "buckets of %llu slots: %llu hits, %llu misses, %llu present, "
           "%llu entries scanned; checksum retries %llu, invalidations "
           "%llu, evictions %llu\n",
           THREADS, (unsigned long long)ops, HOT,
           (unsigned long long)t.kvs[0].tab.nbuckets,
           (unsigned long long)t.kvs[0].tab.slots, (unsigned long long)hits,
           (unsigned long long)misses, (unsigned long long)present,
           (unsigned long long)scanned,
           (unsigned long long)table_sum(
               &t, offsetof(struct kvshm_rank_stats, checksum_retries)),
           (unsigned long long)table_sum(
               &t, offsetof(struct kvshm_rank_stats, invalidations)),
           (unsigned long long)table_sum(
               &t, offsetof(struct kvshm_rank_stats, evictions)));
    free(t.region);
}

/* ---- once: every thread offers the same new keys at once ---- */

struct once_arg {
    struct table *t;
    unsigned      id;
    uint32_t      round;
    int           rc[ONCE_KEYS];
    uint64_t      shown[ONCE_KEYS];   /* version of the present value */
};

static void *once_run(void *p)
{
    struct once_arg *a = p;
    mpikvs_t *kvs = &a->t->kvs[a->id];
    unsigned char key[KS], val[VS], seen[VS];

    pthread_barrier_wait(&barrier);
    for (unsigned i = 0; i < ONCE_KEYS; i++) {
        mt_make_key(TAG_ONCE, a->round, i, key, KS);
        mt_make_value(key, KS, a->id + 1u, val, VS);
        a->rc[i] = mpikvs_put_if_absent(kvs, key, val, seen);
        if (a->rc[i] != MPIKVS_PRESENT ||
            !mt_value_ok(key, KS, seen, VS, &a->shown[i]))
            a->shown[i] = UINT64_MAX;   /* none, or not the key's */
    }
    return NULL;
}

static void once_phase(unsigned rounds)
{
    static struct once_arg a[THREADS];
    uint64_t keys = 0, split = 0, wrong = 0, errors = 0;
    unsigned char key[KS], val[VS];

    for (uint32_t r = 0; r < rounds; r++) {
        struct table t;
        pthread_t th[THREADS];

        /* room for every key: a round's keys never evict each other */
        table_make(&t, ONCE_KEYS * 4u * 1024u, ONCE_SLOTS);
        for (unsigned i = 0; i < THREADS; i++) {
            a[i].t = &t;
            a[i].id = i;
            a[i].round = r;
            pthread_create(&th[i], NULL, once_run, &a[i]);
        }
        for (unsigned i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        for (unsigned k = 0; k < ONCE_KEYS; k++) {
            unsigned winners = 0, winner = 0;
            uint64_t ver = 0;
            keys++;
            for (unsigned i = 0; i < THREADS; i++) {
                if (a[i].rc[k] == MPIKVS_OK) {
                    winners++;
                    winner = i;
                } else if (a[i].rc[k] != MPIKVS_PRESENT) {
                    errors++;
                }
            }
            if (winners != 1) {
                split++;
                fail("round %u, key %u: %u winners", r, k, winners);
                continue;
            }
            for (unsigned i = 0; i < THREADS; i++)
                if (i != winner && a[i].shown[k] != winner + 1u) {
                    wrong++;
                    fail("round %u, key %u: thread %u was shown version "
                         "%llu, the winner's is %u", r, k, i,
                         (unsigned long long)a[i].shown[k], winner + 1u);
                }
            mt_make_key(TAG_ONCE, r, k, key, KS);
            if (mpikvs_get(&t.kvs[0], key, val) != MPIKVS_OK ||
                !mt_value_ok(key, KS, val, VS, &ver) || ver != winner + 1u) {
                wrong++;
                fail("round %u, key %u: a get does not return the winner's "
                     "value", r, k);
            }
        }
        free(t.region);
    }
    if (errors)
        fail("put-if-absent: %llu calls failed", (unsigned long long)errors);
    printf("tsan_slots (put-if-absent): %u threads, %u rounds of %u keys "
           "offered by every thread: %llu keys, %llu without exactly one "
           "winner, %llu wrong answers or values, %llu failed calls\n",
           THREADS, rounds, ONCE_KEYS, (unsigned long long)keys,
           (unsigned long long)split, (unsigned long long)wrong,
           (unsigned long long)errors);
}

/* ---- claims: waited for while their owner lives, else taken over ---- */

/* Slot k.preferred of key's bucket claimed for key's tag by owner, as a
 * writer's compare-and-swap leaves it.  (Not inlined: GCC then takes
 * xxhash's reads of a key of kvs->tab.key_size bytes for reads past the
 * caller's array.) */
static __attribute__((noinline)) void
forge_claim(mpikvs_t *kvs, const unsigned char *key, uint32_t owner)
{
    struct kvs_key k;
    unsigned char *b;
    uint64_t meta;

    kvs_key_make(kvs, key, &k);
    b = kvs->tab.buckets + k.bucket * kvs->tab.bucket_size;
    meta = KVSHM_SLOT_OCCUPIED | (uint64_t)k.tag << KVSHM_SLOT_TAG_SHIFT;
    __atomic_store_n(kvs_meta_at(b, k.preferred), kvs_slot_claim(meta, owner),
                     __ATOMIC_RELEASE);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct claim_arg {
    mpikvs_t *kvs;
    uint64_t  b;        /* the key's number */
    bool      absent;   /* put-if-absent, else put */
    int       rc;
    double    secs;
    char      msg[512];
};

static void *claim_run(void *p)
{
    struct claim_arg *a = p;
    unsigned char key[KS], val[VS];
    double t0 = now_s();

    mt_make_key(TAG_CLAIM, 0, a->b, key, KS);
    mt_make_value(key, KS, 7, val, VS);
    a->rc = a->absent ? mpikvs_put_if_absent(a->kvs, key, val, NULL)
                      : mpikvs_put(a->kvs, key, val);
    a->secs = now_s() - t0;
    snprintf(a->msg, sizeof(a->msg), "%s", mpikvs_last_error(a->kvs));
    return NULL;
}

/* Both calls at once (threads 0 and 1) on keys b and b + 1 of claims by
 * owner; checks each outcome with check. */
static void claimed_calls(struct table *t, uint64_t b, uint32_t owner,
                          void (*check)(const struct claim_arg *, uint32_t))
{
    struct claim_arg a[2];
    pthread_t th[2];
    unsigned char key[KS], val[VS];

    for (unsigned i = 0; i < 2; i++) {
        mt_make_key(TAG_CLAIM, 0, b + i, key, KS);
        forge_claim(&t->kvs[i], key, owner);
        a[i] = (struct claim_arg){.kvs = &t->kvs[i], .b = b + i,
                                  .absent = i == 1};
        pthread_create(&th[i], NULL, claim_run, &a[i]);
    }
    for (unsigned i = 0; i < 2; i++) {
        uint64_t ver = 0;
        pthread_join(th[i], NULL);
        check(&a[i], owner);
        mt_make_key(TAG_CLAIM, 0, b + i, key, KS);
        int rc = mpikvs_get(&t->kvs[2], key, val);
        if (a[i].rc == MPIKVS_OK &&
            (rc != MPIKVS_OK || !mt_value_ok(key, KS, val, VS, &ver) ||
             ver != 7))
            fail("claims: key %llu was put, but a get returns %d, version "
                 "%llu", (unsigned long long)(b + i), rc,
                 (unsigned long long)ver);
        if (a[i].rc != MPIKVS_OK && rc != MPIKVS_MISS)
            fail("claims: key %llu was not put, but a get returns %d",
                 (unsigned long long)(b + i), rc);
    }
}

static void expect_stalled(const struct claim_arg *a, uint32_t owner)
{
    char pid[32];
    double bound = KVS_SLOT_STALL_MS / 1000.0;

    snprintf(pid, sizeof(pid), "pid %u", (unsigned)owner);
    /* the bound runs from the first nap, and in whole milliseconds */
    if (a->rc != MPIKVS_ERR_STALLED || !strstr(a->msg, pid) ||
        !strstr(a->msg, "slot") || a->secs < bound * 0.9 ||
        a->secs > bound + 20)
        fail("claims: %s behind a live claim: %d after %.2f s (want "
             "MPIKVS_ERR_STALLED after %u ms naming %s): %s",
             a->absent ? "put-if-absent" : "put", a->rc, a->secs,
             KVS_SLOT_STALL_MS, pid, a->msg);
}

static void expect_taken(const struct claim_arg *a, uint32_t owner)
{
    if (a->rc != MPIKVS_OK || a->secs > 2.0)
        fail("claims: %s behind the claim of exited pid %u: %d after %.2f "
             "s (want MPIKVS_OK at once): %s",
             a->absent ? "put-if-absent" : "put", (unsigned)owner, a->rc,
             a->secs, a->msg);
}

/* A child that exits at once: reaped (kill says ESRCH) or not (a
 * zombie, until the caller reaps it). */
static pid_t exited_child(bool reap)
{
    pid_t pid;

    fflush(stdout);   /* not printed again by the child */
    pid = fork();

    if (pid == 0)
        _exit(0);
    if (pid < 0) {
        perror("tsan_slots: fork");
        exit(1);
    }
    if (reap) {
        waitpid(pid, NULL, 0);
        return pid;
    }
    /* until its state says Z: bounded, 10 s of 1 ms naps */
    for (int i = 0; i < 10000; i++) {
        char path[32], st[512] = "";
        FILE *f;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if ((f = fopen(path, "r"))) {
            size_t n = fread(st, 1, sizeof(st) - 1, f);
            st[n] = '\0';
            fclose(f);
        }
        const char *paren = strrchr(st, ')');
        if (paren && paren[1] == ' ' && paren[2] == 'Z')
            return pid;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    fail("claims: child %d never became a zombie", (int)pid);
    return pid;
}

static void claims_phase(void)
{
    struct table t;
    pid_t reaped, zombie;

    table_make(&t, 1u << 16, 4);
    claimed_calls(&t, 0, (uint32_t)getpid(), expect_stalled);
    reaped = exited_child(true);
    claimed_calls(&t, 2, (uint32_t)reaped, expect_taken);
    zombie = exited_child(false);
    claimed_calls(&t, 4, (uint32_t)zombie, expect_taken);
    waitpid(zombie, NULL, 0);
    printf("tsan_slots (claims): a live owner's claim stalls a put and a "
           "put-if-absent for %u ms, those of exited pid %d (reaped) and "
           "%d (a zombie) are taken over\n",
           KVS_SLOT_STALL_MS, (int)reaped, (int)zombie);
    free(t.region);
}

int main(int argc, char **argv)
{
    uint64_t ops = 200000;
    unsigned rounds = 100;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            ops = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = (unsigned)strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: %s [--ops N] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    pthread_barrier_init(&barrier, NULL, THREADS);
    hot_phase(ops);
    once_phase(rounds);
    claims_phase();
    pthread_barrier_destroy(&barrier);
    printf("tsan_slots: %lu failures\n",
           (unsigned long)atomic_load(&failures));
    return atomic_load(&failures) ? 1 : 0;
}
