/*
 * record.h - the byte layout of a table's keys and values.
 *
 * A record is either raw bytes of a fixed size (no fields) or a list of
 * fields placed one after the other.  Key fields are canonical: a double
 * is rounded to its significant digits and stored as an integer mantissa
 * and a decimal exponent (round.h), never as a rounded double, so every
 * rank makes the same bytes for the same rounded value.
 */
#ifndef MPIKVS_COMMON_RECORD_H
#define MPIKVS_COMMON_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define KVSHM_FIELD_NAME_MAX  48u     /* terminator included */
#define KVSHM_DIGITS_MIN      1u
#define KVSHM_DIGITS_MAX      17u
#define KVSHM_DIGITS_NARROW   15u     /* up to here a double takes 8 bytes */

enum kvshm_field_type {
    KVSHM_FIELD_DOUBLE = 1,  /* key: rounded, 8 or 16 bytes; value: 8 bytes */
    KVSHM_FIELD_INT64,       /* 8 bytes, little endian two's complement */
    KVSHM_FIELD_BYTES        /* bytes[n]: n bytes as given */
};

struct kvshm_field {
    char                  name[KVSHM_FIELD_NAME_MAX];
    enum kvshm_field_type type;
    uint32_t              digits;      /* key doubles: significant digits */
    double                zero_below;  /* key doubles: |x| below is 0 */
    uint32_t              bytes;       /* bytes[n]: n */
    uint32_t              offset;      /* where it starts in the key/value */
    uint32_t              width;       /* bytes it takes there */
};

struct kvshm_record {
    struct kvshm_field *fields;        /* NULL: raw bytes of size */
    size_t              nfields;
    size_t              size;          /* bytes of a whole key or value */
};

#endif /* MPIKVS_COMMON_RECORD_H */
