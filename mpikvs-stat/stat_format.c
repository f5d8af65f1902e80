/*
 * stat_format.c - mpikvs-stat: names and times as people read them.
 */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "job_config.h"
#include "job_layout.h"
#include "stat_output.h"

const char *stat_escape(char *buf, size_t buflen, const char *s, size_t len)
{
    size_t o = 0;

    if (!buflen)
        return buf;
    for (size_t i = 0; i < len && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[5];

        if (c == '\\')
            snprintf(esc, sizeof(esc), "\\\\");
        else if (c == '\n')
            snprintf(esc, sizeof(esc), "\\n");
        else if (c == '\t')
            snprintf(esc, sizeof(esc), "\\t");
        else if (c == '\r')
            snprintf(esc, sizeof(esc), "\\r");
        else if (c < 0x20 || c > 0x7e)
            snprintf(esc, sizeof(esc), "\\x%02x", c);
        else
            snprintf(esc, sizeof(esc), "%c", c);
        if (o + strlen(esc) >= buflen)
            break;
        memcpy(buf + o, esc, strlen(esc));
        o += strlen(esc);
    }
    buf[o] = '\0';
    return buf;
}

void stat_user_name(uid_t uid, char *buf, size_t len)
{
    const struct passwd *pw = getpwuid(uid);

    if (pw)
        snprintf(buf, len, "%s", pw->pw_name);
    else
        snprintf(buf, len, "%u", (unsigned)uid);
}

void stat_group_name(gid_t gid, char *buf, size_t len)
{
    const struct group *gr = getgrgid(gid);

    if (gr)
        snprintf(buf, len, "%s", gr->gr_name);
    else
        snprintf(buf, len, "%u", (unsigned)gid);
}

void stat_format_age(char *buf, size_t len, time_t then, time_t now)
{
    long long s = (long long)now - (long long)then;

    if (s < 0)
        snprintf(buf, len, "-");
    else if (s < 60)
        snprintf(buf, len, "%llds", s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, len, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
}

void stat_format_time(char *buf, size_t len, time_t t)
{
    struct tm tm;

    if (localtime_r(&t, &tm) && strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        return;
    snprintf(buf, len, "%lld", (long long)t);
}

const char *stat_scope_name(uint32_t scope)
{
    switch (scope) {
    case KVSHM_SCOPE_JOB:  return "job";
    case KVSHM_SCOPE_STEP: return "step";
    default:               return "?";
    }
}

const char *stat_mode_name(uint32_t mode)
{
    return mode < KVSHM_NMODES ? kvshm_mode_name((enum kvshm_mode)mode) : "?";
}

const char *stat_transport_name(uint64_t transport)
{
    /* a word of the region, anything: the name table says "unknown" */
    return transport <= UINT32_MAX
               ? kvshm_transport_name((enum kvshm_transport)transport)
               : "unknown";
}

const char *stat_data_state_name(uint32_t state)
{
    switch (state) {
    case KVSHM_DATA_UNFORMATTED: return "not laid out";
    case KVSHM_DATA_FORMATTING:  return "being laid out";
    case KVSHM_DATA_READY:       return "ready";
    default:                     return "?";
    }
}
