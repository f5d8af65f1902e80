/*
 * stat_output.h - mpikvs-stat: printing the listing and a job's report,
 * as text for people (stat_text.c) and as JSON for monitoring
 * (stat_json.c), from the same data; and the small formatting helpers
 * both use (stat_format.c).
 */
#ifndef MPIKVS_STAT_OUTPUT_H
#define MPIKVS_STAT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "stat_regions.h"
#include "stat_report.h"

/* ---- stat_text.c ---- */

/* One line per region: job, node, tag, kind, owner, size, age, and
 * whether its job is alive, and why. */
void stat_text_list(FILE *f, const char *dir,
                    const struct stat_region_list *list, time_t now);

void stat_text_report(FILE *f, const char *dir,
                      const struct stat_job_report *report, time_t now);

/* ---- stat_json.c: 0; -1 when the document cannot be built (out of
 * memory, or a text that is not UTF-8); -2 when writing f fails (errno
 * says why) ---- */

int stat_json_list(FILE *f, const char *dir,
                   const struct stat_region_list *list, time_t now,
                   bool one_line);

int stat_json_report(FILE *f, const char *dir,
                     const struct stat_job_report *report, time_t now,
                     bool one_line);

/* ---- stat_format.c ---- */

/* The string s (up to its NUL, at most len bytes) in printable ASCII,
 * for the terminal and for JSON alike: a backslash as two, a newline, tab
 * and carriage return as \n, \t and \r, any other byte outside ' ' to
 * '~' as \xHH.  What a region says is its writer's, and any user may
 * write a region; its bytes must not reach a terminal.  Cut short to fit
 * buflen (4 * len + 1 always fits).  Returns buf. */
const char *stat_escape(char *buf, size_t buflen, const char *s, size_t len);

/* A user's or group's name, else its number. */
void stat_user_name(uid_t uid, char *buf, size_t len);
void stat_group_name(gid_t gid, char *buf, size_t len);

/* "42s", "3m07s", "2h05m", "4d03h"; "-" for a time in the future. */
void stat_format_age(char *buf, size_t len, time_t then, time_t now);

/* "2026-11-21 10:04:59" in local time. */
void stat_format_time(char *buf, size_t len, time_t t);

/* "job" / "step"; "lockfree", ...; "mpi", ...; "ready", "not laid
 * out", ... */
const char *stat_scope_name(uint32_t scope);
const char *stat_mode_name(uint32_t mode);
const char *stat_transport_name(uint64_t transport);
const char *stat_data_state_name(uint32_t state);

#endif /* MPIKVS_STAT_OUTPUT_H */
