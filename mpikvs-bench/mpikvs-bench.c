/*
 * mpikvs-bench - the benchmarks of the mpikvs papers, as one program with
 * a subcommand per benchmark.  This file holds the dispatch only; what
 * the subcommands share is bench.c (bench.h), and each benchmark lives in
 * its own file (bench_subcommands.h).
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_subcommands.h"

struct subcommand {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"clear", bench_clear_main, "mpikvs_clear against an open of the same table (under mpirun)"},
    {"dht", bench_dht_main, "the DHT paper's write/read/mixed benchmark (under mpirun)"},
    {"near", bench_near_main, "neighbourhood queries against gets (under mpirun)"},
    {"open", bench_open_main, "mpikvs_open and mpikvs_close, and their steps (under mpirun)"},
    {"persist", bench_persist_main, "mpikvs_save and mpikvs_load throughput (under mpirun)"},
    {"rmacache", bench_rmacache_main, "libmpikvs-rmacache against plain MPI_Get (under mpirun)"},
    {"round", bench_round_main, "making canonical keys from doubles (POET keys)"},
    {"tier", bench_tier_main, "lookups in the read-only tier (SHMEMPMI VII-C)"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: %s SUBCOMMAND [options]\n"
               "       %s --help | --version\n\n"
               "Subcommands:\n", BENCH_PROG, BENCH_PROG);
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'%s SUBCOMMAND --help' lists the options of one; "
               "see mpikvs-bench(1).\n", BENCH_PROG);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return BENCH_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("%s %s\n", BENCH_PROG, PACKAGE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(cmd, subcommands[i].name))
            return subcommands[i].main(argc - 1, argv + 1);
    if (cmd[0] == '-')
        fprintf(stderr, "%s: unknown option '%s' (options follow the "
                        "subcommand, e.g. '%s tier --json')\n",
                BENCH_PROG, cmd, BENCH_PROG);
    else
        fprintf(stderr, "%s: unknown subcommand '%s' (see '%s --help')\n",
                BENCH_PROG, cmd, BENCH_PROG);
    return BENCH_EXIT_USAGE;
}
