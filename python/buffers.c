/*
 * buffers.c - the caller's buffers (bytes, bytearray, memoryview, NumPy
 * arrays: anything with the buffer protocol, C-contiguous) and the
 * buffers the module makes: NumPy arrays when NumPy imports, imported
 * once at the first need (the module works without it), else memoryviews
 * of bytearrays and lists; and the float inputs of round_key(s).
 */
#include "mpikvs_py.h"

#include <string.h>

static PyObject *numpy;         /* the module, Py_None without NumPy */
static PyObject *numpy_empty, *numpy_uint8, *numpy_bool, *numpy_float64;
static PyObject *numpy_ascontiguousarray;

/* NumPy, or NULL (no error set) when it does not import */
static PyObject *numpy_module(void)
{
    if (numpy == NULL) {
        numpy = PyImport_ImportModule("numpy");
        if (numpy != NULL) {
            numpy_empty = PyObject_GetAttrString(numpy, "empty");
            numpy_uint8 = PyObject_GetAttrString(numpy, "uint8");
            numpy_bool = PyObject_GetAttrString(numpy, "bool_");
            numpy_float64 = PyObject_GetAttrString(numpy, "float64");
            numpy_ascontiguousarray =
                PyObject_GetAttrString(numpy, "ascontiguousarray");
        }
        if (numpy == NULL || numpy_empty == NULL || numpy_uint8 == NULL ||
            numpy_bool == NULL || numpy_float64 == NULL ||
            numpy_ascontiguousarray == NULL) {
            PyErr_Clear();
            Py_XDECREF(numpy);
            numpy = Py_None;
            Py_INCREF(numpy);
        }
    }
    return numpy == Py_None ? NULL : numpy;
}

int buffer_get(PyObject *obj, Py_buffer *view, const char *arg,
               size_t size, const char *size_name, int writable)
{
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: a bytes-like object is required, not '%s'", arg,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS |
                           (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyObject *type, *value, *tb, *why;

        /* say which argument, with the exporter's reason */
        PyErr_Fetch(&type, &value, &tb);
        why = value != NULL ? PyObject_Str(value) : NULL;
        PyErr_Clear();
        errors_inval("%s: a C-contiguous%s buffer is required (%s)", arg,
                     writable ? ", writable" : "",
                     why != NULL ? PyUnicode_AsUTF8(why) : "refused");
        Py_XDECREF(why);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    if (size != 0 && (size_t)view->len != size) {
        errors_inval("%s: %zd bytes, but the handle's %s is %zu", arg,
                     view->len, size_name, size);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyObject *buffer_new_rows(size_t n, size_t width)
{
    PyObject *bytes, *view, *rows;

    if (numpy_module() != NULL)
        return PyObject_CallFunction(numpy_empty, "(nn)O", (Py_ssize_t)n,
                                     (Py_ssize_t)width, numpy_uint8);
    bytes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * width));
    if (bytes == NULL)
        return NULL;
    view = PyMemoryView_FromObject(bytes);
    Py_DECREF(bytes);
    if (view == NULL || n == 0)
        return view;
    rows = PyObject_CallMethod(view, "cast", "s(nn)", "B", (Py_ssize_t)n,
                               (Py_ssize_t)width);
    Py_DECREF(view);
    return rows;
}

/* a hit: MPIKVS_OK, or MPIKVS_VERIFY (the value is given too) */
static int status_hit(int status)
{
    return status == MPIKVS_OK || status == MPIKVS_VERIFY;
}

PyObject *buffer_hits(const int *status, size_t n)
{
    PyObject *hits;
    Py_buffer view;

    if (numpy_module() == NULL) {
        hits = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; hits != NULL && i < n; i++) {
            PyObject *b = status_hit(status[i]) ? Py_True : Py_False;

            Py_INCREF(b);
            PyList_SET_ITEM(hits, (Py_ssize_t)i, b);
        }
        return hits;
    }
    hits = PyObject_CallFunction(numpy_empty, "nO", (Py_ssize_t)n,
                                 numpy_bool);
    if (hits == NULL)
        return NULL;
    if (PyObject_GetBuffer(hits, &view, PyBUF_C_CONTIGUOUS |
                           PyBUF_WRITABLE) < 0) {
        Py_DECREF(hits);
        return NULL;
    }
    /* numpy.bool_ is one byte, 0 or 1 */
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)view.buf)[i] = (unsigned char)status_hit(status[i]);
    PyBuffer_Release(&view);
    return hits;
}

PyObject *buffer_status(const int *status, size_t n)
{
    PyObject *codes = PyList_New((Py_ssize_t)n), *array;

    for (size_t i = 0; codes != NULL && i < n; i++) {
        PyObject *c = PyLong_FromLong(status[i]);

        if (c == NULL) {
            Py_CLEAR(codes);
            break;
        }
        PyList_SET_ITEM(codes, (Py_ssize_t)i, c);
    }
    if (codes == NULL || numpy_module() == NULL)
        return codes;
    array = PyObject_CallMethod(numpy, "array", "Os", codes, "int32");
    Py_DECREF(codes);
    return array;
}

/* Copy len bytes from src into obj's (C-contiguous, writable) buffer;
 * obj is returned, or NULL (obj released) on failure. */
static PyObject *buffer_fill(PyObject *obj, const void *src, size_t len)
{
    Py_buffer view;

    if (obj == NULL)
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS |
                           PyBUF_WRITABLE) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    memcpy(view.buf, src, len);
    PyBuffer_Release(&view);
    return obj;
}

PyObject *buffer_rows_of(const void *src, size_t n, size_t width)
{
    return buffer_fill(buffer_new_rows(n, width), src, n * width);
}

PyObject *buffer_doubles_of(const double *src, size_t n, size_t width)
{
    PyObject *bytes, *view, *array;
    size_t count = width ? n * width : n;

    if (numpy_module() != NULL) {
        array = width ? PyObject_CallFunction(numpy_empty, "(nn)O",
                                              (Py_ssize_t)n,
                                              (Py_ssize_t)width,
                                              numpy_float64)
                      : PyObject_CallFunction(numpy_empty, "nO",
                                              (Py_ssize_t)n, numpy_float64);
        return buffer_fill(array, src, count * sizeof(double));
    }
    bytes = PyByteArray_FromStringAndSize((const char *)src,
                                          (Py_ssize_t)(count *
                                                       sizeof(double)));
    if (bytes == NULL)
        return NULL;
    view = PyMemoryView_FromObject(bytes);
    Py_DECREF(bytes);
    if (view == NULL || count == 0)
        return view;
    array = width ? PyObject_CallMethod(view, "cast", "s(nn)", "d",
                                        (Py_ssize_t)n, (Py_ssize_t)width)
                  : PyObject_CallMethod(view, "cast", "s", "d");
    Py_DECREF(view);
    return array;
}

PyObject *buffer_as_doubles(PyObject *obj)
{
    if (numpy_module() == NULL)
        return NULL;
    return PyObject_CallFunctionObjArgs(numpy_ascontiguousarray, obj,
                                        numpy_float64, NULL);
}

/* ---- doubles: the inputs of round_key and round_keys ---- */

static int doubles_from_buffer(PyObject *obj, doubles_t *d, const char *arg)
{
    const char *f;

    if (PyObject_GetBuffer(obj, &d->view, PyBUF_C_CONTIGUOUS |
                           PyBUF_FORMAT) < 0)
        return -1;
    d->have_view = 1;
    f = d->view.format;
    if (f != NULL && (*f == '<' || *f == '=' || *f == '@'))
        f++;
    if (f == NULL || strcmp(f, "d") != 0 || d->view.itemsize != 8) {
        errors_inval("%s: float64 values are required, not format '%s'",
                     arg, d->view.format != NULL ? d->view.format : "B");
        return -1;
    }
    d->in = d->view.buf;
    d->n = (size_t)d->view.len / sizeof(double);
    d->rows = d->view.ndim == 2 ? (size_t)d->view.shape[0] : 1;
    return 0;
}

void doubles_release(doubles_t *d)
{
    if (d->have_view)
        PyBuffer_Release(&d->view);
    Py_XDECREF(d->array);
    PyMem_Free(d->copy);
}

/* Row i, a sequence of exactly fields floats, into out */
static int doubles_row(PyObject *row, double *out, Py_ssize_t fields,
                       Py_ssize_t i, const char *arg)
{
    PyObject *seq = PySequence_Fast(row, "a sequence of floats is required");
    Py_ssize_t m;

    if (seq == NULL)
        return -1;
    m = PySequence_Fast_GET_SIZE(seq);
    if (m != fields) {
        Py_DECREF(seq);
        errors_inval("%s: row %zd has %zd values, row 0 %zd", arg, i, m,
                     fields);
        return -1;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        out[j] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, j));
        if (out[j] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* a list or tuple of floats (one row), or of rows of them */
static int doubles_from_sequence(PyObject *obj, doubles_t *d, const char *arg)
{
    PyObject *seq, *first;
    Py_ssize_t n, fields = 1;
    int nested;

    seq = PySequence_Fast(obj, "a sequence of floats is required");
    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    first = n > 0 ? PySequence_Fast_GET_ITEM(seq, 0) : NULL;
    nested = first != NULL && (PyList_Check(first) || PyTuple_Check(first));
    if (nested)
        fields = PySequence_Size(first);
    if (fields < 0 || (size_t)fields > PY_SSIZE_T_MAX / sizeof(double) /
                                           ((size_t)n + 1)) {
        Py_DECREF(seq);
        return fields < 0 ? -1 : (PyErr_NoMemory(), -1);
    }
    d->copy = PyMem_Malloc(((size_t)n * (size_t)fields + 1) * sizeof(double));
    if (d->copy == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);

        if (nested) {
            if (doubles_row(item, d->copy + i * fields, fields, i, arg) < 0)
                goto fail;
        } else {
            d->copy[i] = PyFloat_AsDouble(item);
            if (d->copy[i] == -1.0 && PyErr_Occurred())
                goto fail;
        }
    }
    Py_DECREF(seq);
    d->in = d->copy;
    d->n = (size_t)(n * fields);
    d->rows = nested ? (size_t)n : 1;
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

int doubles_get(PyObject *obj, doubles_t *d, const char *arg)
{
    memset(d, 0, sizeof *d);
    /* lists and tuples directly: NumPy's conversion costs more than a
     * key of ten fields */
    if (PyList_Check(obj) || PyTuple_Check(obj))
        return doubles_from_sequence(obj, d, arg);
    if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj) &&
        !PyByteArray_Check(obj)) {
        if (doubles_from_buffer(obj, d, arg) == 0)
            return 0;
        if (!PyErr_ExceptionMatches(PyExc_BufferError) &&
            !PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        /* not contiguous or not float64: NumPy converts below */
        PyErr_Clear();
        if (d->have_view)
            PyBuffer_Release(&d->view);
        d->have_view = 0;
    }
    d->array = buffer_as_doubles(obj);
    if (d->array != NULL)
        return doubles_from_buffer(d->array, d, arg);
    if (PyErr_Occurred())
        return -1;
    return doubles_from_sequence(obj, d, arg);
}
