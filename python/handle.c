/*
 * handle.c - mpikvs.Handle: an open cache and its calls of one key (get,
 * put, put_if_absent, round_key), the collective ones (fence, close,
 * tier_invalidate, save, load, stats), the counters and the attributes.
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
"get(key, out=None) -> bytes, out or None\n\n"
"Look key up (key_size bytes: bytes or any C-contiguous buffer).  On a\n"
"hit return its value: new bytes, or out (a writable buffer of\n"
"value_size bytes) filled in place.  On a miss return None (out is then\n"
"undefined).  Raises InvalError for a key or out of another size.");

static PyObject *handle_get(handle_object *h, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"key", "out"};
    PyObject *a[2] = {NULL, Py_None}, *result = NULL;
    Py_buffer key, out;
    void *value;
    int rc;

    if (handle_args(args, nargs, kwnames, "get", names, 2, 1, a) < 0 ||
        handle_enter(h) < 0)
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
    } else if (rc != MPIKVS_OK) {
        Py_CLEAR(result);
        errors_raise_kvs(rc, "mpikvs_get", h->kvs);
    }
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
"of mpikvs_stats_t: of this rank ('rank'), its node ('node') or every\n"
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
#define STAT_ITEM_(name, label, text)                                    \
    {                                                                    \
        PyObject *v = PyLong_FromUnsignedLongLong(st.name);              \
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
    {"round_key", (PyCFunction)handle_round_key, METH_O, round_key_doc},
    {"round_keys", FAST(batch_round_keys), batch_round_keys_doc},
    {"fence", (PyCFunction)handle_fence, METH_NOARGS, fence_doc},
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
