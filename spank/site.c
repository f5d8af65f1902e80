/*
 * site.c - the site's settings: arguments on the plugin's plugstack.conf
 * line, e.g.
 *
 *   required /usr/lib/slurm/spank_mpikvs.so max_size=50% default_size=1G
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors_internal.h"
#include "plugin.h"
#include "region.h"
#include "size.h"

#define DEFAULT_SIZE      (UINT64_C(256) << 20)
#define DEFAULT_MIN_RANKS 64u

static int bad(const char *arg, const char *why)
{
    plugin_error("plugstack.conf argument '%s': %s", arg,
                 why);
    return -1;
}

static int parse_one(struct site *site, const char *arg)
{
    const char *eq = strchr(arg, '=');
    const char *v = eq ? eq + 1 : "";
    size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
    mpikvs_error_t err;

#define KEY(k) (klen == sizeof(k) - 1 && strncmp(arg, k, klen) == 0)
    if (KEY("max_size")) {
        if (kvshm_parse_share(v, "max_size", &site->limits.max_size,
                              &site->limits.max_fraction, &err) != MPIKVS_OK)
            return bad(arg, err.text);
    } else if (KEY("default_size")) {
        if (kvshm_parse_size(v, "default_size", 1, &site->default_size,
                             &err) != MPIKVS_OK)
            return bad(arg, err.text);
    } else if (KEY("shm_dir")) {
        if (v[0] != '/' || strlen(v) >= sizeof(site->shm_dir))
            return bad(arg, "give an absolute directory path");
        snprintf(site->shm_dir, sizeof(site->shm_dir), "%s", v);
    } else if (KEY("ns_path")) {
        if (v[0] != '/' || strlen(v) >= sizeof(site->ns_path))
            return bad(arg, "give an absolute path, e.g. "
                            "ns_path=/var/spool/slurm/containers/%j/.ns");
        for (const char *c = strchr(v, '%'); c; c = strchr(c + 2, '%'))
            if (c[1] != 'j' && c[1] != 'n' && c[1] != '%')
                return bad(arg, "only %j (job id), %n (node name) and "
                                "%% may follow a %");
        snprintf(site->ns_path, sizeof(site->ns_path), "%s", v);
    } else if (KEY("min_ranks")) {
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        if (!*v || *end || n == 0 || n > 65536)
            return bad(arg, "give a rank count from 1 to 65536");
        site->min_ranks = (uint32_t)n;
    } else {
        return bad(arg, "unknown (known: max_size=SIZE|N%, "
                        "default_size=SIZE, shm_dir=DIR, min_ranks=N, "
                        "ns_path=FILE)");
    }
#undef KEY
    return 0;
}

int site_parse(struct site *site, int ac, char **av)
{
    int rc = 0;

    memset(site, 0, sizeof(*site));
    site->default_size = DEFAULT_SIZE;
    site->min_ranks = DEFAULT_MIN_RANKS;
    snprintf(site->shm_dir, sizeof(site->shm_dir), "%s", KVSHM_DEFAULT_DIR);
    for (int i = 0; i < ac; i++)
        if (parse_one(site, av[i]) != 0)
            rc = -1;
    return rc;
}

int site_checked_size(const struct plugin *p, uint64_t node_memory,
                      uint64_t *size)
{
    const struct request *r = &p->req;
    mpikvs_error_t err;

    *size = r->size_given ? r->size : p->site.default_size;
    if (kvshm_limits_check(&p->site.limits,
                           r->size_given ? "--dht-size" : "default_size",
                           *size, node_memory, &err) == MPIKVS_OK)
        return 0;
    plugin_error("%s", err.text);
    return -1;
}
