/*
 * abi_v1.c - a program built against the header of ABI 1 (libtool's
 * 1:0:0), the copy kept in tests/api/v1/, run against the library of
 * this tree (run-abi-test.sh).  The library may gain option fields,
 * counters and info fields at their ends; a program built against an
 * older header must keep working:
 *   - options started from v1's MPIKVS_OPTIONS_INIT open, and every v1
 *     field, the last (transport) too, is read where v1 put it;
 *   - mpikvs_stats and mpikvs_info write v1's struct only: the bytes
 *     after it are untouched, and the counters count what this program
 *     did (its puts, hits and misses);
 *   - options larger than the library's (v1's and 4 KiB more) are taken
 *     when the bytes past it are 0, refused when one is set;
 *   - refused with MPIKVS_ERR_INVAL and a detail: options.size 0 or
 *     short of v1's fields, a stats size short of v1's counters.
 * Run on 2 ranks or more.  Prints "abi_v1: N passed, M failed".
 */
#include <stdint.h>
#include <string.h>

#include "v1/mpikvs.h"
#include "../mpi/mpitest.h"

#define KS 16
#define VS 24
#define NPUT 10    /* keys each rank puts */
#define NABSENT 5  /* keys nobody puts */
#define CANARY 0xa5

static void make_key(unsigned char *key, int rank, int i)
{
    memset(key, 0, KS);
    key[0] = (unsigned char)rank;
    key[1] = (unsigned char)i;
    key[2] = 0x5a;
}

static void make_value(unsigned char *value, int rank, int i)
{
    for (int b = 0; b < VS; b++)
        value[b] = (unsigned char)(rank * 31 + i * 7 + b);
}

static int untouched(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != CANARY)
            return 0;
    return 1;
}

static mpikvs_options_t v1_options(void)
{
    mpikvs_options_t o = MPIKVS_OPTIONS_INIT;

    o.key_size = KS;
    o.value_size = VS;
    o.size_per_node = 1u << 20;
    o.mode = "fine-lock";
    o.slots_per_bucket = 3;
    o.transport = "mpi";
    return o;
}

/* Open refused with INVAL and a detail naming want. */
static void open_refused(const mpikvs_options_t *o, const char *want,
                         const char *what)
{
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, o, &kvs);

    EXPECT(rc == MPIKVS_ERR_INVAL && kvs == NULL,
           "%s: mpikvs_open = %d (%s), want MPIKVS_ERR_INVAL", what, rc,
           mpikvs_strerror(rc));
    EXPECT(strstr(mpikvs_last_error(NULL), want) != NULL,
           "%s: last error '%s' does not say '%s'", what,
           mpikvs_last_error(NULL), want);
    if (kvs)
        mpikvs_close(&kvs);
}

static void sizes_refused(void)
{
    mpikvs_options_t o = v1_options();
    /* the options of a header newer than any library will be: fields
     * past every library's struct */
    static struct {
        mpikvs_options_t o;
        unsigned char newer[4096];
    } big;
    mpikvs_t *kvs = NULL;
    int rc;

    mt_phase("options refused");
    o.size = 0;
    open_refused(&o, "options.size is 0", "options.size 0");
    o.size = sizeof(o) - sizeof(o.transport);
    open_refused(&o, "smaller than the first sized options",
                 "options without transport");

    mt_phase("larger options");
    big.o = v1_options();
    big.o.size = sizeof(big);
    rc = mpikvs_open(MPI_COMM_WORLD, &big.o, &kvs);
    EXPECT(rc == MPIKVS_OK, "options larger than the library's, 0 past "
           "it: mpikvs_open = %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    if (kvs)
        mpikvs_close(&kvs);
    big.newer[sizeof(big.newer) - 1] = 1;
    open_refused(&big.o, "is set, past the", "a newer option set");
}

static void stats_v1(mpikvs_t *kvs)
{
    struct {
        mpikvs_stats_t s;
        unsigned char after[64];
    } st;
    int rc;

    mt_phase("stats");
    memset(&st, CANARY, sizeof(st));
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_RANK | MPIKVS_SINCE_OPEN, &st.s,
                      sizeof(st.s));
    EXPECT(rc == MPIKVS_OK, "mpikvs_stats = %d (%s)", rc,
           mpikvs_strerror(rc));
    EXPECT(untouched(st.after, sizeof(st.after)),
           "mpikvs_stats wrote past v1's mpikvs_stats_t");
    EXPECT(st.s.puts == NPUT && st.s.gets == NPUT + NABSENT &&
               st.s.hits == NPUT && st.s.misses == NABSENT &&
               st.s.load_unfit == 0,
           "v1's counters: puts %llu gets %llu hits %llu misses %llu "
           "load_unfit %llu, want %d %d %d %d 0",
           (unsigned long long)st.s.puts, (unsigned long long)st.s.gets,
           (unsigned long long)st.s.hits, (unsigned long long)st.s.misses,
           (unsigned long long)st.s.load_unfit, NPUT, NPUT + NABSENT,
           NPUT, NABSENT);

    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, &st.s, sizeof(st.s) - 8);
    EXPECT(rc == MPIKVS_ERR_INVAL, "stats size short of v1's: %d", rc);
    EXPECT(strstr(mpikvs_last_error(kvs), "mpikvs_stats: size is") != NULL,
           "stats size short of v1's: last error '%s'",
           mpikvs_last_error(kvs));
    rc = mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, &st.s, 0);
    EXPECT(rc == MPIKVS_ERR_INVAL, "stats size 0: %d", rc);
}

static void info_v1(mpikvs_t *kvs)
{
    struct {
        mpikvs_info_t i;
        unsigned char after[64];
    } in;
    int rc;

    mt_phase("info");
    memset(&in, CANARY, sizeof(in));
    in.i.size = sizeof(in.i);
    rc = mpikvs_info(kvs, &in.i);
    EXPECT(rc == MPIKVS_OK, "mpikvs_info = %d (%s)", rc,
           mpikvs_strerror(rc));
    EXPECT(untouched(in.after, sizeof(in.after)),
           "mpikvs_info wrote past v1's mpikvs_info_t");
    EXPECT(in.i.size == sizeof(in.i), "info.size %zu, want v1's %zu",
           in.i.size, sizeof(in.i));
    /* every v1 option read where v1 put it */
    EXPECT(in.i.key_size == KS && in.i.value_size == VS &&
               in.i.slots_per_bucket == 3 &&
               strcmp(in.i.mode, "fine-lock") == 0 &&
               strcmp(in.i.transport, "mpi") == 0,
           "v1's options not read: key %llu value %llu slots %llu mode "
           "%s transport %s",
           (unsigned long long)in.i.key_size,
           (unsigned long long)in.i.value_size,
           (unsigned long long)in.i.slots_per_bucket, in.i.mode,
           in.i.transport);
}

int main(int argc, char **argv)
{
    unsigned char key[KS], value[VS], got[VS];
    mpikvs_options_t o;
    mpikvs_t *kvs = NULL;
    int rank, size, rc;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    sizes_refused();

    mt_phase("open");
    o = v1_options();
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    EXPECT(rc == MPIKVS_OK, "mpikvs_open with v1's options = %d (%s): %s",
           rc, mpikvs_strerror(rc), mpikvs_last_error(NULL));
    if (rc != MPIKVS_OK)
        mt_abort("no handle");

    mt_phase("put and get");
    for (int i = 0; i < NPUT; i++) {
        make_key(key, rank, i);
        make_value(value, rank, i);
        rc = mpikvs_put(kvs, key, value);
        EXPECT(rc == MPIKVS_OK, "put %d = %d", i, rc);
    }
    rc = mpikvs_fence(kvs);
    EXPECT(rc == MPIKVS_OK, "fence = %d", rc);
    for (int i = 0; i < NPUT; i++) {
        int other = (rank + 1) % size;

        make_key(key, other, i);
        make_value(value, other, i);
        rc = mpikvs_get(kvs, key, got);
        EXPECT(rc == MPIKVS_OK && memcmp(got, value, VS) == 0,
               "get of rank %d's key %d = %d", other, i, rc);
    }
    for (int i = 0; i < NABSENT; i++) {
        make_key(key, 200, i);     /* no rank is 200 */
        rc = mpikvs_get(kvs, key, got);
        EXPECT(rc == MPIKVS_MISS, "get of an absent key = %d", rc);
    }

    stats_v1(kvs);
    info_v1(kvs);

    mt_phase("close");
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close = %d", rc);
    rc = mt_finish();
    MPI_Finalize();
    return rc;
}
