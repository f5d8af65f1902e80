/*
 * mpikvs.h - an in-job key-value cache for MPI simulations.
 *
 * libmpikvs is a distributed hash table over the memory of an MPI job.
 * The home of a key is a node, not a rank: every rank of a node reads and
 * writes its node's data region directly in shared memory, and ranks of
 * other nodes reach it through a transport (mpikvs_transport): UCX where
 * it starts (remote reads of the node leader's registered region, served
 * by a helper thread where the network has no RDMA), else MPI one-sided
 * communication (one window).  A bucket holds several slots, so a lookup
 * is one copy (own node) or one remote read of a bucket (other node).
 *
 * Consistency modes, chosen at open, same binary:
 *   lockfree     (default) no locks: every slot carries a 64-bit XXH3
 *                checksum of its key and value, written with it and
 *                verified by every reader; a slot that does not verify is
 *                read again, then read as a miss (and marked invalid, by
 *                a reader on its own node only).  A writer claims a slot
 *                with a compare-and-swap of its meta word, with the CPU's
 *                atomics: in shared memory, or through a transport whose
 *                atomics are the CPU's; over the mpi transport a put to
 *                another node writes without a claim, and of two racing
 *                inserts one may be lost (mpikvs(7)).
 *   fine-lock    a reader/writer lock word per bucket, taken with the
 *                transport's atomics (UCX's, or MPI_Fetch_and_op /
 *                MPI_Compare_and_swap).
 *   coarse-lock  MPI_Win_lock of the home node's whole window per call
 *                (shared for a get, exclusive for a put); the mpi
 *                transport only.
 * In the lock modes every access goes through the transport, also on the
 * own node, so that the locks mean something; they exist to reproduce the
 * published comparison (Luebke et al., ICCS 2025).
 *
 * The contract a scientific cache lives by: a torn or mixed slot is never
 * returned as a hit.  A miss is always allowed (a slot lost to a
 * concurrent writer, an eviction, an invalidated slot).
 *
 * Return codes: MPIKVS_OK (0), MPIKVS_MISS (1), MPIKVS_PRESENT (2) or a
 * negative error code (mpikvs_errors.h); mpikvs_strerror() explains each.
 * Nothing aborts the process: MPI errors come back as MPIKVS_ERR_MPI,
 * UCX's as MPIKVS_ERR_TRANSPORT, and a node, writer or lock holder that
 * does not finish in time as MPIKVS_ERR_STALLED.  A buffer the
 * caller gave for a result is undefined after an error.
 *
 * Threads: a handle is used by one thread at a time.  MPI_THREAD_FUNNELED
 * is enough when only the main thread calls mpikvs; threads that take
 * turns with a handle need MPI_THREAD_SERIALIZED.  Distinct handles are
 * independent.
 *
 *   pkg-config --cflags --libs mpikvs
 */
#ifndef MPIKVS_H
#define MPIKVS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpikvs_statistics.h"
#include "mpikvs_errors.h"

/*
 * The version of this header.  These three lines are the project's
 * version: configure takes it from them (AC_INIT), and so do mpikvs.pc
 * and the CMake package.  MPIKVS_VERSION is "MAJOR.MINOR.PATCH";
 * MPIKVS_VERSION_NUMBER is MAJOR * 10000 + MINOR * 100 + PATCH, for
 * #if MPIKVS_VERSION_NUMBER >= 200 (0.2.0).  The library a program runs
 * with says its own in mpikvs_version().
 */
#define MPIKVS_VERSION_MAJOR 0
#define MPIKVS_VERSION_MINOR 1
#define MPIKVS_VERSION_PATCH 0
#define MPIKVS_VERSION_STR_(n) #n
#define MPIKVS_VERSION_XSTR_(n) MPIKVS_VERSION_STR_(n)
#define MPIKVS_VERSION                                                   \
    MPIKVS_VERSION_XSTR_(MPIKVS_VERSION_MAJOR) "."                       \
    MPIKVS_VERSION_XSTR_(MPIKVS_VERSION_MINOR) "."                       \
    MPIKVS_VERSION_XSTR_(MPIKVS_VERSION_PATCH)
#define MPIKVS_VERSION_NUMBER                                            \
    (MPIKVS_VERSION_MAJOR * 10000 + MPIKVS_VERSION_MINOR * 100 +          \
     MPIKVS_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library the program runs with ("0.1.0"): compare
 * it with MPIKVS_VERSION, the header's it was built with.  Any thread,
 * also before MPI_Init. */
const char *mpikvs_version(void);

typedef struct mpikvs mpikvs_t;

/*
 * The options of mpikvs_open.  The struct grows at its end only, and
 * size says how much of it the caller has: start from
 * MPIKVS_OPTIONS_INIT, which sets size and leaves every other field 0 (or
 * NULL), then set the fields wanted:
 *
 *     mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
 *     opt.key_size = 16;
 *
 * Zero (or NULL) in a field means "take it from the job config", and
 * without a config the default given.  The library reads the caller's
 * size bytes and takes the default of every field past them, so a
 * program built against an older header keeps working with a newer
 * library.  A binding that declares the struct itself (Python's ctypes,
 * Fortran's ISO_C_BINDING) sets size to the size of its own declaration
 * (ctypes.sizeof, c_sizeof) and zeroes the rest.  mpikvs_open refuses
 * (MPIKVS_ERR_INVAL) a size of 0 or one smaller than the fields up to
 * transport (the first sized version), and a size larger than the
 * library's struct unless the bytes past it are 0 (a newer program
 * asking for something this library cannot do).
 */
typedef struct mpikvs_options {
    size_t      size;           /* sizeof(mpikvs_options_t): set it first */
    size_t      key_size;       /* bytes of a key (required without config) */
    size_t      value_size;     /* bytes of a value (required without config) */
    size_t      size_per_node;  /* bytes of bucket memory per node;
                                 * default: the table's size in the config
                                 * (its share of the plugin's --dht-size,
                                 * or its absolute size), else the
                                 * plugin's --dht-size, else 64 MiB */
    const char *mode;           /* "lockfree" | "fine-lock" | "coarse-lock" */
    const char *config;         /* JSON path; default: $MPIKVS_CONFIG */
    const char *table;          /* table of the config; default: its only
                                 * (or first) table; without a config
                                 * MPIKVS_ERR_CONFIG */
    unsigned    slots_per_bucket; /* default: config, else 4 */
    const char *transport;      /* to other nodes: "auto" | "mpi" | "ucx";
                                 * default: $MPIKVS_TRANSPORT, else the
                                 * config's, else "auto" */
    unsigned    flags;          /* MPIKVS_OPEN_*, or'ed */
    double      verify;         /* with MPIKVS_OPEN_VERIFY: the fraction of
                                 * hits returned as MPIKVS_VERIFY, 0 < f
                                 * <= 1; default: the table's "verify" */
    /* Fields are only ever added here, at the end, each with its 0 in
     * MPIKVS_OPTIONS_INIT (ABI). */
} mpikvs_options_t;

/* Every field in order, positionally: C and C++ (before C++20 too) take
 * it, and -Wmissing-field-initializers has nothing to say. */
#define MPIKVS_OPTIONS_INIT                                              \
    { sizeof(mpikvs_options_t), 0, 0, 0, NULL, NULL, NULL, 0, NULL, 0, 0 }

/* flags of mpikvs_options_t.  MPIKVS_OPEN_VERIFY: this program takes
 * MPIKVS_VERIFY for the table's verify fraction of hits (mpikvs.json(5)
 * "verify", mpikvs_verify_report(3)); without it no call returns that
 * code, whatever the table says. */
#define MPIKVS_OPEN_VERIFY 1u

/* Scopes of mpikvs_stats(): whose statistics, or'ed with since when. */
enum mpikvs_scope {
    MPIKVS_SCOPE_RANK = 0,      /* this rank */
    MPIKVS_SCOPE_NODE = 1,      /* every rank of this node (not collective) */
    MPIKVS_SCOPE_JOB  = 2,      /* every rank (collective) */
    /* since the region's creation (the default): a region the plugin
     * keeps for the whole job counts every step of it */
    MPIKVS_SINCE_CREATION = 0,
    /* since this handle's open: this step's own figures */
    MPIKVS_SINCE_OPEN = 0x100
};

/* A uint64_t field for each statistic of MPIKVS_STATISTICS, in its order:
 * mpikvs_statistics.h lists them and says what each counts.  The struct
 * grows at its end (mpikvs_stats takes the caller's size of it). */
typedef struct mpikvs_stats {
#define MPIKVS_STATS_FIELD_(name, label, text) uint64_t name;
    MPIKVS_STATISTICS(MPIKVS_STATS_FIELD_)
#undef MPIKVS_STATS_FIELD_
} mpikvs_stats_t;

/*
 * Open the cache over comm (collective over comm).  Ranks are grouped by
 * node (MPI_Comm_split_type shared memory; MPIKVS_VIRTUAL_NODES=N makes N
 * blocks of consecutive ranks act as nodes).  With the SPANK plugin's
 * environment each node's data region already exists and is opened;
 * without it the node's first rank creates one under a job id agreed by
 * broadcast, and close removes it.  opt may be NULL.
 * Returns MPIKVS_OK, MPIKVS_ERR_INVAL (sizes, mode), MPIKVS_ERR_CONFIG,
 * MPIKVS_ERR_MISMATCH (ranks disagree, or an existing region is laid
 * out for other key, value or bucket sizes),
 * MPIKVS_ERR_TOOSMALL, MPIKVS_ERR_MPI, a region error, or -errno.  On
 * failure *kvs is NULL on every rank and nothing is left behind.
 */
int mpikvs_open(MPI_Comm comm, const mpikvs_options_t *opt, mpikvs_t **kvs);

/* Store value under key (key_size and value_size bytes).  Updates the
 * key's slot, else takes a free or invalid slot of its bucket, else evicts
 * the slot written longest ago.  Returns MPIKVS_OK, MPIKVS_ERR_INVAL,
 * MPIKVS_ERR_MPI, MPIKVS_ERR_TRANSPORT (UCX failed), or
 * MPIKVS_ERR_STALLED: another writer's claim of the slot it needs held
 * for 5 s (that writer is stopped or stuck; nothing written), the key's
 * node not answering in time, or in the fine-lock mode its bucket's lock
 * held that long. */
int mpikvs_put(mpikvs_t *kvs, const void *key, const void *value);

/* Store value under key only if the key is not in the table: returns
 * MPIKVS_OK when stored (as mpikvs_put would), MPIKVS_PRESENT when the key
 * was there (nothing written; present, if not NULL, gets its value), or
 * an error (as mpikvs_put, MPIKVS_ERR_STALLED included).  Of racing
 * callers of one key exactly one stores (lock-free over the mpi
 * transport: see mpikvs(3)); one stopped between its claim and its
 * write is waited for, never passed over by time. */
int mpikvs_put_if_absent(mpikvs_t *kvs, const void *key, const void *value,
                         void *present);

/* Look key up; on a hit copy its value into value.  On a miss and on an
 * error the content of value is undefined: a lookup may copy a slot or a
 * node tier's entry into it before it verifies.  Returns MPIKVS_OK,
 * MPIKVS_MISS, MPIKVS_ERR_INVAL, MPIKVS_ERR_MPI, MPIKVS_ERR_TRANSPORT or
 * MPIKVS_ERR_STALLED (as mpikvs_put). */
int mpikvs_get(mpikvs_t *kvs, const void *key, void *value);

/* n lookups at once: keys is n * key_size bytes, values n * value_size;
 * status[i] gets MPIKVS_OK or MPIKVS_MISS for key i (a miss's value is
 * undefined, as mpikvs_get's).  All remote reads are issued before one
 * flush.  Returns MPIKVS_OK when every lookup was
 * answered (hit or miss), else the first error (status of keys not
 * answered is then undefined). */
int mpikvs_get_batch(mpikvs_t *kvs, size_t n, const void *keys,
                     void *values, int *status);

/* n puts at once, with one flush for all bucket reads and one for all
 * writes.  Two keys of one batch that land in one bucket are written in
 * order.  n may be 0.  Returns MPIKVS_OK, MPIKVS_ERR_INVAL or the first
 * error (as mpikvs_put's, MPIKVS_ERR_STALLED included); after an error
 * some of the batch may have been stored. */
int mpikvs_put_batch(mpikvs_t *kvs, size_t n, const void *keys,
                     const void *values);

/* A batch in flight: started, then completed by mpikvs_wait or a
 * successful mpikvs_test, which set id to 0.  Until then its keys, values
 * and status belong to the library. */
typedef struct mpikvs_request {
    uint64_t id;
} mpikvs_request_t;

/* mpikvs_get_batch and mpikvs_put_batch, started: the home nodes work on
 * the keys while the caller does something else.  Returns MPIKVS_OK
 * with *req set, or an error (bad arguments; -EAGAIN with 1024 requests
 * in flight); the batch's own result comes from mpikvs_wait/test. */
int mpikvs_get_batch_start(mpikvs_t *kvs, size_t n, const void *keys,
                           void *values, int *status, mpikvs_request_t *req);
int mpikvs_put_batch_start(mpikvs_t *kvs, size_t n, const void *keys,
                           const void *values, mpikvs_request_t *req);

/* Complete req: returns what the blocking batch would have; then req is
 * over (a second wait is MPIKVS_ERR_INVAL).  mpikvs_test does not wait:
 * *done is 1 and the result returned once it is complete, else *done is
 * 0 and it returns MPIKVS_OK. */
int mpikvs_wait(mpikvs_t *kvs, mpikvs_request_t *req);
int mpikvs_test(mpikvs_t *kvs, mpikvs_request_t *req, int *done);

/* Make the canonical key of n doubles by the table's key fields (see
 * mpikvs.json(5)): key gets key_size bytes.  Returns MPIKVS_OK,
 * MPIKVS_ERR_INVAL (NaN, infinity, n not the field count) or
 * MPIKVS_ERR_CONFIG (no config, or a raw key). */
int mpikvs_round_key(mpikvs_t *kvs, const double *in, size_t n, void *key);

/* A point where every rank of comm has finished its puts (collective):
 * after it, a get sees every put made before it, unless evicted or its
 * key is in the node tier with an older value (see below).  With a node
 * tier, each node's leader publishes the remote hits its node's ranks
 * made since the last fence.  Returns MPIKVS_OK, MPIKVS_ERR_MPI,
 * MPIKVS_ERR_TRANSPORT or MPIKVS_ERR_STALLED (completing this rank's
 * puts through UCX failed, or a node did not answer in time), or
 * -ENOMEM (the node's remote hits could not be gathered; the fence is
 * complete all the same). */
int mpikvs_fence(mpikvs_t *kvs);

/*
 * Surrogates beyond exact hits (mpikvs(7) "Surrogates").
 *
 * mpikvs_forget: remove key (a value the program's own check rejected),
 * wherever its home is.  Returns MPIKVS_OK (removed), MPIKVS_MISS (not in
 * the table) or an error as mpikvs_put's.  mpikvs_forget(3).
 */
int mpikvs_forget(mpikvs_t *kvs, const void *key);

/*
 * Sampled accuracy.  With MPIKVS_OPEN_VERIFY and a table whose "verify"
 * fraction is above 0, that fraction of hits, chosen by the key's hash
 * (every rank picks the same keys), returns MPIKVS_VERIFY instead of
 * MPIKVS_OK: the value is given, and the program is asked to compute it
 * anyway and report the error it measured with mpikvs_verify_report
 * (error >= 0, finite; the program's own measure).  The job's count, sum,
 * largest error and a coarse histogram of them are statistics
 * (MPIKVS_STATISTICS_SURROGATE).  Reporting a key that was not a verify
 * hit of this handle, or reporting it twice, is MPIKVS_ERR_INVAL.
 * mpikvs_verify_report(3).
 */
int mpikvs_verify_report(mpikvs_t *kvs, const void *key, double error);

/*
 * mpikvs_clear (collective): every entry of the table, of its node tier
 * and of its neighbourhoods reads as gone afterwards, in time independent
 * of the table's size; puts after it work as in a new table.  No batch
 * of the handle may be in flight (MPIKVS_ERR_INVAL).  Save files made
 * before it are untouched and load.  mpikvs_clear(3).
 */
int mpikvs_clear(mpikvs_t *kvs);

/*
 * Neighbourhoods (a table's "near" setting, mpikvs.json(5)): every put
 * of a key also enters it into the neighbourhood of its coarser key,
 * which keeps the newest "members" of them.  mpikvs_get_near returns up
 * to near->max members of key's neighbourhood, nearest first: each one's
 * inputs (the key's double and int64 fields as doubles), its value, its
 * key (if keys is not NULL) and its distance to key, the Euclidean norm
 * of the fields' differences each divided by the field's rounding step
 * in key (mpikvs_get_near(3)).  A member is never torn or mixed: its key,
 * inputs and value are verified together.  A member may be missing.
 * Returns MPIKVS_OK with near->found >= 1, MPIKVS_MISS with found 0, or
 * an error (MPIKVS_ERR_INVAL: max 0, a buffer shorter than max members,
 * a table without "near"; the errors of mpikvs_get).
 */
typedef struct mpikvs_near {
    size_t  max;          /* in: members wanted, at least 1 */
    size_t  found;        /* out: members written, nearest first */
    double *distances;    /* [max] */
    double *inputs;       /* [max * mpikvs_near_inputs(kvs)] */
    size_t  inputs_len;   /* doubles inputs holds */
    void   *values;       /* [max * value_size] */
    size_t  values_len;   /* bytes values holds */
    void   *keys;         /* [max * key_size], or NULL */
    size_t  keys_len;     /* bytes keys holds */
} mpikvs_near_t;

int mpikvs_get_near(mpikvs_t *kvs, const void *key, mpikvs_near_t *near);

/* n queries at once: keys is n * key_size bytes, near[i] the output of
 * key i, status[i] MPIKVS_OK or MPIKVS_MISS.  Returns as mpikvs_get_batch. */
int mpikvs_get_near_batch(mpikvs_t *kvs, size_t n, const void *keys,
                          mpikvs_near_t *near, int *status);

/* The inputs of a member: how many doubles (the key's double and int64
 * fields), 0 for a table without "near". */
size_t mpikvs_near_inputs(const mpikvs_t *kvs);

/*
 * The node tier (a table's "tier" in the config, caching "always" or
 * "user"): a get of a key whose home is another node first looks in a
 * read-only copy on its own node, filled at each mpikvs_fence with the
 * node's remote hits.  A put updates the key's home only: the tier serves
 * the value it has until it is invalidated, which "always" never does.
 *
 * mpikvs_tier_invalidate (collective): drop every entry of the node tier
 * in "user" mode, and the remote hits not yet published; nothing in
 * "off" and "always" mode.  Returns MPIKVS_OK or MPIKVS_ERR_MPI.
 *
 * mpikvs_get_ref: zero copy.  When key is in the node tier, *value points
 * at its value_size bytes there, read-only, valid until the next
 * mpikvs_fence, mpikvs_tier_invalidate or mpikvs_close; returns
 * MPIKVS_OK.  Otherwise *value is NULL and it returns MPIKVS_MISS: the key
 * may still be in the DHT (mpikvs_get).  Keys of the own node are never in
 * the tier.  Errors: MPIKVS_ERR_INVAL, MPIKVS_ERR_STALLED,
 * MPIKVS_ERR_CORRUPT.
 */
int mpikvs_tier_invalidate(mpikvs_t *kvs);
int mpikvs_get_ref(mpikvs_t *kvs, const void *key, const void **value);

/* Statistics of this rank, its node, or the job (MPIKVS_SCOPE_JOB is
 * collective).  scope is one of MPIKVS_SCOPE_*, or'ed with
 * MPIKVS_SINCE_OPEN for what this handle's ranks did since their
 * mpikvs_open (a warm start's load included), or MPIKVS_SINCE_CREATION
 * (0, the default) for the region's lifetime: a region the plugin keeps
 * for the whole job (its default scope) sums all steps of the job, the
 * earlier ones included.  size is sizeof(*out) as the caller's header
 * has it: the library writes only those size bytes, so a program built
 * against an older header (fewer statistics) keeps working; statistics a
 * newer header has and this library does not are set to 0.  Returns
 * MPIKVS_OK, MPIKVS_ERR_INVAL (scope, out NULL, or size smaller than the
 * statistics up to load_unfit, the first sized version's) or
 * MPIKVS_ERR_MPI. */
int mpikvs_stats(mpikvs_t *kvs, int scope, mpikvs_stats_t *out,
                 size_t size);

/* Close the cache (collective): frees the window, unmaps, removes what
 * open created (a region made by the SPANK plugin stays for later steps).
 * *kvs becomes NULL.  The waits for the other ranks are bounded by
 * MPIKVS_CLOSE_TIMEOUT (MPIKVS_ERR_STALLED); with the config's
 * persist.save the table is saved only once every rank came to close
 * within it.  Returns MPIKVS_OK or the first error. */
int mpikvs_close(mpikvs_t **kvs);

/*
 * Own-node entries (mpikvs_foreach_local(3)): call fn with the key and
 * the value of every live entry of this rank's node that verifies, in
 * shared memory, without communication (not collective).  key and value
 * are copies, valid during the call.  Concurrent writers: every entry fn
 * gets is a key and value some put stored together (never torn); an
 * entry put, updated or evicted while the walk runs may be seen with its
 * old value, its new one, or not at all; a key is seen at most once.
 * fn returns 0 to go on; anything else stops the walk and is returned.
 * Returns MPIKVS_OK, fn's nonzero value, MPIKVS_ERR_INVAL or -ENOMEM.
 */
typedef int (*mpikvs_entry_fn)(const void *key, const void *value,
                               void *arg);
int mpikvs_foreach_local(mpikvs_t *kvs, mpikvs_entry_fn fn, void *arg);

/*
 * Save and load (mpikvs_save(3)), collective.  mpikvs_save writes every
 * verified live entry of every node to one file at path, with MPI-IO
 * from every rank (across nodes path must be on a file system they all
 * share), through a new file "<path>.partial.XXXXXX" of rank 0's own
 * (mode 0600, never another user's file or link), every write's count
 * and the file's size checked, synced, then renamed to path: path is
 * the old file or the whole new one.  A failed save removes only its own
 * partial file.  mpikvs_load refuses a path that is not a regular file
 * (a FIFO, a device) before opening it, and puts the entries of such a
 * file into this table, of any
 * size, slot or node count: each through the normal put; an entry that
 * evicts another (its bucket was full) counts as not fitting.  The whole
 * file is verified before anything is put: a truncated, foreign or
 * damaged file, or one of other key or value sizes or rounding rules,
 * loads nothing.  A table that already holds entries is refused
 * (MPIKVS_ERR_NOTEMPTY) unless flags has MPIKVS_LOAD_MERGE.
 * report (may be NULL) gets the job's totals, the same on every rank.
 */
#define MPIKVS_LOAD_MERGE 1u   /* load into a table that holds entries */

typedef struct mpikvs_load_report {
    uint64_t entries;      /* in the file */
    uint64_t loaded;       /* put into the table */
    uint64_t not_fitting;  /* puts that evicted an entry */
} mpikvs_load_report_t;

int mpikvs_save(mpikvs_t *kvs, const char *path);
int mpikvs_load(mpikvs_t *kvs, const char *path, unsigned flags,
                mpikvs_load_report_t *report);

/*
 * Global counters (mpikvs_counter_add(3)): the table's config sets how
 * many (its "counters", default 4, at most 16), numbered from 0, each a
 * 64-bit word on one node, changed atomically by the transport's atomics
 * (the CPU's where the transport's are coherent with them).  Not
 * collective.  They start at 0 with the data region and last as long as
 * it does.  mpikvs_counter_add: *before (may be NULL) gets the value
 * before add (add 0: an atomic read).  mpikvs_counter_cas: stores
 * desired if the counter is expect; *seen (may be NULL) gets the value
 * before.  Returns MPIKVS_OK, MPIKVS_ERR_INVAL (no such counter) or
 * MPIKVS_ERR_MPI / MPIKVS_ERR_TRANSPORT.  mpikvs_counters: how many.
 */
int mpikvs_counter_add(mpikvs_t *kvs, unsigned counter, int64_t add,
                       uint64_t *before);
int mpikvs_counter_cas(mpikvs_t *kvs, unsigned counter, uint64_t expect,
                       uint64_t desired, uint64_t *seen);
unsigned mpikvs_counters(const mpikvs_t *kvs);

/* The text of a return code (also for -errno). */
const char *mpikvs_strerror(int rc);

/* A detailed message about the last failure of a call on kvs: what
 * failed, with what value, and what to do.  With kvs NULL, about the
 * last failure on this thread that had no handle to keep it in: a failed
 * mpikvs_open or mpikvs_close, or any call given a NULL handle (which
 * returns MPIKVS_ERR_INVAL).  Every error return leaves a detail in one
 * of the two.  "" when nothing has failed.  Valid until the next call
 * that fails. */
const char *mpikvs_last_error(const mpikvs_t *kvs);

/* The sizes a handle was opened with (from the options or the config). */
size_t mpikvs_key_size(const mpikvs_t *kvs);
size_t mpikvs_value_size(const mpikvs_t *kvs);

/* The transport a handle reaches other nodes' regions with ("ucx" or
 * "mpi"), never "auto"; NULL when kvs is NULL.  mpikvs-stat shows it too. */
const char *mpikvs_transport(const mpikvs_t *kvs);

/*
 * What a handle opened (mpikvs_info(3)): the job id of its regions'
 * names, this node's regions, the nodes, the mode, the transport and why
 * it was chosen, the table's sizes, the config and the persist load at
 * open, as this rank sees them.  Not collective; no communication.
 *
 * mpikvs_info fills *info.  The struct grows at its end only: set
 * info->size to sizeof(mpikvs_info_t) first; the library fills the
 * fields that fit in that size (a program built against an older header
 * gets the fields it knows) and sets info->size to the bytes it filled.
 * Text fields end with a NUL; a path longer than MPIKVS_INFO_PATH - 1
 * bytes is cut there (mpikvs_describe has it whole).  Returns MPIKVS_OK
 * or MPIKVS_ERR_INVAL (kvs or info NULL, or info->size smaller than the
 * fields up to persist_loaded).
 *
 * mpikvs_describe writes the same as lines of text, "what: value", into
 * buf (len bytes, always terminated when len > 0), as MPIKVS_VERBOSE=1
 * prints from rank 0 at open.  Returns the length of the whole text (as
 * snprintf: a return >= len means it was cut; call again with a larger
 * buf), or MPIKVS_ERR_INVAL (kvs NULL, or buf NULL with len > 0).
 */
#define MPIKVS_INFO_NAME 160    /* bytes of a name field, with its NUL */
#define MPIKVS_INFO_PATH 1024   /* bytes of a path field, with its NUL */

/* The config's persist.load at open. */
enum mpikvs_persist {
    MPIKVS_PERSIST_OFF = 0,     /* no persist.load in the table's config */
    MPIKVS_PERSIST_LOADED = 1,  /* the file was loaded */
    MPIKVS_PERSIST_NO_FILE = 2, /* no file at the path yet: a cold start */
    MPIKVS_PERSIST_KEPT = 3     /* the table held entries (an earlier step
                                 * of the job filled it): not loaded */
};

typedef struct mpikvs_info {
    size_t   size;                    /* in: sizeof(mpikvs_info_t);
                                       * out: the bytes filled */
    char     job[MPIKVS_INFO_NAME];   /* the job id of the regions' names:
                                       * Slurm's, or one open made */
    int      plugin;                  /* 1: regions of spank_mpikvs (kept
                                       * for the job or step); 0: open made
                                       * them, and their names go once every
                                       * rank holds them */
    int      ranks;                   /* of the handle's communicator */
    uint32_t nodes;                   /* nodes (virtual ones included) */
    uint32_t node;                    /* this rank's node, 0..nodes-1 */
    int      node_ranks;              /* ranks on this rank's node */
    int      virtual_nodes;           /* 1: MPIKVS_VIRTUAL_NODES made them */
    char     node_name[MPIKVS_INFO_NAME]; /* in the regions' names */
    char     shm_dir[MPIKVS_INFO_PATH];   /* where the regions are */
    char     data_region[MPIKVS_INFO_NAME]; /* this node's buckets */
    char     tier_index[MPIKVS_INFO_NAME];  /* this node's tier, or "" */
    char     tier_entries[MPIKVS_INFO_NAME];
    char     tier_caching[16];        /* "off", "always" or "user" */
    char     table[MPIKVS_INFO_NAME]; /* the config's table, or "kvs" */
    char     mode[16];                /* "lockfree", "fine-lock", ... */
    char     transport[16];           /* "ucx" or "mpi" */
    char     transport_why[MPIKVS_INFO_PATH]; /* who asked, and what auto
                                       * chose and why */
    uint64_t key_size, value_size, slots_per_bucket;
    uint64_t buckets, bucket_size;    /* of each node */
    uint64_t region_size;             /* bytes of this node's data region */
    char     config[MPIKVS_INFO_PATH];/* the config's path (or what), or
                                       * "" without one */
    int      persist;                 /* enum mpikvs_persist */
    char     persist_path[MPIKVS_INFO_PATH]; /* persist.load, or "" */
    uint64_t persist_entries;         /* LOADED: in the file */
    uint64_t persist_loaded;          /* LOADED: put into the table */
    /* Fields are only ever added here, at the end (ABI). */
} mpikvs_info_t;

int mpikvs_info(const mpikvs_t *kvs, mpikvs_info_t *info);
int mpikvs_describe(const mpikvs_t *kvs, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* MPIKVS_H */
