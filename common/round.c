/*
 * round.c - canonical keys from doubles (round.h).
 *
 * Rounding a double to d significant digits means: the decimal exponent e
 * of |x| and the integer m = |x| * 10^(d-1-e) rounded to nearest, ties to
 * even, both on the double's exact value; m = 10^d carries into
 * 10^(d-1) with e + 1.  glibc's printf("%.*e") does exactly that, in
 * multiple precision, at about a microsecond a number.  It is the
 * reference and the slow path here.
 *
 * The fast path does the same in double arithmetic for d <= 15:
 *
 *   1. b = floor(log2 |x|) from the bits, and e0 = floor(b log10 2), by
 *      integer arithmetic, exact for every double.  The true exponent is
 *      e0 or e0 + 1.
 *   2. For the usual magnitudes, e = e0 + (|x| >= 10^(e0+1)) and
 *      y = |x| * 10^(d-1-e), with correctly rounded powers from a table
 *      (exact up to 10^22): two roundings, |y - v| <= 2 u v for the exact
 *      v = |x| 10^(d-1-e), u = 2^-53.  Where |x| is within a unit in the
 *      last place of the rounded power, the comparison may pick the wrong
 *      exponent, but then y is within a few units of 10^d or 10^(d-1),
 *      which round to the right key anyway (round_fast).
 *      Below 1e-293 or so (subnormals included), and for 10^-308, a power
 *      would be subnormal or overflow: the scaling takes two
 *      multiplications (|y - v| <= 4 u v), and the exponent is e0 + 1 if
 *      y >= 10^d - 0.5, with y made afresh (round_fast_far).
 *   3. m = y rounded to nearest; m = 10^d carries into 10^(d-1), e + 1.
 *
 * The answer changes only where y crosses a .5 between two integers (and,
 * in the far case, 10^d - 0.5).  y and v are on the same side of such a
 * point whenever y is farther from it than the margin y 2^-49 (16 u y,
 * four times the worst error, twice it in a directed rounding mode);
 * otherwise the slow path decides.  A fast answer is therefore always the
 * correctly rounded one, whatever the compiler does with contraction or
 * excess precision, and the same on every machine.  Exact ties (0.125 to
 * 2 digits) always take the slow path, and so do most values at d = 15
 * (the margin near 10^15 exceeds 0.5) and all at d >= 16.  For realistic
 * data with up to 10 digits the slow path is taken for about one field in
 * 10^5 or fewer.
 *
 * No allocation, no locks, no global state but constant tables.
 */
#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors_internal.h"
#include "round.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define EXP_MIN KVSHM_EXP_MIN
#define EXP_MAX KVSHM_EXP_MAX

#define TIE_MARGIN 0x1p-49          /* relative to y: 16 u */
#define NARROW_MANT_BITS 53
#define NARROW_EXP_MASK  UINT64_C(0x3ff)

/* 10^k for k = P10_MIN .. P10_MAX, all normal doubles.  The compiler
 * rounds each literal correctly (a power off by one unit in the last
 * place would still be inside the margin). */
#define P10_MIN (-307)
#define P10_MAX 308
static const double p10[P10_MAX - P10_MIN + 1] = {
    1e-307, 1e-306, 1e-305, 1e-304, 1e-303, 1e-302, 1e-301, 1e-300,
    1e-299, 1e-298, 1e-297, 1e-296, 1e-295, 1e-294, 1e-293, 1e-292,
    1e-291, 1e-290, 1e-289, 1e-288, 1e-287, 1e-286, 1e-285, 1e-284,
    1e-283, 1e-282, 1e-281, 1e-280, 1e-279, 1e-278, 1e-277, 1e-276,
    1e-275, 1e-274, 1e-273, 1e-272, 1e-271, 1e-270, 1e-269, 1e-268,
    1e-267, 1e-266, 1e-265, 1e-264, 1e-263, 1e-262, 1e-261, 1e-260,
    1e-259, 1e-258, 1e-257, 1e-256, 1e-255, 1e-254, 1e-253, 1e-252,
    1e-251, 1e-250, 1e-249, 1e-248, 1e-247, 1e-246, 1e-245, 1e-244,
    1e-243, 1e-242, 1e-241, 1e-240, 1e-239, 1e-238, 1e-237, 1e-236,
    1e-235, 1e-234, 1e-233, 1e-232, 1e-231, 1e-230, 1e-229, 1e-228,
    1e-227, 1e-226, 1e-225, 1e-224, 1e-223, 1e-222, 1e-221, 1e-220,
    1e-219, 1e-218, 1e-217, 1e-216, 1e-215, 1e-214, 1e-213, 1e-212,
    1e-211, 1e-210, 1e-209, 1e-208, 1e-207, 1e-206, 1e-205, 1e-204,
    1e-203, 1e-202, 1e-201, 1e-200, 1e-199, 1e-198, 1e-197, 1e-196,
    1e-195, 1e-194, 1e-193, 1e-192, 1e-191, 1e-190, 1e-189, 1e-188,
    1e-187, 1e-186, 1e-185, 1e-184, 1e-183, 1e-182, 1e-181, 1e-180,
    1e-179, 1e-178, 1e-177, 1e-176, 1e-175, 1e-174, 1e-173, 1e-172,
    1e-171, 1e-170, 1e-169, 1e-168, 1e-167, 1e-166, 1e-165, 1e-164,
    1e-163, 1e-162, 1e-161, 1e-160, 1e-159, 1e-158, 1e-157, 1e-156,
    1e-155, 1e-154, 1e-153, 1e-152, 1e-151, 1e-150, 1e-149, 1e-148,
    1e-147, 1e-146, 1e-145, 1e-144, 1e-143, 1e-142, 1e-141, 1e-140,
    1e-139, 1e-138, 1e-137, 1e-136, 1e-135, 1e-134, 1e-133, 1e-132,
    1e-131, 1e-130, 1e-129, 1e-128, 1e-127, 1e-126, 1e-125, 1e-124,
    1e-123, 1e-122, 1e-121, 1e-120, 1e-119, 1e-118, 1e-117, 1e-116,
    1e-115, 1e-114, 1e-113, 1e-112, 1e-111, 1e-110, 1e-109, 1e-108,
    1e-107, 1e-106, 1e-105, 1e-104, 1e-103, 1e-102, 1e-101, 1e-100,
    1e-99, 1e-98, 1e-97, 1e-96, 1e-95, 1e-94, 1e-93, 1e-92,
    1e-91, 1e-90, 1e-89, 1e-88, 1e-87, 1e-86, 1e-85, 1e-84,
    1e-83, 1e-82, 1e-81, 1e-80, 1e-79, 1e-78, 1e-77, 1e-76,
    1e-75, 1e-74, 1e-73, 1e-72, 1e-71, 1e-70, 1e-69, 1e-68,
    1e-67, 1e-66, 1e-65, 1e-64, 1e-63, 1e-62, 1e-61, 1e-60,
    1e-59, 1e-58, 1e-57, 1e-56, 1e-55, 1e-54, 1e-53, 1e-52,
    1e-51, 1e-50, 1e-49, 1e-48, 1e-47, 1e-46, 1e-45, 1e-44,
    1e-43, 1e-42, 1e-41, 1e-40, 1e-39, 1e-38, 1e-37, 1e-36,
    1e-35, 1e-34, 1e-33, 1e-32, 1e-31, 1e-30, 1e-29, 1e-28,
    1e-27, 1e-26, 1e-25, 1e-24, 1e-23, 1e-22, 1e-21, 1e-20,
    1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12,
    1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4,
    1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4,
    1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
    1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28,
    1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35, 1e36,
    1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44,
    1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52,
    1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59, 1e60,
    1e61, 1e62, 1e63, 1e64, 1e65, 1e66, 1e67, 1e68,
    1e69, 1e70, 1e71, 1e72, 1e73, 1e74, 1e75, 1e76,
    1e77, 1e78, 1e79, 1e80, 1e81, 1e82, 1e83, 1e84,
    1e85, 1e86, 1e87, 1e88, 1e89, 1e90, 1e91, 1e92,
    1e93, 1e94, 1e95, 1e96, 1e97, 1e98, 1e99, 1e100,
    1e101, 1e102, 1e103, 1e104, 1e105, 1e106, 1e107, 1e108,
    1e109, 1e110, 1e111, 1e112, 1e113, 1e114, 1e115, 1e116,
    1e117, 1e118, 1e119, 1e120, 1e121, 1e122, 1e123, 1e124,
    1e125, 1e126, 1e127, 1e128, 1e129, 1e130, 1e131, 1e132,
    1e133, 1e134, 1e135, 1e136, 1e137, 1e138, 1e139, 1e140,
    1e141, 1e142, 1e143, 1e144, 1e145, 1e146, 1e147, 1e148,
    1e149, 1e150, 1e151, 1e152, 1e153, 1e154, 1e155, 1e156,
    1e157, 1e158, 1e159, 1e160, 1e161, 1e162, 1e163, 1e164,
    1e165, 1e166, 1e167, 1e168, 1e169, 1e170, 1e171, 1e172,
    1e173, 1e174, 1e175, 1e176, 1e177, 1e178, 1e179, 1e180,
    1e181, 1e182, 1e183, 1e184, 1e185, 1e186, 1e187, 1e188,
    1e189, 1e190, 1e191, 1e192, 1e193, 1e194, 1e195, 1e196,
    1e197, 1e198, 1e199, 1e200, 1e201, 1e202, 1e203, 1e204,
    1e205, 1e206, 1e207, 1e208, 1e209, 1e210, 1e211, 1e212,
    1e213, 1e214, 1e215, 1e216, 1e217, 1e218, 1e219, 1e220,
    1e221, 1e222, 1e223, 1e224, 1e225, 1e226, 1e227, 1e228,
    1e229, 1e230, 1e231, 1e232, 1e233, 1e234, 1e235, 1e236,
    1e237, 1e238, 1e239, 1e240, 1e241, 1e242, 1e243, 1e244,
    1e245, 1e246, 1e247, 1e248, 1e249, 1e250, 1e251, 1e252,
    1e253, 1e254, 1e255, 1e256, 1e257, 1e258, 1e259, 1e260,
    1e261, 1e262, 1e263, 1e264, 1e265, 1e266, 1e267, 1e268,
    1e269, 1e270, 1e271, 1e272, 1e273, 1e274, 1e275, 1e276,
    1e277, 1e278, 1e279, 1e280, 1e281, 1e282, 1e283, 1e284,
    1e285, 1e286, 1e287, 1e288, 1e289, 1e290, 1e291, 1e292,
    1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299, 1e300,
    1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308,
};

_Static_assert(sizeof(p10) / sizeof(p10[0]) == P10_MAX - P10_MIN + 1,
               "one power of ten per exponent");

static const uint64_t pow10_u64[KVSHM_DIGITS_MAX + 2] = {
    UINT64_C(1),
    UINT64_C(10),
    UINT64_C(100),
    UINT64_C(1000),
    UINT64_C(10000),
    UINT64_C(100000),
    UINT64_C(1000000),
    UINT64_C(10000000),
    UINT64_C(100000000),
    UINT64_C(1000000000),
    UINT64_C(10000000000),
    UINT64_C(100000000000),
    UINT64_C(1000000000000),
    UINT64_C(10000000000000),
    UINT64_C(100000000000000),
    UINT64_C(1000000000000000),
    UINT64_C(10000000000000000),
    UINT64_C(100000000000000000),
    UINT64_C(1000000000000000000),
};

/* ---- rounding --------------------------------------------------------- */

/* floor(b log10 2) for b = -1074 .. 1023, exact (78913 / 2^18 is close
 * enough to log10 2 over that range), without floating point, without a
 * branch and without shifting a negative number: the bias of 400 2^18
 * is a whole number of steps, added before and taken off after. */
static inline int floor_log10_pow2(int b)
{
    return (int)((uint32_t)(b * 78913 + (400 << 18)) >> 18) - 400;
}

/* |x| 10^k, k = -308 .. 338, without overflow or a subnormal in between. */
static inline double scale(double ax, int k)
{
    if (k > P10_MAX)        /* |x| < 1e-293: 10^(k-300) keeps it normal */
        return (ax * p10[k - 300 - P10_MIN]) * p10[300 - P10_MIN];
    if (k < P10_MIN)        /* 10^-308 would be subnormal */
        return (ax * p10[k + 300 - P10_MIN]) * p10[-300 - P10_MIN];
    return ax * p10[k - P10_MIN];
}

/* m = y rounded to nearest, unless y is within margin of a .5; then
 * false.  A carry to 10^d becomes 10^(d-1) with e + 1.  m must then have
 * d digits, or the slow path decides (it cannot happen, see the top). */
static inline bool round_scaled(double y, uint32_t d, int e,
                                uint64_t *m_out, int *e_out)
{
    double margin = y * TIE_MARGIN;
    int64_t mi = (int64_t)y;                      /* 0 <= y < 2^51 */
    double dist = (y - (double)mi) - 0.5;         /* both exact */
    uint64_t m = (uint64_t)mi + (dist > 0.0);

    if (__builtin_expect(__builtin_fabs(dist) < margin, 0))
        return false;
    if (__builtin_expect(m == pow10_u64[d], 0)) {
        m = pow10_u64[d - 1];
        e++;
    }
    if (__builtin_expect(m < pow10_u64[d - 1] || m >= pow10_u64[d], 0))
        return false;
    *m_out = m;
    *e_out = e;
    return true;
}

/* The fast path where the powers need two steps (|x| below 1e-293 or so,
 * or 10^-308): the exponent is e0 or e0 + 1, told apart by y itself. */
__attribute__((noinline))
static bool round_fast_far(double ax, uint32_t d, int e, uint64_t *m_out,
                           int *e_out)
{
    int k = (int)d - 1 - e;
    double y = scale(ax, k);
    double margin = y * TIE_MARGIN;
    double dt = y - ((double)pow10_u64[d] - 0.5);   /* exact when small */

    if (dt > -margin) {
        if (dt < margin)
            return false;
        e++;
        y = scale(ax, k - 1);
    }
    return round_scaled(y, d, e, m_out, e_out);
}

/* The fast path (see the top of the file): true with *m and *e when y is
 * far enough from every point where the answer changes, false when the
 * slow path must decide.  ax is finite and > 0, 1 <= d <= 15.
 *
 * For the usual magnitudes the exponent comes from comparing |x| with
 * 10^(e0+1).  That power is rounded, so the comparison may be wrong when
 * |x| is within a unit in the last place of it; y is then within a few
 * units of 10^d or of 10^(d-1), and both round to the same key as the
 * right exponent would give (10^d carries; 10^(d-1) - 10^(d-1) 2^-51 is
 * far above the 10^(d-1) - 0.05 where the lower decade would give
 * another answer). */
static inline bool round_fast(double ax, uint32_t d, uint64_t *m_out,
                              int *e_out)
{
    uint64_t bits;

    memcpy(&bits, &ax, sizeof bits);
    int b = (int)(bits >> 52) - 1023;
    int e = floor_log10_pow2(b);
    int k = (int)d - 2 - e;           /* k for e + 1; at most k + 1 below */
    if (__builtin_expect(b == -1023 || e + 1 < P10_MIN || k + 1 > P10_MAX ||
                         k < P10_MIN, 0)) {
        if (b == -1023)               /* subnormal: 63 - clz - 1074 */
            e = floor_log10_pow2(-1011 - __builtin_clzll(bits));
        return round_fast_far(ax, d, e, m_out, e_out);
    }
    int up = ax >= p10[e + 1 - P10_MIN];
    e += up;
    k += 1 - up;
    return round_scaled(ax * p10[k - P10_MIN], d, e, m_out, e_out);
}

/* The reference: glibc's %.*e, exact in every case.  It rounds as the
 * thread's floating-point rounding mode says, so a program that changed
 * the mode gets it set to nearest for the call.  The digits are read
 * whatever the locale's decimal point is. */
__attribute__((noinline))
static int round_slow(double ax, uint32_t d, uint64_t *m_out, int *e_out)
{
    char buf[64];
    const char *p = buf;
    uint64_t m = 0;
    unsigned nd = 0;
    int e = 0, neg = 0;

    int mode = fegetround();
    if (mode != FE_TONEAREST)
        fesetround(FE_TONEAREST);
    int n = snprintf(buf, sizeof buf, "%.*e", (int)d - 1, ax);
    if (mode != FE_TONEAREST)
        fesetround(mode);
    if (n <= 0 || (size_t)n >= sizeof buf)
        return MPIKVS_ERR_INVAL;
    for (; *p && *p != 'e' && *p != 'E'; p++)
        if (*p >= '0' && *p <= '9') {
            m = m * 10 + (uint64_t)(*p - '0');
            nd++;
        }
    if (*p == '\0' || nd != d)
        return MPIKVS_ERR_INVAL;
    p++;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    for (nd = 0; *p >= '0' && *p <= '9' && nd < 5; p++, nd++)
        e = e * 10 + (*p - '0');
    if (nd == 0 || *p != '\0' || m < pow10_u64[d - 1] || m >= pow10_u64[d])
        return MPIKVS_ERR_INVAL;
    *m_out = m;
    *e_out = neg ? -e : e;
    return MPIKVS_OK;
}

__attribute__((always_inline))
static inline int round_core(double x, uint32_t digits, double zero_below,
                             struct kvshm_decimal *out)
{
    double ax = __builtin_fabs(x);
    uint64_t m;
    int e;

    if (digits < KVSHM_DIGITS_MIN || digits > KVSHM_DIGITS_MAX ||
        !(ax <= DBL_MAX) || !(zero_below >= 0.0))
        return MPIKVS_ERR_INVAL;
    if (ax == 0.0 || ax < zero_below) {
        *out = (struct kvshm_decimal){.zero = true};
        return MPIKVS_OK;
    }
    if (!(digits <= KVSHM_DIGITS_NARROW && round_fast(ax, digits, &m, &e))) {
        int rc = round_slow(ax, digits, &m, &e);
        if (rc != MPIKVS_OK)
            return rc;
    }
    out->zero = false;
    out->negative = __builtin_signbit(x) != 0;
    out->mantissa = m;
    out->exponent = e;
    return MPIKVS_OK;
}

int kvshm_round_decimal(double x, uint32_t digits, double zero_below,
                        struct kvshm_decimal *out)
{
    return round_core(x, digits, zero_below, out);
}

/* ---- bytes ------------------------------------------------------------ */

/* Byte by byte, so the bytes are the same on every host; compilers merge
 * the eight stores (or loads) into one where the host is little endian. */
static inline void put_le64(unsigned char *p, uint64_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    p[4] = (unsigned char)(v >> 32);
    p[5] = (unsigned char)(v >> 40);
    p[6] = (unsigned char)(v >> 48);
    p[7] = (unsigned char)(v >> 56);
}

static inline uint64_t get_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
           (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

static inline void encode(const struct kvshm_decimal *d, uint32_t digits,
                          unsigned char *out)
{
    if (digits <= KVSHM_DIGITS_NARROW) {
        uint64_t w = 0;
        if (!d->zero)
            w = (uint64_t)d->negative << 63 |
                ((uint64_t)(d->exponent + KVSHM_EXP_BIAS) & NARROW_EXP_MASK)
                    << NARROW_MANT_BITS |
                (d->mantissa & ((UINT64_C(1) << NARROW_MANT_BITS) - 1));
        put_le64(out, w);
    } else {
        uint64_t m = 0, e = 0;
        if (!d->zero) {
            m = d->negative ? (uint64_t)0 - d->mantissa : d->mantissa;
            e = (uint64_t)(int64_t)d->exponent;
        }
        put_le64(out, m);
        put_le64(out + 8, e);
    }
}

void kvshm_encode_decimal(const struct kvshm_decimal *d, uint32_t digits,
                          unsigned char *out)
{
    encode(d, digits, out);
}

/* Whether some double rounds to dec.  The reals that round to it form an
 * interval around it, narrower below when the mantissa is 10^(d-1) (the
 * unit is ten times smaller there).  If the double nearest to dec (strtod;
 * DBL_MAX above it) is outside, a double inside can only be its neighbour
 * on dec's other side: there is none in between. */
static bool reachable(const struct kvshm_decimal *dec, uint32_t digits)
{
    struct kvshm_decimal r;
    char buf[48];
    int saved = errno;
    uint64_t bits;

    snprintf(buf, sizeof buf, "%" PRIu64 "e%d", dec->mantissa,
             dec->exponent - (int)digits + 1);
    double x = strtod(buf, NULL);
    errno = saved;
    if (x > DBL_MAX)
        x = DBL_MAX;
    memcpy(&bits, &x, sizeof bits);
    for (int i = 0; i < 3; i++) {
        uint64_t b = i == 0 ? bits : i == 1 ? bits + 1 : bits - 1;
        if (i == 2 && bits == 0)
            break;
        memcpy(&x, &b, sizeof x);
        if (round_core(x, digits, 0.0, &r) == MPIKVS_OK && !r.zero &&
            r.mantissa == dec->mantissa && r.exponent == dec->exponent)
            return true;
    }
    return false;
}

int kvshm_decode_decimal_form(const unsigned char *in, uint32_t digits,
                              struct kvshm_decimal *out)
{
    struct kvshm_decimal d = {.zero = false};
    int64_t e;

    if (!in || !out || digits < KVSHM_DIGITS_MIN ||
        digits > KVSHM_DIGITS_MAX)
        return MPIKVS_ERR_INVAL;
    if (digits <= KVSHM_DIGITS_NARROW) {
        uint64_t w = get_le64(in);
        if (w == 0) {
            *out = (struct kvshm_decimal){.zero = true};
            return MPIKVS_OK;
        }
        d.negative = w >> 63;
        d.mantissa = w & ((UINT64_C(1) << NARROW_MANT_BITS) - 1);
        e = (int64_t)((w >> NARROW_MANT_BITS) & NARROW_EXP_MASK) -
            KVSHM_EXP_BIAS;
    } else {
        uint64_t m = get_le64(in);
        e = (int64_t)get_le64(in + 8);
        if (m == 0 && e == 0) {
            *out = (struct kvshm_decimal){.zero = true};
            return MPIKVS_OK;
        }
        d.negative = m >> 63;
        d.mantissa = d.negative ? (uint64_t)0 - m : m;
    }
    /* a sign or an exponent with a zero mantissa, a mantissa of another
     * length, an exponent no double has */
    if (d.mantissa < pow10_u64[digits - 1] || d.mantissa >= pow10_u64[digits]
        || e < EXP_MIN || e > EXP_MAX)
        return MPIKVS_ERR_INVAL;
    d.exponent = (int32_t)e;
    *out = d;
    return MPIKVS_OK;
}

int kvshm_decode_decimal(const unsigned char *in, uint32_t digits,
                         struct kvshm_decimal *out)
{
    struct kvshm_decimal d;
    int rc = kvshm_decode_decimal_form(in, digits, &d);

    if (rc != MPIKVS_OK)
        return rc;
    /* a value no double rounds to */
    if (!d.zero && !reachable(&d, digits))
        return MPIKVS_ERR_INVAL;
    *out = d;
    return MPIKVS_OK;
}

uint64_t kvshm_pow10_u64(uint32_t n)
{
    return n <= KVSHM_DIGITS_MAX + 1 ? pow10_u64[n] : 0;
}

double kvshm_pow10(int k)
{
    char buf[16];
    int saved = errno;
    double x;

    if (k >= P10_MIN && k <= P10_MAX)
        return p10[k - P10_MIN];
    if (k > P10_MAX)
        return HUGE_VAL;
    if (k <= EXP_MIN)
        return 0.0;   /* below half of the smallest subnormal */
    /* a subnormal power: strtod rounds it correctly */
    snprintf(buf, sizeof buf, "1e%d", k);
    x = strtod(buf, NULL);
    errno = saved;
    return x;
}

/* ---- keys ------------------------------------------------------------- */

static const char *field_name(const struct kvshm_field *f)
{
    return memchr(f->name, '\0', sizeof f->name) ? f->name : "?";
}

/* A layout the key cannot have come from: the config rejects these. */
static int check_field(const struct kvshm_record *key, size_t i,
                       mpikvs_error_t *err)
{
    const struct kvshm_field *f = &key->fields[i];
    const char *name = field_name(f);

    if (f->offset > key->size || f->width > key->size - f->offset)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): bytes %u "
                          "to %llu lie outside the %zu-byte key (a bad "
                          "layout)", i, name, f->offset,
                          (unsigned long long)f->offset + f->width,
                          key->size);
    switch (f->type) {
    case KVSHM_FIELD_DOUBLE:
        if (f->digits < KVSHM_DIGITS_MIN || f->digits > KVSHM_DIGITS_MAX)
            return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): %u "
                              "digits is out of range %u..%u (a bad "
                              "layout)", i, name, f->digits,
                              KVSHM_DIGITS_MIN, KVSHM_DIGITS_MAX);
        if (f->width != kvshm_double_width(f->digits))
            return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): a "
                              "double of %u digits takes %u bytes, not %u "
                              "(a bad layout)", i, name, f->digits,
                              kvshm_double_width(f->digits), f->width);
        if (!(f->zero_below >= 0.0))
            return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): "
                              "zero_below %.17g is not a number >= 0 (a "
                              "bad layout)", i, name, f->zero_below);
        return MPIKVS_OK;
    case KVSHM_FIELD_INT64:
        if (f->width != 8)
            return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): an "
                              "int64 takes 8 bytes, not %u (a bad layout)",
                              i, name, f->width);
        return MPIKVS_OK;
    case KVSHM_FIELD_BYTES:
        return MPIKVS_OK;
    }
    return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): unknown type "
                      "%d (a bad layout)", i, name, (int)f->type);
}

/* Why field i of the key cannot be made from x: the message, and
 * MPIKVS_ERR_INVAL.  Off the hot path, which only knows that it failed. */
__attribute__((noinline, cold))
static int field_error(const struct kvshm_record *key, size_t i, double x,
                       mpikvs_error_t *err)
{
    const struct kvshm_field *f = &key->fields[i];
    int rc = check_field(key, i, err);

    if (rc != MPIKVS_OK)
        return rc;
    if (f->type == KVSHM_FIELD_BYTES)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s) is "
                          "bytes[%u]: it cannot come from a double", i,
                          field_name(f), f->width);
    if (x != x)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): %.17g is "
                          "not a number", i, field_name(f), x);
    if (!(__builtin_fabs(x) <= DBL_MAX))
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): %.17g is "
                          "infinite, not a number a key can hold", i,
                          field_name(f), x);
    if (f->type == KVSHM_FIELD_INT64) {
        if (!(x >= -0x1p63 && x < 0x1p63))
            return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): %.17g "
                              "is out of the int64 range [-2^63, 2^63)", i,
                              field_name(f), x);
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): %.17g is "
                          "not a whole number (the field is int64)", i,
                          field_name(f), x);
    }
    /* only the %.*e of the slow path is left to fail */
    return kvshm_fail(err, MPIKVS_ERR_INVAL, "field %zu (%s): %.17g cannot "
                      "be rounded to %u digits", i, field_name(f), x,
                      f->digits);
}

int kvshm_key_from_doubles(const struct kvshm_record *key, const double *in,
                           size_t n, void *key_out, mpikvs_error_t *err)
{
    unsigned char *out = key_out;

    if (!key || !key_out || (n && !in))
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "kvshm_key_from_doubles: "
                          "NULL %s", !key ? "layout" : !key_out ? "output"
                                                                : "input");
    if (!key->fields)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "the key is %zu raw bytes, "
                          "not fields: it cannot be made from doubles (give "
                          "the key fields in the config)", key->size);
    if (n != key->nfields)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "%zu number%s given for a "
                          "key of %zu fields (give one per field)", n,
                          n == 1 ? "" : "s", key->nfields);
    memset(out, 0, key->size);
    for (size_t i = 0; i < n; i++) {
        const struct kvshm_field *f = &key->fields[i];
        double x = in[i];

        if (__builtin_expect(f->offset > key->size ||
                             f->width > key->size - f->offset, 0))
            return field_error(key, i, x, err);
        if (f->type == KVSHM_FIELD_DOUBLE) {
            struct kvshm_decimal d;
            if (__builtin_expect(f->width != kvshm_double_width(f->digits) ||
                                 round_core(x, f->digits, f->zero_below,
                                            &d) != MPIKVS_OK, 0))
                return field_error(key, i, x, err);
            encode(&d, f->digits, out + f->offset);
        } else if (f->type == KVSHM_FIELD_INT64 && f->width == 8 &&
                   x >= -0x1p63 && x < 0x1p63 &&
                   (double)(int64_t)x == x) {
            /* in range, the cast is defined, and exact when whole */
            put_le64(out + f->offset, (uint64_t)(int64_t)x);
        } else {
            return field_error(key, i, x, err);
        }
    }
    return MPIKVS_OK;
}

/* ---- text ------------------------------------------------------------- */

/* snprintf-style output: everything is counted, what fits is written. */
struct text {
    char  *buf;
    size_t len, pos;
};

static void put_str(struct text *t, const char *s)
{
    for (; *s; s++, t->pos++)
        if (t->pos + 1 < t->len)
            t->buf[t->pos] = *s;
}

static void put_hex(struct text *t, const unsigned char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        char c[3] = {hex[p[i] >> 4], hex[p[i] & 15], '\0'};
        put_str(t, c);
    }
}

/* "-1.2345e-03", as printf's %.*e prints the same decimal; "0". */
static void put_decimal(struct text *t, const struct kvshm_decimal *d,
                        uint32_t digits)
{
    char m[24], rest[40];

    if (d->zero) {
        put_str(t, "0");
        return;
    }
    snprintf(m, sizeof m, "%" PRIu64, d->mantissa);
    rest[0] = m[0];
    rest[1] = '\0';
    if (d->negative)
        put_str(t, "-");
    put_str(t, rest);
    if (digits > 1) {
        put_str(t, ".");
        put_str(t, m + 1);
    }
    snprintf(rest, sizeof rest, "e%c%02d", d->exponent < 0 ? '-' : '+',
             d->exponent < 0 ? -d->exponent : d->exponent);
    put_str(t, rest);
}

int kvshm_key_to_text(const struct kvshm_record *key, const void *key_bytes,
                      char *buf, size_t len)
{
    struct text t = {.buf = buf, .len = len};
    const unsigned char *p = key_bytes;

    if (!key || !key_bytes || (!buf && len))
        return MPIKVS_ERR_INVAL;
    if (!key->fields) {
        put_hex(&t, p, key->size);
    } else {
        for (size_t i = 0; i < key->nfields; i++) {
            const struct kvshm_field *f = &key->fields[i];
            char num[32];

            if (check_field(key, i, NULL) != MPIKVS_OK)
                return MPIKVS_ERR_INVAL;
            if (i)
                put_str(&t, " ");
            put_str(&t, field_name(f));
            put_str(&t, "=");
            switch (f->type) {
            case KVSHM_FIELD_DOUBLE: {
                struct kvshm_decimal d;
                if (kvshm_decode_decimal(p + f->offset, f->digits, &d) !=
                    MPIKVS_OK)
                    return MPIKVS_ERR_INVAL;
                put_decimal(&t, &d, f->digits);
                break;
            }
            case KVSHM_FIELD_INT64:
                snprintf(num, sizeof num, "%" PRId64,
                         (int64_t)get_le64(p + f->offset));
                put_str(&t, num);
                break;
            case KVSHM_FIELD_BYTES:
                put_hex(&t, p + f->offset, f->width);
                break;
            }
        }
    }
    if (len)
        buf[t.pos < len ? t.pos : len - 1] = '\0';
    return t.pos > INT32_MAX ? MPIKVS_ERR_TOOBIG : (int)t.pos;
}

/* FNV-1a over the bytes of one value, into h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

uint64_t kvshm_record_rules_id(const struct kvshm_record *r)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325), size = r->size;

    h = fnv(h, &size, sizeof(size));
    for (size_t i = 0; r->fields && i < r->nfields; i++) {
        const struct kvshm_field *f = &r->fields[i];
        /* what makes the bytes, not the names: fields renamed are the
         * same rules */
        uint32_t words[] = {(uint32_t)f->type, f->digits, f->bytes,
                            f->offset, f->width};
        h = fnv(h, words, sizeof(words));
        h = fnv(h, &f->zero_below, sizeof(f->zero_below));
    }
    return r->fields ? h : 0;
}
