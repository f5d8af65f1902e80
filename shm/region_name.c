/*
 * region_name.c - the names of mpikvs regions and their tags, built and
 * read back (the grammar is in region_name.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "errors_internal.h"
#include "region_name.h"

static const char name_prefix[] = KVSHM_NAME_PREFIX;

/* Each kind's name, as messages and mpikvs-stat show it, and the ending
 * of its tag, after the tier prefix (the layout's after the step
 * prefix).  kvshm_tag_kind tries the endings in this order. */
static const struct {
    const char *name;
    const char *ending;
} kinds[] = {
    [KVSHM_KIND_DATA]         = {"data", "-data"},
    [KVSHM_KIND_TIER_INDEX]   = {"tier-index", "-index"},
    [KVSHM_KIND_TIER_ENTRIES] = {"tier-entries", "-entries"},
    [KVSHM_KIND_LAYOUT]       = {"layout", "layout"},
    [KVSHM_KIND_RMA_WINDOW]   = {"rmacache", "-rma"},
};

_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == KVSHM_KIND_MAX + 1,
               "every kind has its name and tag ending");

const char *kvshm_kind_name(uint32_t kind)
{
    return kind >= 1 && kind <= KVSHM_KIND_MAX ? kinds[kind].name
                                               : "unknown";
}

/* ---- building ---- */

static bool name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Dots separate the parts and slashes would leave the directory, so
 * neither is allowed. */
bool kvshm_name_part_ok(const char *s, size_t max)
{
    size_t n = 0;

    if (!s)
        return false;
    for (; s[n]; n++)
        if (!name_char_ok(s[n]) || n + 1 >= max)
            return false;
    return n > 0;
}

void kvshm_name_part_from(const char *text, char *buf, size_t len)
{
    size_t i = 0;

    for (; text[i] && i + 1 < len; i++)
        buf[i] = name_char_ok(text[i]) ? text[i] : '_';
    buf[i] = '\0';
}

static int check_name_part(const char *what, const char *s, size_t max,
                           mpikvs_error_t *err)
{
    if (kvshm_name_part_ok(s, max))
        return MPIKVS_OK;
    return kvshm_fail(err, MPIKVS_ERR_NAME,
                      "invalid region %s '%s': use 1 to %zu characters of "
                      "A-Z a-z 0-9 _ -",
                      what, s ? s : "(null)", max - 1);
}

int kvshm_region_name(char *buf, size_t len, const char *job,
                      const char *node, const char *tag, mpikvs_error_t *err)
{
    int rc;

    if ((rc = check_name_part("job id", job, KVSHM_JOB_MAX, err)) ||
        (rc = check_name_part("node name", node, KVSHM_NODE_MAX, err)) ||
        (rc = check_name_part("tag", tag, KVSHM_TAG_MAX, err)))
        return rc;
    if ((size_t)snprintf(buf, len, "%s%s.%s.%s", name_prefix, job, node,
                         tag) >= len)
        return kvshm_fail(err, MPIKVS_ERR_NAME,
                          "region name buffer of %zu bytes is too small", len);
    return MPIKVS_OK;
}

void kvshm_this_node_part(char *buf, size_t len)
{
    const char *name = getenv("SLURMD_NODENAME");
    char host[KVSHM_NODE_MAX] = "";

    if (!name || !*name) {
        gethostname(host, sizeof(host) - 1);
        host[strcspn(host, ".")] = '\0';
        name = host;
    }
    kvshm_name_part_from(name, buf, len);
}

void kvshm_unique_id(char *buf, size_t len)
{
    uint32_t rnd = 0;
    struct timespec ts;

    /* pid and time make it unique on the node; the random part keeps a
     * recycled pid in the same nanosecond from colliding with a leftover. */
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = (uint32_t)clock();
    clock_gettime(CLOCK_REALTIME, &ts);
    /* At most 1 + 8 + 1 + 8 + 1 + 8 = 27 characters: fits a job part. */
    snprintf(buf, len, "u%x-%x-%08x", (unsigned)getpid(),
             (unsigned)((uint64_t)ts.tv_sec * 1000u +
                        (uint64_t)ts.tv_nsec / 1000000u),
             rnd);
}

void kvshm_slurm_job_part(uint32_t job, char *buf, size_t len)
{
    snprintf(buf, len, "%u", job);
}

void kvshm_step_tag_prefix(uint32_t step, char *buf, size_t len)
{
    snprintf(buf, len, "s%u-", step);
}

void kvshm_job_layout_tag(enum kvshm_scope scope, uint32_t step, char *buf,
                          size_t len)
{
    char prefix[KVSHM_TAG_MAX] = "";

    if (scope == KVSHM_SCOPE_STEP)
        kvshm_step_tag_prefix(step, prefix, sizeof(prefix));
    snprintf(buf, len, "%s%s", prefix, kinds[KVSHM_KIND_LAYOUT].ending);
}

int kvshm_table_tags(enum kvshm_scope scope, uint32_t step,
                     const char *table,
                     char tier_prefix[KVSHM_TIER_PREFIX_MAX],
                     char data_tag[KVSHM_TAG_MAX], mpikvs_error_t *err)
{
    char step_prefix[KVSHM_TAG_MAX] = "", prefix[64];

    if (strlen(table) >= KVSHM_TABLE_TAG_MAX)
        return kvshm_fail(err, MPIKVS_ERR_NAME,
                          "table name '%s' is longer than %u characters",
                          table, KVSHM_TABLE_TAG_MAX - 1);
    if (scope == KVSHM_SCOPE_STEP)
        kvshm_step_tag_prefix(step, step_prefix, sizeof(step_prefix));
    snprintf(prefix, sizeof(prefix), "%s%s", step_prefix, table);
    /* the tier's longest tag is "<prefix>-entries" */
    if (strlen(prefix) >= KVSHM_TIER_PREFIX_MAX)
        return kvshm_fail(err, MPIKVS_ERR_NAME,
                          "region names for table '%s' of step %u are too "
                          "long (at most %u characters of step prefix and "
                          "table name): use a shorter table name or job "
                          "scope",
                          table, step, KVSHM_TIER_PREFIX_MAX - 1);
    /* fits: the longest prefix and the longest ending make a tag */
    memcpy(tier_prefix, prefix, strlen(prefix) + 1);
    snprintf(data_tag, KVSHM_TAG_MAX, "%s%s", prefix,
             kinds[KVSHM_KIND_DATA].ending);
    return MPIKVS_OK;
}

int kvshm_tier_tags(const char *prefix, char index_tag[KVSHM_TAG_MAX],
                    char entries_tag[KVSHM_TAG_MAX], mpikvs_error_t *err)
{
    const char *longest = kinds[KVSHM_KIND_TIER_ENTRIES].ending;

    if (!prefix || strlen(prefix) + strlen(longest) + 1 > KVSHM_TAG_MAX)
        return kvshm_fail(err, MPIKVS_ERR_NAME,
                          "invalid tier name '%s': use 1 to %zu characters",
                          prefix ? prefix : "(null)",
                          KVSHM_TAG_MAX - strlen(longest) - 1);
    snprintf(index_tag, KVSHM_TAG_MAX, "%s%s", prefix,
             kinds[KVSHM_KIND_TIER_INDEX].ending);
    snprintf(entries_tag, KVSHM_TAG_MAX, "%s%s", prefix, longest);
    return MPIKVS_OK;
}

int kvshm_rma_tag(const char *window_id, char tag[KVSHM_TAG_MAX],
                  mpikvs_error_t *err)
{
    const char *ending = kinds[KVSHM_KIND_RMA_WINDOW].ending;

    if (!kvshm_name_part_ok(window_id, KVSHM_TAG_MAX - strlen(ending)))
        return kvshm_fail(err, MPIKVS_ERR_NAME,
                          "invalid window id '%s': use 1 to %zu characters "
                          "of [A-Za-z0-9_-]",
                          window_id, KVSHM_TAG_MAX - strlen(ending) - 1);
    snprintf(tag, KVSHM_TAG_MAX, "%s%s", window_id, ending);
    return MPIKVS_OK;
}

int kvshm_tier_region_names(const char *job, const char *node,
                            const char *prefix, char *index_name,
                            char *entries_name, mpikvs_error_t *err)
{
    char index_tag[KVSHM_TAG_MAX], entries_tag[KVSHM_TAG_MAX];
    int rc;

    rc = kvshm_tier_tags(prefix, index_tag, entries_tag, err);
    if (rc != MPIKVS_OK)
        return rc;
    rc = kvshm_region_name(index_name, KVSHM_NAME_MAX + 1, job, node,
                           index_tag, err);
    if (rc != MPIKVS_OK)
        return rc;
    return kvshm_region_name(entries_name, KVSHM_NAME_MAX + 1, job, node,
                             entries_tag, err);
}

/* ---- reading back ---- */

bool kvshm_name_has_prefix(const char *name)
{
    return strncmp(name, name_prefix, sizeof(name_prefix) - 1) == 0;
}

int kvshm_region_name_parse(const char *name, char *job, char *node, char *tag)
{
    char copy[KVSHM_NAME_MAX + 1];
    char *parts[3], *save = NULL, *p;
    size_t max[3] = {KVSHM_JOB_MAX, KVSHM_NODE_MAX, KVSHM_TAG_MAX};

    if (!name || !kvshm_name_has_prefix(name) ||
        strlen(name) > KVSHM_NAME_MAX)
        return MPIKVS_ERR_NAME;
    strcpy(copy, name + sizeof(name_prefix) - 1);
    /* strtok_r would merge empty parts ("a..b"); count dots first. */
    int dots = 0;
    for (p = copy; *p; p++)
        dots += *p == '.';
    if (dots != 2)
        return MPIKVS_ERR_NAME;
    parts[0] = strtok_r(copy, ".", &save);
    parts[1] = strtok_r(NULL, ".", &save);
    parts[2] = strtok_r(NULL, ".", &save);
    for (int i = 0; i < 3; i++)
        if (!kvshm_name_part_ok(parts[i], max[i]))
            return MPIKVS_ERR_NAME;
    strcpy(job, parts[0]);
    strcpy(node, parts[1]);
    strcpy(tag, parts[2]);
    return MPIKVS_OK;
}

static bool ends_with(const char *s, const char *ending)
{
    size_t n = strlen(s), m = strlen(ending);

    return n >= m && strcmp(s + n - m, ending) == 0;
}

uint32_t kvshm_tag_kind(const char *tag)
{
    if (!tag[0])
        return 0;
    for (uint32_t kind = 1; kind <= KVSHM_KIND_MAX; kind++)
        if (ends_with(tag, kinds[kind].ending))
            return kind;
    return 0;
}

bool kvshm_tag_table_prefix(const char *tag, uint32_t kind,
                            char prefix[KVSHM_TAG_MAX])
{
    size_t len = strlen(tag), elen;

    if (kind != KVSHM_KIND_DATA && kind != KVSHM_KIND_TIER_INDEX &&
        kind != KVSHM_KIND_TIER_ENTRIES)
        return false;
    elen = strlen(kinds[kind].ending);
    if (len <= elen || len - elen >= KVSHM_TAG_MAX ||
        !ends_with(tag, kinds[kind].ending))
        return false;
    memcpy(prefix, tag, len - elen);
    prefix[len - elen] = '\0';
    return true;
}

bool kvshm_tag_of_step(const char *tag, uint32_t step)
{
    char prefix[KVSHM_TAG_MAX];

    kvshm_step_tag_prefix(step, prefix, sizeof(prefix));
    return strncmp(tag, prefix, strlen(prefix)) == 0;
}

bool kvshm_tag_step(const char *tag, uint32_t *step)
{
    unsigned long long n;
    char *end;

    if (tag[0] != 's' || tag[1] < '0' || tag[1] > '9')
        return false;
    n = strtoull(tag + 1, &end, 10);
    /* only what kvshm_step_tag_prefix writes: no sign, no leading zero,
     * 32 bits */
    if (*end != '-' || n > UINT32_MAX ||
        !kvshm_tag_of_step(tag, (uint32_t)n))
        return false;
    *step = (uint32_t)n;
    return true;
}

bool kvshm_table_name_reads_as_step(const char *table)
{
    char tag[KVSHM_TABLE_TAG_MAX + 1];
    uint32_t step;

    /* the prefix every tag of the table starts with */
    snprintf(tag, sizeof(tag), "%s-", table);
    return kvshm_tag_step(tag, &step);
}

bool kvshm_job_part_is_slurm(const char *job)
{
    if (!*job)
        return false;
    for (; *job; job++)
        if (*job < '0' || *job > '9')
            return false;
    return true;
}

bool kvshm_slurm_job_id(const char *job, uint32_t *id)
{
    unsigned long long n;

    /* 10 digits hold every 32-bit id; strtoull saturates beyond */
    if (!kvshm_job_part_is_slurm(job) || strlen(job) > 10)
        return false;
    n = strtoull(job, NULL, 10);
    if (n > UINT32_MAX)
        return false;
    if (id)
        *id = (uint32_t)n;
    return true;
}
