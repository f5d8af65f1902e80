/*
 * test_persist.c - mpikvs_save and mpikvs_load across node counts and
 * table sizes, refused files and mpikvs_foreach_local (the global
 * counters: test_counters).  run-persist-tests.sh runs its phases as
 * separate jobs:
 *
 *   save FILE N [SIZE]   puts keys 0..N-1 into a table of SIZE bytes per
 *                        node (default 4 MiB), checks foreach_local,
 *                        saves to FILE
 *   load FILE N SIZE     loads FILE into a table of SIZE bytes per node:
 *                        every key found with its value, or counted as
 *                        not fitting; a second load is refused unless
 *                        merged
 *   refuse FILE          damaged copies of FILE (cut, a block, the
 *                        header, foreign) and other value sizes are
 *                        refused and load nothing
 *
 * MPITEST_MODE, if set, is the consistency mode of every open,
 * MPITEST_SLOTS its slots per bucket and MPITEST_VALUE_SIZE its value
 * size (default 64; up to 1 MiB, the library's largest).
 *   config N             (MPIKVS_CONFIG with persist) first run: put
 *                        and close (which saves); "config-check N":
 *                        open (which loads) and find them
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "mpikvs.h"
#include "mpitest.h"

#define KSIZE 32
#define VSIZE 64
#define TAG   18u

static int rank, size;
static size_t vsize = VSIZE;   /* MPITEST_VALUE_SIZE */

static void key_of(uint32_t i, unsigned char *k)
{
    mt_make_key(TAG, i, 7, k, KSIZE);
}

static mpikvs_t *open_table(size_t bytes, size_t vsize)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KSIZE, .value_size = vsize,
                          .size_per_node = bytes,
                          .mode = getenv("MPITEST_MODE"),
                          .slots_per_bucket =
                              getenv("MPITEST_SLOTS")
                                  ? (unsigned)atoi(getenv("MPITEST_SLOTS"))
                                  : 0};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, getenv("MPIKVS_CONFIG") ? NULL : &o,
                         &kvs);

    EXPECT(rc == MPIKVS_OK, "open: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    if (!kvs)
        mt_abort("cannot open");
    return kvs;
}

static unsigned char *value_buffer(void)
{
    unsigned char *v = malloc(vsize);

    if (!v)
        mt_abort("out of memory for a value");
    return v;
}

/* Is v key k's value?  Its version to *ver.  (mt_value_ok checks values
 * of up to 4 KiB.) */
static bool value_ok(const unsigned char *k, const void *v, uint64_t *ver)
{
    static unsigned char *want;
    uint64_t version;

    if (!want)
        want = value_buffer();
    memcpy(&version, v, 8);
    mt_make_value(k, KSIZE, version, want, vsize);
    *ver = version;
    return memcmp(want, v, vsize) == 0;
}

static void put_keys(mpikvs_t *kvs, uint32_t n)
{
    unsigned char k[KSIZE], *v = value_buffer();

    for (uint32_t i = (uint32_t)rank; i < n; i += (uint32_t)size) {
        key_of(i, k);
        mt_make_value(k, KSIZE, i + 1000u, v, vsize);
        int rc = mpikvs_put(kvs, k, v);
        EXPECT(rc == MPIKVS_OK, "put %u: %s", i, mpikvs_strerror(rc));
    }
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");
    free(v);
}

/* Keys of 0..n-1 found with their value: *found; a wrong value fails. */
static uint64_t find_keys(mpikvs_t *kvs, uint32_t n)
{
    unsigned char k[KSIZE], *v = value_buffer();
    uint64_t found = 0, all = 0, ver;

    for (uint32_t i = (uint32_t)rank; i < n; i += (uint32_t)size) {
        key_of(i, k);
        int rc = mpikvs_get(kvs, k, v);
        EXPECT(rc == MPIKVS_OK || rc == MPIKVS_MISS, "get %u: %s", i,
               mpikvs_strerror(rc));
        if (rc == MPIKVS_OK) {
            EXPECT(value_ok(k, v, &ver) && ver == i + 1000u,
                   "key %u: wrong value (version %llu)", i,
                   (unsigned long long)ver);
            found++;
        }
    }
    MPI_Allreduce(&found, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    free(v);
    return all;
}

/* foreach_local: which keys each node holds. */
struct seen {
    int     *count;     /* [n] */
    uint32_t n;
    long     bad;
};

static int see(const void *key, const void *value, void *arg)
{
    struct seen *s = arg;
    uint32_t i;
    uint64_t ver;

    memcpy(&i, (const unsigned char *)key + 4, 4);
    if (i >= s->n || !value_ok(key, value, &ver) ||
        ver != i + 1000u)
        s->bad++;
    else
        s->count[i]++;
    return 0;
}

/* Every key found by get is seen by foreach_local on exactly one node,
 * and no other key is seen. */
static void check_foreach(mpikvs_t *kvs, uint32_t n, uint64_t found)
{
    struct seen s = {calloc(n, sizeof(int)), n, 0};
    int *sum = calloc(n, sizeof(int));
    int leader;
    long total = 0, ones = 0;

    int rc = mpikvs_foreach_local(kvs, see, &s);
    EXPECT(rc == MPIKVS_OK, "foreach_local: %s", mpikvs_strerror(rc));
    EXPECT(s.bad == 0, "foreach_local: %ld entries not of a key put", s.bad);
    /* one rank per node counts: the first of each block of consecutive
     * ranks MPIKVS_VIRTUAL_NODES makes (rank * nodes / size, nodes.c);
     * these tests run on one machine */
    {
        const char *vn = getenv("MPIKVS_VIRTUAL_NODES");
        long nodes = vn && atoi(vn) > 0 ? atoi(vn) : 1;
        leader = rank == 0 || (long)rank * nodes / size !=
                                  (long)(rank - 1) * nodes / size;
    }
    if (!leader)
        memset(s.count, 0, n * sizeof(int));
    MPI_Allreduce(s.count, sum, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (uint32_t i = 0; i < n; i++) {
        total += sum[i];
        ones += sum[i] == 1;
        EXPECT(sum[i] <= 1, "key %u seen on %d nodes", i, sum[i]);
    }
    EXPECT(total == (long)found && ones == (long)found,
           "foreach_local saw %ld entries over the nodes, get found %llu",
           total, (unsigned long long)found);
    if (rank == 0)
        mt_note("foreach_local: %ld entries over the nodes", total);
    free(s.count);
    free(sum);
}

static void phase_save(const char *file, uint32_t n, size_t bytes)
{
    mpikvs_t *kvs = open_table(bytes, vsize);
    mpikvs_stats_t st;
    struct stat sb;
    uint64_t found;

    mt_phase("save: put");
    put_keys(kvs, n);
    found = find_keys(kvs, n);
    EXPECT(found == n, "%llu of %u keys found before saving",
           (unsigned long long)found, n);
    mt_phase("save: foreach_local");
    check_foreach(kvs, n, found);
    mt_phase("save: save");
    int rc = mpikvs_save(kvs, file);
    EXPECT(rc == MPIKVS_OK, "save %s: %s: %s", file, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    EXPECT(mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, &st, sizeof st) == MPIKVS_OK &&
               st.saved == n && st.save_torn == 0,
           "saved %llu entries (%llu torn), %u put",
           (unsigned long long)st.saved, (unsigned long long)st.save_torn,
           n);
    if (rank == 0) {
        char partial[1100];
        snprintf(partial, sizeof(partial), "%s.partial", file);
        EXPECT(stat(file, &sb) == 0 && sb.st_size > 256, "%s is there",
               file);
        EXPECT(stat(partial, &sb) != 0 && errno == ENOENT,
               "%s is gone", partial);
        mt_note("saved %u entries of %zu-byte values, %lld bytes "
                "(transport %s)", n, vsize, (long long)sb.st_size,
                mpikvs_transport(kvs));
    }
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

static void phase_load(const char *file, uint32_t n, size_t bytes)
{
    mpikvs_t *kvs = open_table(bytes, vsize);
    mpikvs_load_report_t r = {0};
    uint64_t found;
    int rc;

    mt_phase("load");
    rc = mpikvs_load(kvs, file, 0, &r);
    EXPECT(rc == MPIKVS_OK, "load %s: %s: %s", file, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    EXPECT(r.entries == n && r.loaded == n, "report: %llu entries, %llu "
           "loaded, %u saved", (unsigned long long)r.entries,
           (unsigned long long)r.loaded, n);
    found = find_keys(kvs, n);
    EXPECT(found + r.not_fitting >= n,
           "%llu keys found, %llu did not fit, %u saved: some lost "
           "uncounted", (unsigned long long)found,
           (unsigned long long)r.not_fitting, n);
    if (rank == 0)
        mt_note("load into %zu bytes a node: %llu of %u found, %llu did not "
                "fit", bytes, (unsigned long long)found, n,
                (unsigned long long)r.not_fitting);
    mt_phase("load: again");
    rc = mpikvs_load(kvs, file, 0, NULL);
    EXPECT(rc == MPIKVS_ERR_NOTEMPTY, "a second load: %s",
           mpikvs_strerror(rc));
    rc = mpikvs_load(kvs, file, MPIKVS_LOAD_MERGE, &r);
    EXPECT(rc == MPIKVS_OK, "a merged load: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

/* Rank 0 writes a copy of src, changed by how. */
static void damaged_copy(const char *src, const char *dst, const char *how)
{
    FILE *in, *out;
    unsigned char *buf;
    long len;

    if (rank != 0)
        return;
    in = fopen(src, "rb");
    if (!in)
        mt_abort("cannot read the saved file");
    fseek(in, 0, SEEK_END);
    len = ftell(in);
    rewind(in);
    buf = malloc((size_t)len);
    if (fread(buf, 1, (size_t)len, in) != (size_t)len)
        mt_abort("short read");
    fclose(in);
    if (!strcmp(how, "cut"))
        len -= 100;
    else if (!strcmp(how, "block"))
        buf[len / 2] ^= 0x40;
    else if (!strcmp(how, "header"))
        buf[40] ^= 1;
    else if (!strcmp(how, "foreign"))
        memcpy(buf, "GARBAGE!", 8);
    else if (!strcmp(how, "short"))
        len = 100;
    out = fopen(dst, "wb");
    if (!out || fwrite(buf, 1, (size_t)len, out) != (size_t)len)
        mt_abort("cannot write the damaged copy");
    fclose(out);
    free(buf);
}

static int count_local(const void *key, const void *value, void *arg)
{
    (void)key;
    (void)value;
    (*(long *)arg)++;
    return 0;
}

static void phase_refuse(const char *file, const char *dir, uint32_t n)
{
    static const struct {
        const char *how;
        int         rc;
    } cases[] = {{"cut", MPIKVS_ERR_TRUNCATED},
                 {"block", MPIKVS_ERR_CORRUPT},
                 {"header", MPIKVS_ERR_CORRUPT},
                 {"foreign", MPIKVS_ERR_FOREIGN},
                 {"short", MPIKVS_ERR_TRUNCATED}};
    mpikvs_t *kvs = open_table(1u << 20, vsize);
    char copy[1100];
    long local = 0;
    int rc;

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        mt_phase(cases[c].how);
        snprintf(copy, sizeof(copy), "%s/%s.kvs", dir, cases[c].how);
        damaged_copy(file, copy, cases[c].how);
        MPI_Barrier(MPI_COMM_WORLD);
        rc = mpikvs_load(kvs, copy, 0, NULL);
        EXPECT(rc == cases[c].rc, "%s file: %s (%s), expected %s",
               cases[c].how, mpikvs_strerror(rc), mpikvs_last_error(kvs),
               mpikvs_strerror(cases[c].rc));
        if (rank == 0)
            mt_note("%s file refused: %s", cases[c].how,
                    mpikvs_last_error(kvs));
    }
    rc = mpikvs_load(kvs, "/nonexistent/mpikvs.save", 0, NULL);
    EXPECT(rc == -ENOENT, "a missing file: %s", mpikvs_strerror(rc));
    mpikvs_foreach_local(kvs, count_local, &local);
    EXPECT(local == 0, "%ld entries after refused loads", local);
    EXPECT(find_keys(kvs, n) == 0, "keys found after refused loads");
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");

    /* other value size */
    mt_phase("other sizes");
    kvs = open_table(1u << 20, vsize == VSIZE ? VSIZE * 2 : vsize / 2);
    rc = mpikvs_load(kvs, file, 0, NULL);
    EXPECT(rc == MPIKVS_ERR_MISMATCH, "other value size: %s",
           mpikvs_strerror(rc));
    if (rank == 0)
        mt_note("other sizes refused: %s", mpikvs_last_error(kvs));
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

/* The config's persist: close saves, open loads. */
static void phase_config(uint32_t n, bool check)
{
    mpikvs_t *kvs = open_table(0, vsize);

    if (!check) {
        put_keys(kvs, n);
    } else {
        uint64_t found = find_keys(kvs, n);
        mpikvs_stats_t st;
        EXPECT(found == n, "%llu of %u keys after a warm start",
               (unsigned long long)found, n);
        EXPECT(mpikvs_stats(kvs, MPIKVS_SCOPE_JOB, &st,
                            sizeof st) == MPIKVS_OK &&
                   st.loaded == n,
               "loaded %llu", (unsigned long long)st.loaded);
        if (rank == 0)
            mt_note("warm start: %llu of %u keys", (unsigned long long)found,
                    n);
    }
    int rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (getenv("MPITEST_VALUE_SIZE"))
        vsize = (size_t)strtoull(getenv("MPITEST_VALUE_SIZE"), NULL, 10);
    if (vsize < 8)
        mt_abort("MPITEST_VALUE_SIZE: 8 bytes at least (the version)");
    if (argc >= 4 && !strcmp(argv[1], "save"))
        phase_save(argv[2], (uint32_t)atoi(argv[3]),
                   argc >= 5 ? (size_t)strtoull(argv[4], NULL, 10)
                             : (size_t)4 << 20);
    else if (argc >= 5 && !strcmp(argv[1], "load"))
        phase_load(argv[2], (uint32_t)atoi(argv[3]),
                   (size_t)strtoull(argv[4], NULL, 10));
    else if (argc >= 5 && !strcmp(argv[1], "refuse"))
        phase_refuse(argv[2], argv[3], (uint32_t)atoi(argv[4]));
    else if (argc >= 3 && !strcmp(argv[1], "config"))
        phase_config((uint32_t)atoi(argv[2]), false);
    else if (argc >= 3 && !strcmp(argv[1], "config-check"))
        phase_config((uint32_t)atoi(argv[2]), true);
    else
        mt_abort("usage: test_persist save|load|refuse|config ...");
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
