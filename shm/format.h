/*
 * format.h - the bytes of every mpikvs shared-memory region.
 *
 * A region is a file in the shm directory (default /dev/shm) named
 * mpikvs.<job>.<node>.<tag>.  It starts with a 256-byte header; the
 * first 16 bytes (magic, format version) keep their place in every
 * format version, so that an old reader can always tell a newer region
 * from a foreign file.  Everything after the header belongs to the
 * region's kind.
 *
 * Integers are in the byte order of the node: regions never leave it.
 */
#ifndef MPIKVS_SHM_FORMAT_H
#define MPIKVS_SHM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "job_config.h"    /* KVSHM_TABLE_NAME_MAX */
#include "mpikvs_statistics.h" /* MPIKVS_STATISTICS: the rank stats */

#define KVSHM_MAGIC          "MPIKVSrg"     /* 8 bytes, no terminator kept */
/* 2: fine-lock words carry an epoch; 3: the job layout's table entries
 * carry the table's plan (struct kvshm_table_shape); 4: tier entries
 * hash keys as key_hash.h says, a rank's stats block names the transport
 * of its open; 5: a bucket's meta words and key tags in its header, a
 * slot's checksum of its value seeded by its key's hash, three lines of
 * counters per rank; 6: a BUSY slot's stamp field holds its claim's
 * owner (a pid, or 0), not a stamp; 7: a rank's stats block names the
 * rank of its latest open in its communicator; 8: five lines of
 * counters per rank (the surrogate statistics), the data control block's
 * generation (mpikvs_clear) */
#define KVSHM_FORMAT_VERSION 8u
#define KVSHM_HEADER_SIZE    256u
#define KVSHM_CACHELINE      64u

/* Region kinds. */
enum kvshm_kind {
    KVSHM_KIND_DATA         = 1,  /* DHT buckets and per-rank stats */
    KVSHM_KIND_TIER_INDEX   = 2,  /* read-only tier: control block + buckets */
    KVSHM_KIND_TIER_ENTRIES = 3,  /* read-only tier: entries, only grows */
    KVSHM_KIND_LAYOUT       = 4,  /* job layout, written once */
    KVSHM_KIND_RMA_WINDOW   = 5,  /* libmpikvs-rmacache: a window's node
                                   * tier and its ranks' counters */
    KVSHM_KIND_MAX          = 5
};

/* Header flags. */
#define KVSHM_FLAG_GROWABLE  1u   /* the file may grow up to max_size */

#define KVSHM_NO_STEP        UINT32_MAX

/* Longest job, node and tag strings, terminator included. */
#define KVSHM_JOB_MAX   32u
#define KVSHM_NODE_MAX  64u
#define KVSHM_TAG_MAX   32u

struct kvshm_header {
    char     magic[8];          /* KVSHM_MAGIC */
    uint32_t format_version;    /* KVSHM_FORMAT_VERSION */
    uint32_t kind;              /* enum kvshm_kind */
    uint64_t format_id;         /* kvshm_format_id() of the writer */
    uint64_t size;              /* file size at creation */
    uint64_t max_size;          /* growable: largest size; else == size */
    uint32_t header_size;       /* KVSHM_HEADER_SIZE */
    uint32_t flags;             /* KVSHM_FLAG_* */
    int64_t  created;           /* seconds since the epoch */
    uint32_t uid;               /* the user the region belongs to */
    uint32_t gid;
    uint32_t step;              /* Slurm step id, or KVSHM_NO_STEP */
    uint32_t reserved0;
    char     job[KVSHM_JOB_MAX];   /* Slurm job id, or a unique id */
    char     node[KVSHM_NODE_MAX];
    char     tag[KVSHM_TAG_MAX];   /* last name component: "data", ... */
    uint8_t  reserved[48];
    uint64_t checksum;          /* XXH3-64 of the bytes before it */
};

/*
 * The read-only lookup tier (SHMEMPMI's dual-region design).
 *
 * Index region:   header | control block | buckets[nbuckets]
 * Entries region: header | entry | entry | ... (up to control.entries_top)
 *
 * Links are offsets into the entries region in units of 8 bytes, so a
 * bucket is one 64-bit word and the entries region can grow in place
 * (up to 32 GiB) without touching a link.  Offset 0 is the header, so 0
 * means "no entry".
 */
#define KVSHM_TIER_UNIT        8u
#define KVSHM_TIER_MAX_BYTES   (UINT64_C(1) << 35)   /* 32 GiB of entries */

/*
 * Control block, right after the index region's header.
 *
 * Line 0 is what a reader loads on every lookup.  Only the writer stores
 * to it, and only when it publishes, so readers share the line without
 * ever invalidating it for each other.  seq is a sequence lock: odd while
 * the writer changes anything a reader may follow.
 */
struct kvshm_tier_control {
    /* line 0: read on every lookup */
    uint64_t seq;               /* even: stable; odd: publication under way */
    uint64_t nbuckets;          /* power of two */
    uint64_t entries_top;       /* bytes of the entries region in use */
    uint64_t entries;           /* live entries (for a bounded chain walk) */
    uint64_t hash_seed;
    uint64_t pad0[3];
    /* line 1: counters, written by the writer, read by tools */
    uint64_t live_bytes;        /* bytes of entries that can be found */
    uint64_t dead_bytes;        /* bytes of entries replaced by updates */
    uint64_t updates;           /* puts that replaced a value */
    uint64_t rebuilds;          /* index rebuilds */
    uint64_t rebuild_failures;  /* rebuilds skipped: no room for the index */
    uint64_t growths;           /* entries region enlargements */
    uint64_t max_load_milli;    /* rebuild threshold, entries/bucket * 1000 */
    uint64_t writer_pid;        /* the process that writes it; 0: none */
    /* lines 2-3: more counters */
    uint64_t clears;            /* kvshm_tier_clear() calls */
    uint64_t dropped;           /* entries a rebuild or repair dropped:
                                 * their checksum failed */
    uint64_t repairs;           /* writers that took over a publication
                                 * left half done and rebuilt the index */
    uint8_t  pad2[104];
};

#define KVSHM_TIER_BUCKETS_OFFSET \
    (KVSHM_HEADER_SIZE + sizeof(struct kvshm_tier_control))

/* A bucket: head and tail entry offsets, in units of 8 bytes. */
struct kvshm_tier_bucket {
    uint32_t head;
    uint32_t tail;
};

/*
 * An entry: this, then the key, then the value at an 8-byte boundary.
 * hash is the low half of the key's hash (key_hash.h: the 128-bit XXH3
 * seeded with KVSHM_KEY_SEED, which the control block's hash_seed holds,
 * and the DHT derives its homes from); checksum is XXH3-64
 * of the value seeded with kvshm_tier_checksum_seed() of hash and both
 * lengths, so the two together cover key, value and lengths.  A reader
 * checks what it copies against checksum, and a rebuild drops an entry
 * that fails it: a half-written value is never a hit.
 */
struct kvshm_tier_entry {
    uint64_t hash;              /* of the key, see above */
    uint32_t next;              /* next entry of the chain, 0 = end */
    uint32_t key_len;
    uint32_t value_len;
    uint32_t flags;             /* KVSHM_ENTRY_DEAD */
    uint64_t checksum;          /* of the value, see above */
};

#define KVSHM_TIER_CHECKSUM_SEED UINT64_C(0x6d70696b76737463) /* "mpikvstc" */

static inline uint64_t kvshm_tier_checksum_seed(uint64_t hash,
                                                uint64_t key_len,
                                                uint64_t value_len)
{
    return hash ^ KVSHM_TIER_CHECKSUM_SEED ^ (key_len << 32) ^ value_len;
}

#define KVSHM_ENTRY_DEAD 1u     /* replaced by a later entry for its key */

static inline uint64_t kvshm_align8(uint64_t n)
{
    return (n + 7u) & ~UINT64_C(7);
}

static inline uint64_t kvshm_entry_size(uint64_t key_len, uint64_t value_len)
{
    return sizeof(struct kvshm_tier_entry) + kvshm_align8(key_len) +
           kvshm_align8(value_len);
}

_Static_assert(sizeof(struct kvshm_header) == KVSHM_HEADER_SIZE,
               "region header must stay 256 bytes");
_Static_assert(offsetof(struct kvshm_header, format_version) == 8,
               "magic and version keep their place in every format");
_Static_assert(sizeof(struct kvshm_tier_control) == 256,
               "tier control block is four cache lines");
_Static_assert(sizeof(struct kvshm_tier_entry) % 8 == 0,
               "entries keep 8-byte alignment");

/*
 * The data region of a table (the DHT's buckets on one node):
 *
 *   header | control block | stats[max_ranks] | buckets[nbuckets]
 *
 * A bucket (bucket_size bytes, a whole number of cache lines, so that
 * every bucket starts a line) is its header and then slots_per_bucket
 * slots of slot_size bytes:
 *
 *   header: lock (8) | meta[slots_per_bucket] (8 each) | padding to 64
 *   slot:   key | value | padding to 8 | checksum (8)
 *
 * The header is what a lookup reads first: with up to 7 slots it is one
 * cache line, and it rules out every slot whose tag is not the key's, so
 * a lookup touches a slot's lines only where the key may be.  lock is the
 * fine-lock mode's.  A slot's meta word holds, from the bottom:
 *
 *   OCCUPIED (bit 0)   written at least once
 *   INVALID  (bit 1)   marked by a reader that saw it torn too often
 *   BUSY     (bit 2)   a writer claimed it and is writing it (lock-free
 *                      writers only; readers ignore it)
 *   tag      (3..31)   KVSHM_SLOT_TAG_BITS of the key's hash (key_hash.h)
 *   stamp    (32..63)  the bucket's write clock: one more than the newest
 *                      stamp of the bucket when the slot was written;
 *                      while BUSY, the claim's owner instead: the pid of
 *                      the process of this node that writes the slot, or
 *                      0 for a write from another node (libmpikvs/slot.h,
 *                      Claims), so that only a dead owner's claim is
 *                      ever taken over
 *
 * so eviction ("the slot written longest ago") compares stamps of one
 * bucket only, whoever wrote them, without reading a clock.
 *
 * checksum is XXH3-64 of the value, seeded with the low half of the key's
 * hash (kvshm_slot_checksum_seed): it covers the key through the seed.
 * Every writer writes it and every reader verifies it: a slot that does
 * not verify is never a hit.  How a slot is read while others write it,
 * and how a lock-free writer claims one: slot_read.h.
 */
#define KVSHM_SLOT_CHECKSUM_SEED UINT64_C(0x6d70696b76732d35) /* "mpikvs-5" */
#define KVSHM_SLOT_OCCUPIED    UINT64_C(1)
#define KVSHM_SLOT_INVALID     UINT64_C(2)
#define KVSHM_SLOT_BUSY        UINT64_C(4)
#define KVSHM_SLOT_TAG_SHIFT   3
#define KVSHM_SLOT_TAG_BITS    29
#define KVSHM_SLOT_TAG_MASK \
    (((UINT64_C(1) << KVSHM_SLOT_TAG_BITS) - 1u) << KVSHM_SLOT_TAG_SHIFT)
#define KVSHM_SLOT_STAMP_SHIFT 32   /* the write stamp in meta */
#define KVSHM_TABLE_TAG_MAX  KVSHM_TABLE_NAME_MAX

struct kvshm_bucket {
    uint64_t lock;              /* KVSHM_LOCK_*: the fine-lock mode's */
    uint64_t meta[];            /* one per slot: KVSHM_SLOT_*, tag, stamp */
};

#define KVSHM_BUCKET_LOCK_OFFSET  offsetof(struct kvshm_bucket, lock)
#define KVSHM_SLOT_KV_OFFSET      0u  /* the key, then the value */
#define KVSHM_SLOT_CHECKSUM_SIZE  8u

static inline uint64_t kvshm_align_line(uint64_t n)
{
    return (n + KVSHM_CACHELINE - 1u) & ~(uint64_t)(KVSHM_CACHELINE - 1u);
}

/* The bytes of a bucket's header: lock and meta words, whole lines. */
static inline uint64_t kvshm_bucket_header_size(uint64_t slots)
{
    return kvshm_align_line(sizeof(struct kvshm_bucket) +
                            slots * sizeof(uint64_t));
}

/* Where slot i's meta word is in its bucket. */
static inline uint64_t kvshm_bucket_meta_offset(uint64_t i)
{
    return offsetof(struct kvshm_bucket, meta) + i * sizeof(uint64_t);
}

/* Where slot i starts in its bucket of slots slots, where a slot keeps
 * the key's value (its key is at KVSHM_SLOT_KV_OFFSET), and where its
 * checksum. */
static inline uint64_t kvshm_bucket_slot_offset(uint64_t slots,
                                                uint64_t slot_size,
                                                uint64_t i)
{
    return kvshm_bucket_header_size(slots) + i * slot_size;
}

static inline uint64_t kvshm_slot_value_offset(uint64_t key_size)
{
    return KVSHM_SLOT_KV_OFFSET + key_size;
}

static inline uint64_t kvshm_slot_checksum_offset(uint64_t slot_size)
{
    return slot_size - KVSHM_SLOT_CHECKSUM_SIZE;
}

/* A meta word's tag and stamp. */
static inline uint32_t kvshm_meta_tag(uint64_t meta)
{
    return (uint32_t)((meta & KVSHM_SLOT_TAG_MASK) >> KVSHM_SLOT_TAG_SHIFT);
}

static inline uint32_t kvshm_meta_stamp(uint64_t meta)
{
    return (uint32_t)(meta >> KVSHM_SLOT_STAMP_SHIFT);
}

struct kvshm_data_control {
    uint64_t key_size;
    uint64_t value_size;
    uint64_t slots_per_bucket;
    uint64_t slot_size;
    uint64_t bucket_size;
    uint64_t nbuckets;
    uint64_t buckets_offset;    /* from the start of the region */
    uint64_t stats_offset;
    uint64_t max_ranks;         /* stats blocks */
    uint32_t mode;              /* enum kvshm_mode of job_config.h */
    uint32_t nnodes;
    uint32_t node_index;
    uint32_t state;             /* KVSHM_DATA_*: buckets laid out yet? */
    char     table[KVSHM_TABLE_TAG_MAX];
    uint8_t  pad0[112 - 88 - KVSHM_TABLE_TAG_MAX];
    /* the fine-lock mode (libmpikvs/locks.c): the open that may take the
     * bucket locks, and the epoch every lock word it takes carries */
    uint64_t lock_lease;        /* KVSHM_LEASE_OWNER() of its leader; 0: free */
    uint32_t lock_epoch;        /* of the latest fine-lock open */
    uint32_t generation;        /* mpikvs_clear's: slots of another one
                                 * are not the table's (key_hash.h) */
    /* lines 2-3: the job's global counters (mpikvs_counter_add(3)):
     * counter i lives in counters[i / nnodes] of node i % nnodes, changed
     * by the transport's atomics, or the CPU's where they are one
     * (libmpikvs/counters.c) */
    uint64_t counters[KVSHM_COUNTERS_MAX];  /* job_config.h */
};

/* A fine-lock lease holder: a process of this node, by pid and the low
 * 32 bits of its start time (clock ticks since boot), so that a pid the
 * kernel gave to another process does not pass for the holder. */
#define KVSHM_LEASE_OWNER(pid, start) \
    (((uint64_t)(uint32_t)(pid) << 32) | (uint32_t)(start))

/* A bucket's lock word in the fine-lock mode, from the top: the epoch of
 * the open that stamped it (20 bits, wrapping), so that a later open
 * knows a word a dead one left behind; a writer bit; the count of
 * writers waiting for it (new readers stay out while there are any); the
 * count of readers inside. */
#define KVSHM_LOCK_EPOCH_SHIFT 44
#define KVSHM_LOCK_EPOCH_MASK  ((UINT32_C(1) << 20) - 1u)
#define KVSHM_LOCK_WRITER      (UINT64_C(1) << 43)
#define KVSHM_LOCK_WAITER      (UINT64_C(1) << 22)   /* one waiting writer */
#define KVSHM_LOCK_WAITERS     (KVSHM_LOCK_WRITER - KVSHM_LOCK_WAITER)
#define KVSHM_LOCK_READERS     (KVSHM_LOCK_WAITER - 1u)
#define KVSHM_LOCK_EPOCH(w)    ((uint32_t)((w) >> KVSHM_LOCK_EPOCH_SHIFT))

/* state: a region the SPANK plugin made without a job config is
 * reserved but not laid out; the first rank to open it lays out its
 * buckets for the key and value sizes it was given. */
#define KVSHM_DATA_UNFORMATTED 0u
#define KVSHM_DATA_FORMATTING  1u
#define KVSHM_DATA_READY       2u

/* One rank's counters, on cache lines of their own: only that rank
 * writes them, anyone may read them (mpikvs-stat).  One uint64_t per
 * counter of MPIKVS_STATISTICS (mpikvs_statistics.h), in its order: the
 * fields and the order of mpikvs_stats_t.  Then the transport the rank's
 * latest open uses to reach other nodes (enum kvshm_transport of
 * job_config.h), written once at open: 0 (auto) means none yet, as an
 * open always resolves auto.  Then the rank of that open in the
 * communicator it opened over, plus one (0: no open yet), so that
 * mpikvs-stat can name the MPI rank of a block. */
#define KVSHM_RANK_STATS_LINES 5u
#define KVSHM_RANK_STATS_WORDS (KVSHM_RANK_STATS_LINES * KVSHM_CACHELINE / 8)
struct kvshm_rank_stats {
#define KVSHM_RANK_COUNTER_(name, label, text) uint64_t name;
    MPIKVS_STATISTICS(KVSHM_RANK_COUNTER_)
#undef KVSHM_RANK_COUNTER_
    uint64_t transport;
    uint64_t comm_rank;
    uint64_t verify_error_max_open;  /* verify_error_max since the latest
                                      * open (MPIKVS_SINCE_OPEN) */
#if MPIKVS_NSTATISTICS + 3 < KVSHM_RANK_STATS_WORDS
    uint64_t pad[KVSHM_RANK_STATS_WORDS - MPIKVS_NSTATISTICS - 3];
#endif
};

#define KVSHM_DATA_CONTROL_OFFSET KVSHM_HEADER_SIZE

_Static_assert(sizeof(struct kvshm_data_control) == 256,
               "data control block is four cache lines");
_Static_assert(sizeof(struct kvshm_rank_stats) ==
                   KVSHM_RANK_STATS_LINES * KVSHM_CACHELINE,
               "a rank's counters fill whole cache lines");
_Static_assert(sizeof(struct kvshm_bucket) == 8,
               "a bucket's header starts with its 8-byte lock word");

/*
 * The job layout region (job_layout.h), written once by the SPANK plugin:
 *
 *   header | control | tables[ntables] | node list | config text
 *
 * Offsets are from the start of the region; the texts end in a NUL that
 * their lengths leave out.  body_checksum is XXH3-64 of the bytes from
 * body_size up to KVSHM_HEADER_SIZE + body_size.
 */
struct kvshm_layout_control {
    uint64_t body_checksum;
    uint64_t body_size;         /* control and everything after it */
    uint64_t dht_size;
    uint64_t request_hash;
    uint32_t scope;             /* enum kvshm_scope */
    uint32_t step;
    uint32_t nnodes;
    uint32_t node_index;
    uint32_t tasks_on_node;
    uint32_t ntables;
    uint64_t tables_offset;
    uint64_t nodelist_offset, nodelist_len;
    uint64_t config_offset, config_len;   /* config_len 0: no config */
    uint8_t  pad[256 - 96];
};

_Static_assert(sizeof(struct kvshm_layout_control) == 256,
               "layout control block is four cache lines");

/* The tier prefix "[s<step>-]<table>" (region_name.h), terminator
 * included: a field of the layout's table entries. */
#define KVSHM_TIER_PREFIX_MAX 24u

/*
 * A table's plan on a node (shm/plan.h works it out): the shape of its
 * buckets and, in struct kvshm_job_table, the sizes of its regions.
 * key_size 0: no shape yet (the plugin without a job config; the first
 * opener lays the buckets out, kvshm_data_format).  nbuckets 0: not
 * known where max_ranks is not (the submit side).
 */
struct kvshm_table_shape {
    uint64_t key_size;
    uint64_t value_size;
    uint64_t slots_per_bucket;
    uint64_t slot_size;
    uint64_t bucket_size;
    uint64_t nbuckets;
    uint64_t max_ranks;         /* counters of the data region */
    uint32_t mode;              /* enum kvshm_mode */
    uint32_t reserved;
};

/* A layout's table entry: the table's regions on the node and its plan. */
struct kvshm_job_table {
    char     name[KVSHM_TABLE_TAG_MAX];
    char     data_tag[KVSHM_TAG_MAX];          /* "<table>-data" */
    char     tier_prefix[KVSHM_TIER_PREFIX_MAX]; /* "" without a tier */
    uint8_t  pad[7];
    uint64_t data_bytes;                       /* data region size */
    uint64_t tier_bytes;                       /* both tier regions */
    uint64_t near_bytes;                       /* its neighbourhoods
                                                * (libmpikvs/near.c) */
    struct kvshm_table_shape shape;
};

_Static_assert(sizeof(struct kvshm_table_shape) == 64,
               "a table's shape is one cache line");
_Static_assert(sizeof(struct kvshm_job_table) == 168,
               "a layout table entry: names, sizes and shape");

/*
 * A window of libmpikvs-rmacache with the node tier (mpikvs-rmacache(7)),
 * one region per window and node, made by the node's first rank of the
 * window when the window is created and removed when it is freed:
 *
 *   header | control | ranks[nranks] | segments[nranks]
 *
 * Each rank of the node writes its own block of counters and its own
 * segment only; its neighbours read the segment without a lock, and
 * mpikvs-stat reads the control block and the counters.  The offsets are
 * what kvshm_rma_layout() (shm/rma_region.h) gives for nranks and
 * ring_size, and a reader checks that they are.
 */
struct kvshm_rma_control {
    uint64_t nranks;            /* ranks of the window on this node */
    uint64_t win_ranks;         /* ranks of the whole window */
    uint64_t ring_size;         /* data bytes of a segment */
    uint64_t segment_size;      /* a segment, whole pages */
    uint64_t ranks_offset;      /* from the start of the region */
    uint64_t segments_offset;
    uint64_t name_seq;          /* odd while the window's name changes */
    uint64_t reserved0;
    char     name[64];          /* MPI_Win_set_name of the first rank */
    uint8_t  pad[256 - 128];
};

/* How a rank caches the window (MPIKVS_RMACACHE, the info key). */
enum kvshm_rma_mode {
    KVSHM_RMA_OFF = 0,
    KVSHM_RMA_TRANSPARENT = 1,
    KVSHM_RMA_READONLY = 2
};

/*
 * The counters of a rank's use of one window, listed once:
 * X(name, label, text), name the field and the JSON member, label the
 * word of MPIKVS_RMACACHE_STATS's line and mpikvs-stat's column.
 */
#define KVSHM_RMA_COUNTERS(X)                                               \
    X(gets, "gets", "MPI_Get calls on the window")                         \
    X(hits, "hits", "gets served from the rank's own cache")               \
    X(pending_hits, "pending-hits", "gets served by a pending equal get")  \
    X(node_hits, "node-hits", "gets served from a neighbour's segment")    \
    X(misses, "misses", "gets that went to MPI and may be cached")         \
    X(passed, "passed", "gets never cached: own rank, layout, size, off")  \
    X(evictions, "evictions", "entries dropped for room")                  \
    X(own_write, "own-write", "entries dropped: the rank's own writes")    \
    X(epoch, "epoch", "entries dropped: an epoch ended")                   \
    X(order, "order", "entries dropped: a call ordered the rank after "    \
                      "another's write")                                   \
    X(user, "user", "entries dropped: MPI_Win_set_info, attach, detach")   \
    X(verified, "verified", "hits checked by MPIKVS_RMACACHE_VERIFY")      \
    X(mismatches, "mismatches", "checked hits that differed from MPI")     \
    X(published, "published", "entries put into the rank's segment")

#define KVSHM_RMA_COUNTER_ONE_(name, label, text) +1
#define KVSHM_RMA_NCOUNTERS (0 KVSHM_RMA_COUNTERS(KVSHM_RMA_COUNTER_ONE_))

struct kvshm_rma_counters {
#define KVSHM_RMA_COUNTER_(name, label, text) uint64_t name;
    KVSHM_RMA_COUNTERS(KVSHM_RMA_COUNTER_)
#undef KVSHM_RMA_COUNTER_
};

/* A rank's block: its counters (written with relaxed stores, by it
 * alone), then who it is.  pid 0: the rank has not attached. */
#define KVSHM_RMA_COUNTER_WORDS 16u
struct kvshm_rma_rank {
    struct kvshm_rma_counters counters;
#if KVSHM_RMA_NCOUNTERS < KVSHM_RMA_COUNTER_WORDS
    uint64_t pad0[KVSHM_RMA_COUNTER_WORDS - KVSHM_RMA_NCOUNTERS];
#endif
    uint64_t pid;
    uint64_t win_rank;          /* its rank in the window */
    uint64_t mode;              /* enum kvshm_rma_mode */
    uint64_t pad1[5];
};

_Static_assert(sizeof(struct kvshm_rma_control) == 256,
               "rma control block is four cache lines");
_Static_assert(sizeof(struct kvshm_rma_rank) == 3 * KVSHM_CACHELINE,
               "a rank's rma block is three cache lines");

/*
 * A rank's segment: what it fetched of the window, for its neighbours.
 *
 *   segment header | slots[KVSHM_RMA_SLOTS] | ring[ring_size]
 *
 * One writer.  A slot is direct-mapped by (target, displacement,
 * length) and guarded by a sequence number (odd while written); its data
 * lives in the ring at pos % ring_size, and tail moves past the bytes
 * the writer is about to overwrite before it does, so a reader checks
 * both after its copy.  A slot carries the window's invalidation count
 * (gen, never 0 when live): a reader takes only entries of its own.
 */
#define KVSHM_RMA_SLOTS 4096u

struct kvshm_rma_segment {
    uint64_t tail;              /* ring bytes before this are reused */
    uint64_t head;              /* bytes ever published: the writer's */
    uint64_t ring_size;
    uint64_t ready;             /* the segment is laid out */
    uint8_t  pad[64 - 32];
};

struct kvshm_rma_slot {
    uint32_t seq;
    int32_t  target;
    uint32_t len;
    uint32_t gen;
    uint64_t disp;
    uint64_t pos;
};

_Static_assert(sizeof(struct kvshm_rma_segment) == KVSHM_CACHELINE,
               "a segment's header is a cache line");
_Static_assert(sizeof(struct kvshm_rma_slot) == 32,
               "two rma slots a cache line");

/*
 * The format id: a hash of the size and placement of everything in the
 * format.  A change of layout changes it by itself; a change of meaning
 * with the same layout needs a KVSHM_FORMAT_VERSION bump.
 */
uint64_t kvshm_format_id(void);

/* XXH3-64 of the header bytes before its checksum field. */
uint64_t kvshm_header_checksum(const struct kvshm_header *h);

#endif /* MPIKVS_SHM_FORMAT_H */
