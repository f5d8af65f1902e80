/*
 * fuzz_config.c - libFuzzer target for the job config parser.
 *
 * Whatever the bytes, parsing must not crash, leak or read out of bounds;
 * a config it accepts must dump to JSON that parses back to the same
 * dump, and must resolve against a node size without trouble.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job_config.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kvshm_config *cfg = NULL, *again = NULL;
    struct kvshm_diag diag;
    char *first, *second;

    if (kvshm_config_parse((const char *)data, size, "fuzz.json", &cfg,
                           &diag) != MPIKVS_OK) {
        kvshm_diag_free(&diag);
        return 0;
    }
    first = kvshm_config_dump(cfg);
    if (!first)
        abort();
    if (kvshm_config_parse(first, strlen(first), "dump.json", &again,
                           &diag) != MPIKVS_OK)
        abort();   /* what we print must be what we read */
    second = kvshm_config_dump(again);
    if (!second || strcmp(first, second) != 0)
        abort();
    kvshm_config_resolve(cfg, UINT64_C(8) << 30, &diag);
    kvshm_diag_free(&diag);
    free(first);
    free(second);
    kvshm_config_free(cfg);
    kvshm_config_free(again);
    return 0;
}
