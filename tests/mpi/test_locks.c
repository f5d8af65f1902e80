/*
 * test_locks.c - the fine-lock mode's bucket locks across opens: a lock
 * that a killed process left behind, a second open of a table in use,
 * and a writer among readers.  run-lock-tests.sh drives it; it is built
 * from the library's sources, so that it can hold a bucket lock itself.
 *
 *   test_locks setup DIR             a job-scope table "kvs" as the SPANK
 *                                    plugin would make it (layout and an
 *                                    unformatted data region in DIR), so
 *                                    that it outlives every open
 *   test_locks hold DIR              (MPI, np 1) open it in fine-lock mode,
 *                                    put key A, take A's bucket lock and a
 *                                    reader's +1 on key B's bucket, write
 *                                    DIR/held (its pid), wait to be killed
 *   test_locks hold-open DIR         (MPI, np 1) open, write DIR/held, wait
 *                                    for DIR/release, close
 *   test_locks refused DIR           (MPI, np 1) the open must be refused,
 *                                    naming the table and DIR/held's pid
 *   test_locks use DIR [A-VALUE]     (MPI) the open works; gets and puts on
 *                                    A's and B's buckets work (A holds
 *                                    A-VALUE's put if given); a second
 *                                    open in this process is refused
 *   test_locks starve DIR            (MPI, np 4, no layout) ranks 1 and 2
 *                                    relay a read lock on one bucket so
 *                                    that it is never free; rank 3 must get
 *                                    its write lock within a bounded number
 *                                    of relay steps (rank 0 serves)
 *
 * Facts pass through files (DIR/held) written before anything can kill
 * the writer, never through the output of a killed process.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "key.h"
#include "ops.h"
#include "job_layout.h"
#include "mpitest.h"
#include "region.h"

#define KS        16u
#define VS        16u
#define JOB       "locktest"
#define NODE      "n1"
#define DATA      (UINT64_C(1) << 20)
#define RELAY     1000u      /* relay steps the readers make after the
                              * writer started */
#define BOUND     100u       /* relay steps the writer may wait */
#define GIVE_UP   20000u    /* polls a reader waits for its successor */

static void nap(void)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* The data region's body, before it has a name. */
static int fill_data(void *base, uint64_t size, void *arg,
                     mpikvs_error_t *err)
{
    (void)arg;
    return kvshm_data_init((struct kvshm_data_control *)(
                               (char *)base + KVSHM_DATA_CONTROL_OFFSET),
                           size, 4, NULL, "kvs", err);
}

static int setup(const char *dir)
{
    struct kvshm_job_table table;
    struct kvshm_job_layout l = {
        .scope = KVSHM_SCOPE_JOB, .step = 0, .nnodes = 1, .node_index = 0,
        .tasks_on_node = 4, .dht_size = DATA, .ntables = 1, .tables = &table,
        .nodelist = (char *)NODE, .config_text = NULL,
    };
    struct kvshm_region_spec s = {
        .dir = dir, .job = JOB, .node = NODE, .uid = KVSHM_ANY_UID,
        .gid = (gid_t)-1, .step = 0,
    };
    struct kvshm_region *r = NULL;
    mpikvs_error_t err;
    int rc;

    rc = kvshm_job_table_tags(KVSHM_SCOPE_JOB, 0, "kvs", &table, &err);
    if (rc == MPIKVS_OK) {
        table.data_bytes = DATA;
        table.tier_bytes = 0;
        table.tier_prefix[0] = '\0';
        snprintf(l.job, sizeof(l.job), JOB);
        snprintf(l.node, sizeof(l.node), NODE);
        l.request_hash = kvshm_job_request_hash(l.dht_size, NULL);
        s.tag = "layout";
        rc = kvshm_job_layout_create(&s, &l, &err);
    }
    if (rc == MPIKVS_OK) {
        /* as the plugin makes it without a config: the first open lays
         * out its buckets */
        s.tag = table.data_tag;
        s.kind = KVSHM_KIND_DATA;
        s.size = DATA;
        s.fill = fill_data;
        rc = kvshm_region_create(&s, &r, &err);
        kvshm_region_close(&r);
    }
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "test_locks setup: %s\n", err.text);
        return 1;
    }
    printf("%s/mpikvs.%s.%s.layout\n", dir, JOB, NODE);
    return 0;
}

/* Write DIR/NAME with text, whole or not at all. */
static void write_file(const char *dir, const char *name, const char *text)
{
    char tmp[512], path[512];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path)) {
        fprintf(stderr, "test_locks: cannot write %s: %s\n", path,
                strerror(errno));
        exit(2);
    }
}

static long read_pid(const char *dir)
{
    char path[512];
    long pid = -1;
    FILE *f;

    snprintf(path, sizeof(path), "%s/held", dir);
    if ((f = fopen(path, "r"))) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = -1;
        fclose(f);
    }
    return pid;
}

static void make_key(unsigned char *key, uint64_t n)
{
    memset(key, 0, KS);
    memcpy(key, &n, sizeof(n));
}

static void make_value(unsigned char *v, uint64_t n)
{
    memset(v, (int)(n & 0xff), VS);
    memcpy(v, &n, sizeof(n));
}

/* Keys A and B: the first two keys (0, 1, ...) with different buckets;
 * the same in every open of the same table. */
static void pick_keys(mpikvs_t *kvs, unsigned char *a, unsigned char *b)
{
    struct kvs_key ka, kb;
    uint64_t n = 1;

    make_key(a, 0);
    kvs_key_make(kvs, a, &ka);
    do {
        make_key(b, n++);
        kvs_key_make(kvs, b, &kb);
    } while (kb.bucket == ka.bucket);
}

static mpikvs_t *open_table(void)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .mode = "fine-lock"};
    mpikvs_t *kvs = NULL;
    int rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);

    EXPECT(rc == MPIKVS_OK, "mpikvs_open = %d (%s): %s", rc,
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
    return rc == MPIKVS_OK ? kvs : NULL;
}

static int bucket_target(mpikvs_t *kvs, const struct kvs_key *k)
{
    return kvs->leaders[k->node];
}

static void hold(const char *dir)
{
    unsigned char a[KS], b[KS], v[VS];
    struct kvs_key ka, kb;
    char text[32];
    mpikvs_t *kvs = open_table();
    int rc;

    if (!kvs)
        return;
    pick_keys(kvs, a, b);
    make_value(v, 1234);
    rc = mpikvs_put(kvs, a, v);
    EXPECT(rc == MPIKVS_OK, "put A = %d: %s", rc, mpikvs_last_error(kvs));
    kvs_key_make(kvs, a, &ka);
    kvs_key_make(kvs, b, &kb);
    rc = kvs_bucket_lock(kvs, ka.node, kvs_lock_disp(kvs, ka.bucket), true);
    EXPECT(rc == MPIKVS_OK, "write lock of A's bucket = %d", rc);
    rc = kvs_bucket_lock(kvs, kb.node, kvs_lock_disp(kvs, kb.bucket), false);
    EXPECT(rc == MPIKVS_OK, "read lock of B's bucket = %d", rc);
    if (mt_failed_)
        return;
    snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    write_file(dir, "held", text);
    mt_phase("holding the locks, waiting for SIGKILL");
    for (;;)
        pause();   /* the watchdog ends it if nobody kills it */
}

static void hold_open(const char *dir)
{
    char text[32], path[512];
    mpikvs_t *kvs = open_table();

    if (!kvs)
        return;
    snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    write_file(dir, "held", text);
    snprintf(path, sizeof(path), "%s/release", dir);
    mt_phase("waiting for DIR/release");
    while (access(path, F_OK) != 0)
        nap();   /* bounded by the watchdog */
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

static void refused(const char *dir)
{
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .mode = "fine-lock"};
    mpikvs_t *kvs = NULL;
    long holder = read_pid(dir);
    char pid[64];
    int rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    const char *msg = mpikvs_last_error(NULL);

    snprintf(pid, sizeof(pid), "pid %ld", holder);
    EXPECT(rc != MPIKVS_OK, "a second fine-lock open of the table worked "
                            "while pid %ld holds it", holder);
    EXPECT(strstr(msg, "table 'kvs'") && strstr(msg, pid) &&
               strstr(msg, "still running"),
           "the refusal names neither the table nor %s: \"%s\"", pid, msg);
    mt_note("refused: %s", msg);
    if (kvs)
        mpikvs_close(&kvs);
}

static void use(long a_value)
{
    unsigned char a[KS], b[KS], v[VS], got[VS];
    mpikvs_t *kvs = open_table(), *second = NULL;
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .mode = "fine-lock"};
    int rc;

    if (!kvs)
        return;
    pick_keys(kvs, a, b);
    mt_phase("get and put on the buckets the killed process held");
    rc = mpikvs_get(kvs, a, got);
    if (a_value >= 0) {
        make_value(v, (uint64_t)a_value);
        EXPECT(rc == MPIKVS_OK && memcmp(v, got, VS) == 0,
               "get A = %d (%s), want the killed process's value: %s", rc,
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
    } else {
        EXPECT(rc == MPIKVS_OK || rc == MPIKVS_MISS, "get A = %d (%s): %s",
               rc, mpikvs_strerror(rc), mpikvs_last_error(kvs));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    make_value(v, 100u + (unsigned)mt_rank_);
    rc = mpikvs_put(kvs, b, v);
    EXPECT(rc == MPIKVS_OK, "put B = %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    rc = mpikvs_get(kvs, b, got);
    EXPECT(rc == MPIKVS_OK, "get B = %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank_ == 0) {
        make_value(v, 777);
        rc = mpikvs_put(kvs, a, v);
        EXPECT(rc == MPIKVS_OK, "put A = %d (%s): %s", rc,
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    make_value(v, 777);
    rc = mpikvs_get(kvs, a, got);
    EXPECT(rc == MPIKVS_OK && memcmp(v, got, VS) == 0,
           "get A after the put = %d (%s): %s", rc, mpikvs_strerror(rc),
           mpikvs_last_error(kvs));
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence");

    mt_phase("a second open of the table in this process");
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &second);
    EXPECT(rc != MPIKVS_OK, "a second open of the same fine-lock table "
                            "worked while the first is open");
    if (mt_rank_ == 0)
        EXPECT(strstr(mpikvs_last_error(NULL), "this process"),
               "the refusal does not say the holder is this process: %s",
               mpikvs_last_error(NULL));
    if (second)
        mpikvs_close(&second);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
    mt_phase("an open after the close");
    if ((kvs = open_table()))
        EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
}

/* ---- a writer among a relay of readers ---- */

/* Keep MPI going: rank 0 is the target of every lock operation. */
static void progress(void)
{
    int flag;

    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
               MPI_STATUS_IGNORE);
    sched_yield();
}

struct relay {
    uint64_t step;             /* relay steps done */
    uint64_t held[4];          /* step + 1 at which the rank took the
                                * read lock it holds; 0: none */
    uint64_t trying[4];        /* step + 1 at which it is in
                                * kvs_bucket_lock; 0: not */
    uint32_t stopped;          /* the relay is over */
    uint32_t finished;         /* ranks 1 to 3 that are done */
    uint64_t writer_start;     /* step + 1 when the writer began; 0: not */
    uint64_t writer_got;       /* step + 1 when it got the lock */
    uint64_t give_ups;         /* times a holder stopped waiting */
};

#define LOAD(p)     __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)

static struct relay *map_relay(const char *dir)
{
    char path[512];
    struct relay *r;
    int fd;

    snprintf(path, sizeof(path), "%s/relay", dir);
    if (mt_rank_ == 0) {
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, sizeof(*r)) != 0)
            mt_abort("cannot make DIR/relay");
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    fd = open(path, O_RDWR);
    r = fd < 0 ? MAP_FAILED
               : mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED,
                      fd, 0);
    if (fd >= 0)
        close(fd);
    if (r == MAP_FAILED)
        mt_abort("cannot map DIR/relay");
    return r;
}

/* Ranks 1 and 2: step i, rank 1 + i % 2 holds the read lock; the other
 * takes it too, then the holder lets go, so that the bucket never is
 * without a reader.  The taker decides when the relay is over: once the
 * writer is through, or RELAY steps after it began. */
static void relay_reader(mpikvs_t *kvs, struct relay *r, uint32_t node,
                         uint64_t disp)
{
    const int me = mt_rank_;
    int rc;

    if (me == 1) {
        rc = kvs_bucket_lock(kvs, node, disp, false);
        EXPECT(rc == MPIKVS_OK, "first read lock = %d", rc);
        STORE(&r->held[1], 1);
    }
    for (uint64_t i = 0;; i++) {
        const int holder = 1 + (int)(i % 2), next = 3 - holder;

        if (me == next) {
            uint64_t start;
            while (LOAD(&r->step) != i)
                sched_yield();
            start = LOAD(&r->writer_start);
            if (LOAD(&r->writer_got) || (start && i + 1 >= start + RELAY)) {
                STORE(&r->stopped, 1);
                break;
            }
            STORE(&r->trying[me], i + 1);
            rc = kvs_bucket_lock(kvs, node, disp, false);
            STORE(&r->trying[me], 0);
            EXPECT(rc == MPIKVS_OK, "read lock = %d: %s", rc,
                   mpikvs_last_error(kvs));
            if (rc != MPIKVS_OK)
                mt_abort("a read lock failed");
            STORE(&r->held[me], i + 1);
        } else {
            unsigned polls = 0;
            /* a successor that cannot get in (a writer waits) is not
             * waited for forever */
            while (LOAD(&r->held[next]) != i + 1 && !LOAD(&r->stopped) &&
                   !(LOAD(&r->trying[next]) == i + 1 && ++polls > GIVE_UP))
                sched_yield();
            if (polls > GIVE_UP)
                __atomic_fetch_add(&r->give_ups, 1, __ATOMIC_RELAXED);
            STORE(&r->held[me], 0);
            rc = kvs_bucket_unlock(kvs, node, disp, false);
            EXPECT(rc == MPIKVS_OK, "read unlock = %d", rc);
            STORE(&r->step, i + 1);
            if (LOAD(&r->stopped))
                break;
        }
    }
}

/* Rank 3: a write lock on the bucket, once the relay runs. */
static void relay_writer(mpikvs_t *kvs, struct relay *r, uint32_t node,
                         uint64_t disp)
{
    uint64_t waited;
    int rc;

    while (LOAD(&r->step) < 10)
        sched_yield();
    STORE(&r->writer_start, LOAD(&r->step) + 1);
    rc = kvs_bucket_lock(kvs, node, disp, true);
    STORE(&r->writer_got, LOAD(&r->step) + 1);
    EXPECT(rc == MPIKVS_OK, "write lock = %d: %s", rc,
           mpikvs_last_error(kvs));
    if (rc == MPIKVS_OK)
        EXPECT(kvs_bucket_unlock(kvs, node, disp, true) == MPIKVS_OK,
               "write unlock");
    waited = LOAD(&r->writer_got) - LOAD(&r->writer_start);
    mt_note("the writer waited %llu relay steps (bound %u, the relay goes "
            "on for %u)",
            (unsigned long long)waited, BOUND, RELAY);
    EXPECT(waited <= BOUND,
           "a writer waited %llu relay steps of readers (more than %u): "
           "readers starve writers",
           (unsigned long long)waited, BOUND);
}

static void starve(const char *dir)
{
    unsigned char a[KS], b[KS];
    struct kvs_key k;
    struct relay *r;
    mpikvs_t *kvs;
    int size;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        EXPECT(0, "starve runs on 4 ranks, not %d", size);
        return;
    }
    r = map_relay(dir);
    if (!(kvs = open_table()))
        return;
    pick_keys(kvs, a, b);
    kvs_key_make(kvs, a, &k);
    const int target = bucket_target(kvs, &k);
    const uint64_t disp = kvs_lock_disp(kvs, k.bucket);

    mt_phase("relay");
    if (mt_rank_ == 0) {
        /* the lock word's rank (the node leader) only serves: osc
         * pt2pt does others' atomics when the target is inside MPI */
        EXPECT(target == 0, "the bucket's node leader is rank %d", target);
        while (LOAD(&r->finished) < 3)
            progress();
    } else {
        if (mt_rank_ == 3)
            relay_writer(kvs, r, k.node, disp);
        else
            relay_reader(kvs, r, k.node, disp);
        __atomic_fetch_add(&r->finished, 1, __ATOMIC_ACQ_REL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank_ == 0)
        mt_note("%llu relay steps, %llu give-ups",
                (unsigned long long)LOAD(&r->step),
                (unsigned long long)LOAD(&r->give_ups));
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close");
    munmap(r, sizeof(*r));
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 2 ? argv[1] : "", *dir = argc > 2 ? argv[2] : "";

    if (strcmp(cmd, "setup") == 0)
        return setup(dir);
    if (!*cmd) {
        fprintf(stderr, "usage: test_locks setup|hold|hold-open|refused|"
                        "use|starve DIR [A-VALUE]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    if (strcmp(cmd, "hold") == 0)
        hold(dir);
    else if (strcmp(cmd, "hold-open") == 0)
        hold_open(dir);
    else if (strcmp(cmd, "refused") == 0)
        refused(dir);
    else if (strcmp(cmd, "use") == 0)
        use(argc > 3 ? strtol(argv[3], NULL, 10) : -1);
    else if (strcmp(cmd, "starve") == 0)
        starve(dir);
    else
        EXPECT(0, "unknown command %s", cmd);
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
}
