/*
 * config.c - what the environment asks of libmpikvs-rmacache (read once)
 * and the statistics printed at MPI_Finalize.
 *
 *   MPIKVS_RMACACHE        rules RULE[,RULE...]: MODE, MODE@N (the Nth
 *                          window this process creates, from 0) or
 *                          MODE@NAME (a window named NAME by
 *                          MPI_Win_set_name; shell patterns allowed).
 *                          The first rule that matches a window decides.
 *   MPIKVS_RMACACHE_BYTES  memory budget per window
 *   MPIKVS_RMACACHE_MAX_GET  the largest get cached
 *   MPIKVS_RMACACHE_VERIFY   1: also do every get served from the cache
 *   MPIKVS_RMACACHE_STATS    1: statistics per window at MPI_Finalize
 *                            (the advice of advice.c comes without it)
 *   MPIKVS_RMACACHE_NODE     0: no node tier for readonly windows
 *   MPIKVS_SHM_DIR           where the node tier's regions go without
 *                            MPIKVS_LAYOUT (kvshm_job_dir), else /dev/shm
 *   MPIKVS_VIRTUAL_NODES     V: a window's ranks are V nodes (blocks of
 *                            consecutive ranks), as libmpikvs takes it
 */
#include "rmacache.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rma_region.h"
#include "size.h"
#include "virtual_nodes.h"

#define RC_DEFAULT_BYTES   (16u << 20)
#define RC_DEFAULT_MAX_GET (64u << 10)
#define RC_MAX_RULES       32

struct rc_config rc_cfg;

struct rc_rule {
    int  mode;
    int  seq;        /* >= 0: the window of that creation order */
    char name[64];   /* else, when not empty: a name pattern */
};

static struct rc_rule  rules[RC_MAX_RULES];
static int             nrules;
static pthread_once_t  once = PTHREAD_ONCE_INIT;

const char *rc_mode_name(int mode)
{
    return mode >= 0 ? kvshm_rma_mode_name((uint64_t)mode) : "?";
}

int rc_mode_parse(const char *text, int *mode)
{
    for (int m = 0; m <= RC_READONLY; m++)
        if (!strcmp(text, rc_mode_name(m))) {
            *mode = m;
            return 0;
        }
    return -1;
}

static void die(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "mpikvs-rmacache: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    /* a setting the user got wrong: stop rather than run uncached or
     * cached against the user's wish */
    PMPI_Abort(MPI_COMM_WORLD, 1);
    abort();
}

static void parse_rules(const char *text)
{
    char *copy = strdup(text), *save = NULL;

    if (!copy)
        die("%s%s", "out of memory", "");
    for (char *r = strtok_r(copy, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        struct rc_rule *ru = &rules[nrules];
        char           *at = strchr(r, '@');

        if (nrules == RC_MAX_RULES)
            die("MPIKVS_RMACACHE: more than 32 rules in '%s'%s", text, "");
        if (at)
            *at++ = '\0';
        if (rc_mode_parse(r, &ru->mode))
            die("MPIKVS_RMACACHE: '%s' is not a mode (use transparent, readonly "
                "or off, each optionally followed by @N or @NAME, e.g. "
                "readonly@0,off)%s", r, "");
        ru->seq = -1;
        if (at) {
            char *end;
            long  n = strtol(at, &end, 10);

            if (!*at || strlen(at) >= sizeof ru->name)
                die("MPIKVS_RMACACHE: '%s' names no window (use @N, the Nth "
                    "window created, or @NAME, a window name, at most 63 "
                    "characters)%s", at, "");
            if (*end == '\0' && n >= 0 && n <= INT32_MAX)
                ru->seq = (int)n;
            else
                strcpy(ru->name, at);
        }
        nrules++;
    }
    free(copy);
}

static size_t env_size(const char *var, size_t dflt, uint64_t min)
{
    const char    *v = getenv(var);
    uint64_t       bytes;
    mpikvs_error_t err;

    if (!v || !*v)
        return dflt;
    if (kvshm_parse_size(v, var, min, &bytes, &err) != MPIKVS_OK)
        die("%s%s", err.text, "");
    if (bytes > SIZE_MAX / 2)
        die("%s: '%s' is too large", var, v);
    return (size_t)bytes;
}

/* MPIKVS_VIRTUAL_NODES: 0 when unset, else a count from 1; a window
 * of fewer ranks has fewer of them (shm/virtual_nodes.h) */
static unsigned env_nodes(void)
{
    unsigned       n;
    mpikvs_error_t err;

    if (kvshm_virtual_nodes_parse(getenv(KVSHM_VIRTUAL_NODES_VAR),
                                  KVSHM_VIRTUAL_NODES_MAX, &n,
                                  &err) != MPIKVS_OK)
        die("%s%s", err.text, "");
    return n;
}

static int env_flag(const char *var)
{
    const char *v = getenv(var);

    if (!v || !*v || !strcmp(v, "0"))
        return 0;
    if (!strcmp(v, "1"))
        return 1;
    die("%s: '%s' is neither 0 nor 1", var, v);
    return 0;
}

static void config_read(void)
{
    const char *r = getenv("MPIKVS_RMACACHE");

    rc_cfg.budget = env_size("MPIKVS_RMACACHE_BYTES", RC_DEFAULT_BYTES, 4096);
    rc_cfg.max_get = env_size("MPIKVS_RMACACHE_MAX_GET", RC_DEFAULT_MAX_GET, 1);
    if (rc_cfg.max_get > rc_index_max_len(rc_cfg.budget))
        rc_cfg.max_get = rc_index_max_len(rc_cfg.budget);
    rc_cfg.verify = env_flag("MPIKVS_RMACACHE_VERIFY");
    rc_cfg.stats = env_flag("MPIKVS_RMACACHE_STATS");
    rc_cfg.node = getenv("MPIKVS_RMACACHE_NODE") ? env_flag("MPIKVS_RMACACHE_NODE") : 1;
    rc_cfg.virtual_nodes = env_nodes();
    /* the node tier's regions go where libmpikvs puts the job's, where
     * mpikvs-stat and the plugin's cleanup look; a directory libmpikvs
     * refuses leaves the windows without the tier (node_region.c) */
    rc_cfg.shm_dir_rc = kvshm_job_dir(getenv("MPIKVS_LAYOUT"), getenv("MPIKVS_SHM_DIR"),
                                      rc_cfg.shm_dir, &rc_cfg.shm_dir_err);
    if (r && *r)
        parse_rules(r);
}

void rc_config_once(void)
{
    pthread_once(&once, config_read);
}

int rc_rule_mode(int seq, const char *name, int dflt)
{
    for (int i = 0; i < nrules; i++) {
        const struct rc_rule *ru = &rules[i];

        if (ru->seq >= 0 ? ru->seq == seq
                         : !ru->name[0] || (name && !fnmatch(ru->name, name, 0)))
            return ru->mode;
    }
    return dflt;
}

int rc_rule_by_name(const char *name, int *mode)
{
    for (int i = 0; i < nrules; i++)
        if (rules[i].seq < 0 && rules[i].name[0] &&
            !fnmatch(rules[i].name, name, 0)) {
            *mode = rules[i].mode;
            return 1;
        }
    return 0;
}

/* The statistics of windows freed, printed at MPI_Finalize. */
struct rc_record {
    int                       seq, mode;
    char                      name[64];
    struct kvshm_rma_counters st;
    uint64_t                  refetched_same, refetched_changed; /* repeats.c */
    struct rc_record         *next;
};
static struct rc_record *records, **records_end = &records;
static pthread_mutex_t   records_lock = PTHREAD_MUTEX_INITIALIZER;

void rc_stats_keep(const struct rc_win *w)
{
    struct rc_record *r;

    if (!rc_cfg.stats || !(r = calloc(1, sizeof *r)))
        return;
    r->seq = w->seq;
    r->mode = w->mode;
    memcpy(r->name, w->name, sizeof r->name);
    r->st = *w->st;
    r->refetched_same = w->refetched_same;
    r->refetched_changed = w->refetched_changed;
    pthread_mutex_lock(&records_lock);
    *records_end = r;
    records_end = &r->next;
    pthread_mutex_unlock(&records_lock);
}

/* The counters, "label value" each, after what line holds already. */
static void print_counters(char *line, size_t size, const struct kvshm_rma_counters *s)
{
    size_t n = strlen(line);

#define PRINT_COUNTER(name, label, text)                                          \
    if (n < size)                                                                 \
        n += (size_t)snprintf(line + n, size - n, " " label " %" PRIu64, s->name);
    KVSHM_RMA_COUNTERS(PRINT_COUNTER)
#undef PRINT_COUNTER
}

void rc_stats_print(void)
{
    int  rank = -1;
    char line[1024];

    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_mutex_lock(&records_lock);
    for (struct rc_record *r = records, *n; r; r = n) {
        n = r->next;
        if (r->st.gets) { /* else a window this rank never read */
            snprintf(line, sizeof line, "mpikvs-rmacache: rank %d window %d%s%s%s mode %s:",
                     rank, r->seq, r->name[0] ? " '" : "", r->name, r->name[0] ? "'" : "",
                     rc_mode_name(r->mode));
            print_counters(line, sizeof line, &r->st);
            /* this rank's own figures, not in the window's region */
            snprintf(line + strlen(line), sizeof line - strlen(line),
                     " refetched-same %" PRIu64 " refetched-changed %" PRIu64,
                     r->refetched_same, r->refetched_changed);
            /* one write a line: the ranks' lines do not mix */
            fprintf(stderr, "%s\n", line);
        }
        free(r);
    }
    records = NULL;
    records_end = &records;
    pthread_mutex_unlock(&records_lock);
}
