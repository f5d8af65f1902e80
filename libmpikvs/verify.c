/*
 * verify.c - sampled accuracy: the verify hits a handle returned and has
 * not had reported yet, and mpikvs_verify_report, which records the
 * error the program measured in the rank's statistics.
 *
 * The outstanding verify hits are a set of 128-bit key hashes, open
 * addressing with linear probing at most half full.  It remembers the
 * latest VERIFY_REMEMBERED verify hits (a ring of them in the order they
 * came): an older one is forgotten, and reporting it is MPIKVS_ERR_INVAL
 * like reporting a key that was never one.  A bound keeps a program that
 * never reports at a few MiB, where growing would take all the memory.
 * Allocated at the first verify hit: a handle without verify hits never
 * has it.  A handle is used by one thread at a time (mpikvs(3)), so the
 * set takes no lock.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "errors.h"
#include "stats.h"
#include "verify.h"

/* Verify hits a handle remembers for their reports (mpikvs_verify_report(3)
 * says so). */
#define VERIFY_REMEMBERED 65536u
#define VERIFY_SLOTS      (2u * VERIFY_REMEMBERED)   /* a power of 2 */

struct verify_entry {
    uint64_t lo, hi;   /* the key's hash */
    uint64_t seq;      /* of its latest verify hit; 0: an empty slot */
};

struct kvs_verify_set {
    uint64_t            next;   /* the next hit's seq, from 1 */
    struct verify_entry slots[VERIFY_SLOTS];
    struct { uint64_t lo, hi; } ring[VERIFY_REMEMBERED]; /* by seq */
};

int kvs_verify_check_options(mpikvs_t *kvs, const mpikvs_options_t *opt)
{
    unsigned flags = opt->flags;

    if (opt->verify != 0 && !(opt->verify > 0 && opt->verify <= 1))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_open: options.verify %g is not a fraction "
                        "of hits in (0, 1] (0: the table's \"verify\")",
                        opt->verify);
    if (!(flags & ~(unsigned)KVS_OPEN_FLAGS_KNOWN))
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                    "mpikvs_open: options.flags 0x%x has bits 0x%x this "
                    "libmpikvs does not know (it knows MPIKVS_OPEN_VERIFY, "
                    "0x%x)",
                    flags, flags & ~(unsigned)KVS_OPEN_FLAGS_KNOWN,
                    (unsigned)MPIKVS_OPEN_VERIFY);
}

void kvs_verify_open(mpikvs_t *kvs, const mpikvs_options_t *opt)
{
    unsigned flags = opt->flags;
    double f = opt->verify > 0 ? opt->verify
               : kvs->table    ? kvs->table->verify
                               : 0.0;

    kvs->flags = flags;
    /* f is in [0, 1] (the config and the options were checked): 1 gives
     * 2^32, above every selector */
    kvs->verify_below = (flags & MPIKVS_OPEN_VERIFY) && f > 0
                            ? (uint64_t)(f * 4294967296.0)
                            : 0;
}

void kvs_verify_close(mpikvs_t *kvs)
{
    free(kvs->verify_set);
    kvs->verify_set = NULL;
}

static size_t home_of(uint64_t lo)
{
    return (size_t)(lo & (VERIFY_SLOTS - 1u));
}

/* The slot of (lo, hi), or of the empty slot that ends its probe. */
static size_t probe(const struct kvs_verify_set *s, uint64_t lo, uint64_t hi)
{
    size_t i = home_of(lo);

    while (s->slots[i].seq &&
           !(s->slots[i].lo == lo && s->slots[i].hi == hi))
        i = (i + 1) & (VERIFY_SLOTS - 1u);
    return i;
}

/* Empty slot i, moving back the entries after it whose probe crossed it
 * (no tombstones: a probe still ends at the first empty slot). */
static void remove_at(struct kvs_verify_set *s, size_t i)
{
    size_t j = i;

    for (;;) {
        j = (j + 1) & (VERIFY_SLOTS - 1u);
        if (!s->slots[j].seq)
            break;
        size_t h = home_of(s->slots[j].lo);
        /* j's entry may move to i when its home is not in (i, j] */
        bool crosses = i <= j ? (h <= i || h > j) : (h <= i && h > j);
        if (crosses) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].seq = 0;
}

/* Remember (lo, hi) as the latest verify hit; the one VERIFY_REMEMBERED
 * hits ago is forgotten unless it came again since. */
static void remember(struct kvs_verify_set *s, uint64_t lo, uint64_t hi)
{
    uint64_t seq = s->next++;
    size_t i;

    if (seq > VERIFY_REMEMBERED) {
        uint64_t old = seq - VERIFY_REMEMBERED;
        size_t r = (size_t)(old % VERIFY_REMEMBERED);
        i = probe(s, s->ring[r].lo, s->ring[r].hi);
        if (s->slots[i].seq == old)
            remove_at(s, i);
    }
    i = probe(s, lo, hi);
    s->slots[i] = (struct verify_entry){lo, hi, seq};
    s->ring[seq % VERIFY_REMEMBERED].lo = lo;
    s->ring[seq % VERIFY_REMEMBERED].hi = hi;
}

int kvs_verify_take(mpikvs_t *kvs, const struct kvs_key *k)
{
    if ((uint32_t)k->hash_hi >= kvs->verify_below)
        return MPIKVS_OK;
    if (!kvs->verify_set) {
        kvs->verify_set = calloc(1, sizeof(*kvs->verify_set));
        /* without memory for the set the hit stays a plain hit: nothing
         * the program could report would be remembered */
        if (!kvs->verify_set)
            return MPIKVS_OK;
        kvs->verify_set->next = 1;
    }
    remember(kvs->verify_set, k->hash, k->hash_hi);
    KVS_COUNT(&kvs->tab, verify_hits, 1);
    return MPIKVS_VERIFY;
}

void kvs_verify_batch(mpikvs_t *kvs, size_t n, const unsigned char *keys,
                      int *status)
{
    if (!kvs->verify_below)
        return;
    for (size_t i = 0; i < n; i++) {
        struct kvs_key k;
        if (status[i] != MPIKVS_OK)
            continue;
        kvs_key_make(kvs, keys + i * kvs->tab.key_size, &k);
        status[i] = kvs_verify_hit(kvs, &k, status[i]);
    }
}

/* Forget k as an outstanding verify hit; false if it was none. */
static bool take_report(mpikvs_t *kvs, const struct kvs_key *k)
{
    struct kvs_verify_set *s = kvs->verify_set;
    size_t i;

    if (!s)
        return false;
    i = probe(s, k->hash, k->hash_hi);
    if (!s->slots[i].seq)
        return false;
    remove_at(s, i);
    return true;
}

/* The reported error's bin (MPIKVS_STATISTICS_SURROGATE): below 1e-12,
 * 1e-9, 1e-6, 1e-3, or 1e-3 and above. */
static void count_bin(struct kvs_table *t, double error)
{
    if (error < 1e-12)
        KVS_COUNT(t, verify_below_1e_12, 1);
    else if (error < 1e-9)
        KVS_COUNT(t, verify_below_1e_9, 1);
    else if (error < 1e-6)
        KVS_COUNT(t, verify_below_1e_6, 1);
    else if (error < 1e-3)
        KVS_COUNT(t, verify_below_1e_3, 1);
    else
        KVS_COUNT(t, verify_above_1e_3, 1);
}

/* The rank's block is written by this rank only (KVS_COUNT): the sum and
 * the largest errors are read, changed and stored. */
static void record(struct kvs_table *t, double error)
{
    struct kvshm_rank_stats *s = t->stats;
    double sum = mpikvs_stat_double(s->verify_error_sum) + error;

    KVS_COUNT(t, verify_reports, 1);
    __atomic_store_n(&s->verify_error_sum, kvs_stat_bits(sum),
                     __ATOMIC_RELAXED);
    if (error > mpikvs_stat_double(s->verify_error_max))
        __atomic_store_n(&s->verify_error_max, kvs_stat_bits(error),
                         __ATOMIC_RELAXED);
    if (error > mpikvs_stat_double(s->verify_error_max_open))
        __atomic_store_n(&s->verify_error_max_open, kvs_stat_bits(error),
                         __ATOMIC_RELAXED);
    count_bin(t, error);
}

int mpikvs_verify_report(mpikvs_t *kvs, const void *key, double error)
{
    struct kvs_key k;

    if (!kvs)
        return kvs_no_handle("mpikvs_verify_report");
    if (!key)
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_verify_report: key must not be NULL");
    if (!(error >= 0) || !isfinite(error))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_verify_report: error %g is not a finite "
                        "number of 0 or more",
                        error);
    kvs_key_make(kvs, key, &k);
    if (!take_report(kvs, &k))
        return kvs_fail(kvs, MPIKVS_ERR_INVAL,
                        "mpikvs_verify_report: the key was not a verify hit "
                        "of this rank, or was reported already (a handle "
                        "remembers its latest %u verify hits until they are "
                        "reported)",
                        VERIFY_REMEMBERED);
    record(&kvs->tab, error);
    return MPIKVS_OK;
}
