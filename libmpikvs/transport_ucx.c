/*
 * transport_ucx.c - the transport over UCX, with a progress helper.
 *
 * The handle has its own UCP context next to MPI's.  Each node's leader
 * registers the node's data region (ucp_mem_map by address: the plugin or
 * the library made it) and serves it from a worker of its own, the
 * serving worker; every rank reaches the nodes through a second worker,
 * the calling worker, with one endpoint to each node's serving worker.
 * The leaders exchange their serving workers' addresses and the packed
 * rkeys once, at open, among themselves; each tells its node.
 *
 * Why no RMA: a UCX worker accepts a connection from any process that
 * reaches one of its addresses (over TCP, any user of any host of the
 * network), and where UCX emulates RMA and atomics with active messages
 * (every transport of a machine without RDMA: cma offers zero-copy
 * get/put only, which 1.13 does not pick for RMA lanes; sysv and posix
 * reach only memory UCX allocated; tcp has no get), its handlers read and
 * write whatever address a message names, for any peer, on any context
 * made with UCP_FEATURE_RMA.  So by default the context has active
 * messages only: the lock-free mode ships its keys whole to their node
 * (transport_ucx_ship.c), everything else (atomics, the lock modes'
 * buckets and lock words, the probe at open) is a memory operation the
 * node's serving worker performs (transport_ucx_mem.c), and every one of
 * those messages carries the open's secret (transport_ucx_state.h).
 * Where the network checks what a peer may touch (RDMA, whose NIC checks
 * rkeys) and every process that can reach the job is trusted,
 * MPIKVS_UCX_OPS=rma asks for UCX's RMA and atomics instead: mpikvs(7)
 * says what that trusts.
 *
 * Why a helper thread: the messages above are served by the target
 * worker's progress.  So the leader runs a thread that progresses the
 * serving worker and sleeps on its event descriptor when idle; the
 * library's own calls on the leader progress it too.  The thread never
 * calls MPI.  With MPIKVS_UCX_OPS=rma on InfiniBand the operations are
 * RDMA and the thread sleeps.
 *
 * A node of the same host (virtual nodes; nodes that share a machine) is
 * not reached through UCX at all where the user's MPIKVS_UCX_TLS (else
 * UCX_TLS) allows shared memory: its region is mapped here and its
 * operations are loads, stores and CPU atomics, as for the node's own
 * ranks, so they need no leader, no helper and no wake-up (map_region).
 * UCX 1.13 cannot do this for memory it did not allocate (its sysv and
 * posix transports reach only their own segments), and a region UCX
 * allocated would be UCX's, not the plugin's to create, name and remove.
 *
 * cpu_atomic is true: the serving worker's atomics are the CPU's, and
 * with RMA the context runs with UCX_ATOMIC_MODE=cpu, so that the
 * atomics are executed by the target's CPU (UCX's software atomics,
 * locked instructions on the serving worker's host, or a transport's CPU
 * atomics), never by a NIC, whose atomics are not atomic with the locked
 * instructions of the ranks that use the region directly.
 *
 * Every wait is bounded (transport_ucx_wait.c), and a lost node is an
 * error, not a hang: endpoints to other hosts run with UCX's peer error
 * handling, and a leader on this host is watched by its pid
 * (connect_nodes).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include "errors.h"
#include "route.h"
#include "transport_ucx_state.h"
#include "transport_ucx.h"
#include "transport_ucx_mem.h"
#include "transport_ucx_serve.h"
#include "transport_ucx_ship.h"
#include "transport_ucx_wait.h"

#define UCX_IDLE_POLL_MS 1000   /* the helper's sleep, as a safety net */

/* What a leader publishes of its node, in the leaders' exchange. */
struct node_info_head {
    uint64_t base;       /* the region's address in the leader */
    uint64_t size;       /* and its length */
    uint32_t addr_len;   /* serving worker's address, then the rkey */
    uint32_t rkey_len;
    int32_t  pid;        /* the leader's */
    char     boot_id[40];/* its kernel's (/proc/.../boot_id), or "" */
    char     shm_dir[KVSHM_DIR_MAX + 1];/* where the region is, "" for */
    char     region[KVSHM_NAME_MAX + 1];/* the default, and its name */
};

/* ---- the progress helper ---- */

/* Progress the serving worker until it is idle; the caller holds
 * server_lock. */
static void serve_pending(struct ucx_transport *s)
{
    while (ucp_worker_progress(s->server))
        ;
}

static void *helper_main(void *arg)
{
    struct ucx_transport *s = arg;
    struct pollfd pfd = {.fd = s->efd, .events = POLLIN};

    for (;;) {
        ucs_status_t st = UCS_OK;

        pthread_mutex_lock(&s->server_lock);
        serve_pending(s);
        if (!atomic_load(&s->stopping))
            st = ucp_worker_arm(s->server);
        pthread_mutex_unlock(&s->server_lock);
        if (atomic_load(&s->stopping))
            break;
        if (st == UCS_ERR_BUSY)   /* events came in meanwhile */
            continue;
        /* The timeout is a safety net, not the wake-up: ucp_worker_arm
         * makes the descriptor readable at the next event, and
         * ucp_worker_signal at close.  A worker that cannot be armed is
         * served every millisecond. */
        poll(&pfd, 1, st == UCS_OK ? UCX_IDLE_POLL_MS : 1);
    }
    return NULL;
}

static int check_node(mpikvs_t *kvs, uint32_t node)
{
    return ucx_state(kvs)->nodes[node].lost == UCS_OK
               ? MPIKVS_OK
               : ucx_node_lost(kvs, node);
}

/* ---- the operations ---- */

static int keep_get(mpikvs_t *kvs, ucs_status_ptr_t req, uint32_t node)
{
    struct ucx_transport *s = ucx_state(kvs);

    if (s->ngets == s->gets_cap) {
        size_t cap = s->gets_cap ? 2 * s->gets_cap : 2 * BATCH_CHUNK;
        struct pending_get *g = realloc(s->gets, cap * sizeof(*g));
        if (!g)   /* wait for this one now instead */
            return ucx_wait_done(kvs, req, node, "ucp_get_nbx");
        s->gets = g;
        s->gets_cap = cap;
    }
    s->gets[s->ngets++] = (struct pending_get){req, node};
    return MPIKVS_OK;
}

/* Wait for every get issued since the last flush (the first error wins;
 * the others are still waited for, so that none is left in flight). */
static int wait_gets(mpikvs_t *kvs)
{
    struct ucx_transport *s = ucx_state(kvs);
    int rc = MPIKVS_OK;

    for (size_t i = 0; i < s->ngets; i++) {
        int r = ucx_wait_done(kvs, s->gets[i].req, s->gets[i].node,
                              "ucp_get_nbx");
        if (rc == MPIKVS_OK)
            rc = r;
        if (r == MPIKVS_ERR_STALLED) {
            /* given up on: the rest would wait as long */
            s->ngets = 0;
            return rc;
        }
    }
    s->ngets = 0;
    return rc;
}

static bool ucx_poll(mpikvs_t *kvs)
{
    struct ucx_transport *s = ucx_state(kvs);

    if (!s->caller)
        return true;
    ucp_worker_progress(s->caller);
    for (size_t i = 0; i < s->ngets; i++)
        if (UCS_PTR_IS_PTR(s->gets[i].req) &&
            !ucx_request_done(s->gets[i].req))
            return false;
    return ucx_ship_answered(kvs) && ucx_mem_answered(kvs);
}

/* A get or a put, completed by the flush (which waits for every
 * operation of the node, or of all). */
static int rma(mpikvs_t *kvs, uint32_t node, uint64_t disp, void *buf,
               size_t len, bool put)
{
    struct ucx_node *n = &ucx_state(kvs)->nodes[node];
    ucp_request_param_t p = {.op_attr_mask = 0};
    ucs_status_ptr_t req;

    if (n->direct) {
        if (put)
            memcpy(n->direct + disp, buf, len);
        else
            memcpy(buf, n->direct + disp, len);
        return MPIKVS_OK;
    }
    if (!ucx_state(kvs)->rma)
        return put ? ucx_mem_write(kvs, node, disp, buf, len)
                   : ucx_mem_read(kvs, node, disp, buf, len);
    if (n->lost != UCS_OK)
        return ucx_node_lost(kvs, node);
    req = put ? ucp_put_nbx(n->ep, buf, len, n->base + disp, n->rkey, &p)
              : ucp_get_nbx(n->ep, buf, len, n->base + disp, n->rkey, &p);
    /* a put done here (req NULL) is done at the target only at a flush */
    n->puts |= put;
    if (UCS_PTR_IS_ERR(req) || !req)
        return ucx_wait_done(kvs, req, node,
                             put ? "ucp_put_nbx" : "ucp_get_nbx");
    if (put) {   /* the flush waits for the puts */
        ucp_request_free(req);
        return MPIKVS_OK;
    }
    return keep_get(kvs, req, node);
}

static int ucx_read(mpikvs_t *kvs, uint32_t node, uint64_t disp, void *buf,
                    size_t len)
{
    return rma(kvs, node, disp, buf, len, false);
}

static int ucx_write(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                     const void *buf, size_t len)
{
    /* UCX reads buf only, whatever the cast says */
    return rma(kvs, node, disp, (void *)buf, len, true);
}

static int atomic64(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                    ucp_atomic_op_t op, uint64_t operand, uint64_t *reply,
                    const char *what)
{
    struct ucx_node *n = &ucx_state(kvs)->nodes[node];
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                        UCP_OP_ATTR_FIELD_REPLY_BUFFER,
        .datatype = ucp_dt_make_contig(sizeof(uint64_t)),
        .reply_buffer = reply};

    if (n->direct) {
        uint64_t *word = (uint64_t *)(void *)(n->direct + disp);
        if (op == UCP_ATOMIC_OP_CSWAP) {   /* as UCX's: see ucx_cas64 */
            uint64_t seen = operand;
            __atomic_compare_exchange_n(word, &seen, *reply, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            *reply = seen;
        } else {
            *reply = __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
        }
        return MPIKVS_OK;
    }
    if (!ucx_state(kvs)->rma)
        return op == UCP_ATOMIC_OP_CSWAP
                   ? ucx_mem_cas(kvs, node, disp, operand, *reply, reply)
                   : ucx_mem_add(kvs, node, disp, (int64_t)operand, reply);
    if (n->lost != UCS_OK)
        return ucx_node_lost(kvs, node);
    return ucx_wait_done(kvs,
                         ucp_atomic_op_nbx(n->ep, op, &operand, 1,
                                           n->base + disp, n->rkey, &p),
                         node, what);
}

static int ucx_cas64(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                     uint64_t expect, uint64_t desired, uint64_t *seen)
{
    /* UCX's CSWAP compares with the operand and swaps in what the reply
     * buffer holds, which then receives the word before */
    *seen = desired;
    return atomic64(kvs, node, disp, UCP_ATOMIC_OP_CSWAP, expect, seen,
                    "an atomic compare-and-swap");
}

static int ucx_fetch_add64(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                           int64_t add, uint64_t *before)
{
    return atomic64(kvs, node, disp, UCP_ATOMIC_OP_ADD, (uint64_t)add,
                    before, "an atomic fetch-and-add");
}

static int ucx_flush(mpikvs_t *kvs, uint32_t node)
{
    struct ucx_transport *s = ucx_state(kvs);
    ucp_request_param_t p = {.op_attr_mask = 0};
    int rc;

    /* the mapped regions' loads and stores, before and after */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!s->caller)   /* no node is ever remote */
        return MPIKVS_OK;
    if ((rc = wait_gets(kvs)) != MPIKVS_OK ||
        (rc = ucx_ship_flush(kvs)) != MPIKVS_OK ||
        (rc = ucx_mem_flush(kvs, node)) != MPIKVS_OK)
        return rc;
    /* Shipped keys, memory operations, gets and atomics are complete by
     * now; only RMA puts
     * need UCX's flush, which costs a wait for the target even where
     * none is in flight (over tcp, a remote get took 1.6x as long with
     * it). */
    if (node == KVS_ALL_NODES) {
        bool puts = false;
        for (uint32_t n = 0; n < kvs->nnodes; n++) {
            puts |= s->nodes[n].puts;
            s->nodes[n].puts = false;
        }
        if (!puts)
            return MPIKVS_OK;
        rc = ucx_wait_done(kvs, ucp_worker_flush_nbx(s->caller, &p), node,
                           "flushing the operations");
        /* a failed flush names the node it lost, if one was */
        for (uint32_t n = 0; rc != MPIKVS_OK && n < kvs->nnodes; n++)
            if (s->nodes[n].lost != UCS_OK)
                return ucx_node_lost(kvs, n);
        return rc;
    }
    if (s->nodes[node].direct)
        return MPIKVS_OK;
    if ((rc = check_node(kvs, node)) != MPIKVS_OK || !s->nodes[node].puts)
        return rc;
    s->nodes[node].puts = false;
    return ucx_wait_done(kvs, ucp_ep_flush_nbx(s->nodes[node].ep, &p), node,
                         "flushing the operations");
}

/* ---- open ---- */

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct ucx_transport *s = arg;

    for (uint32_t n = 0; n < s->kvs->nnodes; n++)
        if (s->nodes[n].ep == ep)
            s->nodes[n].lost = status;
}

/* The context and the calling worker; the leader's serving worker, its
 * region's registration (with RMA), and the helper. */
static int open_local(mpikvs_t *kvs, struct ucx_transport *s)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES |
                      UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_NAME,
        /* no RMA unless asked for: see the top of this file */
        .features = (s->rma ? UCP_FEATURE_RMA | UCP_FEATURE_AMO64 : 0) |
                    UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 1,
        .name = "mpikvs"};
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_config_t *config;
    ucs_status_t st;
    int rc;

    /* MPIKVS_UCX_<NAME> over UCX_<NAME>: settings for this context only,
     * beside the MPI library's own (MPICH's ch4:ucx, Open MPI's pml and
     * osc ucx), which read UCX_<NAME> alone. */
    if ((st = ucp_config_read("MPIKVS", NULL, &config)) != UCS_OK)
        return ucx_fail(kvs, "reading the UCX configuration", st);
    /* atomics by the target's CPU: see the top of this file */
    st = ucp_config_modify(config, "ATOMIC_MODE", "cpu");
    /* One region, registered once: no registration cache, which would
     * hook this process's malloc and mmap (UCX's memory events) from
     * here, while the application's threads run. */
    if (st == UCS_OK)
        st = ucp_config_modify(config, "RCACHE_ENABLE", "n");
    if (st == UCS_OK)
        st = ucp_init(&params, config, &s->context);
    ucp_config_release(config);
    if (st != UCS_OK)
        return ucx_fail(kvs, "ucp_init", st);
    if ((st = ucp_worker_create(s->context, &wp, &s->caller)) != UCS_OK)
        return ucx_fail(kvs, "creating a worker", st);
    if ((rc = ucx_shipping_open(kvs, s)) != MPIKVS_OK ||
        (rc = ucx_mem_open(kvs, s)) != MPIKVS_OK)
        return rc;
    if (kvs->local_rank != 0)
        return MPIKVS_OK;

    /* serialized: the helper and the library's calls take server_lock */
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    if ((st = ucp_worker_create(s->context, &wp, &s->server)) != UCS_OK)
        return ucx_fail(kvs, "creating the serving worker", st);
    if ((st = ucp_worker_get_efd(s->server, &s->efd)) != UCS_OK)
        return ucx_fail(kvs, "ucp_worker_get_efd", st);
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = kvs->region->base,
        .length = kvs->region->size};
    if (s->rma && (st = ucp_mem_map(s->context, &mp, &s->memh)) != UCS_OK)
        return ucx_fail(kvs, "registering the node's region (ucp_mem_map)",
                        st);
    if ((rc = ucx_serving_open(kvs, s)) != MPIKVS_OK ||
        (rc = ucx_mem_serve(kvs, s)) != MPIKVS_OK)
        return rc;
    int e = pthread_create(&s->helper, NULL, helper_main, s);
    if (e)
        return kvs_fail(kvs, -e, "cannot start the UCX progress helper "
                                 "thread: %s", strerror(e));
    s->helper_started = true;
    return MPIKVS_OK;
}

/* What tells this kernel from another: two leaders with the same one
 * share the host (its shared memory, its pids).  "" if unknown. */
static void read_boot_id(char *buf, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    buf[0] = '\0';
    if (f) {
        if (!fgets(buf, (int)len, f))
            buf[0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
}

/* The leader's row of the exchange: head, worker address, rkey. */
static int pack_node(mpikvs_t *kvs, struct ucx_transport *s, void **row,
                     int *len)
{
    struct node_info_head h = {.base = (uint64_t)(uintptr_t)kvs->region->base,
                               .size = kvs->region->size};
    ucp_address_t *addr = NULL;
    void *rkey = NULL;
    size_t addr_len = 0, rkey_len = 0;
    ucs_status_t st;

    pthread_mutex_lock(&s->server_lock);
    st = ucp_worker_get_address(s->server, &addr, &addr_len);
    pthread_mutex_unlock(&s->server_lock);
    if (st != UCS_OK)
        return ucx_fail(kvs, "ucp_worker_get_address", st);
    if (s->memh &&   /* with RMA only */
        (st = ucp_rkey_pack(s->context, s->memh, &rkey, &rkey_len)) !=
            UCS_OK) {
        ucp_worker_release_address(s->server, addr);
        return ucx_fail(kvs, "ucp_rkey_pack", st);
    }
    h.addr_len = (uint32_t)addr_len;
    h.rkey_len = (uint32_t)rkey_len;
    h.pid = (int32_t)getpid();
    read_boot_id(h.boot_id, sizeof(h.boot_id));
    snprintf(h.shm_dir, sizeof(h.shm_dir), "%s", kvs->shm_dir);
    snprintf(h.region, sizeof(h.region), "%s", kvs->region_name);
    *len = (int)(sizeof(h) + addr_len + rkey_len);
    *row = malloc((size_t)*len);
    if (*row) {
        memcpy(*row, &h, sizeof(h));
        memcpy((char *)*row + sizeof(h), addr, addr_len);
        if (rkey_len)   /* no rkey without RMA: memcpy's NULL is UB */
            memcpy((char *)*row + sizeof(h) + addr_len, rkey, rkey_len);
    }
    if (rkey)
        ucp_rkey_buffer_release(rkey);
    pthread_mutex_lock(&s->server_lock);
    ucp_worker_release_address(s->server, addr);
    pthread_mutex_unlock(&s->server_lock);
    return *row ? MPIKVS_OK
                : kvs_fail(kvs, -ENOMEM, "out of memory for UCX addresses");
}

/* The leaders gather every node's row (in node order: the leaders' comm
 * ranks are in comm order, as is kvs->leaders), then each tells its node.
 * *all holds the rows back to back, *displs[nnodes] where each starts. */
static int exchange(mpikvs_t *kvs, struct ucx_transport *s, char **all,
                    int **displs)
{
    int n = (int)kvs->nnodes, total = 0, mine_len = 0, rc = MPIKVS_OK;
    int *lens = calloc((size_t)n, sizeof(int));
    void *mine = NULL;

    *all = NULL;
    *displs = calloc((size_t)n + 1, sizeof(int));
    if (!lens || !*displs) {
        free(lens);
        return kvs_fail(kvs, -ENOMEM, "out of memory for UCX addresses");
    }
    if (kvs->local_rank == 0) {
        /* every leader takes part, one that failed with length -1 */
        rc = pack_node(kvs, s, &mine, &mine_len);
        if (rc != MPIKVS_OK)
            mine_len = -1;
        if (MPI_Allgather(&mine_len, 1, MPI_INT, lens, 1, MPI_INT,
                          kvs->leaders_comm) != MPI_SUCCESS)
            rc = kvs_fail(kvs, MPIKVS_ERR_MPI,
                          "MPI_Allgather of the UCX address lengths");
        for (int i = 0; rc == MPIKVS_OK && i < n; i++)
            if (lens[i] < 0)
                rc = kvs_fail(kvs, MPIKVS_ERR_TRANSPORT,
                              "UCX: node %d's leader could not publish its "
                              "address",
                              i);
    }
    /* a leader that failed has its message; its node learns the code */
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, kvs->node_comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast in the node");
    if (rc == MPIKVS_OK &&
        MPI_Bcast(lens, n, MPI_INT, 0, kvs->node_comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast in the node");
    if (rc == MPIKVS_OK) {
        for (int i = 0; i < n; i++)
            (*displs)[i + 1] = (*displs)[i] + lens[i];
        total = (*displs)[n];
        *all = malloc((size_t)total);
        if (!*all)
            rc = kvs_fail(kvs, -ENOMEM, "out of memory for UCX addresses");
    }
    /* every leader came this far (the lengths' allgather succeeded on
     * all of them, or failed on all) */
    if (rc == MPIKVS_OK && kvs->local_rank == 0 &&
        MPI_Allgatherv(mine, mine_len, MPI_BYTE, *all, lens, *displs,
                       MPI_BYTE, kvs->leaders_comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Allgatherv of UCX addresses");
    if (rc == MPIKVS_OK &&
        MPI_Bcast(*all, total, MPI_BYTE, 0, kvs->node_comm) != MPI_SUCCESS)
        rc = kvs_fail(kvs, MPIKVS_ERR_MPI, "MPI_Bcast in the node");
    free(mine);
    free(lens);
    return rc;
}

/* May UCX use shared memory here?  Not where the transports this
 * context reads (MPIKVS_UCX_TLS, else UCX_TLS: see ucp_config_read)
 * leave it out, as "tcp,self" does, standing for hosts without it. */
static bool shm_allowed(void)
{
    static const char *const shm[] = {"all", "sm", "shm", "posix", "sysv",
                                      "mm", "cma", "xpmem", "knem"};
    const char *tls = getenv("MPIKVS_UCX_TLS");
    bool negated, named = false;
    char buf[256], *save = NULL;

    if (!tls)
        tls = getenv("UCX_TLS");
    if (!tls || !*tls)
        return true;
    negated = tls[0] == '^';
    snprintf(buf, sizeof(buf), "%s", tls + negated);
    for (char *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < sizeof(shm) / sizeof(shm[0]); i++)
            if (strcmp(t, shm[i]) == 0 &&
                (!negated || i == 1 || i == 2))   /* ^sm, ^shm */
                named = true;
    return negated ? !named : named;
}

/* A node of this host, its region mapped here: its operations are loads,
 * stores and CPU atomics, as for the node's own ranks, and need neither
 * UCX nor the node's leader.  The region stays the plugin's (or its
 * leader's): this only maps it.  MPIKVS_OK, or why it cannot. */
static int map_region(mpikvs_t *kvs, struct ucx_node *n,
                      const struct node_info_head *h, uint32_t node)
{
    struct kvshm_open_opts oo = {.kind = KVSHM_KIND_DATA, .writable = true,
                                 .expect_uid = geteuid()};
    mpikvs_error_t err;
    int rc;

    if (node == kvs->node) {
        n->direct = kvs->region->base;
        return MPIKVS_OK;
    }
    rc = kvshm_region_open(h->shm_dir[0] ? h->shm_dir : NULL, h->region, &oo,
                           &n->mapped, &err);
    if (rc == MPIKVS_OK && n->mapped->size != kvs->region->size) {
        kvshm_region_close(&n->mapped);
        rc = MPIKVS_ERR_MISMATCH;
    }
    if (rc == MPIKVS_OK)
        n->direct = n->mapped->base;
    return rc;
}

/* An endpoint to each node's serving worker, with its rkey.
 *
 * A leader on another host gets an endpoint with UCX's peer error
 * handling: a lost peer fails the operations instead of hanging them.
 * UCX 1.13's shared-memory transports cannot handle peer errors, so with
 * it UCX would reach a leader on this host over TCP, at a quarter of the
 * speed; such a leader gets an endpoint without, over shared memory, and
 * is watched by its pid instead (check_alive). */
static int connect_nodes(mpikvs_t *kvs, struct ucx_transport *s,
                         const char *all, const int *displs)
{
    char boot_id[sizeof(((struct node_info_head *)0)->boot_id)];
    bool shm = shm_allowed();

    read_boot_id(boot_id, sizeof(boot_id));
    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        const char *row = all + displs[n];
        struct node_info_head h;
        ucs_status_t st;

        memcpy(&h, row, sizeof(h));
        if ((int)(sizeof(h) + h.addr_len + h.rkey_len) !=
                displs[n + 1] - displs[n] ||
            h.size != kvs->region->size)
            return kvs_fail(kvs, MPIKVS_ERR_MISMATCH,
                            "UCX: node %u's region is not like this one's "
                            "(%llu bytes, here %llu)",
                            n, (unsigned long long)h.size,
                            (unsigned long long)kvs->region->size);
        bool here = boot_id[0] && strncmp(h.boot_id, boot_id,
                                          sizeof(h.boot_id)) == 0;

        /* The own node's region is mapped already, whatever UCX_TLS
         * says.  A node of this host whose region cannot be mapped here
         * (it is in another mount namespace: job_container/tmpfs gives
         * each node of a job its own /dev/shm) is reached through UCX. */
        if ((n == kvs->node || (here && shm)) &&
            map_region(kvs, &s->nodes[n], &h, n) == MPIKVS_OK)
            continue;
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                          UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = (const ucp_address_t *)(row + sizeof(h)),
            .err_mode = here ? UCP_ERR_HANDLING_MODE_NONE
                             : UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = ep_error, .arg = s}};
        s->nodes[n].pid = here ? (pid_t)h.pid : 0;
        s->nodes[n].base = h.base;
        if ((st = ucp_ep_create(s->caller, &ep, &s->nodes[n].ep)) != UCS_OK) {
            s->nodes[n].ep = NULL;
            return kvs_fail(kvs, MPIKVS_ERR_TRANSPORT,
                            "UCX: cannot reach node %u (its leader is rank "
                            "%d): %s (MPIKVS_UCX_TLS, else UCX_TLS, chooses "
                            "what UCX may use; MPIKVS_TRANSPORT=auto falls "
                            "back to mpi)",
                            n, kvs->leaders[n], ucs_status_string(st));
        }
        if (!s->rma)
            continue;
        st = h.rkey_len ? ucp_ep_rkey_unpack(s->nodes[n].ep,
                                             row + sizeof(h) + h.addr_len,
                                             &s->nodes[n].rkey)
                        : UCS_ERR_NO_ELEM;   /* its leader has no RMA */
        if (st != UCS_OK) {
            s->nodes[n].rkey = NULL;
            return ucx_fail(kvs, "ucp_ep_rkey_unpack", st);
        }
    }
    return MPIKVS_OK;
}

/* Read every node's region header and compare it with ours: proves the
 * addresses and keys work, and connects the endpoints before the first
 * get. */
static int probe_nodes(mpikvs_t *kvs)
{
    const struct kvshm_header *own = kvs->region->base;
    struct kvshm_header *heads = calloc(kvs->nnodes, sizeof(*heads));
    int rc = heads ? MPIKVS_OK
                   : kvs_fail(kvs, -ENOMEM, "out of memory probing nodes");

    for (uint32_t n = 0; rc == MPIKVS_OK && n < kvs->nnodes; n++)
        rc = ucx_read(kvs, n, 0, &heads[n], sizeof(heads[n]));
    if (rc == MPIKVS_OK)
        rc = ucx_flush(kvs, KVS_ALL_NODES);
    for (uint32_t n = 0; rc == MPIKVS_OK && n < kvs->nnodes; n++)
        if (memcmp(heads[n].magic, own->magic, sizeof(own->magic)) ||
            heads[n].format_id != own->format_id ||
            heads[n].kind != own->kind)
            rc = kvs_fail(kvs, MPIKVS_ERR_TRANSPORT,
                          "UCX: what node %u's region reads through UCX "
                          "is not a region like this node's",
                          n);
    free(heads);
    return rc;
}

/* ---- close ---- */

static void stop_helper(struct ucx_transport *s)
{
    if (!s->helper_started)
        return;
    atomic_store(&s->stopping, true);
    ucp_worker_signal(s->server);
    pthread_join(s->helper, NULL);
    s->helper_started = false;
}

/* Close the endpoints while every serving worker still runs: a
 * flushing close needs the peer. */
static void ucx_release(mpikvs_t *kvs)
{
    struct ucx_transport *s = ucx_state(kvs);

    if (!s || !s->nodes)
        return;
    for (uint32_t n = 0; n < kvs->nnodes; n++) {
        struct ucx_node *nd = &s->nodes[n];
        kvshm_region_close(&nd->mapped);
        nd->direct = NULL;
        if (nd->rkey)
            ucp_rkey_destroy(nd->rkey);
        nd->rkey = NULL;
        if (!nd->ep)
            continue;
        ucp_request_param_t p = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            /* a failed open: the peers may be gone already */
            .flags = nd->lost != UCS_OK || !s->opened
                         ? UCP_EP_CLOSE_FLAG_FORCE
                         : 0};
        ucs_status_ptr_t req = ucp_ep_close_nbx(nd->ep, &p);
        nd->ep = NULL;
        /* a peer that does not answer: leave the rest to the workers'
         * destruction (or the exit) rather than wait for each */
        if (ucx_wait_done(kvs, req, n, "closing an endpoint") ==
            MPIKVS_ERR_STALLED)
            break;
    }
}

static bool ucx_close(mpikvs_t *kvs, bool together)
{
    struct ucx_transport *s = ucx_state(kvs);

    if (!s)
        return false;
    ucx_release(kvs);
    /* Without every rank at close, another may still read this node: the
     * helper goes on serving it until the process ends. */
    if (!together && s->helper_started)
        return true;
    stop_helper(s);
    if (s->memh)
        ucp_mem_unmap(s->context, s->memh);
    if (s->server)
        ucp_worker_destroy(s->server);
    if (s->caller)
        ucp_worker_destroy(s->caller);
    if (s->context)
        ucp_cleanup(s->context);
    pthread_mutex_destroy(&s->server_lock);
    ucx_shipping_close(s);
    ucx_serving_close(s);
    ucx_mem_close(s);
    explicit_bzero(s->secret, sizeof(s->secret));
    free(s->gets);
    free(s->nodes);
    free(s);
    kvs->tp_state = NULL;
    return false;
}

static bool ucx_mapped(const mpikvs_t *kvs, uint32_t node)
{
    return ucx_state(kvs)->nodes[node].direct != NULL;
}

static const struct kvs_transport ucx_transport = {
    .cpu_atomic = true,
    .read = ucx_read,
    .write = ucx_write,
    .cas64 = ucx_cas64,
    .fetch_add64 = ucx_fetch_add64,
    .flush = ucx_flush,
    .mapped = ucx_mapped,
    .ships = ucx_ships,
    .ship = ucx_ship,
    .post = ucx_ship_post,
    .poll = ucx_poll,
    .lock_node = NULL,   /* the coarse-lock mode is MPI's */
    .unlock_node = NULL,
    .release = ucx_release,
    .close = ucx_close,
};

/* What every rank of an open shares before UCX starts: rank 0's secret
 * (getrandom) and its MPIKVS_UCX_OPS, which decides the context's
 * features for the whole job (a leader without RMA has no rkey to give). */
static int agree_secret(mpikvs_t *kvs, struct ucx_transport *s)
{
    struct {
        int32_t  rc, ops;
        uint64_t secret[KVS_UCX_SECRET_WORDS];
    } shared = {.rc = MPIKVS_OK, .ops = (int32_t)kvs->ucx_ops};
    int rank;

    MPI_Comm_rank(kvs->comm, &rank);
    if (rank == 0 &&
        getrandom(shared.secret, sizeof(shared.secret), 0) !=
            (ssize_t)sizeof(shared.secret))
        shared.rc = kvs_fail(kvs, MPIKVS_ERR_TRANSPORT,
                             "UCX: getrandom(2) could not draw the open's "
                             "secret: %s",
                             strerror(errno));
    if (MPI_Bcast(&shared, (int)sizeof(shared), MPI_BYTE, 0, kvs->comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "MPI_Bcast of the UCX secret failed");
    if (shared.rc != MPIKVS_OK)
        return rank == 0 ? shared.rc
                         : kvs_fail(kvs, shared.rc,
                                    "UCX: rank 0 could not draw the open's "
                                    "secret");
    memcpy(s->secret, shared.secret, sizeof(s->secret));
    s->rma = shared.ops == KVS_UCX_OPS_RMA;
    memset(&shared, 0, sizeof(shared));
    return MPIKVS_OK;
}

int kvs_transport_ucx_open(mpikvs_t *kvs)
{
    struct ucx_transport *s = calloc(1, sizeof(*s));
    char *all = NULL;
    int *displs = NULL;
    int rc;

    if (!s)
        return kvs_fail(kvs, -ENOMEM, "out of memory for the UCX transport");
    s->kvs = kvs;
    s->efd = -1;
    s->wait_ms = kvs->timeout * 1000u;
    pthread_mutex_init(&s->server_lock, NULL);
    kvs->tp_state = s;
    kvs->tp = &ucx_transport;
    /* On one node the lock-free mode reads and writes shared memory only */
    if (!kvs_routes_need_transport(kvs))
        return MPIKVS_OK;
    if ((rc = agree_secret(kvs, s)) != MPIKVS_OK)
        return rc;
    s->nodes = calloc(kvs->nnodes, sizeof(*s->nodes));
    rc = s->nodes ? open_local(kvs, s)
                  : kvs_fail(kvs, -ENOMEM, "out of memory for UCX");
    if ((rc = kvs_agree(kvs, rc)) != MPIKVS_OK)
        return rc;
    rc = exchange(kvs, s, &all, &displs);
    if (rc == MPIKVS_OK)
        rc = connect_nodes(kvs, s, all, displs);
    free(all);
    free(displs);
    if ((rc = kvs_agree(kvs, rc)) != MPIKVS_OK)
        return rc;
    rc = kvs_agree(kvs, probe_nodes(kvs));
    if (rc == MPIKVS_OK)
        ucx_shipping_choose(kvs, s);
    s->opened = rc == MPIKVS_OK;
    return rc;
}
