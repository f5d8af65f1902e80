/*
 * mpikvs_errors.h - the return codes every mpikvs call shares.
 *
 * A call returns MPIKVS_OK (0), MPIKVS_MISS (1, "not found", not an
 * error), MPIKVS_PRESENT (2, mpikvs_put_if_absent's "already there", not
 * an error), or a negative error code.  Library codes sit in a reserved band,
 * [MPIKVS_ERR_LAST, MPIKVS_ERR_FIRST]; any other negative value is a
 * negated errno (-ENOMEM, -EACCES, ...).  mpikvs_strerror() explains both.
 */
#ifndef MPIKVS_ERRORS_H
#define MPIKVS_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

enum mpikvs_rc {
    MPIKVS_OK             = 0,
    MPIKVS_MISS           = 1,
    MPIKVS_PRESENT        = 2,

    MPIKVS_ERR_FIRST      = -30800,
    MPIKVS_ERR_INVAL      = -30800, /* an argument is out of range */
    MPIKVS_ERR_NAME       = -30801, /* a region name component is not allowed */
    MPIKVS_ERR_EXISTS     = -30802, /* the region already exists */
    MPIKVS_ERR_NOTFOUND   = -30803, /* no such region */
    MPIKVS_ERR_NOSPACE    = -30804, /* the shm directory cannot hold the region */
    MPIKVS_ERR_FOREIGN    = -30805, /* the file is not an mpikvs region */
    MPIKVS_ERR_VERSION    = -30806, /* region written by another format version */
    MPIKVS_ERR_CORRUPT    = -30807, /* header checksum or a header field is wrong */
    MPIKVS_ERR_TRUNCATED  = -30808, /* the file is shorter than its header says */
    MPIKVS_ERR_SIZE       = -30809, /* the file size contradicts its header */
    MPIKVS_ERR_KIND       = -30810, /* the region is of another kind */
    MPIKVS_ERR_OWNER      = -30811, /* the region belongs to another user */
    MPIKVS_ERR_FULL       = -30812, /* the region reached its maximum size */
    MPIKVS_ERR_TOOBIG     = -30813, /* a key or value is larger than allowed */
    MPIKVS_ERR_STALLED    = -30814, /* a writer, lock holder or peer stopped */
    MPIKVS_ERR_MPI        = -30815, /* an MPI call failed */
    MPIKVS_ERR_MISMATCH   = -30816, /* ranks or regions disagree */
    MPIKVS_ERR_CONFIG     = -30817, /* the job config is invalid or missing */
    MPIKVS_ERR_TOOSMALL   = -30818, /* the memory cannot hold the table */
    MPIKVS_ERR_TRANSPORT  = -30819, /* the network transport (UCX) failed */
    MPIKVS_ERR_NOTEMPTY   = -30820, /* the table already holds entries */
    MPIKVS_ERR_LAST       = -30820
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
