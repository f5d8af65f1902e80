/*
 * check_round.c - canonical keys from doubles (common/round.h).
 *
 * The reference for every rounding is glibc's printf("%.*e"), which rounds
 * the double's exact value to nearest with ties to even: the tests parse
 * its digits and exponent and demand the same from kvshm_round_decimal,
 * on chosen edges and on a million random doubles.
 *
 * MPIKVS_TEST_ROUND_COUNT sets the number of random doubles of the
 * property tests (default 1000000, at least 1000); MPIKVS_TEST_ROUND_SEED
 * their seed (default 1).  A failure names both, so it can be replayed.
 */
#include <check.h>
#include <fenv.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "round.h"

#define COUNT_DEFAULT 1000000u
#define COUNT_MIN     1000u

static uint64_t count = COUNT_DEFAULT;
static uint64_t seed = 1;

/* ---- the reference ---------------------------------------------------- */

/* x to d digits by glibc's %.*e (the test runs in the C locale). */
static struct kvshm_decimal ref_round(double x, unsigned d, double zero_below)
{
    struct kvshm_decimal r = {.zero = true};
    char buf[64], *p = buf;

    if (x == 0.0 || fabs(x) < zero_below)
        return r;
    snprintf(buf, sizeof buf, "%.*e", (int)d - 1, fabs(x));
    r.zero = false;
    r.negative = signbit(x) != 0;
    for (; *p != 'e'; p++)
        if (*p != '.')
            r.mantissa = r.mantissa * 10 + (uint64_t)(*p - '0');
    r.exponent = (int32_t)strtol(p + 1, NULL, 10);
    return r;
}

static bool same_decimal(const struct kvshm_decimal *a,
                         const struct kvshm_decimal *b)
{
    if (a->zero || b->zero)
        return a->zero == b->zero;
    return a->negative == b->negative && a->mantissa == b->mantissa &&
           a->exponent == b->exponent;
}

static const char *show(const struct kvshm_decimal *d, char *buf, size_t len)
{
    if (d->zero)
        snprintf(buf, len, "zero");
    else
        snprintf(buf, len, "%s%" PRIu64 " e%" PRId32, d->negative ? "-" : "+",
                 d->mantissa, d->exponent);
    return buf;
}

/* Round x and demand exactly (negative, m, e). */
static void expect_round(double x, unsigned d, double zero_below,
                         bool negative, uint64_t m, int e)
{
    struct kvshm_decimal got;
    char s[64];
    int rc = kvshm_round_decimal(x, d, zero_below, &got);

    ck_assert_msg(rc == MPIKVS_OK, "round(%.17g, %u digits): rc %d, expected "
                  "OK", x, d, rc);
    ck_assert_msg(!got.zero && got.negative == negative &&
                  got.mantissa == m && got.exponent == e,
                  "round(%.17g, %u digits, zero_below %g) gave %s, expected "
                  "%s%" PRIu64 " e%d", x, d, zero_below,
                  show(&got, s, sizeof s), negative ? "-" : "+", m, e);
}

static void expect_zero(double x, unsigned d, double zero_below)
{
    struct kvshm_decimal got;
    char s[64];
    int rc = kvshm_round_decimal(x, d, zero_below, &got);

    ck_assert_msg(rc == MPIKVS_OK, "round(%.17g, %u digits, zero_below %g): "
                  "rc %d, expected OK", x, d, zero_below, rc);
    ck_assert_msg(got.zero && !got.negative,
                  "round(%.17g, %u digits, zero_below %g) gave %s, expected "
                  "zero", x, d, zero_below, show(&got, s, sizeof s));
}

/* Round x and demand what the reference says. */
static void expect_ref(double x, unsigned d, double zero_below)
{
    struct kvshm_decimal got, want = ref_round(x, d, zero_below);
    char s1[64], s2[64];
    int rc = kvshm_round_decimal(x, d, zero_below, &got);

    ck_assert_msg(rc == MPIKVS_OK && same_decimal(&got, &want),
                  "round(%.17g = %a, %u digits, zero_below %g): rc %d, got "
                  "%s, printf says %s", x, x, d, zero_below, rc,
                  show(&got, s1, sizeof s1), show(&want, s2, sizeof s2));
}

static void hex(const unsigned char *p, size_t n, char *buf)
{
    for (size_t i = 0; i < n; i++)
        sprintf(buf + 2 * i, "%02x", p[i]);
    buf[2 * n] = '\0';
}

/* ---- random doubles ------------------------------------------------- */

struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t rng_below(struct rng *r, uint64_t n)
{
    return rng_next(r) % n;
}

static double rng_unit(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

static double step(double x, int steps)
{
    for (; steps > 0; steps--)
        x = nextafter(x, INFINITY);
    for (; steps < 0; steps++)
        x = nextafter(x, 0.0);
    return x;
}

/* A positive double from one of the hard places, or any finite double:
 *   0: a random bit pattern (normal or subnormal);
 *   1: near a power of ten, a few units in the last place away;
 *   2: near a decimal of d + 1 digits ending in 5 (a tie for d digits);
 *   3: near (10^d - 0.5) 10^k, where the carry starts;
 *   4: a realistic value, 10^U(-15, 5). */
static double random_double(struct rng *r, unsigned d)
{
    char buf[64];
    double x;

    switch (rng_below(r, 5)) {
    case 0:
        do {
            uint64_t bits = rng_next(r) & ~(UINT64_C(1) << 63);
            memcpy(&x, &bits, sizeof x);
        } while (!isfinite(x) || x == 0.0);
        return x;
    case 1:
        snprintf(buf, sizeof buf, "1e%d", (int)rng_below(r, 631) - 323);
        x = strtod(buf, NULL);
        return step(x, (int)rng_below(r, 17) - 8);
    case 2: {
        uint64_t m = rng_below(r, 9) + 1;
        for (unsigned i = 1; i < d; i++)
            m = m * 10 + rng_below(r, 10);
        snprintf(buf, sizeof buf, "%" PRIu64 "5e%d", m,
                 (int)rng_below(r, 620) - 320 - (int)d);
        x = strtod(buf, NULL);
        x = step(x, (int)rng_below(r, 7) - 3);
        break;
    }
    case 3: {
        /* d nines and a 5, e.g. 99995 for d = 4 */
        size_t n = 0;
        for (unsigned i = 0; i < d; i++)
            buf[n++] = '9';
        n += (size_t)snprintf(buf + n, sizeof buf - n, "5e%d",
                              (int)rng_below(r, 620) - 320 - (int)d);
        x = strtod(buf, NULL);
        x = step(x, (int)rng_below(r, 7) - 3);
        break;
    }
    default:
        x = pow(10.0, -15.0 + 20.0 * rng_unit(r));
        break;
    }
    if (!isfinite(x) || x == 0.0)
        x = DBL_TRUE_MIN;
    return x;
}

/* ---- edges ------------------------------------------------------------ */

START_TEST(ties_round_half_even_on_the_exact_value)
{
    expect_round(0.125, 2, 0, false, 12, -1);      /* exact tie: 12 even */
    expect_round(0.375, 2, 0, false, 38, -1);      /* exact tie: 38 even */
    expect_round(2.5, 1, 0, false, 2, 0);
    expect_round(3.5, 1, 0, false, 4, 0);
    expect_round(0.5, 1, 0, false, 5, -1);
    expect_round(12.5, 2, 0, false, 12, 1);
    expect_round(13.5, 2, 0, false, 14, 1);
    expect_round(1.5, 1, 0, false, 2, 0);
    expect_round(0.25, 1, 0, false, 2, -1);
    /* the double 0.15 is 0.1499999999999999944...: below the tie */
    expect_round(0.15, 1, 0, false, 1, -1);
    /* the double 0.35 is 0.34999999999999997779...: below */
    expect_round(0.35, 1, 0, false, 3, -1);
    /* the double 2.675 is 2.67499999999999982236431605997495353221893310546875 */
    expect_round(2.675, 3, 0, false, 267, 0);
    /* 1e23 is 99999999999999991611392: to 16 digits 9999999999999999 */
    expect_round(1e23, 16, 0, false, 9999999999999999u, 22);
    expect_round(1e23, 15, 0, false, 100000000000000u, 23);
    /* 2^-1 .. 2^-10 have exact decimal expansions: real ties */
    expect_round(0x1p-10, 3, 0, false, 977, -4);   /* 9.765625e-4 */
    expect_round(0x1p-10, 6, 0, false, 976562, -4);
    expect_round(0x1p-10, 5, 0, false, 97656, -4);
    expect_round(5e-324, 1, 0, false, 5, -324);
    /* one unit either side of an exact tie goes its own way */
    expect_round(nextafter(2.5, 3), 1, 0, false, 3, 0);
    expect_round(nextafter(2.5, 2), 1, 0, false, 2, 0);
    expect_round(nextafter(0.125, 1), 2, 0, false, 13, -1);
    for (unsigned d = 1; d <= 17; d++) {
        expect_ref(0.125, d, 0);
        expect_ref(2.5, d, 0);
        expect_ref(0.15, d, 0);
        expect_ref(1.0 / 3.0, d, 0);
        expect_ref(2.0 / 3.0, d, 0);
    }
}
END_TEST

START_TEST(carry_into_the_next_decade)
{
    expect_round(9.9996, 4, 0, false, 1000, 1);
    expect_round(9.9994, 4, 0, false, 9999, 0);
    expect_round(9.99999999, 8, 0, false, 10000000, 1);
    expect_round(9.99999999, 9, 0, false, 999999999, 0);
    expect_round(9.5, 1, 0, false, 1, 1);          /* tie, 10 is even */
    expect_round(8.5, 1, 0, false, 8, 0);
    expect_round(99.5, 2, 0, false, 10, 2);
    expect_round(999999.5, 6, 0, false, 100000, 6);
    expect_round(0.99999999999999989, 15, 0, false, 100000000000000u, 0);
    expect_round(0.99999999999999989, 16, 0, false, 9999999999999999u, -1);
    expect_round(0.99999999999999989, 17, 0, false, 99999999999999989u, -1);
    expect_round(nextafter(1.0, 0), 17, 0, false, 99999999999999989u, -1);
    expect_round(-9.9996e-300, 4, 0, true, 1000, -299);
    expect_round(9.9996e300, 4, 0, false, 1000, 301);
    /* the decade boundary itself, and one unit below it */
    for (int k = -300; k <= 300; k += 7) {
        char buf[32];
        snprintf(buf, sizeof buf, "1e%d", k);
        double p = strtod(buf, NULL);
        for (unsigned d = 1; d <= 17; d++) {
            expect_ref(p, d, 0);
            expect_ref(nextafter(p, 0), d, 0);
            expect_ref(nextafter(p, INFINITY), d, 0);
            expect_ref(p * 0.99995, d, 0);
        }
    }
}
END_TEST

START_TEST(denormals_and_the_ends_of_the_range)
{
    expect_round(DBL_TRUE_MIN, 1, 0, false, 5, -324);
    expect_round(DBL_TRUE_MIN, 3, 0, false, 494, -324);
    expect_round(DBL_TRUE_MIN, 17, 0, false, 49406564584124654u, -324);
    expect_round(-DBL_TRUE_MIN, 17, 0, true, 49406564584124654u, -324);
    expect_round(2 * DBL_TRUE_MIN, 1, 0, false, 1, -323);
    expect_round(2.2250738585072009e-308, 17, 0, false,
                 22250738585072009u, -308);
    expect_round(2.2250738585072009e-308, 16, 0, false,
                 2225073858507201u, -308);
    expect_round(2.2250738585072009e-308, 1, 0, false, 2, -308);
    expect_round(DBL_MIN, 17, 0, false, 22250738585072014u, -308);
    expect_round(DBL_MAX, 17, 0, false, 17976931348623157u, 308);
    expect_round(DBL_MAX, 16, 0, false, 1797693134862316u, 308);
    expect_round(DBL_MAX, 15, 0, false, 179769313486232u, 308);
    expect_round(DBL_MAX, 1, 0, false, 2, 308);
    expect_round(-DBL_MAX, 1, 0, true, 2, 308);
    expect_round(1e308, 1, 0, false, 1, 308);
    expect_round(9.6e307, 1, 0, false, 1, 308);     /* carry near the top */
    for (unsigned d = 1; d <= 17; d++) {
        expect_ref(DBL_TRUE_MIN, d, 0);
        expect_ref(3 * DBL_TRUE_MIN, d, 0);
        expect_ref(1e-320, d, 0);
        expect_ref(DBL_MIN, d, 0);
        expect_ref(nextafter(DBL_MIN, 0), d, 0);
        expect_ref(DBL_MAX, d, 0);
        expect_ref(nextafter(DBL_MAX, 0), d, 0);
        expect_ref(0x1p1023, d, 0);
        expect_ref(0x1p-1022, d, 0);
    }
    /* every subnormal exponent */
    for (int b = 0; b < 52; b++) {
        double x = ldexp(1.0, -1074 + b);
        for (unsigned d = 1; d <= 17; d++) {
            expect_ref(x, d, 0);
            expect_ref(x * 1.5, d, 0);
            expect_ref(nextafter(x * 1.9, 0), d, 0);
        }
    }
}
END_TEST

START_TEST(signs_zero_and_zero_below)
{
    static const double xs[] = {1.0, 0.125, 2.5, 9.9996, 1e-300,
                                DBL_TRUE_MIN, DBL_MAX, 123456.789,
                                3.14159265358979};
    unsigned char a[16], b[16];
    struct kvshm_decimal dp, dn;

    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        for (unsigned d = 1; d <= 17; d++) {
            unsigned w = kvshm_double_width(d);
            ck_assert_int_eq(kvshm_round_decimal(xs[i], d, 0, &dp), MPIKVS_OK);
            ck_assert_int_eq(kvshm_round_decimal(-xs[i], d, 0, &dn),
                             MPIKVS_OK);
            ck_assert_msg(!dp.negative && dn.negative &&
                          dp.mantissa == dn.mantissa &&
                          dp.exponent == dn.exponent,
                          "%.17g and its negative, %u digits: %" PRIu64
                          " e%d and %s%" PRIu64 " e%d", xs[i], d, dp.mantissa,
                          dp.exponent, dn.negative ? "-" : "+", dn.mantissa,
                          dn.exponent);
            kvshm_encode_decimal(&dp, d, a);
            kvshm_encode_decimal(&dn, d, b);
            if (w == 8) {
                /* only the sign bit differs */
                b[7] ^= 0x80;
                ck_assert_msg(memcmp(a, b, 8) == 0, "%.17g, %u digits: x "
                              "and -x differ beyond the sign bit", xs[i], d);
            } else {
                /* the mantissa word is the two's complement */
                uint64_t mp = 0, mn = 0;
                for (int k = 0; k < 8; k++) {
                    mp |= (uint64_t)a[k] << (8 * k);
                    mn |= (uint64_t)b[k] << (8 * k);
                }
                ck_assert_msg(mn == (uint64_t)0 - mp &&
                              memcmp(a + 8, b + 8, 8) == 0,
                              "%.17g, %u digits: -x is not -mantissa with "
                              "the same exponent", xs[i], d);
            }
        }

    /* -0.0 and 0.0: both zero, not negative, all-zero bytes */
    for (unsigned d = 1; d <= 17; d++) {
        expect_zero(0.0, d, 0);
        expect_zero(-0.0, d, 0);
        memset(a, 0xa5, sizeof a);
        kvshm_round_decimal(-0.0, d, 0, &dn);
        kvshm_encode_decimal(&dn, d, a);
        for (unsigned k = 0; k < kvshm_double_width(d); k++)
            ck_assert_msg(a[k] == 0, "-0.0 to %u digits: byte %u is %02x, "
                          "expected all zero", d, k, a[k]);
    }

    /* |x| < zero_below is zero; |x| == zero_below is not */
    double zb = 1e-10;
    expect_zero(nextafter(zb, 0), 5, zb);
    expect_zero(-nextafter(zb, 0), 5, zb);
    expect_zero(5e-11, 5, zb);
    expect_round(zb, 5, zb, false, 10000, -10);
    expect_round(-zb, 5, zb, true, 10000, -10);
    expect_round(nextafter(zb, 1), 5, zb, false, 10000, -10);
    /* just under the threshold but rounding up to it: still zero */
    expect_zero(9.99999999e-11, 3, zb);
    /* zero_below 0 keeps the smallest subnormal */
    expect_round(DBL_TRUE_MIN, 2, 0, false, 49, -324);
    expect_zero(DBL_TRUE_MIN, 2, DBL_MIN);
    expect_round(DBL_MIN, 2, DBL_MIN, false, 22, -308);
    /* an infinite threshold makes every number zero */
    expect_zero(DBL_MAX, 6, INFINITY);
    expect_zero(-1.0, 6, INFINITY);
}
END_TEST

START_TEST(not_numbers_and_bad_arguments_are_refused)
{
    struct kvshm_decimal d = {.mantissa = 77};
    static const double bad[] = {NAN, -NAN, INFINITY, -INFINITY};

    for (size_t i = 0; i < 4; i++)
        for (unsigned dg = 1; dg <= 17; dg++) {
            int rc = kvshm_round_decimal(bad[i], dg, 0, &d);
            ck_assert_msg(rc == MPIKVS_ERR_INVAL, "round(%g, %u digits): rc "
                          "%d, expected MPIKVS_ERR_INVAL", bad[i], dg, rc);
            rc = kvshm_round_decimal(bad[i], dg, INFINITY, &d);
            ck_assert_msg(rc == MPIKVS_ERR_INVAL, "round(%g, %u digits, "
                          "zero_below inf): rc %d, expected "
                          "MPIKVS_ERR_INVAL (never zero)", bad[i], dg, rc);
        }
    static const unsigned bad_digits[] = {0, 18, 19, 100, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad_digits / sizeof bad_digits[0]; i++) {
        int rc = kvshm_round_decimal(1.0, bad_digits[i], 0, &d);
        ck_assert_msg(rc == MPIKVS_ERR_INVAL, "round(1.0, %u digits): rc %d, "
                      "expected MPIKVS_ERR_INVAL", bad_digits[i], rc);
        rc = kvshm_round_decimal(0.0, bad_digits[i], 0, &d);
        ck_assert_msg(rc == MPIKVS_ERR_INVAL, "round(0.0, %u digits): rc %d, "
                      "expected MPIKVS_ERR_INVAL", bad_digits[i], rc);
    }
    ck_assert_int_eq(kvshm_round_decimal(1.0, 5, -1.0, &d), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_round_decimal(1.0, 5, NAN, &d), MPIKVS_ERR_INVAL);
    ck_assert_msg(d.mantissa == 77, "a refused rounding wrote its output");
}
END_TEST

/* The thread's rounding mode changes neither path: the fast one has the
 * margin for it, and the slow one (printf follows the mode) is run in
 * round-to-nearest. */
START_TEST(rounding_mode_does_not_matter)
{
    static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    static const char *const mode_name[] = {"upward", "downward",
                                            "toward zero"};
    struct rng r = {seed ^ 0xfe};
    enum { N = 3000 };
    double xs[N];
    unsigned ds[N];
    struct kvshm_decimal want[N];

    for (int i = 0; i < N; i++) {
        ds[i] = 1 + (unsigned)rng_below(&r, 17);
        xs[i] = random_double(&r, ds[i]);
        if (i % 3 == 0)
            xs[i] = -xs[i];
        if (i < 40) {                  /* exact ties: the slow path */
            xs[i] = (i % 2 ? -1 : 1) * (0.125 + (i / 2));
            ds[i] = 2 + (unsigned)(i % 3);
        }
        want[i] = ref_round(xs[i], ds[i], 0);
    }
    for (size_t mi = 0; mi < 3; mi++) {
        ck_assert_int_eq(fesetround(modes[mi]), 0);
        for (int i = 0; i < N; i++) {
            struct kvshm_decimal got;
            int rc = kvshm_round_decimal(xs[i], ds[i], 0, &got);
            int now = fegetround();
            fesetround(FE_TONEAREST);
            if (rc != MPIKVS_OK || !same_decimal(&got, &want[i]) ||
                now != modes[mi]) {
                char s1[64], s2[64];
                ck_abort_msg("rounding %s: round(%.17g, %u digits): rc %d, "
                             "got %s, expected %s; mode afterwards %d",
                             mode_name[mi], xs[i], ds[i], rc,
                             show(&got, s1, sizeof s1),
                             show(&want[i], s2, sizeof s2), now);
            }
            fesetround(modes[mi]);
        }
        fesetround(FE_TONEAREST);
    }
}
END_TEST

/* ---- bytes ------------------------------------------------------------ */

START_TEST(encode_writes_the_documented_bytes)
{
    struct kvshm_decimal d;
    unsigned char out[24];
    char h[64];

    /* 1.5 to 2 digits: 15 e0 -> (0 + 400) << 53 | 15 */
    memset(out, 0xee, sizeof out);
    kvshm_round_decimal(1.5, 2, 0, &d);
    kvshm_encode_decimal(&d, 2, out);
    hex(out, 9, h);
    ck_assert_msg(strcmp(h, "0f00000000000032ee") == 0, "1.5 to 2 digits: "
                  "%s, expected 0f00000000000032 and the next byte untouched",
                  h);
    kvshm_round_decimal(-1.5, 2, 0, &d);
    kvshm_encode_decimal(&d, 2, out);
    hex(out, 8, h);
    ck_assert_msg(strcmp(h, "0f000000000000b2") == 0, "-1.5 to 2 digits: %s",
                  h);
    /* 1e-5 to 1 digit: 1 e-5 -> 395 << 53 | 1 */
    kvshm_round_decimal(1e-5, 1, 0, &d);
    kvshm_encode_decimal(&d, 1, out);
    hex(out, 8, h);
    ck_assert_msg(strcmp(h, "0100000000006031") == 0, "1e-5 to 1 digit: %s",
                  h);
    /* 15 digits: mantissa 123456789012346 = 0x7048860ddf7a */
    kvshm_round_decimal(1.23456789012345678, 15, 0, &d);
    kvshm_encode_decimal(&d, 15, out);
    hex(out, 8, h);
    ck_assert_msg(strcmp(h, "7adf0d8648700032") == 0, "1.234..., 15 digits: "
                  "%s", h);
    /* 16 digits: int64 mantissa, int64 exponent, little endian */
    memset(out, 0xee, sizeof out);
    kvshm_round_decimal(-1.5, 16, 0, &d);
    kvshm_encode_decimal(&d, 16, out);
    hex(out, 17, h);
    /* -1500000000000000 = 0xfffaabc208d64000 */
    ck_assert_msg(strcmp(h, "0040d608c2abfaff0000000000000000ee") == 0,
                  "-1.5 to 16 digits: %s", h);
    kvshm_round_decimal(0.25, 17, 0, &d);
    kvshm_encode_decimal(&d, 17, out);
    hex(out, 16, h);
    /* 25000000000000000 = 0x58d15e17628000; e = -1 */
    ck_assert_msg(strcmp(h, "008062175ed15800ffffffffffffffff") == 0,
                  "0.25 to 17 digits: %s", h);
}
END_TEST

START_TEST(decode_reads_back_what_encode_wrote)
{
    struct rng r = {seed};
    unsigned char buf[16];

    for (int i = 0; i < 20000; i++) {
        unsigned d = 1 + (unsigned)rng_below(&r, 17);
        double x = random_double(&r, d);
        struct kvshm_decimal a, b;
        char s1[64], s2[64];

        if (rng_next(&r) & 1)
            x = -x;
        if (i % 97 == 0)
            x = 0.0;
        ck_assert_int_eq(kvshm_round_decimal(x, d, 0, &a), MPIKVS_OK);
        kvshm_encode_decimal(&a, d, buf);
        int rc = kvshm_decode_decimal(buf, d, &b);
        ck_assert_msg(rc == MPIKVS_OK && same_decimal(&a, &b) &&
                      a.zero == b.zero && a.negative == b.negative,
                      "%.17g, %u digits: encoded %s, decoded rc %d %s", x, d,
                      show(&a, s1, sizeof s1), rc, show(&b, s2, sizeof s2));
    }
}
END_TEST

static void le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t narrow(uint64_t sign, int e, uint64_t m)
{
    return sign << 63 | (uint64_t)(e + KVSHM_EXP_BIAS) << 53 | m;
}

static void expect_bad_narrow(uint64_t w, unsigned d, const char *why)
{
    unsigned char b[8];
    struct kvshm_decimal out;

    le64(b, w);
    int rc = kvshm_decode_decimal(b, d, &out);
    ck_assert_msg(rc == MPIKVS_ERR_INVAL, "decoding %016" PRIx64 " (%u "
                  "digits, %s): rc %d, expected MPIKVS_ERR_INVAL", w, d, why,
                  rc);
}

static void expect_bad_wide(int64_t m, int64_t e, unsigned d,
                            const char *why)
{
    unsigned char b[16];
    struct kvshm_decimal out;

    le64(b, (uint64_t)m);
    le64(b + 8, (uint64_t)e);
    int rc = kvshm_decode_decimal(b, d, &out);
    ck_assert_msg(rc == MPIKVS_ERR_INVAL, "decoding m %" PRId64 " e %" PRId64
                  " (%u digits, %s): rc %d, expected MPIKVS_ERR_INVAL", m, e,
                  d, why, rc);
}

START_TEST(decode_refuses_bytes_no_rounding_makes)
{
    unsigned char b[16] = {0};
    struct kvshm_decimal out;

    /* the good ones first, so that the bad ones are bad for their reason */
    le64(b, narrow(0, 0, 150));
    ck_assert_int_eq(kvshm_decode_decimal(b, 3, &out), MPIKVS_OK);
    le64(b, narrow(0, 308, 18));                   /* DBL_MAX to 2 digits */
    ck_assert_int_eq(kvshm_decode_decimal(b, 2, &out), MPIKVS_OK);
    le64(b, narrow(1, -324, 5));                   /* -DBL_TRUE_MIN */
    ck_assert_int_eq(kvshm_decode_decimal(b, 1, &out), MPIKVS_OK);
    ck_assert(out.negative && out.mantissa == 5 && out.exponent == -324);
    /* 1.000000000000000e33: the double nearest to it, 9.99...95e32, rounds
     * to 9.999999999999999e32, but the one above it rounds to it */
    le64(b, (uint64_t)INT64_C(1000000000000000));
    le64(b + 8, 33);
    ck_assert_int_eq(kvshm_decode_decimal(b, 16, &out), MPIKVS_OK);
    ck_assert(!out.negative && out.mantissa == 1000000000000000u &&
              out.exponent == 33);
    memset(b, 0, sizeof b);

    expect_bad_narrow(UINT64_C(1) << 63, 5, "negative zero");
    expect_bad_narrow(narrow(0, 0, 0), 5, "zero mantissa with an exponent");
    expect_bad_narrow(narrow(0, 0, 9999), 5, "4 digits for 5");
    expect_bad_narrow(narrow(0, 0, 100000), 5, "6 digits for 5");
    expect_bad_narrow(narrow(0, 0, (UINT64_C(1) << 53) - 1), 15,
                      "16 digits for 15");
    expect_bad_narrow(narrow(0, -400, 12345), 5, "exponent -400");
    expect_bad_narrow(narrow(0, 309, 12345), 5, "exponent 309");
    expect_bad_narrow(narrow(0, 623, 12345), 5, "exponent 623");
    expect_bad_narrow(narrow(0, 308, 19), 2, "1.9e308 is above DBL_MAX");
    expect_bad_narrow(narrow(0, -324, 1), 1, "1e-324 is below DBL_TRUE_MIN");
    expect_bad_narrow(narrow(0, -324, 4), 1, "4e-324 rounds to 5e-324");
    expect_bad_narrow(narrow(0, -325, 5), 1, "exponent -325");
    {
        /* 15 digits among the subnormals, where the doubles are 4.9e-324
         * apart: 1.00000000000001e-320 is no double's rounding */
        char s[64];
        double near = strtod("1.00000000000001e-320", NULL);
        snprintf(s, sizeof s, "%.14e", near);
        ck_assert_msg(strcmp(s, "1.00000000000001e-320") != 0, "the nearest "
                      "double prints as %s: pick another example", s);
        expect_bad_narrow(narrow(0, -320, 100000000000001u), 15,
                          "between two subnormals' roundings");
    }
    expect_bad_wide(0, 1, 16, "zero mantissa with an exponent");
    expect_bad_wide(999999999999999, 0, 16, "15 digits for 16");
    expect_bad_wide(-10000000000000000, 0, 16, "17 digits for 16");
    expect_bad_wide(INT64_MIN, 0, 17, "INT64_MIN");
    expect_bad_wide(12345678901234567, 309, 17, "exponent 309");
    expect_bad_wide(12345678901234567, -325, 17, "exponent -325");
    expect_bad_wide(12345678901234567, INT64_MIN, 17, "exponent INT64_MIN");
    expect_bad_wide(12345678901234567, (int64_t)1 << 32, 17,
                    "exponent 2^32");
    /* 17 digits are finer than the doubles: 1.0000000000000001 is none's */
    expect_bad_wide(10000000000000001, 0, 17, "between two doubles");
    expect_bad_wide(17976931348623158, 308, 17, "above DBL_MAX");

    memset(b, 0, sizeof b);
    ck_assert_int_eq(kvshm_decode_decimal(b, 0, &out), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_decode_decimal(b, 18, &out), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_decode_decimal(b, 17, &out), MPIKVS_OK);
    ck_assert(out.zero);
}
END_TEST

/* ---- keys ------------------------------------------------------------- */

static struct kvshm_field field_double(const char *name, unsigned digits,
                                       double zero_below, unsigned offset)
{
    struct kvshm_field f = {.type = KVSHM_FIELD_DOUBLE, .digits = digits,
                            .zero_below = zero_below, .offset = offset,
                            .width = kvshm_double_width(digits)};
    snprintf(f.name, sizeof f.name, "%s", name);
    return f;
}

static struct kvshm_field field_int64(const char *name, unsigned offset)
{
    struct kvshm_field f = {.type = KVSHM_FIELD_INT64, .offset = offset,
                            .width = 8};
    snprintf(f.name, sizeof f.name, "%s", name);
    return f;
}

static struct kvshm_field field_bytes(const char *name, unsigned n,
                                      unsigned offset)
{
    struct kvshm_field f = {.type = KVSHM_FIELD_BYTES, .bytes = n,
                            .offset = offset, .width = n};
    snprintf(f.name, sizeof f.name, "%s", name);
    return f;
}

START_TEST(key_from_doubles_places_every_field)
{
    /* a(5 digits) n(int64) b(17 digits) c(3 digits) and 8 bytes of
     * padding after them that must come out zero */
    struct kvshm_field f[4] = {
        field_double("a", 5, 0, 0), field_int64("n", 8),
        field_double("b", 17, 0, 16), field_double("c", 3, 1e-6, 32),
    };
    struct kvshm_record key = {.fields = f, .nfields = 4, .size = 48};
    unsigned char out[64], want[16];
    double in[4] = {0.0012345678, -42, -DBL_MAX, 5e-7};
    mpikvs_error_t err = {0};
    struct kvshm_decimal d;
    char h[130];

    memset(out, 0xcc, sizeof out);
    int rc = kvshm_key_from_doubles(&key, in, 4, out, &err);
    ck_assert_msg(rc == MPIKVS_OK, "key_from_doubles: rc %d: %s", rc, err.text);
    kvshm_round_decimal(in[0], 5, 0, &d);
    kvshm_encode_decimal(&d, 5, want);
    ck_assert_msg(memcmp(out, want, 8) == 0, "field a is not the encoded "
                  "rounding");
    hex(out + 8, 8, h);
    ck_assert_msg(strcmp(h, "d6ffffffffffffff") == 0, "int64 -42: %s", h);
    kvshm_round_decimal(in[2], 17, 0, &d);
    kvshm_encode_decimal(&d, 17, want);
    ck_assert_msg(memcmp(out + 16, want, 16) == 0, "field b is not the "
                  "encoded rounding");
    for (int i = 32; i < 48; i++)     /* c is zero (below 1e-6), padding */
        ck_assert_msg(out[i] == 0, "byte %d of the key is %02x, expected 0",
                      i, out[i]);
    ck_assert_msg(out[48] == 0xcc, "key_from_doubles wrote past key->size");

    /* int64: whole numbers in [-2^63, 2^63) */
    static const struct {
        double x;
        const char *hex;
    } ints[] = {
        {0.0, "0000000000000000"},
        {-0.0, "0000000000000000"},
        {1.0, "0100000000000000"},
        {-1.0, "ffffffffffffffff"},
        {0x1p62, "0000000000000040"},
        {-0x1p63, "0000000000000080"},
        {0x1p63 - 1024, "00fcffffffffff7f"},
        {9007199254740993.0, "0000000000002000"},   /* the double is 2^53 */
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        in[1] = ints[i].x;
        rc = kvshm_key_from_doubles(&key, in, 4, out, &err);
        hex(out + 8, 8, h);
        ck_assert_msg(rc == MPIKVS_OK && strcmp(h, ints[i].hex) == 0,
                      "int64 %.17g: rc %d, bytes %s, expected %s", ints[i].x,
                      rc, h, ints[i].hex);
    }

    /* the same numbers on any path give the same bytes */
    unsigned char again[64];
    in[1] = 7;
    kvshm_key_from_doubles(&key, in, 4, out, NULL);
    memset(again, 0x11, sizeof again);
    double in2[4] = {0.00123456781, 7, -DBL_MAX, -5e-7};
    rc = kvshm_key_from_doubles(&key, in2, 4, again, NULL);
    ck_assert_msg(rc == MPIKVS_OK && memcmp(out, again, 48) == 0,
                  "two inputs equal within the digits gave different keys");
}
END_TEST

static void expect_key_error(const struct kvshm_record *key, const double *in,
                             size_t n, const char *text)
{
    unsigned char out[128];
    mpikvs_error_t err = {0};

    int rc = kvshm_key_from_doubles(key, in, n, out, &err);
    ck_assert_msg(rc == MPIKVS_ERR_INVAL, "expected MPIKVS_ERR_INVAL for "
                  "'%s', got rc %d", text, rc);
    ck_assert_msg(err.code == MPIKVS_ERR_INVAL, "err.code %d for '%s'",
                  err.code, text);
    ck_assert_msg(strcmp(err.text, text) == 0, "error text '%s', expected "
                  "'%s'", err.text, text);
    rc = kvshm_key_from_doubles(key, in, n, out, NULL);
    ck_assert_msg(rc == MPIKVS_ERR_INVAL, "with err NULL: rc %d for '%s'", rc,
                  text);
}

START_TEST(key_from_doubles_errors_name_the_field_and_value)
{
    struct kvshm_field f[4] = {
        field_double("H", 6, 0, 0), field_double("O", 6, 0, 8),
        field_int64("cell", 16), field_double("Ca", 6, 1e-12, 24),
    };
    struct kvshm_record key = {.fields = f, .nfields = 4, .size = 32};
    double in[4] = {1, 2, 3, 4};

    in[3] = NAN;
    expect_key_error(&key, in, 4, "field 3 (Ca): nan is not a number");
    in[3] = -INFINITY;
    expect_key_error(&key, in, 4, "field 3 (Ca): -inf is infinite, not a "
                     "number a key can hold");
    in[3] = 4;
    in[2] = 1.5;
    expect_key_error(&key, in, 4, "field 2 (cell): 1.5 is not a whole number "
                     "(the field is int64)");
    in[2] = 0x1p63;
    expect_key_error(&key, in, 4, "field 2 (cell): 9.2233720368547758e+18 is "
                     "out of the int64 range [-2^63, 2^63)");
    in[2] = INFINITY;
    expect_key_error(&key, in, 4, "field 2 (cell): inf is infinite, not a "
                     "number a key can hold");
    in[2] = 3;
    expect_key_error(&key, in, 3, "3 numbers given for a key of 4 fields "
                     "(give one per field)");
    expect_key_error(&key, in, 5, "5 numbers given for a key of 4 fields "
                     "(give one per field)");

    struct kvshm_field g[2] = {field_double("x", 4, 0, 0),
                               field_bytes("tag", 4, 8)};
    struct kvshm_record kb = {.fields = g, .nfields = 2, .size = 12};
    expect_key_error(&kb, in, 2, "field 1 (tag) is bytes[4]: it cannot come "
                     "from a double");

    struct kvshm_record raw = {.fields = NULL, .size = 80};
    expect_key_error(&raw, in, 1, "the key is 80 raw bytes, not fields: it "
                     "cannot be made from doubles (give the key fields in "
                     "the config)");

    /* layouts the config would refuse */
    struct kvshm_field h[1] = {field_double("x", 16, 0, 0)};
    struct kvshm_record kh = {.fields = h, .nfields = 1, .size = 16};
    h[0].width = 8;
    expect_key_error(&kh, in, 1, "field 0 (x): a double of 16 digits takes "
                     "16 bytes, not 8 (a bad layout)");
    h[0].width = 16;
    h[0].digits = 18;
    expect_key_error(&kh, in, 1, "field 0 (x): 18 digits is out of range "
                     "1..17 (a bad layout)");
    h[0].digits = 16;
    kh.size = 12;
    expect_key_error(&kh, in, 1, "field 0 (x): bytes 0 to 16 lie outside the "
                     "12-byte key (a bad layout)");
}
END_TEST

START_TEST(key_to_text_renders_every_type)
{
    struct kvshm_field f[6] = {
        field_double("Ca", 5, 0, 0), field_double("Mg", 5, 1e-12, 8),
        field_double("pH", 3, 0, 16), field_int64("n", 24),
        field_double("big", 17, 0, 32), field_bytes("b", 3, 48),
    };
    struct kvshm_record key = {.fields = f, .nfields = 5, .size = 48};
    unsigned char k[64] = {0};
    char buf[256];
    double in[5] = {0.00123449, 1e-13, -7.0, 42, DBL_TRUE_MIN};
    const char *want = "Ca=1.2345e-03 Mg=0 pH=-7.00e+00 n=42 "
                       "big=4.9406564584124654e-324";

    ck_assert_int_eq(kvshm_key_from_doubles(&key, in, 5, k, NULL), MPIKVS_OK);
    int n = kvshm_key_to_text(&key, k, buf, sizeof buf);
    ck_assert_msg(n == (int)strlen(want) && strcmp(buf, want) == 0,
                  "text '%s' (%d), expected '%s'", buf, n, want);

    /* snprintf-style: the length needed, what fits, terminated */
    ck_assert_int_eq(kvshm_key_to_text(&key, k, NULL, 0), (int)strlen(want));
    memset(buf, 'x', sizeof buf);
    n = kvshm_key_to_text(&key, k, buf, 9);
    ck_assert_msg(n == (int)strlen(want) && strcmp(buf, "Ca=1.234") == 0,
                  "into 9 bytes: '%s' (%d)", buf, n);
    n = kvshm_key_to_text(&key, k, buf, 1);
    ck_assert_msg(n == (int)strlen(want) && buf[0] == '\0',
                  "into 1 byte: not just the terminator");

    /* a bytes field, a one-digit double, exponents of three digits */
    struct kvshm_field g[4] = {
        field_double("x", 1, 0, 0), field_int64("i", 8),
        field_bytes("b", 3, 16), field_double("y", 2, 0, 19),
    };
    struct kvshm_record kg = {.fields = g, .nfields = 4, .size = 27};
    struct kvshm_decimal d;
    memset(k, 0, sizeof k);
    kvshm_round_decimal(-DBL_MAX, 1, 0, &d);
    kvshm_encode_decimal(&d, 1, k);
    le64(k + 8, (uint64_t)INT64_MIN);
    k[16] = 0x0a;
    k[17] = 0x1b;
    k[18] = 0xff;
    kvshm_round_decimal(9.96e-100, 2, 0, &d);
    kvshm_encode_decimal(&d, 2, k + 19);
    want = "x=-2e+308 i=-9223372036854775808 b=0a1bff y=1.0e-99";
    n = kvshm_key_to_text(&kg, k, buf, sizeof buf);
    ck_assert_msg(n == (int)strlen(want) && strcmp(buf, want) == 0,
                  "text '%s' (%d), expected '%s'", buf, n, want);

    /* a raw key is hex */
    struct kvshm_record raw = {.size = 4};
    unsigned char r[4] = {0xde, 0xad, 0x00, 0x01};
    n = kvshm_key_to_text(&raw, r, buf, sizeof buf);
    ck_assert_msg(n == 8 && strcmp(buf, "dead0001") == 0, "raw: '%s' (%d)",
                  buf, n);

    /* bytes no rounding makes are refused */
    le64(k, UINT64_C(1) << 63);
    n = kvshm_key_to_text(&kg, k, buf, sizeof buf);
    ck_assert_msg(n == MPIKVS_ERR_INVAL, "negative zero rendered: %d '%s'",
                  n, buf);
}
END_TEST

/* ---- properties ------------------------------------------------------- */

START_TEST(fast_path_agrees_with_printf)
{
    struct rng r = {seed};

    for (uint64_t i = 0; i < count; i++) {
        unsigned d = 1 + (unsigned)rng_below(&r, 17);
        double x = random_double(&r, d);
        if (rng_next(&r) & 1)
            x = -x;
        struct kvshm_decimal got, want = ref_round(x, d, 0);
        int rc = kvshm_round_decimal(x, d, 0, &got);
        if (rc != MPIKVS_OK || !same_decimal(&got, &want)) {
            char s1[64], s2[64];
            ck_abort_msg("double %" PRIu64 " (seed %" PRIu64 "): round(%.17g "
                         "= %a, %u digits): rc %d, got %s, printf says %s",
                         i, seed, x, x, d, rc, show(&got, s1, sizeof s1),
                         show(&want, s2, sizeof s2));
        }
    }
}
END_TEST

/* x and a neighbour: equal keys exactly when printf's decimals are equal. */
START_TEST(equal_within_digits_iff_equal_keys)
{
    struct rng r = {seed ^ UINT64_C(0x5eed)};
    struct kvshm_field f[1];
    struct kvshm_record key = {.fields = f, .nfields = 1};
    unsigned char ka[16], kb[16];
    uint64_t equal = 0, differ = 0;

    for (uint64_t i = 0; i < count / 2; i++) {
        unsigned d = 1 + (unsigned)rng_below(&r, 17);
        double zb = rng_below(&r, 8) == 0 ? pow(10, -(double)rng_below(&r, 20))
                                          : 0.0;
        double a = random_double(&r, d), b;
        if (rng_next(&r) & 1)
            a = -a;
        switch (rng_below(&r, 4)) {
        case 0:
            b = step(a, (int)rng_below(&r, 9) - 4);
            break;
        case 1:
            b = step(a, (int)rng_below(&r, 2001) - 1000);
            break;
        case 2:
            b = a * (1 + (rng_unit(&r) - 0.5) *
                             pow(10, -(double)(1 + rng_below(&r, 17))));
            break;
        default:
            b = -a;             /* mixed signs */
            break;
        }
        if (!isfinite(b))
            b = a;
        f[0] = field_double("x", d, zb, 0);
        key.size = f[0].width;
        struct kvshm_decimal ra = ref_round(a, d, zb), rb = ref_round(b, d, zb);
        int rca = kvshm_key_from_doubles(&key, &a, 1, ka, NULL);
        int rcb = kvshm_key_from_doubles(&key, &b, 1, kb, NULL);
        ck_assert_msg(rca == MPIKVS_OK && rcb == MPIKVS_OK, "keys of %.17g "
                      "and %.17g: rc %d, %d", a, b, rca, rcb);
        bool same_ref = same_decimal(&ra, &rb);
        bool same_key = memcmp(ka, kb, f[0].width) == 0;
        if (same_ref != same_key) {
            char s1[64], s2[64];
            ck_abort_msg("pair %" PRIu64 " (seed %" PRIu64 "): %.17g and "
                         "%.17g to %u digits (zero_below %g) are %s by "
                         "printf (%s, %s) but their keys are %s", i, seed, a,
                         b, d, zb, same_ref ? "equal" : "different",
                         show(&ra, s1, sizeof s1), show(&rb, s2, sizeof s2),
                         same_key ? "equal" : "different");
        }
        if (same_ref)
            equal++;
        else
            differ++;
    }
    /* both outcomes must actually have been tested */
    ck_assert_msg(equal > count / 20 && differ > count / 20,
                  "pairs too one-sided to test anything: %" PRIu64 " equal, "
                  "%" PRIu64 " different", equal, differ);
}
END_TEST

static Suite *round_suite(void)
{
    Suite *s = suite_create("round");
    TCase *edges = tcase_create("edges");
    TCase *props = tcase_create("properties");

    tcase_set_timeout(edges, 60);
    tcase_add_test(edges, ties_round_half_even_on_the_exact_value);
    tcase_add_test(edges, carry_into_the_next_decade);
    tcase_add_test(edges, denormals_and_the_ends_of_the_range);
    tcase_add_test(edges, signs_zero_and_zero_below);
    tcase_add_test(edges, not_numbers_and_bad_arguments_are_refused);
    tcase_add_test(edges, rounding_mode_does_not_matter);
    tcase_add_test(edges, encode_writes_the_documented_bytes);
    tcase_add_test(edges, decode_reads_back_what_encode_wrote);
    tcase_add_test(edges, decode_refuses_bytes_no_rounding_makes);
    tcase_add_test(edges, key_from_doubles_places_every_field);
    tcase_add_test(edges, key_from_doubles_errors_name_the_field_and_value);
    tcase_add_test(edges, key_to_text_renders_every_type);
    suite_add_tcase(s, edges);

    tcase_set_timeout(props, 240);
    tcase_add_test(props, fast_path_agrees_with_printf);
    tcase_add_test(props, equal_within_digits_iff_equal_keys);
    suite_add_tcase(s, props);
    return s;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    char *end;

    if (!v || !*v)
        return def;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end) {
        fprintf(stderr, "%s=%s is not a number; using %llu\n", name, v,
                (unsigned long long)def);
        return def;
    }
    return n;
}

int main(void)
{
    SRunner *sr;
    int failed;

    count = env_u64("MPIKVS_TEST_ROUND_COUNT", COUNT_DEFAULT);
    if (count < COUNT_MIN)
        count = COUNT_MIN;
    seed = env_u64("MPIKVS_TEST_ROUND_SEED", 1);
    sr = srunner_create(round_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
