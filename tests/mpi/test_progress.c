/*
 * test_progress.c - a remote node served while its ranks compute, and
 * the UCX transport's faults (run-progress-tests.sh runs it).  np=2 on
 * MPIKVS_VIRTUAL_NODES=2: rank 1 is node 1 and its leader.
 *
 *   test_progress MODE compute DIR
 *       rank 1 puts keys homed on node 1, fence; it creates DIR/computing
 *       and computes (no MPI or mpikvs call) until DIR/got appears, for at
 *       most HANG_GUARD_S seconds, a hang guard.  Rank 0 waits for
 *       DIR/computing, gets those keys (one by one and as a batch), puts
 *       one more and reads it back, then writes what it read to DIR/got.
 *       Asserted: rank 1 saw DIR/got inside its loop (an order of events,
 *       no timing bound), and every value is right.
 *   test_progress MODE contrast DIR
 *       the same with rank 1 computing for CONTRAST_MS only, then
 *       entering MPI; nothing asserted about the order: it says whether
 *       the gets completed during the computation or only after (for the
 *       mpi transport over osc pt2pt, which needs the target in MPI).
 *   test_progress MODE no-ucx
 *       an open where UCX cannot start (the script sets MPIKVS_UCX_TLS so).
 *       MPIKVS_TRANSPORT=ucx: every rank fails with MPIKVS_ERR_TRANSPORT
 *       and a message naming UCX.  auto: every rank opens the mpi
 *       transport, and a key put on one node is read on the other.
 *   test_progress MODE killed DIR
 *       after a fence rank 1 SIGKILLs itself; once it is gone rank 0 gets
 *       and puts keys homed on node 1 (a get, a put, a batch, a get):
 *       each must return MPIKVS_ERR_STALLED, naming node 1, not hang
 *       (where UCX may use shared memory, node 1's region is mapped
 *       here: the calls succeed);
 *       keys of node 0 still work, and close gives up on rank 1 after
 *       MPIKVS_CLOSE_TIMEOUT.  Rank 0 writes its checks to
 *       DIR/result ("PASS ..."/"FAIL ..." lines, then "done P passed F
 *       failed") before it ends, and the script asserts on that file:
 *       mpirun may end rank 0 any time after rank 1's death.
 *   test_progress MODE stopped
 *       with MPIKVS_TIMEOUT=2, rank 0 stops rank 1 (SIGSTOP: node 1's
 *       leader and its helper) while rank 1 waits in a barrier, and calls
 *       a get, a second get, a put, a put-if-absent, a batch and a batch
 *       started then waited for, on keys of node 1: each returns
 *       MPIKVS_ERR_STALLED naming node 1, the first after the timeout,
 *       the others at once ("not tried": the node is remembered); a key
 *       of node 0 still works.  Then rank 0 resumes rank 1 (SIGCONT):
 *       gets and puts of node 1's keys work again, and the buffer of the
 *       first get, given up on, still holds what it held (its late
 *       answer is dropped); with MPIKVS_UCX_OPS=rma node 1 stays given
 *       up on instead (its endpoint closed: nothing in flight can land),
 *       and its keys return MPIKVS_ERR_STALLED.  Everything after
 *       resuming is checked by both ranks' counts.
 *
 * Built from the library's sources (tests/mpi/local.mk) for kvs_key_make,
 * to pick keys by their home node.  See mpitest.h for the output.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "mt_key_home.h"
#include "ops.h"

#define KS           80u
#define VS           104u
#define NKEYS        32
#define HANG_GUARD_S 60     /* rank 1's computation: a hang guard only */
#define CONTRAST_MS  1000   /* rank 1's computation in the contrast case */
#define WAIT_S       60     /* waiting for a file or a death: hang guard */

static int         rank, size;
static const char *mode, *dir;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ms_since(uint64_t t0)
{
    return (double)(now_ns() - t0) / 1e6;
}

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static bool file_exists(const char *name)
{
    char p[4096];

    path_of(p, sizeof p, name);
    return access(p, F_OK) == 0;
}

/* Write text to DIR/name whole: a reader never sees it half written. */
static void write_file(const char *name, const char *text)
{
    char p[4096], tmp[4096];
    FILE *f;

    path_of(p, sizeof p, name);
    path_of(tmp, sizeof tmp, "tmp");
    f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, p) != 0)
        mt_abort("cannot write a file to the test's directory");
}

static void read_file(const char *name, char *buf, size_t len)
{
    char p[4096];
    FILE *f;
    size_t n = 0;

    path_of(p, sizeof p, name);
    f = fopen(p, "r");
    if (f) {
        n = fread(buf, 1, len - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
}

/* Poll for DIR/name, at most WAIT_S seconds (not MPI: a file). */
static bool wait_for_file(const char *name)
{
    uint64_t t0 = now_ns();
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};

    while (!file_exists(name)) {
        if (now_ns() - t0 > WAIT_S * 1000000000ull)
            return false;
        nanosleep(&pause, NULL);
    }
    return true;
}

/* The table every case opens. */
static mpikvs_options_t table_options(void)
{
    mpikvs_options_t o;

    o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    o.key_size = KS;
    o.value_size = VS;
    o.size_per_node = 1u << 20;
    o.mode = mode;
    return o;
}

static bool mapped_here(void);

/* Over ucx, whether the other node's keys are shipped whole to it: where
 * it is reached through UCX (MPIKVS_UCX_TLS=tcp,self here, which has no
 * RDMA), in the lock-free mode, unless MPIKVS_UCX_OPS=rma. */
static void check_shipping(mpikvs_t *kvs)
{
    const char *ops = getenv("MPIKVS_UCX_OPS");
    bool want = !mapped_here() && strcmp(mode, "lockfree") == 0 &&
                !(ops && strcmp(ops, "rma") == 0);
    bool ships = kvs_shipped(kvs, (uint32_t)(1 - rank));

    EXPECT(ships == want,
           "node %d's keys are %sshipped whole (MPIKVS_UCX_TLS=%s "
           "MPIKVS_UCX_OPS=%s, mode %s)",
           1 - rank, ships ? "" : "not ", getenv("MPIKVS_UCX_TLS"),
           ops ? ops : "(unset)", mode);
    if (rank == 0)
        mt_note("node 1's keys: %s", ships ? "shipped whole"
                                           : "buckets read, slots written");
}

static mpikvs_t *open_table(void)
{
    mpikvs_options_t o = table_options();
    mpikvs_t *kvs = NULL;
    int rc;

    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "rank %d: mpikvs_open: %s: %s\n", rank,
                mpikvs_strerror(rc), mpikvs_last_error(NULL));
        mt_abort("mpikvs_open failed");
    }
    const char *want = getenv("MPIKVS_TRANSPORT");
    if (want && strcmp(want, "auto"))
        EXPECT(strcmp(mpikvs_transport(kvs), want) == 0,
               "MPIKVS_TRANSPORT=%s opened transport %s", want,
               mpikvs_transport(kvs));
    if (strcmp(mpikvs_transport(kvs), "ucx") == 0)
        check_shipping(kvs);
    return kvs;
}

/* Key i of tag whose home is node: the first of a deterministic row. */
static void key_on(mpikvs_t *kvs, uint32_t tag, uint32_t i, uint32_t node,
                   unsigned char *key)
{
    mt_key_home(kvs, tag, i, node, key, KS);
}

/* Rank 1's computation: arithmetic, no MPI or mpikvs call, until DIR/got
 * appears or limit_ms has passed.  Returns whether it saw DIR/got. */
static bool compute_until_got(unsigned limit_ms, double *spent_ms)
{
    uint64_t t0 = now_ns();
    volatile uint64_t x = 1;
    bool got = false;

    for (;;) {
        for (int i = 0; i < 20000; i++)   /* some 20 to 100 us */
            x = mt_mix(x + (uint64_t)i);
        if (file_exists("got")) {
            got = true;
            break;
        }
        if (now_ns() - t0 > (uint64_t)limit_ms * 1000000u)
            break;
    }
    *spent_ms = ms_since(t0);
    return got;
}

/* ---- compute and contrast ---- */

/* Rank 0 comes here once it has written DIR/got, rank 1 to wait for
 * that in MPI (bounded: MPI_Test, not MPI_Wait). */
static void await_rank0(void)
{
    MPI_Request req;
    int done = 0;
    uint64_t t0 = now_ns();

    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done && now_ns() - t0 < WAIT_S * 1000000000ull)
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done)
        mt_abort("rank 0 did not write its result");
}

static void compute(bool assert_order)
{
    static unsigned char keys[NKEYS + 1][KS], vals[NKEYS + 1][VS];
    mpikvs_t *kvs = open_table();
    const char *tr = mpikvs_transport(kvs);

    if (rank == 0)
        mt_note("transport %s, mode %s", tr, mode);
    for (int i = 0; i <= NKEYS; i++)
        key_on(kvs, 11, (uint32_t)i, 1, keys[i]);
    mt_phase("rank 1 puts its node's keys");
    if (rank == 1)
        for (int i = 0; i < NKEYS; i++) {
            mt_make_value(keys[i], KS, 1, vals[i], VS);
            int rc = mpikvs_put(kvs, keys[i], vals[i]);
            EXPECT(rc == MPIKVS_OK, "put of key %d: %s", i,
                   mpikvs_strerror(rc));
        }
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence: %s",
           mpikvs_last_error(kvs));

    if (rank == 1) {
        double spent;
        bool got;

        mt_phase("rank 1 computes");
        write_file("computing", "1\n");
        got = compute_until_got(assert_order ? HANG_GUARD_S * 1000u
                                             : CONTRAST_MS, &spent);
        if (assert_order) {
            EXPECT(got, "rank 0's gets did not complete while rank 1 "
                        "computed (%.0f ms without MPI: the hang guard)",
                   spent);
        } else {
            mt_note("%s transport: rank 0's gets completed %s rank 1's "
                    "%.0f ms of computation without MPI", tr,
                    got ? "during" : "only after", spent);
        }
        /* into MPI, until rank 0 has written its result: the mpi
         * transport's gets may complete only now */
        mt_phase("rank 1 waits for rank 0's result");
        await_rank0();
        char text[256];
        read_file("got", text, sizeof text);
        EXPECT(strcmp(text, "ok\n") == 0, "what rank 0 read: %s", text);
        /* rank 0's put is in this node's region */
        unsigned char v[VS], want[VS];
        mt_make_value(keys[NKEYS], KS, 2, want, VS);
        int rc = mpikvs_get(kvs, keys[NKEYS], v);
        EXPECT(rc == MPIKVS_OK && memcmp(v, want, VS) == 0,
               "rank 0's put to node 1 during the computation, read on "
               "node 1: %s%s", mpikvs_strerror(rc),
               rc == MPIKVS_OK && memcmp(v, want, VS) ? ", a wrong value"
                                                      : "");
    } else if (rank == 0) {
        static unsigned char got_vals[NKEYS][VS];
        static int status[NKEYS];
        char text[512];
        int bad = 0, rc;
        double worst = 0, t_batch, t_put;

        mt_phase("rank 0 waits for rank 1 to compute");
        if (!wait_for_file("computing"))
            mt_abort("rank 1 never started its computation");
        mt_phase("rank 0 gets keys of node 1 while it computes");
        for (int i = 0; i < NKEYS; i++) {
            unsigned char v[VS];
            uint64_t t0 = now_ns();
            rc = mpikvs_get(kvs, keys[i], v);
            double t = ms_since(t0);
            worst = t > worst ? t : worst;
            if (rc != MPIKVS_OK || !mt_value_ok(keys[i], KS, v, VS, NULL)) {
                bad++;
                EXPECT(0, "get of key %d of node 1: %s (%s)", i,
                       mpikvs_strerror(rc), mpikvs_last_error(kvs));
            }
        }
        uint64_t t0 = now_ns();
        rc = mpikvs_get_batch(kvs, NKEYS, keys, got_vals, status);
        t_batch = ms_since(t0);
        EXPECT(rc == MPIKVS_OK, "get_batch of node 1's keys: %s (%s)",
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
        for (int i = 0; rc == MPIKVS_OK && i < NKEYS; i++)
            if (status[i] != MPIKVS_OK ||
                !mt_value_ok(keys[i], KS, got_vals[i], VS, NULL)) {
                bad++;
                EXPECT(0, "get_batch: key %d: %s", i,
                       mpikvs_strerror(status[i]));
            }
        unsigned char v[VS], back[VS];
        mt_make_value(keys[NKEYS], KS, 2, v, VS);
        t0 = now_ns();
        rc = mpikvs_put(kvs, keys[NKEYS], v);
        t_put = ms_since(t0);
        EXPECT(rc == MPIKVS_OK, "put to node 1: %s (%s)",
               mpikvs_strerror(rc), mpikvs_last_error(kvs));
        rc = mpikvs_get(kvs, keys[NKEYS], back);
        EXPECT(rc == MPIKVS_OK && memcmp(v, back, VS) == 0,
               "get of the key just put to node 1: %s",
               mpikvs_strerror(rc));
        if (rc != MPIKVS_OK || memcmp(v, back, VS))
            bad++;
        mpikvs_stats_t st;
        mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, &st, sizeof st);
        EXPECT(st.remote >= 2 * NKEYS + 1,
               "%llu lookups went through the transport, want %d at least",
               (unsigned long long)st.remote, 2 * NKEYS + 1);
        mt_note("%s: to node 1, %d gets (slowest %.2f ms), a batch of %d "
                "(%.2f ms), a put (%.2f ms)",
                tr, NKEYS, worst, NKEYS, t_batch, t_put);
        snprintf(text, sizeof text, bad ? "%d wrong\n" : "ok\n", bad);
        write_file("got", text);
        await_rank0();
    }
    mt_phase("close");
    int rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close: %s (%s)", mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
}

/* ---- no-ucx ---- */

static void no_ucx(void)
{
    const char *want = getenv("MPIKVS_TRANSPORT");
    bool asked_ucx = want && strcmp(want, "ucx") == 0;
    mpikvs_options_t o = table_options();
    mpikvs_t *kvs = NULL;
    int rc;

    mt_phase("open where UCX cannot start");
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (asked_ucx) {
        const char *msg = mpikvs_last_error(NULL);
        EXPECT(rc == MPIKVS_ERR_TRANSPORT && kvs == NULL,
               "transport ucx where UCX cannot start: %s (%s), want "
               "MPIKVS_ERR_TRANSPORT", mpikvs_strerror(rc), msg);
        EXPECT(strstr(msg, "UCX") != NULL,
               "the message does not name UCX: '%s'", msg);
        EXPECT(mt_all_same(rc, MPI_COMM_WORLD),
               "the ranks' open returned different codes (this: %d)", rc);
        mt_note("ucx where UCX cannot start: %s: %s", mpikvs_strerror(rc),
                msg);
        return;
    }
    EXPECT(rc == MPIKVS_OK, "auto where UCX cannot start: %s (%s)",
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
    if (!mt_all_same(rc, MPI_COMM_WORLD))
        mt_abort("the ranks' open disagree");
    if (rc != MPIKVS_OK)
        return;
    const char *tr = mpikvs_transport(kvs);
    EXPECT(strcmp(tr, "mpi") == 0,
           "auto where UCX cannot start: transport %s, want mpi", tr);
    if (rank == 0)
        mt_note("auto where UCX cannot start: transport %s", tr);
    /* the fallback works: each rank reads what the other put on the
     * other node */
    unsigned char keys[2][KS], v[VS], want_v[VS];
    key_on(kvs, 12, 0, 1, keys[0]);   /* rank 0 puts, homed on node 1 */
    key_on(kvs, 12, 1, 0, keys[1]);   /* rank 1 puts, homed on node 0 */
    mt_phase("put and get over the fallback");
    mt_make_value(keys[rank], KS, 3, v, VS);
    rc = mpikvs_put(kvs, keys[rank], v);
    EXPECT(rc == MPIKVS_OK, "put over the fallback: %s (%s)",
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence: %s",
           mpikvs_last_error(kvs));
    mt_make_value(keys[1 - rank], KS, 3, want_v, VS);
    rc = mpikvs_get(kvs, keys[1 - rank], v);
    EXPECT(rc == MPIKVS_OK && memcmp(v, want_v, VS) == 0,
           "get over the fallback of the other node's key: %s",
           mpikvs_strerror(rc));
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "close: %s (%s)", mpikvs_strerror(rc),
           mpikvs_last_error(NULL));
}

/* ---- killed ---- */

static FILE *result;
static long  r_passed, r_failed;

/* A check of rank 0 in the killed case, into DIR/result at once. */
__attribute__((format(printf, 2, 3)))
static void record(bool ok, const char *fmt, ...)
{
    va_list ap;

    fputs(ok ? "PASS " : "FAIL ", result);
    va_start(ap, fmt);
    vfprintf(result, fmt, ap);
    va_end(ap);
    fputc('\n', result);
    fflush(result);
    if (ok)
        r_passed++;
    else
        r_failed++;
}

/* Is pid gone (or a zombie)? */
static bool dead(pid_t pid)
{
    char p[64], st[512];
    FILE *f;
    size_t n;

    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(p, "r")))
        return true;
    n = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[n] = '\0';
    const char *close_paren = strrchr(st, ')');
    return close_paren && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

/* Where UCX may use shared memory (MPIKVS_UCX_TLS unset), the ucx
 * transport maps a node of this host and reaches it with loads and
 * stores: its region outlives its leader, and the calls on it go on
 * working. */
static bool mapped_here(void)
{
    const char *tls = getenv("MPIKVS_UCX_TLS");

    return !tls || !*tls;
}

/* One call on a key of the dead node, in bounded time (the watchdog and
 * the script's limit bound it; the time it took is a figure, not a
 * check): an error naming it, or, mapped here, success. */
static void on_dead_node(mpikvs_t *kvs, const char *what, int rc,
                         uint64_t t0)
{
    const char *msg = mpikvs_last_error(kvs);

    if (mapped_here())
        record(rc == MPIKVS_OK || rc == MPIKVS_MISS,
               "%s of a key of the killed node 1: %s after %.0f ms (its "
               "region is mapped on this host)",
               what, mpikvs_strerror(rc), ms_since(t0));
    else
        record(rc == MPIKVS_ERR_STALLED && strstr(msg, "node 1"),
               "%s of a key of the killed node 1: %s after %.0f ms: %s",
               what, mpikvs_strerror(rc), ms_since(t0), msg);
}

static void killed(void)
{
    unsigned char keys[4][KS], own[KS], v[VS], want[VS], vals[4][VS];
    int status[4], rc;
    char p[4096];
    int pid = (int)getpid(), pids[2] = {0, 0};
    mpikvs_t *kvs;
    uint64_t t0;

    if (rank == 0) {
        path_of(p, sizeof p, "result");
        if (!(result = fopen(p, "w")))
            mt_abort("cannot write the result file");
    }
    /* rank 0 closes alone: its wait for the others is bounded by this */
    setenv("MPIKVS_CLOSE_TIMEOUT", "1", 1);
    kvs = open_table();
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++)
        key_on(kvs, 13, (uint32_t)i, 1, keys[i]);
    key_on(kvs, 13, 9, 0, own);
    mt_phase("each rank puts keys of its node");
    if (rank == 1)
        for (int i = 0; i < 4; i++) {
            mt_make_value(keys[i], KS, 1, vals[i], VS);
            mpikvs_put(kvs, keys[i], vals[i]);   /* rank 0 checks them */
        }
    if (rank == 0) {
        mt_make_value(own, KS, 1, v, VS);
        rc = mpikvs_put(kvs, own, v);
        record(rc == MPIKVS_OK, "a put to node 0: %s",
               mpikvs_strerror(rc));
    }
    if (mpikvs_fence(kvs) != MPIKVS_OK)
        mt_abort("the fence failed");
    if (rank == 0) {
        mt_phase("rank 0 gets from node 1 while it lives");
        mt_make_value(keys[0], KS, 1, want, VS);
        rc = mpikvs_get(kvs, keys[0], v);
        record(rc == MPIKVS_OK && memcmp(v, want, VS) == 0 &&
                   strcmp(mpikvs_transport(kvs), "ucx") == 0,
               "a get from node 1 while it lives, transport %s (want "
               "ucx): %s", mpikvs_transport(kvs), mpikvs_strerror(rc));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        fflush(NULL);
        raise(SIGKILL);
    }

    mt_phase("rank 0 waits for rank 1's death");
    t0 = now_ns();
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    while (!dead(pids[1])) {
        if (now_ns() - t0 > WAIT_S * 1000000000ull) {
            record(false, "rank 1 (pid %d) did not die", pids[1]);
            goto out;
        }
        nanosleep(&pause, NULL);
    }
    fprintf(result, "rank 1 (pid %d) is gone\n", pids[1]);
    fflush(result);

    mt_phase("rank 0 gets a key of the killed node");
    t0 = now_ns();
    on_dead_node(kvs, "a get", mpikvs_get(kvs, keys[0], v), t0);
    mt_phase("rank 0 puts a key of the killed node");
    mt_make_value(keys[1], KS, 2, v, VS);
    t0 = now_ns();
    on_dead_node(kvs, "a put", mpikvs_put(kvs, keys[1], v), t0);
    mt_phase("rank 0 gets a batch of keys of the killed node");
    t0 = now_ns();
    on_dead_node(kvs, "a get_batch",
                 mpikvs_get_batch(kvs, 4, keys, vals, status), t0);
    mt_phase("rank 0 gets again from the killed node");
    t0 = now_ns();
    on_dead_node(kvs, "a second get", mpikvs_get(kvs, keys[2], v), t0);
    /* the own node: in the lock-free mode shared memory only; the
     * fine-lock mode takes it through the transport, over a live
     * endpoint */
    mt_phase("rank 0 gets a key of its own node");
    mt_make_value(own, KS, 1, want, VS);
    t0 = now_ns();
    rc = mpikvs_get(kvs, own, v);
    record(rc == MPIKVS_OK && memcmp(v, want, VS) == 0,
           "a get of a key of the own node 0: %s after %.0f ms%s%s",
           mpikvs_strerror(rc), ms_since(t0), rc == MPIKVS_OK ? "" : ": ",
           rc == MPIKVS_OK ? "" : mpikvs_last_error(kvs));
    mt_phase("rank 0 closes");
    t0 = now_ns();
    rc = mpikvs_close(&kvs);
    record(rc == MPIKVS_ERR_STALLED, "close: %s after %.0f ms: %s",
           mpikvs_strerror(rc), ms_since(t0), mpikvs_last_error(NULL));
out:
    fprintf(result, "done %ld passed %ld failed\n", r_passed, r_failed);
    fclose(result);
    /* no MPI_Finalize with a dead rank: what it does then is MPI's */
    fflush(NULL);
    _exit(0);
}

/* Poll until pid is stopped (or no longer, as wanted), bounded. */
static bool await_stopped(int pid, bool want)
{
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    uint64_t t0 = now_ns();
    char p[64], st[512];

    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    while (now_ns() - t0 < WAIT_S * 1000000000ull) {
        FILE *f = fopen(p, "r");
        size_t n = f ? fread(st, 1, sizeof st - 1, f) : 0;
        if (f)
            fclose(f);
        st[n] = '\0';
        const char *paren = strrchr(st, ')');
        bool is = paren && (paren[2] == 'T' || paren[2] == 't');
        if (is == want)
            return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

/* A call on a key of the stopped node 1: MPIKVS_ERR_STALLED naming it;
 * remembered: not even tried. */
static void on_stopped_node(mpikvs_t *kvs, const char *what, int rc,
                            bool remembered, uint64_t t0)
{
    const char *msg = mpikvs_last_error(kvs);

    EXPECT(rc == MPIKVS_ERR_STALLED && strstr(msg, "node 1") &&
               (!remembered || strstr(msg, "not tried") ||
                strstr(msg, "earlier")),
           "%s of a key of the stopped node 1: %s after %.0f ms: %s", what,
           mpikvs_strerror(rc), ms_since(t0), msg);
    mt_note("%s of a key of the stopped node 1: %s after %.0f ms", what,
            mpikvs_strerror(rc), ms_since(t0));
}

static void stopped(void)
{
    unsigned char keys[8][KS], own[KS], v[VS], first[VS], want[VS];
    unsigned char vals[4][VS];
    int status[4], rc, pid = (int)getpid(), pids[2] = {0, 0};
    mpikvs_request_t req;
    mpikvs_t *kvs;
    uint64_t t0;

    setenv("MPIKVS_TIMEOUT", "2", 1);
    kvs = open_table();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++)
        key_on(kvs, 17, (uint32_t)i, 1, keys[i]);
    key_on(kvs, 17, 9, 0, own);
    mt_phase("each rank puts keys of its node");
    if (rank == 1)
        for (int i = 0; i < 4; i++) {
            mt_make_value(keys[i], KS, 1, v, VS);
            EXPECT(mpikvs_put(kvs, keys[i], v) == MPIKVS_OK, "put %d", i);
        }
    else {
        mt_make_value(own, KS, 1, v, VS);
        EXPECT(mpikvs_put(kvs, own, v) == MPIKVS_OK, "put of node 0's");
    }
    if (mpikvs_fence(kvs) != MPIKVS_OK)
        mt_abort("the fence failed");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        mt_phase("rank 0 stops rank 1");
        kill(pids[1], SIGSTOP);
        if (!await_stopped(pids[1], true))
            mt_abort("rank 1 did not stop");
        memset(first, 0xab, VS);
        t0 = now_ns();
        on_stopped_node(kvs, "a get", mpikvs_get(kvs, keys[0], first),
                        false, t0);
        t0 = now_ns();
        on_stopped_node(kvs, "a second get", mpikvs_get(kvs, keys[1], v),
                        true, t0);
        mt_make_value(keys[4], KS, 2, v, VS);
        t0 = now_ns();
        on_stopped_node(kvs, "a put", mpikvs_put(kvs, keys[4], v), true,
                        t0);
        mt_make_value(keys[5], KS, 2, v, VS);
        t0 = now_ns();
        on_stopped_node(kvs, "a put-if-absent",
                        mpikvs_put_if_absent(kvs, keys[5], v, NULL), true,
                        t0);
        t0 = now_ns();
        on_stopped_node(kvs, "a get_batch",
                        mpikvs_get_batch(kvs, 4, keys, vals, status), true,
                        t0);
        t0 = now_ns();
        rc = mpikvs_get_batch_start(kvs, 4, keys, vals, status, &req);
        if (rc == MPIKVS_OK)
            rc = mpikvs_wait(kvs, &req);
        on_stopped_node(kvs, "a started batch", rc, true, t0);
        mt_make_value(own, KS, 1, want, VS);
        rc = mpikvs_get(kvs, own, v);
        EXPECT(rc == MPIKVS_OK && memcmp(v, want, VS) == 0,
               "a get of node 0's key while node 1 is stopped: %s",
               mpikvs_strerror(rc));

        mt_phase("rank 0 resumes rank 1");
        kill(pids[1], SIGCONT);
        if (!await_stopped(pids[1], false))
            mt_abort("rank 1 did not resume");
        const char *ops = getenv("MPIKVS_UCX_OPS");
        if (ops && strcmp(ops, "rma") == 0) {
            t0 = now_ns();
            on_stopped_node(kvs, "a get once resumed (rma: given up)",
                            mpikvs_get(kvs, keys[2], v), true, t0);
        } else {
            mt_make_value(keys[2], KS, 1, want, VS);
            rc = mpikvs_get(kvs, keys[2], v);
            EXPECT(rc == MPIKVS_OK && memcmp(v, want, VS) == 0,
                   "a get of node 1's key once it is resumed: %s: %s",
                   mpikvs_strerror(rc), mpikvs_last_error(kvs));
            mt_make_value(keys[6], KS, 3, want, VS);
            rc = mpikvs_put(kvs, keys[6], want);
            EXPECT(rc == MPIKVS_OK,
                   "a put to node 1 once it is resumed: %s",
                   mpikvs_strerror(rc));
            rc = mpikvs_get(kvs, keys[6], v);
            EXPECT(rc == MPIKVS_OK && memcmp(v, want, VS) == 0,
                   "reading it back: %s", mpikvs_strerror(rc));
            rc = mpikvs_get_batch(kvs, 2, keys[2], vals, status);
            EXPECT(rc == MPIKVS_OK && status[0] == MPIKVS_OK,
                   "a batch of node 1's keys once it is resumed: %s",
                   mpikvs_strerror(rc));
        }
        unsigned char untouched[VS];
        memset(untouched, 0xab, VS);
        EXPECT(memcmp(first, untouched, VS) == 0,
               "the buffer of the get given up on holds what it held");
    }
    mt_phase("the ranks meet again");
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence: %s",
           mpikvs_last_error(kvs));
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));
}

int main(int argc, char **argv)
{
    const char *what = argc > 2 ? argv[2] : "";
    int provided;

    mode = argc > 1 ? argv[1] : "";
    dir = argc > 3 ? argv[3] : NULL;
    if ((strcmp(what, "no-ucx") && strcmp(what, "stopped") && !dir) ||
        (strcmp(what, "compute") && strcmp(what, "contrast") &&
         strcmp(what, "no-ucx") && strcmp(what, "killed") &&
         strcmp(what, "stopped"))) {
        fprintf(stderr, "usage: %s MODE compute|contrast|killed DIR, "
                        "%s MODE no-ucx|stopped\n", argv[0], argv[0]);
        return 2;
    }
    /* the UCX transport's progress helper is a second thread, which
     * never calls MPI */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mt_init(argv[0]);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = mt_rank_;
    if (size != 2)
        mt_abort("run it with 2 ranks on 2 virtual nodes");

    if (!strcmp(what, "compute"))
        compute(true);
    else if (!strcmp(what, "contrast"))
        compute(false);
    else if (!strcmp(what, "no-ucx"))
        no_ucx();
    else if (!strcmp(what, "stopped"))
        stopped();
    else
        killed();

    int status = mt_finish();
    MPI_Finalize();
    return status;
}
