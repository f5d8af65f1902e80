/*
 * names.c - the names of the config's enums (names.h), one table each.
 */
#include <stdio.h>
#include <string.h>

#include "mpikvs_errors.h"
#include "names.h"

#define TABLE(array) {(array), sizeof(array) / sizeof((array)[0])}

static const char *const modes[] = {
    [KVSHM_MODE_LOCKFREE]    = "lockfree",
    [KVSHM_MODE_FINE_LOCK]   = "fine-lock",
    [KVSHM_MODE_COARSE_LOCK] = "coarse-lock",
};
static const char *const transports[] = {
    [KVSHM_TRANSPORT_AUTO] = "auto",
    [KVSHM_TRANSPORT_MPI]  = "mpi",
    [KVSHM_TRANSPORT_UCX]  = "ucx",
};
static const char *const cachings[] = {
    [KVSHM_CACHING_OFF]    = "off",
    [KVSHM_CACHING_ALWAYS] = "always",
    [KVSHM_CACHING_USER]   = "user",
};
static const char *const far_reads[] = {
    [KVSHM_FAR_READ_AUTO]   = "auto",
    [KVSHM_FAR_READ_BUCKET] = "bucket",
    [KVSHM_FAR_READ_SLOT]   = "slot",
};

_Static_assert(sizeof(modes) / sizeof(modes[0]) == KVSHM_NMODES,
               "every mode has its name");
_Static_assert(sizeof(transports) / sizeof(transports[0]) ==
                   KVSHM_NTRANSPORTS,
               "every transport has its name");
_Static_assert(sizeof(cachings) / sizeof(cachings[0]) == KVSHM_NCACHINGS,
               "every caching setting has its name");
_Static_assert(sizeof(far_reads) / sizeof(far_reads[0]) == KVSHM_NFAR_READS,
               "every far read has its name");

const struct kvshm_names kvshm_mode_names = TABLE(modes);
const struct kvshm_names kvshm_transport_names = TABLE(transports);
const struct kvshm_names kvshm_caching_names = TABLE(cachings);
const struct kvshm_names kvshm_far_read_names = TABLE(far_reads);

const char *kvshm_names_name(const struct kvshm_names *t, unsigned long v)
{
    return v < t->count ? t->names[v] : "unknown";
}

int kvshm_names_parse(const struct kvshm_names *t, const char *s,
                      unsigned *out)
{
    for (unsigned i = 0; s && i < t->count; i++)
        if (strcmp(s, t->names[i]) == 0) {
            *out = i;
            return MPIKVS_OK;
        }
    return MPIKVS_ERR_INVAL;
}

const char *kvshm_names_list(const struct kvshm_names *t, char *buf,
                             size_t len)
{
    buf[0] = '\0';
    for (unsigned i = 0; i < t->count; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
                 i ? ", " : "", t->names[i]);
    return buf;
}

/* The typed three of each enum, so that callers keep their types. */
#define TYPED(prefix, type, table)                                         \
    const char *kvshm_##prefix##_name(type v)                              \
    {                                                                      \
        return kvshm_names_name(&(table), (unsigned long)v);               \
    }                                                                      \
    int kvshm_##prefix##_parse(const char *s, type *out)                   \
    {                                                                      \
        unsigned i;                                                        \
        int rc = kvshm_names_parse(&(table), s, &i);                       \
        if (rc == MPIKVS_OK)                                               \
            *out = (type)i;                                                \
        return rc;                                                         \
    }                                                                      \
    const char *kvshm_##prefix##_list(char *buf, size_t len)               \
    {                                                                      \
        return kvshm_names_list(&(table), buf, len);                       \
    }

TYPED(mode, enum kvshm_mode, kvshm_mode_names)
TYPED(transport, enum kvshm_transport, kvshm_transport_names)
TYPED(caching, enum kvshm_caching, kvshm_caching_names)
TYPED(far_read, enum kvshm_far_read, kvshm_far_read_names)
