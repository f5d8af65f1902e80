/*
 * index.c - the cache of one window without MPI (index.h).
 */
#include "index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t pow2_floor(size_t v)
{
    size_t p = 1;

    while (p <= v / 2)
        p *= 2;
    return p;
}

size_t rc_index_max_len(size_t budget)
{
    return budget / 4;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static size_t bucket_of(const struct rc_index *ix, int target, uint64_t disp,
                        size_t len)
{
    uint64_t h = mix(disp ^ mix(((uint64_t)(uint32_t)target << 32) ^ len));

    return (size_t)(h & (ix->nbuckets - 1));
}

static int slot_live(const struct rc_index *ix, const struct rc_slot *s)
{
    return s->gen == ix->gen; /* gen 0: never used or dropped */
}

int rc_index_init(struct rc_index *ix, size_t budget, int ntargets)
{
    memset(ix, 0, sizeof *ix);
    if (budget < 4096 || ntargets < 1) {
        errno = EINVAL;
        return -1;
    }
    ix->ring_size = budget & ~(size_t)7;
    /* one slot per 256 bytes of budget: gets smaller than that run out
     * of slots before they run out of ring */
    ix->nbuckets = pow2_floor(budget / (256 * RC_WAYS));
    if (ix->nbuckets < 4)
        ix->nbuckets = 4;
    ix->ntargets = ntargets;
    /* calloc: untouched pages of a big index cost nothing */
    ix->slots = calloc(ix->nbuckets * RC_WAYS, sizeof *ix->slots);
    ix->ring = malloc(ix->ring_size);
    ix->bounds = malloc((size_t)ntargets * sizeof *ix->bounds);
    if (!ix->slots || !ix->ring || !ix->bounds) {
        rc_index_fini(ix);
        errno = ENOMEM;
        return -1;
    }
    ix->gen = 0;
    rc_index_clear(ix);
    return 0;
}

void rc_index_fini(struct rc_index *ix)
{
    free(ix->slots);
    free(ix->ring);
    free(ix->bounds);
    memset(ix, 0, sizeof *ix);
}

const void *rc_index_lookup(const struct rc_index *ix, int target,
                            uint64_t disp, size_t len)
{
    const struct rc_slot *b = ix->slots + bucket_of(ix, target, disp, len) * RC_WAYS;

    for (int w = 0; w < RC_WAYS; w++)
        if (b[w].disp == disp && b[w].len == len && b[w].target == target &&
            slot_live(ix, &b[w]))
            return ix->ring + (b[w].pos % ix->ring_size) + sizeof(struct rc_chunk);
    return NULL;
}

static void drop(struct rc_index *ix, struct rc_slot *s)
{
    s->gen = 0;
    ix->entries--;
}

/* Overwrite the oldest chunks until [head, head + need) is free. */
static void ring_free_upto(struct rc_index *ix, size_t need)
{
    while (ix->head + need - ix->tail > ix->ring_size) {
        struct rc_chunk c;

        memcpy(&c, ix->ring + ix->tail % ix->ring_size, sizeof c);
        if (c.slot != RC_NO_SLOT) {
            struct rc_slot *s = &ix->slots[c.slot];
            if (slot_live(ix, s) && s->pos == ix->tail) {
                drop(ix, s);
                ix->evictions++;
            }
        }
        ix->tail += c.size;
    }
}

/* Room for a chunk of need bytes at head, which never wraps. */
static void ring_make_room(struct rc_index *ix, size_t need)
{
    size_t off = ix->head % ix->ring_size;

    if (ix->ring_size - off < need) {
        size_t          pad = ix->ring_size - off;
        struct rc_chunk p = {RC_NO_SLOT, (uint32_t)pad};

        ring_free_upto(ix, pad);
        memcpy(ix->ring + off, &p, sizeof p);
        ix->head += pad;
    }
    ring_free_upto(ix, need);
}

int rc_index_insert(struct rc_index *ix, int target, uint64_t disp,
                    size_t len, const void *data)
{
    size_t need = sizeof(struct rc_chunk) + ((len + 7) & ~(size_t)7);

    if (len > rc_index_max_len(ix->ring_size) || target < 0 ||
        target >= ix->ntargets) {
        errno = EINVAL;
        return -1;
    }
    ring_make_room(ix, need);

    size_t          bi = bucket_of(ix, target, disp, len);
    struct rc_slot *b = ix->slots + bi * RC_WAYS;
    int             pick = -1;

    for (int w = 0; w < RC_WAYS && pick < 0; w++)
        if (slot_live(ix, &b[w]) && b[w].disp == disp && b[w].len == len &&
            b[w].target == target) {
            drop(ix, &b[w]);
            pick = w;
        }
    for (int w = 0; w < RC_WAYS && pick < 0; w++)
        if (!slot_live(ix, &b[w]))
            pick = w;
    if (pick < 0) {
        /* a full bucket gives up its oldest entry */
        pick = 0;
        for (int w = 1; w < RC_WAYS; w++)
            if (b[w].pos < b[pick].pos)
                pick = w;
        drop(ix, &b[pick]);
        ix->evictions++;
    }

    struct rc_chunk c = {(uint32_t)(bi * RC_WAYS + (size_t)pick), (uint32_t)need};
    unsigned char  *at = ix->ring + ix->head % ix->ring_size;

    memcpy(at, &c, sizeof c);
    memcpy(at + sizeof c, data, len);
    b[pick] = (struct rc_slot){.disp = disp, .pos = ix->head, .len = (uint32_t)len,
                               .target = target, .gen = ix->gen};
    ix->head += need;
    ix->entries++;

    struct rc_bound *bd = &ix->bounds[target];
    if (disp < bd->lo)
        bd->lo = disp;
    if (disp + len > bd->hi)
        bd->hi = disp + len;
    return 0;
}

void rc_index_clear(struct rc_index *ix)
{
    if (++ix->gen == 0) {
        /* after 2^32 clears a slot's old gen could read as current */
        memset(ix->slots, 0, ix->nbuckets * RC_WAYS * sizeof *ix->slots);
        ix->gen = 1;
    }
    ix->head = ix->tail = 0;
    ix->entries = 0;
    for (int t = 0; t < ix->ntargets; t++)
        ix->bounds[t] = (struct rc_bound){UINT64_MAX, 0};
}

uint64_t rc_index_invalidate(struct rc_index *ix, int target, uint64_t disp,
                             uint64_t len)
{
    uint64_t end = len > UINT64_MAX - disp ? UINT64_MAX : disp + len;
    uint64_t n = 0;

    if (target < 0 || target >= ix->ntargets || ix->entries == 0)
        return 0;
    struct rc_bound *bd = &ix->bounds[target];
    if (bd->lo >= bd->hi || end <= bd->lo || disp >= bd->hi)
        return 0;
    for (size_t i = 0; i < ix->nbuckets * RC_WAYS; i++) {
        struct rc_slot *s = &ix->slots[i];
        if (s->target == target && slot_live(ix, s) && s->disp < end &&
            disp < s->disp + s->len) {
            drop(ix, s);
            n++;
        }
    }
    return n;
}
