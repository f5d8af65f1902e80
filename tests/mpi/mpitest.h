/*
 * mpitest.h - a tiny assertion helper for the MPI tests of libmpikvs.
 *
 * Check's fork mode does not mix with MPI, so these tests are plain MPI
 * programs.  EXPECT(cond, fmt, ...) counts a passed or failed check; a
 * failed one prints "rank R: FAIL file:line: message" at once.  At the
 * end mt_finish() sums the counts over MPI_COMM_WORLD, rank 0 prints
 * "<program>: N passed, M failed", and every rank returns the same exit
 * status (nonzero on any failure).  A failed check never aborts; only a
 * situation that would hang (ranks that disagree about a collective call)
 * ends in MPI_Abort, through mt_abort().
 *
 * mt_phase() names what the program is doing; a watchdog (SIGALRM after
 * MPITEST_WATCHDOG seconds, default 100; 0 turns it off) prints the phase
 * of a rank that is stuck and exits with status 99, which ends the job,
 * so that a hang says where it hangs.
 */
#ifndef MPIKVS_TESTS_MPITEST_H
#define MPIKVS_TESTS_MPITEST_H

#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int              mt_rank_ = -1;
static long             mt_passed_;
static long             mt_failed_;
static const char      *mt_program_ = "?";
static const char *volatile mt_phase_ = "start";

#define EXPECT(cond, ...)                                                \
    do {                                                                 \
        if (cond) {                                                      \
            mt_passed_++;                                                \
        } else {                                                         \
            mt_failed_++;                                                \
            mt_fail_(__FILE__, __LINE__, __VA_ARGS__);                   \
        }                                                                \
    } while (0)

__attribute__((format(printf, 3, 4)))
static inline void mt_fail_(const char *file, int line, const char *fmt, ...)
{
    char    msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d: FAIL %s:%d: %s\n", mt_rank_, file, line, msg);
    fflush(stderr);
}

/* Print a line prefixed with the rank (progress and figures). */
__attribute__((format(printf, 1, 2)))
static inline void mt_note(const char *fmt, ...)
{
    char    msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("rank %d: %s\n", mt_rank_, msg);
    fflush(stdout);
}

static inline void mt_phase(const char *what)
{
    mt_phase_ = what;
}

/* Give the rest of the program at most secs seconds (a phase that may
 * hang; put it last).  0 keeps the watchdog as it is. */
static inline void mt_deadline(unsigned secs)
{
    unsigned left = alarm(0);

    alarm(left && left < secs ? left : secs ? secs : left);
}

static inline void mt_watchdog_(int sig)
{
    char        buf[256];
    const char *phase = (const char *)mt_phase_;
    int         n;

    (void)sig;
    n = snprintf(buf, sizeof buf,
                 "rank %d: FAIL %s: watchdog: stuck in phase \"%s\" "
                 "(%ld passed, %ld failed before)\n",
                 mt_rank_, mt_program_, phase, mt_passed_, mt_failed_);
    if (n > 0)
        (void)!write(STDERR_FILENO, buf,
                     (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    _exit(99);
}

/* A hang risk: say why and end the whole job. */
static inline void mt_abort(const char *why)
{
    fprintf(stderr, "rank %d: FAIL %s: aborting the job: %s (phase \"%s\")\n",
            mt_rank_, mt_program_, why, (const char *)mt_phase_);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Call right after MPI_Init. */
static inline void mt_init(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    const char *wd = getenv("MPITEST_WATCHDOG");
    unsigned    secs = 100;

    mt_program_ = slash ? slash + 1 : argv0;
    /* libtool wrappers run the real binary as lt-<name> */
    if (strncmp(mt_program_, "lt-", 3) == 0)
        mt_program_ += 3;
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank_);
    if (wd && *wd)
        secs = (unsigned)strtoul(wd, NULL, 10);
    if (secs > 0) {
        signal(SIGALRM, mt_watchdog_);
        alarm(secs);
    }
}

/* Sum the counts of every rank; return the exit status (same on every
 * rank).  Call before MPI_Finalize. */
static inline int mt_finish(void)
{
    long mine[2] = { mt_passed_, mt_failed_ };
    long all[2] = { 0, 0 };

    mt_phase("finish");
    if (MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD)
        != MPI_SUCCESS)
        mt_abort("MPI_Allreduce of the counts failed");
    alarm(0);
    if (mt_rank_ == 0) {
        printf("%s: %ld passed, %ld failed\n", mt_program_, all[0], all[1]);
        fflush(stdout);
    }
    return all[1] == 0 && all[0] > 0 ? 0 : 1;
}

/* How many nodes the library forms of MPI_COMM_WORLD: MPIKVS_VIRTUAL_NODES
 * (at most one a rank), else the shared-memory nodes.  Collective. */
static inline int mt_node_count(void)
{
    const char *vn = getenv("MPIKVS_VIRTUAL_NODES");
    MPI_Comm    phys;
    int         size, prank, leader, leaders;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (vn && atoi(vn) > 0)
        return atoi(vn) < size ? atoi(vn) : size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &phys);
    MPI_Comm_rank(phys, &prank);
    MPI_Comm_free(&phys);
    leader = prank == 0;
    MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return leaders;
}

/* Do all ranks hold the same value?  (Collective.) */
static inline int mt_all_same(long v, MPI_Comm comm)
{
    long lo, hi;

    MPI_Allreduce(&v, &lo, 1, MPI_LONG, MPI_MIN, comm);
    MPI_Allreduce(&v, &hi, 1, MPI_LONG, MPI_MAX, comm);
    return lo == hi;
}

/*
 * Keys and values a reader can check.  A key is made of (tag, a, b): its
 * first 16 bytes hold them, the rest is a pseudo-random stream seeded by
 * them, so keys hash all over the table.  A value is made of a key and a
 * version: the first 8 bytes hold the version, the rest is a stream
 * seeded by the key's bytes and the version, so a value of another key, or
 * a mix of two versions, does not check.  Sizes must be at least 16 (key)
 * and 8 (value).
 */
static inline uint64_t mt_mix(uint64_t x)
{
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 29;
    x *= 0xa0761d6478bd642fULL;
    x ^= x >> 32;
    return x;
}

/* Word i of the stream seeded by seed (its bytes 8i to 8i+7). */
static inline uint64_t mt_stream_word(uint64_t seed, size_t i)
{
    return mt_mix(seed + 0x9e3779b97f4a7c15ULL * (i + 1));
}

static inline void mt_stream(uint64_t seed, unsigned char *out, size_t len)
{
    for (size_t off = 0; off < len; off += 8) {
        uint64_t w = mt_stream_word(seed, off / 8);
        size_t   n = len - off < 8 ? len - off : 8;

        memcpy(out + off, &w, n);
    }
}

static inline void mt_make_key(uint32_t tag, uint32_t a, uint64_t b,
                               void *key, size_t ksize)
{
    unsigned char *k = key;
    uint64_t       seed = mt_mix(((uint64_t)tag << 32 | a) ^ mt_mix(b));

    memcpy(k, &tag, 4);
    memcpy(k + 4, &a, 4);
    memcpy(k + 8, &b, 8);
    mt_stream(seed, k + 16, ksize - 16);
}

static inline uint64_t mt_key_hash(const void *key, size_t ksize)
{
    const unsigned char *k = key;
    uint64_t             h = ksize;

    for (size_t off = 0; off < ksize; off += 8) {
        uint64_t w = 0;

        memcpy(&w, k + off, ksize - off < 8 ? ksize - off : 8);
        h = mt_mix(h ^ w) + off;
    }
    return h;
}

static inline void mt_make_value(const void *key, size_t ksize,
                                 uint64_t version, void *value, size_t vsize)
{
    unsigned char *v = value;

    memcpy(v, &version, 8);
    mt_stream(mt_key_hash(key, ksize) ^ mt_mix(version), v + 8, vsize - 8);
}

/* Is value a value of key?  Its version goes to *version. */
static inline int mt_value_ok(const void *key, size_t ksize,
                              const void *value, size_t vsize,
                              uint64_t *version)
{
    unsigned char want[4096];
    uint64_t      ver;

    if (vsize > sizeof want)
        return 0;
    memcpy(&ver, value, 8);
    mt_make_value(key, ksize, ver, want, vsize);
    if (version)
        *version = ver;
    return memcmp(want, value, vsize) == 0;
}

/* Is value a value of key, of any size (a large value is checked in
 * place, word by word, without a copy)?  Returns vsize when it is, with
 * its version in *version; else the offset of its first wrong byte, 8 or
 * more (the first 8 bytes are the version: any version is one).  Each
 * word depends on the key, the version and its place, so a value of
 * another key, a mix of two versions or a partial write is caught
 * wherever in the value it is. */
static inline size_t mt_value_check(const void *key, size_t ksize,
                                    const void *value, size_t vsize,
                                    uint64_t *version)
{
    const unsigned char *v = value;
    uint64_t             ver, seed;

    memcpy(&ver, v, 8);
    if (version)
        *version = ver;
    seed = mt_key_hash(key, ksize) ^ mt_mix(ver);
    for (size_t off = 8; off < vsize; off += 8) {
        uint64_t want = mt_stream_word(seed, (off - 8) / 8);
        size_t   n = vsize - off < 8 ? vsize - off : 8;

        if (memcmp(&want, v + off, n) != 0)
            return off;
    }
    return vsize;
}

#endif /* MPIKVS_TESTS_MPITEST_H */
