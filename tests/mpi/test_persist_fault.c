/*
 * test_persist_fault.c - mpikvs_save and mpikvs_load where the file
 * system or the other ranks let them down.  run-persist-fault-tests.sh
 * runs its phases as separate jobs and checks the files they leave:
 *
 *   save FILE N K      puts keys 0..N-1 and saves to FILE K times (two
 *                      such jobs at once: each save whole, none damaged)
 *   save-loop FILE N DIR  puts keys 0..N-1, writes each rank's pid to
 *                      DIR/rank.R and saves to FILE until killed
 *   load-loop FILE DIR loads FILE once, writes each rank's pid to
 *                      DIR/rank.R, and loads FILE until killed
 *   save-stop FILE N DIR  puts keys 0..N-1, writes each rank's pid to
 *                      DIR/rank.R and saves to FILE until a save fails:
 *                      the script stops rank 1 (SIGSTOP) in the middle
 *                      of one, and rank 0's save returns
 *                      MPIKVS_ERR_STALLED (MPIKVS_TIMEOUT bounds it) and
 *                      leaves no partial file; rank 0 then writes
 *                      DIR/stalled, the script resumes rank 1, whose save
 *                      fails too (the ranks' calls made equal again:
 *                      stay_in_step); then both ranks' gets, a fence and
 *                      a save work again
 *   check FILE N       FILE loads, and holds the N entries
 *   full FILE N        saves to FILE on a file system with room for one
 *                      save only: the second save fails, FILE still
 *                      loads
 *   crafted FILE DIR   loads refused: a header whose block size wraps
 *                      around (a 16-byte block that claims 40 entries),
 *                      a FIFO, a directory; nothing is put
 *   open-fifo          MPIKVS_CONFIG's persist.load is a FIFO: the open
 *                      fails, it does not wait for a writer
 *   noclose N          MPIKVS_CONFIG has persist.save; the last rank
 *                      does not come to mpikvs_close until the others
 *                      returned from it: every close returns
 *                      MPIKVS_ERR_STALLED within MPIKVS_CLOSE_TIMEOUT and
 *                      nothing is saved
 *   syscall FILE N KIND  saves FILE, then makes the calls of KIND fail
 *                      in every rank (fail_syscalls.h: an open for
 *                      writing, pwrite, fsync) and saves again: the save
 *                      fails naming the save, and no partial file is
 *                      left (the script checks FILE still loads)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fail_syscalls.h"
#include "mpikvs.h"
#include "mpitest.h"

#define KSIZE 32
#define VSIZE 64
#define TAG   29u

static int rank, size;

static mpikvs_t *open_table(void)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KSIZE, .value_size = VSIZE,
                          .size_per_node = 4u << 20};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, getenv("MPIKVS_CONFIG") ? NULL : &o,
                         &kvs);

    EXPECT(rc == MPIKVS_OK, "open: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
    if (!kvs)
        mt_abort("cannot open");
    return kvs;
}

static void put_keys(mpikvs_t *kvs, uint32_t n)
{
    unsigned char k[KSIZE], v[VSIZE];

    for (uint32_t i = (uint32_t)rank; i < n; i += (uint32_t)size) {
        mt_make_key(TAG, i, 7, k, KSIZE);
        mt_make_value(k, KSIZE, i + 1000u, v, VSIZE);
        int rc = mpikvs_put(kvs, k, v);
        EXPECT(rc == MPIKVS_OK, "put %u: %s", i, mpikvs_strerror(rc));
    }
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");
}

/* Load file (merged into what kvs holds): it verifies and has n. */
static void expect_loads(mpikvs_t *kvs, const char *file, uint32_t n)
{
    mpikvs_load_report_t r = {0};
    int rc = mpikvs_load(kvs, file, MPIKVS_LOAD_MERGE, &r);

    EXPECT(rc == MPIKVS_OK && r.entries == n,
           "load %s: %s (%s), %llu entries, want %u", file,
           mpikvs_strerror(rc), mpikvs_last_error(kvs),
           (unsigned long long)r.entries, n);
}

/* Rank 0: names in file's directory that start with file's name and
 * ".partial". */
static int partials_of(const char *file)
{
    char d[1024], b[1024], pre[1100];
    struct dirent *e;
    DIR *dir;
    int found = 0;

    snprintf(d, sizeof(d), "%s", file);
    snprintf(b, sizeof(b), "%s", file);
    snprintf(pre, sizeof(pre), "%s.partial", basename(b));
    dir = opendir(dirname(d));
    if (!dir)
        mt_abort("cannot read the save's directory");
    while ((e = readdir(dir)))
        if (!strncmp(e->d_name, pre, strlen(pre))) {
            mt_note("left behind: %s", e->d_name);
            found++;
        }
    closedir(dir);
    return found;
}

static void phase_save(const char *file, uint32_t n, int times)
{
    mpikvs_t *kvs = open_table();

    put_keys(kvs, n);
    for (int i = 0; i < times; i++) {
        int rc = mpikvs_save(kvs, file);
        EXPECT(rc == MPIKVS_OK, "save %d to %s: %s: %s", i, file,
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
        if (rc != MPIKVS_OK)
            break;
    }
    if (rank == 0)
        mt_note("saved %u entries to %s %d times", n, file, times);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

/* This rank's pid in piddir/rank.R, for the script to kill it. */
static void write_pid(const char *piddir)
{
    char name[1100];
    FILE *f;

    snprintf(name, sizeof(name), "%s/rank.%d", piddir, rank);
    f = fopen(name, "w");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f))
        mt_abort("cannot write the pid file");
}

/* Saves to file until killed (the script kills a rank in the middle of
 * one); each rank's pid in piddir/rank.R first. */
static void phase_save_loop(const char *file, uint32_t n, const char *piddir)
{
    mpikvs_t *kvs = open_table();

    put_keys(kvs, n);
    write_pid(piddir);
    mt_phase("save-loop");
    for (;;) {
        int rc = mpikvs_save(kvs, file);
        if (rc != MPIKVS_OK)
            mt_abort(mpikvs_last_error(kvs));
    }
}

/*
 * The ranks' mpikvs_save calls made equal again (mpikvs(3): each save's
 * messages carry its number, and ranks stay in step while they call it
 * equally often).  A loop that saves until its own save fails can end
 * one call apart: when the stop falls in a save's last step, a rank
 * that was not stopped may give up on that save while the stopped one,
 * resumed, finishes it and fails the next.  The rank behind makes one
 * save more, alone: it fails within MPIKVS_TIMEOUT.
 */
static void stay_in_step(mpikvs_t *kvs, const char *file, int saves)
{
    int most = saves;

    MPI_Allreduce(&saves, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (saves < most)
        mt_note("rank %d made %d saves, another %d: one more, alone",
                rank, saves, most);
    for (; saves < most; saves++) {
        int rc = mpikvs_save(kvs, file);
        EXPECT(rc != MPIKVS_OK, "a save alone failed: %s (%s)",
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Saves until a save fails: the script stops rank 1 in one (see the
 * head of this file). */
static void phase_save_stop(const char *file, uint32_t n, const char *dir)
{
    mpikvs_t *kvs = open_table();
    unsigned char k[KSIZE], v[VSIZE], want[VSIZE];
    char name[1100];
    double t0;
    int rc, saves = 0;

    put_keys(kvs, n);
    write_pid(dir);
    mt_phase("save-stop");
    do {
        t0 = MPI_Wtime();
        rc = mpikvs_save(kvs, file);
        saves++;
    } while (rc == MPIKVS_OK);
    EXPECT(rc == MPIKVS_ERR_STALLED, "a save with rank 1 stopped: %s (%s)",
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    if (rank == 0) {
        FILE *f;
        mt_note("save %d, rank 1 stopped: %s after %.1f s: %s", saves,
                mpikvs_strerror(rc), MPI_Wtime() - t0,
                mpikvs_last_error(kvs));
        EXPECT(partials_of(file) == 0, "a partial file was left");
        snprintf(name, sizeof(name), "%s/stalled", dir);
        if (!(f = fopen(name, "w")) || fclose(f))
            mt_abort("cannot write the stalled file");
    } else {
        mt_note("rank 1's save %d once resumed: %s", saves,
                mpikvs_strerror(rc));
    }
    /* both here: rank 1 was resumed */
    MPI_Barrier(MPI_COMM_WORLD);
    stay_in_step(kvs, file, saves);
    /* the handle works as before */
    for (uint32_t i = 0; i < n; i += 97) {
        mt_make_key(TAG, i, 7, k, KSIZE);
        mt_make_value(k, KSIZE, i + 1000u, want, VSIZE);
        rc = mpikvs_get(kvs, k, v);
        EXPECT(rc == MPIKVS_OK && !memcmp(v, want, VSIZE),
               "get %u after the stop: %s", i, mpikvs_strerror(rc));
    }
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence after the stop");
    rc = mpikvs_save(kvs, file);
    EXPECT(rc == MPIKVS_OK, "the save after the stop: %s: %s",
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

/* Loads file until killed (the script kills rank 1 in the middle of a
 * load: loading is all the loop does); the pid files once one load
 * worked. */
static void phase_load_loop(const char *file, const char *piddir)
{
    mpikvs_t *kvs = open_table();
    bool first = true;

    mt_phase("load-loop");
    for (;;) {
        int rc = mpikvs_load(kvs, file, MPIKVS_LOAD_MERGE, NULL);
        if (rc != MPIKVS_OK)
            mt_abort(mpikvs_last_error(kvs));
        if (first)
            write_pid(piddir);
        first = false;
    }
}

static void phase_check(const char *file, uint32_t n)
{
    mpikvs_t *kvs = open_table();

    expect_loads(kvs, file, n);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

static void phase_full(const char *file, uint32_t n)
{
    mpikvs_t *kvs = open_table();
    int rc;

    put_keys(kvs, n);
    rc = mpikvs_save(kvs, file);
    EXPECT(rc == MPIKVS_OK, "the first save: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    /* the old file and the new one do not fit together */
    rc = mpikvs_save(kvs, file);
    EXPECT(rc != MPIKVS_OK, "a save on a full file system returned OK");
    if (rank == 0)
        mt_note("the save on a full file system: %s: %s",
                mpikvs_strerror(rc), mpikvs_last_error(kvs));
    expect_loads(kvs, file, n);
    if (rank == 0)
        EXPECT(partials_of(file) == 0, "a partial file was left");
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

static void put64(unsigned char *h, size_t at, uint64_t v)
{
    memcpy(h + at, &v, sizeof(v));
}

/* Rank 0: dst is src's header with a block shape whose size wraps
 * around (16 + block_entries * 96 == 2^64 * 3 + 16), its checksum right,
 * and one 16-byte block that claims 40 entries and verifies. */
static void write_wrapped(const char *src, const char *dst)
{
    unsigned char h[256 + 16];
    uint64_t count = 40, sum;
    FILE *in = fopen(src, "rb"), *out;

    if (!in || fread(h, 1, 256, in) != 256)
        mt_abort("cannot read the saved file's header");
    fclose(in);
    put64(h, 56, UINT64_C(1) << 59);        /* block_entries */
    put64(h, 64, 16);                       /* block_bytes */
    put64(h, 72, 1);                        /* blocks */
    put64(h, 80, count);                    /* entries */
    put64(h, 248, XXH3_64bits(h, 248));
    /* block 0: its count, the checksum of its (no) bytes */
    sum = XXH3_64bits_withSeed(h + 256 + 16, 0,
                               UINT64_C(0x6d70696b76736276) ^ count);
    put64(h, 256, count);
    put64(h, 264, sum);
    out = fopen(dst, "wb");
    if (!out || fwrite(h, 1, sizeof(h), out) != sizeof(h) || fclose(out))
        mt_abort("cannot write the crafted file");
}

static int count_local(const void *key, const void *value, void *arg)
{
    (void)key;
    (void)value;
    (*(long *)arg)++;
    return 0;
}

static void phase_crafted(const char *file, const char *dir)
{
    char wrap[1100], fifo[1100], sub[1100];
    mpikvs_t *kvs = open_table();
    long local = 0;
    int rc;

    snprintf(wrap, sizeof(wrap), "%s/wrap.kvs", dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo.kvs", dir);
    snprintf(sub, sizeof(sub), "%s/dir.kvs", dir);
    if (rank == 0) {
        write_wrapped(file, wrap);
        if (mkfifo(fifo, 0600) != 0 || mkdir(sub, 0700) != 0)
            mt_abort("cannot make the FIFO or the directory");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    mt_phase("crafted: wrapped block size");
    rc = mpikvs_load(kvs, wrap, 0, NULL);
    EXPECT(rc == MPIKVS_ERR_CORRUPT, "a header whose block size wraps: %s "
           "(%s), want MPIKVS_ERR_CORRUPT", mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    if (rank == 0)
        mt_note("wrapped block size refused: %s", mpikvs_last_error(kvs));
    /* merged: whatever the load before did, these are refused for what
     * they are */
    mt_phase("crafted: FIFO");
    rc = mpikvs_load(kvs, fifo, MPIKVS_LOAD_MERGE, NULL);
    EXPECT(rc == MPIKVS_ERR_FOREIGN && strstr(mpikvs_last_error(kvs),
                                              "FIFO"),
           "a FIFO: %s (%s), want MPIKVS_ERR_FOREIGN naming a FIFO",
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    if (rank == 0)
        mt_note("FIFO refused: %s", mpikvs_last_error(kvs));
    mt_phase("crafted: directory");
    rc = mpikvs_load(kvs, sub, MPIKVS_LOAD_MERGE, NULL);
    EXPECT(rc == MPIKVS_ERR_FOREIGN, "a directory: %s (%s)",
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    mpikvs_foreach_local(kvs, count_local, &local);
    EXPECT(local == 0, "%ld entries after refused loads", local);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

static void phase_open_fifo(void)
{
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, NULL, &kvs);

    EXPECT(rc == MPIKVS_ERR_FOREIGN && !kvs,
           "open with a FIFO to load: %s (%s), want MPIKVS_ERR_FOREIGN",
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
    if (rank == 0)
        mt_note("open refused the FIFO: %s", mpikvs_last_error(NULL));
    if (kvs)
        mpikvs_close(&kvs);
}

static void phase_noclose(uint32_t n)
{
    mpikvs_t *kvs = open_table();
    int late = size - 1, rc, got;

    put_keys(kvs, n);
    mt_phase("noclose: close");
    if (rank != late) {
        rc = mpikvs_close(&kvs);
        const char *msg = mpikvs_last_error(NULL);
        EXPECT(rc == MPIKVS_ERR_STALLED, "close returned %d (%s: %s), "
               "want MPIKVS_ERR_STALLED", rc, mpikvs_strerror(rc), msg);
        EXPECT(strstr(msg, "not saved") &&
                   strstr(msg, "MPIKVS_CLOSE_TIMEOUT"),
               "the message says the table was not saved, and why: "
               "\"%s\"", msg);
        mt_note("returned from close: %s", msg);
        MPI_Send(&rc, 1, MPI_INT, late, 7, MPI_COMM_WORLD);
    } else {
        for (int r = 0; r < size - 1; r++) {
            MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            EXPECT(got == MPIKVS_ERR_STALLED, "a rank's close: %d", got);
        }
        mt_phase("noclose: the late close");
        rc = mpikvs_close(&kvs);
        EXPECT(rc == MPIKVS_ERR_STALLED,
               "the late close returned %d (%s), want MPIKVS_ERR_STALLED",
               rc, mpikvs_strerror(rc));
        mt_note("the late close: %s", mpikvs_last_error(NULL));
    }
}

static void phase_syscall(const char *file, uint32_t n, const char *kind)
{
    mpikvs_t *kvs = open_table();
    int rc;

    put_keys(kvs, n);
    rc = mpikvs_save(kvs, file);
    EXPECT(rc == MPIKVS_OK, "the good save: %s: %s", mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    MPI_Barrier(MPI_COMM_WORLD);
    mt_phase(kind);
    /* every rank fails the call: the save's agreement is what is tested,
     * not which rank saw it first */
    if (fail_syscalls(kind) != 0)
        mt_abort("cannot make the calls fail (seccomp)");
    rc = mpikvs_save(kvs, file);
    EXPECT(rc != MPIKVS_OK, "a save with %s failing returned OK", kind);
    EXPECT(strstr(mpikvs_last_error(kvs), "mpikvs_save") != NULL,
           "the error names the save: \"%s\"", mpikvs_last_error(kvs));
    if (rank == 0) {
        mt_note("%s failing: %s: %s", kind, mpikvs_strerror(rc),
                mpikvs_last_error(kvs));
        EXPECT(partials_of(file) == 0, "%s failing: a partial file was "
               "left", kind);
    }
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc >= 5 && !strcmp(argv[1], "save"))
        phase_save(argv[2], (uint32_t)atoi(argv[3]), atoi(argv[4]));
    else if (argc >= 5 && !strcmp(argv[1], "save-loop"))
        phase_save_loop(argv[2], (uint32_t)atoi(argv[3]), argv[4]);
    else if (argc >= 5 && !strcmp(argv[1], "save-stop"))
        phase_save_stop(argv[2], (uint32_t)atoi(argv[3]), argv[4]);
    else if (argc >= 4 && !strcmp(argv[1], "load-loop"))
        phase_load_loop(argv[2], argv[3]);
    else if (argc >= 4 && !strcmp(argv[1], "check"))
        phase_check(argv[2], (uint32_t)atoi(argv[3]));
    else if (argc >= 4 && !strcmp(argv[1], "full"))
        phase_full(argv[2], (uint32_t)atoi(argv[3]));
    else if (argc >= 4 && !strcmp(argv[1], "crafted"))
        phase_crafted(argv[2], argv[3]);
    else if (argc >= 2 && !strcmp(argv[1], "open-fifo"))
        phase_open_fifo();
    else if (argc >= 3 && !strcmp(argv[1], "noclose"))
        phase_noclose((uint32_t)atoi(argv[2]));
    else if (argc >= 5 && !strcmp(argv[1], "syscall"))
        phase_syscall(argv[2], (uint32_t)atoi(argv[3]), argv[4]);
    else
        mt_abort("usage: test_persist_fault save|save-loop|save-stop|load-loop|"
                 "check|"
                 "full|crafted|"
                 "open-fifo|noclose|syscall ...");
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
