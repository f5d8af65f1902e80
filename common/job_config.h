/*
 * job_config.h - the job config (mpikvs.json, see mpikvs.json(5)).
 *
 * One JSON file names the job's tables and, for each, its share of the
 * node's DHT memory, its key and value layouts, its bucket shape, its
 * consistency mode, how remote gets read its buckets (far_read) and its
 * read-only tier.  Parsing is strict: every problem found is reported,
 * each as one line that names the JSON path and the value
 * ("tables.chemistry.key.fields[3].digits: 19 is out of range 1..17"),
 * syntax errors with line and column.  The text is what
 * the SPANK plugin shows at sbatch time and what mpikvs-config prints.
 */
#ifndef MPIKVS_SHM_JOB_CONFIG_H
#define MPIKVS_SHM_JOB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "record.h"
#include "mpikvs_errors.h"

#define KVSHM_CONFIG_VERSION      1
/* terminator included; the data region's header keeps the name, and it is
 * the prefix of its regions' tags (shm/format.h) */
#define KVSHM_TABLE_NAME_MAX      17u
#define KVSHM_SLOTS_DEFAULT       4u
#define KVSHM_SLOTS_MAX           64u
#define KVSHM_NEAR_MEMBERS_DEFAULT 16u    /* a neighbourhood keeps */
#define KVSHM_CONFIG_MAX_BYTES    (1u << 20)
#define KVSHM_CONFIG_MAX_ERRORS   32u
#define KVSHM_COUNTERS_DEFAULT    4u      /* global counters of a table */
#define KVSHM_COUNTERS_MAX        16u     /* what a data region holds (format.h) */
#define KVSHM_PERSIST_PATH_MAX    1024u   /* terminator included */

/* The largest key and value of an entry, in bytes: the config's key_size
 * and value_size, its bytes[N] fields, mpikvs_options_t's key_size and
 * value_size and the data region's layout are all bounded by these. */
#define KVSHM_KEY_SIZE_MAX        65536u
#define KVSHM_VALUE_SIZE_MAX      1048576u   /* 1 MiB */

/* The SPANK plugin carries the validated config (JSON) and the path it
 * came from in the job's environment under these names, which Slurm
 * prefixes with SLURM_SPANK_ (spank_mpikvs(8)); MPIKVS_CONFIG is the
 * library's, a file path. */
#define KVSHM_JOB_CONFIG_VAR      "MPIKVS_JOB_CONFIG_JSON"
#define KVSHM_JOB_CONFIG_PATH_VAR "MPIKVS_JOB_CONFIG_PATH"

/* A size in the config: bytes, a fraction of a whole, or "the rest". */
struct kvshm_share {
    uint64_t bytes;          /* set: an absolute size */
    double   fraction;       /* set: a share of the whole, 0 < f <= 1 */
};                           /* both 0: not given */

static inline bool kvshm_share_given(const struct kvshm_share *s)
{
    return s->bytes || s->fraction > 0;
}

struct kvshm_table_config {
    char                name[KVSHM_TABLE_NAME_MAX];
    struct kvshm_share  size;        /* of the node's --dht-size */
    uint64_t            bytes;       /* resolved: kvshm_config_resolve()
                                      * (shm/plan.h) */
    struct kvshm_record key;
    struct kvshm_record value;
    uint32_t            slots_per_bucket;
    enum kvshm_mode     mode;
    enum kvshm_transport transport;  /* AUTO unless given */
    enum kvshm_far_read far_read;    /* how a remote get reads a bucket;
                                      * AUTO unless given */
    struct {
        bool               enabled;
        struct kvshm_share size;     /* of the table's size */
        uint64_t           bytes;    /* resolved; 0 when disabled or
                                      * caching is off */
        enum kvshm_caching caching;
    } tier;
    uint32_t            counters;    /* global counters (mpikvs_counter_add) */
    double              verify;      /* the fraction of hits returned as
                                      * MPIKVS_VERIFY, 0..1 (0: none) */
    struct {                         /* neighbourhoods (mpikvs_get_near) */
        bool               enabled;
        uint32_t           members;  /* a neighbourhood keeps, 1..64 */
        struct kvshm_share size;     /* of the table's size */
        uint64_t           bytes;    /* resolved; 0 when disabled */
        struct kvshm_record key;     /* the coarser key: the key's fields
                                      * with fewer digits (round.h) */
    } near;
    struct {                         /* "" where not given */
        char load[KVSHM_PERSIST_PATH_MAX];  /* mpikvs_open loads it */
        char save[KVSHM_PERSIST_PATH_MAX];  /* mpikvs_close saves to it */
    } persist;
};

struct kvshm_config {
    char                       source[256];   /* names it in messages */
    int                        version;
    struct kvshm_table_config *tables;
    size_t                     ntables;
};

/* Problems found while loading: count lines of text, each ending '\n',
 * and a last line "(further problems not shown)" when truncated. */
struct kvshm_diag {
    unsigned count;
    bool     truncated;
    char    *text;           /* malloc'd; NULL when count == 0 */
};

/* Parse and validate a config from text (len bytes; it need not be
 * terminated).  source names it in messages ("job.json").  On success
 * *out is the config and diag is empty; on failure *out is NULL, diag
 * holds every problem found (up to KVSHM_CONFIG_MAX_ERRORS) and the
 * return value is MPIKVS_ERR_INVAL (or -ENOMEM). */
int kvshm_config_parse(const char *text, size_t len, const char *source,
                       struct kvshm_config **out, struct kvshm_diag *diag);

/* The same from a file (at most KVSHM_CONFIG_MAX_BYTES); an unreadable
 * file is one problem line naming it and the errno text. */
int kvshm_config_load(const char *path, struct kvshm_config **out,
                      struct kvshm_diag *diag);

/* Add one problem line (without its '\n') to diag, which may be NULL. */
void kvshm_diag_line(struct kvshm_diag *diag, const char *line);

/* The config with every default filled in, as JSON text (malloc'd; NULL
 * on allocation failure).  Parsing it gives the same config. */
char *kvshm_config_dump(const struct kvshm_config *cfg);

/* The table of that name, or NULL. */
const struct kvshm_table_config *kvshm_config_table(
    const struct kvshm_config *cfg, const char *name);

void kvshm_config_free(struct kvshm_config *cfg);
void kvshm_diag_free(struct kvshm_diag *diag);

#endif /* MPIKVS_SHM_JOB_CONFIG_H */
