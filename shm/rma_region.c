/*
 * rma_region.c - the region of a libmpikvs-rmacache window on a node.
 */
#include <stdio.h>
#include <string.h>

#include "errors_internal.h"
#include "rma_region.h"
#include "seqlock.h"

static uint64_t round_page(uint64_t n)
{
    return (n + KVSHM_RMA_PAGE - 1) & ~(uint64_t)(KVSHM_RMA_PAGE - 1);
}

int kvshm_rma_layout(uint64_t nranks, uint64_t ring_size,
                     struct kvshm_rma_layout *out, mpikvs_error_t *err)
{
    if (nranks == 0 || nranks > KVSHM_RMA_MAX_RANKS)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "%llu ranks on a node: from 1 to %llu",
                          (unsigned long long)nranks,
                          (unsigned long long)KVSHM_RMA_MAX_RANKS);
    if (ring_size < 8 || ring_size % 8 || ring_size > KVSHM_RMA_MAX_RING)
        return kvshm_fail(err, MPIKVS_ERR_INVAL,
                          "a ring of %llu bytes: a multiple of 8 up to %llu",
                          (unsigned long long)ring_size,
                          (unsigned long long)KVSHM_RMA_MAX_RING);
    /* bounded above: no sum or product here wraps */
    out->ranks_offset = KVSHM_HEADER_SIZE + sizeof(struct kvshm_rma_control);
    out->segments_offset =
        round_page(out->ranks_offset + nranks * sizeof(struct kvshm_rma_rank));
    out->segment_size = round_page(sizeof(struct kvshm_rma_segment) +
                                   KVSHM_RMA_SLOTS *
                                       sizeof(struct kvshm_rma_slot) +
                                   ring_size);
    out->region_size = out->segments_offset + nranks * out->segment_size;
    return MPIKVS_OK;
}

void kvshm_rma_init(void *base, const struct kvshm_rma_layout *l,
                    uint64_t nranks, uint64_t win_ranks, uint64_t ring_size)
{
    struct kvshm_rma_control *c =
        (struct kvshm_rma_control *)((char *)base + KVSHM_HEADER_SIZE);

    c->nranks = nranks;
    c->win_ranks = win_ranks;
    c->ring_size = ring_size;
    c->segment_size = l->segment_size;
    c->ranks_offset = l->ranks_offset;
    c->segments_offset = l->segments_offset;
    for (uint64_t r = 0; r < nranks; r++) {
        struct kvshm_rma_segment *s = kvshm_rma_segment(base, c, r);

        s->ring_size = ring_size;
        s->ready = 1;
    }
}

static int bad_field(mpikvs_error_t *err, const char *name, const char *field,
                     uint64_t value)
{
    return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                      "%s has a corrupt control block: %s is %llu", name,
                      field, (unsigned long long)value);
}

int kvshm_rma_read_control(const void *base, uint64_t size, const char *name,
                           struct kvshm_rma_control *out, mpikvs_error_t *err)
{
    struct kvshm_rma_layout l;
    mpikvs_error_t why;

    if (size < KVSHM_HEADER_SIZE + sizeof(*out))
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s is too small for a window's region (%llu bytes)",
                          name, (unsigned long long)size);
    memcpy(out, (const char *)base + KVSHM_HEADER_SIZE, sizeof(*out));
    if (kvshm_rma_layout(out->nranks, out->ring_size, &l, &why) != MPIKVS_OK)
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s has a corrupt control block: %s", name,
                          why.text);
    if (out->ranks_offset != l.ranks_offset)
        return bad_field(err, name, "ranks_offset", out->ranks_offset);
    if (out->segments_offset != l.segments_offset)
        return bad_field(err, name, "segments_offset", out->segments_offset);
    if (out->segment_size != l.segment_size)
        return bad_field(err, name, "segment_size", out->segment_size);
    if (out->win_ranks < out->nranks)
        return bad_field(err, name, "win_ranks", out->win_ranks);
    if (l.region_size > size)
        return kvshm_fail(err, MPIKVS_ERR_CORRUPT,
                          "%s has %llu bytes; its control block needs %llu",
                          name, (unsigned long long)size,
                          (unsigned long long)l.region_size);
    return MPIKVS_OK;
}

struct kvshm_rma_rank *kvshm_rma_rank(const void *base,
                                      const struct kvshm_rma_control *c,
                                      uint64_t r)
{
    return (struct kvshm_rma_rank *)((char *)base + c->ranks_offset) + r;
}

void *kvshm_rma_segment(const void *base, const struct kvshm_rma_control *c,
                        uint64_t r)
{
    return (char *)base + c->segments_offset + r * c->segment_size;
}

static struct kvshm_rma_control *control(const void *base)
{
    return (struct kvshm_rma_control *)((char *)base + KVSHM_HEADER_SIZE);
}

void kvshm_rma_set_name(void *base, const char *name)
{
    struct kvshm_rma_control *c = control(base);
    size_t n = strnlen(name, sizeof(c->name) - 1);

    kvshm_seq_write_begin(&c->name_seq);
    for (size_t i = 0; i < sizeof(c->name); i++)
        __atomic_store_n(&c->name[i], i < n ? name[i] : '\0',
                         __ATOMIC_RELAXED);
    kvshm_seq_write_end(&c->name_seq);
}

void kvshm_rma_name(const void *base, char *out, size_t len)
{
    const struct kvshm_rma_control *c = control(base);
    char copy[sizeof(c->name)];

    for (int tries = 0; tries < 100; tries++) {
        uint64_t s1 = kvshm_seq_read_begin(&c->name_seq);

        for (size_t i = 0; i < sizeof(copy); i++)
            copy[i] = __atomic_load_n(&c->name[i], __ATOMIC_RELAXED);
        if (kvshm_seq_read_stable(&c->name_seq, s1))
            break;
    }
    copy[sizeof(copy) - 1] = '\0';
    snprintf(out, len, "%s", copy);
}

const char *kvshm_rma_mode_name(uint64_t mode)
{
    switch (mode) {
    case KVSHM_RMA_OFF:         return "off";
    case KVSHM_RMA_TRANSPARENT: return "transparent";
    case KVSHM_RMA_READONLY:    return "readonly";
    }
    return "?";
}
