/*
 * test_populate.c - MPIKVS_POPULATE: what mpikvs_open faults in.
 *
 * Every rank opens a 64 MiB table on one node with MPIKVS_POPULATE unset
 * (the default, 1 GiB a rank), "", "all", "0", "off" and "4M", and reads
 * how much of the node's data region its own page table maps (the Rss
 * of its mapping in /proc/self/smaps, found by the region file's inode
 * in MPIKVS_SHM_DIR): the whole bucket area with the first three, a few
 * pages of header and counters with 0 and off, and 4 MiB of its share
 * with 4M.  Each open must work: a put and a get of the rank's own key.
 * Then bad values fail the open with MPIKVS_ERR_INVAL and a message that
 * quotes them, also when only the last rank has one (every rank fails,
 * none hangs).
 * Run under mpirun (run-populate-test.sh); see mpitest.h for the output.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <mpi.h>

#include "held.h"
#include "mpikvs.h"
#include "mpitest.h"

#define KS   16u
#define VS   16u
#define MiB  (UINT64_C(1) << 20)
#define SIZE (64 * MiB)

static int rank, size;

/* The largest region held so far. */
static int larger(const struct kvshm_held *h, void *arg)
{
    struct stat *best = arg;

    if (h->st.st_size > best->st_size)
        *best = h->st;
    return 0;
}

/* The node's data region: the largest region of MPIKVS_SHM_DIR (the
 * tier's regions are smaller).  libmpikvs unlinked its name at open: it
 * is found through the ranks that hold it (shm/held.h). */
static int data_region(struct stat *out)
{
    const char *dir = getenv("MPIKVS_SHM_DIR");

    /* The leader removes the names at the end of its open, which may
     * come a moment after this rank's (mpikvs(3), "Lifetime of
     * regions"): wait for it, up to 10 s. */
    for (int tries = 0; dir && tries < 10000; tries++) {
        memset(out, 0, sizeof(*out));
        if (kvshm_held_scan(dir, larger, out) != 0)
            return 0;
        if (out->st_size > 0)
            return 1;
        usleep(1000);
    }
    return 0;
}

/* KiB of the data region that this process's page table maps: the Rss
 * of its mappings of the file, by device and inode (the leader's maps
 * the unnamed file it made, whose path is no region name); *region_kib:
 * the region's size. */
static long mapped_kib(long *region_kib)
{
    struct stat st;
    char line[512];
    unsigned maj, min;
    unsigned long lo, hi, ino;
    long kib = 0, v, page = sysconf(_SC_PAGESIZE);
    int in = 0;
    FILE *f;

    if (!data_region(&st) || !(f = fopen("/proc/self/smaps", "r")))
        return -1;
    /* in whole pages, as Rss counts */
    *region_kib = (long)((st.st_size + page - 1) / page * (page / 1024));
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx %*s %*x %x:%x %lu", &lo, &hi, &maj, &min,
                   &ino) == 5) {
            in = ino == (unsigned long)st.st_ino &&
                 maj == major(st.st_dev) && min == minor(st.st_dev);
            continue;
        }
        if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
            kib += v;
    }
    fclose(f);
    return kib;
}

static mpikvs_t *open_table(int *rc)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .size_per_node = SIZE};
    mpikvs_t *kvs = NULL;

    *rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    return kvs;
}

/* Open with MPIKVS_POPULATE set to value (NULL: unset); the mapped KiB
 * must lie in [lo, hi] (whole: lo and hi are KiB less than the region's
 * size); then the table must work. */
static void opens(const char *value, long lo, long hi, int whole)
{
    unsigned char key[KS], v[VS], got[VS];
    char what[64];
    mpikvs_t *kvs;
    long kib, region = 0;
    int rc;

    snprintf(what, sizeof what, "MPIKVS_POPULATE=%s%s%s",
             value ? "'" : "(unset)", value ? value : "", value ? "'" : "");
    mt_phase(what);
    if (value)
        setenv("MPIKVS_POPULATE", value, 1);
    else
        unsetenv("MPIKVS_POPULATE");
    kvs = open_table(&rc);
    EXPECT(rc == MPIKVS_OK && kvs, "open with %s: %s (%s)", what,
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
    if (!kvs)
        return;
    kib = mapped_kib(&region);
    if (whole) {
        lo = region - lo;
        hi = region - hi;
    }
    EXPECT(kib >= lo && kib <= hi,
           "open with %s: %ld KiB of the data region mapped, want %ld to "
           "%ld", what, kib, lo, hi);
    mt_note("%s: %ld KiB of the data region's %ld mapped", what, kib,
            region);

    mt_make_key(16, (uint32_t)rank, 1, key, KS);
    mt_make_value(key, KS, 1, v, VS);
    rc = mpikvs_put(kvs, key, v);
    EXPECT(rc == MPIKVS_OK, "put with %s: %s", what, mpikvs_strerror(rc));
    memset(got, 0, sizeof got);
    rc = mpikvs_get(kvs, key, got);
    EXPECT(rc == MPIKVS_OK && !memcmp(got, v, VS), "get with %s: %s", what,
           mpikvs_strerror(rc));
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close with %s: %s", what, mpikvs_strerror(rc));
}

/* Open with MPIKVS_POPULATE=value on the ranks that bad says: every rank's
 * open fails with MPIKVS_ERR_INVAL, and a rank with the value says why. */
static void refused(const char *value, int all_ranks)
{
    int mine = all_ranks || rank == size - 1, rc;
    char want[96];
    mpikvs_t *kvs;

    snprintf(want, sizeof want, "MPIKVS_POPULATE='%s'", value);
    mt_phase(want);
    if (mine)
        setenv("MPIKVS_POPULATE", value, 1);
    else
        unsetenv("MPIKVS_POPULATE");
    kvs = open_table(&rc);
    EXPECT(rc == MPIKVS_ERR_INVAL && !kvs, "open with %s on %s: %d (%s)",
           want, all_ranks ? "every rank" : "the last rank", rc,
           mpikvs_last_error(NULL));
    if (mine)
        EXPECT(strstr(mpikvs_last_error(NULL), want) != NULL,
               "the message does not quote %s: \"%s\"", want,
               mpikvs_last_error(NULL));
    if (kvs)
        mpikvs_close(&kvs);
}

int main(int argc, char **argv)
{
    static const char *const bad[] = {"yes", "-1", "1e3", "1GB", "ALL",
                                      "1G,2G", " ", "4 M"};
    /* header, control block and this rank's counters: a few pages,
     * whatever the rank count */
    const long small = 256;
    int rc;

    (void)argc;
    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* the whole bucket area: the region but its first pages */
    opens(NULL, small, 0, 1);
    opens("", small, 0, 1);
    opens("all", small, 0, 1);
    opens("0", 0, small, 0);
    opens("off", 0, small, 0);
    /* within the rank's share, which it populates for writing: 4 MiB of
     * buckets, and the few pages before them; as many less as the kernel
     * may be migrating (compaction takes a page out of every page table
     * while it moves it: seen 3 pages under the whole suite's load) */
    opens("4M", 4096 - small, 4096 + small, 0);

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i], 1);
    if (size > 1)
        refused("lots", 0);
    unsetenv("MPIKVS_POPULATE");

    rc = mt_finish();
    MPI_Finalize();
    return rc;
}
