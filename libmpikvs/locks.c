/*
 * locks.c - the fine-lock mode's reader/writer lock word per bucket, and
 * the lease that keeps one fine-lock open per table at a time.
 *
 * The word is the first 8 bytes of the bucket (format.h): the open's
 * epoch at the top, then a writer bit, the count of waiting writers and
 * the count of readers.  All through the transport's atomics (add, read
 * and compare-and-swap), so that ranks of every node, the own one
 * included, see one lock.
 *
 * Epochs.  A job-scope table outlives the step that opened it, and a rank
 * killed while it held a lock (or between a reader's +1 and -1) leaves
 * its word set.  Every open takes a new epoch, larger than any its nodes'
 * regions saw, and treats a word stamped with another one as free: it
 * replaces the whole word with a compare-and-swap.  A live lock always
 * carries the epoch of the open that took it, and the lease below makes
 * that open the only live one, so a live lock is never broken.  Nobody
 * subtracts from a stale word: a reader whose +1 landed in one resets the
 * word instead (the reset wipes the +1 with everything else).
 *
 * Writer preference.  A writer that finds the word held adds itself to
 * the waiting writers; a reader that sees any (or the writer bit) takes
 * its 1 back and waits, reading the word without changing it, until none
 * is left.  A writer therefore waits for the readers inside, never for
 * new ones; it leaves the count when it takes the lock or gives up.
 *
 * The lease.  Different opens make different MPI windows over the same
 * words, and one window's atomics are not atomic with another's (osc
 * pt2pt does them in software under a lock of its own).  So the node
 * leader of a fine-lock open takes the data region's lease with a CPU
 * compare-and-swap and gives it back at close; a lease whose holder is
 * gone (pid and start time no longer match a live process) is taken
 * over, one that is alive refuses the open.
 *
 * A holder of this very open that died leaves its word set for good:
 * after MPIKVS_LOCK_TIMEOUT_MS of trying, the caller gets
 * MPIKVS_ERR_STALLED instead of waiting forever.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bucket_far.h"   /* kvs_lock_disp */
#include "locks.h"
#include "errors.h"
#include "route.h"
#include "spin.h"

/* Between attempts: spin a little, then give the core away (a holder on
 * an oversubscribed node needs it), and give up after the timeout. */
static int back_off(mpikvs_t *kvs, unsigned attempt, uint64_t *deadline)
{
    if (kvshm_spin_wait(attempt, 16, MPIKVS_LOCK_TIMEOUT_MS, deadline))
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_STALLED,
                    "a bucket lock has been held for %u s: did a rank of "
                    "this job die while holding it?",
                    MPIKVS_LOCK_TIMEOUT_MS / 1000);
}

static bool stale(const mpikvs_t *kvs, uint64_t word)
{
    return KVSHM_LOCK_EPOCH(word) != kvs->lock_epoch;
}

static uint64_t free_word(const mpikvs_t *kvs)
{
    return (uint64_t)kvs->lock_epoch << KVSHM_LOCK_EPOCH_SHIFT;
}

/* The word was seen as cur, stamped by another open: replace it by a
 * free word of ours, unless someone of ours already did. */
static int reset_stale(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                       uint64_t cur, uint64_t *deadline)
{
    for (unsigned attempt = 0;; attempt++) {
        uint64_t got;
        int rc = kvs->tp->cas64(kvs, node, disp, cur, free_word(kvs), &got);
        if (rc != MPIKVS_OK || got == cur || !stale(kvs, got))
            return rc;
        cur = got;   /* another rank's +1 on the stale word: retry */
        if ((rc = back_off(kvs, attempt, deadline)) != MPIKVS_OK)
            return rc;
    }
}

static int lock_shared(mpikvs_t *kvs, uint32_t node, uint64_t disp)
{
    const uint64_t keep_out = KVSHM_LOCK_WRITER | KVSHM_LOCK_WAITERS;
    uint64_t deadline = 0, w;
    unsigned attempt = 0;
    int rc;

    for (;;) {
        if ((rc = kvs->tp->fetch_add64(kvs, node, disp, 1, &w)))
            return rc;
        if (stale(kvs, w)) {
            /* our +1 went into a dead open's word: the reset wipes it */
            if ((rc = reset_stale(kvs, node, disp, w + 1, &deadline)))
                return rc;
            continue;
        }
        if (!(w & keep_out))
            return MPIKVS_OK;
        /* a writer holds it or waits for it: out again, and wait
         * without touching the count, so that the readers drain */
        if ((rc = kvs->tp->fetch_add64(kvs, node, disp, -1, &w)))
            return rc;
        do {
            if ((rc = back_off(kvs, attempt++, &deadline)) != MPIKVS_OK ||
                (rc = kvs->tp->fetch_add64(kvs, node, disp, 0, &w)))
                return rc;
        } while (!stale(kvs, w) && (w & keep_out));
    }
}

/* A writer that finds the word held counts itself among the waiting
 * writers (an add, which cannot miss as a compare-and-swap can while
 * readers come and go); the swap that takes the lock takes it out of the
 * count again, and so does giving up. */
static int lock_exclusive(mpikvs_t *kvs, uint32_t node, uint64_t disp)
{
    uint64_t deadline = 0, expect = free_word(kvs), w;
    bool waiting = false;
    int rc;

    for (unsigned attempt = 0;;) {
        uint64_t want = (expect | KVSHM_LOCK_WRITER) -
                        (waiting ? KVSHM_LOCK_WAITER : 0);
        rc = kvs->tp->cas64(kvs, node, disp, expect, want, &w);
        if (rc == MPIKVS_OK && w == expect)
            return MPIKVS_OK;
        if (rc == MPIKVS_OK && stale(kvs, w)) {
            /* not ours, so our count is not in it either */
            rc = reset_stale(kvs, node, disp, w, &deadline);
            expect = free_word(kvs);
            waiting = false;
            if (rc == MPIKVS_OK)
                continue;
        }
        if (rc == MPIKVS_OK &&
            !(w & (KVSHM_LOCK_WRITER | KVSHM_LOCK_READERS))) {
            expect = w;   /* free: again, with the waiting count it has */
            continue;
        }
        if (rc == MPIKVS_OK && !waiting) {
            /* w is ours (a word of this epoch stays so) and held */
            rc = kvs->tp->fetch_add64(kvs, node, disp,
                                      (int64_t)KVSHM_LOCK_WAITER, &w);
            waiting = rc == MPIKVS_OK;
            w += KVSHM_LOCK_WAITER;
        }
        /* next try: the word as it will be once the holders are out */
        expect = w & ~(KVSHM_LOCK_WRITER | KVSHM_LOCK_READERS);
        if (rc == MPIKVS_OK)
            rc = back_off(kvs, attempt++, &deadline);
        if (rc != MPIKVS_OK) {
            if (waiting)   /* let the readers in again */
                kvs->tp->fetch_add64(kvs, node, disp,
                                     -(int64_t)KVSHM_LOCK_WAITER, &w);
            return rc;
        }
    }
}

int kvs_bucket_lock(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                    bool exclusive)
{
    return exclusive ? lock_exclusive(kvs, node, disp)
                     : lock_shared(kvs, node, disp);
}

int kvs_bucket_unlock(mpikvs_t *kvs, uint32_t node, uint64_t disp,
                      bool exclusive)
{
    uint64_t before;

    return kvs->tp->fetch_add64(kvs, node, disp,
                                exclusive ? -(int64_t)KVSHM_LOCK_WRITER : -1,
                                &before);
}

/* ---- the bracket of every locked operation ---- */

static int lock(mpikvs_t *kvs, const struct kvs_key *k, bool exclusive)
{
    if (kvs->mode == KVSHM_MODE_COARSE_LOCK)
        return kvs->tp->lock_node(kvs, k->node, exclusive);
    return kvs_bucket_lock(kvs, k->node, kvs_lock_disp(kvs, k->bucket),
                           exclusive);
}

static int unlock(mpikvs_t *kvs, const struct kvs_key *k, bool exclusive)
{
    if (kvs->mode == KVSHM_MODE_COARSE_LOCK)
        return kvs->tp->unlock_node(kvs, k->node);
    return kvs_bucket_unlock(kvs, k->node, kvs_lock_disp(kvs, k->bucket),
                             exclusive);
}

int kvs_locked(mpikvs_t *kvs, const struct kvs_key *k, bool exclusive,
               kvs_locked_op op, const void *in, void *out)
{
    int rc, unlocked;

    if (!kvs_route(kvs, k->node)->locked)
        return op(kvs, k, in, out);
    if ((rc = lock(kvs, k, exclusive)) != MPIKVS_OK)
        return rc;
    rc = op(kvs, k, in, out);
    unlocked = unlock(kvs, k, exclusive);
    return rc < 0 || unlocked == MPIKVS_OK ? rc : unlocked;
}

/* ---- the lease ---- */

/* The state and start time (clock ticks since boot) of a process, from
 * /proc/<pid>/stat: false if it has none. */
static bool proc_stat(uint32_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    const char *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", pid);
    if (!(f = fopen(path, "r")))
        return false;   /* errno says why */
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name is in parentheses and may hold anything */
    errno = EINVAL;   /* unreadable: not ENOENT */
    if (!(p = strrchr(buf, ')')))
        return false;
    /* after ") ": state is field 3, starttime field 22 */
    return sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                         "%*s %*s %*s %*s %*s %*s %*s %" SCNu64,
                  state, start) == 2;
}

/* Gone: no such pid, a zombie, or a pid the kernel gave to a process
 * that started later.  A process we may not look at counts as alive. */
static bool holder_alive(uint64_t owner)
{
    const uint32_t pid = (uint32_t)(owner >> 32);
    char state;
    uint64_t start;

    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return false;
    if (!proc_stat(pid, &state, &start))
        return errno != ENOENT;
    return state != 'Z' && state != 'X' &&
           KVSHM_LEASE_OWNER(pid, start) == owner;
}

static struct kvshm_data_control *control(const mpikvs_t *kvs)
{
    return (struct kvshm_data_control *)((char *)kvs->region->base +
                                         KVSHM_DATA_CONTROL_OFFSET);
}

/* The node leader: take the region's lease, or refuse naming its holder. */
static int take_lease(mpikvs_t *kvs)
{
    struct kvshm_data_control *c = control(kvs);
    uint32_t pid = (uint32_t)getpid();
    char state;
    uint64_t start, me, cur;

    if (!proc_stat(pid, &state, &start))
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "cannot read /proc/%" PRIu32 "/stat, which the "
                        "fine-lock mode needs to tell a live holder of "
                        "table '%.*s' from a dead one",
                        pid, (int)sizeof(c->table), c->table);
    me = KVSHM_LEASE_OWNER(pid, start);
    cur = __atomic_load_n(&c->lock_lease, __ATOMIC_ACQUIRE);
    for (;;) {
        if (cur && holder_alive(cur))
            return kvs_fail(
                kvs, MPIKVS_ERR_MISMATCH,
                "table '%.*s' (%s) is open in the fine-lock mode by pid "
                "%" PRIu32 "%s, which is still running: two opens of a "
                "fine-lock table cannot run at once (the atomics of their "
                "MPI windows are not atomic with each other); close the "
                "other handle or wait for that step to end, or use another "
                "table",
                (int)sizeof(c->table), c->table, kvs->region_name,
                (uint32_t)(cur >> 32),
                cur == me ? " (this process, through another handle)" : "");
        /* free, or its holder is gone: ours, unless someone was faster */
        if (__atomic_compare_exchange_n(&c->lock_lease, &cur, me, false,
                                        __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            kvs->lease = me;
            return MPIKVS_OK;
        }
    }
}

int kvs_locks_open(mpikvs_t *kvs)
{
    uint64_t mine[2] = {0, 0}, all[2];
    int rc = MPIKVS_OK;

    if (kvs->mode != KVSHM_MODE_FINE_LOCK)
        return MPIKVS_OK;
    if (kvs->local_rank == 0 && (rc = take_lease(kvs)) == MPIKVS_OK)
        mine[0] = __atomic_load_n(&control(kvs)->lock_epoch,
                                  __ATOMIC_ACQUIRE);
    mine[1] = rc != MPIKVS_OK;
    if (MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_MAX, kvs->comm) !=
        MPI_SUCCESS)
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "MPI_Allreduce of the lock epochs failed");
    if (all[1])
        return rc;   /* the refused leader says why; open's agree tells
                      * the others */
    /* Newer than every word of every node's region; 0 is what a new
     * region's words carry, so it is skipped when the epoch wraps. */
    kvs->lock_epoch = ((uint32_t)all[0] + 1u) & KVSHM_LOCK_EPOCH_MASK;
    if (!kvs->lock_epoch)
        kvs->lock_epoch = 1;
    if (kvs->local_rank == 0)
        __atomic_store_n(&control(kvs)->lock_epoch, kvs->lock_epoch,
                         __ATOMIC_RELEASE);
    return MPIKVS_OK;
}

void kvs_locks_close(mpikvs_t *kvs)
{
    uint64_t me = kvs->lease;

    if (!me || !kvs->region)
        return;
    /* only our own lease: one taken over from us is not ours to free */
    __atomic_compare_exchange_n(&control(kvs)->lock_lease, &me, 0, false,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    kvs->lease = 0;
}
