/*
 * test_killed_writer.c - a writer SIGKILLed in the middle of its puts
 * (run-killed-writer-test.sh runs it).  np=2, lock-free mode: rank 0
 * is node 0's leader, rank 1 the writer.
 *
 *   test_killed_writer shared DIR    one node: rank 1 writes node 0's
 *                                    slots itself, in shared memory
 *   test_killed_writer shipped DIR   MPIKVS_VIRTUAL_NODES=2 over
 *                                    MPIKVS_UCX_TLS=tcp,self: rank 1
 *                                    ships its puts to node 0, whose
 *                                    serving thread writes them
 *
 * Rank 1 puts NKEYS keys of node 0 over and over, each time a new
 * version of a self-checking value (mpitest.h), with a few keys per
 * bucket so that its claims meet; after its first round it writes
 * DIR/writing.  Rank 0 waits for that file, SIGKILLs rank 1 at once
 * (in the middle of some put: the kill lands wherever the writer is),
 * waits until it is gone, then:
 *   - gets every key: a hit is a whole value of that key (never torn,
 *     never another key's), or a miss;
 *   - puts every key with a version of its own and reads it back: a
 *     slot the dead writer held claimed is taken over, in bounded time.
 * Rank 0 writes its checks to DIR/result ("PASS ..."/"FAIL ..." lines,
 * then "done P passed F failed") and ends without MPI_Finalize: mpirun
 * may end it any time after rank 1's death, so the file is what the
 * script asserts on.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mpikvs.h"
#include "mt_key_home.h"

#define KS 16
#define VS 48
#define NKEYS 64
#define WAIT_S 60

static const char *dir;
static FILE *result;
static long passed, failed;

__attribute__((format(printf, 2, 3)))
static void record(bool ok, const char *fmt, ...)
{
    va_list ap;

    fprintf(result, "%s ", ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vfprintf(result, fmt, ap);
    va_end(ap);
    fputc('\n', result);
    fflush(result);
    ok ? passed++ : failed++;
}

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool gone(int pid)
{
    char p[64], st[512];
    FILE *f;
    size_t n;

    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    if (!(f = fopen(p, "r")))
        return true;
    n = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[n] = '\0';
    const char *paren = strrchr(st, ')');
    return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Poll until cond(arg), bounded; 1 ms naps. */
static bool await(bool (*cond)(const void *), const void *arg)
{
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 1000000};

    for (uint64_t t0 = now_ms(); now_ms() - t0 < WAIT_S * 1000u;) {
        if (cond(arg))
            return true;
        nanosleep(&nap, NULL);
    }
    return false;
}

static bool file_there(const void *path)
{
    return access(path, F_OK) == 0;
}

static bool pid_gone(const void *pid)
{
    return gone(*(const int *)pid);
}

int main(int argc, char **argv)
{
    static unsigned char keys[NKEYS][KS];
    unsigned char v[VS];
    char writing[4096], p[4096];
    int rank, size, pid = (int)getpid(), pids[2] = {0, 0}, rc;
    mpikvs_options_t o;
    mpikvs_t *kvs = NULL;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || size != 2)
        mt_abort("usage: test_killed_writer shared|shipped DIR, np=2");
    dir = argv[2];
    path_of(writing, sizeof writing, "writing");

    o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    o.key_size = KS;
    o.value_size = VS;
    /* a small table: 64 keys share a few buckets, so claims meet */
    o.size_per_node = 64u << 10;
    o.mode = "lockfree";
    if (mpikvs_open(MPI_COMM_WORLD, &o, &kvs) != MPIKVS_OK) {
        fprintf(stderr, "rank %d: mpikvs_open: %s\n", rank,
                mpikvs_last_error(NULL));
        mt_abort("mpikvs_open failed");
    }
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < NKEYS; i++)
        mt_key_home(kvs, 31, (uint32_t)i, 0, keys[i], KS);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 1) {
        mt_phase("rank 1 writes until it is killed");
        mt_deadline(WAIT_S);
        for (uint64_t version = 1;; version++) {
            for (int i = 0; i < NKEYS; i++) {
                mt_make_value(keys[i], KS, version, v, VS);
                mpikvs_put(kvs, keys[i], v);
            }
            if (version == 1) {
                FILE *f = fopen(writing, "w");
                if (f)
                    fclose(f);
            }
        }
    }

    path_of(p, sizeof p, "result");
    if (!(result = fopen(p, "w")))
        mt_abort("cannot write the result file");
    mt_phase("rank 0 kills the writer");
    if (!await(file_there, writing)) {
        record(false, "rank 1 never started writing");
        goto out;
    }
    kill(pids[1], SIGKILL);
    if (!await(pid_gone, &pids[1])) {
        record(false, "rank 1 (pid %d) did not die", pids[1]);
        goto out;
    }
    fprintf(result, "rank 1 (pid %d) killed while writing\n", pids[1]);

    mt_phase("rank 0 reads what the writer left");
    long hits = 0, misses = 0, bad = 0;
    for (int i = 0; i < NKEYS; i++) {
        uint64_t version = 0;
        memset(v, 0, VS);
        rc = mpikvs_get(kvs, keys[i], v);
        if (rc == MPIKVS_MISS)
            misses++;
        else if (rc == MPIKVS_OK && mt_value_ok(keys[i], KS, v, VS,
                                                &version) && version)
            hits++;
        else
            bad++;
    }
    record(bad == 0, "after the kill: %ld of %d keys a whole value of "
                     "their own, %ld misses, %ld torn, foreign or failed",
           hits, NKEYS, misses, bad);

    mt_phase("rank 0 writes every key again");
    uint64_t t0 = now_ms();
    bad = 0;
    for (int i = 0; i < NKEYS; i++) {
        unsigned char back[VS];
        mt_make_value(keys[i], KS, 1u << 30, v, VS);
        rc = mpikvs_put(kvs, keys[i], v);
        if (rc == MPIKVS_OK)
            rc = mpikvs_get(kvs, keys[i], back);
        if (rc != MPIKVS_OK || memcmp(v, back, VS) != 0) {
            bad++;
            fprintf(result, "key %d: %s: %s\n", i, mpikvs_strerror(rc),
                    mpikvs_last_error(kvs));
        }
    }
    record(bad == 0, "every key put again and read back (%ld failed) in "
                     "%llu ms", bad, (unsigned long long)(now_ms() - t0));
out:
    fprintf(result, "done %ld passed %ld failed\n", passed, failed);
    fclose(result);
    /* no MPI_Finalize with a dead rank: what it does then is MPI's */
    fflush(NULL);
    _exit(0);
}
