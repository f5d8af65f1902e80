/*
 * node.c - the segments of the node tier (node.h), without MPI.  Every
 * field a reader may load while the writer stores it goes through an
 * atomic builtin.
 */
#include "node.h"

#include <string.h>

#include "format.h"
#include "seqlock.h"

#define LOAD(p, order)     __atomic_load_n((p), __ATOMIC_##order)
#define STORE(p, v, order) __atomic_store_n((p), (v), __ATOMIC_##order)

static struct kvshm_rma_segment *hdr(const void *seg)
{
    return (struct kvshm_rma_segment *)seg;
}

static struct kvshm_rma_slot *slots(const void *seg)
{
    return (struct kvshm_rma_slot *)((char *)seg + sizeof(struct kvshm_rma_segment));
}

static unsigned char *ring(const void *seg)
{
    return (unsigned char *)seg + sizeof(struct kvshm_rma_segment) +
           KVSHM_RMA_SLOTS * sizeof(struct kvshm_rma_slot);
}

static size_t slot_of(int target, uint64_t disp, size_t len)
{
    uint64_t h = (disp ^ ((uint64_t)(uint32_t)target << 40) ^ ((uint64_t)len << 20)) *
                 0x9e3779b97f4a7c15ULL;

    return (size_t)(h >> 52) & (KVSHM_RMA_SLOTS - 1);
}

/* The slot's fields while its seq is odd (shm/seqlock.h); readers check
 * seq after. */
static void slot_write(struct kvshm_rma_slot *s, int target, uint32_t len,
                       uint32_t gen, uint64_t disp, uint64_t pos)
{
    kvshm_seq32_write_begin(&s->seq);
    STORE(&s->target, target, RELAXED);
    STORE(&s->len, len, RELAXED);
    STORE(&s->gen, gen, RELAXED);
    STORE(&s->disp, disp, RELAXED);
    STORE(&s->pos, pos, RELAXED);
    kvshm_seq32_write_end(&s->seq);
}

int rc_node_publish(void *seg, int target, uint64_t disp, size_t len,
                    uint32_t gen, const void *data)
{
    struct kvshm_rma_segment *h = hdr(seg);
    uint64_t                  need = (len + 7) & ~(uint64_t)7;
    uint64_t                  head = h->head, size = h->ring_size;

    if (!h->ready || need == 0 || need > size / 4)
        return 0;
    if (head % size + need > size)
        head += size - head % size;
    /* readers of what is overwritten see the tail past it before it is */
    if (head + need > size)
        STORE(&h->tail, head + need - size, RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(ring(seg) + head % size, data, len);
    slot_write(&slots(seg)[slot_of(target, disp, len)], target, (uint32_t)len, gen,
               disp, head);
    STORE(&h->head, head + need, RELAXED);
    return 1;
}

void rc_node_withdraw(void *seg, int target, uint64_t disp, uint64_t len)
{
    uint64_t end = len > UINT64_MAX - disp ? UINT64_MAX : disp + len;

    if (!hdr(seg)->ready)
        return;
    for (size_t i = 0; i < KVSHM_RMA_SLOTS; i++) {
        struct kvshm_rma_slot *s = &slots(seg)[i];

        if (s->gen && s->target == target && s->disp < end && disp < s->disp + s->len)
            slot_write(s, s->target, s->len, 0, s->disp, s->pos);
    }
}

int rc_node_read(const void *seg, int target, uint64_t disp, size_t len,
                 uint32_t gen, void *out)
{
    const struct kvshm_rma_segment *h = hdr(seg);
    struct kvshm_rma_slot          *s = &slots(seg)[slot_of(target, disp, len)];
    uint32_t                        s1 = kvshm_seq32_read_begin(&s->seq);
    uint64_t                        pos, size = h->ring_size;

    if (!h->ready || (s1 & 1) || LOAD(&s->gen, RELAXED) != gen || gen == 0 ||
        LOAD(&s->target, RELAXED) != target || LOAD(&s->disp, RELAXED) != disp ||
        LOAD(&s->len, RELAXED) != len)
        return 0;
    pos = LOAD(&s->pos, RELAXED);
    /* fields of a write begun after s1 may mix with the old ones: an
     * entry that would run past the ring is never copied */
    if (size == 0 || len > size || pos % size > size - len)
        return 0;
    memcpy(out, ring(seg) + pos % size, len);
    if (!kvshm_seq32_read_stable(&s->seq, s1) ||
        pos < LOAD(&h->tail, RELAXED))
        return 0;
    return 1;
}
