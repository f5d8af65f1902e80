/*
 * mpikvs_statistics.h - the statistics of libmpikvs, listed once.
 *
 * "Statistics" are what mpikvs_stats() returns: per-rank tallies of what
 * the library did.  (The "counters" are the table's global counters of
 * mpikvs_counter_add(3), values a program keeps; nothing here.)
 *
 * Every place that knows the statistics expands these lists: the fields
 * of mpikvs_stats_t (mpikvs.h), a rank's block of them in the node's
 * data region (what mpikvs-stat(1) reads while a job runs), their sum in
 * mpikvs_stats(), and the tools' output.  A new statistic is one line
 * here (and its text in mpikvs(3)); it goes at the end of the last
 * group, because the field order of mpikvs_stats_t is part of the ABI
 * (mpikvs_stats takes the caller's size of it, so one added at the end
 * does not break an older program).
 *
 * X(name, label, text): name is the field of mpikvs_stats_t and the JSON
 * member mpikvs-stat prints, label the column heading of its text
 * output, text what it counts.
 *
 * Plain C without MPI, so that tools that do not use MPI can include it;
 * mpikvs.h includes it.
 */
#ifndef MPIKVS_STATISTICS_H
#define MPIKVS_STATISTICS_H

/* The DHT: lookups and puts of every consistency mode. */
#define MPIKVS_STATISTICS_DHT(X)                                            \
    X(gets, "gets", "lookups, single and batched")                          \
    X(hits, "hits", "lookups that found their key")                         \
    X(misses, "misses", "lookups that did not")                             \
    X(direct, "direct", "lookups served from own node's memory")            \
    X(remote, "remote", "lookups that went through the transport")          \
    X(checksum_retries, "retries", "slot reads that did not verify")        \
    X(invalidations, "invalidated", "slots marked invalid after retries")   \
    X(puts, "puts", "puts, single and batched")                             \
    X(updates, "updates", "puts that replaced a key's value")               \
    X(evictions, "evictions", "puts that pushed out another key")           \
    X(probes, "probes", "slots a lookup read past the bucket's header")

/* The node tier: other nodes' keys cached read-only on this node. */
#define MPIKVS_STATISTICS_TIER(X)                                           \
    X(tier_hits, "tier_hits", "other nodes' keys found in the node tier")   \
    X(tier_misses, "tier_misses", "... not found there (then gone remote)") \
    X(tier_published, "published", "entries published into the node tier") \
    X(tier_dropped, "dropped",                                              \
      "remote hits not published: a full buffer or a full tier")            \
    X(tier_stalls, "stalls",                                                \
      "times the tier was unreadable (its writer died publishing): "        \
      "skipped until the next fence")

/* Saves and loads of the table (mpikvs_save, mpikvs_load). */
#define MPIKVS_STATISTICS_PERSIST(X)                                        \
    X(saved, "saved", "entries written to a save file (mpikvs_save)")       \
    X(save_torn, "save_torn",                                               \
      "slots a save left out: they did not verify (a write in flight)")     \
    X(loaded, "loaded", "entries put from a save file (mpikvs_load)")       \
    X(load_unfit, "unfit",                                                  \
      "puts of a load that evicted an entry: entries that did not fit")

/* What remote lookups moved: the bytes a get of another node's key
 * brought here (a whole bucket, a slot's header, key, checksum and value,
 * or a shipped value), and the times its value was copied on this rank,
 * the transfer into this rank's memory included (mpikvs(7): the two
 * read paths). */
#define MPIKVS_STATISTICS_TRANSFER(X)                                       \
    X(moved, "moved", "bytes remote lookups brought to this rank")          \
    X(copies, "copies",                                                     \
      "copies of a value remote lookups made on this rank, the "            \
      "transfer included")

/* Surrogates beyond exact hits (mpikvs(7) "Surrogates"): rejected
 * values, neighbourhood queries, and the sampled accuracy of hits.
 * verify_error_sum and verify_error_max hold an IEEE double in their
 * field's bits (mpikvs_stat_double); the job's and node's sum is the sum
 * of the ranks' sums, their max the largest.  The histogram counts each
 * reported error once, in the first of its bins it is below (the last
 * bin: 1e-3 and above). */
#define MPIKVS_STATISTICS_SURROGATE(X)                                      \
    X(forgotten, "forgotten", "keys mpikvs_forget removed")                 \
    X(near_queries, "near", "neighbourhood queries (mpikvs_get_near)")      \
    X(near_members, "members", "members neighbourhood queries returned")    \
    X(verify_hits, "to_verify", "hits returned as MPIKVS_VERIFY")           \
    X(verify_reports, "reports", "errors mpikvs_verify_report recorded")    \
    X(verify_error_sum, "err_sum", "their sum (a double's bits)")           \
    X(verify_error_max, "err_max", "the largest (a double's bits)")         \
    X(verify_below_1e_12, "<1e-12", "reported errors below 1e-12")          \
    X(verify_below_1e_9, "<1e-9", "... from 1e-12, below 1e-9")             \
    X(verify_below_1e_6, "<1e-6", "... from 1e-9, below 1e-6")              \
    X(verify_below_1e_3, "<1e-3", "... from 1e-6, below 1e-3")              \
    X(verify_above_1e_3, ">=1e-3", "... of 1e-3 and above")

/* All of them, in the order of mpikvs_stats_t. */
#define MPIKVS_STATISTICS(X)                                                \
    MPIKVS_STATISTICS_DHT(X) MPIKVS_STATISTICS_TIER(X)                      \
    MPIKVS_STATISTICS_PERSIST(X) MPIKVS_STATISTICS_TRANSFER(X)              \
    MPIKVS_STATISTICS_SURROGATE(X)

/* How many there are. */
#define MPIKVS_STATISTIC_ONE_(name, label, text) +1
#define MPIKVS_NSTATISTICS (0 MPIKVS_STATISTICS(MPIKVS_STATISTIC_ONE_))

/* A statistic that holds a double (verify_error_sum, verify_error_max)
 * as that double. */
static inline double mpikvs_stat_double(unsigned long long bits)
{
    union { unsigned long long u; double d; } v;
    v.u = bits;
    return v.d;
}

#endif /* MPIKVS_STATISTICS_H */
