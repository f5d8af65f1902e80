/*
 * region_name.h - the names of mpikvs regions: every name and tag is
 * built and read back here, and nowhere else.
 *
 *   mpikvs.<job>.<node>.<tag>
 *
 *   job   the Slurm job id in decimal (the plugin), or kvshm_unique_id()
 *         "u<pid>-<time>-<random>" (a run outside Slurm)
 *   node  the node's name, made a name part by kvshm_name_part_from()
 *   tag   what the region holds, after the step prefix "s<step>-" that
 *         every tag of a step-scope region starts with:
 *           [s<step>-]layout            the job layout
 *           [s<step>-]<table>-data      a table's buckets
 *           [s<step>-]<table>-index     its tier's index
 *           [s<step>-]<table>-entries   its tier's entries
 *           <window id>-rma             a libmpikvs-rmacache window
 *         "[s<step>-]<table>" is the table's tier prefix.
 *
 * Each part is 1 to its _MAX - 1 characters of [A-Za-z0-9_-]: dots
 * separate the parts and a slash would leave the directory.  A tier
 * prefix leaves room for "-entries" (KVSHM_TIER_PREFIX_MAX).
 */
#ifndef MPIKVS_SHM_REGION_NAME_H
#define MPIKVS_SHM_REGION_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "mpikvs_errors.h"

#define KVSHM_NAME_PREFIX     "mpikvs."
/* Bytes of the longest name with its terminator: the prefix, three parts
 * of their _MAX - 1 characters, two dots and the end. */
#define KVSHM_NAME_MAX        (7 + KVSHM_JOB_MAX + KVSHM_NODE_MAX + \
                               KVSHM_TAG_MAX)
/* KVSHM_JOB_MAX, _NODE_MAX, _TAG_MAX and KVSHM_TIER_PREFIX_MAX (a field
 * of the layout) are in format.h: the header and the layout hold them. */

_Static_assert(sizeof(KVSHM_NAME_PREFIX) - 1 == 7,
               "KVSHM_NAME_MAX counts the prefix");
_Static_assert(KVSHM_TIER_PREFIX_MAX - 1 + sizeof("-entries") - 1 ==
                   KVSHM_TAG_MAX - 1,
               "the longest tier prefix and -entries make the longest tag");

/* Where a job's regions live, which their tags tell. */
enum kvshm_scope {
    KVSHM_SCOPE_JOB = 1,     /* regions live until the job ends */
    KVSHM_SCOPE_STEP = 2     /* regions live for one step: "s<step>-" */
};

/* ---- building ---- */

/* Fill buf with "mpikvs.<job>.<node>.<tag>".  Each part must be 1 to its
 * maximum - 1 characters of [A-Za-z0-9_-].  Returns MPIKVS_OK or
 * MPIKVS_ERR_NAME (with a message naming the part in err, which may be
 * NULL). */
int kvshm_region_name(char *buf, size_t len, const char *job,
                      const char *node, const char *tag,
                      mpikvs_error_t *err);

/* Whether s is a name part of 1 to max - 1 characters of [A-Za-z0-9_-]. */
bool kvshm_name_part_ok(const char *s, size_t max);

/* A name part made from text (a host or Slurm node name): every
 * character outside [A-Za-z0-9_-] becomes '_', cut to len - 1. */
void kvshm_name_part_from(const char *text, char *buf, size_t len);

/* This node's name part: SLURMD_NODENAME when set (Slurm's name of the
 * node, which the plugin's regions carry), else the host name up to its
 * first dot. */
void kvshm_this_node_part(char *buf, size_t len);

/* A job id for runs outside Slurm: "u" + pid + time + random, unique on a
 * node.  buf must hold KVSHM_JOB_MAX bytes. */
void kvshm_unique_id(char *buf, size_t len);

/* The job part of a Slurm job's regions: its id in decimal. */
void kvshm_slurm_job_part(uint32_t job, char *buf, size_t len);

/* "s<step>-", which every tag of a step-scope region starts with; buf
 * must hold KVSHM_TAG_MAX bytes. */
void kvshm_step_tag_prefix(uint32_t step, char *buf, size_t len);

/* The layout region's tag in a scope: "layout" or "s<step>-layout". */
void kvshm_job_layout_tag(enum kvshm_scope scope, uint32_t step, char *buf,
                          size_t len);

/* A table's tags in a scope: its tier prefix "[s<step>-]<table>" and its
 * data region's tag "<prefix>-data".  The table name must be shorter
 * than KVSHM_TABLE_TAG_MAX and the prefix than KVSHM_TIER_PREFIX_MAX;
 * else MPIKVS_ERR_NAME with a message, and nothing written. */
int kvshm_table_tags(enum kvshm_scope scope, uint32_t step,
                     const char *table,
                     char tier_prefix[KVSHM_TIER_PREFIX_MAX],
                     char data_tag[KVSHM_TAG_MAX], mpikvs_error_t *err);

/* The tags of a tier's two regions: "<prefix>-index" and
 * "<prefix>-entries".  MPIKVS_ERR_NAME (with a message) for a prefix
 * that leaves no room for "-entries". */
int kvshm_tier_tags(const char *prefix, char index_tag[KVSHM_TAG_MAX],
                    char entries_tag[KVSHM_TAG_MAX], mpikvs_error_t *err);

/* The tag of a libmpikvs-rmacache window's region: "<window_id>-rma";
 * the id (kvshm_unique_id() of the window's first rank) is a name part
 * that leaves room for the ending, else MPIKVS_ERR_NAME. */
int kvshm_rma_tag(const char *window_id, char tag[KVSHM_TAG_MAX],
                  mpikvs_error_t *err);

/* Region names of the tier's two parts (tags as kvshm_tier_tags); each
 * buffer must hold KVSHM_NAME_MAX + 1 bytes. */
int kvshm_tier_region_names(const char *job, const char *node,
                            const char *prefix, char *index_name,
                            char *entries_name, mpikvs_error_t *err);

/* ---- reading back ---- */

/* Whether name starts like a region name ("mpikvs."), parsed or not:
 * what the tools list. */
bool kvshm_name_has_prefix(const char *name);

/* Split a region name into its parts (each buffer of its _MAX size).
 * Returns MPIKVS_OK or MPIKVS_ERR_NAME; on failure nothing is written. */
int kvshm_region_name_parse(const char *name, char *job, char *node,
                            char *tag);

/* A region kind's name (enum kvshm_kind: "data", "tier-index",
 * "tier-entries", "layout", "rmacache"), or "unknown" for a value that
 * is not a kind (a word read from a header). */
const char *kvshm_kind_name(uint32_t kind);

/* The kind a tag names by its ending ("-data", "-index", "-entries",
 * "layout", "-rma"), or 0. */
uint32_t kvshm_tag_kind(const char *tag);

/* The table's tier prefix in the tag of one of its regions of this kind
 * (KVSHM_KIND_DATA, _TIER_INDEX or _TIER_ENTRIES): tag without its
 * ending.  false, and nothing written, when the tag has no such ending
 * or nothing before it. */
bool kvshm_tag_table_prefix(const char *tag, uint32_t kind,
                            char prefix[KVSHM_TAG_MAX]);

/* Whether the tag is one of step's: it starts with "s<step>-". */
bool kvshm_tag_of_step(const char *tag, uint32_t step);

/* The step a tag belongs to: true and *step when it starts with
 * "s<step>-" (as kvshm_step_tag_prefix writes it), else false (a
 * job-scope tag). */
bool kvshm_tag_step(const char *tag, uint32_t *step);

/* Whether a table's job-scope tags would read as a step's ("s3" and
 * "s3-x" give "s3-data" and "s3-x-data", which step 3 takes for its own
 * and removes at its end): such names are kept for step-scope regions. */
bool kvshm_table_name_reads_as_step(const char *table);

/* Whether a job part is a Slurm job's (digits only), not a run's outside
 * Slurm. */
bool kvshm_job_part_is_slurm(const char *job);

/* The Slurm job id a job part spells: digits that fit 32 bits.  false
 * otherwise; id may be NULL. */
bool kvshm_slurm_job_id(const char *job, uint32_t *id);

#endif /* MPIKVS_SHM_REGION_NAME_H */
