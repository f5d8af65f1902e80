/*
 * persist.c - the submit side's check of the config's persist paths
 * (mpikvs.json(5): tables.<name>.persist.load and .save).
 *
 * It runs in sbatch, salloc or srun: the submitting user's own process,
 * so access(2) answers for that user.  Nothing is opened, read or
 * written: the library reads and writes the files later, in the job's
 * ranks, as the user; the plugin never touches them on the nodes, where
 * it runs as root.  What a check here cannot see (a path on a file
 * system the submit host does not mount, a file that changes before the
 * job runs) the library reports at mpikvs_open or mpikvs_close.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin.h"

/* load: a regular file the user can read, or none yet (the first run
 * of a campaign: a cold start). */
static int check_load(const char *cfg, const char *table, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        plugin_error("--dht-config=%s: tables.%s.persist.load: %s: %s", cfg,
                     table, path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        plugin_error("--dht-config=%s: tables.%s.persist.load: %s is not a "
                     "regular file", cfg, table, path);
        return -1;
    }
    if (access(path, R_OK) != 0) {
        plugin_error("--dht-config=%s: tables.%s.persist.load: cannot read "
                     "%s: %s", cfg, table, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* save: a directory the user can write into (the file is written as
 * <path>.partial there, then renamed), and no directory in the way. */
static int check_save(const char *cfg, const char *table, const char *path)
{
    char copy[KVSHM_PERSIST_PATH_MAX];
    const char *dir;
    struct stat st;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        plugin_error("--dht-config=%s: tables.%s.persist.save: %s is a "
                     "directory; name the file to save to", cfg, table,
                     path);
        return -1;
    }
    snprintf(copy, sizeof(copy), "%s", path);
    dir = dirname(copy);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        plugin_error("--dht-config=%s: tables.%s.persist.save: the "
                     "directory %s does not exist", cfg, table, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        plugin_error("--dht-config=%s: tables.%s.persist.save: cannot "
                     "write into %s: %s", cfg, table, dir, strerror(errno));
        return -1;
    }
    return 0;
}

int persist_check(const char *config_path, const struct kvshm_config *cfg)
{
    int rc = 0;

    for (size_t i = 0; cfg && i < cfg->ntables; i++) {
        const struct kvshm_table_config *t = &cfg->tables[i];
        if (t->persist.load[0] &&
            check_load(config_path, t->name, t->persist.load) != 0)
            rc = -1;
        if (t->persist.save[0] &&
            check_save(config_path, t->name, t->persist.save) != 0)
            rc = -1;
    }
    return rc;
}
