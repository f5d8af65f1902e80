/*
 * history.c - record what every rank did to the cache and saw, for
 * tests/history/check-history.py to check against mpikvs's contract.
 *
 *   history MODE DIR [--epochs E] [--ops N] [--tier off|always|user]
 *           [--value-size B] [--hot-keys K] [--hot PERCENT] [--seed S]
 *
 * Each rank writes DIR/rank-<r>.hist, one line per operation: its kind,
 * the epoch it ran in (fences passed before it), call and return times,
 * its result and what it put or saw.  Times are CLOCK_MONOTONIC in ns:
 * comparable between ranks only because every rank runs on one host (the
 * header names the host, and the checker refuses histories of several).
 *
 * A value describes itself: key id, writer rank, kind (put or
 * put-if-absent), the writer's sequence number, bytes derived from those,
 * and an FNV-1a checksum of the rest; the checker recomputes all of it,
 * so a torn value, a mix of two, or another key's is seen as such.
 *
 * Per epoch every rank runs put-if-absent on the epoch's new keys (all
 * ranks race for each), then N operations drawn at random: single puts of
 * its own keys (one writer each: "latest" is defined) and of a few hot
 * keys every rank writes, single gets, put and get batches, started
 * batches (a started put batch is waited for after a get), counter adds
 * (counter 0) and read-then-CAS increments (counter 1); then
 * mpikvs_fence (in "user" caching every other epoch first invalidates
 * the node tier).  With --hot, that share of the operations are single
 * puts and gets of the hot keys only.  No other
 * synchronization between ranks: the fence is what is checked.  After the
 * last fence every rank reads every key and the counters once.
 *
 * The operations are drawn from --seed (default: from the time and pid;
 * the header records it): a seed repeats a run's operations, not the
 * interleaving of its ranks.
 *
 * Built from the library's sources: it records each key's home node (the
 * node tier's rule depends on it) and each rank's node.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"     /* kvs->node */
#include "key.h"        /* kvs_key_make: a key's home node */
#include "mpikvs.h"
#include "mpitest.h"

#define KS          16u
#define VS_MAX      8192u
#define OWN_KEYS    24u     /* per rank, written by it only */
#define PIA_KEYS    4u      /* per epoch, raced for by every rank */
#define BATCH       6u
#define CTR_ADD     0u
#define CTR_CAS     1u

/* Key ids: own keys 1..size*OWN_KEYS, then hot keys, then the
 * put-if-absent keys of each epoch. */
static unsigned rank_, size_, epochs = 6, nops = 300;
static unsigned vsize = 256;    /* value bytes: large enough that a copy
                                 * can be torn (--value-size) */
static unsigned nhot = 6;       /* written by every rank (--hot-keys) */
static unsigned hot_share;      /* % of operations on hot keys (--hot) */
static uint64_t seq_;           /* this writer's last sequence number */
static unsigned epoch_;
static FILE    *out_;
static const char *tier_ = "off";

static uint64_t hot_base(void) { return 1 + (uint64_t)size_ * OWN_KEYS; }
static uint64_t pia_base(void) { return hot_base() + nhot; }
static uint64_t nkeys_all(void)
{
    return pia_base() + (uint64_t)epochs * PIA_KEYS;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t rng_;
static uint64_t rnd(uint64_t n)
{
    rng_ = splitmix(rng_);
    return rng_ % n;
}

static void make_key(uint64_t id, unsigned char *key)
{
    uint64_t w = splitmix(id);

    memcpy(key, &id, 8);
    memcpy(key + 8, &w, 8);
}

/* The value layout the checker recomputes (check-history.py, value_of). */
static void make_value(uint64_t id, uint32_t writer, uint32_t kind,
                       uint64_t seq, unsigned char *v)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    memcpy(v, &id, 8);
    memcpy(v + 8, &writer, 4);
    memcpy(v + 12, &kind, 4);
    memcpy(v + 16, &seq, 8);
    for (unsigned off = 24, i = 0; off < vsize - 8; off += 8, i++) {
        uint64_t w = splitmix(id * 0x100000001b3ULL ^ ((uint64_t)writer << 40)
                              ^ (seq << 8) ^ kind ^ ((uint64_t)i << 56));
        memcpy(v + off, &w, 8);
    }
    for (unsigned i = 0; i < vsize - 8; i++) {
        h ^= v[i];
        h *= 0x100000001b3ULL;
    }
    memcpy(v + vsize - 8, &h, 8);
}

static void put_hex(const unsigned char *v)
{
    static const char digits[] = "0123456789abcdef";
    char buf[2 * VS_MAX + 1];

    for (unsigned i = 0; i < vsize; i++) {
        buf[2 * i] = digits[v[i] >> 4];
        buf[2 * i + 1] = digits[v[i] & 15];
    }
    buf[2 * vsize] = 0;
    fputs(buf, out_);
}

static void line_head(const char *kind, uint64_t t0, uint64_t t1, int rc)
{
    fprintf(out_, "%s %u %llu %llu %d", kind, epoch_, (unsigned long long)t0,
            (unsigned long long)t1, rc);
}

static void fail_rc(const char *what, int rc, mpikvs_t *kvs)
{
    EXPECT(rc == MPIKVS_OK || rc == MPIKVS_MISS || rc == MPIKVS_PRESENT,
           "%s: %d (%s): %s", what, rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
}

/* put KEY SEQ */
static void do_put(mpikvs_t *kvs, uint64_t id)
{
    unsigned char key[KS], val[VS_MAX];
    uint64_t t0, t1;
    int rc;

    make_key(id, key);
    make_value(id, rank_, 0, ++seq_, val);
    t0 = now_ns();
    rc = mpikvs_put(kvs, key, val);
    t1 = now_ns();
    fail_rc("put", rc, kvs);
    line_head("put", t0, t1, rc);
    fprintf(out_, " %llu %llu\n", (unsigned long long)id,
            (unsigned long long)seq_);
}

/* get KEY VALUE|- */
static void do_get(mpikvs_t *kvs, uint64_t id)
{
    unsigned char key[KS], val[VS_MAX];
    uint64_t t0, t1;
    int rc;

    make_key(id, key);
    t0 = now_ns();
    rc = mpikvs_get(kvs, key, val);
    t1 = now_ns();
    fail_rc("get", rc, kvs);
    line_head("get", t0, t1, rc);
    fprintf(out_, " %llu ", (unsigned long long)id);
    if (rc == MPIKVS_OK)
        put_hex(val);
    else
        fputc('-', out_);
    fputc('\n', out_);
}

/* pia KEY SEQ PRESENT|-: rc 0 won, 2 (MPIKVS_PRESENT) lost */
static void do_pia(mpikvs_t *kvs, uint64_t id)
{
    unsigned char key[KS], val[VS_MAX], present[VS_MAX];
    uint64_t t0, t1;
    int rc;

    make_key(id, key);
    make_value(id, rank_, 1, ++seq_, val);
    t0 = now_ns();
    rc = mpikvs_put_if_absent(kvs, key, val, present);
    t1 = now_ns();
    fail_rc("put_if_absent", rc, kvs);
    line_head("pia", t0, t1, rc);
    fprintf(out_, " %llu %llu ", (unsigned long long)id,
            (unsigned long long)seq_);
    if (rc == MPIKVS_PRESENT)
        put_hex(present);
    else
        fputc('-', out_);
    fputc('\n', out_);
}

/* An own key not in ids[0..n): a batch puts a key once, so that its
 * sequence numbers stay in program order. */
static uint64_t own_key_not_in(const uint64_t *ids, unsigned n)
{
    for (;;) {
        uint64_t id = 1 + rank_ + (uint64_t)size_ * rnd(OWN_KEYS);
        unsigned i;

        for (i = 0; i < n && ids[i] != id; i++)
            ;
        if (i == n)
            return id;
    }
}

static uint64_t any_key(void)
{
    /* own keys of every rank, hot keys, and the put-if-absent keys of the
     * epochs so far */
    uint64_t n = pia_base() - 1 + (uint64_t)(epoch_ + 1) * PIA_KEYS;

    return 1 + rnd(n);
}

/* pb|pbs KEY:SEQ...: a put batch, blocking or started (t0 its start, t1
 * the return of its wait) */
static void do_put_batch(mpikvs_t *kvs, bool started)
{
    unsigned char keys[BATCH * KS], vals[BATCH * VS_MAX];
    uint64_t ids[BATCH], seqs[BATCH], t0, t1;
    mpikvs_request_t req;
    int rc;

    for (unsigned i = 0; i < BATCH; i++) {
        ids[i] = own_key_not_in(ids, i);
        seqs[i] = ++seq_;
        make_key(ids[i], keys + i * KS);
        make_value(ids[i], rank_, 0, seqs[i], vals + i * vsize);
    }
    t0 = now_ns();
    if (!started) {
        rc = mpikvs_put_batch(kvs, BATCH, keys, vals);
    } else {
        rc = mpikvs_put_batch_start(kvs, BATCH, keys, vals, &req);
        if (rc == MPIKVS_OK) {
            /* the caller works meanwhile: a get (recorded: its hit may go
             * into the node tier) */
            do_get(kvs, any_key());
            rc = mpikvs_wait(kvs, &req);
        }
    }
    t1 = now_ns();
    fail_rc(started ? "put_batch_start/wait" : "put_batch", rc, kvs);
    line_head(started ? "pbs" : "pb", t0, t1, rc);
    for (unsigned i = 0; i < BATCH; i++)
        fprintf(out_, " %llu:%llu", (unsigned long long)ids[i],
                (unsigned long long)seqs[i]);
    fputc('\n', out_);
}

/* gb|gbs KEY:VALUE|-... */
static void do_get_batch(mpikvs_t *kvs, bool started)
{
    unsigned char keys[BATCH * KS], vals[BATCH * VS_MAX];
    uint64_t ids[BATCH], t0, t1;
    int status[BATCH], rc;
    mpikvs_request_t req;

    for (unsigned i = 0; i < BATCH; i++) {
        ids[i] = any_key();
        make_key(ids[i], keys + i * KS);
    }
    t0 = now_ns();
    if (!started) {
        rc = mpikvs_get_batch(kvs, BATCH, keys, vals, status);
    } else {
        rc = mpikvs_get_batch_start(kvs, BATCH, keys, vals, status, &req);
        if (rc == MPIKVS_OK)
            rc = mpikvs_wait(kvs, &req);
    }
    t1 = now_ns();
    fail_rc(started ? "get_batch_start/wait" : "get_batch", rc, kvs);
    line_head(started ? "gbs" : "gb", t0, t1, rc);
    for (unsigned i = 0; i < BATCH; i++) {
        fprintf(out_, " %llu:", (unsigned long long)ids[i]);
        if (rc == MPIKVS_OK && status[i] == MPIKVS_OK)
            put_hex(vals + i * vsize);
        else
            fputc('-', out_);
    }
    fputc('\n', out_);
}

/* add COUNTER ADD BEFORE */
static uint64_t do_add(mpikvs_t *kvs, unsigned ctr, int64_t add)
{
    uint64_t before = 0, t0, t1;
    int rc;

    t0 = now_ns();
    rc = mpikvs_counter_add(kvs, ctr, add, &before);
    t1 = now_ns();
    fail_rc("counter_add", rc, kvs);
    line_head("add", t0, t1, rc);
    fprintf(out_, " %u %lld %llu\n", ctr, (long long)add,
            (unsigned long long)before);
    return before;
}

/* cas COUNTER EXPECT DESIRED SEEN: an increment by read, then CAS */
static void do_cas(mpikvs_t *kvs)
{
    uint64_t expect = do_add(kvs, CTR_CAS, 0), seen = 0, t0, t1;
    int rc;

    t0 = now_ns();
    rc = mpikvs_counter_cas(kvs, CTR_CAS, expect, expect + 1, &seen);
    t1 = now_ns();
    fail_rc("counter_cas", rc, kvs);
    line_head("cas", t0, t1, rc);
    fprintf(out_, " %u %llu %llu %llu\n", CTR_CAS,
            (unsigned long long)expect, (unsigned long long)(expect + 1),
            (unsigned long long)seen);
}

static void do_fence(mpikvs_t *kvs)
{
    uint64_t t0, t1;
    int rc;

    t0 = now_ns();
    rc = mpikvs_fence(kvs);
    t1 = now_ns();
    fail_rc("fence", rc, kvs);
    line_head("fence", t0, t1, rc);
    fputc('\n', out_);
    epoch_++;
}

static void do_invalidate(mpikvs_t *kvs)
{
    uint64_t t0, t1;
    int rc;

    t0 = now_ns();
    rc = mpikvs_tier_invalidate(kvs);
    t1 = now_ns();
    fail_rc("tier_invalidate", rc, kvs);
    line_head("inval", t0, t1, rc);
    fputc('\n', out_);
}

static void one_op(mpikvs_t *kvs)
{
    unsigned r = (unsigned)rnd(100);

    /* --hot: readers and writers of the same few slots at once, where a
     * copy can meet a put in the middle */
    if (rnd(100) < hot_share) {
        if (r < 50)
            do_put(kvs, hot_base() + rnd(nhot));
        else
            do_get(kvs, hot_base() + rnd(nhot));
        return;
    }
    if (r < 30)
        do_put(kvs, 1 + rank_ + (uint64_t)size_ * rnd(OWN_KEYS));
    else if (r < 40)
        do_put(kvs, hot_base() + rnd(nhot));
    else if (r < 75)
        do_get(kvs, any_key());
    else if (r < 80)
        do_put_batch(kvs, false);
    else if (r < 85)
        do_get_batch(kvs, false);
    else if (r < 88)
        do_put_batch(kvs, true);
    else if (r < 92)
        do_get_batch(kvs, true);
    else if (r < 96)
        do_add(kvs, CTR_ADD, 1 + (int64_t)rnd(5));
    else
        do_cas(kvs);
}

static mpikvs_t *open_table(const char *mode, const char *dir)
{
    mpikvs_options_t o = { .size = sizeof(mpikvs_options_t),
                           .key_size = KS, .value_size = vsize,
                           .size_per_node = (vsize <= 256 ? 4u : 16u) << 20,
                           .mode = mode };
    char path[512];
    mpikvs_t *kvs = NULL;
    int rc, ok, all;

    if (strcmp(tier_, "off") != 0) {
        /* the node tier comes from a config only */
        FILE *f;

        snprintf(path, sizeof path, "%s/config-%u.json", dir, rank_);
        f = fopen(path, "w");
        if (!f ||
            fprintf(f,
                    "{ \"version\": 1, \"tables\": { \"h\": {\n"
                    "  \"size\": \"4M\", \"mode\": \"%s\",\n"
                    "  \"key\": { \"key_size\": %u },\n"
                    "  \"value\": { \"value_size\": %u },\n"
                    "  \"tier\": { \"enabled\": true, \"size\": \"25%%\",\n"
                    "            \"caching\": \"%s\" } } } }\n",
                    mode, KS, vsize, tier_) < 0 ||
            fclose(f) != 0)
            mt_abort("cannot write the table's config");
        o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
        o.config = path;
    }
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    EXPECT(rc == MPIKVS_OK, "open (%s, tier %s): %d (%s): %s", mode, tier_,
           rc, mpikvs_strerror(rc), mpikvs_last_error(NULL));
    ok = rc == MPIKVS_OK;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        mt_abort("mpikvs_open failed somewhere");
    if (strcmp(tier_, "off") != 0)
        unlink(path);
    return kvs;
}

static void usage(void)
{
    fprintf(stderr, "usage: history MODE DIR [--epochs E] [--ops N] "
                    "[--tier off|always|user] [--value-size B (64..%u, "
                    "a multiple of 8)] [--hot-keys K] [--hot PERCENT] "
                    "[--seed S]\n",
            VS_MAX);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *mode, *dir;
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    char path[512], host[256] = "?";
    mpikvs_t *kvs;
    int r, s, status;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    if (argc < 3)
        usage();
    mode = argv[1];
    dir = argv[2];
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--epochs") == 0)
            epochs = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--ops") == 0)
            nops = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--tier") == 0)
            tier_ = argv[i + 1];
        else if (strcmp(argv[i], "--value-size") == 0)
            vsize = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--hot-keys") == 0)
            nhot = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--hot") == 0)
            hot_share = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else
            usage();
    }
    if (vsize < 64 || vsize > VS_MAX || vsize % 8 || nhot < 1 ||
        hot_share > 100)
        usage();
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    rank_ = (unsigned)r;
    size_ = (unsigned)s;
    /* one seed for the job (rank 0's), each rank's stream from it */
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    rng_ = splitmix(seed + rank_ * 7919u);
    gethostname(host, sizeof host);

    mt_phase("open");
    kvs = open_table(mode, dir);
    snprintf(path, sizeof path, "%s/rank-%u.hist", dir, rank_);
    out_ = fopen(path, "w");
    if (!out_)
        mt_abort("cannot create the history file");
    /* the header: what the checker needs to know of the run */
    fprintf(out_, "history 1\nhost %s\nclock monotonic\nrank %u\nsize %u\n"
                  "node %u\nnodes %u\nmode %s\ntransport %s\ntier %s\n"
                  "value_size %u\nown_keys %u\nhot_keys %u\nseed %llu\n",
            host, rank_, size_, kvs->node, kvs->nnodes, mode,
            mpikvs_transport(kvs), tier_, vsize, OWN_KEYS, nhot,
            (unsigned long long)seed);
    if (rank_ == 0)
        for (uint64_t id = 1; id < nkeys_all(); id++) {
            /* kvs_key_make hashes kvs->tab.key_size bytes, which the
             * compiler cannot bound: room for its widest read */
            unsigned char key[128] = { 0 };
            struct kvs_key k;

            make_key(id, key);
            kvs_key_make(kvs, key, &k);
            fprintf(out_, "home %llu %u\n", (unsigned long long)id, k.node);
        }

    for (epoch_ = 0; epoch_ < epochs;) {
        mt_phase("put-if-absent");
        for (unsigned i = 0; i < PIA_KEYS; i++)
            do_pia(kvs, pia_base() + (uint64_t)epoch_ * PIA_KEYS
                            + (i + rank_) % PIA_KEYS);
        mt_phase("operations");
        for (unsigned i = 0; i < nops; i++)
            one_op(kvs);
        mt_phase("fence");
        /* user caching: every other epoch starts with an empty tier */
        if (strcmp(tier_, "user") == 0 && epoch_ % 2 == 1)
            do_invalidate(kvs);
        do_fence(kvs);
    }
    /* after the last fence: every key and both counters once */
    mt_phase("final reads");
    epoch_ = epochs;
    for (uint64_t id = 1; id < nkeys_all(); id++)
        do_get(kvs, id);
    do_add(kvs, CTR_ADD, 0);
    do_add(kvs, CTR_CAS, 0);
    fprintf(out_, "end\n");
    EXPECT(fclose(out_) == 0, "writing %s: %s", path, strerror(errno));

    mt_phase("close");
    r = mpikvs_close(&kvs);
    EXPECT(r == MPIKVS_OK, "close: %d (%s)", r, mpikvs_strerror(r));
    status = mt_finish();
    MPI_Finalize();
    return status;
}
