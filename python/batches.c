/*
 * batches.c - the batch calls without copying: keys and values are the
 * caller's buffers (n x key_size and n x value_size bytes, C-contiguous:
 * NumPy uint8 arrays typically), or values the module makes (buffers.c);
 * the started ones' requests (mpikvs.Request); round_keys, the keys of
 * many rows at once.
 *
 * A started batch's keys, values and status belong to the library until
 * it completes: its Request holds their Py_buffer views (so Python can
 * neither free nor resize them) and a reference to the handle, and sits
 * in the handle's list of batches in flight, which close() completes
 * first.  A Request dropped in flight is waited for in its dealloc.
 */
#include "mpikvs_py.h"

#include <sched.h>
#include <string.h>

typedef struct request_object {
    PyObject_HEAD
    handle_object *handle;
    mpikvs_request_t req;
    int in_flight;
    int is_get;
    int rc;                         /* the batch's result, once complete */
    char text[512];                 /* and its last_error */
    Py_buffer keys, values;
    PyObject *values_obj;           /* get: what the values are in */
    int *status;
    size_t n;
    struct request_object *prev, *next; /* the handle's in flight */
} request_object;

/* The views and status of one batch, taken from the arguments */
typedef struct batch_args {
    Py_buffer keys, values;
    int have_keys, have_values;
    PyObject *values_obj;
    int *status;
    size_t n;
} batch_args_t;

static void batch_args_release(batch_args_t *b)
{
    if (b->have_keys)
        PyBuffer_Release(&b->keys);
    if (b->have_values)
        PyBuffer_Release(&b->values);
    Py_CLEAR(b->values_obj);
    PyMem_Free(b->status);
    b->status = NULL;
    b->have_keys = b->have_values = 0;
}

/* keys and values of a get (values may be None: made here) or put */
static int batch_args_get(handle_object *h, PyObject *keys, PyObject *values,
                          int is_get, batch_args_t *b)
{
    memset(b, 0, sizeof *b);
    if (buffer_get(keys, &b->keys, "keys", 0, "", 0) < 0)
        return -1;
    b->have_keys = 1;
    if ((size_t)b->keys.len % h->key_size != 0) {
        errors_inval("keys: %zd bytes, not a multiple of the handle's "
                     "key_size %zu", b->keys.len, h->key_size);
        goto fail;
    }
    b->n = (size_t)b->keys.len / h->key_size;
    if (values == NULL || values == Py_None) {
        if (!is_get) {
            PyErr_SetString(PyExc_TypeError, "values: required");
            goto fail;
        }
        values = buffer_new_rows(b->n, h->value_size);
        if (values == NULL)
            goto fail;
    } else {
        Py_INCREF(values);
    }
    b->values_obj = values;
    if (buffer_get(values, &b->values, "values", b->n * h->value_size,
                   "value_size times the keys", is_get) < 0) {
        /* "values: 5 bytes, but ... is 208": say what it should be */
        goto fail;
    }
    b->have_values = 1;
    if (is_get) {
        b->status = PyMem_Malloc((b->n + 1) * sizeof(int));
        if (b->status == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    return 0;
fail:
    batch_args_release(b);
    return -1;
}

const char batch_get_doc[] =
"get_batch(keys, values=None, status=False) -> (values, hits)\n\n"
"Look up n keys at once.  keys: any C-contiguous buffer of n * key_size\n"
"bytes (an n x key_size uint8 NumPy array typically), not copied.\n"
"values: a writable C-contiguous buffer of n * value_size bytes, filled\n"
"in place; without it a new n x value_size uint8 NumPy array (a\n"
"memoryview of a bytearray without NumPy).  hits: a NumPy bool array\n"
"(a list without NumPy), True where key i hit; a miss's row of values\n"
"is undefined.  With status=True the second item is instead the codes\n"
"(a NumPy int32 array, a list without NumPy): mpikvs.OK, MISS, or\n"
"VERIFY (a hit to verify, opened with verify: verify_report()).";

static PyObject *batch_result(batch_args_t *b)
{
    PyObject *hits = buffer_hits(b->status, b->n);

    if (hits == NULL)
        return NULL;
    return Py_BuildValue("(ON)", b->values_obj, hits);
}

PyObject *batch_get(handle_object *h, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"keys", "values", "status"};
    PyObject *a[3] = {NULL, NULL, Py_False}, *result = NULL;
    batch_args_t b;
    int rc, codes;

    if (handle_args(args, nargs, kwnames, "get_batch", names, 3, 1, a) < 0 ||
        (codes = PyObject_IsTrue(a[2])) < 0 || handle_enter(h) < 0)
        return NULL;
    if (batch_args_get(h, a[0], a[1], 1, &b) < 0)
        goto leave;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_get_batch(h->kvs, b.n, b.keys.buf, b.values.buf, b.status);
    Py_END_ALLOW_THREADS
    if (rc == MPIKVS_OK && codes)
        result = Py_BuildValue("(ON)", b.values_obj,
                               buffer_status(b.status, b.n));
    else if (rc == MPIKVS_OK)
        result = batch_result(&b);
    else
        errors_raise_kvs(rc, "mpikvs_get_batch", h->kvs);
    batch_args_release(&b);
leave:
    handle_leave(h);
    return result;
}

const char batch_put_doc[] =
"put_batch(keys, values) -> None\n\n"
"Store n values at once: keys any C-contiguous buffer of n * key_size\n"
"bytes, values of n * value_size bytes (n x key_size and n x value_size\n"
"uint8 NumPy arrays typically), not copied.";

PyObject *batch_put(handle_object *h, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"keys", "values"};
    PyObject *a[2] = {NULL, NULL}, *result = NULL;
    batch_args_t b;
    int rc;

    if (handle_args(args, nargs, kwnames, "put_batch", names, 2, 2, a) < 0 ||
        handle_enter(h) < 0)
        return NULL;
    if (batch_args_get(h, a[0], a[1], 0, &b) < 0)
        goto leave;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_put_batch(h->kvs, b.n, b.keys.buf, b.values.buf);
    Py_END_ALLOW_THREADS
    if (rc == MPIKVS_OK) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        errors_raise_kvs(rc, "mpikvs_put_batch", h->kvs);
    }
    batch_args_release(&b);
leave:
    handle_leave(h);
    return result;
}

/* ---- started batches ---- */

static void request_unlink(request_object *r)
{
    handle_object *h = r->handle;

    if (r->prev != NULL)
        r->prev->next = r->next;
    else if (h->inflight == r)
        h->inflight = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

/* The library is done with r's buffers: give them back */
static void request_finish(request_object *r, int rc)
{
    r->in_flight = 0;
    r->rc = rc;
    if (rc != MPIKVS_OK)
        snprintf(r->text, sizeof r->text, "%s",
                 mpikvs_last_error(r->handle->kvs));
    PyBuffer_Release(&r->keys);
    PyBuffer_Release(&r->values);
    request_unlink(r);
}

/* Wait for r, the GIL released; the handle is taken by the caller */
static void request_wait(request_object *r)
{
    int rc;

    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_wait(r->handle->kvs, &r->req);
    Py_END_ALLOW_THREADS
    request_finish(r, rc);
}

int batches_complete_all(handle_object *h)
{
    int failed = 0;

    while (h->inflight != NULL) {
        request_object *r = h->inflight;

        request_wait(r);
        if (r->rc != MPIKVS_OK && !failed) {
            errors_raise(r->rc, "mpikvs_wait", r->text);
            failed = 1;
        }
    }
    return failed ? -1 : 0;
}

static PyObject *request_start(handle_object *h, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames,
                               int is_get)
{
    static const char *const names[] = {"keys", "values"};
    const char *fname = is_get ? "get_batch_start" : "put_batch_start";
    PyObject *a[2] = {NULL, NULL};
    request_object *r = NULL;
    batch_args_t b;
    int rc;

    if (handle_args(args, nargs, kwnames, fname, names, 2, is_get ? 1 : 2,
                    a) < 0 || handle_enter(h) < 0)
        return NULL;
    if (batch_args_get(h, a[0], a[1], is_get, &b) < 0)
        goto leave;
    r = PyObject_New(request_object, &request_type);
    if (r == NULL) {
        batch_args_release(&b);
        goto leave;
    }
    Py_BEGIN_ALLOW_THREADS
    if (is_get)
        rc = mpikvs_get_batch_start(h->kvs, b.n, b.keys.buf, b.values.buf,
                                    b.status, &r->req);
    else
        rc = mpikvs_put_batch_start(h->kvs, b.n, b.keys.buf, b.values.buf,
                                    &r->req);
    Py_END_ALLOW_THREADS
    if (rc != MPIKVS_OK) {
        /* nothing in flight: the request never was */
        r->handle = NULL;
        r->in_flight = 0;
        r->values_obj = NULL;
        r->status = NULL;
        Py_DECREF(r);
        r = NULL;
        errors_raise_kvs(rc, is_get ? "mpikvs_get_batch_start"
                                    : "mpikvs_put_batch_start", h->kvs);
        batch_args_release(&b);
        goto leave;
    }
    /* the views move into the request, which holds them until done */
    Py_INCREF(h);
    r->handle = h;
    r->in_flight = 1;
    r->is_get = is_get;
    r->rc = MPIKVS_OK;
    r->text[0] = '\0';
    r->keys = b.keys;
    r->values = b.values;
    r->values_obj = b.values_obj;
    r->status = b.status;
    r->n = b.n;
    r->prev = NULL;
    r->next = h->inflight;
    if (h->inflight != NULL)
        h->inflight->prev = r;
    h->inflight = r;
leave:
    handle_leave(h);
    return (PyObject *)r;
}

const char batch_get_start_doc[] =
"get_batch_start(keys, values=None) -> Request\n\n"
"get_batch, started: the home nodes work on the keys while the caller\n"
"does something else; request.wait() (or request.test() until True,\n"
"then request.result()) gives (values, hits).  Until then keys and\n"
"values belong to the library: the Request holds them (exported, so\n"
"they cannot be resized or freed) and the caller must not write them.";

PyObject *batch_get_start(handle_object *h, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames)
{
    return request_start(h, args, nargs, kwnames, 1);
}

const char batch_put_start_doc[] =
"put_batch_start(keys, values) -> Request\n\n"
"put_batch, started: complete it with request.wait() or request.test()\n"
"(result None).  keys and values belong to the library until then.";

PyObject *batch_put_start(handle_object *h, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames)
{
    return request_start(h, args, nargs, kwnames, 0);
}

PyDoc_STRVAR(request_result_doc,
"result() -> (values, hits) or None\n\n"
"The result of a complete batch: (values, hits) of a get, None of a\n"
"put; raises the batch's error if it failed, InvalError while it is in\n"
"flight.");

static PyObject *request_result(request_object *r, PyObject *unused)
{
    batch_args_t b;

    (void)unused;
    if (r->in_flight)
        return errors_inval("the batch is in flight: wait() for it, or "
                            "test() until True");
    if (r->rc != MPIKVS_OK)
        return errors_raise(r->rc, "mpikvs_wait", r->text);
    if (!r->is_get)
        Py_RETURN_NONE;
    memset(&b, 0, sizeof b);
    b.values_obj = r->values_obj;
    b.status = r->status;
    b.n = r->n;
    return batch_result(&b);
}

PyDoc_STRVAR(request_wait_doc,
"wait() -> (values, hits) or None\n\n"
"Complete the batch (the GIL released while waiting) and return its\n"
"result(); a complete batch returns it again.");

static PyObject *request_wait_method(request_object *r, PyObject *unused)
{
    if (r->in_flight) {
        if (handle_enter(r->handle) < 0)
            return NULL;
        request_wait(r);
        handle_leave(r->handle);
    }
    return request_result(r, unused);
}

PyDoc_STRVAR(request_test_doc,
"test() -> bool\n\n"
"Whether the batch is complete, without waiting: True once it is (then\n"
"result() has its values, or raises its error).");

static PyObject *request_test(request_object *r, PyObject *unused)
{
    int rc, done = 0;

    (void)unused;
    if (!r->in_flight)
        Py_RETURN_TRUE;
    if (handle_enter(r->handle) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_test(r->handle->kvs, &r->req, &done);
    Py_END_ALLOW_THREADS
    if (done)
        request_finish(r, rc);
    else if (rc != MPIKVS_OK)
        request_wait(r);    /* the test failed: never leave it in flight */
    handle_leave(r->handle);
    if (r->in_flight)
        Py_RETURN_FALSE;
    if (r->rc != MPIKVS_OK)
        return errors_raise(r->rc, "mpikvs_test", r->text);
    Py_RETURN_TRUE;
}

static PyObject *request_get_done(request_object *r, void *unused)
{
    (void)unused;
    return PyBool_FromLong(!r->in_flight);
}

static PyGetSetDef request_getset[] = {
    {"done", (getter)request_get_done, NULL,
     "True once the batch is complete (without asking the library: "
     "test() does).", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyMethodDef request_methods[] = {
    {"wait", (PyCFunction)request_wait_method, METH_NOARGS,
     request_wait_doc},
    {"test", (PyCFunction)request_test, METH_NOARGS, request_test_doc},
    {"result", (PyCFunction)request_result, METH_NOARGS,
     request_result_doc},
    {NULL, NULL, 0, NULL}
};

static void request_dealloc(request_object *r)
{
    /* Dropped in flight: the library still writes its buffers; wait.
     * Another thread in a call of the handle (the GIL released) is let
     * finish first; this thread's own call (the drop came from inside
     * it, a garbage collection) is not in the library now. */
    if (r->in_flight) {
        handle_object *h = r->handle;
        unsigned long me = PyThread_get_thread_ident(), owner;

        while (h->busy != 0 && h->busy != me) {
            Py_BEGIN_ALLOW_THREADS
            sched_yield();
            Py_END_ALLOW_THREADS
        }
        owner = h->busy;
        h->busy = me;
        request_wait(r);
        h->busy = owner;
    }
    Py_XDECREF(r->handle);
    Py_XDECREF(r->values_obj);
    PyMem_Free(r->status);
    PyObject_Free(r);
}

PyTypeObject request_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpikvs.Request",
    .tp_basicsize = sizeof(request_object),
    .tp_dealloc = (destructor)request_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A started batch (get_batch_start, put_batch_start):\n"
              "complete it with wait() or test(); it holds the batch's\n"
              "buffers until then.  Dropped in flight, it is waited for.",
    .tp_methods = request_methods,
    .tp_getset = request_getset,
};

/* ---- keys of many rows ---- */

const char batch_round_keys_doc[] =
"round_keys(inputs) -> array\n\n"
"round_key of each row of inputs (n rows of the table's field count of\n"
"floats: a C-contiguous float64 buffer of two dimensions as it is, or\n"
"anything NumPy makes one of), vectorised: an n x key_size uint8 NumPy\n"
"array (a memoryview without NumPy), ready for get_batch.";

PyObject *batch_round_keys(handle_object *h, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"inputs"};
    PyObject *a[1] = {NULL}, *keys = NULL;
    Py_buffer out;
    doubles_t d;
    size_t fields;
    int rc = MPIKVS_OK;

    if (handle_args(args, nargs, kwnames, "round_keys", names, 1, 1, a) < 0 ||
        handle_enter(h) < 0)
        return NULL;
    if (doubles_get(a[0], &d, "inputs") < 0)
        goto release;
    fields = d.rows > 0 ? d.n / d.rows : 0;
    keys = buffer_new_rows(d.rows, h->key_size);
    if (keys == NULL)
        goto release;
    if (PyObject_GetBuffer(keys, &out, PyBUF_C_CONTIGUOUS |
                           PyBUF_WRITABLE) < 0) {
        Py_CLEAR(keys);
        goto release;
    }
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < d.rows && rc == MPIKVS_OK; i++)
        rc = mpikvs_round_key(h->kvs, d.in + i * fields, fields,
                              (unsigned char *)out.buf + i * h->key_size);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    if (rc != MPIKVS_OK) {
        Py_CLEAR(keys);
        errors_raise_kvs(rc, "mpikvs_round_key", h->kvs);
    }
release:
    doubles_release(&d);
    handle_leave(h);
    return keys;
}
