/*
 * bench_keys.c - keys, values and zipf numbers of "mpikvs-bench dht"
 * (see bench_keys.h).
 */
#include "bench_keys.h"

#include <math.h>
#include <string.h>

_Static_assert(BENCH_KEY_LEN == 80 && BENCH_VALUE_LEN == 104,
               "the paper's sizes");

static inline double unit(uint64_t x)
{
    return (double)(x >> 11) * 0x1p-53;            /* [0, 1) */
}

/* H(x) = (x^(1-theta) - 1) / (1-theta), the integral of t^-theta from
 * 1 to x, and its inverse; expm1 and log1p keep the digits for theta
 * near 1. */
static inline double zipf_H(const struct bench_zipf *z, double x)
{
    double q = 1.0 - z->theta;
    return expm1(q * log(x)) / q;
}

static inline double zipf_H_inv(const struct bench_zipf *z, double y)
{
    double q = 1.0 - z->theta, t = q * y;
    return exp(log1p(t < -1.0 ? -1.0 : t) / q);
}

/* Invert the integral H of x^-theta, round to the nearest integer k, and
 * accept k unless the point fell outside the area of k's own weight. */
void bench_zipf_init(struct bench_zipf *z, uint64_t n, double theta)
{
    z->n = (double)n;
    z->theta = theta;
    z->h_x1 = zipf_H(z, 1.5) - 1.0;                /* minus h(1) = 1 */
    z->h_n = zipf_H(z, (double)n + 0.5);
    z->accept = 2.0 - zipf_H_inv(z, zipf_H(z, 2.5) - pow(2.0, -theta));
}

uint64_t bench_zipf_next(const struct bench_zipf *z, uint64_t d)
{
    for (uint64_t t = 0;; t++) {
        uint64_t w = t ? bench_mix64(d + t * UINT64_C(0xd1b54a32d192ed03))
                       : d;
        double u01 = unit(w);
        double u = z->h_n + u01 * (z->h_x1 - z->h_n);
        double x = zipf_H_inv(z, u);
        double k = floor(x + 0.5);
        if (k < 1.0)
            k = 1.0;
        else if (k > z->n)
            k = z->n;
        if (k - x <= z->accept ||
            u >= zipf_H(z, k + 0.5) - exp(-z->theta * log(k)))
            return (uint64_t)k;
    }
}

void bench_make_key(uint64_t x, unsigned char *key)
{
    uint64_t w[BENCH_KEY_WORDS];

    w[0] = bench_mix64(x ^ UINT64_C(0x3c6ef372fe94f82b));
    for (unsigned k = 1; k < BENCH_KEY_WORDS; k++)
        w[k] = bench_mix64(x + k * UINT64_C(0xbb67ae8584caa73b));
    memcpy(key, w, BENCH_KEY_LEN);
}

void bench_make_value(const unsigned char *key, unsigned char *value)
{
    uint64_t kw[BENCH_KEY_WORDS], vw[BENCH_VALUE_WORDS];

    memcpy(kw, key, BENCH_KEY_LEN);
    for (unsigned k = 0; k < BENCH_VALUE_WORDS; k++)
        vw[k] = bench_mix64(kw[k % BENCH_KEY_WORDS] ^
                            (k + 1) * UINT64_C(0xa54ff53a5f1d36f1));
    memcpy(value, vw, BENCH_VALUE_LEN);
}
