/*
 * size.c - sizes and shares as people write them.
 *
 * Parsed by hand rather than with strtod/strtoull: those accept signs,
 * spaces, exponents and hex, each of which would make "--dht-size=-1" or
 * "1e3" mean something instead of being refused.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "errors_internal.h"
#include "size.h"

static const char usage[] =
    "use a whole number of bytes, or a number with K, M, G or T, e.g. 8G";

static int unit_shift(char c)
{
    switch (c) {
    case 'k': case 'K': return 10;
    case 'm': case 'M': return 20;
    case 'g': case 'G': return 30;
    case 't': case 'T': return 40;
    default:            return -1;
    }
}

/* Digits of s from *i on, into *value; false on overflow.  *ndigits
 * counts them. */
static bool read_digits(const char *s, size_t *i, uint64_t *value,
                        unsigned *ndigits)
{
    *value = 0;
    *ndigits = 0;
    for (; s[*i] >= '0' && s[*i] <= '9'; (*i)++, (*ndigits)++) {
        unsigned d = (unsigned)(s[*i] - '0');
        if (*value > (UINT64_MAX - d) / 10)
            return false;
        *value = *value * 10 + d;
    }
    return true;
}

static int not_a_size(mpikvs_error_t *err, const char *what, const char *text,
                      const char *why)
{
    return kvshm_fail(err, MPIKVS_ERR_INVAL, "%s: '%s' is not a size (%s%s%s)",
                      what, text, why, *why ? "; " : "", usage);
}

/* Fraction digits that can matter: x * 2^shift rounded half up is
 * (floor(x * 2^(shift + 1)) + 1) / 2, that floor only compares x with
 * multiples of 2^-(shift + 1), each written exactly in shift + 1
 * decimals, and dropping the digits after those never moves x across
 * one of them.  shift is at most 40 (T). */
#define FRAC_DIGITS_MAX 41

/* digits (most significant first, n of them) are a decimal fraction x;
 * returns x * 2^shift rounded to the nearest integer, a half up.  Exact:
 * doubles x in decimal shift + 1 times and collects the carries, the
 * binary digits of floor(x * 2^(shift + 1)). */
static uint64_t fraction_of_unit(const char *digits, size_t n, int shift)
{
    unsigned char d[FRAC_DIGITS_MAX];
    uint64_t twice = 0;

    for (size_t j = 0; j < n; j++)
        d[j] = (unsigned char)(digits[j] - '0');
    for (int b = 0; b <= shift; b++) {
        unsigned carry = 0;
        for (size_t j = n; j-- > 0;) {
            unsigned v = d[j] * 2u + carry;
            d[j] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        twice = twice << 1 | carry;
    }
    return (twice + 1) >> 1;
}

int kvshm_parse_size(const char *text, const char *what, uint64_t min,
                     uint64_t *bytes, mpikvs_error_t *err)
{
    uint64_t whole, result;
    unsigned nwhole, nfrac = 0;
    size_t i = 0, frac_at = 0;
    int shift = 0;

    if (!text || !*text)
        return kvshm_fail(err, MPIKVS_ERR_INVAL, "%s: empty size (%s)", what,
                          usage);
    if (text[0] == '-')
        return not_a_size(err, what, text, "it is negative");
    if (!read_digits(text, &i, &whole, &nwhole))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "%s: '%s' is too large (at most 16 EiB)", what,
                          text);
    if (nwhole == 0)
        return not_a_size(err, what, text, "it does not start with a digit");
    if (text[i] == '.') {
        frac_at = ++i;
        for (; text[i] >= '0' && text[i] <= '9'; i++, nfrac++)
            ;
        if (nfrac == 0)
            return not_a_size(err, what, text, "no digits after the point");
    }
    if (text[i]) {
        shift = unit_shift(text[i]);
        if (shift < 0 || text[i + 1])
            return not_a_size(err, what, text,
                              text[i] == 'e' || text[i] == 'E'
                                  ? "exponents are not sizes"
                                  : "unknown unit or trailing characters");
    } else if (nfrac) {
        return not_a_size(err, what, text,
                          "a fraction of a byte needs a unit");
    }

    if (shift && whole > (UINT64_MAX >> shift))
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "%s: '%s' is too large (at most 16 EiB)", what,
                          text);
    result = whole << shift;
    if (nfrac) {
        uint64_t part = fraction_of_unit(
            text + frac_at, nfrac < FRAC_DIGITS_MAX ? nfrac : FRAC_DIGITS_MAX,
            shift);
        if (result > UINT64_MAX - part)
            return kvshm_fail(err, MPIKVS_ERR_INVAL,
                              "%s: '%s' is too large (at most 16 EiB)", what,
                              text);
        result += part;
    }
    if (result == 0 && min > 0)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "%s: '%s' is zero, which makes no sense here", what,
                          text);
    if (result < min)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "%s: '%s' is below the minimum of %llu bytes", what,
                          text, (unsigned long long)min);
    *bytes = result;
    return MPIKVS_OK;
}

int kvshm_parse_share(const char *text, const char *what, uint64_t *bytes,
                      double *fraction, mpikvs_error_t *err)
{
    size_t len = text ? strlen(text) : 0;

    *bytes = 0;
    *fraction = 0;
    if (len > 1 && text[len - 1] == '%') {
        char number[32];
        uint64_t whole, frac = 0, scale = 1;
        unsigned nwhole, nfrac = 0;
        size_t i = 0;

        if (len - 1 >= sizeof(number))
            return kvshm_fail(err, MPIKVS_ERR_INVAL,
                              "%s: '%s' is not a percentage", what, text);
        memcpy(number, text, len - 1);
        number[len - 1] = '\0';
        if (!read_digits(number, &i, &whole, &nwhole) || nwhole == 0)
            return kvshm_fail(err, MPIKVS_ERR_INVAL,
                              "%s: '%s' is not a percentage (e.g. 25%%)",
                              what, text);
        if (number[i] == '.')
            for (i++; number[i] >= '0' && number[i] <= '9'; i++, nfrac++)
                if (nfrac < 9) {
                    frac = frac * 10 + (uint64_t)(number[i] - '0');
                    scale *= 10;
                }
        if (number[i] || (number[nwhole] == '.' && nfrac == 0))
            return kvshm_fail(err, MPIKVS_ERR_INVAL,
                              "%s: '%s' is not a percentage (e.g. 25%%)",
                              what, text);
        double p = (double)whole + (double)frac / (double)scale;
        if (!(p > 0.0 && p <= 100.0))
            return kvshm_fail(err, MPIKVS_ERR_INVAL,
                              "%s: %s is out of range (0%%, 100%%]", what,
                              text);
        *fraction = p / 100.0;
        return MPIKVS_OK;
    }
    return kvshm_parse_size(text, what, 1, bytes, err);
}

const char *kvshm_size_like(char *buf, size_t len, uint64_t bytes,
                            const char *given)
{
    size_t n = given ? strlen(given) : 0;
    int shift = n ? unit_shift(given[n - 1]) : -1;
    uint64_t units;

    if (shift <= 0) {
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
        return buf;
    }
    /* rounded up: a limit given back must hold what it limits */
    units = (bytes >> shift) + ((bytes & ((UINT64_C(1) << shift) - 1)) != 0);
    snprintf(buf, len, "%llu%c", (unsigned long long)units, given[n - 1]);
    return buf;
}
