/*
 * check_near_key.c - coarse keys, inputs, steps and distances of keys
 * (common/near_key.h).
 *
 * The coarse rounding is checked against a second implementation on the
 * decimal digits as text (the first c digits, the rest compared with
 * "5000..."), on chosen ties and carries and on random decimals; the
 * inputs against strtod of the key's text (kvshm_key_to_text), on random
 * keys of every number of digits and the whole range of exponents.
 *
 * MPIKVS_TEST_NEAR_SEED sets the seed of the random cases (default 1); a
 * failure names it.
 */
#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "near_key.h"
#include "round.h"

#define RANDOM_KEYS 50000u

static uint64_t seed = 1;

/* xorshift64*: the same cases on every machine for a seed. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* ---- records ---------------------------------------------------------- */

static struct kvshm_field fine_fields[8], coarse_fields[8];

/* A record of n fields from a spec: 'd' double (digits[i]), 'i' int64,
 * 'b' bytes[3]; laid out by kvshm_key_layout. */
static struct kvshm_record make_record(struct kvshm_field *fields,
                                       const char *types,
                                       const unsigned *digits)
{
    struct kvshm_record r = {.fields = fields, .nfields = strlen(types)};

    memset(fields, 0, r.nfields * sizeof(*fields));
    for (size_t i = 0; i < r.nfields; i++) {
        snprintf(fields[i].name, sizeof(fields[i].name), "f%zu", i);
        fields[i].type = types[i] == 'd'   ? KVSHM_FIELD_DOUBLE
                         : types[i] == 'i' ? KVSHM_FIELD_INT64
                                           : KVSHM_FIELD_BYTES;
        fields[i].digits = types[i] == 'd' ? digits[i] : 0;
        fields[i].bytes = types[i] == 'b' ? 3 : 0;
    }
    kvshm_key_layout(&r);
    return r;
}

/* ---- coarse keys ------------------------------------------------------ */

/* The reference: m (d digits) to c digits on its digits as text. */
static struct kvshm_decimal ref_coarsen(struct kvshm_decimal f, unsigned d,
                                        unsigned c)
{
    char digits[24], half[24];
    uint64_t q = 0;
    int cmp;

    if (f.zero)
        return f;
    snprintf(digits, sizeof digits, "%" PRIu64, f.mantissa);
    ck_assert_uint_eq(strlen(digits), d);
    for (unsigned i = 0; i < c; i++)
        q = q * 10 + (uint64_t)(digits[i] - '0');
    memset(half, '0', sizeof half);
    half[0] = '5';
    half[d - c] = '\0';
    cmp = d == c ? -1 : strcmp(digits + c, half);
    if (cmp > 0 || (cmp == 0 && (q & 1)))
        q++;
    snprintf(digits, sizeof digits, "%" PRIu64, q);
    if (strlen(digits) > c) {
        q /= 10;
        f.exponent++;
    }
    f.mantissa = q;
    return f;
}

/* Coarsen (neg, m, e) of d digits to c and demand (m2, e2). */
static void expect_coarse(unsigned d, unsigned c, bool neg, uint64_t m,
                          int e, uint64_t m2, int e2)
{
    unsigned fd[1] = {d}, cd[1] = {c};
    struct kvshm_record fine = make_record(fine_fields, "d", fd);
    struct kvshm_record coarse = make_record(coarse_fields, "d", cd);
    struct kvshm_decimal in = {.negative = neg, .mantissa = m, .exponent = e};
    struct kvshm_decimal got, ref = ref_coarsen(in, d, c);
    unsigned char key[16], out[16];

    kvshm_encode_decimal(&in, d, key);
    ck_assert_int_eq(kvshm_key_coarsen(&fine, &coarse, key, out), MPIKVS_OK);
    ck_assert_int_eq(kvshm_decode_decimal_form(out, c, &got), MPIKVS_OK);
    ck_assert_msg(!got.zero && got.negative == neg && got.mantissa == m2 &&
                      got.exponent == e2,
                  "%" PRIu64 "e%d (%u digits) to %u: got %" PRIu64 "e%d, "
                  "want %" PRIu64 "e%d", m, e, d, c, got.mantissa,
                  got.exponent, m2, e2);
    ck_assert_msg(ref.mantissa == m2 && ref.exponent == e2,
                  "the reference disagrees on %" PRIu64, m);
}

START_TEST(coarsen_ties_and_carries)
{
    /* ties to even */
    expect_coarse(3, 2, false, 125, 0, 12, 0);
    expect_coarse(3, 2, false, 135, 0, 14, 0);
    expect_coarse(4, 1, false, 8500, -3, 8, -3);
    expect_coarse(4, 1, true, 7500, 5, 8, 5);
    /* above and below the tie */
    expect_coarse(3, 2, false, 124, 0, 12, 0);
    expect_coarse(3, 2, false, 126, 0, 13, 0);
    expect_coarse(4, 1, false, 8501, 0, 9, 0);
    expect_coarse(5, 3, false, 12549, -1, 125, -1);
    expect_coarse(4, 3, false, 1255, -1, 126, -1);
    /* carries into the exponent: 9.99 -> 10.0 */
    expect_coarse(3, 2, false, 999, 0, 10, 1);
    expect_coarse(3, 2, false, 995, -7, 10, -6);
    expect_coarse(4, 1, true, 9500, 300, 1, 301);
    expect_coarse(16, 8, false, UINT64_C(9999999950000000), -20,
                  10000000, -19);
    /* 16- and 17-digit (16-byte) fields to 8-byte ones */
    expect_coarse(17, 15, false, UINT64_C(12345678901234550), 3,
                  UINT64_C(123456789012346), 3);
    expect_coarse(17, 15, false, UINT64_C(12345678901234450), 3,
                  UINT64_C(123456789012344), 3);
    expect_coarse(17, 15, false, UINT64_C(12345678901234451), 3,
                  UINT64_C(123456789012345), 3);
    expect_coarse(16, 1, true, UINT64_C(4999999999999999), -100, 5, -100);
    expect_coarse(17, 16, false, UINT64_C(99999999999999995), 0,
                  UINT64_C(1000000000000000), 1);
    /* the same digits: the same decimal */
    expect_coarse(5, 5, false, 12345, 2, 12345, 2);
    /* the largest double to one digit, 2e308 */
    expect_coarse(4, 1, false, 1797, 308, 2, 308);
}
END_TEST

START_TEST(coarsen_fields_and_refusals)
{
    unsigned fd[5] = {17, 0, 0, 5, 1}, cd[5] = {3, 0, 0, 2, 1};
    struct kvshm_record fine = make_record(fine_fields, "dibdd", fd);
    struct kvshm_record coarse = make_record(coarse_fields, "dibdd", cd);
    unsigned char key[64], out[64], want[64];
    struct kvshm_decimal a = {.mantissa = UINT64_C(31415926535897932),
                              .exponent = -2},
                         b = {.zero = true}, one = {.mantissa = 7,
                                                    .exponent = 0};
    struct kvshm_decimal a3 = {.mantissa = 314, .exponent = -2};

    ck_assert_uint_eq(fine.size, 16 + 8 + 3 + 8 + 8);
    ck_assert_uint_eq(coarse.size, 8 + 8 + 3 + 8 + 8);
    kvshm_encode_decimal(&a, 17, key + fine_fields[0].offset);
    memcpy(key + fine_fields[1].offset, "\x01\x02\x03\x04\x05\x06\x07\x88",
           8);
    memcpy(key + fine_fields[2].offset, "xyz", 3);
    kvshm_encode_decimal(&b, 5, key + fine_fields[3].offset);
    kvshm_encode_decimal(&one, 1, key + fine_fields[4].offset);

    kvshm_encode_decimal(&a3, 3, want + coarse_fields[0].offset);
    memcpy(want + coarse_fields[1].offset,
           "\x01\x02\x03\x04\x05\x06\x07\x88", 8);
    memcpy(want + coarse_fields[2].offset, "xyz", 3);
    kvshm_encode_decimal(&b, 2, want + coarse_fields[3].offset);
    kvshm_encode_decimal(&one, 1, want + coarse_fields[4].offset);
    ck_assert_int_eq(kvshm_key_coarsen(&fine, &coarse, key, out), MPIKVS_OK);
    ck_assert(memcmp(out, want, coarse.size) == 0);

    /* records that do not match, more digits, bad bytes */
    struct kvshm_record fewer = coarse;
    fewer.nfields = 4;
    ck_assert_int_eq(kvshm_key_coarsen(&fine, &fewer, key, out),
                     MPIKVS_ERR_INVAL);
    coarse_fields[1].type = KVSHM_FIELD_DOUBLE;
    ck_assert_int_eq(kvshm_key_coarsen(&fine, &coarse, key, out),
                     MPIKVS_ERR_INVAL);
    coarse_fields[1].type = KVSHM_FIELD_INT64;
    coarse_fields[3].digits = 6;
    ck_assert_int_eq(kvshm_key_coarsen(&fine, &coarse, key, out),
                     MPIKVS_ERR_INVAL);
    coarse_fields[3].digits = 2;
    struct kvshm_decimal short_m = {.mantissa = 12, .exponent = 0};
    kvshm_encode_decimal(&short_m, 5, key + fine_fields[3].offset);
    ck_assert_int_eq(kvshm_key_coarsen(&fine, &coarse, key, out),
                     MPIKVS_ERR_INVAL);
    /* 9.99e308 has the form but no double: its carry is refused */
    unsigned d3[1] = {3}, d2[1] = {2};
    struct kvshm_record f1 = make_record(fine_fields, "d", d3);
    struct kvshm_record c1 = make_record(coarse_fields, "d", d2);
    struct kvshm_decimal big = {.mantissa = 999, .exponent = 308};
    kvshm_encode_decimal(&big, 3, key);
    ck_assert_int_eq(kvshm_key_coarsen(&f1, &c1, key, out), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_key_coarsen(NULL, &c1, key, out),
                     MPIKVS_ERR_INVAL);
}
END_TEST

/* Random decimals of every length against the text reference, and the
 * coarse key of x's key against x rounded to c digits at once: they
 * differ only where the fine decimal is a tie at c digits. */
START_TEST(coarsen_random)
{
    uint64_t s = seed;
    unsigned ties = 0, differ = 0;

    for (unsigned n = 0; n < RANDOM_KEYS; n++) {
        unsigned d = 2 + (unsigned)(next(&s) % 16), c = 1 + (unsigned)
                                                             (next(&s) %
                                                              (d - 1));
        unsigned fd[1] = {d}, cd[1] = {c};
        struct kvshm_record fine = make_record(fine_fields, "d", fd);
        struct kvshm_record coarse = make_record(coarse_fields, "d", cd);
        double x = ldexp((double)(next(&s) >> 11) + 1.0,
                         (int)(next(&s) % 400) - 250);
        unsigned char key[16], out[16], direct[16];
        struct kvshm_decimal f, got, ref;

        if (n % 3 == 0) {   /* many ties: short mantissas, zeros after */
            struct kvshm_decimal t = {.mantissa = kvshm_pow10_u64(d - 1) +
                                                  (next(&s) % 9 + 1) *
                                                      kvshm_pow10_u64(d - c -
                                                                      1) *
                                                      (n % 2 ? 5 : 1),
                                      .exponent = (int)(next(&s) % 200) -
                                                  100};
            if (t.mantissa >= kvshm_pow10_u64(d))
                t.mantissa = kvshm_pow10_u64(d) - 1;
            kvshm_encode_decimal(&t, d, key);
        } else {
            ck_assert_int_eq(kvshm_key_from_doubles(&fine, &x, 1, key, NULL),
                             MPIKVS_OK);
        }
        ck_assert_int_eq(kvshm_decode_decimal_form(key, d, &f), MPIKVS_OK);
        ck_assert_int_eq(kvshm_key_coarsen(&fine, &coarse, key, out),
                         MPIKVS_OK);
        ck_assert_int_eq(kvshm_decode_decimal_form(out, c, &got), MPIKVS_OK);
        ref = ref_coarsen(f, d, c);
        ck_assert_msg(got.mantissa == ref.mantissa &&
                          got.exponent == ref.exponent,
                      "seed %" PRIu64 " case %u: %" PRIu64 "e%d (%u) to %u: "
                      "%" PRIu64 "e%d, reference %" PRIu64 "e%d", seed, n,
                      f.mantissa, f.exponent, d, c, got.mantissa,
                      got.exponent, ref.mantissa, ref.exponent);
        if (n % 3 == 0)
            continue;
        ck_assert_int_eq(kvshm_key_from_doubles(&coarse, &x, 1, direct,
                                                NULL),
                         MPIKVS_OK);
        uint64_t rest = f.mantissa % kvshm_pow10_u64(d - c);
        bool tie = rest == kvshm_pow10_u64(d - c) / 2;
        ties += tie;
        if (memcmp(out, direct, coarse.size) != 0) {
            differ++;
            ck_assert_msg(tie, "seed %" PRIu64 " case %u: %.17g: the coarse "
                          "key differs from the direct rounding without a "
                          "tie", seed, n, x);
        }
    }
    ck_assert_uint_ge(ties, 1);
    (void)differ;
}
END_TEST

/* ---- inputs and steps ------------------------------------------------- */

START_TEST(ninputs)
{
    unsigned d[4] = {3, 0, 0, 5};
    struct kvshm_record r = make_record(fine_fields, "dibd", d);
    struct kvshm_record raw = {.size = 16};

    ck_assert_uint_eq(kvshm_key_ninputs(&r), 3);
    ck_assert_uint_eq(kvshm_key_ninputs(&raw), 0);
}
END_TEST

/* A random double of any magnitude (subnormals and the largest too). */
static double random_double(uint64_t *s)
{
    uint64_t bits = next(s) & ~(UINT64_C(1) << 63);
    double x;

    switch (next(s) % 4) {
    case 0:   /* realistic: 1e-20 .. 1e20 */
        return (next(s) % 2 ? -1.0 : 1.0) *
               pow(10.0, (double)(next(s) % 4000) / 100.0 - 20.0);
    case 1:   /* short decimals */
        return (double)(next(s) % 100000) / 1000.0;
    default:
        memcpy(&x, &bits, sizeof x);
        return isfinite(x) ? x : 1.0;
    }
}

/* The inputs of random keys are strtod of their text, bit for bit. */
START_TEST(inputs_are_strtod_of_the_text)
{
    uint64_t s = seed;

    for (unsigned n = 0; n < RANDOM_KEYS; n++) {
        unsigned d[4] = {1 + (unsigned)(next(&s) % 17), 0,
                         1 + (unsigned)(next(&s) % 17),
                         1 + (unsigned)(next(&s) % 17)};
        struct kvshm_record r = make_record(fine_fields, "didd", d);
        double in[4] = {random_double(&s),
                        (double)(int64_t)(next(&s) >> 12) - 1e15,
                        random_double(&s), n % 7 ? random_double(&s) : 0.0};
        double got[4], want[4];
        unsigned char key[64];
        char text[512], *p = text;
        size_t k = 0;

        ck_assert_int_eq(kvshm_key_from_doubles(&r, in, 4, key, NULL),
                         MPIKVS_OK);
        ck_assert_int_eq(kvshm_key_inputs(&r, key, got), MPIKVS_OK);
        ck_assert_int_gt(kvshm_key_to_text(&r, key, text, sizeof text), 0);
        /* "f0=1.23e+04 f1=-5 f2=... f3=0" */
        while (k < 4 && (p = strchr(p, '='))) {
            want[k] = strtod(p + 1, &p);
            k++;
        }
        ck_assert_uint_eq(k, 4);
        for (size_t i = 0; i < 4; i++)
            ck_assert_msg(memcmp(&got[i], &want[i], sizeof got[i]) == 0 ||
                              (got[i] == 0.0 && want[i] == 0.0),
                          "seed %" PRIu64 " case %u input %zu of %s: got "
                          "%.17g, strtod %.17g", seed, n, i, text, got[i],
                          want[i]);
    }
}
END_TEST

static void expect_steps(const char *types, const unsigned *digits,
                         double zero_below, const double *in,
                         const double *want, size_t n)
{
    struct kvshm_record r = make_record(fine_fields, types, digits);
    unsigned char key[64];
    double got[8];

    for (size_t i = 0; i < r.nfields; i++)
        fine_fields[i].zero_below = i == 0 ? zero_below : 0.0;
    ck_assert_int_eq(kvshm_key_from_doubles(&r, in, r.nfields, key, NULL),
                     MPIKVS_OK);
    ck_assert_uint_eq(kvshm_key_ninputs(&r), n);
    ck_assert_int_eq(kvshm_key_steps(&r, key, got), MPIKVS_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "step %zu: %.17g, want %.17g", i,
                      got[i], want[i]);
}

START_TEST(steps)
{
    {   /* 1.23e-5 to 3 digits: 1e-7; int64: 1; 16 digits of 1.5e300 */
        unsigned d[3] = {3, 0, 16};
        double in[3] = {1.234e-5, 42, 1.5e300}, want[3] = {1e-7, 1, 1e285};
        expect_steps("did", d, 1e-12, in, want, 3);
    }
    {   /* zero: its zero_below, or 0 without one */
        unsigned d[2] = {5, 5};
        double in[2] = {1e-13, 0.0}, want[2] = {1e-12, 0.0};
        expect_steps("dd", d, 1e-12, in, want, 2);
    }
    {   /* 1e-320 (subnormal) to 2 digits: 1e-321; 17 digits there:
         * below every double, the smallest subnormal */
        unsigned d[3] = {4, 2, 17};
        double in[3] = {2.5e-300, 1e-320, 1e-310},
               want[3] = {1e-303, 1e-321, DBL_TRUE_MIN};
        expect_steps("ddd", d, 0.0, in, want, 3);
    }
}
END_TEST

/* ---- distance --------------------------------------------------------- */

START_TEST(distance)
{
    /* 3 steps in one field, 4 in the other: 5 */
    double q[2] = {1.00, 5}, qs[2] = {0.01, 1}, m[2] = {1.03, 9},
           ms[2] = {0.01, 1};
    ck_assert(fabs(kvshm_key_distance(2, q, qs, m, ms) - 5.0) < 1e-12);
    /* the query's step, not the member's */
    double ms2[2] = {1e-6, 100};
    ck_assert(fabs(kvshm_key_distance(2, q, qs, m, ms2) - 5.0) < 1e-12);
    /* a zero query field takes the member's step */
    double qz[2] = {0.0, 5}, qzs[2] = {0.0, 1}, mz[2] = {2e-3, 5},
           mzs[2] = {1e-4, 1};
    ck_assert(fabs(kvshm_key_distance(2, qz, qzs, mz, mzs) - 20.0) < 1e-9);
    /* both zero: nothing */
    double z[2] = {0.0, 0.0}, zs[2] = {0.0, 0.0};
    ck_assert(kvshm_key_distance(2, z, zs, z, zs) == 0.0);
    /* the same key: 0; no inputs: 0 */
    ck_assert(kvshm_key_distance(2, q, qs, q, qs) == 0.0);
    ck_assert(kvshm_key_distance(0, q, qs, m, ms) == 0.0);
    /* from keys: 1.23 and 1.25 at 3 digits, 2 steps of 0.01 apart */
    unsigned d[1] = {3};
    struct kvshm_record r = make_record(fine_fields, "d", d);
    double a = 1.23, b = 1.25, ia, ib, sa, sb;
    unsigned char ka[8], kb[8];
    kvshm_key_from_doubles(&r, &a, 1, ka, NULL);
    kvshm_key_from_doubles(&r, &b, 1, kb, NULL);
    kvshm_key_inputs(&r, ka, &ia);
    kvshm_key_inputs(&r, kb, &ib);
    kvshm_key_steps(&r, ka, &sa);
    kvshm_key_steps(&r, kb, &sb);
    ck_assert(fabs(kvshm_key_distance(1, &ia, &sa, &ib, &sb) - 2.0) < 1e-9);
}
END_TEST

static Suite *near_key_suite(void)
{
    Suite *s = suite_create("near_key");
    TCase *tc = tcase_create("near_key");

    tcase_add_test(tc, coarsen_ties_and_carries);
    tcase_add_test(tc, coarsen_fields_and_refusals);
    tcase_add_test(tc, coarsen_random);
    tcase_add_test(tc, ninputs);
    tcase_add_test(tc, inputs_are_strtod_of_the_text);
    tcase_add_test(tc, steps);
    tcase_add_test(tc, distance);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *e = getenv("MPIKVS_TEST_NEAR_SEED");
    SRunner *sr;
    int failed;

    if (e && *e)
        seed = strtoull(e, NULL, 10) | 1;
    sr = srunner_create(near_key_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
