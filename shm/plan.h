/*
 * plan.h - the table plan: what the site's limits, the DHT size per node
 * and the job config make of each table on a node, worked out in one
 * place.
 *
 * Per table: the shape of its buckets (key and value size, slots per
 * bucket, slot and bucket size, bucket count) and the sizes of its data
 * region and its tier.  Each process that needs it works it out once:
 * the SPANK plugin on the submit side (to refuse what does not fit) and
 * in slurmstepd, which writes it into the job layout (job_layout.h, each
 * table's entry); the library under the plugin takes it from there and
 * never works it out again.  The library without the plugin, and
 * mpikvs-config, call the same function.
 */
#ifndef MPIKVS_SHM_PLAN_H
#define MPIKVS_SHM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "job_config.h"
#include "mpikvs_errors.h"

/* Without a job config the node has one table of this name. */
#define KVSHM_PLAN_DEFAULT_TABLE "kvs"

/* Counters a data region holds at least, unless the site says otherwise
 * (the plugin's min_ranks=): what the submit side and mpikvs-config
 * check count on a node, which takes more for more CPUs or tasks. */
#define KVSHM_PLAN_MIN_RANKS 64u

/* The site's limits on the DHT size per node (the plugin's max_size=). */
struct kvshm_limits {
    uint64_t max_size;        /* 0: no limit in bytes */
    double   max_fraction;    /* 0: none; else of the node's memory */
};

/* Check size (the DHT size per node, named what in the message:
 * "--dht-size" or "default_size") against the limits; node_memory 0
 * where it is not known (the submit host), where a fraction limit
 * cannot be applied.  MPIKVS_OK, or MPIKVS_ERR_TOOBIG with "<what>=<size>
 * is more than this site allows: <limit>" in err. */
int kvshm_limits_check(const struct kvshm_limits *limits, const char *what,
                       uint64_t size, uint64_t node_memory,
                       mpikvs_error_t *err);

/* One table's plan. */
struct kvshm_table_plan {
    char                     name[KVSHM_TABLE_NAME_MAX];
    struct kvshm_table_shape shape;      /* key_size 0: none yet */
    uint64_t                 data_bytes; /* the data region */
    uint64_t                 tier_bytes; /* both tier regions; 0: none */
    uint64_t                 near_bytes; /* the neighbourhoods ("near");
                                          * 0: none */
};

/* The plan of a node. */
struct kvshm_plan {
    uint64_t                 dht_size;   /* what it was made for */
    size_t                   ntables;
    struct kvshm_table_plan *tables;     /* malloc'd: kvshm_plan_free */
};

/* What a plan is made of. */
struct kvshm_plan_input {
    /* DHT memory per node (--dht-size or the site's default_size); for
     * the library without the plugin, the one table's memory */
    uint64_t                   dht_size;
    /* the job config, resolved here against dht_size (its tables'
     * bytes and tier bytes are filled in); NULL: one table "kvs" */
    struct kvshm_config       *config;
    /* counters each data region holds; 0 where it is not known yet
     * (the submit side): no bucket count then */
    uint64_t                   max_ranks;
    /* The library without the plugin plans one table of its own: the
     * config's table of this name (NULL: its first) gets all of
     * dht_size, its shape is *shape (the options over the config's),
     * and its counters come on top of dht_size, as the region it makes
     * holds its buckets and counters and its tier takes from dht_size. */
    bool                       own_table;
    const char                *table;
    const struct kvshm_table_shape *shape;
    /* How dht_size was given, for the refusal of a size below the
     * smallest usable one: the option or key ("--dht-size"; NULL: "a
     * DHT size of") and its text as given ("4K", whose unit the smallest
     * size is given in; NULL: bytes). */
    const char                *size_what;
    const char                *size_text;
};

/* Work out each table's bytes, its tier's and its neighbourhoods'
 * bytes (tier.bytes, near.bytes) from the node's DHT size: absolute sizes as given, fractions of node_bytes, and tables
 * without a size share what is left equally.  Fails (MPIKVS_ERR_INVAL,
 * problems in diag) when the sizes add up to more than node_bytes. */
int kvshm_config_resolve(struct kvshm_config *cfg, uint64_t node_bytes,
                         struct kvshm_diag *diag);

/* The bytes of a table's tier out of table_bytes: 0 when it has none
 * (disabled, or caching off), its absolute size, or its share. */
uint64_t kvshm_tier_bytes(const struct kvshm_table_config *t,
                          uint64_t table_bytes);

/* The bytes of a table's neighbourhoods ("near") out of table_bytes: 0
 * when it has none, its absolute size, or its share.  Like the tier's,
 * they are taken from the table's bytes: its buckets get the rest. */
uint64_t kvshm_near_bytes(const struct kvshm_table_config *t,
                          uint64_t table_bytes);

/*
 * Work out the plan: each table's bytes of the node (absolute sizes as
 * given, fractions of dht_size, the rest shared equally:
 * kvshm_config_resolve), its tier's and its neighbourhoods' bytes, the
 * rest its data region; its
 * shape from the config (none without one), and the buckets that fit
 * the data region after max_ranks counters.
 *
 * The rule of the smallest usable size: every table must hold one
 * bucket at least (kvshm_plan_min_size).  Where max_ranks is known, a
 * table's data region must hold its counters and one bucket of its shape
 * (kvshm_data_min_size), and without a config the one table's must hold
 * them with the smallest bucket any program can ask for (its opener lays
 * it out with its own shape, and refuses less, naming its smallest);
 * for own_table, one bucket must fit after the tier.
 *
 * Refused, each problem a line in diag as the config's own ("<source>:
 * <path>: <message>"): MPIKVS_ERR_INVAL when the tables do not fit, a
 * tier leaves its table nothing or a table of a fixed size holds no
 * bucket; for own_table, MPIKVS_ERR_TOOSMALL when the tier takes all or
 * not one bucket fits.  Whenever a larger dht_size would do, the refusal
 * is MPIKVS_ERR_TOOSMALL and diag's first line names the smallest:
 * "--dht-size=4K is below the smallest usable size, 17K (16832 bytes):
 * <what it holds>" (size_what, size_text).  *out is to be freed with
 * kvshm_plan_free.
 */
int kvshm_plan_make(const struct kvshm_plan_input *in,
                    struct kvshm_plan *out, struct kvshm_diag *diag);

/* The smallest dht_size (in->dht_size aside) with which kvshm_plan_make
 * plans in: worked out by trying the plan itself, so that the smallest
 * is exactly what the plan and the regions laid out from it accept, and
 * one byte less is refused.  MPIKVS_OK and *min, or MPIKVS_ERR_TOOBIG
 * when no size up to 1 EiB will do (a table of a fixed size too small
 * for one bucket).  A config's resolved bytes are left as planned for
 * in->dht_size. */
int kvshm_plan_min_size(const struct kvshm_plan_input *in, uint64_t *min);

/* The table of that name, or NULL. */
const struct kvshm_table_plan *kvshm_plan_table(const struct kvshm_plan *p,
                                                const char *name);

/* A shape's slot and bucket size, from its key and value size and its
 * slots per bucket (the data region's rule, data_region.h). */
void kvshm_shape_sizes(struct kvshm_table_shape *shape);

void kvshm_plan_free(struct kvshm_plan *p);

#endif /* MPIKVS_SHM_PLAN_H */
