/*
 * handle.c - mpikvs.Handle: an open cache and its calls of one key (get,
 * put, put_if_absent, round_key, forget, verify_report, get_near), the
 * collective ones (fence, close, clear, tier_invalidate, save, load,
 * stats), the counters and the attributes.
 * The batches are batches.c's.
 *
 * The GIL is released around every library call that may wait on other
 * ranks or the network; the caller's buffers stay exported (Py_buffer
 * held) meanwhile, so no other thread can free or resize them.
 */
#include "mpikvs_py.h"

#include <string.h>

/* ---- one key ---- */

PyDoc_STRVAR(get_doc,
"get(key, out=None, status=False) -> bytes, out or None\n\n"
"Look key up (key_size bytes: bytes or any C-contiguous buffer).  On a\n"
"hit return its value: new bytes, or out (a writable buffer of\n"
"value_size bytes) filled in place.  On a miss return None (out is then\n"
"undefined).  With status=True return (code, value): code mpikvs.OK,\n"
"MISS (value None) or VERIFY (a hit to verify: a handle opened with\n"
"verify is given the value and asked to compute it anyway and\n"
"verify_report() the error).  Raises InvalError for a key or out of\n"
"another size.");

static PyObject *handle_get(handle_object *h, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"key", "out", "status"};
    PyObject *a[3] = {NULL, Py_None, Py_False}, *result = NULL;
    Py_buffer key, out;
    void *value;
    int rc, codes;

    if (handle_args(args, nargs, kwnames, "get", names, 3, 1, a) < 0 ||
        (codes = PyObject_IsTrue(a[2])) < 0 || handle_enter(h) < 0)
        return NULL;
    if (buffer_get(a[0], &key, "key", h->key_size, "key_size", 0) < 0)
        goto leave;
    if (a[1] == Py_None) {
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)h->value_size);
        if (result == NULL)
            goto release_key;
        value = PyBytes_AS_STRING(result);
    } else {
        if (buffer_get(a[1], &out, "out", h->value_size, "value_size",
                       1) < 0)
            goto release_key;
        value = out.buf;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_get(h->kvs, key.buf, value);
    Py_END_ALLOW_THREADS
    if (a[1] != Py_None) {
        PyBuffer_Release(&out);
        result = a[1];
        Py_INCREF(result);
    }
    if (rc == MPIKVS_MISS) {
        Py_SETREF(result, Py_None);
        Py_INCREF(result);
    } else if (rc != MPIKVS_OK && rc != MPIKVS_VERIFY) {
        Py_CLEAR(result);
        errors_raise_kvs(rc, "mpikvs_get", h->kvs);
    }
    if (result != NULL && codes)
        Py_SETREF(result, Py_BuildValue("(iO)", rc, result));
release_key:
    PyBuffer_Release(&key);
leave:
    handle_leave(h);
    return result;
}

PyDoc_STRVAR(put_doc,
"put(key, value) -> None\n\n"
"Store value (value_size bytes) under key (key_size bytes), each bytes\n"
"or any C-contiguous buffer.  Raises InvalError for another size.");

static PyObject *handle_put(handle_object *h, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"key", "value"};
    PyObject *a[2] = {NULL, NULL}, *result = NULL;
    Py_buffer key, value;
    int rc;

    if (handle_args(args, nargs, kwnames, "put", names, 2, 2, a) < 0 ||
        handle_enter(h) < 0)
        return NULL;
    if (buffer_get(a[0], &key, "key", h->key_size, "key_size", 0) < 0)
        goto leave;
    if (buffer_get(a[1], &value, "value", h->value_size, "value_size",
                   0) < 0)
        goto release_key;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_put(h->kvs, key.buf, value.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&value);
    if (rc == MPIKVS_OK) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        errors_raise_kvs(rc, "mpikvs_put", h->kvs);
    }
release_key:
    PyBuffer_Release(&key);
leave:
    handle_leave(h);
    return result;
}

PyDoc_STRVAR(put_if_absent_doc,
"put_if_absent(key, value, present=None) -> bool\n\n"
"Store value under key only if the key is not in the table: True when\n"
"stored, False when the key was there (nothing written; present, a\n"
"writable buffer of value_size bytes if given, gets its value).  Of\n"
"racing callers of one key exactly one stores (mpikvs_put_if_absent(3)).");

static PyObject *handle_put_if_absent(handle_object *h,
                                      PyObject *const *args,
                                      Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"key", "value", "present"};
    PyObject *a[3] = {NULL, NULL, Py_None}, *result = NULL;
    Py_buffer key, value, present;
    int rc;

    if (handle_args(args, nargs, kwnames, "put_if_absent", names, 3, 2,
                    a) < 0 || handle_enter(h) < 0)
        return NULL;
    if (buffer_get(a[0], &key, "key", h->key_size, "key_size", 0) < 0)
        goto leave;
    if (buffer_get(a[1], &value, "value", h->value_size, "value_size",
                   0) < 0)
        goto release_key;
    present.buf = NULL;
    if (a[2] != Py_None && buffer_get(a[2], &present, "present",
                                      h->value_size, "value_size", 1) < 0)
        goto release_value;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_put_if_absent(h->kvs, key.buf, value.buf, present.buf);
    Py_END_ALLOW_THREADS
    if (a[2] != Py_None)
        PyBuffer_Release(&present);
    if (rc == MPIKVS_OK || rc == MPIKVS_PRESENT)
        result = PyBool_FromLong(rc == MPIKVS_OK);
    else
        errors_raise_kvs(rc, "mpikvs_put_if_absent", h->kvs);
release_value:
    PyBuffer_Release(&value);
release_key:
    PyBuffer_Release(&key);
leave:
    handle_leave(h);
    return result;
}

PyDoc_STRVAR(round_key_doc,
"round_key(inputs) -> bytes\n\n"
"The canonical key (key_size bytes) of inputs, a sequence or array of\n"
"floats, by the table's key fields (mpikvs.json(5)).  Raises InvalError\n"
"for NaN, infinity or a count other than the fields', ConfigError\n"
"without a config.  round_keys() does many rows at once.");

static PyObject *handle_round_key(handle_object *h, PyObject *inputs)
{
    PyObject *key = NULL;
    doubles_t d;
    int rc;

    if (handle_enter(h) < 0)
        return NULL;
    if (doubles_get(inputs, &d, "inputs") < 0)
        goto release;
    key = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)h->key_size);
    if (key == NULL)
        goto release;
    rc = mpikvs_round_key(h->kvs, d.in, d.n, PyBytes_AS_STRING(key));
    if (rc != MPIKVS_OK) {
        Py_CLEAR(key);
        errors_raise_kvs(rc, "mpikvs_round_key", h->kvs);
    }
release:
    doubles_release(&d);
    handle_leave(h);
    return key;
}

/* ---- surrogates: forget, verify_report, get_near ---- */

PyDoc_STRVAR(forget_doc,
"forget(key) -> bool\n\n"
"Remove key (a value the program's own check rejected), wherever its\n"
"home is: True when removed, False when it was not in the table\n"
"(mpikvs_forget(3)).");

static PyObject *handle_forget(handle_object *h, PyObject *key_obj)
{
    PyObject *result = NULL;
    Py_buffer key;
    int rc;

    if (handle_enter(h) < 0)
        return NULL;
    if (buffer_get(key_obj, &key, "key", h->key_size, "key_size", 0) < 0)
        goto leave;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_forget(h->kvs, key.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&key);
    if (rc == MPIKVS_OK || rc == MPIKVS_MISS)
        result = PyBool_FromLong(rc == MPIKVS_OK);
    else
        errors_raise_kvs(rc, "mpikvs_forget", h->kvs);
leave:
    handle_leave(h);
    return result;
}

PyDoc_STRVAR(verify_report_doc,
"verify_report(key, error) -> None\n\n"
"Record the error the program measured (a float >= 0, its own measure)\n"
"for key, a hit get() returned as mpikvs.VERIFY on this handle; once per\n"
"such hit (mpikvs_verify_report(3)).  Raises InvalError for a key that\n"
"was not a verify hit, a second report, or a negative or non-finite\n"
"error.");

static PyObject *handle_verify_report(handle_object *h,
                                      PyObject *const *args,
                                      Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"key", "error"};
    PyObject *a[2] = {NULL, NULL};
    Py_buffer key;
    double error;
    int rc;

    if (handle_args(args, nargs, kwnames, "verify_report", names, 2, 2,
                    a) < 0)
        return NULL;
    error = PyFloat_AsDouble(a[1]);
    if (error == -1.0 && PyErr_Occurred())
        return NULL;
    if (handle_enter(h) < 0)
        return NULL;
    if (buffer_get(a[0], &key, "key", h->key_size, "key_size", 0) < 0) {
        handle_leave(h);
        return NULL;
    }
    rc = mpikvs_verify_report(h->kvs, key.buf, error);
    PyBuffer_Release(&key);
    handle_leave(h);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_verify_report", h->kvs);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(get_near_doc,
"get_near(key, max) -> (distances, inputs, values, keys) or None\n\n"
"Up to max members of key's neighbourhood (a table with \"near\",\n"
"mpikvs.json(5)), nearest first (mpikvs_get_near(3)): distances, found\n"
"float64s; inputs, found x near_inputs float64s; values, found x\n"
"value_size uint8s; keys, found x key_size uint8s: NumPy arrays, or\n"
"memoryviews without NumPy.  None when the neighbourhood has no member.\n"
"Raises InvalError for max < 1 or a table without \"near\".");

static PyObject *handle_get_near(handle_object *h, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"key", "max"};
    PyObject *a[2] = {NULL, NULL}, *result = NULL;
    mpikvs_near_t near = { 0 };
    Py_ssize_t max;
    size_t width;
    Py_buffer key;
    char *space;
    int rc;

    if (handle_args(args, nargs, kwnames, "get_near", names, 2, 2, a) < 0)
        return NULL;
    max = PyLong_AsSsize_t(a[1]);
    if (max == -1 && PyErr_Occurred())
        return NULL;
    if (max < 1)
        return errors_inval("max: %zd, at least 1 member is asked", max);
    if (handle_enter(h) < 0)
        return NULL;
    if (buffer_get(a[0], &key, "key", h->key_size, "key_size", 0) < 0)
        goto leave;
    width = mpikvs_near_inputs(h->kvs);
    near.max = (size_t)max;
    near.inputs_len = near.max * width;
    near.values_len = near.max * h->value_size;
    near.keys_len = near.max * h->key_size;
    /* one block: distances, inputs (doubles first), values, keys */
    space = PyMem_Malloc(near.max * (1 + width) * sizeof(double) +
                         near.values_len + near.keys_len + 1);
    if (space == NULL) {
        PyErr_NoMemory();
        goto release_key;
    }
    near.distances = (double *)space;
    near.inputs = near.distances + near.max;
    near.values = (char *)(near.inputs + near.inputs_len);
    near.keys = (char *)near.values + near.values_len;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_get_near(h->kvs, key.buf, &near);
    Py_END_ALLOW_THREADS
    if (rc == MPIKVS_OK) {
        result = Py_BuildValue(
            "(NNNN)", buffer_doubles_of(near.distances, near.found, 0),
            buffer_doubles_of(near.inputs, near.found, width),
            buffer_rows_of(near.values, near.found, h->value_size),
            buffer_rows_of(near.keys, near.found, h->key_size));
    } else if (rc == MPIKVS_MISS) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        errors_raise_kvs(rc, "mpikvs_get_near", h->kvs);
    }
    PyMem_Free(space);
release_key:
    PyBuffer_Release(&key);
leave:
    handle_leave(h);
    return result;
}

/* ---- collective calls ---- */

/* A call of kvs alone, the GIL released */
static PyObject *handle_simple(handle_object *h, int (*fn)(mpikvs_t *),
                               const char *call)
{
    int rc;

    if (handle_enter(h) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(h->kvs);
    Py_END_ALLOW_THREADS
    handle_leave(h);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, call, h->kvs);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fence_doc,
"fence() -> None\n\n"
"Collective: after it every rank's gets see the puts every rank made\n"
"before it (mpikvs_fence(3)).");

static PyObject *handle_fence(handle_object *h, PyObject *unused)
{
    (void)unused;
    return handle_simple(h, mpikvs_fence, "mpikvs_fence");
}

PyDoc_STRVAR(tier_invalidate_doc,
"tier_invalidate() -> None\n\n"
"Collective: drop the node tier's entries (its \"user\" mode;\n"
"mpikvs_get_ref(3)).");

PyDoc_STRVAR(clear_doc,
"clear() -> None\n\n"
"Collective: every entry of the table, its node tier and its\n"
"neighbourhoods reads as gone afterwards, in time independent of the\n"
"table's size (mpikvs_clear(3)).  No batch may be in flight.");

static PyObject *handle_clear(handle_object *h, PyObject *unused)
{
    (void)unused;
    return handle_simple(h, mpikvs_clear, "mpikvs_clear");
}

static PyObject *handle_tier_invalidate(handle_object *h, PyObject *unused)
{
    (void)unused;
    return handle_simple(h, mpikvs_tier_invalidate,
                         "mpikvs_tier_invalidate");
}

PyDoc_STRVAR(close_doc,
"close() -> None\n\n"
"Close the cache (collective over the communicator of open): started\n"
"batches not yet complete are waited for first.  Closing a closed\n"
"handle does nothing; any other call on it raises InvalError.");

static PyObject *handle_close(handle_object *h, PyObject *unused)
{
    int rc;

    (void)unused;
    if (h->kvs == NULL)
        Py_RETURN_NONE;
    if (h->busy)
        return errors_inval("the handle is in use by another thread (a "
                            "handle is used by one thread at a time)");
    h->busy = PyThread_get_thread_ident();
    /* the batches' buffers belong to the library until complete */
    if (batches_complete_all(h) < 0)
        PyErr_Clear();          /* their own result; close all the same */
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_close(&h->kvs);
    Py_END_ALLOW_THREADS
    h->busy = 0;
    h->kvs = NULL;
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_close", NULL);
    Py_RETURN_NONE;
}

static PyObject *handle_enter_ctx(handle_object *h, PyObject *unused)
{
    (void)unused;
    if (h->kvs == NULL)
        return errors_inval("the handle is closed");
    Py_INCREF(h);
    return (PyObject *)h;
}

static PyObject *handle_exit_ctx(handle_object *h, PyObject *args)
{
    PyObject *r;

    (void)args;
    r = handle_close(h, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;            /* an exception of the block goes on */
}

PyDoc_STRVAR(stats_doc,
"stats(scope='rank', since='creation') -> dict\n\n"
"The statistics (mpikvs_stats(3)), a dict of ints named as the fields\n"
"of mpikvs_stats_t (verify_error_sum and verify_error_max: floats): of\n"
"this rank ('rank'), its node ('node') or every\n"
"rank ('job', collective); since the region's creation ('creation') or\n"
"this handle's open ('open').");

static PyObject *handle_stats(handle_object *h, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"scope", "since"};
    PyObject *a[2] = {NULL, NULL}, *d = NULL;
    const char *scope_s = "rank", *since_s = "creation";
    mpikvs_stats_t st;
    int scope, rc;

    if (handle_args(args, nargs, kwnames, "stats", names, 2, 0, a) < 0)
        return NULL;
    if ((a[0] != NULL && (scope_s = PyUnicode_AsUTF8(a[0])) == NULL) ||
        (a[1] != NULL && (since_s = PyUnicode_AsUTF8(a[1])) == NULL))
        return NULL;
    if (strcmp(scope_s, "rank") == 0)
        scope = MPIKVS_SCOPE_RANK;
    else if (strcmp(scope_s, "node") == 0)
        scope = MPIKVS_SCOPE_NODE;
    else if (strcmp(scope_s, "job") == 0)
        scope = MPIKVS_SCOPE_JOB;
    else
        return errors_inval("scope: '%s', not 'rank', 'node' or 'job'",
                            scope_s);
    if (strcmp(since_s, "open") == 0)
        scope |= MPIKVS_SINCE_OPEN;
    else if (strcmp(since_s, "creation") != 0)
        return errors_inval("since: '%s', not 'creation' or 'open'",
                            since_s);
    if (handle_enter(h) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_stats(h->kvs, scope, &st, sizeof st);
    Py_END_ALLOW_THREADS
    handle_leave(h);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_stats", h->kvs);
    d = PyDict_New();
    if (d == NULL)
        return NULL;
    /* verify_error_sum and verify_error_max hold a double's bits */
#define STAT_ITEM_(name, label, text)                                    \
    {                                                                    \
        PyObject *v =                                                    \
            strncmp(#name, "verify_error_", 13) == 0                     \
                ? PyFloat_FromDouble(mpikvs_stat_double(st.name))        \
                : PyLong_FromUnsignedLongLong(st.name);                  \
        if (v == NULL || PyDict_SetItemString(d, #name, v) < 0) {        \
            Py_XDECREF(v);                                               \
            Py_DECREF(d);                                                \
            return NULL;                                                 \
        }                                                                \
        Py_DECREF(v);                                                    \
    }
    MPIKVS_STATISTICS(STAT_ITEM_)
#undef STAT_ITEM_
    return d;
}

PyDoc_STRVAR(save_doc,
"save(path) -> None\n\n"
"Collective: write every entry of every node to the file path (str,\n"
"bytes or os.PathLike; shared by the nodes) (mpikvs_save(3)).");

static PyObject *handle_save(handle_object *h, PyObject *path_obj)
{
    PyObject *path = NULL;
    int rc;

    if (!PyUnicode_FSConverter(path_obj, &path))
        return NULL;
    if (handle_enter(h) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_save(h->kvs, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    handle_leave(h);
    Py_DECREF(path);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_save", h->kvs);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(load_doc,
"load(path, merge=False) -> dict\n\n"
"Collective: put the entries of a file save() wrote into the table\n"
"(mpikvs_load(3)); a table that holds entries raises NotemptyError\n"
"unless merge.  Returns the job's totals: {'entries': in the file,\n"
"'loaded': put, 'not_fitting': puts that evicted an entry}.");

static PyObject *handle_load(handle_object *h, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"path", "merge"};
    PyObject *a[2] = {NULL, Py_False}, *path = NULL;
    mpikvs_load_report_t report;
    int merge, rc;

    if (handle_args(args, nargs, kwnames, "load", names, 2, 1, a) < 0 ||
        (merge = PyObject_IsTrue(a[1])) < 0 ||
        !PyUnicode_FSConverter(a[0], &path))
        return NULL;
    if (handle_enter(h) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_load(h->kvs, PyBytes_AS_STRING(path),
                     merge ? MPIKVS_LOAD_MERGE : 0, &report);
    Py_END_ALLOW_THREADS
    handle_leave(h);
    Py_DECREF(path);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_load", h->kvs);
    return Py_BuildValue("{sKsKsK}", "entries",
                         (unsigned long long)report.entries, "loaded",
                         (unsigned long long)report.loaded, "not_fitting",
                         (unsigned long long)report.not_fitting);
}

/* ---- counters ---- */

PyDoc_STRVAR(counter_add_doc,
"counter_add(counter, add) -> int\n\n"
"Add add (a signed 64-bit int) to global counter number counter,\n"
"atomically; returns its value before (add 0: an atomic read).");

static PyObject *handle_counter_add(handle_object *h, PyObject *args)
{
    unsigned int counter;
    long long add;
    uint64_t before = 0;
    int rc;

    if (!PyArg_ParseTuple(args, "IL:counter_add", &counter, &add) ||
        handle_enter(h) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_counter_add(h->kvs, counter, (int64_t)add, &before);
    Py_END_ALLOW_THREADS
    handle_leave(h);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_counter_add", h->kvs);
    return PyLong_FromUnsignedLongLong(before);
}

PyDoc_STRVAR(counter_cas_doc,
"counter_cas(counter, expect, desired) -> int\n\n"
"Store desired in global counter number counter if it holds expect,\n"
"atomically; returns the value seen before (== expect: stored).");

static PyObject *handle_counter_cas(handle_object *h, PyObject *args)
{
    unsigned int counter;
    unsigned long long expect, desired;
    uint64_t seen = 0;
    int rc;

    if (!PyArg_ParseTuple(args, "IKK:counter_cas", &counter, &expect,
                          &desired) ||
        handle_enter(h) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_counter_cas(h->kvs, counter, expect, desired, &seen);
    Py_END_ALLOW_THREADS
    handle_leave(h);
    if (rc != MPIKVS_OK)
        return errors_raise_kvs(rc, "mpikvs_counter_cas", h->kvs);
    return PyLong_FromUnsignedLongLong(seen);
}

/* ---- attributes ---- */

static int handle_open_check(handle_object *h)
{
    if (h->kvs != NULL)
        return 0;
    errors_inval("the handle is closed");
    return -1;
}

static PyObject *get_key_size(handle_object *h, void *unused)
{
    (void)unused;
    return handle_open_check(h) < 0 ? NULL
                                    : PyLong_FromSize_t(h->key_size);
}

static PyObject *get_value_size(handle_object *h, void *unused)
{
    (void)unused;
    return handle_open_check(h) < 0 ? NULL
                                    : PyLong_FromSize_t(h->value_size);
}

static PyObject *get_transport(handle_object *h, void *unused)
{
    (void)unused;
    return handle_open_check(h) < 0
               ? NULL : PyUnicode_FromString(mpikvs_transport(h->kvs));
}

static PyObject *get_counters(handle_object *h, void *unused)
{
    (void)unused;
    return handle_open_check(h) < 0
               ? NULL : PyLong_FromUnsignedLong(mpikvs_counters(h->kvs));
}

static PyObject *get_near_inputs(handle_object *h, void *unused)
{
    (void)unused;
    return handle_open_check(h) < 0
               ? NULL : PyLong_FromSize_t(mpikvs_near_inputs(h->kvs));
}

static PyObject *get_last_error(handle_object *h, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(mpikvs_last_error(h->kvs));
}

static PyObject *get_closed(handle_object *h, void *unused)
{
    (void)unused;
    return PyBool_FromLong(h->kvs == NULL);
}

static PyGetSetDef handle_getset[] = {
    {"key_size", (getter)get_key_size, NULL,
     "Bytes of a key (from open's options or the config).", NULL},
    {"value_size", (getter)get_value_size, NULL,
     "Bytes of a value (from open's options or the config).", NULL},
    {"transport", (getter)get_transport, NULL,
     "The transport to other nodes: 'ucx' or 'mpi'.", NULL},
    {"counters", (getter)get_counters, NULL,
     "How many global counters the table has.", NULL},
    {"near_inputs", (getter)get_near_inputs, NULL,
     "The inputs of a neighbourhood member: how many floats (the key's\n"
     "double and int64 fields); 0 for a table without \"near\".", NULL},
    {"last_error", (getter)get_last_error, NULL,
     "The detail of the last failure of a call on this handle (after it\n"
     "is closed: of the last failure without a handle); '' if none.",
     NULL},
    {"closed", (getter)get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef handle_methods[] = {
    {"get", FAST(handle_get), get_doc},
    {"put", FAST(handle_put), put_doc},
    {"put_if_absent", FAST(handle_put_if_absent), put_if_absent_doc},
    {"get_batch", FAST(batch_get), batch_get_doc},
    {"put_batch", FAST(batch_put), batch_put_doc},
    {"get_batch_start", FAST(batch_get_start), batch_get_start_doc},
    {"put_batch_start", FAST(batch_put_start), batch_put_start_doc},
    {"forget", (PyCFunction)handle_forget, METH_O, forget_doc},
    {"verify_report", FAST(handle_verify_report), verify_report_doc},
    {"get_near", FAST(handle_get_near), get_near_doc},
    {"round_key", (PyCFunction)handle_round_key, METH_O, round_key_doc},
    {"round_keys", FAST(batch_round_keys), batch_round_keys_doc},
    {"fence", (PyCFunction)handle_fence, METH_NOARGS, fence_doc},
    {"clear", (PyCFunction)handle_clear, METH_NOARGS, clear_doc},
    {"tier_invalidate", (PyCFunction)handle_tier_invalidate, METH_NOARGS,
     tier_invalidate_doc},
    {"stats", FAST(handle_stats), stats_doc},
    {"save", (PyCFunction)handle_save, METH_O, save_doc},
    {"load", FAST(handle_load), load_doc},
    {"counter_add", (PyCFunction)handle_counter_add, METH_VARARGS,
     counter_add_doc},
    {"counter_cas", (PyCFunction)handle_counter_cas, METH_VARARGS,
     counter_cas_doc},
    {"close", (PyCFunction)handle_close, METH_NOARGS, close_doc},
    {"__enter__", (PyCFunction)handle_enter_ctx, METH_NOARGS,
     "Return the handle itself (with mpikvs.open(...) as kvs:)."},
    {"__exit__", (PyCFunction)handle_exit_ctx, METH_VARARGS,
     "Close the handle (collectively) at the end of the with block."},
    {NULL, NULL, 0, NULL}
};

static void handle_dealloc(handle_object *h)
{
    int finalized = 1;

    /* A handle dropped open: close it as close() would, which is
     * collective (every rank must drop its handle alike); after
     * MPI_Finalize nothing can be done.  Started batches hold a
     * reference to the handle, so none is in flight here. */
    if (h->kvs != NULL) {
        MPI_Finalized(&finalized);
        if (PyErr_WarnEx(PyExc_ResourceWarning, "mpikvs: a Handle was "
                         "dropped open: close it (collective) or use with",
                         1) < 0)
            PyErr_Clear();
        if (!finalized) {
            Py_BEGIN_ALLOW_THREADS
            mpikvs_close(&h->kvs);
            Py_END_ALLOW_THREADS
        }
    }
    Py_TYPE(h)->tp_free((PyObject *)h);
}

PyTypeObject handle_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpikvs.Handle",
    .tp_basicsize = sizeof(handle_object),
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open cache: mpikvs.open() makes it; a context manager\n"
              "that closes it (collectively) at the end of a with block.\n"
              "Used by one thread at a time: a call while another thread\n"
              "is in one raises InvalError.",
    .tp_methods = handle_methods,
    .tp_getset = handle_getset,
};
