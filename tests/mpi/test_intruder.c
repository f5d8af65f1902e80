/*
 * test_intruder.c - a job that another user attacks through its UCX
 * workers (run-intruder-test.sh; the attacker is ucx_intruder.c).
 *
 * np=2 on MPIKVS_VIRTUAL_NODES=2 over MPIKVS_TRANSPORT=ucx and
 * MPIKVS_UCX_TLS=tcp,self, as across hosts without RDMA: each rank is its
 * node's leader, with a serving worker that any local user can connect
 * to.  Each rank puts NKEYS keys whose home is its node, fences, and
 * publishes in DIR (argv[1]) what an attacker who found the job's ports
 * would learn, and more: both workers' UCX addresses, the region's
 * address in the process, and the keys (DIR/ready.R once written).
 * While the attacker runs (until DIR/done appears, bounded), every rank
 * gets every key of the other node again and again, so that forged
 * answers would have a get to land in.  Then every rank checks every
 * key of both nodes: the value it put, or a failure.  A rank that the
 * attack crashed fails the job.
 *
 * The table's keys and values are made by mt_make_key/mt_make_value
 * (mpitest.h): the attacker's puts carry other values.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mpikvs.h"
#include "mpitest.h"
#include "mt_key_home.h"
#include "transport_ucx_state.h"

#define KS 16
#define VS 32
#define NKEYS 64
#define ATTACK_S 120   /* the longest the attacker is waited for */

static int rank;
static const char *dir;

static void write_bytes(FILE *f, const void *p, size_t len)
{
    fprintf(f, "%zu ", len);
    for (size_t i = 0; i < len; i++)
        fprintf(f, "%02x", ((const unsigned char *)p)[i]);
    fprintf(f, "\n");
}

/* A worker's address, taken as pack_node does (under server_lock where
 * the helper progresses it). */
static void write_address(FILE *f, struct ucx_transport *s, ucp_worker_h w)
{
    ucp_address_t *addr = NULL;
    size_t len = 0;

    pthread_mutex_lock(&s->server_lock);
    if (ucp_worker_get_address(w, &addr, &len) != UCS_OK)
        mt_abort("ucp_worker_get_address");
    write_bytes(f, addr, len);
    ucp_worker_release_address(w, addr);
    pthread_mutex_unlock(&s->server_lock);
}

/* DIR/ready.R: serving address, calling address, region address, then
 * the keys of this node, a line each.  Written whole, then renamed. */
static void publish(mpikvs_t *kvs, unsigned char keys[][KS])
{
    struct ucx_transport *s = kvs->tp_state;
    char tmp[512], path[512];
    FILE *f;

    snprintf(tmp, sizeof tmp, "%s/ready.%d.tmp", dir, rank);
    snprintf(path, sizeof path, "%s/ready.%d", dir, rank);
    if (!(f = fopen(tmp, "w")))
        mt_abort("cannot write the ready file");
    write_address(f, s, s->server);
    write_address(f, s, s->caller);
    fprintf(f, "%llu\n", (unsigned long long)(uintptr_t)kvs->region->base);
    for (int i = 0; i < NKEYS; i++)
        write_bytes(f, keys[i], KS);
    if (fclose(f) != 0 || chmod(tmp, 0644) != 0 || rename(tmp, path) != 0)
        mt_abort("cannot write the ready file");
}

static bool attack_over(void)
{
    char path[512];

    snprintf(path, sizeof path, "%s/done", dir);
    return access(path, F_OK) == 0;
}

static uint64_t now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec;
}

/* Every key of node: the value put, else a failure (counted in *bad). */
static long check_keys(mpikvs_t *kvs, unsigned char keys[][KS], int node,
                       bool report)
{
    long bad = 0;

    for (int i = 0; i < NKEYS; i++) {
        unsigned char want[VS], got[VS];
        int rc;

        mt_make_value(keys[i], KS, (uint64_t)node, want, VS);
        memset(got, 0, VS);
        rc = mpikvs_get(kvs, keys[i], got);
        if (rc == MPIKVS_OK && memcmp(got, want, VS) == 0)
            continue;
        bad++;
        if (report)
            EXPECT(false, "node %d's key %d: %s%s", node, i,
                   mpikvs_strerror(rc),
                   rc == MPIKVS_OK ? ", another value" : "");
    }
    return bad;
}

int main(int argc, char **argv)
{
    static unsigned char keys[2][NKEYS][KS];
    mpikvs_options_t o;
    mpikvs_t *kvs = NULL;
    long rounds = 0, bad = 0;
    int rc;

    MPI_Init(&argc, &argv);
    mt_init(argv[0]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2 || mt_node_count() != 2)
        mt_abort("usage: test_intruder DIR, np=2 on 2 (virtual) nodes");
    dir = argv[1];

    o = (mpikvs_options_t)MPIKVS_OPTIONS_INIT;
    o.key_size = KS;
    o.value_size = VS;
    o.size_per_node = 1u << 20;
    o.mode = "lockfree";
    rc = mpikvs_open(MPI_COMM_WORLD, &o, &kvs);
    if (rc != MPIKVS_OK) {
        fprintf(stderr, "rank %d: mpikvs_open: %s\n", rank,
                mpikvs_last_error(NULL));
        mt_abort("mpikvs_open failed");
    }
    if (strcmp(mpikvs_transport(kvs), "ucx") != 0)
        mt_abort("the ucx transport did not open");
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < NKEYS; i++)
            mt_key_home(kvs, 29, (uint32_t)i, (uint32_t)n, keys[n][i], KS);
    mt_phase("puts");
    for (int i = 0; i < NKEYS; i++) {
        unsigned char v[VS];
        mt_make_value(keys[rank][i], KS, (uint64_t)rank, v, VS);
        rc = mpikvs_put(kvs, keys[rank][i], v);
        EXPECT(rc == MPIKVS_OK, "put: %s", mpikvs_strerror(rc));
    }
    EXPECT(mpikvs_fence(kvs) == MPIKVS_OK, "fence: %s",
           mpikvs_last_error(kvs));
    publish(kvs, keys[rank]);

    /* the attack: gets of the other node's keys, whose answers an
     * attacker might forge, until it is over */
    mt_phase("under attack");
    for (uint64_t t0 = now_s(); !attack_over(); rounds++) {
        if (now_s() - t0 > ATTACK_S)
            mt_abort("the attacker did not finish");
        bad += check_keys(kvs, keys[1 - rank], 1 - rank, false);
    }
    EXPECT(bad == 0, "%ld wrong gets of node %d's keys in %ld rounds "
                     "during the attack", bad, 1 - rank, rounds);
    MPI_Barrier(MPI_COMM_WORLD);

    mt_phase("after the attack");
    for (int n = 0; n < 2; n++)
        bad = check_keys(kvs, keys[n], n, true);
    if (rank == 0)
        mt_note("intruder: %ld rounds of gets during the attack; every "
                "key of both nodes checked after it", rounds);
    EXPECT(mpikvs_close(&kvs) == MPIKVS_OK, "close: %s",
           mpikvs_last_error(NULL));
    int status = mt_finish();
    MPI_Finalize();
    return status;
}
