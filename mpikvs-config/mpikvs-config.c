/*
 * mpikvs-config - check a job config, and show what its rounding makes of
 * a key.  See mpikvs-config(1).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"   /* the build's: PACKAGE_VERSION */
#endif
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_config.h"
#include "errors_internal.h"
#include "plan.h"
#include "round.h"
#include "size.h"

#define PROG "mpikvs-config"

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: " PROG " check [--size SIZE [--ranks N]] FILE\n"
            "       " PROG " key FILE TABLE VALUE...\n"
            "\n"
            "  check  validate FILE and print it with every default filled "
            "in;\n"
            "         with --size, also how it divides SIZE of DHT memory per "
            "node,\n"
            "         refused below the smallest usable size; --ranks: the "
            "ranks\n"
            "         a node's regions count (default %u, the plugin's "
            "min_ranks)\n"
            "  key    round VALUE... by TABLE's key fields and print the key "
            "as\n"
            "         text and in hex\n"
            "\n"
            "  -h, --help     print this and exit\n"
            "  -V, --version  print the version and exit\n"
            "\nSee mpikvs-config(1) and mpikvs.json(5).\n",
            KVSHM_PLAN_MIN_RANKS);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see '" PROG " --help')\n");
    return EXIT_USAGE;
}

static struct kvshm_config *load(const char *path)
{
    struct kvshm_config *cfg;
    struct kvshm_diag diag;

    if (kvshm_config_load(path, &cfg, &diag) != MPIKVS_OK) {
        fputs(diag.text ? diag.text : PROG ": out of memory\n", stderr);
        kvshm_diag_free(&diag);
        return NULL;
    }
    return cfg;
}

static int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"size", required_argument, NULL, 's'},
        {"ranks", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *size = NULL, *ranks_text = NULL;
    unsigned long ranks = KVSHM_PLAN_MIN_RANKS;
    struct kvshm_plan plan = {0};
    struct kvshm_config *cfg;
    mpikvs_error_t err;
    uint64_t node = 0;
    char *text;
    int c;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 's')
            size = optarg;
        else if (c == 'r')
            ranks_text = optarg;
        else if (c == 'h') {
            usage(stdout);
            return EXIT_OK;
        } else
            return usage_error("check: unknown option or missing value "
                               "'%s'",
                               argv[optind - 1]);
    }
    if (optind + 1 != argc)
        return usage_error("check: %s", optind == argc
                                            ? "needs a FILE"
                                            : "takes one FILE");
    if (size && kvshm_parse_size(size, "--size", 1, &node, &err)) {
        fprintf(stderr, PROG ": %s\n", err.text);
        return EXIT_USAGE;
    }
    if (ranks_text) {
        char *end;
        errno = 0;
        ranks = strtoul(ranks_text, &end, 10);
        if (!size || !isdigit((unsigned char)*ranks_text) || *end ||
            errno || ranks == 0 || ranks > 65536)
            return usage_error(size ? "check: --ranks %s: give a rank count "
                                      "from 1 to 65536"
                                    : "check: --ranks %s needs --size",
                               ranks_text);
    }
    cfg = load(argv[optind]);
    if (!cfg)
        return EXIT_INVALID;
    if (size) {
        /* the plan the SPANK plugin would make of it (shm/plan.h) */
        struct kvshm_plan_input in = {.dht_size = node, .config = cfg,
                                      .max_ranks = ranks,
                                      .size_what = "--size",
                                      .size_text = size};
        struct kvshm_diag diag;
        if (kvshm_plan_make(&in, &plan, &diag) != MPIKVS_OK) {
            fputs(diag.text ? diag.text : PROG ": out of memory\n", stderr);
            kvshm_diag_free(&diag);
            kvshm_config_free(cfg);
            return EXIT_INVALID;
        }
    }
    text = kvshm_config_dump(cfg);
    if (!text) {
        fprintf(stderr, PROG ": out of memory\n");
        kvshm_plan_free(&plan);
        kvshm_config_free(cfg);
        return EXIT_INVALID;
    }
    puts(text);
    free(text);
    /* The division of the node goes to stderr: stdout stays JSON. */
    for (size_t i = 0; size && i < plan.ntables; i++) {
        const struct kvshm_table_plan *tp = &plan.tables[i];
        const struct kvshm_table_config *t = &cfg->tables[i];
        char bytes[32], tier[32], near[96] = "", near_bytes[32];
        kvshm_format_bytes(bytes, sizeof(bytes),
                           tp->data_bytes + tp->tier_bytes + tp->near_bytes);
        kvshm_format_bytes(tier, sizeof(tier), tp->tier_bytes);
        kvshm_format_bytes(near_bytes, sizeof(near_bytes), tp->near_bytes);
        if (t->near.enabled)
            snprintf(near, sizeof(near), ", near %s (%u members, %zu-byte "
                     "coarse keys)", near_bytes, t->near.members,
                     t->near.key.size);
        fprintf(stderr, "%s: %s of %s per node%s%s%s\n", tp->name, bytes,
                size, t->tier.enabled ? ", tier " : "",
                t->tier.enabled ? tier : "", near);
    }
    kvshm_plan_free(&plan);
    kvshm_config_free(cfg);
    return EXIT_OK;
}

/* A value exactly as written: the whole argument is one number, with no
 * space around it, that a double can hold ("1e400" is not 1e400). */
static const char *parse_value(const char *s, double *out)
{
    char *end;

    if (!*s || isspace((unsigned char)*s))
        return "is not a number";
    errno = 0;
    *out = strtod(s, &end);
    if (end == s || *end)
        return "is not a number";
    if (errno == ERANGE && (*out == HUGE_VAL || *out == -HUGE_VAL))
        return "is too large for a double";
    return NULL;
}

static int cmd_key(int argc, char **argv)
{
    const struct kvshm_table_config *t;
    struct kvshm_config *cfg;
    mpikvs_error_t err;
    unsigned char *key = NULL;
    double *in = NULL;
    size_t n;
    char *text = NULL;
    int rc = EXIT_INVALID, len;

    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return EXIT_OK;
    }
    if (argc < 4)
        return usage_error("key: %s", "needs FILE, TABLE and the values");
    cfg = load(argv[1]);
    if (!cfg)
        return EXIT_INVALID;
    t = kvshm_config_table(cfg, argv[2]);
    if (!t) {
        fprintf(stderr, PROG ": %s has no table '%s' (it has:", argv[1],
                argv[2]);
        for (size_t i = 0; i < cfg->ntables; i++)
            fprintf(stderr, " %s", cfg->tables[i].name);
        fprintf(stderr, ")\n");
        goto out;
    }
    n = (size_t)argc - 3;
    if (!t->key.fields) {
        fprintf(stderr, PROG ": table '%s' has a raw key of %zu bytes, no "
                        "fields to round\n",
                t->name, t->key.size);
        goto out;
    }
    if (n != t->key.nfields) {
        fprintf(stderr, PROG ": table '%s' has %zu key fields, %zu values "
                        "given\n",
                t->name, t->key.nfields, n);
        goto out;
    }
    in = calloc(n, sizeof(*in));
    key = calloc(1, t->key.size);
    if (!in || !key) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *why = parse_value(argv[3 + i], &in[i]);
        if (why) {
            fprintf(stderr, PROG ": value %zu (%s): '%s' %s\n", i,
                    t->key.fields[i].name, argv[3 + i], why);
            goto out;
        }
    }
    if (kvshm_key_from_doubles(&t->key, in, n, key, &err) != MPIKVS_OK) {
        fprintf(stderr, PROG ": %s\n", err.text);
        goto out;
    }
    len = kvshm_key_to_text(&t->key, key, NULL, 0);
    if (len < 0 || !(text = malloc((size_t)len + 1))) {
        fprintf(stderr, PROG ": cannot render the key\n");
        goto out;
    }
    kvshm_key_to_text(&t->key, key, text, (size_t)len + 1);
    printf("key: %s\nhex: ", text);
    for (size_t i = 0; i < t->key.size; i++)
        printf("%02x", key[i]);
    printf("\n");
    rc = EXIT_OK;
out:
    free(text);
    free(key);
    free(in);
    kvshm_config_free(cfg);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "needs a command: check or key");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf(PROG " %s\n", PACKAGE_VERSION);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "check"))
        return cmd_check(argc - 1, argv + 1);
    if (!strcmp(argv[1], "key"))
        return cmd_key(argc - 1, argv + 1);
    return usage_error("unknown command '%s': expected check or key",
                       argv[1]);
}
