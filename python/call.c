/*
 * call.c - what every call of a handle goes through: its arguments
 * (fast-call, positional or by keyword) and the one-thread-at-a-time
 * guard (mpikvs_py.h's busy).
 */
#include "mpikvs_py.h"

#include <string.h>

int handle_enter(handle_object *h)
{
    if (h->kvs == NULL) {
        errors_inval("the handle is closed");
        return -1;
    }
    if (h->busy) {
        errors_inval("the handle is in use by another thread (a handle "
                     "is used by one thread at a time)");
        return -1;
    }
    h->busy = PyThread_get_thread_ident();
    return 0;
}

void handle_leave(handle_object *h)
{
    h->busy = 0;
}

int handle_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                const char *fname, const char *const *names, int nnames,
                int nrequired, PyObject **out)
{
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;

    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes at most %d arguments (%zd given)", fname,
                     nnames, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        out[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        int i = 0;

        if (kw == NULL)
            return -1;
        while (i < nnames && strcmp(kw, names[i]) != 0)
            i++;
        if (i == nnames) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%s'",
                         fname, kw);
            return -1;
        }
        if (i < nargs) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument '%s'",
                         fname, kw);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < nrequired; i++)
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing required argument '%s'", fname,
                         names[i]);
            return -1;
        }
    return 0;
}
