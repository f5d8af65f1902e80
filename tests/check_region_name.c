/*
 * check_region_name.c - unit tests of the region-name grammar
 * (shm/region_name.h): every name and tag built and parsed back, round
 * trips, and the refusals (too long, bad characters, a tag of another
 * step, a job part that is no Slurm id).
 *
 * The expected names are spelled out literally here, as the man page
 * (mpikvs(7), Names) and the tests of the plugin and mpikvs-stat spell
 * them: a change of the grammar must show up as a failure.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "region.h"
#include "region_name.h"
#include "shm_check.h"
#include "virtual_nodes.h"

#define JOB  "4242"
#define NODE "n001"

/* The table names of the round trips: the default, a short one, and the
 * longest a config allows (none starts like a step prefix). */
static const char *const tables[] = {"kvs", "chem", "abcdefghijklmnop"};

/* ---------------------------------------------------------- building */

START_TEST(test_layout_tags)
{
    char buf[KVSHM_TAG_MAX];

    kvshm_job_layout_tag(KVSHM_SCOPE_JOB, 7, buf, sizeof buf);
    ck_assert_str_eq(buf, "layout");
    kvshm_job_layout_tag(KVSHM_SCOPE_STEP, 7, buf, sizeof buf);
    ck_assert_str_eq(buf, "s7-layout");
    kvshm_job_layout_tag(KVSHM_SCOPE_STEP, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "s0-layout");
    kvshm_job_layout_tag(KVSHM_SCOPE_STEP, UINT32_MAX, buf, sizeof buf);
    ck_assert_str_eq(buf, "s4294967295-layout");

    kvshm_step_tag_prefix(12, buf, sizeof buf);
    ck_assert_str_eq(buf, "s12-");
    kvshm_slurm_job_part(4242, buf, sizeof buf);
    ck_assert_str_eq(buf, "4242");
    kvshm_slurm_job_part(UINT32_MAX, buf, sizeof buf);
    ck_assert_str_eq(buf, "4294967295");
}
END_TEST

START_TEST(test_table_tags)
{
    static const struct {
        enum kvshm_scope scope;
        uint32_t step;
        const char *table, *prefix, *data;
    } cases[] = {
        {KVSHM_SCOPE_JOB, 7, "chem", "chem", "chem-data"},
        {KVSHM_SCOPE_STEP, 7, "chem", "s7-chem", "s7-chem-data"},
        {KVSHM_SCOPE_JOB, 0, "kvs", "kvs", "kvs-data"},
        {KVSHM_SCOPE_JOB, 123456, "abcdefghijklmnop", "abcdefghijklmnop",
         "abcdefghijklmnop-data"},
        /* 1 + 5 + 1 + 16 = 23: the longest prefix */
        {KVSHM_SCOPE_STEP, 12345, "abcdefghijklmnop",
         "s12345-abcdefghijklmnop", "s12345-abcdefghijklmnop-data"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char prefix[KVSHM_TIER_PREFIX_MAX], data[KVSHM_TAG_MAX];
        mpikvs_error_t err = {0};
        int rc = kvshm_table_tags(cases[i].scope, cases[i].step,
                                  cases[i].table, prefix, data, &err);
        assert_rc(rc, MPIKVS_OK, &err, "table tags of %s", cases[i].table);
        ck_assert_str_eq(prefix, cases[i].prefix);
        ck_assert_str_eq(data, cases[i].data);

        char index[KVSHM_TAG_MAX], entries[KVSHM_TAG_MAX], want[64];
        rc = kvshm_tier_tags(prefix, index, entries, &err);
        assert_rc(rc, MPIKVS_OK, &err, "tier tags of %s", prefix);
        snprintf(want, sizeof want, "%s-index", cases[i].prefix);
        ck_assert_str_eq(index, want);
        snprintf(want, sizeof want, "%s-entries", cases[i].prefix);
        ck_assert_str_eq(entries, want);
    }
}
END_TEST

START_TEST(test_region_names)
{
    char name[KVSHM_NAME_MAX + 1], index[KVSHM_NAME_MAX + 1],
        entries[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err = {0};
    int rc;

    rc = kvshm_region_name(name, sizeof name, JOB, NODE, "s3-layout", &err);
    assert_rc(rc, MPIKVS_OK, &err, "the name of a step's layout");
    ck_assert_str_eq(name, "mpikvs.4242.n001.s3-layout");

    rc = kvshm_tier_region_names(JOB, NODE, "s3-chem", index, entries, &err);
    assert_rc(rc, MPIKVS_OK, &err, "the names of a tier");
    ck_assert_str_eq(index, "mpikvs.4242.n001.s3-chem-index");
    ck_assert_str_eq(entries, "mpikvs.4242.n001.s3-chem-entries");

    /* the longest of every part: a buffer of KVSHM_NAME_MAX holds it */
    char job[KVSHM_JOB_MAX], node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];
    memset(job, '9', sizeof job - 1);   job[sizeof job - 1] = '\0';
    memset(node, 'n', sizeof node - 1); node[sizeof node - 1] = '\0';
    memset(tag, 't', sizeof tag - 1);   tag[sizeof tag - 1] = '\0';
    rc = kvshm_region_name(name, sizeof name, job, node, tag, &err);
    assert_rc(rc, MPIKVS_OK, &err, "the longest name");
    ck_assert_uint_eq(strlen(name), KVSHM_NAME_MAX - 1);
    rc = kvshm_region_name(name, KVSHM_NAME_MAX, job, node, tag, &err);
    assert_rc(rc, MPIKVS_OK, &err, "the longest name in KVSHM_NAME_MAX");

    /* a host name made a node part */
    char part[KVSHM_NODE_MAX];
    kvshm_name_part_from("node-1.cluster/x y", part, sizeof part);
    ck_assert_str_eq(part, "node-1_cluster_x_y");
    ck_assert(kvshm_name_part_ok(part, KVSHM_NODE_MAX));
    kvshm_name_part_from("abcdef", part, 4);
    ck_assert_str_eq(part, "abc");

    /* a unique id is a job part that no Slurm id can be */
    kvshm_unique_id(job, sizeof job);
    ck_assert(kvshm_name_part_ok(job, KVSHM_JOB_MAX));
    ck_assert(!kvshm_job_part_is_slurm(job));
    ck_assert(!kvshm_slurm_job_id(job, NULL));
}
END_TEST

/* ---------------------------------------------------------- reading back */

START_TEST(test_tag_kinds)
{
    static const struct {
        const char *tag;
        uint32_t kind;
        const char *prefix;   /* the table prefix, or NULL: none */
    } cases[] = {
        {"kvs-data", KVSHM_KIND_DATA, "kvs"},
        {"s7-chem-data", KVSHM_KIND_DATA, "s7-chem"},
        {"chem-index", KVSHM_KIND_TIER_INDEX, "chem"},
        {"s7-chem-entries", KVSHM_KIND_TIER_ENTRIES, "s7-chem"},
        {"layout", KVSHM_KIND_LAYOUT, NULL},
        {"s7-layout", KVSHM_KIND_LAYOUT, NULL},
        {"-data", KVSHM_KIND_DATA, NULL},     /* nothing before it */
        {"data", 0, NULL},
        {"kvs-datax", 0, NULL},
        {"index", 0, NULL},
        {"", 0, NULL},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(kvshm_tag_kind(cases[i].tag) == cases[i].kind,
                      "tag \"%s\": kind %u, expected %u", cases[i].tag,
                      kvshm_tag_kind(cases[i].tag), cases[i].kind);
        char prefix[KVSHM_TAG_MAX] = "untouched";
        bool got = kvshm_tag_table_prefix(cases[i].tag, cases[i].kind,
                                          prefix);
        ck_assert_msg(got == (cases[i].prefix != NULL),
                      "tag \"%s\": table prefix %s", cases[i].tag,
                      got ? "found" : "not found");
        ck_assert_str_eq(prefix, got ? cases[i].prefix : "untouched");
    }
    /* a tag read as another kind has no table prefix */
    char prefix[KVSHM_TAG_MAX];
    ck_assert(!kvshm_tag_table_prefix("chem-data", KVSHM_KIND_TIER_INDEX,
                                      prefix));
    ck_assert(!kvshm_tag_table_prefix("chem-index", KVSHM_KIND_TIER_ENTRIES,
                                      prefix));
    ck_assert(!kvshm_tag_table_prefix("s7-layout", KVSHM_KIND_LAYOUT,
                                      prefix));
    ck_assert(!kvshm_tag_table_prefix("chem-data", 0, prefix));
}
END_TEST

/* A table whose job-scope tags would read as a step's is kept back: step
 * 3's end would remove "s3-data". */
START_TEST(test_table_names_like_steps)
{
    static const char *const step_like[] = {"s3", "s3-x", "s0", "s12-chem",
                                            "s4294967295"};
    static const char *const fine[] = {"kvs", "s", "s-3", "s3x", "s05",
                                       "s4294967296", "S3", "chem-s3"};

    for (size_t i = 0; i < sizeof step_like / sizeof step_like[0]; i++)
        ck_assert_msg(kvshm_table_name_reads_as_step(step_like[i]),
                      "table \"%s\" not kept back", step_like[i]);
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++)
        ck_assert_msg(!kvshm_table_name_reads_as_step(fine[i]),
                      "table \"%s\" kept back", fine[i]);
}
END_TEST

START_TEST(test_tag_steps)
{
    uint32_t step;

    ck_assert(kvshm_tag_step("s7-layout", &step) && step == 7);
    ck_assert(kvshm_tag_step("s0-kvs-data", &step) && step == 0);
    ck_assert(kvshm_tag_step("s4294967295-x-index", &step) &&
              step == UINT32_MAX);
    ck_assert(kvshm_tag_of_step("s12-chem-data", 12));

    /* job scope, and what kvshm_step_tag_prefix never writes */
    static const char *const not_step[] = {
        "layout", "kvs-data", "s-layout", "s-1-layout", "s+1-layout",
        "s05-layout", "s00-layout", "s4294967296-layout",
        "s99999999999999999999-layout", "s7layout", "S7-layout", "s7",
        "",
    };
    for (size_t i = 0; i < sizeof not_step / sizeof not_step[0]; i++) {
        step = 4242;
        ck_assert_msg(!kvshm_tag_step(not_step[i], &step),
                      "\"%s\" read as a tag of step %u", not_step[i], step);
        ck_assert_uint_eq(step, 4242);
    }

    /* a tag of another step: "s1-" is no prefix of "s12-" nor the other
     * way round */
    ck_assert(!kvshm_tag_of_step("s12-layout", 1));
    ck_assert(!kvshm_tag_of_step("s1-layout", 12));
    ck_assert(!kvshm_tag_of_step("s12-chem-data", 2));
    ck_assert(!kvshm_tag_of_step("layout", 0));
    ck_assert(!kvshm_tag_of_step("s05-layout", 5));
}
END_TEST

START_TEST(test_job_parts)
{
    uint32_t id;

    ck_assert(kvshm_slurm_job_id("4242", &id) && id == 4242);
    ck_assert(kvshm_slurm_job_id("4294967295", &id) && id == UINT32_MAX);
    ck_assert(kvshm_slurm_job_id("0", &id) && id == 0);
    ck_assert(kvshm_slurm_job_id("007", &id) && id == 7);
    ck_assert(kvshm_slurm_job_id("1", NULL));

    static const char *const not_slurm[] = {
        "", "u1-2-3", "12a", "-1", "+1", " 1", "1 ",
    };
    for (size_t i = 0; i < sizeof not_slurm / sizeof not_slurm[0]; i++) {
        ck_assert_msg(!kvshm_job_part_is_slurm(not_slurm[i]),
                      "\"%s\" taken for a Slurm job", not_slurm[i]);
        ck_assert_msg(!kvshm_slurm_job_id(not_slurm[i], NULL),
                      "\"%s\" read as a Slurm job id", not_slurm[i]);
    }
    /* digits, so a Slurm job's, but no 32-bit id Slurm could ask about */
    static const char *const too_big[] = {
        "4294967296", "12345678901", "99999999999999999999999",
    };
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        id = 4242;
        ck_assert(kvshm_job_part_is_slurm(too_big[i]));
        ck_assert_msg(!kvshm_slurm_job_id(too_big[i], &id),
                      "\"%s\" read as Slurm job %u", too_big[i], id);
        ck_assert_uint_eq(id, 4242);
    }

    ck_assert(kvshm_name_has_prefix("mpikvs.a.b.c"));
    ck_assert(kvshm_name_has_prefix("mpikvs."));
    ck_assert(!kvshm_name_has_prefix("mpikvs"));
    ck_assert(!kvshm_name_has_prefix("MPIKVS.a.b.c"));
    ck_assert(!kvshm_name_has_prefix(""));
}
END_TEST

/* ---------------------------------------------------------- round trips */

/* Every region of a table in a scope: built, parsed back into its parts,
 * its kind, table prefix and step read out of its tag. */
static void round_trip_table(enum kvshm_scope scope, uint32_t step,
                             const char *table)
{
    char prefix[KVSHM_TIER_PREFIX_MAX], data[KVSHM_TAG_MAX],
        index[KVSHM_TAG_MAX], entries[KVSHM_TAG_MAX], layout[KVSHM_TAG_MAX];
    mpikvs_error_t err = {0};
    int rc;

    rc = kvshm_table_tags(scope, step, table, prefix, data, &err);
    assert_rc(rc, MPIKVS_OK, &err, "table %s, step %u", table, step);
    rc = kvshm_tier_tags(prefix, index, entries, &err);
    assert_rc(rc, MPIKVS_OK, &err, "tier %s", prefix);
    kvshm_job_layout_tag(scope, step, layout, sizeof layout);

    const struct { const char *tag; uint32_t kind; } regions[] = {
        {data, KVSHM_KIND_DATA},
        {index, KVSHM_KIND_TIER_INDEX},
        {entries, KVSHM_KIND_TIER_ENTRIES},
        {layout, KVSHM_KIND_LAYOUT},
    };
    for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++) {
        const char *tag = regions[i].tag;
        char name[KVSHM_NAME_MAX + 1], job[KVSHM_JOB_MAX],
            node[KVSHM_NODE_MAX], back[KVSHM_TAG_MAX], got[KVSHM_TAG_MAX];
        uint32_t got_step;

        rc = kvshm_region_name(name, sizeof name, JOB, NODE, tag, &err);
        assert_rc(rc, MPIKVS_OK, &err, "name of tag %s", tag);
        rc = kvshm_region_name_parse(name, job, node, back);
        assert_rc(rc, MPIKVS_OK, NULL, "parse %s", name);
        ck_assert_str_eq(job, JOB);
        ck_assert_str_eq(node, NODE);
        ck_assert_str_eq(back, tag);
        ck_assert_msg(kvshm_tag_kind(back) == regions[i].kind,
                      "%s: kind %u, expected %u", name,
                      kvshm_tag_kind(back), regions[i].kind);
        if (regions[i].kind != KVSHM_KIND_LAYOUT) {
            ck_assert_msg(kvshm_tag_table_prefix(back, regions[i].kind, got),
                          "%s: no table prefix", name);
            ck_assert_str_eq(got, prefix);
        }
        if (scope == KVSHM_SCOPE_STEP) {
            ck_assert_msg(kvshm_tag_step(back, &got_step) &&
                          got_step == step,
                          "%s: not read as a tag of step %u", name, step);
            ck_assert(kvshm_tag_of_step(back, step));
            ck_assert(!kvshm_tag_of_step(back, step + 1));
            if (step / 10 != step)   /* "s1-" for "s12-" */
                ck_assert(!kvshm_tag_of_step(back, step / 10));
        } else {
            ck_assert_msg(!kvshm_tag_step(back, &got_step),
                          "%s: a job-scope tag read as step %u's", name,
                          got_step);
        }
    }
}

START_TEST(test_round_trips)
{
    static const uint32_t steps[] = {0, 1, 7, 12, 12345};

    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        round_trip_table(KVSHM_SCOPE_JOB, 0, tables[t]);
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++)
            round_trip_table(KVSHM_SCOPE_STEP, steps[s], tables[t]);
    }
    round_trip_table(KVSHM_SCOPE_STEP, UINT32_MAX, "kvs");
    round_trip_table(KVSHM_SCOPE_STEP, 1234567890, "abcdefghij");
}
END_TEST

/* A real region made under each built name, found in its directory and
 * parsed back: the names the plugin makes are the names the tools read. */
START_TEST(test_round_trip_files)
{
    char prefix[KVSHM_TIER_PREFIX_MAX], data[KVSHM_TAG_MAX],
        layout[KVSHM_TAG_MAX];
    mpikvs_error_t err = {0};
    int rc;

    rc = kvshm_table_tags(KVSHM_SCOPE_STEP, 3, "chem", prefix, data, &err);
    assert_rc(rc, MPIKVS_OK, &err, "table tags");
    kvshm_job_layout_tag(KVSHM_SCOPE_STEP, 3, layout, sizeof layout);
    const char *tags[] = {data, layout};
    for (size_t i = 0; i < 2; i++) {
        struct kvshm_region_spec spec = {
            .dir = test_dir, .job = JOB, .node = NODE, .tag = tags[i],
            .kind = kvshm_tag_kind(tags[i]), .size = 8192,
            .uid = KVSHM_ANY_UID, .gid = (gid_t)-1, .step = 3,
        };
        struct kvshm_region *r = NULL;
        rc = kvshm_region_create(&spec, &r, &err);
        assert_rc(rc, MPIKVS_OK, &err, "create %s", tags[i]);
        kvshm_region_close(&r);
    }

    DIR *d = opendir(test_dir);
    struct dirent *e;
    int found = 0;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d))) {
        char job[KVSHM_JOB_MAX], node[KVSHM_NODE_MAX], tag[KVSHM_TAG_MAX];
        uint32_t step = 0;
        if (e->d_name[0] == '.')
            continue;
        ck_assert_msg(kvshm_name_has_prefix(e->d_name), "%s", e->d_name);
        rc = kvshm_region_name_parse(e->d_name, job, node, tag);
        assert_rc(rc, MPIKVS_OK, NULL, "parse %s", e->d_name);
        ck_assert_str_eq(job, JOB);
        ck_assert_str_eq(node, NODE);
        ck_assert_msg(strcmp(tag, "s3-chem-data") == 0 ||
                      strcmp(tag, "s3-layout") == 0, "tag %s", tag);
        ck_assert(kvshm_tag_step(tag, &step) && step == 3);
        found++;
    }
    closedir(d);
    ck_assert_int_eq(found, 2);
    ck_assert_int_eq(count_entries(test_dir), 2);
}
END_TEST

/* ---------------------------------------------------------- refusals */

START_TEST(test_refuse_long_tables)
{
    char prefix[KVSHM_TIER_PREFIX_MAX], data[KVSHM_TAG_MAX];
    mpikvs_error_t err = {0};
    int rc;

    memset(prefix, 0x5a, sizeof prefix);
    memset(data, 0x5a, sizeof data);
    /* 17 characters: longer than a table name may be */
    rc = kvshm_table_tags(KVSHM_SCOPE_JOB, 0, "abcdefghijklmnopq", prefix,
                          data, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "a 17-character table name");
    ck_assert_str_eq(err.text, "table name 'abcdefghijklmnopq' is longer "
                               "than 16 characters");

    /* 1 + 6 + 1 + 16 = 24: a tier prefix one too long */
    rc = kvshm_table_tags(KVSHM_SCOPE_STEP, 123456, "abcdefghijklmnop",
                          prefix, data, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "step 123456 and 16 characters");
    ck_assert_str_eq(err.text,
                     "region names for table 'abcdefghijklmnop' of step "
                     "123456 are too long (at most 23 characters of step "
                     "prefix and table name): use a shorter table name or "
                     "job scope");
    rc = kvshm_table_tags(KVSHM_SCOPE_STEP, 123456, "abcdefghijklmnop",
                          prefix, data, NULL);
    assert_rc(rc, MPIKVS_ERR_NAME, NULL, "the same with err NULL");
    for (size_t i = 0; i < sizeof prefix; i++)
        ck_assert_uint_eq((uint8_t)prefix[i], 0x5a);
    for (size_t i = 0; i < sizeof data; i++)
        ck_assert_uint_eq((uint8_t)data[i], 0x5a);
}
END_TEST

START_TEST(test_refuse_long_tiers)
{
    char index[KVSHM_TAG_MAX], entries[KVSHM_TAG_MAX],
        iname[KVSHM_NAME_MAX + 1], ename[KVSHM_NAME_MAX + 1];
    mpikvs_error_t err = {0};
    int rc;

    /* 23 characters fit "-entries" into a tag, 24 do not */
    rc = kvshm_tier_tags("abcdefghijklmnopqrstuvw", index, entries, &err);
    assert_rc(rc, MPIKVS_OK, &err, "a 23-character tier prefix");
    ck_assert_str_eq(entries, "abcdefghijklmnopqrstuvw-entries");
    rc = kvshm_tier_tags("abcdefghijklmnopqrstuvwx", index, entries, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "a 24-character tier prefix");
    ck_assert_str_eq(err.text, "invalid tier name 'abcdefghijklmnopqrstuvwx':"
                               " use 1 to 23 characters");
    rc = kvshm_tier_tags(NULL, index, entries, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "no tier prefix");
    ck_assert_str_eq(err.text, "invalid tier name '(null)': use 1 to 23 "
                               "characters");
    rc = kvshm_tier_region_names(JOB, NODE, "abcdefghijklmnopqrstuvwx",
                                 iname, ename, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "the names of a 24-character tier");
    /* a prefix that fits but is no name part */
    rc = kvshm_tier_region_names(JOB, NODE, "a.b", iname, ename, &err);
    assert_rc(rc, MPIKVS_ERR_NAME, &err, "a tier prefix with a dot");
    ck_assert_str_eq(err.text, "invalid region tag 'a.b-index': use 1 to "
                               "31 characters of A-Z a-z 0-9 _ -");
}
END_TEST

/* MPIKVS_VIRTUAL_NODES, one rule for libmpikvs and rmacache: a count
 * from 1, digits only (0 or empty: none); blocks of consecutive ranks; "<host>-v<node>". */
START_TEST(test_virtual_nodes)
{
    static const char *const bad[] = {"-0", "two", "-1", " 2", "+2", "2x",
                                      "1048577", "99999999999999999999"};
    mpikvs_error_t err;
    unsigned n = 7;
    char name[64];

    ck_assert_int_eq(kvshm_virtual_nodes_parse(NULL, 4, &n, &err), MPIKVS_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(kvshm_virtual_nodes_parse("", 4, &n, &err), MPIKVS_OK);
    ck_assert_uint_eq(n, 0);
    n = 7;   /* 0: none, the real nodes, as a script may say */
    ck_assert_int_eq(kvshm_virtual_nodes_parse("0", 4, &n, &err), MPIKVS_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(kvshm_virtual_nodes_parse("3", 4, &n, &err), MPIKVS_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(kvshm_virtual_nodes_parse("1048576",
                                               KVSHM_VIRTUAL_NODES_MAX, &n,
                                               &err),
                     MPIKVS_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = 7;
        ck_assert_msg(kvshm_virtual_nodes_parse(bad[i],
                                                KVSHM_VIRTUAL_NODES_MAX, &n,
                                                &err) == MPIKVS_ERR_INVAL,
                      "MPIKVS_VIRTUAL_NODES='%s' was taken", bad[i]);
        ck_assert_uint_eq(n, 7);
        char want[80];
        /* the form rmacache's refusals share: "VAR: 'value' ..." */
        snprintf(want, sizeof want, "MPIKVS_VIRTUAL_NODES: '%s' is not a "
                 "node count", bad[i]);
        ck_assert_msg(strstr(err.text, want), "message for '%s': %s",
                      bad[i], err.text);
    }
    ck_assert_int_eq(kvshm_virtual_nodes_parse("5", 4, &n, &err),
                     MPIKVS_ERR_INVAL);

    /* 5 ranks in 2 nodes: 0 1 2 | 3 4; every node has a rank when
     * nodes <= ranks */
    static const int of5in2[] = {0, 0, 0, 1, 1};
    for (int r = 0; r < 5; r++)
        ck_assert_int_eq(kvshm_virtual_node_of(r, 5, 2), of5in2[r]);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(kvshm_virtual_node_of(r, 4, 4), r);
    kvshm_virtual_node_name(name, sizeof name, "n001", 1);
    ck_assert_str_eq(name, "n001-v1");
}
END_TEST

START_TEST(test_refuse_bad_parts)
{
    static const char *const what[] = {"job id", "node name", "tag"};
    static const char *const bad[] = {
        "", "a.b", "a/b", "a b", "a\nb", "a*b", "..", "\xc3\xa9",
    };
    const size_t max[] = {KVSHM_JOB_MAX, KVSHM_NODE_MAX, KVSHM_TAG_MAX};

    for (int part = 0; part < 3; part++) {
        char toolong[128];
        memset(toolong, 'x', max[part]);
        toolong[max[part]] = '\0';   /* one character too many */
        for (size_t i = 0; i <= sizeof bad / sizeof bad[0]; i++) {
            const char *p[3] = {JOB, NODE, "kvs-data"};
            p[part] = i < sizeof bad / sizeof bad[0] ? bad[i] : toolong;
            char name[KVSHM_NAME_MAX + 64], want[512];
            mpikvs_error_t err = {0};
            int rc = kvshm_region_name(name, sizeof name, p[0], p[1], p[2],
                                       &err);
            assert_rc(rc, MPIKVS_ERR_NAME, &err, "%s \"%s\"", what[part],
                      p[part]);
            snprintf(want, sizeof want, "invalid region %s '%s': use 1 to "
                     "%zu characters of A-Z a-z 0-9 _ -", what[part],
                     p[part], max[part] - 1);
            ck_assert_str_eq(err.text, want);
            ck_assert(!kvshm_name_part_ok(p[part], max[part]));
        }
    }
    ck_assert(!kvshm_name_part_ok(NULL, KVSHM_TAG_MAX));

    /* names that do not parse, nothing written */
    static const char *const junk[] = {
        "mpikvs.4242.n001", "mpikvs.4242.n001.s1-layout.x",
        "mpikvs.4242..s1-layout", "mpikvs.4242.n001.s1/layout",
        "mpikvs.4242.n 01.layout", "xmpikvs.4242.n001.layout",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        char job[KVSHM_JOB_MAX] = "J", node[KVSHM_NODE_MAX] = "N",
            tag[KVSHM_TAG_MAX] = "T";
        int rc = kvshm_region_name_parse(junk[i], job, node, tag);
        assert_rc(rc, MPIKVS_ERR_NAME, NULL, "parse \"%s\"", junk[i]);
        ck_assert(strcmp(job, "J") == 0 && strcmp(node, "N") == 0 &&
                  strcmp(tag, "T") == 0);
    }
}
END_TEST

static Suite *region_name_suite(void)
{
    Suite *s = suite_create("region_name");
    TCase *tc = tcase_create("build");

    tcase_add_test(tc, test_layout_tags);
    tcase_add_test(tc, test_table_tags);
    tcase_add_test(tc, test_region_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, test_tag_kinds);
    tcase_add_test(tc, test_tag_steps);
    tcase_add_test(tc, test_table_names_like_steps);
    tcase_add_test(tc, test_job_parts);
    suite_add_tcase(s, tc);

    tc = tcase_create("round_trip");
    tcase_add_test(tc, test_round_trips);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
    tcase_add_test(tc, test_round_trip_files);
    suite_add_tcase(s, tc);

    tc = tcase_create("refuse");
    tcase_add_test(tc, test_refuse_long_tables);
    tcase_add_test(tc, test_refuse_long_tiers);
    tcase_add_test(tc, test_refuse_bad_parts);
    tcase_add_test(tc, test_virtual_nodes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    snprintf(run_dir, sizeof run_dir, "/dev/shm/kvtest.XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", run_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(region_name_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(run_dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
