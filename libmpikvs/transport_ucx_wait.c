/*
 * transport_ucx_wait.c - waiting for UCX, bounded, and the errors of the
 * ucx transport: every wait progresses this rank's workers (the calling
 * one, and on a leader the serving one when its helper is not at it),
 * gives up after MPIKVS_TIMEOUT seconds, and fails at once for a node
 * found lost (UCX's peer error handling, or the pid of a leader on this
 * host).
 *
 * A node given up on is remembered: for UCX_STALLED_RETRY_MS after, a
 * wait for it fails at once instead of waiting its bound again (close
 * with a thousand batches in flight would wait a thousand times); a
 * leader of this host is waited for again as soon as it is no longer
 * stopped, and any node once the period is over, so that the job's later
 * operations work when the node is back.  With RMA (MPIKVS_UCX_OPS=rma)
 * a node given up on is lost for good instead: its endpoint is closed at
 * once, which cancels its requests, so that no late get or atomic lands
 * in a buffer (or on a stack) that has moved on.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "errors.h"
#include "transport_ucx_state.h"
#include "transport_ucx_wait.h"

#define UCX_SPINS_BEFORE_YIELD 16 /* progress calls before a wait yields */
#define UCX_STALLED_RETRY_MS  10000u /* a node given up on fails at once */
#define UCX_NAP_AFTER_MS      10u    /* a wait this long naps between polls */
#define UCX_NAP_NS            100000 /* for 0.1 ms: no core spun away */

int ucx_fail(mpikvs_t *kvs, const char *what, ucs_status_t st)
{
    const struct ucx_transport *s = kvs->tp_state;

    return kvs_fail(kvs, MPIKVS_ERR_TRANSPORT, "UCX: %s failed: %s%s", what,
                    ucs_status_string(st),
                    s && s->opened
                        ? ""
                        : " (UCX did not start: `ucx_info -d` lists what it "
                          "has, UCX_TLS and UCX_NET_DEVICES choose; "
                          "MPIKVS_TRANSPORT=auto falls back to mpi)");
}

/* The library's own calls on the leader serve the node too, when the
 * helper is not at it. */
static void progress(struct ucx_transport *s)
{
    ucp_worker_progress(s->caller);
    if (s->server && pthread_mutex_trylock(&s->server_lock) == 0) {
        ucp_worker_progress(s->server);
        pthread_mutex_unlock(&s->server_lock);
    }
}

/* A leader on this host is checked by its pid: the endpoints to it run
 * without UCX's peer error handling (see connect_nodes). */
static void check_alive(struct ucx_transport *s, uint32_t node)
{
    struct ucx_node *n = &s->nodes[node];

    if (n->pid > 0 && n->lost == UCS_OK && kill(n->pid, 0) == -1 &&
        errno == ESRCH)
        n->lost = UCS_ERR_ENDPOINT_TIMEOUT;
}

/* Whether the process pid is stopped (SIGSTOP, a debugger): its state in
 * /proc/PID/stat, the letter after the command's closing parenthesis. */
static bool process_stopped(pid_t pid)
{
    char path[64], buf[512];
    const char *paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

/* Whether a wait for node fails at once: it was given up on lately, and
 * (for a leader of this host) its leader is still stopped. */
static bool still_stalled(struct ucx_transport *s, uint32_t node,
                          uint64_t now)
{
    struct ucx_node *n = &s->nodes[node];

    if (!n->stalled_ms)
        return false;
    if (now - n->stalled_ms < UCX_STALLED_RETRY_MS &&
        (n->pid <= 0 || process_stopped(n->pid)))
        return true;
    n->stalled_ms = 0;   /* try it again */
    return false;
}

/* again: not waited for, given up on a moment ago (still_stalled). */
static int stalled_error(mpikvs_t *kvs, const char *what, uint32_t node,
                         bool again)
{
    unsigned secs = ucx_state(kvs)->wait_ms / 1000;

    if (node == KVS_ALL_NODES)
        return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                        "UCX: %s did not complete in %u s: a node's "
                        "leader does not answer (MPIKVS_TIMEOUT)",
                        what, secs);
    if (again)
        return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                        "UCX: %s to node %u not tried: its leader (rank %d) "
                        "did not answer in %u s a moment ago",
                        what, node, kvs->leaders[node], secs);
    return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                    "UCX: %s to node %u did not complete in %u s: its "
                    "leader (rank %d) does not answer (MPIKVS_TIMEOUT)",
                    what, node, secs, kvs->leaders[node]);
}

int ucx_node_lost(mpikvs_t *kvs, uint32_t node)
{
    const struct ucx_node *n = &ucx_state(kvs)->nodes[node];

    if (n->lost == UCS_ERR_CANCELED)   /* forget_node */
        return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                        "UCX: node %u (its leader is rank %d) did not "
                        "answer in time earlier, and its endpoint was "
                        "closed (MPIKVS_UCX_OPS=rma)",
                        node, kvs->leaders[node]);
    if (n->pid > 0)   /* check_alive found it gone */
        return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                        "UCX: node %u is unreachable: its leader (rank %d, "
                        "process %d on this host) has died",
                        node, kvs->leaders[node], (int)n->pid);
    return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                    "UCX: node %u (its leader is rank %d) is unreachable: "
                    "%s; a rank there died or its network failed",
                    node, kvs->leaders[node], ucs_status_string(n->lost));
}

/* Progress until ready(arg), bounded by MPIKVS_TIMEOUT; a lost node
 * (node, or any with KVS_ALL_NODES) fails the wait, and so does a node
 * given up on lately (see the top of this file). */
int ucx_wait_until(mpikvs_t *kvs, bool (*ready)(void *), void *arg,
                   uint32_t node, const char *what)
{
    struct ucx_transport *s = ucx_state(kvs);
    uint64_t deadline = 0;
    bool nap = false;

    if (node != KVS_ALL_NODES && !ready(arg) &&
        still_stalled(s, node, kvshm_now_ms()))
        return stalled_error(kvs, what, node, true);
    for (unsigned spins = 0; !ready(arg); spins++) {
        progress(s);
        /* The answer may need a thread of this host that waits for a
         * core (a node's helper, woken by the request): let it have
         * ours rather than spin it away. */
        if (nap) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = UCX_NAP_NS};
            nanosleep(&ts, NULL);
        } else if (spins >= UCX_SPINS_BEFORE_YIELD) {
            sched_yield();
        }
        if ((spins & 1023) != 1023)
            continue;
        uint64_t t = kvshm_now_ms();
        for (uint32_t n = 0; n < kvs->nnodes; n++)
            if (n == node || node == KVS_ALL_NODES)
                check_alive(s, n);
        /* a lost node fails what waits for it */
        for (uint32_t n = 0; n < kvs->nnodes; n++)
            if ((n == node || node == KVS_ALL_NODES) &&
                s->nodes[n].lost != UCS_OK)
                return ucx_node_lost(kvs, n);
        if (!deadline) {
            deadline = t + s->wait_ms;
        } else if (t + s->wait_ms >= deadline + UCX_NAP_AFTER_MS) {
            nap = true;   /* no quick answer: stop spinning a core */
        }
        if (t >= deadline) {
            if (node != KVS_ALL_NODES)
                s->nodes[node].stalled_ms = t;
            return stalled_error(kvs, what, node, false);
        }
    }
    if (node != KVS_ALL_NODES)
        s->nodes[node].stalled_ms = 0;
    return MPIKVS_OK;
}

bool ucx_request_done(void *req)
{
    return ucp_request_check_status(req) != UCS_INPROGRESS;
}

/* With RMA, a node given up on: close its endpoint (forced, which
 * cancels every request on it) and never use it again. */
static void forget_node(struct ucx_transport *s, uint32_t node)
{
    struct ucx_node *n = &s->nodes[node];
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t req;

    if (!s->rma || !n->ep)
        return;
    if (n->rkey)
        ucp_rkey_destroy(n->rkey);
    n->rkey = NULL;
    req = ucp_ep_close_nbx(n->ep, &p);
    if (UCS_PTR_IS_PTR(req))
        ucp_request_free(req);   /* released once complete */
    n->ep = NULL;
    n->lost = UCS_ERR_CANCELED;
}

/* Wait for req (what an _nbx call returned) to complete.  A request given
 * up on is not freed: UCX may still complete it into its buffers, which
 * belong to the handle. */
int ucx_wait_done(mpikvs_t *kvs, ucs_status_ptr_t req, uint32_t node,
                  const char *what)
{
    struct ucx_transport *s = ucx_state(kvs);
    ucs_status_t st;
    int rc;

    if (req == NULL)
        return MPIKVS_OK;
    if (UCS_PTR_IS_ERR(req)) {
        st = UCS_PTR_STATUS(req);
        goto failed;
    }
    rc = ucx_wait_until(kvs, ucx_request_done, req, node, what);
    if (rc == MPIKVS_ERR_STALLED && node != KVS_ALL_NODES)
        forget_node(s, node);
    if (rc != MPIKVS_OK)
        return rc;
    st = ucp_request_check_status(req);
    ucp_request_free(req);
    if (st == UCS_OK)
        return MPIKVS_OK;
failed:
    if (node != KVS_ALL_NODES && s->nodes[node].lost != UCS_OK)
        return ucx_node_lost(kvs, node);
    return ucx_fail(kvs, what, st);
}
