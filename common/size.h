/*
 * size.h - sizes as people write them: "8G", "512M", "1.5G", "64k", "4096".
 *
 * K, M, G and T (either case) are powers of 1024, as in Slurm.  A number
 * with a fraction needs a unit ("1.5G") and is rounded to the nearest
 * byte, a half byte up ("1.1K" is 1126), from the exact value of all the
 * digits given.
 * Rejected: empty, signs, exponents ("1e3"), other units ("12Gb", "1KiB"),
 * spaces, trailing junk, and anything above UINT64_MAX.
 */
#ifndef MPIKVS_SHM_SIZE_H
#define MPIKVS_SHM_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "mpikvs_errors.h"

/* Parse text into *bytes.  what names the value in messages ("--dht-size",
 * "tables.chem.size"); min is the smallest size allowed (1 where zero
 * makes no sense).  Returns MPIKVS_OK or MPIKVS_ERR_INVAL with a message
 * such as "--dht-size: '12Gb' is not a size (use a number with K, M, G or
 * T, e.g. 8G)". */
int kvshm_parse_size(const char *text, const char *what, uint64_t min,
                     uint64_t *bytes, mpikvs_error_t *err);

/* A share of something: "25%" (0 < p <= 100) gives *fraction = 0.25; a
 * size gives *bytes.  Exactly one of them is set, the other is 0. */
int kvshm_parse_share(const char *text, const char *what, uint64_t *bytes,
                      double *fraction, mpikvs_error_t *err);

/* bytes in the unit of given, a size as someone wrote it ("4K": K, in
 * the same case), rounded up to a whole number of that unit so that it
 * is never less than bytes: 16832 in the unit of "4K" is "17K"; in that
 * of "4096" or of NULL, "16832".  Into buf (32 bytes are enough);
 * returns buf.  For messages that give a limit back in the words the
 * user used. */
const char *kvshm_size_like(char *buf, size_t len, uint64_t bytes,
                            const char *given);

#endif /* MPIKVS_SHM_SIZE_H */
