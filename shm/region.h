/*
 * region.h - create, open, map, grow, close and unlink mpikvs regions.
 *
 * A region is a file in a shm directory, named mpikvs.<job>.<node>.<tag>
 * (region_name.h), that starts with a struct kvshm_header (format.h).
 * Creation is exclusive, with mode 0600 by default, optionally for
 * another owner (the SPANK plugin creates as root for the job user), and
 * reserves the whole size with posix_fallocate: a shm directory that is
 * too small fails here, with a message that says how much was asked and
 * how much is free, and never with a SIGBUS later.  A region appears
 * under its name only when complete (it is built as an O_TMPFILE and
 * linked in), so a creator that dies halfway leaves nothing behind.
 * Opening validates the whole header before anything else is read.
 *
 * In a hugetlbfs directory a region is made of whole huge pages: its
 * size and maximum, as its header and the region object give them, are
 * rounded up to the huge page size; fill still gets the size asked for.
 * Every mapping is advised to use huge pages (MADV_HUGEPAGE).
 *
 * Growable regions are mapped with their maximum size from the start:
 * the file grows under an existing mapping, so addresses handed out
 * stay valid and no process has to remap.
 *
 * Not thread-safe per region object; distinct objects are independent.
 */
#ifndef MPIKVS_SHM_REGION_H
#define MPIKVS_SHM_REGION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h"
#include "mpikvs_errors.h"
#include "region_name.h"   /* the names: mpikvs.<job>.<node>.<tag> */

#define KVSHM_DEFAULT_DIR "/dev/shm"
#define KVSHM_ANY_UID     ((uid_t)-1)

struct kvshm_region_spec {
    const char *dir;         /* NULL: KVSHM_DEFAULT_DIR */
    const char *job;         /* Slurm job id or kvshm_unique_id() */
    const char *node;        /* node name */
    const char *tag;         /* "data", "layout", "tier-index", ... */
    uint32_t    kind;        /* enum kvshm_kind */
    uint64_t    size;        /* bytes, header included */
    uint64_t    max_size;    /* > size: growable up to this; else fixed */
    uid_t       uid;         /* owner; KVSHM_ANY_UID: the caller */
    gid_t       gid;         /* group; (gid_t)-1: the caller's */
    mode_t      mode;        /* 0: 0600 */
    uint32_t    step;        /* KVSHM_NO_STEP outside a Slurm step */
    /* Optional: write the body (after the header) before the region gets
     * its name, so nobody ever opens it half made.  A non-zero return
     * (an MPIKVS_ERR_* or -errno, with err set) aborts the creation. */
    int       (*fill)(void *base, uint64_t size, void *arg,
                      mpikvs_error_t *err);
    void       *fill_arg;
};

struct kvshm_region {
    int                  fd;
    void                *base;      /* the header is at base */
    uint64_t             map_len;   /* address space reserved */
    uint64_t             size;      /* file size as this process knows it */
    bool                 writable;
    char                *path;
};

struct kvshm_open_opts {
    uint32_t kind;           /* expected kind; 0: any */
    bool     writable;       /* map read-write (the writer) or PROT_READ */
    uid_t    expect_uid;     /* header uid must match; KVSHM_ANY_UID: any
                              * (0 is not "any": root passes it explicitly) */
    bool     held;           /* a name not in the directory may be a
                              * region libmpikvs unlinked: open it through
                              * a process that holds it (held.h) */
};

/* Create the region exclusively, reserve its space, write and checksum its
 * header, let spec->fill write the body, and map it read-write.  On failure nothing is left behind.
 * Returns MPIKVS_OK, MPIKVS_ERR_EXISTS, MPIKVS_ERR_NOSPACE,
 * MPIKVS_ERR_NAME, MPIKVS_ERR_INVAL or -errno. */
int kvshm_region_create(const struct kvshm_region_spec *spec,
                        struct kvshm_region **out, mpikvs_error_t *err);

/* Open an existing region by name and validate its header: magic
 * (MPIKVS_ERR_FOREIGN), format version and layout (MPIKVS_ERR_VERSION),
 * checksum and fields (MPIKVS_ERR_CORRUPT), file size (MPIKVS_ERR_TRUNCATED,
 * MPIKVS_ERR_SIZE), kind (MPIKVS_ERR_KIND), owner (MPIKVS_ERR_OWNER); no
 * such file is MPIKVS_ERR_NOTFOUND, no permission -EACCES.  It never
 * waits and never follows a link: anything but a regular file
 * (MPIKVS_ERR_FOREIGN) and, unless expect_uid is KVSHM_ANY_UID, a file
 * owned by neither expect_uid nor root (MPIKVS_ERR_OWNER) is refused
 * before any of it is read. */
int kvshm_region_open(const char *dir, const char *name,
                      const struct kvshm_open_opts *opts,
                      struct kvshm_region **out, mpikvs_error_t *err);

/* "a regular file", "a FIFO", "a symbolic link", ... for messages. */
const char *kvshm_file_type(mode_t mode);

/* Validate a header as it was read from a file of file_size bytes owned by
 * file_uid.  name, if not NULL, must match the header's job/node/tag. */
int kvshm_header_check(const struct kvshm_header *h, uint64_t file_size,
                       uid_t file_uid, const char *name,
                       const struct kvshm_open_opts *opts,
                       mpikvs_error_t *err);

/* Grow a growable region's file to new_size (reserving the space) under
 * its existing mapping.  Returns MPIKVS_OK, MPIKVS_ERR_FULL (beyond
 * max_size), MPIKVS_ERR_NOSPACE, or MPIKVS_ERR_INVAL (a fixed region, or
 * one opened read-only); on failure the file keeps its size. */
int kvshm_region_grow(struct kvshm_region *r, uint64_t new_size,
                      mpikvs_error_t *err);

/* Bring r->size up to date with the file (a reader of a growable region
 * whose writer grew it).  Returns MPIKVS_OK or -errno. */
int kvshm_region_refresh(struct kvshm_region *r);

/* Unmap and close; *r becomes NULL.  The file stays. */
void kvshm_region_close(struct kvshm_region **r);

/* The longest directory of a job's regions, in bytes.  Every library
 * and message that holds it (libmpikvs, libmpikvs-rmacache, the ucx
 * transport's node information) has KVSHM_DIR_MAX + 1 bytes for it, and
 * a longer one is refused, never cut: a cut name is another directory,
 * and the libraries would not find each other's regions. */
#define KVSHM_DIR_MAX 255

/* The directory of a job's regions into buf: the job layout's (the
 * plugin makes a job's regions beside it), else shm_dir
 * (MPIKVS_SHM_DIR), else KVSHM_DEFAULT_DIR; layout and shm_dir may be
 * NULL or empty.  MPIKVS_OK, or MPIKVS_ERR_NAME (err names the setting,
 * buf is "") when the directory is longer than KVSHM_DIR_MAX. */
int kvshm_job_dir(const char *layout, const char *shm_dir,
                  char buf[KVSHM_DIR_MAX + 1], mpikvs_error_t *err);

/* Remove the file of region name from dir.  MPIKVS_OK, MPIKVS_ERR_NOTFOUND
 * or -errno. */
int kvshm_region_unlink(const char *dir, const char *name);

static inline struct kvshm_header *kvshm_region_header(
    const struct kvshm_region *r)
{
    return (struct kvshm_header *)r->base;
}

#endif /* MPIKVS_SHM_REGION_H */
