/*
 * buffers.c - the caller's buffers (bytes, bytearray, memoryview, NumPy
 * arrays: anything with the buffer protocol, C-contiguous) and the
 * buffers the module makes: NumPy arrays when NumPy imports, imported
 * once at the first need (the module works without it), else memoryviews
 * of bytearrays and lists.
 */
#include "mpikvs_py.h"

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

PyObject *buffer_hits(const int *status, size_t n)
{
    PyObject *hits;
    Py_buffer view;

    if (numpy_module() == NULL) {
        hits = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; hits != NULL && i < n; i++) {
            PyObject *b = status[i] == MPIKVS_OK ? Py_True : Py_False;

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
        ((unsigned char *)view.buf)[i] = status[i] == MPIKVS_OK;
    PyBuffer_Release(&view);
    return hits;
}

PyObject *buffer_as_doubles(PyObject *obj)
{
    if (numpy_module() == NULL)
        return NULL;
    return PyObject_CallFunctionObjArgs(numpy_ascontiguousarray, obj,
                                        numpy_float64, NULL);
}
