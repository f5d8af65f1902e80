/*
 * near_key.c - coarse keys, inputs, steps and distances of keys
 * (near_key.h).
 *
 * Everything works on the decimal a key field holds (round.h), in
 * integers where it rounds, so the coarse key of a key is the same bytes
 * on every rank and every machine.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "near_key.h"
#include "round.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The largest integer below which every integer is a double. */
#define EXACT_INT    (UINT64_C(1) << 53)
/* 10^k is a double exactly up to here (5^22 < 2^53). */
#define EXACT_POW10  22

static inline uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void kvshm_key_layout(struct kvshm_record *r)
{
    size_t offset = 0;

    for (size_t i = 0; r->fields && i < r->nfields; i++) {
        struct kvshm_field *f = &r->fields[i];
        f->width = f->type == KVSHM_FIELD_DOUBLE ? kvshm_double_width(f->digits)
                   : f->type == KVSHM_FIELD_INT64 ? 8u
                                                  : f->bytes;
        f->offset = (uint32_t)offset;
        offset += f->width;
    }
    if (r->fields)
        r->size = offset;
}

/* d rounded from digits to fewer, in integers (near_key.h). */
static int coarsen_decimal(struct kvshm_decimal *d, uint32_t digits,
                           uint32_t coarse_digits)
{
    uint64_t unit = kvshm_pow10_u64(digits - coarse_digits);
    uint64_t q = d->mantissa / unit, r = d->mantissa % unit;

    if (d->zero || unit == 1)
        return MPIKVS_OK;
    if (r > unit / 2 || (r == unit / 2 && (q & 1)))
        q++;
    if (q == kvshm_pow10_u64(coarse_digits)) {   /* 9.99 -> 10.0 */
        q = kvshm_pow10_u64(coarse_digits - 1);
        if (d->exponent == KVSHM_EXP_MAX)
            return MPIKVS_ERR_INVAL;   /* 9.99e308: no key has it */
        d->exponent++;
    }
    d->mantissa = q;
    return MPIKVS_OK;
}

int kvshm_key_coarsen(const struct kvshm_record *key,
                      const struct kvshm_record *coarse,
                      const void *key_bytes, void *coarse_out)
{
    const unsigned char *in = key_bytes;
    unsigned char *out = coarse_out;

    if (!key || !coarse || !in || !out || !key->fields || !coarse->fields ||
        key->nfields != coarse->nfields)
        return MPIKVS_ERR_INVAL;
    for (size_t i = 0; i < key->nfields; i++) {
        const struct kvshm_field *f = &key->fields[i], *c = &coarse->fields[i];
        struct kvshm_decimal d;

        if (f->type != c->type)
            return MPIKVS_ERR_INVAL;
        if (f->type != KVSHM_FIELD_DOUBLE) {
            if (f->width != c->width)
                return MPIKVS_ERR_INVAL;
            memcpy(out + c->offset, in + f->offset, c->width);
            continue;
        }
        if (c->digits < KVSHM_DIGITS_MIN || c->digits > f->digits ||
            kvshm_decode_decimal_form(in + f->offset, f->digits, &d) !=
                MPIKVS_OK ||
            coarsen_decimal(&d, f->digits, c->digits) != MPIKVS_OK)
            return MPIKVS_ERR_INVAL;
        kvshm_encode_decimal(&d, c->digits, out + c->offset);
    }
    return MPIKVS_OK;
}

size_t kvshm_key_ninputs(const struct kvshm_record *key)
{
    size_t n = 0;

    for (size_t i = 0; key->fields && i < key->nfields; i++)
        n += key->fields[i].type != KVSHM_FIELD_BYTES;
    return n;
}

/* The double nearest to m x 10^k, m > 0. */
static double decimal_value(uint64_t m, int k)
{
    char buf[48];
    int saved;
    double x;

    /* trailing zeros into the power: 1000000e-25 is 1e-19 */
    while ((k < -EXACT_POW10 || m > EXACT_INT) && m % 10 == 0) {
        m /= 10;
        k++;
    }
    /* and a large power into a short mantissa, exactly */
    while (k > EXACT_POW10 && m <= EXACT_INT / 10) {
        m *= 10;
        k--;
    }
    if (m <= EXACT_INT && k >= -EXACT_POW10 && k <= EXACT_POW10) {
        /* both operands exact: the one operation rounds once */
        double p = kvshm_pow10(k < 0 ? -k : k);
        return k < 0 ? (double)m / p : (double)m * p;
    }
    saved = errno;
    snprintf(buf, sizeof buf, "%" PRIu64 "e%d", m, k);
    x = strtod(buf, NULL);
    errno = saved;
    return x;
}

int kvshm_key_inputs(const struct kvshm_record *key, const void *key_bytes,
                     double *out)
{
    const unsigned char *in = key_bytes;
    size_t n = 0;

    if (!key || !in || !out)
        return MPIKVS_ERR_INVAL;
    for (size_t i = 0; key->fields && i < key->nfields; i++) {
        const struct kvshm_field *f = &key->fields[i];
        struct kvshm_decimal d;

        if (f->type == KVSHM_FIELD_INT64) {
            out[n++] = (double)(int64_t)get_le64(in + f->offset);
        } else if (f->type == KVSHM_FIELD_DOUBLE) {
            if (kvshm_decode_decimal_form(in + f->offset, f->digits, &d) !=
                MPIKVS_OK)
                return MPIKVS_ERR_INVAL;
            if (d.zero) {
                out[n++] = 0.0;
            } else {
                double x = decimal_value(d.mantissa,
                                         d.exponent - (int)f->digits + 1);
                out[n++] = d.negative ? -x : x;
            }
        }
    }
    return MPIKVS_OK;
}

int kvshm_key_steps(const struct kvshm_record *key, const void *key_bytes,
                    double *steps)
{
    const unsigned char *in = key_bytes;
    size_t n = 0;

    if (!key || !in || !steps)
        return MPIKVS_ERR_INVAL;
    for (size_t i = 0; key->fields && i < key->nfields; i++) {
        const struct kvshm_field *f = &key->fields[i];
        struct kvshm_decimal d;

        if (f->type == KVSHM_FIELD_INT64) {
            steps[n++] = 1.0;
        } else if (f->type == KVSHM_FIELD_DOUBLE) {
            if (kvshm_decode_decimal_form(in + f->offset, f->digits, &d) !=
                MPIKVS_OK)
                return MPIKVS_ERR_INVAL;
            if (d.zero) {
                steps[n++] = f->zero_below > 0.0 ? f->zero_below : 0.0;
            } else {
                double s = kvshm_pow10(d.exponent - (int)f->digits + 1);
                /* 0 means "a zero field": a step never underflows to it */
                steps[n++] = s > 0.0 ? s : DBL_TRUE_MIN;
            }
        }
    }
    return MPIKVS_OK;
}

double kvshm_key_distance(size_t n, const double *query_inputs,
                          const double *query_steps,
                          const double *member_inputs,
                          const double *member_steps)
{
    double sum = 0.0;

    for (size_t i = 0; i < n; i++) {
        double s = query_steps[i] > 0.0 ? query_steps[i] : member_steps[i];
        if (s > 0.0) {
            double d = (member_inputs[i] - query_inputs[i]) / s;
            sum += d * d;
        }
    }
    return sqrt(sum);
}
