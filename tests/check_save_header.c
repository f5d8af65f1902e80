/*
 * check_save_header.c - the check of a save file's header
 * (libmpikvs/save_format.c) on crafted headers.  The header's checksum
 * is no secret: every crafted header here is re-summed, so that the
 * check of its sizes, not the checksum, is what must refuse it.  The
 * block shape of "mine" is the one a save writes for 32-byte keys and
 * 64-byte values (2730 entries of 96 bytes a block).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpikvs_errors.h"
#include "save_format.h"

#define KEY   32u
#define VALUE 64u

static struct save_header mine;

/* A header as a save of this table with blocks of mine's shape writes. */
static void make(struct save_header *h, uint64_t blocks, uint64_t entries)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, SAVE_MAGIC, sizeof(h->magic));
    h->version = SAVE_VERSION;
    h->header_size = SAVE_HEADER_SIZE;
    h->byte_order = SAVE_BYTE_ORDER;
    h->key_size = KEY;
    h->value_size = VALUE;
    h->key_rules = 7;
    h->value_rules = 9;
    h->block_entries = kvs_save_block_entries(KEY + VALUE);
    h->block_bytes = sizeof(struct save_block) +
                     h->block_entries * (KEY + VALUE);
    h->blocks = blocks;
    h->entries = entries;
    h->checksum = kvs_save_header_sum(h);
}

static void setup(void)
{
    make(&mine, 0, 0);
}

static uint64_t size_of(const struct save_header *h)
{
    return SAVE_HEADER_SIZE + h->blocks * h->block_bytes;
}

/* Check h as the header of a file of size bytes; why is printed on a
 * failed expectation. */
static void expect(const struct save_header *h, uint64_t size, int want,
                   const char *what)
{
    char why[400] = "";
    int rc = kvs_save_header_check(h, size, &mine, why, sizeof(why));

    ck_assert_msg(rc == want, "%s: returned %d (%s), want %d", what, rc,
                  why, want);
    if (want != 0)
        ck_assert_msg(why[0] != '\0', "%s: refused without a reason", what);
}

START_TEST(test_written_header_passes)
{
    struct save_header h;

    make(&h, 3, 2730 * 2 + 5);
    expect(&h, size_of(&h), MPIKVS_OK, "a header as a save writes it");
    make(&h, 0, 0);
    expect(&h, SAVE_HEADER_SIZE, MPIKVS_OK, "an empty table's save");
}
END_TEST

/* 16 + 2^59 * 96 = 3 * 2^64 + 16: block_bytes wraps around to 16, and a
 * 16-byte block claims 40 entries (issue 29, M1). */
START_TEST(test_wrapped_block_size)
{
    struct save_header h;

    make(&h, 1, 40);
    h.block_entries = UINT64_C(1) << 59;
    h.block_bytes = 16;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, SAVE_HEADER_SIZE + 16, MPIKVS_ERR_CORRUPT,
           "block_bytes wrapped around to 16");
}
END_TEST

START_TEST(test_block_shapes_refused)
{
    struct save_header h;
    uint64_t most = mine.block_entries;

    /* one entry more than a save writes, its bytes consistent */
    make(&h, 1, 1);
    h.block_entries = most + 1;
    h.block_bytes = sizeof(struct save_block) + h.block_entries * 96;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "a block larger than a save's");
    /* a huge block, consistent but for a round's buffer of 32 of them */
    make(&h, 1, 1);
    h.block_entries = UINT64_C(1) << 40;
    h.block_bytes = sizeof(struct save_block) + h.block_entries * 96;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "a block of 2^40 entries");
    /* no entries a block */
    make(&h, 1, 0);
    h.block_entries = 0;
    h.block_bytes = sizeof(struct save_block);
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "blocks of no entries");
    /* block_bytes that does not match block_entries */
    make(&h, 1, 1);
    h.block_bytes -= 96;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "block_bytes one entry short");
    /* another header size */
    make(&h, 1, 1);
    h.header_size = 512;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "a header of 512 bytes");
}
END_TEST

START_TEST(test_counts_refused)
{
    struct save_header h;

    /* so many blocks that header + blocks * block_bytes wraps around */
    make(&h, UINT64_MAX / 1000, 1);
    expect(&h, 1000, MPIKVS_ERR_CORRUPT, "blocks that overflow the size");
    /* more entries than its blocks hold */
    make(&h, 2, 2 * 2730 + 1);
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "more entries than room");
}
END_TEST

START_TEST(test_sizes_and_identity)
{
    struct save_header h;

    make(&h, 2, 10);
    expect(&h, size_of(&h) - 1, MPIKVS_ERR_TRUNCATED, "a byte short");
    expect(&h, size_of(&h) + 1, MPIKVS_ERR_SIZE, "a byte appended");
    expect(&h, 100, MPIKVS_ERR_TRUNCATED, "shorter than the header");
    expect(&h, 0, MPIKVS_ERR_FOREIGN, "an empty file");
    h.checksum ^= 1;
    expect(&h, size_of(&h), MPIKVS_ERR_CORRUPT, "a wrong checksum");
    make(&h, 2, 10);
    memcpy(h.magic, "GARBAGE!", 8);
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_FOREIGN, "another magic");
    make(&h, 2, 10);
    h.version = SAVE_VERSION + 1;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_VERSION, "another version");
    make(&h, 2, 10);
    h.value_size = 128;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_MISMATCH, "other value size");
    make(&h, 2, 10);
    h.key_rules = 8;
    h.checksum = kvs_save_header_sum(&h);
    expect(&h, size_of(&h), MPIKVS_ERR_MISMATCH, "other key rules");
}
END_TEST

static Suite *save_header_suite(void)
{
    Suite *s = suite_create("save_header");
    TCase *tc = tcase_create("check");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_written_header_passes);
    tcase_add_test(tc, test_wrapped_block_size);
    tcase_add_test(tc, test_block_shapes_refused);
    tcase_add_test(tc, test_counts_refused);
    tcase_add_test(tc, test_sizes_and_identity);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(save_header_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
