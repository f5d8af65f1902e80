/*
 * mpikvs_errors.h - the return codes every mpikvs call shares.
 *
 * A call returns MPIKVS_OK (0), MPIKVS_MISS (1, "not found", not an
 * error), MPIKVS_PRESENT (2, mpikvs_put_if_absent's "already there", not
 * an error), MPIKVS_VERIFY (3, a hit the program asked to be given
 * for verifying: mpikvs_verify_report), or a negative error code.
 * Library codes sit in a reserved band, [MPIKVS_ERR_LAST,
 * MPIKVS_ERR_FIRST]; any other negative value is a negated errno (-ENOMEM, -EACCES, ...).  mpikvs_strerror() explains both.
 */
#ifndef MPIKVS_ERRORS_H
#define MPIKVS_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every return code, once: X(name, value, text), text being what
 * mpikvs_strerror() returns for it.  The enum below, mpikvs_strerror
 * (common/errors.c) and the tables of mpikvs(3) and mpikvs(7) follow this
 * list; tests/api/check-errors.sh checks that the man pages' tables and
 * mpikvs_strerror agree with it.  A new code takes the next value below
 * MPIKVS_ERR_LAST, goes at the end, and moves MPIKVS_ERR_LAST to it.
 */
#define MPIKVS_RETURN_CODES(X)                                              \
    X(MPIKVS_OK, 0, "success")                                              \
    X(MPIKVS_MISS, 1, "not found")                                          \
    X(MPIKVS_PRESENT, 2, "already present")                                 \
    X(MPIKVS_VERIFY, 3,                                                     \
      "a hit to verify: compute the value anyway and report the error")    \
    X(MPIKVS_ERR_INVAL, -30800, "invalid argument")                         \
    X(MPIKVS_ERR_NAME, -30801, "invalid region name")                       \
    X(MPIKVS_ERR_EXISTS, -30802, "region already exists")                   \
    X(MPIKVS_ERR_NOTFOUND, -30803, "no such region")                        \
    X(MPIKVS_ERR_NOSPACE, -30804, "not enough space in the shm directory")  \
    X(MPIKVS_ERR_FOREIGN, -30805, "not an mpikvs region")                   \
    X(MPIKVS_ERR_VERSION, -30806,                                           \
      "region has another format version or layout")                        \
    X(MPIKVS_ERR_CORRUPT, -30807, "region header is corrupt")               \
    X(MPIKVS_ERR_TRUNCATED, -30808, "region file is truncated")             \
    X(MPIKVS_ERR_SIZE, -30809, "region file size contradicts its header")   \
    X(MPIKVS_ERR_KIND, -30810, "region is of another kind")                 \
    X(MPIKVS_ERR_OWNER, -30811, "region belongs to another user")           \
    X(MPIKVS_ERR_FULL, -30812, "region is full")                            \
    X(MPIKVS_ERR_TOOBIG, -30813, "key or value too large")                  \
    X(MPIKVS_ERR_STALLED, -30814,                                           \
      "stalled: a writer, lock holder or peer did not finish in time")      \
    X(MPIKVS_ERR_MPI, -30815, "an MPI call failed")                         \
    X(MPIKVS_ERR_MISMATCH, -30816, "ranks or regions disagree")             \
    X(MPIKVS_ERR_CONFIG, -30817, "job config invalid or missing")           \
    X(MPIKVS_ERR_TOOSMALL, -30818, "memory too small for the table")        \
    X(MPIKVS_ERR_TRANSPORT, -30819,                                         \
      "the network transport (UCX) cannot start or failed")                 \
    X(MPIKVS_ERR_NOTEMPTY, -30820, "the table already holds entries")

enum mpikvs_rc {
#define MPIKVS_RC_ENUM_(name, value, text) name = value,
    MPIKVS_RETURN_CODES(MPIKVS_RC_ENUM_)
#undef MPIKVS_RC_ENUM_
    /* the library's band: its first and last code */
    MPIKVS_ERR_FIRST = MPIKVS_ERR_INVAL,
    MPIKVS_ERR_LAST = MPIKVS_ERR_NOTEMPTY
};

/* Detailed text of a failure, filled by calls that take one (may be NULL).
 * code repeats the return value; text says what failed, with what value,
 * and what to do. */
typedef struct mpikvs_error {
    int  code;
    char text[512];
} mpikvs_error_t;

/* A short, static description of rc: a library code, or -errno. */
const char *mpikvs_strerror(int rc);

#ifdef __cplusplus
}
#endif
#endif /* MPIKVS_ERRORS_H */
