/*
 * test_thread.c - mpikvs_open and the thread level MPI provides.
 *
 * argv[1] says what to check:
 *   funneled    MPI_Init_thread(MPI_THREAD_FUNNELED): an open from
 *               another thread than the main one is refused before it
 *               makes an MPI call (MPIKVS_ERR_MPI, a message naming the
 *               level and what to do), on every rank; an open from the
 *               main thread works (put, get, close).
 *   serialized  MPI_Init_thread(MPI_THREAD_SERIALIZED): another thread
 *               opens, puts, gets, fences and closes while the main
 *               thread waits for it.
 *   uninit      mpikvs_open before MPI_Init is refused with its message,
 *               not an abort inside MPI; after MPI_Init it works.
 * Run under mpirun (run-thread-test.sh); see mpitest.h for the output.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpikvs.h"
#include "mpitest.h"

#define KS 16u
#define VS 16u

static const mpikvs_options_t opts = {
    .size = sizeof(mpikvs_options_t),
    .key_size = KS, .value_size = VS, .size_per_node = 1u << 20};

/* What one mpikvs_open saw, in the thread that called it (the message
 * of a failed open is per thread). */
struct open_result {
    int       rc;
    mpikvs_t *kvs;
    char      msg[1024];
};

static void open_once(struct open_result *r)
{
    r->kvs = NULL;
    r->rc = mpikvs_open(MPI_COMM_WORLD, &opts, &r->kvs);
    snprintf(r->msg, sizeof r->msg, "%s", mpikvs_last_error(NULL));
}

/* Put a key of this rank's, fence, read it back; then close. */
static void use_and_close(mpikvs_t *kvs, int rank, const char *where)
{
    unsigned char key[KS], value[VS], got[VS];
    int rc;

    mt_make_key(7, (uint32_t)rank, 1, key, KS);
    mt_make_value(key, KS, 1, value, VS);
    rc = mpikvs_put(kvs, key, value);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_put: %s (%s)", where,
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    rc = mpikvs_fence(kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_fence: %s (%s)", where,
           mpikvs_strerror(rc), mpikvs_last_error(kvs));
    memset(got, 0, sizeof got);
    rc = mpikvs_get(kvs, key, got);
    EXPECT(rc == MPIKVS_OK && memcmp(got, value, VS) == 0,
           "%s: mpikvs_get of the own key: %s", where, mpikvs_strerror(rc));
    rc = mpikvs_close(&kvs);
    EXPECT(rc == MPIKVS_OK, "%s: mpikvs_close: %s (%s)", where,
           mpikvs_strerror(rc), mpikvs_last_error(NULL));
}

struct thread_arg {
    struct open_result r;
    int                rank;
    int                use;    /* open worked: use it here and close */
};

static void *other_thread(void *p)
{
    struct thread_arg *a = p;

    open_once(&a->r);
    if (a->use && a->r.rc == MPIKVS_OK)
        use_and_close(a->r.kvs, a->rank, "other thread");
    return NULL;
}

static void run_in_thread(struct thread_arg *a)
{
    pthread_t t;
    int rc = pthread_create(&t, NULL, other_thread, a);

    if (rc != 0) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        mt_abort("cannot start a thread");
    }
    pthread_join(t, NULL);
}

static int expect_level(int want, int provided)
{
    EXPECT(provided == want,
           "MPI_Init_thread provided level %d, not the %d asked for: this "
           "test cannot check that level", provided, want);
    return provided == want;
}

static void funneled(int rank)
{
    struct thread_arg a = {.rank = rank, .use = 0};
    struct open_result m;

    mt_phase("open from another thread under MPI_THREAD_FUNNELED");
    run_in_thread(&a);
    EXPECT(a.r.rc == MPIKVS_ERR_MPI && a.r.kvs == NULL,
           "an open from another thread under MPI_THREAD_FUNNELED returned "
           "%d (%s), handle %p; want MPIKVS_ERR_MPI and none",
           a.r.rc, mpikvs_strerror(a.r.rc), (void *)a.r.kvs);
    EXPECT(strstr(a.r.msg, "MPI_THREAD_FUNNELED") &&
               strstr(a.r.msg, "main thread") &&
               strstr(a.r.msg, "MPI_THREAD_SERIALIZED"),
           "the refusal names the level, the main thread and the remedy: "
           "'%s'", a.r.msg);
    if (a.r.rc == MPIKVS_OK)   /* it opened on every rank: close it */
        mpikvs_close(&a.r.kvs);

    mt_phase("open from the main thread under MPI_THREAD_FUNNELED");
    open_once(&m);
    EXPECT(m.rc == MPIKVS_OK && m.kvs,
           "an open from the main thread under MPI_THREAD_FUNNELED: %s (%s)",
           mpikvs_strerror(m.rc), m.msg);
    if (m.rc == MPIKVS_OK)
        use_and_close(m.kvs, rank, "main thread");
}

static void serialized(int rank)
{
    struct thread_arg a = {.rank = rank, .use = 1};

    mt_phase("open, use and close from another thread (SERIALIZED)");
    run_in_thread(&a);
    EXPECT(a.r.rc == MPIKVS_OK,
           "an open from another thread under MPI_THREAD_SERIALIZED: %s "
           "(%s)", mpikvs_strerror(a.r.rc), a.r.msg);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    struct open_result early = {0};
    int provided = -1, rank;

    if (strcmp(what, "funneled") && strcmp(what, "serialized") &&
        strcmp(what, "uninit")) {
        fprintf(stderr, "usage: %s funneled|serialized|uninit\n", argv[0]);
        return 2;
    }
    if (!strcmp(what, "uninit"))
        open_once(&early);   /* before MPI_Init: no MPI call may happen */
    MPI_Init_thread(&argc, &argv,
                    !strcmp(what, "serialized") ? MPI_THREAD_SERIALIZED
                                                : MPI_THREAD_FUNNELED,
                    &provided);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    if (!strcmp(what, "funneled")) {
        if (expect_level(MPI_THREAD_FUNNELED, provided))
            funneled(rank);
    } else if (!strcmp(what, "serialized")) {
        if (expect_level(MPI_THREAD_SERIALIZED, provided))
            serialized(rank);
    } else {
        struct open_result m;
        EXPECT(early.rc == MPIKVS_ERR_MPI && early.kvs == NULL &&
                   strstr(early.msg, "MPI is not initialized") &&
                   strstr(early.msg, "MPI_Init"),
               "mpikvs_open before MPI_Init: %d (%s), '%s'; want "
               "MPIKVS_ERR_MPI saying to call MPI_Init first",
               early.rc, mpikvs_strerror(early.rc), early.msg);
        mt_phase("open after MPI_Init");
        open_once(&m);
        EXPECT(m.rc == MPIKVS_OK, "an open after MPI_Init: %s (%s)",
               mpikvs_strerror(m.rc), m.msg);
        if (m.rc == MPIKVS_OK)
            use_and_close(m.kvs, rank, "after MPI_Init");
    }
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
