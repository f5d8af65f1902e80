/*
 * ucx_intruder.c - another user's process attacks a job's UCX workers
 * (run-intruder-test.sh runs it as a second uid against test_intruder).
 *
 * ucx_intruder DIR NRANKS reads DIR/ready.R of each rank R (its serving
 * and calling workers' addresses, its region's address, the keys of its
 * node; test_intruder.c writes them) and, with a UCX context of its own,
 * tries everything a process that reaches the workers can send:
 *
 *   ship     the keys shipped for a get, a put and a put-if-absent, in
 *            the message layout of libmpikvs before the open's secret
 *            (token, count, kind) and in today's with a wrong secret
 *   mem      a memory operation (a write over the region's header, a
 *            read of it) with a wrong secret
 *   rma      UCX's own RMA: a put over the region's header and to
 *            address 0x10, and a get of the region's header (what UCX
 *            emulates with messages wherever a context has RMA)
 *   answers  forged answers to the calling worker for the gets the job
 *            runs meanwhile, with guessed tokens, in both layouts
 *
 * then progresses for at most WAIT_MS and prints what came back:
 * "intruder: N answers, M RMA reads answered".  Both must be 0 (a put
 * completes here once sent, so only the job can tell whether one
 * landed: it checks that its data is unchanged).  The process never waits
 * on the job beyond WAIT_MS: it exits without closing anything.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define KS 16
#define VS 32
#define NKEYS 64
#define WAIT_MS 3000
#define GUESSED_ROUNDS 256

/* The job's message ids (libmpikvs/transport_ucx.h): ship, its answer, a
 * memory operation, its answer. */
enum { AM_SHIP = 1, AM_SHIP_ANSWER, AM_MEM, AM_MEM_ANSWER };

struct victim {
    unsigned char serving[4096], calling[4096];
    size_t serving_len, calling_len;
    uint64_t region;
    unsigned char keys[NKEYS][KS];
};

static long answers;
static long reads_answered;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
    fprintf(stderr, "ucx_intruder: %s\n", what);
    exit(2);
}

static size_t read_bytes(FILE *f, unsigned char *out, size_t cap)
{
    size_t len;
    unsigned x;

    if (fscanf(f, "%zu ", &len) != 1 || len > cap)
        die("bad ready file");
    for (size_t i = 0; i < len; i++) {
        if (fscanf(f, "%2x", &x) != 1)
            die("bad ready file");
        out[i] = (unsigned char)x;
    }
    return len;
}

static void read_victim(const char *dir, int r, struct victim *v)
{
    char path[512];
    unsigned long long region;
    FILE *f;

    snprintf(path, sizeof path, "%s/ready.%d", dir, r);
    if (!(f = fopen(path, "r")))
        die("cannot read a ready file");
    v->serving_len = read_bytes(f, v->serving, sizeof v->serving);
    v->calling_len = read_bytes(f, v->calling, sizeof v->calling);
    if (fscanf(f, "%llu ", &region) != 1)
        die("bad ready file");
    v->region = region;
    for (int i = 0; i < NKEYS; i++)
        read_bytes(f, v->keys[i], KS);
    fclose(f);
}

static ucs_status_t any_answer(void *arg, const void *header, size_t hlen,
                               void *data, size_t len,
                               const ucp_am_recv_param_t *param)
{
    (void)arg, (void)header, (void)hlen, (void)data, (void)len, (void)param;
    answers++;
    return UCS_OK;
}

static void put_done(void *req, ucs_status_t st, void *user)
{
    (void)st, (void)user;
    ucp_request_free(req);
}

static void get_done(void *req, ucs_status_t st, void *user)
{
    (void)user;
    if (st == UCS_OK)
        reads_answered++;
    ucp_request_free(req);
}

static ucp_ep_h connect_to(ucp_worker_h w, const unsigned char *addr)
{
    ucp_ep_params_t p = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address = (const ucp_address_t *)addr};
    ucp_ep_h ep;

    if (ucp_ep_create(w, &p, &ep) != UCS_OK)
        die("ucp_ep_create");
    return ep;
}

static void send_am(ucp_ep_h ep, unsigned id, const void *head, size_t hlen,
                    const void *data, size_t len)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_AM_SEND_FLAG_REPLY |
                                      UCP_AM_SEND_FLAG_EAGER};
    /* a send not yet wired up goes out later, from these bytes: copies
     * that live until the program ends (the callers' are on the stack) */
    void *h = malloc(hlen ? hlen : 1), *d = malloc(len ? len : 1);
    ucs_status_ptr_t req;

    if (!h || !d) {
        printf("intruder: out of memory\n");
        exit(1);
    }
    memcpy(h, head, hlen);
    if (len)
        memcpy(d, data, len);
    req = ucp_am_send_nbx(ep, id, h, hlen, len ? d : NULL, len, &p);

    if (UCS_PTR_IS_PTR(req))
        ucp_request_free(req);   /* UCX completes it; we need no word */
}

/* Shipped keys: count keys of kind in the old header (16 bytes) and in
 * today's with a secret of zeros (32 bytes). */
static void ship(ucp_ep_h ep, const struct victim *v, uint32_t kind)
{
    static unsigned char payload[NKEYS * (KS + VS)];
    size_t stride = KS + (kind ? VS : 0);
    struct { uint64_t token; uint32_t count, kind; } old = {7, NKEYS, kind};
    struct { uint64_t secret[2], token; uint32_t count, kind; } now = {
        {0, 0}, 7, NKEYS, kind};

    for (int i = 0; i < NKEYS; i++) {
        memcpy(payload + i * stride, v->keys[i], KS);
        if (kind)
            memset(payload + i * stride + KS, 0xEE, VS);
    }
    send_am(ep, AM_SHIP, &old, sizeof old, payload, NKEYS * stride);
    send_am(ep, AM_SHIP, &now, sizeof now, payload, NKEYS * stride);
}

/* A memory operation with a secret of zeros: write over the region's
 * header, read it. */
static void mem(ucp_ep_h ep)
{
    struct {
        uint64_t secret[2], token, disp, len, operand, desired;
        uint32_t op;
        int32_t status;
    } h = {.len = 64};
    unsigned char junk[64];

    memset(junk, 0xEE, sizeof junk);
    h.op = 1;   /* write */
    send_am(ep, AM_MEM, &h, sizeof h, junk, sizeof junk);
    h.op = 0;   /* read */
    send_am(ep, AM_MEM, &h, sizeof h, NULL, 0);
}

/* UCX's own RMA, with an rkey of this process's memory: where the target
 * emulates RMA, the address is all that counts. */
static void rma(ucp_context_h ctx, ucp_ep_h ep, const struct victim *v)
{
    static unsigned char buf[64], back[64];
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = buf, .length = sizeof buf};
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK,
                             .cb.send = put_done};
    ucp_mem_h memh;
    ucp_rkey_h rkey;
    void *packed;
    size_t packed_len;
    ucs_status_ptr_t req;

    memset(buf, 0xEE, sizeof buf);
    if (ucp_mem_map(ctx, &mp, &memh) != UCS_OK ||
        ucp_rkey_pack(ctx, memh, &packed, &packed_len) != UCS_OK ||
        ucp_ep_rkey_unpack(ep, packed, &rkey) != UCS_OK) {
        printf("intruder: no rkey to try UCX's RMA with\n");
        return;
    }
    uint64_t targets[] = {v->region, 0x10};
    for (size_t i = 0; i < 2; i++)
        ucp_put_nbx(ep, buf, sizeof buf, targets[i], rkey, &p);
    p.cb.send = get_done;
    req = ucp_get_nbx(ep, back, sizeof back, v->region, rkey, &p);
    if (req == NULL)
        reads_answered++;
}

/* Answers for gets the job may be waiting for: a token of each round
 * guessed, in both layouts, each saying "found" with a value of 0xEE. */
static void forge_answers(ucp_ep_h ep)
{
    unsigned char body[4 + VS];
    struct { uint64_t token; uint32_t count, kind; } old = {0, 1, 0};
    struct { uint64_t secret[2], token; uint32_t count, kind; } now = {
        {0, 0}, 0, 1, 0};

    memset(body, 0, 4);
    memset(body + 4, 0xEE, VS);
    for (uint64_t r = 0; r < GUESSED_ROUNDS; r++) {
        old.token = now.token = r << 32;
        send_am(ep, AM_SHIP_ANSWER, &old, sizeof old, body, sizeof body);
        send_am(ep, AM_SHIP_ANSWER, &now, sizeof now, body, sizeof body);
    }
}

int main(int argc, char **argv)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM};
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_CB,
        .cb = any_answer};
    ucp_context_h ctx;
    ucp_worker_h w;
    int n;

    if (argc != 3 || (n = atoi(argv[2])) < 1 || n > 16)
        die("usage: ucx_intruder DIR NRANKS");
    if (ucp_init(&params, NULL, &ctx) != UCS_OK ||
        ucp_worker_create(ctx, &wp, &w) != UCS_OK)
        die("UCX does not start");
    for (unsigned id = AM_SHIP; id <= AM_MEM_ANSWER; id++) {
        hp.id = id;
        ucp_worker_set_am_recv_handler(w, &hp);
    }
    for (int r = 0; r < n; r++) {
        static struct victim v;
        read_victim(argv[1], r, &v);
        ucp_ep_h serving = connect_to(w, v.serving);
        ucp_ep_h calling = connect_to(w, v.calling);
        for (uint32_t kind = 0; kind < 3; kind++)
            ship(serving, &v, kind);
        mem(serving);
        rma(ctx, serving, &v);
        forge_answers(calling);
    }
    for (double t0 = now_ms(); now_ms() - t0 < WAIT_MS;)
        ucp_worker_progress(w);
    printf("intruder: %ld answers, %ld RMA reads answered\n", answers,
           reads_answered);
    fflush(stdout);
    /* nothing closed: an endpoint's close may wait for the peer */
    _exit(0);
}
