/*
 * bind.c - the C side of the Fortran module mpikvs (fortran/mpikvs.f90):
 * what Fortran cannot do or check itself.
 *
 * Keys and values come as C descriptors of Fortran's assumed-rank
 * type(*) dummies (ISO_Fortran_binding.h): each is checked to be
 * contiguous and of the byte size the handle's key_size and value_size
 * call for before the library sees its address, so that no call reads
 * or writes past a Fortran array and no temporary copy is ever handed to
 * the library (a started batch keeps the addresses until it is done).
 * Communicators come as Fortran handles and cross with MPI_Comm_f2c.
 *
 * A handle is a struct mpikvs_f: the library's handle and the text of the
 * binding's own last failure, which the Fortran mpikvs_last_error returns
 * when the binding's check failed last (the library has no way to set
 * its last error from outside).  Calls on no handle (never opened, or
 * closed) keep their text per thread.
 *
 * The names are mpikvs_f_*: the library's own are mpikvs_*.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include <mpikvs.h>

struct mpikvs_f {
    mpikvs_t *kvs;
    size_t key_size, value_size;
    int failed;                 /* 1: the binding's check failed last */
    char text[512];
};

/* the failures of calls on no handle, and of open's own checks */
static _Thread_local int no_handle_failed;
static _Thread_local char no_handle_text[512];

/* fail(F, CALL, FORMAT, ...): MPIKVS_ERR_INVAL, the text "CALL: ..." kept
 * as F's last error (or the no-handle one when F is NULL) */
__attribute__((format(printf, 3, 4)))
static int fail(struct mpikvs_f *f, const char *call, const char *fmt, ...)
{
    char *text = f ? f->text : no_handle_text;
    size_t size = f ? sizeof f->text : sizeof no_handle_text;
    int n = snprintf(text, size, "%s: ", call);
    va_list ap;

    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < size)
        vsnprintf(text + n, size - (size_t)n, fmt, ap);
    va_end(ap);
    if (f)
        f->failed = 1;
    else
        no_handle_failed = 1;
    return MPIKVS_ERR_INVAL;
}

/* The handle of a call, its binding-failure mark cleared: the library's
 * last error counts again from here.  NULL (and the error kept) for a
 * handle never opened or closed. */
static struct mpikvs_f *handle(void *h, const char *call)
{
    struct mpikvs_f *f = h;

    if (!f) {
        fail(NULL, call, "kvs: not an open handle (never opened, its open "
             "failed, or closed)");
        return NULL;
    }
    f->failed = 0;
    return f;
}

/* The bytes D describes, or SIZE_MAX with F's error set when it is not
 * one contiguous block of known size. */
static size_t bytes(struct mpikvs_f *f, const char *call, const char *arg,
                    const CFI_cdesc_t *d)
{
    size_t n = d->elem_len;

    if (d->base_addr == NULL) {
        fail(f, call, "%s: no storage (an unallocated or null array)", arg);
        return SIZE_MAX;
    }
    if (d->rank > 0 && d->dim[d->rank - 1].extent < 0) {
        fail(f, call, "%s: an assumed-size array, whose size is unknown: "
             "pass it with its bounds, e.g. %s(1:n)", arg, arg);
        return SIZE_MAX;
    }
    if (d->rank > 0 && !CFI_is_contiguous(d)) {
        fail(f, call, "%s: not contiguous (an array section with a stride "
             "or a component of an array of types): pass a contiguous array, "
             "which the library reads and writes in place", arg);
        return SIZE_MAX;
    }
    for (int i = 0; i < d->rank; i++)
        n *= (size_t)d->dim[i].extent;
    return n;
}

/* check(F, CALL, ARG, D, COUNT, SIZE): D holds COUNT items of SIZE bytes:
 * exactly for one item, at least for a batch's COUNT */
static int check(struct mpikvs_f *f, const char *call, const char *arg,
                 const CFI_cdesc_t *d, size_t count, size_t size, int batch)
{
    size_t have = bytes(f, call, arg, d);

    if (have == SIZE_MAX)
        return MPIKVS_ERR_INVAL;
    if (!batch && have != size)
        return fail(f, call, "%s: %zu bytes, the handle's are %zu bytes",
                    arg, have, size);
    if (batch && have / size < count)
        return fail(f, call, "%s: %zu bytes, room for %zu of %zu bytes, "
                    "short of n = %zu (%zu bytes)", arg, have, have / size,
                    size, count, count * size);
    return MPIKVS_OK;
}

int mpikvs_f_open(MPI_Fint fcomm, int64_t key_size, int64_t value_size,
                  int64_t size_per_node, const char *mode, const char *config,
                  const char *table, int slots_per_bucket,
                  const char *transport, int flags, double verify, void **h)
{
    static const char call[] = "mpikvs_open";
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    struct mpikvs_f *f;
    MPI_Comm comm;
    int rc;

    no_handle_failed = 0;
    *h = NULL;
    comm = MPI_Comm_f2c(fcomm);
    if (comm == MPI_COMM_NULL)
        return fail(NULL, call, "comm: not a communicator (MPI_COMM_NULL, "
                    "or a handle MPI does not know)");
    if (key_size < 0 || value_size < 0 || size_per_node < 0 ||
        slots_per_bucket < 0 || flags < 0)
        return fail(NULL, call, "options%%%s: negative",
                    key_size < 0 ? "key_size" : value_size < 0 ? "value_size"
                    : size_per_node < 0 ? "size_per_node"
                    : slots_per_bucket < 0 ? "slots_per_bucket" : "flags");
    opt.key_size = (size_t)key_size;
    opt.value_size = (size_t)value_size;
    opt.size_per_node = (size_t)size_per_node;
    opt.slots_per_bucket = (unsigned)slots_per_bucket;
    opt.flags = (unsigned)flags;
    opt.verify = verify;
    /* '' in Fortran: the library's default */
    opt.mode = *mode ? mode : NULL;
    opt.config = *config ? config : NULL;
    opt.table = *table ? table : NULL;
    opt.transport = *transport ? transport : NULL;
    f = calloc(1, sizeof *f);
    if (!f)
        return fail(NULL, call, "out of memory for the handle");
    rc = mpikvs_open(comm, &opt, &f->kvs);
    if (rc != MPIKVS_OK) {
        free(f);
        return rc;
    }
    f->key_size = mpikvs_key_size(f->kvs);
    f->value_size = mpikvs_value_size(f->kvs);
    *h = f;
    return MPIKVS_OK;
}

int mpikvs_f_close(void **h)
{
    struct mpikvs_f *f = handle(*h, "mpikvs_close");
    int rc;

    if (!f)
        return MPIKVS_ERR_INVAL;
    no_handle_failed = 0;       /* the library's words on its close count */
    rc = mpikvs_close(&f->kvs);
    free(f);
    *h = NULL;
    return rc;
}

int mpikvs_f_get(void *h, const CFI_cdesc_t *key, const CFI_cdesc_t *value)
{
    static const char call[] = "mpikvs_get";
    struct mpikvs_f *f = handle(h, call);

    if (!f)
        return MPIKVS_ERR_INVAL;
    if (check(f, call, "key", key, 1, f->key_size, 0) ||
        check(f, call, "value", value, 1, f->value_size, 0))
        return MPIKVS_ERR_INVAL;
    return mpikvs_get(f->kvs, key->base_addr, value->base_addr);
}

int mpikvs_f_put(void *h, const CFI_cdesc_t *key, const CFI_cdesc_t *value)
{
    static const char call[] = "mpikvs_put";
    struct mpikvs_f *f = handle(h, call);

    if (!f)
        return MPIKVS_ERR_INVAL;
    if (check(f, call, "key", key, 1, f->key_size, 0) ||
        check(f, call, "value", value, 1, f->value_size, 0))
        return MPIKVS_ERR_INVAL;
    return mpikvs_put(f->kvs, key->base_addr, value->base_addr);
}

/* present: NULL when the optional argument is absent */
int mpikvs_f_put_if_absent(void *h, const CFI_cdesc_t *key,
                           const CFI_cdesc_t *value,
                           const CFI_cdesc_t *present)
{
    static const char call[] = "mpikvs_put_if_absent";
    struct mpikvs_f *f = handle(h, call);

    if (!f)
        return MPIKVS_ERR_INVAL;
    if (check(f, call, "key", key, 1, f->key_size, 0) ||
        check(f, call, "value", value, 1, f->value_size, 0) ||
        (present && check(f, call, "present", present, 1, f->value_size, 0)))
        return MPIKVS_ERR_INVAL;
    return mpikvs_put_if_absent(f->kvs, key->base_addr, value->base_addr,
                                present ? present->base_addr : NULL);
}

/* The arguments of a batch of n: keys, values and (for gets) status
 * hold n each; n >= 0. */
static int check_batch(struct mpikvs_f *f, const char *call, int n,
                       const CFI_cdesc_t *keys, const CFI_cdesc_t *values,
                       const CFI_cdesc_t *status)
{
    if (n < 0)
        return fail(f, call, "n: %d, negative", n);
    if (check(f, call, "keys", keys, (size_t)n, f->key_size, 1) ||
        check(f, call, "values", values, (size_t)n, f->value_size, 1) ||
        (status && check(f, call, "status", status, (size_t)n, sizeof(int), 1)))
        return MPIKVS_ERR_INVAL;
    return MPIKVS_OK;
}

int mpikvs_f_get_batch(void *h, int n, const CFI_cdesc_t *keys,
                       const CFI_cdesc_t *values, const CFI_cdesc_t *status)
{
    static const char call[] = "mpikvs_get_batch";
    struct mpikvs_f *f = handle(h, call);

    if (!f || check_batch(f, call, n, keys, values, status))
        return MPIKVS_ERR_INVAL;
    return mpikvs_get_batch(f->kvs, (size_t)n, keys->base_addr,
                            values->base_addr, status->base_addr);
}

int mpikvs_f_put_batch(void *h, int n, const CFI_cdesc_t *keys,
                       const CFI_cdesc_t *values)
{
    static const char call[] = "mpikvs_put_batch";
    struct mpikvs_f *f = handle(h, call);

    if (!f || check_batch(f, call, n, keys, values, NULL))
        return MPIKVS_ERR_INVAL;
    return mpikvs_put_batch(f->kvs, (size_t)n, keys->base_addr,
                            values->base_addr);
}

/* Requests cross as their id (the Fortran type mpikvs_request keeps it). */
int mpikvs_f_get_batch_start(void *h, int n, const CFI_cdesc_t *keys,
                             const CFI_cdesc_t *values,
                             const CFI_cdesc_t *status, uint64_t *id)
{
    static const char call[] = "mpikvs_get_batch_start";
    struct mpikvs_f *f = handle(h, call);
    mpikvs_request_t req = { 0 };
    int rc;

    if (!f || check_batch(f, call, n, keys, values, status))
        return MPIKVS_ERR_INVAL;
    rc = mpikvs_get_batch_start(f->kvs, (size_t)n, keys->base_addr,
                                values->base_addr, status->base_addr, &req);
    *id = req.id;
    return rc;
}

int mpikvs_f_put_batch_start(void *h, int n, const CFI_cdesc_t *keys,
                             const CFI_cdesc_t *values, uint64_t *id)
{
    static const char call[] = "mpikvs_put_batch_start";
    struct mpikvs_f *f = handle(h, call);
    mpikvs_request_t req = { 0 };
    int rc;

    if (!f || check_batch(f, call, n, keys, values, NULL))
        return MPIKVS_ERR_INVAL;
    rc = mpikvs_put_batch_start(f->kvs, (size_t)n, keys->base_addr,
                                values->base_addr, &req);
    *id = req.id;
    return rc;
}

int mpikvs_f_wait(void *h, uint64_t *id)
{
    struct mpikvs_f *f = handle(h, "mpikvs_wait");
    mpikvs_request_t req;
    int rc;

    if (!f)
        return MPIKVS_ERR_INVAL;
    req.id = *id;
    rc = mpikvs_wait(f->kvs, &req);
    *id = req.id;
    return rc;
}

int mpikvs_f_test(void *h, uint64_t *id, int *done)
{
    struct mpikvs_f *f = handle(h, "mpikvs_test");
    mpikvs_request_t req;
    int rc;

    *done = 0;
    if (!f)
        return MPIKVS_ERR_INVAL;
    req.id = *id;
    rc = mpikvs_test(f->kvs, &req, done);
    *id = req.id;
    return rc;
}

int mpikvs_f_round_key(void *h, const double *in, int n,
                       const CFI_cdesc_t *key)
{
    static const char call[] = "mpikvs_round_key";
    struct mpikvs_f *f = handle(h, call);

    if (!f || check(f, call, "key", key, 1, f->key_size, 0))
        return MPIKVS_ERR_INVAL;
    return mpikvs_round_key(f->kvs, in, (size_t)n, key->base_addr);
}

int mpikvs_f_fence(void *h)
{
    struct mpikvs_f *f = handle(h, "mpikvs_fence");

    return f ? mpikvs_fence(f->kvs) : MPIKVS_ERR_INVAL;
}

int mpikvs_f_tier_invalidate(void *h)
{
    struct mpikvs_f *f = handle(h, "mpikvs_tier_invalidate");

    return f ? mpikvs_tier_invalidate(f->kvs) : MPIKVS_ERR_INVAL;
}

/* out: the Fortran type mpikvs_stats, generated from the same X-macro in
 * the same order (fortran/gen_constants.c) */
int mpikvs_f_stats(void *h, int scope, mpikvs_stats_t *out)
{
    struct mpikvs_f *f = handle(h, "mpikvs_stats");

    return f ? mpikvs_stats(f->kvs, scope, out, sizeof *out)
             : MPIKVS_ERR_INVAL;
}

int mpikvs_f_save(void *h, const char *path)
{
    struct mpikvs_f *f = handle(h, "mpikvs_save");

    return f ? mpikvs_save(f->kvs, path) : MPIKVS_ERR_INVAL;
}

/* report: NULL when the optional argument is absent */
int mpikvs_f_load(void *h, const char *path, int flags,
                  mpikvs_load_report_t *report)
{
    struct mpikvs_f *f = handle(h, "mpikvs_load");

    return f ? mpikvs_load(f->kvs, path, (unsigned)flags, report)
             : MPIKVS_ERR_INVAL;
}

int mpikvs_f_counter_add(void *h, int counter, int64_t add, uint64_t *before)
{
    struct mpikvs_f *f = handle(h, "mpikvs_counter_add");

    if (!f)
        return MPIKVS_ERR_INVAL;
    if (counter < 0)
        return fail(f, "mpikvs_counter_add", "counter: %d, negative", counter);
    return mpikvs_counter_add(f->kvs, (unsigned)counter, add, before);
}

int mpikvs_f_counter_cas(void *h, int counter, uint64_t expect,
                         uint64_t desired, uint64_t *seen)
{
    struct mpikvs_f *f = handle(h, "mpikvs_counter_cas");

    if (!f)
        return MPIKVS_ERR_INVAL;
    if (counter < 0)
        return fail(f, "mpikvs_counter_cas", "counter: %d, negative", counter);
    return mpikvs_counter_cas(f->kvs, (unsigned)counter, expect, desired,
                              seen);
}

int mpikvs_f_forget(void *h, const CFI_cdesc_t *key)
{
    static const char call[] = "mpikvs_forget";
    struct mpikvs_f *f = handle(h, call);

    if (!f || check(f, call, "key", key, 1, f->key_size, 0))
        return MPIKVS_ERR_INVAL;
    return mpikvs_forget(f->kvs, key->base_addr);
}

int mpikvs_f_verify_report(void *h, const CFI_cdesc_t *key, double error)
{
    static const char call[] = "mpikvs_verify_report";
    struct mpikvs_f *f = handle(h, call);

    if (!f || check(f, call, "key", key, 1, f->key_size, 0))
        return MPIKVS_ERR_INVAL;
    return mpikvs_verify_report(f->kvs, key->base_addr, error);
}

int mpikvs_f_clear(void *h)
{
    struct mpikvs_f *f = handle(h, "mpikvs_clear");

    return f ? mpikvs_clear(f->kvs) : MPIKVS_ERR_INVAL;
}

/* max is size(distances); inputs, values and keys (NULL when absent)
 * hold at least max members each */
int mpikvs_f_get_near(void *h, const CFI_cdesc_t *key,
                      const CFI_cdesc_t *distances,
                      const CFI_cdesc_t *inputs, const CFI_cdesc_t *values,
                      const CFI_cdesc_t *keys, int *found)
{
    static const char call[] = "mpikvs_get_near";
    struct mpikvs_f *f = handle(h, call);
    mpikvs_near_t near = { 0 };
    size_t width, have;
    int rc;

    *found = 0;
    if (!f || check(f, call, "key", key, 1, f->key_size, 0))
        return MPIKVS_ERR_INVAL;
    have = bytes(f, call, "distances", distances);
    if (have == SIZE_MAX)
        return MPIKVS_ERR_INVAL;
    near.max = have / sizeof(double);
    if (near.max == 0)
        return fail(f, call, "distances: size 0, room for no member (max "
                    "is its size)");
    width = mpikvs_near_inputs(f->kvs);
    if ((width && check(f, call, "inputs", inputs, near.max,
                        width * sizeof(double), 1)) ||
        check(f, call, "values", values, near.max, f->value_size, 1) ||
        (keys && check(f, call, "keys", keys, near.max, f->key_size, 1)))
        return MPIKVS_ERR_INVAL;
    near.distances = distances->base_addr;
    if (width) {    /* else the library says the table has no "near" */
        near.inputs = inputs->base_addr;
        near.inputs_len = bytes(f, call, "inputs", inputs) / sizeof(double);
    }
    near.values = values->base_addr;
    near.values_len = bytes(f, call, "values", values);
    if (keys) {
        near.keys = keys->base_addr;
        near.keys_len = bytes(f, call, "keys", keys);
    }
    rc = mpikvs_get_near(f->kvs, key->base_addr, &near);
    *found = (int)near.found;
    return rc;
}

/* Queries: no call of the library fails, so the last error stays. */
int mpikvs_f_counters(const void *h)
{
    const struct mpikvs_f *f = h;

    return f ? (int)mpikvs_counters(f->kvs) : 0;
}

int64_t mpikvs_f_near_inputs(const void *h)
{
    const struct mpikvs_f *f = h;

    return f ? (int64_t)mpikvs_near_inputs(f->kvs) : 0;
}

int64_t mpikvs_f_key_size(const void *h)
{
    const struct mpikvs_f *f = h;

    return f ? (int64_t)f->key_size : 0;
}

int64_t mpikvs_f_value_size(const void *h)
{
    const struct mpikvs_f *f = h;

    return f ? (int64_t)f->value_size : 0;
}

const char *mpikvs_f_last_error(const void *h)
{
    const struct mpikvs_f *f = h;

    if (!f)
        return no_handle_failed ? no_handle_text : mpikvs_last_error(NULL);
    return f->failed ? f->text : mpikvs_last_error(f->kvs);
}
