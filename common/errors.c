/*
 * errors.c - texts of the mpikvs return codes, and the detailed-error helper.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errors_internal.h"

/* The list (mpikvs_errors.h) is the band: every error code in it, and
 * as many as the band has values; the switch below refuses two codes of
 * one value, so no value of the band is left without a text. */
#define IN_BAND(name, value, text)                                      \
    _Static_assert((value) >= 0 || ((value) <= MPIKVS_ERR_FIRST &&      \
                                    (value) >= MPIKVS_ERR_LAST),        \
                   #name " is in the band");
MPIKVS_RETURN_CODES(IN_BAND)
#undef IN_BAND
#define ONE_ERROR(name, value, text) +((value) < 0)
_Static_assert((0 MPIKVS_RETURN_CODES(ONE_ERROR)) ==
                   MPIKVS_ERR_FIRST - MPIKVS_ERR_LAST + 1,
               "every value of the band is a code of the list");
#undef ONE_ERROR

const char *mpikvs_strerror(int rc)
{
    switch (rc) {
#define TEXT_OF(name, value, text)                                      \
    case name:                                                          \
        return text;
        MPIKVS_RETURN_CODES(TEXT_OF)
#undef TEXT_OF
    }
    if (rc < 0 && rc > -4096)
        return strerror(-rc);
    return "unknown mpikvs return code";
}

int kvshm_vfail(mpikvs_error_t *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
        err->code = code;
    }
    return code;
}

int kvshm_fail(mpikvs_error_t *err, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    kvshm_vfail(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void kvshm_format_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const unit[] = {"B",   "KiB", "MiB", "GiB",
                                       "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    unsigned u = 0;

    while (v >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
}
