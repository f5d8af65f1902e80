/*
 * test_warm_start.c - what the config's persist.load did at open is
 * recorded on the handle (kvs->warm, in words by kvs_warm_start_text):
 * the first open finds no file (a cold start), close saves, the next
 * open loads every entry and says how many from where, and a table
 * without persist.load says it has none.  Built from the library's
 * sources: the record is what the calls describing a handle show.
 *
 * argv[1]: a scratch directory shared by the ranks.  Run under mpirun
 * (run-warm-start-test.sh); see mpitest.h for the output.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "handle.h"
#include "mpitest.h"

#define KS 16u
#define VS 16u
#define N  500u

static int rank;

static mpikvs_t *open_config(const char *config)
{
    mpikvs_options_t o = {.config = config};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);

    if (rc != MPIKVS_OK) {
        fprintf(stderr, "rank %d: open %s: %s\n", rank, config,
                mpikvs_last_error(NULL));
        mt_abort("open failed");
    }
    return kvs;
}

/* The record, as a rank sees it: what, and the words holding want. */
static void expect_warm(mpikvs_t *kvs, const char *when,
                        enum kvs_warm_start what, const char *want1,
                        const char *want2)
{
    char text[600];

    kvs_warm_start_text(kvs, text, sizeof(text));
    EXPECT(kvs->warm.what == what, "%s: warm start %d, not %d (\"%s\")",
           when, (int)kvs->warm.what, (int)what, text);
    EXPECT(strstr(text, want1), "%s: \"%s\" does not say \"%s\"", when, text,
           want1);
    if (want2)
        EXPECT(strstr(text, want2), "%s: \"%s\" does not say \"%s\"", when,
               text, want2);
    if (rank == 0)
        mt_note("%s: %s", when, text);
}

int main(int argc, char **argv)
{
    char config[512], plain[512], file[512], count[32];
    unsigned char key[KS], value[VS];
    mpikvs_t *kvs;
    int size;
    FILE *f;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        mt_abort("usage: test_warm_start SCRATCH-DIR");
    snprintf(config, sizeof(config), "%s/warm.json", argv[1]);
    snprintf(plain, sizeof(plain), "%s/plain.json", argv[1]);
    snprintf(file, sizeof(file), "%s/warm.kvs", argv[1]);
    if (rank == 0) {
        if (!(f = fopen(config, "w")))
            mt_abort("cannot write the config");
        fprintf(f, "{\"version\": 1, \"tables\": {\"warm\": {\"size\": "
                   "\"1M\", \"key\": {\"key_size\": %u}, \"value\": "
                   "{\"value_size\": %u}, \"persist\": {\"load\": \"%s\", "
                   "\"save\": \"%s\"}}}}\n", KS, VS, file, file);
        fclose(f);
        if (!(f = fopen(plain, "w")))
            mt_abort("cannot write the config");
        fprintf(f, "{\"version\": 1, \"tables\": {\"plain\": {\"size\": "
                   "\"1M\", \"key\": {\"key_size\": %u}, \"value\": "
                   "{\"value_size\": %u}}}}\n", KS, VS);
        fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("cold start");
    kvs = open_config(config);
    expect_warm(kvs, "first open", KVS_WARM_NO_FILE, "no file at", file);
    for (uint32_t i = (uint32_t)rank; i < N; i += (uint32_t)size) {
        mt_make_key(5, i, 0, key, KS);
        mt_make_value(key, KS, 1, value, VS);
        EXPECT(mpikvs_put(kvs, key, value) == MPIKVS_OK, "put: %s",
               mpikvs_last_error(kvs));
    }
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close (saves): %s",
           mpikvs_last_error(NULL));

    mt_phase("warm start");
    kvs = open_config(config);
    snprintf(count, sizeof(count), "loaded %u entries", N);
    expect_warm(kvs, "second open", KVS_WARM_LOADED, count, file);
    EXPECT(kvs->warm.report.entries == N && kvs->warm.report.loaded == N,
           "report: %llu entries, %llu loaded, not %u",
           (unsigned long long)kvs->warm.report.entries,
           (unsigned long long)kvs->warm.report.loaded, N);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));

    mt_phase("no persist");
    kvs = open_config(plain);
    expect_warm(kvs, "no persist.load", KVS_WARM_NONE, "no persist.load",
                NULL);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));

    int rc = mt_finish();
    MPI_Finalize();
    return rc;
}
