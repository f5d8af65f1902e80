/*
 * names.h - the names of the job config's enums, one table each: the
 * consistency modes, the transports, the tier's caching settings and the
 * far reads.
 *
 * The config, the environment (MPIKVS_TRANSPORT), mpikvs_options_t, the
 * library's messages and the tools' output all spell them from here.
 * For each enum: _name gives a value's name ("unknown" for a value
 * outside the enum, e.g. a word read from a region), _parse the value of
 * a name (MPIKVS_OK, or MPIKVS_ERR_INVAL with *out untouched for a name
 * not in the table), _list the accepted names, "a, b, c", into buf (64
 * bytes are enough; returns buf).
 */
#ifndef MPIKVS_COMMON_NAMES_H
#define MPIKVS_COMMON_NAMES_H

#include <stddef.h>

enum kvshm_mode {
    KVSHM_MODE_LOCKFREE = 0,
    KVSHM_MODE_FINE_LOCK,
    KVSHM_MODE_COARSE_LOCK,
    KVSHM_NMODES
};

/* The network path to other nodes' regions (libmpikvs/transport.h).
 * AUTO lets the library pick; it never stays AUTO once a handle is open. */
enum kvshm_transport {
    KVSHM_TRANSPORT_AUTO = 0,
    KVSHM_TRANSPORT_MPI,
    KVSHM_TRANSPORT_UCX,
    KVSHM_NTRANSPORTS
};

enum kvshm_caching {
    KVSHM_CACHING_OFF = 0,
    KVSHM_CACHING_ALWAYS,
    KVSHM_CACHING_USER,
    KVSHM_NCACHINGS
};

/* How a remote get reads another node's bucket (the table setting
 * far_read, mpikvs.json(5)): AUTO lets the library choose by the size of
 * a slot (mpikvs(7)); BUCKET reads the whole bucket in one transfer;
 * SLOT reads the bucket's header line, then only the matching slot's
 * key, checksum and value, the value straight into the caller's buffer. */
enum kvshm_far_read {
    KVSHM_FAR_READ_AUTO = 0,
    KVSHM_FAR_READ_BUCKET,
    KVSHM_FAR_READ_SLOT,
    KVSHM_NFAR_READS
};

/* A table of names, indexed by an enum's values 0..count-1. */
struct kvshm_names {
    const char *const *names;
    unsigned           count;
};

extern const struct kvshm_names kvshm_mode_names;
extern const struct kvshm_names kvshm_transport_names;
extern const struct kvshm_names kvshm_caching_names;
extern const struct kvshm_names kvshm_far_read_names;

/* The generic three over any table; *out is the index. */
const char *kvshm_names_name(const struct kvshm_names *t, unsigned long v);
int kvshm_names_parse(const struct kvshm_names *t, const char *s,
                      unsigned *out);
const char *kvshm_names_list(const struct kvshm_names *t, char *buf,
                             size_t len);

const char *kvshm_mode_name(enum kvshm_mode mode);
int kvshm_mode_parse(const char *s, enum kvshm_mode *out);
const char *kvshm_mode_list(char *buf, size_t len);

const char *kvshm_transport_name(enum kvshm_transport transport);
int kvshm_transport_parse(const char *s, enum kvshm_transport *out);
const char *kvshm_transport_list(char *buf, size_t len);

const char *kvshm_caching_name(enum kvshm_caching caching);
int kvshm_caching_parse(const char *s, enum kvshm_caching *out);
const char *kvshm_caching_list(char *buf, size_t len);

const char *kvshm_far_read_name(enum kvshm_far_read far_read);
int kvshm_far_read_parse(const char *s, enum kvshm_far_read *out);
const char *kvshm_far_read_list(char *buf, size_t len);

#endif /* MPIKVS_COMMON_NAMES_H */
