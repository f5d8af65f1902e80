/*
 * test_absent_stopped.c - two racing callers of mpikvs_put_if_absent,
 * one of them stopped again and again (issue 29, H2): np=3, one node,
 * lock-free mode (run-absent-stopped-test.sh runs it).
 *
 *   test_absent_stopped [--seconds S] [--max-keys N] [--stop-ms T]
 *                       [--cycle-ms C]
 *
 * Ranks 0 and 1 offer their own value (version rank + 1, mpitest.h) for
 * the same new keys, in the same order, in step: rank 1 says which key
 * it is at in a word of shared memory (MPI_Win_allocate_shared) just
 * before its call, and rank 0 offers a key only once rank 1 has come to
 * it, so that rank 0 meets rank 1's claims in flight (and rank 1 stays
 * at most LEAD keys ahead, so no key is evicted between the two offers).
 * Rank 2 stops rank 1 (SIGSTOP) for T ms every C ms (default 20 of 25)
 * while they race: a stop that lands while rank 1 holds a claim leaves
 * the claim there for T ms, much longer than any put takes.  Rounds of at most
 * N new keys (default 200000), each in a fresh table, until S seconds
 * (default 10) have passed.
 *
 * Checked per key, on rank 0 with rank 1's answers: exactly one of the
 * two got MPIKVS_OK (two winners is the bug: a claim passed over or
 * taken over by time alone); the loser got MPIKVS_PRESENT with the
 * winner's value; no call failed (a stop of T ms is far below
 * MPIKVS_ERR_STALLED's bound); afterwards a get returns the winner's
 * value, or a miss where the table evicted (the library counts each
 * eviction; a quarter of the slots are used).  Prints the keys, the
 * stops and each count.
 */
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mpitest.h"

#define KS       16u
#define VS       48u
#define TAG      11u
/* Rank 1 is stopped for stop_ms every cycle_ms: by default 20 of 25,
 * so that there are many stops a second, each longer than a scheduler's
 * time slice and than the 10 ms after which the old code passed a claim
 * over; the figures are 40 of 60. */
static long stop_ms = 20, cycle_ms = 25;
#define RACERS   2
#define LEAD     1024 /* keys rank 1 may be ahead of rank 0 */

/* The words the three ranks share in a round (zeroed by rank 0 before
 * it): where rank 1 is, one more than the keys it offered once it ended
 * (0 before), how many rank 0 offered, and whether rank 0 ended. */
struct shared {
    uint64_t at;
    uint64_t total;
    uint64_t followed;
    uint64_t done;
};

/* One key's answer at one racer: the return code and the value shown
 * with MPIKVS_PRESENT, checked after the race (the less a racer does
 * between its calls, the more of its stops land inside one). */
struct answer {
    int32_t       rc;
    unsigned char seen[VS];
};

/* A key and the racer's value for it, made before the race. */
struct offering {
    unsigned char key[KS];
    unsigned char val[VS];
};

static int rank_;

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void nap_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

static uint64_t load(const uint64_t *w)
{
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

static void store(uint64_t *w, uint64_t v)
{
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
}

static uint32_t round_;

static void offer(mpikvs_t *kvs, const struct offering *o, struct answer *a)
{
    a->rc = mpikvs_put_if_absent(kvs, o->key, o->val, a->seen);
    if (a->rc < 0) {
        static int told;
        if (told++ < 3)
            mt_note("mpikvs_put_if_absent = %d (%s): %s", a->rc,
                    mpikvs_strerror(a->rc), mpikvs_last_error(kvs));
    }
}

/* Rank 1: keys in order until the time (end, ms) or the keys are up. */
static uint64_t race_leader(mpikvs_t *kvs, struct shared *sh,
                            const struct offering *offers,
                            struct answer *ans, uint64_t max_keys,
                            uint64_t end)
{
    uint64_t i;

    for (i = 0; i < max_keys && (i % 64 != 0 || now_ms() < end); i++) {
        while (i > load(&sh->followed) + LEAD)
            sched_yield();
        store(&sh->at, i + 1);
        offer(kvs, &offers[i], &ans[i]);
    }
    store(&sh->total, i + 1);
    return i;
}

/* Rank 0: each key once rank 1 has come to it. */
static uint64_t race_follower(mpikvs_t *kvs, struct shared *sh,
                              const struct offering *offers,
                              struct answer *ans)
{
    uint64_t i = 0, total;

    for (;;) {
        total = load(&sh->total);
        if (total && i + 1 >= total)
            break;
        if (load(&sh->at) <= i) {   /* rank 1 stopped, or behind */
            sched_yield();
            continue;
        }
        offer(kvs, &offers[i], &ans[i]);
        i++;
        store(&sh->followed, i);
    }
    store(&sh->done, 1);
    return i;
}

/* Rank 2: stop rank 1 until rank 0 is done; rank 1 runs when it ends. */
static unsigned stopper(struct shared *sh, pid_t victim)
{
    unsigned stops = 0;

    while (!load(&sh->done)) {
        nap_ms(cycle_ms - stop_ms);
        if (load(&sh->done))
            break;
        if (kill(victim, SIGSTOP) == 0)
            stops++;
        nap_ms(stop_ms);
        kill(victim, SIGCONT);
    }
    kill(victim, SIGCONT);
    return stops;
}

/* What rank 0 counts over the rounds. */
struct tally {
    uint64_t keys, stops, won[RACERS], two, none, errors, wrong_shown,
             wrong_get, missed, evicted;
};

/* Rank 0: rank 1's answers next to its own, key by key. */
static void check_round(mpikvs_t *kvs, const struct answer *ans,
                        const struct answer *theirs, uint64_t n,
                        struct tally *t)
{
    unsigned char key[KS], val[VS];
    mpikvs_stats_t st;

    for (uint64_t i = 0; i < n; i++) {
        const struct answer *a[RACERS] = {&ans[i], &theirs[i]};
        int winners = 0, winner = -1, rc;
        uint64_t ver = 0;

        for (int r = 0; r < RACERS; r++) {
            if (a[r]->rc == MPIKVS_OK) {
                winners++;
                winner = r;
            } else if (a[r]->rc != MPIKVS_PRESENT) {
                t->errors++;
            }
        }
        if (winners != 1) {
            if (winners == 2 && t->two < 5)
                mt_note("round %u, key %llu: two winners", round_,
                        (unsigned long long)i);
            winners == 2 ? t->two++ : t->none++;
            continue;
        }
        t->won[winner]++;
        mt_make_key(TAG, round_, i, key, KS);
        if (a[1 - winner]->rc == MPIKVS_PRESENT &&
            (!mt_value_ok(key, KS, a[1 - winner]->seen, VS, &ver) ||
             ver != (uint64_t)winner + 1))
            t->wrong_shown++;
        rc = mpikvs_get(kvs, key, val);
        if (rc == MPIKVS_MISS)
            t->missed++;
        else if (rc != MPIKVS_OK || !mt_value_ok(key, KS, val, VS, &ver) ||
                 ver != (uint64_t)winner + 1)
            t->wrong_get++;
    }
    EXPECT(mpikvs_stats(kvs, MPIKVS_SCOPE_NODE, &st, sizeof st) == MPIKVS_OK,
           "mpikvs_stats");
    t->evicted += st.evictions;
}

/* One round in a fresh table: race, check, close.  Returns rank 1's
 * verdict: whether time is left for another round. */
static bool one_round(struct shared *sh, pid_t racer, uint64_t max_keys,
                      uint64_t end, struct tally *t)
{
    struct answer *ans = NULL, *theirs = NULL;
    struct offering *offers = NULL;
    mpikvs_t      *kvs = NULL;
    uint64_t       n = 0;
    unsigned       stops = 0;
    int            more = 0, rc;
    /* a quarter of the slots (4 a bucket of 4 * 96 bytes or less) */
    mpikvs_options_t o = {.size = sizeof(mpikvs_options_t),
                          .key_size = KS, .value_size = VS,
                          .size_per_node = (size_t)max_keys * 4 * 96 +
                                           (1u << 20),
                          .mode = "lockfree"};

    if (rank_ == 0)
        memset(sh, 0, sizeof *sh);
    mt_phase("open");
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (rc != MPIKVS_OK) {
        EXPECT(0, "mpikvs_open = %d (%s): %s", rc, mpikvs_strerror(rc),
               mpikvs_last_error(NULL));
        mt_abort("mpikvs_open failed");
    }
    if (rank_ < RACERS) {
        if (!(ans = calloc(max_keys, sizeof *ans)) ||
            !(offers = malloc(max_keys * sizeof *offers)))
            mt_abort("out of memory");
        for (uint64_t i = 0; i < max_keys; i++) {
            mt_make_key(TAG, round_, i, offers[i].key, KS);
            mt_make_value(offers[i].key, KS, (uint64_t)rank_ + 1,
                          offers[i].val, VS);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("race");
    if (rank_ == 1)
        n = race_leader(kvs, sh, offers, ans, max_keys, end);
    else if (rank_ == 0)
        n = race_follower(kvs, sh, offers, ans);
    else
        stops = stopper(sh, racer);
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("check");
    more = rank_ == 1 && now_ms() < end;
    MPI_Bcast(&more, 1, MPI_INT, 1, MPI_COMM_WORLD);
    MPI_Bcast(&n, 1, MPI_UINT64_T, 1, MPI_COMM_WORLD);
    MPI_Bcast(&stops, 1, MPI_UNSIGNED, 2, MPI_COMM_WORLD);
    if (rank_ == 1)
        MPI_Send(ans, (int)(n * sizeof *ans), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    if (rank_ == 0) {
        if (!(theirs = calloc(n ? n : 1, sizeof *theirs)))
            mt_abort("out of memory");
        MPI_Recv(theirs, (int)(n * sizeof *theirs), MPI_BYTE, 1, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check_round(kvs, ans, theirs, n, t);
        t->keys += n;
        t->stops += stops;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("close");
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "mpikvs_close = %d (%s)", rc,
           mpikvs_strerror(rc));
    free(ans);
    free(theirs);
    free(offers);
    return more;
}

int main(int argc, char **argv)
{
    unsigned        seconds = 10;
    uint64_t        max_keys = 200000, end;
    struct shared  *sh = NULL;
    struct tally    t = {0};
    MPI_Win         win;
    MPI_Comm        node;
    int             size, nsize, racer;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--max-keys") == 0 && i + 1 < argc)
            max_keys = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--stop-ms") == 0 && i + 1 < argc)
            stop_ms = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cycle-ms") == 0 && i + 1 < argc)
            cycle_ms = strtol(argv[++i], NULL, 10);
        else
            max_keys = 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    if (size != 3 || nsize != 3 || max_keys == 0 || stop_ms <= 0 ||
        cycle_ms <= stop_ms) {
        if (rank_ == 0)
            fprintf(stderr, "usage: mpirun -np 3 (one host) %s [--seconds "
                    "S] [--max-keys N] [--stop-ms T] [--cycle-ms C > T]\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    unsetenv("MPIKVS_CONFIG");

    MPI_Win_allocate_shared(rank_ == 0 ? sizeof *sh : 0, 1, MPI_INFO_NULL,
                            node, &sh, &win);
    if (rank_ != 0) {
        MPI_Aint sz;
        int disp;
        MPI_Win_shared_query(win, 0, &sz, &disp, &sh);
    }
    racer = (int)getpid();
    MPI_Bcast(&racer, 1, MPI_INT, 1, MPI_COMM_WORLD);
    end = now_ms() + seconds * 1000u;
    for (round_ = 0; one_round(sh, (pid_t)racer, max_keys, end, &t);
         round_++)
        ;
    if (rank_ == 0) {
        printf("absent-stopped: %u rounds, %llu keys offered by 2 ranks, "
               "rank 1 stopped %llu times (%ld ms every %ld ms): won by rank "
               "0 %llu, by rank 1 %llu; two winners %llu, none %llu, failed "
               "calls %llu, loser shown another value %llu, get not the "
               "winner's %llu, missed %llu (evictions %llu)\n",
               round_ + 1, (unsigned long long)t.keys,
               (unsigned long long)t.stops, stop_ms, cycle_ms,
               (unsigned long long)t.won[0], (unsigned long long)t.won[1],
               (unsigned long long)t.two, (unsigned long long)t.none,
               (unsigned long long)t.errors,
               (unsigned long long)t.wrong_shown,
               (unsigned long long)t.wrong_get,
               (unsigned long long)t.missed, (unsigned long long)t.evicted);
        fflush(stdout);
        EXPECT(t.keys > 0 && t.stops > 0, "no key offered or no stop");
        EXPECT(t.two == 0, "%llu of %llu keys had two winners",
               (unsigned long long)t.two, (unsigned long long)t.keys);
        EXPECT(t.none == 0, "%llu keys had no winner",
               (unsigned long long)t.none);
        EXPECT(t.errors == 0, "%llu calls failed",
               (unsigned long long)t.errors);
        EXPECT(t.wrong_shown == 0, "%llu losers were shown another value",
               (unsigned long long)t.wrong_shown);
        EXPECT(t.wrong_get == 0, "%llu gets returned another value than "
               "the winner's", (unsigned long long)t.wrong_get);
        EXPECT(t.missed <= t.evicted, "%llu gets missed, more than the %llu "
               "evictions", (unsigned long long)t.missed,
               (unsigned long long)t.evicted);
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
