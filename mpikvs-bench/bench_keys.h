/*
 * bench_keys.h - the keys, values and random numbers of "mpikvs-bench
 * dht" (bench_dht.c) and of its --tier mode (bench_dht_tier.c).
 *
 * Every key is made from one 64-bit number: ten 64-bit words mixed from
 * it (80 bytes, the first word a bijection of the number, so different
 * numbers give different keys), and its value is thirteen words mixed
 * from the key's words (104 bytes), so a reader that knows the key checks
 * every value it gets.  Random numbers are pure functions of (seed, rank,
 * stream, index), so any rank can make any other rank's keys, and a run
 * is the same run again with the same seed.
 */
#ifndef MPIKVS_CONTRIB_BENCH_KEYS_H
#define MPIKVS_CONTRIB_BENCH_KEYS_H

#include <stdint.h>

#define BENCH_KEY_WORDS   10u
#define BENCH_VALUE_WORDS 13u
#define BENCH_KEY_LEN     (BENCH_KEY_WORDS * 8u)     /* 80, the POET key */
#define BENCH_VALUE_LEN   (BENCH_VALUE_WORDS * 8u)   /* 104, its value */
#define BENCH_ZIPF_N      UINT64_C(712500)           /* the paper's keys */
#define BENCH_ZIPF_THETA  0.99

/* Random streams of a rank: stream_base mixes rank * 4 + stream, so there
 * are four per rank, 0 to 3, and each (rank, stream) is its own sequence.
 * Do not add a fifth: it would be stream 0 of the next rank. */
enum bench_stream {
    BENCH_STREAM_TIER = 0,     /* dht --tier: the epochs' zipf reads */
    BENCH_STREAM_PAIRS,        /* dht: the pairs written and read back */
    BENCH_STREAM_MIX_OP,       /* dht: put or get, in the mixed phase */
    BENCH_STREAM_MIX_KEY       /* dht: which key, in the mixed phase */
};

#define BENCH_GOLDEN UINT64_C(0x9e3779b97f4a7c15)

/* The splitmix64 finalizer: a bijection of 64-bit words. */
static inline uint64_t bench_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline uint64_t bench_stream_base(uint64_t seed, uint64_t rank,
                                         enum bench_stream s)
{
    return bench_mix64(bench_mix64(seed ^ UINT64_C(0x6a09e667f3bcc909)) +
                       bench_mix64(rank * 4u + (uint64_t)s) * BENCH_GOLDEN);
}

/* Draw i of a stream. */
static inline uint64_t bench_draw(uint64_t base, uint64_t i)
{
    return bench_mix64(base + (i + 1) * BENCH_GOLDEN);
}

/* x in [0, n), without the bias of x % n worth mentioning. */
static inline uint64_t bench_below(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/* Zipf over 1..n with exponent theta (not 1), sampled exactly by
 * rejection-inversion (Hoermann and Derflinger 1996). */
struct bench_zipf {
    double n, theta, h_x1, h_n, accept;
};

void bench_zipf_init(struct bench_zipf *z, uint64_t n, double theta);

/* A zipf-distributed number in 1..n (1 the most frequent) from the
 * random word d; a rejected try (rare) takes the next word derived from
 * d, so the result is a function of d. */
uint64_t bench_zipf_next(const struct bench_zipf *z, uint64_t d);

/* The key of number x: BENCH_KEY_LEN bytes. */
void bench_make_key(uint64_t x, unsigned char *key);

/* The value of a key: BENCH_VALUE_LEN bytes from the key's own bytes. */
void bench_make_value(const unsigned char *key, unsigned char *value);

#endif /* MPIKVS_CONTRIB_BENCH_KEYS_H */
