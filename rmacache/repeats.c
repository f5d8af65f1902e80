/*
 * repeats.c - what a transparent window fetched again unchanged.
 *
 * The transparent mode keeps no data past the synchronization that ends
 * it (mpikvs-rmacache(7)), so the commonest loops (lock/get/unlock,
 * lock_all/get/flush) miss at every get.  To tell the user when the
 * readonly mode would have served them, a transparent window remembers,
 * per (target, displacement, length), a hash of the data its last
 * completed get brought; the next completed get of the same key counts
 * as refetched_same when its data hashes the same, refetched_changed
 * when not.  Only the miss path pays: one XXH3 of the data and one slot
 * of a direct-mapped table of RC_SEEN_SLOTS, made at the first
 * completion (a key that loses its slot is simply not compared).
 *
 * What readonly would not have served either is not counted: a
 * refetch after this rank's own write to the target (its per-target
 * write count differs: coarse, a count too few, never a claim too
 * many) or after the program's invalidation (rc_repeat_forget).
 */
#include "rmacache.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define RC_SEEN_SLOTS 2048u

struct rc_seen {
    uint64_t disp;
    uint64_t hash;    /* XXH3 of the data */
    uint32_t len;
    int32_t  target;
    uint32_t writes;  /* the target's own-write count when recorded */
    uint32_t gen;     /* live when equal to the window's seen_gen */
};

static size_t seen_slot(int target, uint64_t disp, size_t len)
{
    uint64_t h = XXH3_64bits_withSeed(&disp, sizeof disp,
                                      ((uint64_t)(uint32_t)target << 32) ^ len);

    return (size_t)(h & (RC_SEEN_SLOTS - 1));
}

/* The table and the per-target write counts, made at first use; 0, or
 * -1 without memory (the window then counts nothing). */
static int seen_ready(struct rc_win *w)
{
    if (w->seen)
        return 0;
    w->seen_writes = calloc((size_t)w->nranks, sizeof *w->seen_writes);
    w->seen = calloc(RC_SEEN_SLOTS, sizeof *w->seen);
    if (!w->seen || !w->seen_writes) {
        rc_repeat_fini(w);
        return -1;
    }
    if (w->seen_gen == 0)
        w->seen_gen = 1;
    return 0;
}

void rc_repeat_note(struct rc_win *w, int target, uint64_t disp, size_t len,
                    const void *data)
{
    if (seen_ready(w))
        return;

    struct rc_seen *s = &w->seen[seen_slot(target, disp, len)];
    uint64_t        hash = XXH3_64bits(data, len);
    uint32_t        writes = w->seen_writes[target];

    if (s->gen == w->seen_gen && s->target == target && s->disp == disp &&
        s->len == len && s->writes == writes) {
        if (s->hash == hash)
            w->refetched_same++;
        else
            w->refetched_changed++;
    }
    *s = (struct rc_seen){.disp = disp, .hash = hash, .len = (uint32_t)len,
                          .target = target, .writes = writes, .gen = w->seen_gen};
}

void rc_repeat_written(struct rc_win *w, int target)
{
    if (w->seen_writes)
        w->seen_writes[target]++;
}

void rc_repeat_forget(struct rc_win *w)
{
    if (++w->seen_gen == 0) {
        /* after 2^32 forgets an old entry's gen could read as current */
        if (w->seen)
            memset(w->seen, 0, RC_SEEN_SLOTS * sizeof *w->seen);
        w->seen_gen = 1;
    }
}

void rc_repeat_fini(struct rc_win *w)
{
    free(w->seen);
    free(w->seen_writes);
    w->seen = NULL;
    w->seen_writes = NULL;
}
