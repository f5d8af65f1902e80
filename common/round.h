/*
 * round.h - canonical keys from doubles.
 *
 * A double field of d significant digits becomes (sign, m, e): the value
 * m.mmm x 10^e with m of exactly d digits, rounded to nearest with ties to
 * even on the double's exact value (what printf's %.*e does).  It is then
 * stored as integers, never as a rounded double:
 *
 *   d <= 15: 8 bytes, one little-endian word
 *            sign << 63 | (e + KVSHM_EXP_BIAS) << 53 | m
 *   d >= 16: 16 bytes, little-endian int64 signed mantissa, int64 e
 *
 * Zero (0.0, -0.0, and |x| below the field's zero_below) is all zero
 * bytes.  NaN and infinities are errors, never keys.  Two doubles give the
 * same bytes exactly when they round to the same d-digit decimal, however
 * they were computed and on whichever rank.
 *
 * Thread-safe; no allocation.
 */
#ifndef MPIKVS_SHM_ROUND_H
#define MPIKVS_SHM_ROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "mpikvs_errors.h"

#define KVSHM_EXP_BIAS 400

/* The decimal exponents a rounded double can have: DBL_TRUE_MIN is
 * 4.9e-324 and DBL_MAX 1.8e308 (2e308 to one digit). */
#define KVSHM_EXP_MIN (-324)
#define KVSHM_EXP_MAX 308

/* Bytes a key double of that many digits takes: 8 or 16. */
static inline uint32_t kvshm_double_width(uint32_t digits)
{
    return digits <= KVSHM_DIGITS_NARROW ? 8u : 16u;
}

/* A rounded double, before it is encoded. */
struct kvshm_decimal {
    bool     zero;
    bool     negative;
    uint64_t mantissa;   /* exactly digits digits, unless zero */
    int32_t  exponent;   /* of the leading digit */
};

/* Round x to digits (1..17) significant digits; |x| < zero_below is zero.
 * Returns MPIKVS_OK, or MPIKVS_ERR_INVAL for NaN, an infinity or digits
 * out of range. */
int kvshm_round_decimal(double x, uint32_t digits, double zero_below,
                        struct kvshm_decimal *out);

/* Write a rounded double in its canonical form: kvshm_double_width(digits)
 * bytes. */
void kvshm_encode_decimal(const struct kvshm_decimal *d, uint32_t digits,
                          unsigned char *out);

/* Read it back.  Returns MPIKVS_OK or MPIKVS_ERR_INVAL (bytes that no
 * rounding can make). */
int kvshm_decode_decimal(const unsigned char *in, uint32_t digits,
                         struct kvshm_decimal *out);

/* The same without asking whether some double rounds to the decimal
 * (kvshm_decode_decimal's strtod, a microsecond): only the form is
 * checked (a mantissa of exactly digits digits, an exponent a double can
 * have, no sign or exponent on zero).  For the bytes of keys the table
 * made (kvshm_key_from_doubles, kvshm_key_coarsen), where speed counts.
 * Returns MPIKVS_OK or MPIKVS_ERR_INVAL. */
int kvshm_decode_decimal_form(const unsigned char *in, uint32_t digits,
                              struct kvshm_decimal *out);

/* 10^n as an integer for n = 0 .. KVSHM_DIGITS_MAX + 1; 0 beyond. */
uint64_t kvshm_pow10_u64(uint32_t n);

/* 10^k correctly rounded to a double: from a table of literals for the
 * normal powers (10^-307 .. 10^308), by strtod for the subnormal ones;
 * 0 below 10^-324 and HUGE_VAL above 10^308. */
double kvshm_pow10(int k);

/* Build a key from n doubles, one per field of key (double fields are
 * rounded; an int64 field takes a double that is a whole number in range).
 * n must equal key->nfields and no field may be bytes[n].  key_out gets
 * key->size bytes.  Returns MPIKVS_OK or MPIKVS_ERR_INVAL with err saying
 * which field and value (e.g. "field 3 (Ca): nan is not a number"). */
int kvshm_key_from_doubles(const struct kvshm_record *key, const double *in,
                           size_t n, void *key_out, mpikvs_error_t *err);

/* Render a key as text, one "name=value" per field separated by spaces
 * (doubles as mantissa and exponent, "1.2345e-03"; int64 in decimal;
 * bytes in hex).  A raw key renders as hex.  Returns the length the text
 * needs (snprintf-style, terminator excluded), or a negative code. */
int kvshm_key_to_text(const struct kvshm_record *key, const void *key_bytes,
                      char *buf, size_t len);

/* The identity of a record's rules: a 64-bit hash of its size and of
 * each field's type, digits, zero_below, width and place (not its name),
 * so that two records that make the same bytes from the same values have
 * the same one.  0 for raw bytes (no fields).  A save file carries those
 * of its key and value (mpikvs_save(3)). */
uint64_t kvshm_record_rules_id(const struct kvshm_record *r);

#endif /* MPIKVS_SHM_ROUND_H */
