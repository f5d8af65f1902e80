/*
 * node.c - the segments of the node tier (node.h), without MPI.
 */
#include "node.h"

#include <string.h>

static struct rc_nhdr *hdr(const void *seg)
{
    return (struct rc_nhdr *)seg;
}

static struct rc_nslot *slots(const void *seg)
{
    return (struct rc_nslot *)((char *)seg + sizeof(struct rc_nhdr));
}

static unsigned char *ring(const void *seg)
{
    return (unsigned char *)seg + sizeof(struct rc_nhdr) +
           RC_NODE_SLOTS * sizeof(struct rc_nslot);
}

static size_t slot_of(int target, uint64_t disp, size_t len)
{
    uint64_t h = (disp ^ ((uint64_t)(uint32_t)target << 40) ^ ((uint64_t)len << 20)) *
                 0x9e3779b97f4a7c15ULL;

    return (size_t)(h >> 52) & (RC_NODE_SLOTS - 1);
}

size_t rc_node_seg_size(size_t ring_size)
{
    return sizeof(struct rc_nhdr) + RC_NODE_SLOTS * sizeof(struct rc_nslot) + ring_size;
}

void rc_node_seg_init(void *seg, size_t ring_size)
{
    memset(seg, 0, sizeof(struct rc_nhdr) + RC_NODE_SLOTS * sizeof(struct rc_nslot));
    hdr(seg)->ring_size = ring_size & ~(size_t)7;
    atomic_store_explicit(&hdr(seg)->tail, 0, memory_order_relaxed);
    hdr(seg)->ready = 1;
}

void rc_node_publish(void *seg, int target, uint64_t disp, size_t len,
                     uint32_t gen, const void *data)
{
    struct rc_nhdr  *h = hdr(seg);
    struct rc_nslot *s = &slots(seg)[slot_of(target, disp, len)];
    uint64_t         need = (len + 7) & ~(uint64_t)7;
    uint32_t         seq;

    if (!h->ready || need == 0 || need > h->ring_size / 4)
        return;
    if (h->head % h->ring_size + need > h->ring_size)
        h->head += h->ring_size - h->head % h->ring_size;
    /* readers of what is overwritten see the tail past it before it is */
    if (h->head + need > h->ring_size)
        atomic_store_explicit(&h->tail, h->head + need - h->ring_size, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    memcpy(ring(seg) + h->head % h->ring_size, data, len);

    seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->target = target;
    s->len = (uint32_t)len;
    s->gen = gen;
    s->disp = disp;
    s->pos = h->head;
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
    h->head += need;
}

void rc_node_withdraw(void *seg, int target, uint64_t disp, uint64_t len)
{
    uint64_t end = len > UINT64_MAX - disp ? UINT64_MAX : disp + len;

    if (!hdr(seg)->ready)
        return;
    for (size_t i = 0; i < RC_NODE_SLOTS; i++) {
        struct rc_nslot *s = &slots(seg)[i];

        if (s->gen && s->target == target && s->disp < end && disp < s->disp + s->len) {
            uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

            atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
            atomic_thread_fence(memory_order_release);
            s->gen = 0;
            atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
        }
    }
}

int rc_node_read(const void *seg, int target, uint64_t disp, size_t len,
                 uint32_t gen, void *out)
{
    const struct rc_nhdr *h = hdr(seg);
    struct rc_nslot      *s = &slots(seg)[slot_of(target, disp, len)];
    uint32_t              s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    uint64_t              pos;

    if (!h->ready || (s1 & 1) || s->gen != gen || gen == 0 || s->target != target ||
        s->disp != disp || s->len != len)
        return 0;
    pos = s->pos;
    memcpy(out, ring(seg) + pos % h->ring_size, len);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1 ||
        pos < atomic_load_explicit(&((struct rc_nhdr *)h)->tail, memory_order_relaxed))
        return 0;
    return 1;
}
