/*
 * advice.c - at MPI_Finalize, the windows whose transparent mode missed
 * at gets that the readonly mode would have served: one line each, for
 * the whole job, by rank 0 of MPI_COMM_WORLD, with the setting to use.
 *
 * Each rank keeps its windows' figures by creation order (the first
 * RC_ADVICE_WINDOWS of them: the order MODE@N rules count); one
 * MPI_Reduce at MPI_Finalize sums them.  A window is named when
 *   - some rank fetched data again unchanged (repeats.c), at least a
 *     tenth of the window's gets, and
 *   - no rank fetched data again that had changed (readonly would have
 *     served that rank an old value), and
 *   - every rank that made it has it transparent at the end.
 * Without a word otherwise: the statistics (MPIKVS_RMACACHE_STATS) show
 * each rank's refetched-same and refetched-changed.
 */
#include "rmacache.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define RC_ADVICE_WINDOWS 64

enum {
    A_RANKS,      /* ranks that made the window */
    A_GETS,
    A_SAME,       /* refetched_same */
    A_CHANGED,    /* refetched_changed */
    A_NOT_TRANSP, /* ranks where it ends in another mode */
    A_FROM_INFO,  /* ranks where the program chose the mode by info */
    A_FIELDS
};

static uint64_t        tally[RC_ADVICE_WINDOWS][A_FIELDS];
static char            names[RC_ADVICE_WINDOWS][64];
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;

void rc_advice_keep(const struct rc_win *w)
{
    if (w->seq < 0 || w->seq >= RC_ADVICE_WINDOWS)
        return;
    pthread_mutex_lock(&tally_lock);
    uint64_t *t = tally[w->seq];
    t[A_RANKS]++;
    t[A_GETS] += w->st->gets;
    t[A_SAME] += w->refetched_same;
    t[A_CHANGED] += w->refetched_changed;
    t[A_NOT_TRANSP] += w->mode != RC_TRANSPARENT;
    t[A_FROM_INFO] += w->mode_from_info != 0;
    memcpy(names[w->seq], w->name, sizeof names[w->seq]);
    pthread_mutex_unlock(&tally_lock);
}

/* The rule that picks window seq: by its name when a rule can hold it
 * (no comma, not cut to the 63 bytes of w->name), else by its order. */
static void rule_for(int seq, char *out, size_t size)
{
    const char *name = names[seq];
    size_t      n = strlen(name);

    if (n > 0 && n < sizeof names[seq] - 1 && !strchr(name, ','))
        snprintf(out, size, "readonly@%s", name);
    else
        snprintf(out, size, "readonly@%d", seq);
}

static void advise(int seq, const uint64_t *t)
{
    const char *name = names[seq];
    char        rule[80], how[200];

    rule_for(seq, rule, sizeof rule);
    /* a mode the program sets by the info key is changed there; else the
     * environment's rule or the info key are the ways */
    if (t[A_FROM_INFO])
        snprintf(how, sizeof how, "the program chooses the mode by the info key "
                 "mpikvs_rmacache, set it to readonly there");
    else
        snprintf(how, sizeof how, "MPIKVS_RMACACHE=%s (before any other rule), "
                 "or the info key mpikvs_rmacache=readonly at its creation", rule);
    /* one write a line: other output does not cut into it */
    fprintf(stderr, "mpikvs-rmacache: window %d%s%s%s: %" PRIu64 " of its %" PRIu64
            " gets (all ranks) fetched again data that had not changed since"
            " the rank's previous get of it; the transparent mode drops data at"
            " every synchronization, the readonly mode would have served them:"
            " %s (if no process changes the window's data while it is read;"
            " MPIKVS_RMACACHE_VERIFY=1 checks that)\n",
            seq, name[0] ? " '" : "", name, name[0] ? "'" : "", t[A_SAME], t[A_GETS],
            how);
}

void rc_advice_print(void)
{
    static uint64_t sum[RC_ADVICE_WINDOWS][A_FIELDS];
    uint64_t        mine[RC_ADVICE_WINDOWS][A_FIELDS];
    int             rank = -1;

    pthread_mutex_lock(&tally_lock);
    memcpy(mine, tally, sizeof mine);
    pthread_mutex_unlock(&tally_lock);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* every rank takes part (MPI_Finalize is collective), windows or not */
    if (PMPI_Reduce(mine, sum, RC_ADVICE_WINDOWS * A_FIELDS, MPI_UINT64_T, MPI_SUM, 0,
                    MPI_COMM_WORLD) != MPI_SUCCESS || rank != 0)
        return;
    for (int seq = 0; seq < RC_ADVICE_WINDOWS; seq++) {
        const uint64_t *t = sum[seq];

        if (t[A_RANKS] && t[A_SAME] && !t[A_CHANGED] && !t[A_NOT_TRANSP] &&
            t[A_SAME] >= t[A_GETS] / 10)
            advise(seq, t);
    }
}
