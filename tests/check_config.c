/*
 * check_config.c - the job config, and sizes as people write them.
 *
 * Bad configs are data: tests/config/bad/NAME.json must fail with exactly
 * the lines of NAME.err, which are the messages a user sees at sbatch time.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_config.h"
#include "plan.h"
#include "size.h"

static const char *srcdir(void)
{
    const char *d = getenv("top_srcdir");
    return d && *d ? d : ".";
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    char *buf;

    ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
    buf = malloc(1 << 20);
    ck_assert(buf != NULL);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static struct kvshm_config *parse_ok(const char *text)
{
    struct kvshm_config *cfg = NULL;
    struct kvshm_diag diag;
    int rc = kvshm_config_parse(text, strlen(text), "job.json", &cfg, &diag);

    ck_assert_msg(rc == MPIKVS_OK, "config rejected (%d):\n%s\n%s", rc,
                  diag.text ? diag.text : "", text);
    return cfg;
}

/* ---- data-driven bad configs ---- */

/* text parses as want bytes (min: the smallest size allowed). */
static void assert_size(const char *text, uint64_t min, uint64_t want)
{
    mpikvs_error_t err = {0};
    uint64_t bytes = 42;
    int rc = kvshm_parse_size(text, "--dht-size", min, &bytes, &err);

    ck_assert_msg(rc == MPIKVS_OK && bytes == want,
                  "'%s': rc %d, %llu bytes (want %llu): %s", text, rc,
                  (unsigned long long)bytes, (unsigned long long)want,
                  err.text);
}

START_TEST(bad_configs_give_their_messages)
{
    char dir[4096];
    struct dirent *de;
    unsigned cases = 0;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/tests/config/bad", srcdir());
    d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s: %s", dir, strerror(errno));
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name), len, elen;
        char json[4400], errf[4400], *text, *expect;
        struct kvshm_config *cfg = NULL;
        struct kvshm_diag diag;

        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        snprintf(json, sizeof(json), "%s/%s", dir, de->d_name);
        snprintf(errf, sizeof(errf), "%s/%.*s.err", dir, (int)(n - 5),
                 de->d_name);
        text = slurp(json, &len);
        expect = slurp(errf, &elen);
        int rc = kvshm_config_parse(text, len, "job.json", &cfg, &diag);
        ck_assert_msg(rc == MPIKVS_ERR_INVAL && cfg == NULL,
                      "%s was accepted (rc %d)", de->d_name, rc);
        ck_assert_msg(diag.text && strcmp(diag.text, expect) == 0,
                      "%s: expected\n%sgot\n%s", de->d_name, expect,
                      diag.text ? diag.text : "(nothing)\n");
        ck_assert_msg(diag.count >= 1, "%s: no problem counted", de->d_name);
        kvshm_diag_free(&diag);
        free(text);
        free(expect);
        cases++;
    }
    closedir(d);
    ck_assert_msg(cases >= 40, "only %u bad configs found in %s", cases, dir);
}
END_TEST

/* ---- good configs ---- */

START_TEST(chemistry_example)
{
    char path[4096];
    struct kvshm_config *cfg;
    struct kvshm_diag diag;
    const struct kvshm_table_config *chem, *interp;

    snprintf(path, sizeof(path), "%s/etc/examples/chemistry.json", srcdir());
    ck_assert_int_eq(kvshm_config_load(path, &cfg, &diag), MPIKVS_OK);
    chem = kvshm_config_table(cfg, "chemistry");
    interp = kvshm_config_table(cfg, "interp");
    ck_assert(chem && interp && !kvshm_config_table(cfg, "nope"));
    ck_assert_msg(chem->key.nfields == 10 && chem->key.size == 80,
                  "POET key: %zu fields, %zu bytes (want 10, 80)",
                  chem->key.nfields, chem->key.size);
    ck_assert_msg(chem->value.nfields == 13 && chem->value.size == 104,
                  "POET value: %zu fields, %zu bytes (want 13, 104)",
                  chem->value.nfields, chem->value.size);
    ck_assert_str_eq(chem->key.fields[2].name, "Charge");
    ck_assert_uint_eq(chem->key.fields[2].digits, 4);   /* its own */
    ck_assert_uint_eq(chem->key.fields[0].digits, 5);   /* the default */
    ck_assert_uint_eq(chem->key.fields[9].digits, 3);
    ck_assert(chem->key.fields[0].zero_below == 1e-12);
    ck_assert(chem->key.fields[9].zero_below == 0.0);
    ck_assert_uint_eq(chem->key.fields[9].offset, 72);
    ck_assert(chem->size.fraction == 0.9 && chem->size.bytes == 0);
    ck_assert(chem->tier.enabled && chem->tier.caching == KVSHM_CACHING_ALWAYS);
    ck_assert(interp->size.fraction == 0.1 && interp->key.fields == NULL);
    ck_assert_uint_eq(interp->key.size, 16);
    ck_assert_uint_eq(interp->slots_per_bucket, KVSHM_SLOTS_DEFAULT);
    ck_assert(!interp->tier.enabled);

    ck_assert_int_eq(kvshm_config_resolve(cfg, UINT64_C(8) << 30, &diag),
                     MPIKVS_OK);
    ck_assert_uint_eq(chem->bytes, (uint64_t)(0.9 * (double)(8ull << 30)));
    ck_assert_uint_eq(chem->tier.bytes, (uint64_t)(0.1 * (double)chem->bytes));
    ck_assert_uint_eq(interp->tier.bytes, 0);
    kvshm_config_free(cfg);
}
END_TEST

START_TEST(dump_parses_back_to_the_same)
{
    static const char *const files[] = {"chemistry.json", "minimal.json"};

    for (size_t i = 0; i < 2; i++) {
        char path[4096];
        struct kvshm_config *cfg, *again;
        struct kvshm_diag diag;
        char *first, *second;

        snprintf(path, sizeof(path), "%s/etc/examples/%s", srcdir(),
                 files[i]);
        ck_assert_int_eq(kvshm_config_load(path, &cfg, &diag), MPIKVS_OK);
        first = kvshm_config_dump(cfg);
        ck_assert(first != NULL);
        again = parse_ok(first);
        second = kvshm_config_dump(again);
        ck_assert_msg(strcmp(first, second) == 0,
                      "%s: dump changed on a round trip:\n%s\n---\n%s",
                      files[i], first, second);
        free(first);
        free(second);
        kvshm_config_free(cfg);
        kvshm_config_free(again);
    }
}
END_TEST

START_TEST(defaults_and_wide_doubles)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{\"t\":{"
        "\"key\":{\"default_digits\":6,\"fields\":["
        "{\"name\":\"a\",\"type\":\"double\"},"
        "{\"name\":\"b\",\"type\":\"double\",\"digits\":17},"
        "{\"name\":\"n\",\"type\":\"int64\"},"
        "{\"name\":\"tag\",\"type\":\"bytes[3]\"}]},"
        "\"value\":{\"value_size\":8}}}}");
    const struct kvshm_table_config *t = &cfg->tables[0];

    ck_assert_uint_eq(t->key.fields[0].width, 8);
    ck_assert_uint_eq(t->key.fields[1].width, 16);
    ck_assert_uint_eq(t->key.fields[2].offset, 24);
    ck_assert_uint_eq(t->key.fields[3].offset, 32);
    ck_assert_uint_eq(t->key.fields[3].width, 3);
    ck_assert_uint_eq(t->key.size, 35);
    ck_assert(t->mode == KVSHM_MODE_LOCKFREE);
    ck_assert(t->transport == KVSHM_TRANSPORT_AUTO);
    ck_assert_uint_eq(t->slots_per_bucket, 4);
    ck_assert(!t->tier.enabled && t->tier.caching == KVSHM_CACHING_ALWAYS);
    ck_assert(t->size.bytes == 0 && t->size.fraction == 0);
    kvshm_config_free(cfg);
}
END_TEST

/* The transport key: auto (the default), mpi or ucx, the same names
 * MPIKVS_TRANSPORT and options.transport take, and the dump keeps it. */
START_TEST(transport_key)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"m\":{\"transport\":\"mpi\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"a\":{\"transport\":\"auto\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"u\":{\"transport\":\"ucx\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"d\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8}}}}");
    enum kvshm_transport tr = KVSHM_TRANSPORT_MPI;
    struct kvshm_config *again;
    char list[64], *dump;

    ck_assert(kvshm_config_table(cfg, "m")->transport == KVSHM_TRANSPORT_MPI);
    ck_assert(kvshm_config_table(cfg, "a")->transport == KVSHM_TRANSPORT_AUTO);
    ck_assert(kvshm_config_table(cfg, "u")->transport == KVSHM_TRANSPORT_UCX);
    ck_assert(kvshm_config_table(cfg, "d")->transport == KVSHM_TRANSPORT_AUTO);
    dump = kvshm_config_dump(cfg);
    ck_assert_msg(strstr(dump, "\"transport\": \"mpi\"") &&
                      strstr(dump, "\"transport\": \"auto\"") &&
                      strstr(dump, "\"transport\": \"ucx\""),
                  "the dump lacks the transports:\n%s", dump);
    again = parse_ok(dump);
    ck_assert(kvshm_config_table(again, "m")->transport ==
              KVSHM_TRANSPORT_MPI);
    ck_assert(kvshm_config_table(again, "u")->transport ==
              KVSHM_TRANSPORT_UCX);
    free(dump);
    kvshm_config_free(again);
    kvshm_config_free(cfg);

    /* the one table of names */
    ck_assert_str_eq(kvshm_transport_name(KVSHM_TRANSPORT_AUTO), "auto");
    ck_assert_str_eq(kvshm_transport_name(KVSHM_TRANSPORT_MPI), "mpi");
    ck_assert_str_eq(kvshm_transport_name(KVSHM_TRANSPORT_UCX), "ucx");
    ck_assert_str_eq(kvshm_transport_name((enum kvshm_transport)7),
                     "unknown");
    ck_assert_int_eq(kvshm_transport_parse("auto", &tr), MPIKVS_OK);
    ck_assert(tr == KVSHM_TRANSPORT_AUTO);
    ck_assert_int_eq(kvshm_transport_parse("mpi", &tr), MPIKVS_OK);
    ck_assert(tr == KVSHM_TRANSPORT_MPI);
    ck_assert_int_eq(kvshm_transport_parse("ucx", &tr), MPIKVS_OK);
    ck_assert(tr == KVSHM_TRANSPORT_UCX);
    ck_assert_int_eq(kvshm_transport_parse("mpi", &tr), MPIKVS_OK);
    ck_assert_int_eq(kvshm_transport_parse("MPI", &tr), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_transport_parse("", &tr), MPIKVS_ERR_INVAL);
    ck_assert_int_eq(kvshm_transport_parse(NULL, &tr), MPIKVS_ERR_INVAL);
    ck_assert(tr == KVSHM_TRANSPORT_MPI);   /* untouched when refused */
    ck_assert_str_eq(kvshm_transport_list(list, sizeof(list)), "auto, mpi, ucx");
}
END_TEST

/* The limits of a key and a value (job_config.h): a value of 1 MiB and
 * a key of 64 KiB are taken, one byte more is refused naming the limit,
 * as a size and as the fields' sum. */
START_TEST(key_and_value_limits)
{
    static const struct {
        const char *table;   /* the key and value of table "t" */
        const char *problem; /* NULL: accepted */
    } cases[] = {
        {"\"key\":{\"key_size\":65536},\"value\":{\"value_size\":1048576}",
         NULL},
        {"\"key\":{\"fields\":[{\"name\":\"k\",\"type\":\"bytes[65536]\"}]},"
         "\"value\":{\"fields\":[{\"name\":\"v\",\"type\":"
         "\"bytes[1048576]\"}]}",
         NULL},
        {"\"key\":{\"key_size\":8},\"value\":{\"value_size\":1048577}",
         "job.json: tables.t.value.value_size: 1048577 is more than the "
         "largest value, 1048576 bytes\n"},
        {"\"key\":{\"key_size\":65537},\"value\":{\"value_size\":8}",
         "job.json: tables.t.key.key_size: 65537 is more than the largest "
         "key, 65536 bytes\n"},
        /* a value's limit is not a key's */
        {"\"key\":{\"key_size\":1048576},\"value\":{\"value_size\":8}",
         "job.json: tables.t.key.key_size: 1048576 is more than the largest "
         "key, 65536 bytes\n"},
        {"\"key\":{\"fields\":[{\"name\":\"a\",\"type\":\"bytes[65536]\"},"
         "{\"name\":\"b\",\"type\":\"int64\"}]},\"value\":{\"value_size\":8}",
         "job.json: tables.t.key: the fields take 65544 bytes, more than the "
         "largest key, 65536 bytes\n"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        struct kvshm_config *cfg = NULL;
        struct kvshm_diag diag;
        int rc;

        snprintf(text, sizeof(text), "{\"version\":1,\"tables\":{\"t\":{%s}}}",
                 cases[i].table);
        rc = kvshm_config_parse(text, strlen(text), "job.json", &cfg, &diag);
        if (!cases[i].problem) {
            ck_assert_msg(rc == MPIKVS_OK, "%s refused: %s", text,
                          diag.text ? diag.text : "");
            ck_assert_uint_eq(cfg->tables[0].key.size, KVSHM_KEY_SIZE_MAX);
            ck_assert_uint_eq(cfg->tables[0].value.size,
                              KVSHM_VALUE_SIZE_MAX);
            kvshm_config_free(cfg);
            continue;
        }
        ck_assert_msg(rc == MPIKVS_ERR_INVAL && !cfg, "%s accepted", text);
        ck_assert_msg(diag.text && strcmp(diag.text, cases[i].problem) == 0,
                      "%s: expected\n%sgot\n%s", text, cases[i].problem,
                      diag.text ? diag.text : "(nothing)\n");
        kvshm_diag_free(&diag);
    }
    ck_assert_uint_eq(KVSHM_VALUE_SIZE_MAX, 1048576);
    ck_assert_uint_eq(KVSHM_KEY_SIZE_MAX, 65536);
}
END_TEST

/* far_read: auto (the default), bucket or slot; the dump writes it and
 * parses back to the same; a wrong word names the choices. */
START_TEST(far_read_key)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"b\":{\"far_read\":\"bucket\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"s\":{\"far_read\":\"slot\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":1048576}},"
        "\"a\":{\"far_read\":\"auto\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"d\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8}}}}");
    enum kvshm_far_read fr = KVSHM_FAR_READ_SLOT;
    struct kvshm_config *again, *bad = (void *)1;
    struct kvshm_diag diag;
    char list[64], *dump;
    const char *wrong = "{\"version\":1,\"tables\":{\"t\":{"
                        "\"far_read\":\"Slot\",\"key\":{\"key_size\":8},"
                        "\"value\":{\"value_size\":8}}}}";

    ck_assert(kvshm_config_table(cfg, "b")->far_read == KVSHM_FAR_READ_BUCKET);
    ck_assert(kvshm_config_table(cfg, "s")->far_read == KVSHM_FAR_READ_SLOT);
    ck_assert(kvshm_config_table(cfg, "a")->far_read == KVSHM_FAR_READ_AUTO);
    ck_assert(kvshm_config_table(cfg, "d")->far_read == KVSHM_FAR_READ_AUTO);
    ck_assert_int_eq(KVSHM_FAR_READ_AUTO, 0);   /* a zeroed config's */
    dump = kvshm_config_dump(cfg);
    ck_assert_msg(strstr(dump, "\"far_read\": \"bucket\"") &&
                      strstr(dump, "\"far_read\": \"slot\"") &&
                      strstr(dump, "\"far_read\": \"auto\""),
                  "the dump lacks the far reads:\n%s", dump);
    again = parse_ok(dump);
    ck_assert(kvshm_config_table(again, "b")->far_read ==
              KVSHM_FAR_READ_BUCKET);
    ck_assert(kvshm_config_table(again, "s")->far_read == KVSHM_FAR_READ_SLOT);
    ck_assert(kvshm_config_table(again, "d")->far_read == KVSHM_FAR_READ_AUTO);
    free(dump);
    kvshm_config_free(again);
    kvshm_config_free(cfg);

    ck_assert_int_eq(kvshm_config_parse(wrong, strlen(wrong), "job.json",
                                        &bad, &diag),
                     MPIKVS_ERR_INVAL);
    ck_assert_ptr_null(bad);
    ck_assert_str_eq(diag.text, "job.json: tables.t.far_read: 'Slot' is not "
                                "one of: auto, bucket, slot\n");
    kvshm_diag_free(&diag);

    ck_assert_str_eq(kvshm_far_read_name(KVSHM_FAR_READ_AUTO), "auto");
    ck_assert_str_eq(kvshm_far_read_name(KVSHM_FAR_READ_BUCKET), "bucket");
    ck_assert_str_eq(kvshm_far_read_name(KVSHM_FAR_READ_SLOT), "slot");
    ck_assert_str_eq(kvshm_far_read_name((enum kvshm_far_read)9), "unknown");
    ck_assert_int_eq(kvshm_far_read_parse("bucket", &fr), MPIKVS_OK);
    ck_assert(fr == KVSHM_FAR_READ_BUCKET);
    ck_assert_int_eq(kvshm_far_read_parse("slots", &fr), MPIKVS_ERR_INVAL);
    ck_assert(fr == KVSHM_FAR_READ_BUCKET);   /* untouched when refused */
    ck_assert_str_eq(kvshm_far_read_list(list, sizeof(list)),
                     "auto, bucket, slot");
}
END_TEST

/* verify: a fraction of hits from 0 to 1 (0, the default: none); 0 and
 * 1 themselves are fine; the dump writes it where it is above 0 and
 * parses back to the same; bad values are the bad configs' files. */
START_TEST(verify_key)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"q\":{\"verify\":0.25,\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"all\":{\"verify\":1,\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"none\":{\"verify\":0,\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"d\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8}}}}");
    struct kvshm_config *again;
    char *dump;

    ck_assert(kvshm_config_table(cfg, "q")->verify == 0.25);
    ck_assert(kvshm_config_table(cfg, "all")->verify == 1.0);
    ck_assert(kvshm_config_table(cfg, "none")->verify == 0.0);
    ck_assert(kvshm_config_table(cfg, "d")->verify == 0.0);
    dump = kvshm_config_dump(cfg);
    ck_assert_msg(strstr(dump, "\"verify\": 0.25") &&
                      strstr(dump, "\"verify\": 1"),
                  "the dump lacks the verify fractions:\n%s", dump);
    again = parse_ok(dump);
    ck_assert(kvshm_config_table(again, "q")->verify == 0.25);
    ck_assert(kvshm_config_table(again, "all")->verify == 1.0);
    ck_assert(kvshm_config_table(again, "d")->verify == 0.0);
    free(dump);
    kvshm_config_free(again);
    kvshm_config_free(cfg);
}
END_TEST

/* A tier's bytes out of its table's, the one rule resolve and the
 * library's own plan (shm/plan.c) share. */
START_TEST(tier_bytes_of_a_table)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"abs\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8},"
        "\"tier\":{\"enabled\":true,\"size\":\"64M\"}},"
        "\"share\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8},"
        "\"tier\":{\"enabled\":true,\"size\":0.1}},"
        "\"dflt\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8},"
        "\"tier\":{\"enabled\":true}},"
        "\"off\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8},"
        "\"tier\":{\"enabled\":true,\"caching\":\"off\"}},"
        "\"none\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8}}"
        "}}");
    const uint64_t G = UINT64_C(1) << 30;

    ck_assert_uint_eq(kvshm_tier_bytes(&cfg->tables[0], G), UINT64_C(64) << 20);
    ck_assert_uint_eq(kvshm_tier_bytes(&cfg->tables[1], G),
                      (uint64_t)(0.1 * (double)G));
    ck_assert_uint_eq(kvshm_tier_bytes(&cfg->tables[2], G), G / 4);
    ck_assert_uint_eq(kvshm_tier_bytes(&cfg->tables[3], G), 0);
    ck_assert_uint_eq(kvshm_tier_bytes(&cfg->tables[4], G), 0);
    /* a share never exceeds its whole, even where the double rounds up */
    ck_assert_uint_eq(kvshm_tier_bytes(&cfg->tables[2], UINT64_MAX),
                      (uint64_t)(0.25 * (double)UINT64_MAX));
    kvshm_config_free(cfg);
}
END_TEST

START_TEST(resolve_shares_and_limits)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"a\":{\"size\":\"1G\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8},\"tier\":{\"enabled\":true,"
        "\"size\":\"64M\"}},"
        "\"b\":{\"size\":\"25%\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"c\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8},"
        "\"tier\":{\"enabled\":true}},"
        "\"d\":{\"key\":{\"key_size\":8},\"value\":{\"value_size\":8}}}}");
    struct kvshm_diag diag;

    ck_assert_int_eq(kvshm_config_resolve(cfg, UINT64_C(8) << 30, &diag),
                     MPIKVS_OK);
    ck_assert_uint_eq(cfg->tables[0].bytes, UINT64_C(1) << 30);
    ck_assert_uint_eq(cfg->tables[0].tier.bytes, UINT64_C(64) << 20);
    ck_assert_uint_eq(cfg->tables[1].bytes, UINT64_C(2) << 30);
    /* c and d share the 5 GiB left */
    ck_assert_uint_eq(cfg->tables[2].bytes, (UINT64_C(5) << 30) / 2);
    ck_assert_uint_eq(cfg->tables[3].bytes, (UINT64_C(5) << 30) / 2);
    /* an enabled tier without a size gets a quarter of its table */
    ck_assert_uint_eq(cfg->tables[2].tier.bytes, cfg->tables[2].bytes / 4);

    ck_assert_int_eq(kvshm_config_resolve(cfg, UINT64_C(512) << 20, &diag),
                     MPIKVS_ERR_INVAL);
    /* a is larger than the node on its own, and the sum is too */
    ck_assert_msg(diag.count == 2 &&
                      strstr(diag.text, "tables.a.size: 1.0 GiB is more "
                                        "than the 512.0 MiB of DHT memory "
                                        "per node") &&
                      strstr(diag.text, "the tables need 1.1 GiB, more than "
                                        "the 512.0 MiB of DHT memory per node"),
                  "resolve over the node: %s", diag.text);
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
}
END_TEST

/* 2 x 8388608T is 2^64: the sum once wrapped to 0 and "fit" any node. */
START_TEST(resolve_refuses_tables_larger_than_the_node)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"a\":{\"size\":\"8388608T\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}},"
        "\"b\":{\"size\":\"8388608T\",\"key\":{\"key_size\":8},"
        "\"value\":{\"value_size\":8}}}}");
    struct kvshm_diag diag;

    ck_assert_int_eq(kvshm_config_resolve(cfg, UINT64_C(1) << 30, &diag),
                     MPIKVS_ERR_INVAL);
    ck_assert_msg(diag.text &&
                      strstr(diag.text,
                             "job.json: tables.a.size: 8.0 EiB is more than "
                             "the 1.0 GiB of DHT memory per node\n") &&
                      strstr(diag.text,
                             "job.json: tables.b.size: 8.0 EiB is more than "
                             "the 1.0 GiB of DHT memory per node\n") &&
                      strstr(diag.text, "job.json: tables: the tables need "
                                        "16.0 EiB or more, more than the "
                                        "1.0 GiB of DHT memory per node\n"),
                  "two 8388608T tables on a 1 GiB node:\n%s",
                  diag.text ? diag.text : "(accepted)");
    ck_assert_uint_eq(diag.count, 3);
    kvshm_diag_free(&diag);
    /* on a node of 2^64-1 bytes each fits, the two do not */
    ck_assert_int_eq(kvshm_config_resolve(cfg, UINT64_MAX, &diag),
                     MPIKVS_ERR_INVAL);
    ck_assert_msg(diag.count == 1 &&
                      strstr(diag.text, "the tables need 16.0 EiB or more"),
                  "%s", diag.text ? diag.text : "(accepted)");
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
}
END_TEST

START_TEST(unreadable_and_oversized_files)
{
    struct kvshm_config *cfg = (void *)1;
    struct kvshm_diag diag;
    char path[] = "/tmp/kvtest-config.XXXXXX";
    int fd;

    ck_assert_int_eq(kvshm_config_load("/nonexistent/job.json", &cfg, &diag),
                     MPIKVS_ERR_INVAL);
    ck_assert(cfg == NULL);
    ck_assert_str_eq(diag.text, "/nonexistent/job.json: cannot read: No such "
                                "file or directory\n");
    kvshm_diag_free(&diag);

    fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(ftruncate(fd, KVSHM_CONFIG_MAX_BYTES + 10) == 0);
    close(fd);
    ck_assert_int_eq(kvshm_config_load(path, &cfg, &diag), MPIKVS_ERR_INVAL);
    unlink(path);
    ck_assert_msg(strstr(diag.text, "larger than 1048576 bytes"), "%s",
                  diag.text);
    kvshm_diag_free(&diag);
}
END_TEST

START_TEST(problems_are_capped)
{
    char text[8192] = "{\"version\":1,\"tables\":{\"t\":{\"key\":{\"key_size\""
                      ":8},\"value\":{\"value_size\":8}";
    struct kvshm_config *cfg;
    struct kvshm_diag diag;

    for (int i = 0; i < 100; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text),
                 ",\"x%d\":1", i);
    strcat(text, "}}}");
    ck_assert_int_eq(kvshm_config_parse(text, strlen(text), "job.json", &cfg,
                                        &diag),
                     MPIKVS_ERR_INVAL);
    ck_assert_uint_eq(diag.count, KVSHM_CONFIG_MAX_ERRORS);
    ck_assert_msg(diag.truncated &&
                      strstr(diag.text, "\n(further problems not shown)\n"),
                  "no note of the problems left out:\n%s", diag.text);
    kvshm_diag_free(&diag);
}
END_TEST

/* ---- sizes ---- */

START_TEST(sizes_that_parse)
{
    static const struct { const char *text; uint64_t bytes; } ok[] = {
        {"1G", UINT64_C(1) << 30},       {"512M", UINT64_C(512) << 20},
        {"1.5G", UINT64_C(3) << 29},     {"64k", 65536},
        {"64K", 65536},                  {"1073741824", UINT64_C(1) << 30},
        {"2t", UINT64_C(2) << 40},       {"0.5k", 512},
        {"1.1K", 1126},                  {"16777215T", UINT64_C(16777215) << 40},
        {"18446744073709551615", UINT64_MAX},
        {"007M", UINT64_C(7) << 20},
        /* exact: (unit % scale) * frac once wrapped 64 bits for these */
        {"1.99999999999G", UINT64_C(2147483648)},      /* 2147483647.989 */
        {"1.999999999999T", UINT64_C(2199023255551)},  /* ...550.9005 */
        {"0.999999999999T", UINT64_C(1099511627775)},  /* ...775.4502 */
        {"16777215.999999999999T", UINT64_MAX},        /* ...615.9005 */
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_size(ok[i].text, 1, ok[i].bytes);
}
END_TEST

START_TEST(sizes_that_do_not)
{
    static const struct { const char *text, *message; } bad[] = {
        {"", "--dht-size: empty size"},
        {"-1G", "--dht-size: '-1G' is not a size (it is negative"},
        {"0", "--dht-size: '0' is zero, which makes no sense here"},
        {"0G", "--dht-size: '0G' is zero"},
        {"12Gb", "--dht-size: '12Gb' is not a size (unknown unit"},
        {"1KiB", "--dht-size: '1KiB' is not a size (unknown unit"},
        {"1e3", "--dht-size: '1e3' is not a size (exponents are not sizes"},
        {"1.5", "--dht-size: '1.5' is not a size (a fraction of a byte "
                "needs a unit"},
        {"1.", "--dht-size: '1.' is not a size (no digits after the point"},
        {".5G", "--dht-size: '.5G' is not a size (it does not start"},
        {" 1G", "--dht-size: ' 1G' is not a size (it does not start"},
        {"1G ", "--dht-size: '1G ' is not a size (unknown unit"},
        {"+1G", "--dht-size: '+1G' is not a size"},
        {"0x10", "--dht-size: '0x10' is not a size"},
        {"16777216T", "--dht-size: '16777216T' is too large"},
        {"18446744073709551616", "--dht-size: '18446744073709551616' is too "
                                 "large"},
        {"1G1", "--dht-size: '1G1' is not a size (unknown unit"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mpikvs_error_t err = {0};
        uint64_t bytes = 42;
        int rc = kvshm_parse_size(bad[i].text, "--dht-size", 1, &bytes, &err);
        ck_assert_msg(rc == MPIKVS_ERR_INVAL && bytes == 42,
                      "'%s' was accepted as %llu", bad[i].text,
                      (unsigned long long)bytes);
        ck_assert_msg(strncmp(err.text, bad[i].message,
                              strlen(bad[i].message)) == 0,
                      "'%s': message '%s', want it to start '%s'",
                      bad[i].text, err.text, bad[i].message);
    }
    /* below a minimum */
    mpikvs_error_t err;
    uint64_t bytes;
    ck_assert_int_eq(kvshm_parse_size("1K", "max_size", 4096, &bytes, &err),
                     MPIKVS_ERR_INVAL);
    ck_assert_str_eq(err.text, "max_size: '1K' is below the minimum of 4096 "
                               "bytes");
    /* zero where zero is fine */
    ck_assert_int_eq(kvshm_parse_size("0", "x", 0, &bytes, &err), MPIKVS_OK);
    ck_assert_uint_eq(bytes, 0);
}
END_TEST

/* Rounding is to the nearest byte, a half byte up, on the exact value of
 * every digit written: 2^-41 T is exactly half a byte. */
START_TEST(sizes_round_exactly)
{
    static const struct { const char *text; uint64_t bytes; } r[] = {
        {"0.00048828125K", 1},                           /* 0.5 */
        {"0.00048828124K", 0},                           /* 0.49999 */
        {"0.00000000000045474735088646411895751953125T", 1},  /* 0.5 */
        {"0.00000000000045474735088646411895751953124T", 0},
        {"0.000000000000454747350886464118957519531249999999999T", 0},
        {"0.000000000000454747350886464118957519531250000000001T", 1},
        {"1.00000000000000000000000000000000000000000000000000000000000"
         "00000000000000000000000000000000000000001K", 1024},
        {"2.9999999999999999999999999999999999999999999999999999999G",
         UINT64_C(3) << 30},
    };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        assert_size(r[i].text, 0, r[i].bytes);
    /* a fraction that rounds past 2^64-1 is too large, not 0 */
    mpikvs_error_t err = {0};
    uint64_t bytes = 42;
    ck_assert_int_eq(kvshm_parse_size("16777215.9999999999999999T", "x", 0,
                                      &bytes, &err),
                     MPIKVS_ERR_INVAL);
    ck_assert_msg(bytes == 42 && strstr(err.text, "is too large"), "%s",
                  err.text);
}
END_TEST

START_TEST(shares)
{
    uint64_t bytes;
    double f;
    mpikvs_error_t err;

    ck_assert_int_eq(kvshm_parse_share("25%", "s", &bytes, &f, &err),
                     MPIKVS_OK);
    ck_assert(f == 0.25 && bytes == 0);
    ck_assert_int_eq(kvshm_parse_share("12.5%", "s", &bytes, &f, &err),
                     MPIKVS_OK);
    ck_assert(f == 0.125);
    ck_assert_int_eq(kvshm_parse_share("100%", "s", &bytes, &f, &err),
                     MPIKVS_OK);
    ck_assert(f == 1.0);
    ck_assert_int_eq(kvshm_parse_share("2G", "s", &bytes, &f, &err),
                     MPIKVS_OK);
    ck_assert(bytes == (UINT64_C(2) << 30) && f == 0);
    static const char *const bad[] = {"0%", "101%", "%", "-5%", "5.%",
                                      "abc%", "5%%", "1e2%"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(kvshm_parse_share(bad[i], "s", &bytes, &f, &err) ==
                          MPIKVS_ERR_INVAL,
                      "share '%s' was accepted", bad[i]);
}
END_TEST

/* ---- neighbourhoods ("near") ---- */

#define NEAR_KEY                                                      \
    "\"key\":{\"fields\":["                                           \
    "{\"name\":\"Ca\",\"type\":\"double\",\"digits\":16},"            \
    "{\"name\":\"pH\",\"type\":\"double\",\"digits\":4},"             \
    "{\"name\":\"step\",\"type\":\"int64\"},"                         \
    "{\"name\":\"tag\",\"type\":\"bytes[3]\"},"                       \
    "{\"name\":\"T\",\"type\":\"double\",\"digits\":3,"               \
    "\"zero_below\":1e-9}]},\"value\":{\"value_size\":8}"

static struct kvshm_config *near_config(const char *near)
{
    char text[2048];

    snprintf(text, sizeof(text),
             "{\"version\":1,\"tables\":{\"t\":{" NEAR_KEY ",\"near\":%s},"
             "\"plain\":{" NEAR_KEY "}}}",
             near);
    return parse_ok(text);
}

/* The coarse record's digits, widths and offsets, as "Ca:15/8@0 ...". */
static void assert_coarse(const struct kvshm_record *r, const char *want)
{
    char got[512] = "";

    for (size_t i = 0; i < r->nfields; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got),
                 "%s%s:%u/%u@%u", i ? " " : "", r->fields[i].name,
                 r->fields[i].digits, r->fields[i].width,
                 r->fields[i].offset);
    snprintf(got + strlen(got), sizeof(got) - strlen(got), " =%zu", r->size);
    ck_assert_str_eq(got, want);
}

START_TEST(near_defaults)
{
    struct kvshm_config *cfg = near_config("{}");
    const struct kvshm_table_config *t = &cfg->tables[0], *p = &cfg->tables[1];

    ck_assert(t->near.enabled && !p->near.enabled);
    ck_assert_uint_eq(t->near.members, KVSHM_NEAR_MEMBERS_DEFAULT);
    ck_assert_uint_eq(t->near.members, 16);
    ck_assert(t->near.size.fraction == 0.25 && t->near.size.bytes == 0);
    /* one digit less each: the 16-digit field becomes an 8-byte one, the
     * int64 and bytes fields stay, offsets follow; zero_below is kept */
    assert_coarse(&t->near.key, "Ca:15/8@0 pH:3/8@8 step:0/8@16 tag:0/3@24 "
                                "T:2/8@27 =35");
    ck_assert(t->near.key.fields[4].zero_below == 1e-9);
    ck_assert_uint_eq(t->key.size, 43);
    ck_assert(p->near.key.fields == NULL && p->near.key.size == 0);
    kvshm_config_free(cfg);
}
END_TEST

START_TEST(near_digits_and_coarser)
{
    struct kvshm_config *cfg;

    /* digits alone: the fields not named keep theirs */
    cfg = near_config("{\"digits\":{\"pH\":2},\"members\":20,"
                      "\"size\":\"25M\"}");
    assert_coarse(&cfg->tables[0].near.key,
                  "Ca:16/16@0 pH:2/8@16 step:0/8@24 tag:0/3@32 T:3/8@35 =43");
    ck_assert_uint_eq(cfg->tables[0].near.members, 20);
    ck_assert_uint_eq(cfg->tables[0].near.size.bytes, UINT64_C(25) << 20);
    kvshm_config_free(cfg);
    /* digits and coarser: coarser for the others */
    cfg = near_config("{\"coarser\":2,\"digits\":{\"T\":3,\"Ca\":1},"
                      "\"members\":64,\"size\":0.5}");
    assert_coarse(&cfg->tables[0].near.key,
                  "Ca:1/8@0 pH:2/8@8 step:0/8@16 tag:0/3@24 T:3/8@27 =35");
    ck_assert_uint_eq(cfg->tables[0].near.members, 64);
    ck_assert(cfg->tables[0].near.size.fraction == 0.5);
    kvshm_config_free(cfg);
    cfg = near_config("{\"coarser\":2,\"members\":1}");
    assert_coarse(&cfg->tables[0].near.key,
                  "Ca:14/8@0 pH:2/8@8 step:0/8@16 tag:0/3@24 T:1/8@27 =35");
    kvshm_config_free(cfg);
}
END_TEST

START_TEST(near_dump_round_trip)
{
    static const char *const nears[] = {
        "{}", "{\"coarser\":2,\"digits\":{\"T\":3},\"size\":\"1M\"}",
        "{\"digits\":{\"Ca\":9},\"members\":3,\"size\":0.125}"};

    for (size_t i = 0; i < sizeof(nears) / sizeof(nears[0]); i++) {
        struct kvshm_config *cfg = near_config(nears[i]), *again;
        char *first = kvshm_config_dump(cfg), *second;
        const struct kvshm_table_config *a, *b;

        ck_assert(first && strstr(first, "\"near\""));
        again = parse_ok(first);
        second = kvshm_config_dump(again);
        ck_assert_msg(strcmp(first, second) == 0, "%s: dump changed:\n%s\n"
                      "---\n%s", nears[i], first, second);
        a = &cfg->tables[0];
        b = &again->tables[0];
        ck_assert(b->near.enabled && !again->tables[1].near.enabled);
        ck_assert_uint_eq(a->near.members, b->near.members);
        ck_assert(a->near.size.bytes == b->near.size.bytes &&
                  a->near.size.fraction == b->near.size.fraction);
        ck_assert_uint_eq(a->near.key.size, b->near.key.size);
        for (size_t f = 0; f < a->near.key.nfields; f++)
            ck_assert(a->near.key.fields[f].digits ==
                          b->near.key.fields[f].digits &&
                      a->near.key.fields[f].offset ==
                          b->near.key.fields[f].offset);
        free(first);
        free(second);
        kvshm_config_free(cfg);
        kvshm_config_free(again);
    }
}
END_TEST

/* near.bytes is a share of the table's bytes; the buckets get the rest
 * after the tier and the neighbourhoods. */
START_TEST(near_bytes_in_the_plan)
{
    struct kvshm_config *cfg = parse_ok(
        "{\"version\":1,\"tables\":{"
        "\"a\":{\"size\":\"1G\"," NEAR_KEY ",\"near\":{},"
        "\"tier\":{\"enabled\":true,\"size\":\"64M\"}},"
        "\"b\":{\"size\":\"100M\"," NEAR_KEY ",\"near\":{\"size\":\"10M\"}},"
        "\"c\":{" NEAR_KEY "}}}");
    struct kvshm_plan_input in = {.dht_size = UINT64_C(2) << 30,
                                  .config = cfg, .max_ranks = 4};
    struct kvshm_plan plan;
    struct kvshm_diag diag;
    const struct kvshm_table_plan *tp;

    ck_assert_uint_eq(kvshm_near_bytes(&cfg->tables[0], 1000), 250);
    ck_assert_uint_eq(kvshm_near_bytes(&cfg->tables[1], 1000),
                      UINT64_C(10) << 20);
    ck_assert_uint_eq(kvshm_near_bytes(&cfg->tables[2], 1000), 0);
    ck_assert_int_eq(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_uint_eq(cfg->tables[0].near.bytes, UINT64_C(256) << 20);
    ck_assert_uint_eq(cfg->tables[1].near.bytes, UINT64_C(10) << 20);
    ck_assert_uint_eq(cfg->tables[2].near.bytes, 0);
    tp = kvshm_plan_table(&plan, "a");
    ck_assert_uint_eq(tp->near_bytes, UINT64_C(256) << 20);
    ck_assert_uint_eq(tp->tier_bytes, UINT64_C(64) << 20);
    ck_assert_uint_eq(tp->data_bytes, UINT64_C(704) << 20);
    tp = kvshm_plan_table(&plan, "b");
    ck_assert_uint_eq(tp->data_bytes, UINT64_C(90) << 20);
    tp = kvshm_plan_table(&plan, "c");
    ck_assert_uint_eq(tp->near_bytes, 0);
    ck_assert_uint_eq(tp->data_bytes, cfg->tables[2].bytes);
    kvshm_plan_free(&plan);
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);

    /* neighbourhoods that leave the buckets nothing */
    cfg = parse_ok("{\"version\":1,\"tables\":{\"a\":{\"size\":\"1G\","
                   NEAR_KEY ",\"near\":{\"size\":\"960M\"},"
                   "\"tier\":{\"enabled\":true,\"size\":\"64M\"}}}}");
    in.config = cfg;
    ck_assert_int_ne(kvshm_plan_make(&in, &plan, &diag), MPIKVS_OK);
    ck_assert_msg(diag.text && strstr(diag.text,
                                      "job.json: tables.a.near.size: 960.0 "
                                      "MiB leaves nothing of the table's "
                                      "1.0 GiB (less its tier's 64.0 MiB) "
                                      "for its buckets"),
                  "%s", diag.text ? diag.text : "(nothing)");
    kvshm_diag_free(&diag);
    kvshm_config_free(cfg);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");

    tcase_add_test(tc, bad_configs_give_their_messages);
    tcase_add_test(tc, chemistry_example);
    tcase_add_test(tc, dump_parses_back_to_the_same);
    tcase_add_test(tc, defaults_and_wide_doubles);
    tcase_add_test(tc, transport_key);
    tcase_add_test(tc, key_and_value_limits);
    tcase_add_test(tc, far_read_key);
    tcase_add_test(tc, verify_key);
    tcase_add_test(tc, tier_bytes_of_a_table);
    tcase_add_test(tc, resolve_shares_and_limits);
    tcase_add_test(tc, resolve_refuses_tables_larger_than_the_node);
    tcase_add_test(tc, unreadable_and_oversized_files);
    tcase_add_test(tc, problems_are_capped);
    tcase_add_test(tc, sizes_that_parse);
    tcase_add_test(tc, sizes_that_do_not);
    tcase_add_test(tc, sizes_round_exactly);
    tcase_add_test(tc, shares);
    tcase_add_test(tc, near_defaults);
    tcase_add_test(tc, near_digits_and_coarser);
    tcase_add_test(tc, near_dump_round_trip);
    tcase_add_test(tc, near_bytes_in_the_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
