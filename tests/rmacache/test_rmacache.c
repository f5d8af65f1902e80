/*
 * test_rmacache.c - an unchanged MPI program for libmpikvs-rmacache,
 * run with the library preloaded (run-rmacache-tests.sh).  Rank 1 owns
 * the data and changes it between epochs; rank 0 (and any others) read
 * it with MPI_Get and must see every change, whatever the cache keeps.
 * argv[1..]: the parts to run (all when none); "ro-lie" (a readonly
 * window whose data does change) is run only when named, under
 * MPIKVS_RMACACHE_VERIFY=1, and so are the parts that show the node
 * tier's region to the script (node-hold, node-unfreed, node-abort).
 * Windows are named after their part, so the script can read their
 * statistics.  The parts of issue 29 (node-local-inval, node-own-write:
 * H3, H4; excl-store, excl-second-win: H5) and node-lone-bcast want 3
 * ranks, the node parts with MPIKVS_VIRTUAL_NODES=2, and skip
 * otherwise.  The repeat parts (issue 31) loop over data that stays
 * or changes, for the advice at MPI_Finalize.  MPI_THREAD_MULTIPLE
 * is asked for only when the threads part runs (osc pt2pt makes no
 * window under it).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

#define N      256
#define ROUNDS 6
/* node-lone-bcast: no fewer bytes than the library's bcast of a window id */
#define LONE_INTS 16

static int rank, nprocs;

static int v(int round, int i)
{
    return round * 100000 + i;
}

static void setv(int *base, int round)
{
    for (int i = 0; i < N; i++)
        base[i] = v(round, i);
}

static int check(const int *buf, int first, int n, int round, const char *what)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != v(round, first + i)) {
            EXPECT(0, "%s round %d: element %d is %d, not %d", what, round, first + i,
                   buf[i], v(round, first + i));
            return 0;
        }
    EXPECT(1, "%s", what);
    return 1;
}

static MPI_Win make_win(const char *name, const char *mode, int **base)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Win  win;

    if (mode) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpikvs_rmacache", mode);
    }
    MPI_Win_allocate(N * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, base, &win);
    if (mode)
        MPI_Info_free(&info);
    MPI_Win_set_name(win, name);
    setv(*base, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    return win;
}

/* rank 1 changes its own data: a local store, under its own lock */
static void change(MPI_Win win, int *base, int round)
{
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        setv(base, round);
        MPI_Win_unlock(1, win);
    }
}

static int reader(void)
{
    return rank != 1;
}

static void t_fence(const char *name, const char *mode)
{
    int    *base, a[N], b[N], c[10];
    MPI_Win win = make_win(name, mode, &base);

    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 1)
            setv(base, r);
        MPI_Win_fence(0, win);
        if (reader()) {
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Get(c, 10, MPI_INT, 1, 10, 10, MPI_INT, win);
        }
        MPI_Win_fence(0, win);
        if (reader()) {
            check(a, 0, N, r, name);
            check(b, 0, N, r, name);
            check(c, 10, 10, r, name);
        }
        if (mode && !strcmp(mode, "readonly")) {
            /* a readonly window hits in the next epochs, until the
             * application says the data changed */
            for (int e = 0; e < 3; e++) {
                MPI_Win_fence(0, win);
                if (reader())
                    MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
                MPI_Win_fence(0, win);
                if (reader())
                    check(a, 0, N, r, name);
            }
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "mpikvs_rmacache", "invalidate");
            MPI_Win_fence(0, win);
            MPI_Win_set_info(win, info);
            MPI_Info_free(&info);
        }
        MPI_Win_fence(0, win);
    }
    MPI_Win_free(&win);
}

static void t_pscw(void)
{
    int       *base, a[N], b[N];
    MPI_Win    win = make_win("pscw", NULL, &base);
    MPI_Group  world, g;
    int        one = 1;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 1) {
            int *others = malloc(sizeof(int) * (size_t)nprocs);
            int  n = 0;
            for (int p = 0; p < nprocs; p++)
                if (p != 1)
                    others[n++] = p;
            setv(base, r);
            MPI_Group_incl(world, n, others, &g);
            MPI_Win_post(g, 0, win);
            MPI_Win_wait(win);
            MPI_Group_free(&g);
            free(others);
        } else {
            MPI_Group_incl(world, 1, &one, &g);
            MPI_Win_start(g, 0, win);
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_complete(win);
            MPI_Group_free(&g);
            check(a, 0, N, r, "pscw");
            check(b, 0, N, r, "pscw");
        }
    }
    MPI_Group_free(&world);
    MPI_Win_free(&win);
}

static void t_lock(const char *name, int type)
{
    int    *base, a[N], b[N], c[N];
    MPI_Win win = make_win(name, NULL, &base);

    for (int r = 0; r < ROUNDS; r++) {
        change(win, base, r);
        MPI_Barrier(MPI_COMM_WORLD);
        if (reader()) {
            MPI_Win_lock(type, 1, 0, win);
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_flush(1, win);
            MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_flush(1, win);
            MPI_Get(c, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_unlock(1, win);
            check(a, 0, N, r, name);
            check(b, 0, N, r, name);
            check(c, 0, N, r, name);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
}

/* lock_all: rank 1 stores and syncs, a barrier orders the readers after
 * it; flush or flush_local complete their gets */
static void t_lock_all(const char *name, int local)
{
    int    *base, a[N], b[N];
    MPI_Win win = make_win(name, NULL, &base);

    MPI_Win_lock_all(0, win);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 1) {
            setv(base, r);
            MPI_Win_sync(win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (reader()) {
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Get(b, 8, MPI_INT, 1, 0, 8, MPI_INT, win);
            local ? MPI_Win_flush_local(1, win) : MPI_Win_flush(1, win);
            MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
            local ? MPI_Win_flush_local_all(win) : MPI_Win_flush_all(win);
            check(a, 0, N, r, name);
            check(b, 0, N, r, name);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

/* no barrier: rank 1 tells rank 0 by a message after MPI_Win_sync */
static void t_win_sync(void)
{
    int    *base, a[N], token = 0;
    MPI_Win win = make_win("win-sync", NULL, &base);

    MPI_Win_lock_all(0, win);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 1) {
            setv(base, r);
            MPI_Win_sync(win);
            for (int p = 0; p < nprocs; p++)
                if (p != 1)
                    MPI_Send(&r, 1, MPI_INT, p, 7, MPI_COMM_WORLD);
            for (int p = 0; p < nprocs; p++)
                if (p != 1)
                    MPI_Recv(&token, 1, MPI_INT, p, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Win_sync(win);
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_flush(1, win);
            check(a, 0, N, r, "win-sync");
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_flush(1, win);
            check(a, 0, N, r, "win-sync");
            MPI_Send(&r, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

static void t_dynamic(void)
{
    int     *mem = calloc(N, sizeof(int)), a[N];
    MPI_Aint addr = 0;
    MPI_Win  win;

    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_name(win, "dynamic");
    if (rank == 1) {
        MPI_Win_attach(win, mem, N * sizeof(int));
        MPI_Get_address(mem, &addr);
    }
    MPI_Bcast(&addr, 1, MPI_AINT, 1, MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 1) {
            setv(mem, r);
            MPI_Win_sync(win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (reader()) {
            MPI_Get(a, N, MPI_INT, 1, addr, N, MPI_INT, win);
            MPI_Win_flush(1, win);
            check(a, 0, N, r, "dynamic");
            MPI_Get(a + 4, 4, MPI_INT, 1, addr + 4 * (MPI_Aint)sizeof(int), 4, MPI_INT, win);
            MPI_Win_flush(1, win);
            check(a + 4, 4, 4, r, "dynamic");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    if (rank == 1)
        MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(mem);
}

/* The trap: a get issued before a barrier must not serve a get after
 * it, when between them rank 1 put new data and flushed. */
static void t_barrier_trap(void)
{
    int    *base, a[N], b[N], nv[N];
    MPI_Win win = make_win("barrier-trap", NULL, &base);

    MPI_Win_lock_all(0, win);
    for (int r = 1; r <= ROUNDS; r++) {
        if (reader())
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win); /* pending */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            for (int i = 0; i < N; i++)
                nv[i] = v(r, i);
            MPI_Put(nv, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_flush(1, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (reader()) {
            MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
            MPI_Win_flush(1, win);
            check(b, 0, N, r, "barrier-trap");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

static int get1(MPI_Win win, int i)
{
    int x = -1;

    MPI_Get(&x, 1, MPI_INT, 1, i, 1, MPI_INT, win);
    MPI_Win_flush(1, win);
    return x;
}

/* Own writes to a readonly window drop what they overlap, and only it. */
static void t_own_writes(void)
{
    int        *base, x, res, cmp, val;
    MPI_Win     win = make_win("own-writes", "readonly", &base);
    MPI_Request req;

    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        EXPECT(get1(win, 5) == v(0, 5), "own: first get");
        EXPECT(get1(win, 5) == v(0, 5), "own: cached get");
        EXPECT(get1(win, 6) == v(0, 6), "own: neighbour");
        val = 777;
        MPI_Put(&val, 1, MPI_INT, 1, 5, 1, MPI_INT, win);
        MPI_Win_flush(1, win);
        EXPECT((x = get1(win, 5)) == 777, "own: after put %d", x);
        EXPECT(get1(win, 6) == v(0, 6), "own: neighbour after put");
        val = 1;
        MPI_Accumulate(&val, 1, MPI_INT, 1, 5, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_flush(1, win);
        EXPECT((x = get1(win, 5)) == 778, "own: after accumulate %d", x);
        MPI_Fetch_and_op(&val, &res, MPI_INT, 1, 5, MPI_SUM, win);
        MPI_Win_flush(1, win);
        EXPECT(res == 778 && (x = get1(win, 5)) == 779, "own: after fetch_and_op %d", x);
        cmp = 779;
        val = 900;
        MPI_Compare_and_swap(&val, &cmp, &res, MPI_INT, 1, 5, win);
        MPI_Win_flush(1, win);
        EXPECT((x = get1(win, 5)) == 900, "own: after compare_and_swap %d", x);
        val = 100;
        MPI_Get_accumulate(&val, 1, MPI_INT, &res, 1, MPI_INT, 1, 5, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_flush(1, win);
        EXPECT((x = get1(win, 5)) == 1000, "own: after get_accumulate %d", x);
        val = 55;
        MPI_Rput(&val, 1, MPI_INT, 1, 5, 1, MPI_INT, win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Win_flush(1, win);
        EXPECT((x = get1(win, 5)) == 55, "own: after rput %d", x);
        /* a put to a range that covers a cached element */
        int four[4] = {1, 2, 3, 4};
        EXPECT(get1(win, 10) == v(0, 10), "own: element 10");
        MPI_Put(four, 4, MPI_INT, 1, 8, 4, MPI_INT, win);
        MPI_Win_flush(1, win);
        EXPECT((x = get1(win, 10)) == 3, "own: after a wider put %d", x);
        /* Rget passes through */
        MPI_Rget(&x, 1, MPI_INT, 1, 10, 1, MPI_INT, win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        EXPECT(x == 3, "own: rget %d", x);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

/* Non-contiguous layouts pass through: even a readonly window shows the
 * changes of every epoch. */
static void t_noncontig(void)
{
    int         *base, a[16];
    MPI_Win      win = make_win("noncontig", "readonly", &base);
    MPI_Datatype vec;

    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 1)
            setv(base, r);
        MPI_Win_fence(0, win);
        if (reader()) {
            memset(a, 0, sizeof a);
            MPI_Get(a, 4, MPI_INT, 1, 0, 1, vec, win);  /* target strided */
            MPI_Get(a + 8, 1, vec, 1, 0, 4, MPI_INT, win); /* origin strided */
        }
        MPI_Win_fence(0, win);
        if (reader()) {
            int ok = 1;
            for (int i = 0; i < 4; i++)
                ok &= a[i] == v(r, 2 * i) && a[8 + 2 * i] == v(r, i);
            EXPECT(ok, "noncontig round %d", r);
        }
        MPI_Win_fence(0, win);
    }
    MPI_Type_free(&vec);
    MPI_Win_free(&win);
}

/* The window ends right after the epoch that completes its gets. */
static void t_free_pending(void)
{
    int    *base, a[N], b[N], c[N], d[4];
    MPI_Win win = make_win("free-pending", "readonly", &base);

    MPI_Win_lock_all(0, win);
    if (reader()) {
        MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
        MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
        MPI_Get(c, N, MPI_INT, 1, 0, N, MPI_INT, win);
        MPI_Get(d, 4, MPI_INT, 1, 3, 4, MPI_INT, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    if (reader()) {
        check(a, 0, N, 0, "free-pending");
        check(b, 0, N, 0, "free-pending");
        check(c, 0, N, 0, "free-pending");
        check(d, 3, 4, 0, "free-pending");
    }
    win = make_win("free-pending-fence", NULL, &base);
    MPI_Win_fence(0, win);
    if (reader()) {
        MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
        MPI_Get(b, N, MPI_INT, 1, 0, N, MPI_INT, win);
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Win_free(&win);
    if (reader()) {
        check(a, 0, N, 0, "free-pending-fence");
        check(b, 0, N, 0, "free-pending-fence");
    }
}

/* Random changes of random ranges by rank 1, random gets by the others,
 * checked against a shadow every reader computes from the same seed.
 * readonly: the application invalidates after each change. */
static void t_random(const char *name, const char *mode, int lie)
{
    int      *base, shadow[N], buf[N];
    MPI_Win   win = make_win(name, mode, &base);
    uint64_t  wseed = 12345, rseed = 777 + (uint64_t)rank;
    const int ro = mode && !strcmp(mode, "readonly");

    for (int i = 0; i < N; i++)
        shadow[i] = v(0, i);
    MPI_Win_lock_all(0, win);
    for (int r = 1; r <= 20; r++) {
        /* the change of this round, known to every rank */
        int lo = (int)(mt_mix(wseed + (uint64_t)r) % N);
        int n = 1 + (int)(mt_mix(wseed * 3 + (uint64_t)r) % (uint64_t)(N - lo));
        for (int i = lo; i < lo + n; i++)
            shadow[i] = r * 7919 + i;
        if (rank == 1) {
            memcpy(base + lo, shadow + lo, (size_t)n * sizeof(int));
            MPI_Win_sync(win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (ro && !lie) {
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "mpikvs_rmacache", "invalidate");
            MPI_Win_set_info(win, info);
            MPI_Info_free(&info);
        }
        if (reader()) {
            for (int k = 0; k < 40; k++) {
                uint64_t x = mt_mix(rseed++);
                int      glo = (int)(x % 64) * 4 % N;
                int      gn = 1 + (int)((x >> 20) % 32);
                if (glo + gn > N)
                    gn = N - glo;
                MPI_Get(buf, gn, MPI_INT, 1, glo, gn, MPI_INT, win);
                if (x >> 60 & 1)
                    MPI_Get(buf, gn, MPI_INT, 1, glo, gn, MPI_INT, win); /* a repeat */
                (x >> 61 & 1) ? MPI_Win_flush(1, win) : MPI_Win_flush_all(win);
                if (memcmp(buf, shadow + glo, (size_t)gn * sizeof(int))) {
                    EXPECT(0, "%s round %d: get [%d, %d) differs from the shadow",
                           name, r, glo, glo + gn);
                    break;
                }
            }
            EXPECT(1, "%s round %d", name, r);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

/* MPI_THREAD_MULTIPLE: threads of the readers get, flush and check at
 * once through one readonly window (the window's lock keeps its cache
 * whole) while the main thread invalidates between rounds. */
struct thr {
    MPI_Win win;
    int     round, id, bad;
};

static void *reader_thread(void *arg)
{
    struct thr *t = arg;
    int         a[N];

    for (int k = 0; k < 200; k++) {
        int lo = (k * 7 + t->id * 13) % (N - 16);
        MPI_Get(a, 16, MPI_INT, 1, lo, 16, MPI_INT, t->win);
        MPI_Win_flush(1, t->win);
        for (int i = 0; i < 16; i++)
            if (a[i] != v(t->round, lo + i))
                t->bad++;
    }
    return NULL;
}

static void t_threads(int provided)
{
    int      *base;
    MPI_Win   win = make_win("threads", "readonly", &base);
    pthread_t th[4];
    struct thr t[4];

    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            mt_note("threads: MPI gives no MPI_THREAD_MULTIPLE, part skipped");
        MPI_Win_free(&win);
        return;
    }
    for (int r = 0; r < 3; r++) {
        change(win, base, r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpikvs_rmacache", "invalidate");
        MPI_Win_set_info(win, info);
        MPI_Info_free(&info);
        MPI_Win_lock_all(0, win);
        if (reader()) {
            for (int i = 0; i < 4; i++) {
                t[i] = (struct thr){win, r, i, 0};
                pthread_create(&th[i], NULL, reader_thread, &t[i]);
            }
            for (int i = 0; i < 4; i++) {
                pthread_join(th[i], NULL);
                EXPECT(t[i].bad == 0, "threads round %d thread %d: %d wrong", r, i, t[i].bad);
            }
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
}

/* The node tier: with all ranks on one node, what rank 0 fetched serves
 * rank 2 (and others) without MPI; after an invalidation and a change,
 * no one gets the old data from a neighbour. */
static void t_node(void)
{
    int    *base, a[N];
    MPI_Win win = make_win("node", "readonly", &base);

    for (int r = 0; r < 3; r++) {
        if (rank == 1)
            setv(base, r);
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
        MPI_Win_fence(0, win);
        if (rank == 0)
            check(a, 0, N, r, "node: rank 0");
        /* rank 0 publishes as its fence returns: the barrier (a fence
         * need not synchronize) has it done before the others read */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_fence(0, win);
        if (rank > 1) {
            memset(a, 0, sizeof a);
            MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
        }
        MPI_Win_fence(0, win);
        if (rank > 1)
            check(a, 0, N, r, "node: a neighbour");
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpikvs_rmacache", "invalidate");
        MPI_Win_set_info(win, info);
        MPI_Info_free(&info);
        MPI_Win_fence(0, win);
    }
    MPI_Win_free(&win);
}

/* One round of the node tier: rank 0 fetches, then the ranks past 1
 * read what it published. */
static void node_round(MPI_Win win, const char *what)
{
    int a[N];

    MPI_Win_fence(0, win);
    if (rank == 0)
        MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_fence(0, win);
    if (rank > 1)
        MPI_Get(a, N, MPI_INT, 1, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    if (rank != 1)
        check(a, 0, N, 0, what);
}

/* Whether path exists within 60 s (polled every 10 ms). */
static int appears(const char *path)
{
    struct timespec ms10 = {0, 10 * 1000 * 1000};

    for (int i = 0; i < 6000; i++) {
        if (access(path, F_OK) == 0)
            return 1;
        nanosleep(&ms10, NULL);
    }
    return 0;
}

/* The window's region while it lives, for mpikvs-stat: after a round,
 * rank 0 writes $RMACACHE_HOLD/ready, and every rank waits for
 * $RMACACHE_HOLD/go before the window is freed. */
static void t_node_hold(void)
{
    const char *dir = getenv("RMACACHE_HOLD");
    char        path[4096];
    int        *base;
    MPI_Win     win = make_win("node-hold", "readonly", &base);

    if (!dir)
        mt_abort("node-hold needs RMACACHE_HOLD");
    node_round(win, "node-hold");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/ready", dir);
        FILE *f = fopen(path, "w");
        EXPECT(f && fclose(f) == 0, "node-hold: %s written", path);
    }
    snprintf(path, sizeof path, "%s/go", dir);
    EXPECT(appears(path), "node-hold: %s appeared", path);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
}

/* A window never freed: MPI_Finalize removes its region's name. */
static void t_node_unfreed(void)
{
    int    *base;
    MPI_Win win = make_win("node-unfreed", "readonly", &base);

    node_round(win, "node-unfreed");
}

/* A job that ends in MPI_Abort leaves its window's region behind
 * (mpikvs-stat --gc removes it). */
static void t_node_abort(void)
{
    int    *base;
    MPI_Win win = make_win("node-abort", "readonly", &base);

    node_round(win, "node-abort");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* MPI_Win_set_info(invalidate), collective, as the programs above make
 * it. */
static void invalidate(MPI_Win win)
{
    MPI_Info info;

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpikvs_rmacache", "invalidate");
    MPI_Win_set_info(win, info);
    MPI_Info_free(&info);
}

/* Element disp of target's window (displacement units of the window). */
static int get_from(MPI_Win win, int target, MPI_Aint disp)
{
    int x = -1;

    MPI_Get(&x, 1, MPI_INT, target, disp, 1, MPI_INT, win);
    MPI_Win_flush(target, win);
    return x;
}

/* The parts below want 3 ranks and, where the node tier matters,
 * MPIKVS_VIRTUAL_NODES=2: ranks 0 and 1 are one node, rank 2 (the
 * target there) the other. */
static int three_ranks(const char *part)
{
    if (nprocs == 3)
        return 1;
    if (rank == 0)
        mt_note("%s: needs 3 ranks, part skipped", part);
    return 0;
}

/* Issue 29, H3: ranks of a node that made different numbers of local
 * invalidations (rank 0 attaches one buffer more) still agree on the
 * collective ones: after X changed and every rank passed
 * MPI_Win_set_info(invalidate), rank 1 does not take the X that rank 0
 * fetched before.  Then the node tier serves again: what rank 0
 * fetches after the invalidation reaches rank 1. */
static void t_node_local_inval(void)
{
    int     *mem = calloc(N, sizeof(int)), *extra = calloc(N, sizeof(int)), x;
    MPI_Aint addr = 0;
    MPI_Info info;
    MPI_Win  win;

    if (!three_ranks("node-local-inval"))
        return;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpikvs_rmacache", "readonly");
    MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &win);
    MPI_Info_free(&info);
    MPI_Win_set_name(win, "node-local-inval");
    if (rank == 2) {
        setv(mem, 0);
        mem[0] = 1111;
        MPI_Win_attach(win, mem, N * sizeof(int));
        MPI_Get_address(mem, &addr);
    }
    if (rank == 0) /* a local invalidation that rank 1 does not make */
        MPI_Win_attach(win, extra, N * sizeof(int));
    MPI_Bcast(&addr, 1, MPI_AINT, 2, MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    if (rank == 0)
        EXPECT((x = get_from(win, 2, addr)) == 1111, "node-local-inval: rank 0 reads X = %d", x);
    MPI_Barrier(MPI_COMM_WORLD); /* rank 0 published X = 1111 at its flush */
    if (rank == 2) {
        mem[0] = 2222;
        MPI_Win_sync(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    invalidate(win);
    if (rank == 1)
        EXPECT((x = get_from(win, 2, addr)) == 2222,
               "node-local-inval: rank 1 reads X = %d after X became 2222 and every "
               "rank invalidated (1111: rank 0's entry from before)", x);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        EXPECT((x = get_from(win, 2, addr + 5 * (MPI_Aint)sizeof(int))) == v(0, 5),
               "node-local-inval: rank 0 reads element 5 = %d", x);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        EXPECT((x = get_from(win, 2, addr + 5 * (MPI_Aint)sizeof(int))) == v(0, 5),
               "node-local-inval: rank 1 reads element 5 = %d", x);
    MPI_Win_unlock_all(win);
    if (rank == 0)
        MPI_Win_detach(win, extra);
    if (rank == 2)
        MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(mem);
    free(extra);
}

/* Issue 29, H4: in a readonly window with the node tier, a rank reads
 * back its own write, not the copy a neighbour fetched before it (rank
 * 1 reads X, rank 0 puts 2222 to X, flushes and reads X); an element
 * far from the write still comes from the neighbour. */
static void t_node_own_write(void)
{
    int    *base, x, val = 2222;
    MPI_Win win;

    if (!three_ranks("node-own-write"))
        return;
    win = make_win("node-own-write", "readonly", &base);
    MPI_Win_lock_all(0, win);
    if (rank == 1) {
        EXPECT((x = get_from(win, 2, 5)) == v(0, 5), "node-own-write: rank 1 reads X = %d", x);
        EXPECT((x = get_from(win, 2, 200)) == v(0, 200), "node-own-write: rank 1 reads Y = %d", x);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 1 published X and Y at its flushes */
    if (rank == 0) {
        MPI_Put(&val, 1, MPI_INT, 2, 5, 1, MPI_INT, win);
        MPI_Win_flush(2, win);
        EXPECT((x = get_from(win, 2, 5)) == 2222,
               "node-own-write: rank 0 reads X = %d after its own put of 2222 (%d: "
               "rank 1's copy from before)", x, v(0, 5));
        EXPECT((x = get_from(win, 2, 200)) == v(0, 200), "node-own-write: rank 0 reads Y = %d", x);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

/* Issue 29, H5: a transparent window's entries of a target locked
 * exclusively end at a barrier that orders the target's own store
 * (store, MPI_Win_sync, MPI_Barrier: the unified model's way to
 * publish it): rank 0 reads the new value, as without the cache. */
static void t_excl_store(void)
{
    int    *base, x;
    MPI_Win win = make_win("excl-store", NULL, &base);

    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        EXPECT((x = get_from(win, 1, 5)) == v(0, 5), "excl-store: X = %d", x);
        EXPECT((x = get_from(win, 1, 5)) == v(0, 5), "excl-store: X again = %d", x);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        /* MPI_Win_sync only in a passive target epoch (MPICH refuses
         * it outside one), of one that cannot wait for rank 0's lock */
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        base[5] = 2222;
        MPI_Win_sync(win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        EXPECT((x = get_from(win, 1, 5)) == 2222,
               "excl-store: X = %d after rank 1 stored 2222, synced and passed the "
               "barrier", x);
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
}

/* The same, the write a put through a second window over the same
 * memory (by rank 2, or rank 1 itself on 2 ranks). */
static void t_excl_second_win(void)
{
    int     *base, x, val = 3333, writer = nprocs > 2 ? 2 : 1;
    MPI_Win  win = make_win("excl-second-win", NULL, &base), win2;

    MPI_Win_create(base, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win2);
    MPI_Win_set_name(win2, "excl-second-win-2");
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        EXPECT((x = get_from(win, 1, 5)) == v(0, 5), "excl-second-win: X = %d", x);
        EXPECT((x = get_from(win, 1, 5)) == v(0, 5), "excl-second-win: X again = %d", x);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == writer) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win2);
        MPI_Put(&val, 1, MPI_INT, 1, 5, 1, MPI_INT, win2);
        MPI_Win_unlock(1, win2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        EXPECT((x = get_from(win, 1, 5)) == 3333,
               "excl-second-win: X = %d after rank %d put 3333 through the second "
               "window and passed the barrier", x, writer);
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win2);
    MPI_Win_free(&win);
}

/* A readonly window whose node tier leaves a rank alone on its node
 * (rank 2 under MPIKVS_VIRTUAL_NODES=2): the program's next bcast on
 * the window's communicator gets its own data on every rank (a rank
 * that left out the library's bcast would take that one for it). */
static void t_node_lone_bcast(void)
{
    int    *base, x[LONE_INTS];
    MPI_Win win;

    if (!three_ranks("node-lone-bcast"))
        return;
    win = make_win("node-lone-bcast", "readonly", &base);
    for (int i = 0; i < LONE_INTS; i++)
        x[i] = rank == 0 ? 4242 + i : -1;
    MPI_Bcast(x, LONE_INTS, MPI_INT, 0, MPI_COMM_WORLD);
    EXPECT(x[0] == 4242 && x[LONE_INTS - 1] == 4242 + LONE_INTS - 1,
           "node-lone-bcast: rank %d got %d ... %d from rank 0's bcast", rank, x[0],
           x[LONE_INTS - 1]);
    MPI_Win_free(&win);
}

/* issue 31: the loops a transparent window misses at every get, as its
 * rules say: lock/get/unlock and lock_all/get/flush of REPEAT_KEYS ints,
 * REPEAT_ROUNDS times, of data that stays (the advice at MPI_Finalize
 * names the window and readonly) or that rank 1 changes between the
 * rounds (no advice: readonly would have served old values). */
#define REPEAT_KEYS   16
#define REPEAT_ROUNDS 25
enum { REPEAT_LOCK, REPEAT_LOCK_ALL, REPEAT_CHANGING };

static void t_repeat(const char *name, int how)
{
    int    *base, got[REPEAT_KEYS];
    MPI_Win win = make_win(name, NULL, &base);

    if (how == REPEAT_LOCK_ALL)
        MPI_Win_lock_all(0, win);
    for (int r = 0; r < REPEAT_ROUNDS; r++) {
        int round = how == REPEAT_CHANGING ? r : 0, same = 1;

        if (how == REPEAT_CHANGING) {
            change(win, base, r);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (reader()) {
            if (how != REPEAT_LOCK_ALL)
                MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            for (int k = 0; k < REPEAT_KEYS; k++)
                MPI_Get(&got[k], 1, MPI_INT, 1, 8 * k, 1, MPI_INT, win);
            if (how == REPEAT_LOCK_ALL)
                MPI_Win_flush(1, win);
            else
                MPI_Win_unlock(1, win);
            for (int k = 0; k < REPEAT_KEYS; k++)
                same &= got[k] == v(round, 8 * k);
            EXPECT(same, "%s round %d: the gets brought rank 1's data", name, r);
        }
        if (how == REPEAT_CHANGING)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    if (how == REPEAT_LOCK_ALL)
        MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

static int wanted(int argc, char **argv, const char *part)
{
    static const char *const only_named[] = {"ro-lie", "node-hold", "node-unfreed",
                                             "node-abort"};

    if (argc < 2) {
        for (size_t i = 0; i < sizeof only_named / sizeof only_named[0]; i++)
            if (!strcmp(part, only_named[i]))
                return 0;
        return 1;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], part))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int provided;

    /* MPI_THREAD_MULTIPLE only for the part that needs it: osc pt2pt
     * refuses windows under it */
    MPI_Init_thread(&argc, &argv,
                    wanted(argc, argv, "threads") ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2)
        mt_abort("needs at least 2 ranks");
#define PART(name, call)                                                  \
    if (wanted(argc, argv, name)) {                                       \
        mt_phase(name);                                                   \
        call;                                                             \
    }
    PART("fence", t_fence("fence", NULL));
    PART("fence-ro", t_fence("fence-ro", "readonly"));
    PART("pscw", t_pscw());
    PART("shared-lock", t_lock("shared-lock", MPI_LOCK_SHARED));
    PART("exclusive-lock", t_lock("exclusive-lock", MPI_LOCK_EXCLUSIVE));
    PART("lock-all-flush", t_lock_all("lock-all-flush", 0));
    PART("flush-local", t_lock_all("flush-local", 1));
    PART("win-sync", t_win_sync());
    PART("dynamic", t_dynamic());
    PART("barrier-trap", t_barrier_trap());
    PART("own-writes", t_own_writes());
    PART("noncontig", t_noncontig());
    PART("free-pending", t_free_pending());
    PART("random", t_random("random", NULL, 0));
    PART("random-ro", t_random("random-ro", "readonly", 0));
    PART("ro-lie", t_random("ro-lie", "readonly", 1));
    PART("threads", t_threads(provided));
    PART("node", t_node());
    PART("node-hold", t_node_hold());
    PART("node-unfreed", t_node_unfreed());
    PART("node-abort", t_node_abort());
    PART("node-local-inval", t_node_local_inval());
    PART("node-own-write", t_node_own_write());
    PART("node-lone-bcast", t_node_lone_bcast());
    PART("excl-store", t_excl_store());
    PART("excl-second-win", t_excl_second_win());
    PART("repeat-lock", t_repeat("repeat-lock", REPEAT_LOCK));
    PART("repeat-lock-all", t_repeat("repeat-lock-all", REPEAT_LOCK_ALL));
    PART("repeat-changing", t_repeat("repeat-changing", REPEAT_CHANGING));
    return mt_finish() == 0 ? (MPI_Finalize(), 0) : (MPI_Finalize(), 1);
}
