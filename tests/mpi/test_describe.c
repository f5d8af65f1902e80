/*
 * test_describe.c - what a handle says it opened (mpikvs_info,
 * mpikvs_describe) against what it did, and the version.
 * run-describe-test.sh runs it as separate jobs:
 *
 *   open NODES VIRTUAL TRANSPORT WHY PERSIST [LOADED] [OUT]
 *       open (options, or MPIKVS_CONFIG when set), then on every rank:
 *       NODES nodes (VIRTUAL 1: of MPIKVS_VIRTUAL_NODES), each rank's
 *       node and its rank count as the ranks' own nodes say, one job id
 *       on every rank and in the region's name, the region there in the
 *       shm directory, mode MPITEST_MODE (default lockfree), transport
 *       TRANSPORT ("any": ucx or mpi) whose why starts with WHY, persist
 *       PERSIST (off, loaded, no-file, kept) with LOADED entries; the
 *       text names all of it; the struct's size rules.  Rank 0 writes
 *       the text to OUT, for the script to compare with MPIKVS_VERBOSE's.
 *       With MPIKVS_CONFIG the job puts 100 keys before close (which
 *       saves them when the config says so).  MPITEST_TIER=1: the
 *       table has a node tier, whose two regions are there too.
 *   refused    MPIKVS_VERBOSE is not 0 or 1: open fails, saying so.
 *
 * Every job first checks the version: MPIKVS_VERSION (the header's),
 * mpikvs_version() (the library's) and configure's PACKAGE_VERSION are
 * one, and rank 0 prints "version: X" for the script.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpikvs.h"
#include "mpitest.h"

static int rank, size;

static void check_version(void)
{
    char num[32];

    EXPECT(strcmp(mpikvs_version(), MPIKVS_VERSION) == 0,
           "mpikvs_version() %s, MPIKVS_VERSION %s", mpikvs_version(),
           MPIKVS_VERSION);
    EXPECT(strcmp(MPIKVS_VERSION, PACKAGE_VERSION) == 0,
           "MPIKVS_VERSION %s, configure's %s", MPIKVS_VERSION,
           PACKAGE_VERSION);
    snprintf(num, sizeof num, "%d.%d.%d", MPIKVS_VERSION_NUMBER / 10000,
             MPIKVS_VERSION_NUMBER / 100 % 100, MPIKVS_VERSION_NUMBER % 100);
    EXPECT(strcmp(num, MPIKVS_VERSION) == 0,
           "MPIKVS_VERSION_NUMBER %d reads as %s, not %s",
           MPIKVS_VERSION_NUMBER, num, MPIKVS_VERSION);
    if (rank == 0)
        printf("version: %s\n", mpikvs_version());
}

static int persist_code(const char *s)
{
    return !strcmp(s, "loaded")    ? MPIKVS_PERSIST_LOADED
           : !strcmp(s, "no-file") ? MPIKVS_PERSIST_NO_FILE
           : !strcmp(s, "kept")    ? MPIKVS_PERSIST_KEPT
                                   : MPIKVS_PERSIST_OFF;
}

/* The nodes as the ranks' own info says: node numbers 0..nodes-1, each
 * rank's node_ranks the count of ranks that name its node. */
static void check_nodes(const mpikvs_info_t *in, uint32_t want, int virt)
{
    uint32_t *all = malloc((size_t)size * sizeof *all), top = 0;
    int same = 0;

    MPI_Allgather(&in->node, 1, MPI_UINT32_T, all, 1, MPI_UINT32_T,
                  MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        same += all[r] == in->node;
        top = all[r] > top ? all[r] : top;
    }
    EXPECT(in->nodes == want, "nodes %u, expected %u", in->nodes, want);
    EXPECT(top + 1 == in->nodes, "ranks name nodes up to %u of %u", top,
           in->nodes);
    EXPECT(in->node_ranks == same, "node %u: node_ranks %d, %d ranks there",
           in->node, in->node_ranks, same);
    EXPECT(in->ranks == size, "ranks %d of %d", in->ranks, size);
    EXPECT(in->virtual_nodes == virt, "virtual_nodes %d", in->virtual_nodes);
    free(all);
}

/* Whether this process maps the region whose name was dir/name and is
 * gone: outside Slurm the names go once every rank holds the regions
 * (mpikvs(3), "Lifetime of regions"), and /proc/self/maps still shows
 * the mapping as "dir/name (deleted)"; the rank that made the region
 * maps the unnamed file it made it as, "dir/#INODE (deleted)". */
static int mapped_unlinked(const char *dir, const char *name)
{
    char named[MPIKVS_INFO_PATH + MPIKVS_INFO_NAME + 16];
    char made[MPIKVS_INFO_PATH + 4], line[4096];
    const char *path;
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;

    if (!f)
        return 0;
    snprintf(named, sizeof named, "%s/%s (deleted)\n", dir, name);
    snprintf(made, sizeof made, "%s/#", dir);
    while (!found && fgets(line, sizeof line, f)) {
        if (!(path = strchr(line, '/')))
            continue;
        found = strcmp(path, named) == 0 ||
                (strncmp(path, made, strlen(made)) == 0 &&
                 strstr(path, " (deleted)\n"));
    }
    fclose(f);
    return found;
}

/* Rank 0's job id is everyone's, and in the region's name; the region
 * is mapped here and its name is gone from the shm directory. */
static void check_job(const mpikvs_info_t *in)
{
    char job0[MPIKVS_INFO_NAME], path[MPIKVS_INFO_PATH + MPIKVS_INFO_NAME];
    char dot[MPIKVS_INFO_NAME + 2];
    struct stat st;

    memcpy(job0, in->job, sizeof job0);
    MPI_Bcast(job0, sizeof job0, MPI_CHAR, 0, MPI_COMM_WORLD);
    EXPECT(in->job[0] && strcmp(job0, in->job) == 0,
           "job '%s' here, '%s' on rank 0", in->job, job0);
    snprintf(dot, sizeof dot, ".%s.", in->job);
    EXPECT(strncmp(in->data_region, "mpikvs.", 7) == 0 &&
               strstr(in->data_region, dot),
           "region '%s' is not of job '%s'", in->data_region, in->job);
    snprintf(path, sizeof path, "%s/%s", in->shm_dir, in->data_region);
    /* the leader removes the names at the end of its open, which may
     * come a moment after this rank's: wait for it, up to 10 s */
    for (int tries = 0; tries < 10000 && stat(path, &st) == 0; tries++)
        usleep(1000);
    EXPECT(stat(path, &st) != 0 && errno == ENOENT &&
               mapped_unlinked(in->shm_dir, in->data_region),
           "region %s: its name is %s, and it is %smapped here", path,
           access(path, F_OK) == 0 ? "still there" : "gone",
           mapped_unlinked(in->shm_dir, in->data_region) ? "" : "not ");
    EXPECT(in->region_size > 0, "region size %llu",
           (unsigned long long)in->region_size);
    EXPECT(!in->plugin, "plugin %d outside Slurm", in->plugin);
    if (getenv("MPITEST_TIER")) {
        char p2[MPIKVS_INFO_PATH + MPIKVS_INFO_NAME];
        snprintf(path, sizeof path, "%s/%s", in->shm_dir, in->tier_index);
        snprintf(p2, sizeof p2, "%s/%s", in->shm_dir, in->tier_entries);
        for (int tries = 0; tries < 10000 && (access(path, F_OK) == 0 ||
                                              access(p2, F_OK) == 0);
             tries++)
            usleep(1000);
        EXPECT(in->tier_index[0] && strstr(in->tier_index, dot) &&
                   in->tier_entries[0] && strstr(in->tier_entries, dot) &&
                   access(path, F_OK) != 0 && access(p2, F_OK) != 0 &&
                   strcmp(in->tier_caching, "off") != 0,
               "tier '%s' '%s' (%s)", in->tier_index, in->tier_entries,
               in->tier_caching);
    } else {
        EXPECT(!in->tier_index[0] && !strcmp(in->tier_caching, "off"),
               "a tier '%s' (%s) without one", in->tier_index,
               in->tier_caching);
    }
}

/* The text names what the struct says. */
static void check_text(const mpikvs_t *kvs, const mpikvs_info_t *in,
                       const char *out)
{
    char text[8192], want[2 * MPIKVS_INFO_PATH], small[10];
    int n = mpikvs_describe(kvs, text, sizeof text);
    const char *persist[] = {"persist: off", "persist: loaded ",
                             "persist: no file at ", "persist: "};

    EXPECT(n > 0 && (size_t)n == strlen(text), "describe returned %d for "
           "%zu bytes", n, strlen(text));
    snprintf(want, sizeof want, "mpikvs %s\n", mpikvs_version());
    EXPECT(strncmp(text, want, strlen(want)) == 0, "first line: %.40s",
           text);
#define NAMES(...)                                                       \
    do {                                                                 \
        snprintf(want, sizeof want, __VA_ARGS__);                        \
        EXPECT(strstr(text, want), "the text lacks '%s':\n%s", want,     \
               text);                                                    \
    } while (0)
    NAMES("\njob: %s ", in->job);
    NAMES("\nnodes: %u", in->nodes);
    NAMES("\nnode: %u (%s), %d ranks\n", in->node, in->node_name,
          in->node_ranks);
    NAMES("\nregion: %s/%s ", in->shm_dir, in->data_region);
    NAMES("\nmode: %s\n", in->mode);
    NAMES("\ntransport: %s (%s)\n", in->transport, in->transport_why);
    NAMES("\n%s", persist[in->persist]);
    if (in->tier_index[0])
        NAMES("\ntier: %s, regions %s, %s\n", in->tier_caching,
              in->tier_index, in->tier_entries);
    else
        NAMES("\ntier: off\n");
    if (in->config[0])
        NAMES("\nconfig: %s (MPIKVS_CONFIG)\n", in->config);
    else
        NAMES("\nconfig: none\n");
    /* cut as snprintf cuts: the same length returned */
    EXPECT(mpikvs_describe(kvs, small, sizeof small) == n &&
               strlen(small) == sizeof small - 1,
           "a 10-byte buffer: '%s'", small);
    EXPECT(mpikvs_describe(kvs, NULL, 0) == n, "length with no buffer");
    EXPECT(mpikvs_describe(NULL, text, sizeof text) == MPIKVS_ERR_INVAL,
           "describe of NULL");
    if (rank == 0 && out) {
        FILE *f = fopen(out, "w");
        EXPECT(f && fputs(text, f) >= 0 && fclose(f) == 0, "writing %s",
               out);
    }
}

/* info->size: too small is refused; a newer program's larger struct gets
 * what this library knows, the rest left as it was. */
static void check_size_rule(const mpikvs_t *kvs)
{
    struct {
        mpikvs_info_t info;
        unsigned char newer[64];
    } big;
    mpikvs_info_t in;
    int rc;

    memset(&big, 0xa5, sizeof big);
    big.info.size = sizeof big;
    rc = mpikvs_info(kvs, &big.info);
    EXPECT(rc == MPIKVS_OK && big.info.size == sizeof(mpikvs_info_t) &&
               big.newer[0] == 0xa5 && big.newer[63] == 0xa5,
           "a larger struct: rc %d, size %zu", rc, big.info.size);
    in.size = offsetof(mpikvs_info_t, persist);
    rc = mpikvs_info(kvs, &in);
    EXPECT(rc == MPIKVS_ERR_INVAL && *mpikvs_last_error(kvs),
           "a smaller struct: rc %d", rc);
    EXPECT(mpikvs_info(NULL, &in) == MPIKVS_ERR_INVAL, "info of NULL");
}

static void phase_open(int argc, char **argv)
{
    uint32_t nodes = (uint32_t)atoi(argv[2]);
    int virt = atoi(argv[3]);
    const char *transport = argv[4], *why = argv[5];
    int persist = persist_code(argv[6]);
    unsigned long long loaded = argc > 7 ? strtoull(argv[7], NULL, 10) : 0;
    const char *out = argc > 8 ? argv[8] : NULL;
    const char *mode = getenv("MPITEST_MODE");
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = 16, .value_size = 8,
                          .size_per_node = 1u << 20, .mode = mode};
    const char *config = getenv("MPIKVS_CONFIG");
    mpikvs_info_t in = {.size = sizeof in};
    mpikvs_t *kvs = NULL;
    int rc;

    mt_phase("open");
    rc = mpikvs_open(MPI_COMM_WORLD, config ? NULL : &o, &kvs);
    if (rc != MPIKVS_OK) {
        EXPECT(0, "open: %s: %s", mpikvs_strerror(rc),
               mpikvs_last_error(NULL));
        return;
    }
    mt_phase("info");
    rc = mpikvs_info(kvs, &in);
    EXPECT(rc == MPIKVS_OK && in.size == sizeof in, "info: rc %d size %zu",
           rc, in.size);
    check_nodes(&in, nodes, virt);
    check_job(&in);
    EXPECT(strcmp(in.mode, mode ? mode : "lockfree") == 0, "mode %s",
           in.mode);
    EXPECT(strcmp(transport, "any") == 0
               ? !strcmp(in.transport, "ucx") || !strcmp(in.transport, "mpi")
               : strcmp(in.transport, transport) == 0,
           "transport %s, expected %s", in.transport, transport);
    EXPECT(strcmp(in.transport, mpikvs_transport(kvs)) == 0,
           "transport %s, mpikvs_transport %s", in.transport,
           mpikvs_transport(kvs));
    EXPECT(strncmp(in.transport_why, why, strlen(why)) == 0,
           "transport_why '%s' does not start with '%s'", in.transport_why,
           why);
    EXPECT(in.key_size == mpikvs_key_size(kvs) &&
               in.value_size == mpikvs_value_size(kvs) && in.buckets > 0 &&
               in.bucket_size * in.buckets <= in.region_size,
           "sizes: %llu/%llu, %llu buckets of %llu in %llu",
           (unsigned long long)in.key_size,
           (unsigned long long)in.value_size,
           (unsigned long long)in.buckets,
           (unsigned long long)in.bucket_size,
           (unsigned long long)in.region_size);
    EXPECT(in.persist == persist && in.persist_loaded == loaded,
           "persist %d (expected %d), loaded %llu (expected %llu)",
           in.persist, persist, (unsigned long long)in.persist_loaded,
           loaded);
    EXPECT(config ? strcmp(in.config, config) == 0 : in.config[0] == '\0',
           "config '%s'", in.config);
    check_text(kvs, &in, out);
    check_size_rule(kvs);
    if (config) {   /* keys for the config's save, if it has one */
        unsigned char key[64] = {0}, value[64] = {0};
        mt_phase("puts");
        for (int i = rank; i < 100; i += size) {
            snprintf((char *)key, sizeof key, "describe-%d", i);
            rc = mpikvs_put(kvs, key, value);
            EXPECT(rc == MPIKVS_OK, "put: %s", mpikvs_strerror(rc));
        }
    }
    mt_phase("close");
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
}

static void phase_refused(void)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = 16, .value_size = 8,
                          .size_per_node = 1u << 20};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);

    EXPECT(rc == MPIKVS_ERR_INVAL && !kvs &&
               strstr(mpikvs_last_error(NULL), "MPIKVS_VERBOSE"),
           "open with MPIKVS_VERBOSE=%s: rc %d, '%s'",
           getenv("MPIKVS_VERBOSE"), rc, mpikvs_last_error(NULL));
    if (kvs)
        mpikvs_close(&kvs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_version();
    if (argc >= 7 && !strcmp(argv[1], "open"))
        phase_open(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "refused"))
        phase_refused();
    else
        mt_abort("usage: test_describe open NODES VIRTUAL TRANSPORT WHY "
                 "PERSIST [LOADED] [OUT] | refused");
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
