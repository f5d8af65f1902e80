/*
 * near_key.h - what neighbourhoods (a table's "near" setting) need of
 * keys: the coarse key a key belongs to, a key's inputs and rounding
 * steps as doubles, and the distance between two keys.
 *
 * The coarse record (struct kvshm_table_config near.key) has the key's
 * fields in the same order with as many or fewer digits for the double
 * fields; int64 and bytes[N] fields are the same.  A key's
 * neighbourhood is named by its coarse key: kvshm_key_coarsen rounds
 * each double field of the key's bytes (not the raw input) to the coarse
 * digits, exactly in decimal.
 *
 * The metric (mpikvs_get_near(3)): the inputs of a key are its double
 * and int64 fields as doubles, in the key's order (bytes[N] fields are
 * not inputs).  The step of an input in a key is the unit of its last
 * digit there: 10^(e - digits + 1) for a double of exponent e, 1 for an
 * int64, and for a double that is zero its zero_below (0 if it has
 * none).  The distance of a member m to the query q is
 *
 *     sqrt( sum over inputs i of ((m_i - q_i) / s_i)^2 )
 *
 * with s_i the query's step of input i, or the member's where the
 * query's is 0 (the query's field is exactly zero); a field whose two
 * steps are 0 is zero in both and adds 0.  So a distance of 1 is one
 * unit of the query's last digit in one field, whatever the fields'
 * magnitudes and units.  Fields far apart relative to their step may
 * give +inf.
 *
 * MPI-free, no allocation, no global state: thread-safe.
 */
#ifndef MPIKVS_COMMON_NEAR_KEY_H
#define MPIKVS_COMMON_NEAR_KEY_H

#include <stddef.h>

#include "record.h"

/* Lay out a record whose fields have their type, digits and bytes set:
 * each field's width (a key double's kvshm_double_width(digits), 8 for
 * an int64, N for bytes[N]), its offset after the one before, and the
 * record's size.  How the config makes the coarse record. */
void kvshm_key_layout(struct kvshm_record *r);

/*
 * The coarse key of key_bytes (a key of the record key) into coarse_out
 * (coarse->size bytes; it must not overlap key_bytes).  A double field of
 * d digits, m x 10^(e-d+1) with the integer m of d digits, becomes c
 * digits (coarse's): m / 10^(d-c) rounded to nearest, ties to even, in
 * integers; a result of 10^c carries into 10^(c-1) with e + 1.  Zero
 * stays zero, a nonzero value stays nonzero (even below the field's
 * zero_below, which applies to the raw doubles only).  int64 and bytes
 * fields are copied.
 *
 * This is the coarse rounding of the key's rounded value, which can
 * differ from rounding the raw input to c digits at once: 0.12549 to 4
 * digits is 0.1255, which to 3 digits is 0.126 (a tie, to even), while
 * 0.12549 to 3 digits is 0.125.  That is as it should be: every rank
 * computes a key's neighbourhood from the same key bytes, so a key is in
 * one neighbourhood wherever it is put or looked for, and the raw input
 * is not at hand for a key that was made elsewhere.
 *
 * A coarse field of 16 digits (from a key of 17) can be a decimal that
 * no double rounds to directly; it is a name, hashed and compared,
 * never decoded with kvshm_decode_decimal.
 *
 * Returns MPIKVS_OK, or MPIKVS_ERR_INVAL for records that do not match
 * (another number of fields, another type, more digits in coarse) or a
 * double field whose bytes no rounding makes (kvshm_decode_decimal_form).
 */
int kvshm_key_coarsen(const struct kvshm_record *key,
                      const struct kvshm_record *coarse,
                      const void *key_bytes, void *coarse_out);

/* The number of inputs of a key of that record: its double and int64
 * fields (0 for raw bytes). */
size_t kvshm_key_ninputs(const struct kvshm_record *key);

/*
 * The inputs of key_bytes as doubles into out[kvshm_key_ninputs(key)]: a
 * double field is the double nearest to its decimal m x 10^(e-d+1)
 * (what strtod makes of the key's text), zero is 0.0; an int64 is
 * converted (rounded to nearest beyond 2^53).  Fast: an m below 2^53
 * (trailing zeros moved into the power) times or divided by an exact
 * power of ten up to 10^22, one rounding, which covers every field of up
 * to 15 digits with -22 <= e-d+1 <= 22; strtod otherwise (about a
 * microsecond).  Returns MPIKVS_OK or MPIKVS_ERR_INVAL (a double field
 * whose bytes no rounding makes).
 */
int kvshm_key_inputs(const struct kvshm_record *key, const void *key_bytes,
                     double *out);

/*
 * The rounding step of each input in key_bytes into
 * steps[kvshm_key_ninputs(key)]: 10^(e - d + 1) for a nonzero double
 * (correctly rounded; the smallest subnormal where that underflows), 1
 * for an int64, and for a double field that is zero its zero_below, or
 * 0 where that is 0 (kvshm_key_distance then takes the other key's
 * step).  Returns MPIKVS_OK or MPIKVS_ERR_INVAL as kvshm_key_inputs.
 */
int kvshm_key_steps(const struct kvshm_record *key, const void *key_bytes,
                    double *steps);

/* The distance of a member to the query (the metric above): n inputs
 * and steps of each, from kvshm_key_inputs and kvshm_key_steps. */
double kvshm_key_distance(size_t n, const double *query_inputs,
                          const double *query_steps,
                          const double *member_inputs,
                          const double *member_steps);

#endif /* MPIKVS_COMMON_NEAR_KEY_H */
