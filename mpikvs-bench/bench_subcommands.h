/*
 * bench_subcommands.h - the subcommands of mpikvs-bench, each in a file
 * of its own, that main (mpikvs-bench.c) dispatches to.
 */
#ifndef MPIKVS_BENCH_SUBCOMMANDS_H
#define MPIKVS_BENCH_SUBCOMMANDS_H

/* Subcommands: argv[0] is the subcommand's name.  Only clear, dht, near,
 * open, persist and rmacache use MPI (they call MPI_Init and MPI_Finalize
 * themselves); the others run without mpirun. */
int bench_clear_main(int argc, char **argv);
int bench_dht_main(int argc, char **argv);
int bench_near_main(int argc, char **argv);
int bench_open_main(int argc, char **argv);
int bench_persist_main(int argc, char **argv);
int bench_rmacache_main(int argc, char **argv);
int bench_round_main(int argc, char **argv);
int bench_tier_main(int argc, char **argv);

#endif /* MPIKVS_BENCH_SUBCOMMANDS_H */
