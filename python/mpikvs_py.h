/*
 * mpikvs_py.h - what the files of the Python module mpikvs share
 * (mpikvs_python(3)).  One concern a file: mpikvs_module.c the module,
 * comm.c mpi4py's communicators, errors.c the exceptions, buffers.c the
 * buffers and NumPy, call.c the arguments and thread guard of a call,
 * handle.c the handle's single calls, batches.c the batches, their
 * requests and the rounding of many keys.
 */
#ifndef MPIKVS_PY_H
#define MPIKVS_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <mpi.h>
#include <mpikvs.h>

struct request_object;

/* mpikvs.Handle: an open cache.  busy is the thread in a call (its
 * PyThread_get_thread_ident, set and cleared under the GIL; 0: none),
 * so that a second thread gets an error instead of racing the first
 * inside the library, which takes one thread at a time. */
typedef struct handle_object {
    PyObject_HEAD
    mpikvs_t *kvs;                      /* NULL once closed */
    size_t key_size, value_size;
    unsigned long busy;
    struct request_object *inflight;    /* started batches not complete */
} handle_object;

extern PyTypeObject handle_type;
extern PyTypeObject request_type;

/* comm.c */
int comm_import(void);
int comm_from_object(PyObject *obj, const char *arg, MPI_Comm *comm);

/* errors.c */
int errors_add(PyObject *module);
/* Raise the exception of rc, its text being text (or, when NULL, the
 * library's last error of kvs), headed by call; returns NULL. */
PyObject *errors_raise(int rc, const char *call, const char *text);
PyObject *errors_raise_kvs(int rc, const char *call, const mpikvs_t *kvs);
/* The binding's own checks: mpikvs.InvalError with a formatted text. */
PyObject *errors_inval(const char *format, ...);

/* buffers.c */
/* A C-contiguous buffer of obj of exactly size bytes (size 0: any
 * size), writable when asked; arg names the argument in the error, and
 * size_name what size is ("key_size").  Not a buffer: TypeError; not
 * contiguous, read-only or of another size: mpikvs.InvalError. */
int buffer_get(PyObject *obj, Py_buffer *view, const char *arg,
               size_t size, const char *size_name, int writable);
/* n rows of width bytes: a NumPy uint8 array of shape (n, width), else
 * a memoryview of a bytearray cast to that shape. */
PyObject *buffer_new_rows(size_t n, size_t width);
/* The hits of status[0..n-1]: a NumPy bool array, else a list. */
PyObject *buffer_hits(const int *status, size_t n);
/* The codes of status[0..n-1] (mpikvs.OK, MISS, VERIFY): a NumPy int32
 * array, else a list of ints. */
PyObject *buffer_status(const int *status, size_t n);
/* n rows of width bytes copied from src, as buffer_new_rows makes them */
PyObject *buffer_rows_of(const void *src, size_t n, size_t width);
/* n doubles (width 0) or n rows of width doubles copied from src: a NumPy
 * float64 array, else a memoryview of a bytearray cast to 'd' and that
 * shape. */
PyObject *buffer_doubles_of(const double *src, size_t n, size_t width);
/* numpy.ascontiguousarray(obj, dtype=float64), or NULL with no error
 * set when NumPy is not there. */
PyObject *buffer_as_doubles(PyObject *obj);

/* call.c: take the handle for a call (open, not busy) and give it back */
int handle_enter(handle_object *h);
void handle_leave(handle_object *h);

/* call.c: parse fast-call arguments: names[0..nnames-1] positional
 * or by keyword, the first nrequired required, into out (the others
 * left as they are); fname names the method in errors. */
int handle_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                const char *fname, const char *const *names, int nnames,
                int nrequired, PyObject **out);

/* buffers.c: the doubles of obj (n of them, in rows of n / rows): a list
 * or tuple of floats (one row) or of rows of them, copied; a C-contiguous
 * float64 buffer as it is (rows: its first dimension when it has two);
 * anything else through NumPy when it imports, else as a sequence.
 * Release with doubles_release. */
typedef struct doubles {
    double *in;
    size_t n, rows;
    Py_buffer view;
    int have_view;
    PyObject *array;        /* NumPy's conversion */
    double *copy;           /* the sequence's */
} doubles_t;
int doubles_get(PyObject *obj, doubles_t *d, const char *arg);
void doubles_release(doubles_t *d);

/* batches.c: the handle's batch methods (METH_FASTCALL | METH_KEYWORDS) */
PyObject *batch_get(handle_object *h, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames);
PyObject *batch_put(handle_object *h, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames);
PyObject *batch_get_start(handle_object *h, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames);
PyObject *batch_put_start(handle_object *h, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames);
PyObject *batch_round_keys(handle_object *h, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames);
extern const char batch_get_doc[], batch_put_doc[], batch_get_start_doc[],
    batch_put_start_doc[], batch_round_keys_doc[];
/* Complete every started batch of h (before its close): 0, or -1 with
 * the first failure raised. */
int batches_complete_all(handle_object *h);

#endif /* MPIKVS_PY_H */
