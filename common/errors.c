/*
 * errors.c - texts of the mpikvs return codes, and the detailed-error helper.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errors_internal.h"

static const char *const band_text[] = {
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_INVAL]     = "invalid argument",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_NAME]      = "invalid region name",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_EXISTS]    = "region already exists",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_NOTFOUND]  = "no such region",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_NOSPACE]   = "not enough space in the shm directory",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_FOREIGN]   = "not an mpikvs region",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_VERSION]   = "region has another format version or layout",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_CORRUPT]   = "region header is corrupt",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_TRUNCATED] = "region file is truncated",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_SIZE]      = "region file size contradicts its header",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_KIND]      = "region is of another kind",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_OWNER]     = "region belongs to another user",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_FULL]      = "region is full",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_TOOBIG]    = "key or value too large",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_STALLED]   = "stalled: a writer, lock holder or peer did not finish in time",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_MPI]       = "an MPI call failed",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_MISMATCH]  = "ranks or regions disagree",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_CONFIG]    = "job config invalid or missing",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_TOOSMALL]  = "memory too small for the table",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_TRANSPORT] = "the network transport (UCX) cannot start or failed",
    [MPIKVS_ERR_FIRST - MPIKVS_ERR_NOTEMPTY]  = "the table already holds entries",
};

_Static_assert(sizeof(band_text) / sizeof(band_text[0]) ==
                   MPIKVS_ERR_FIRST - MPIKVS_ERR_LAST + 1,
               "every library code has a text");

const char *mpikvs_strerror(int rc)
{
    if (rc == MPIKVS_OK)
        return "success";
    if (rc == MPIKVS_MISS)
        return "not found";
    if (rc == MPIKVS_PRESENT)
        return "already present";
    if (rc <= MPIKVS_ERR_FIRST && rc >= MPIKVS_ERR_LAST)
        return band_text[MPIKVS_ERR_FIRST - rc];
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
