/*
 * mpikvs_module.c - the Python module mpikvs (mpikvs_python(3)): open,
 * strerror, version, and the module's setup.  The handle is handle.c's,
 * the batches batches.c's, the exceptions errors.c's.
 */
#include "mpikvs_py.h"

#include <string.h>

/* an option's str (or None: NULL); config may be os.PathLike */
static int option_str(PyObject *obj, const char *arg, const char **out,
                      PyObject **keep, int is_path)
{
    if (obj == NULL || obj == Py_None)
        return 0;
    if (is_path) {
        if (!PyUnicode_FSConverter(obj, keep))
            return -1;
        *out = PyBytes_AS_STRING(*keep);
        return 0;
    }
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: a str is required, not '%s'",
                     arg, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(obj);
    return *out == NULL ? -1 : 0;
}

static int option_size(Py_ssize_t v, const char *arg, size_t *out)
{
    if (v < 0) {
        errors_inval("%s: %zd, not a size (0: from the config)", arg, v);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* verify: None or False (no opt-in), True (the table's fraction) or a
 * float (that fraction; the library checks its range) */
static int option_verify(PyObject *obj, mpikvs_options_t *opt)
{
    if (obj == NULL || obj == Py_None || obj == Py_False)
        return 0;
    opt->flags |= MPIKVS_OPEN_VERIFY;
    if (obj == Py_True)
        return 0;
    opt->verify = PyFloat_AsDouble(obj);
    if (opt->verify == -1.0 && PyErr_Occurred())
        return -1;
    if (!(opt->verify > 0.0 && opt->verify <= 1.0)) {
        errors_inval("verify: %g, not a fraction in (0, 1] (True: the "
                     "table's)", opt->verify);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(open_doc,
"open(comm, *, key_size=0, value_size=0, size_per_node=0, mode=None,\n"
"     config=None, table=None, slots_per_bucket=0, transport=None,\n"
"     verify=False)\n"
"    -> Handle\n\n"
"Open the cache over comm, an mpi4py communicator (collective over it);\n"
"the options are keyword-only, as mpikvs_open(3)'s options: 0 or None\n"
"takes the job config's value (config: a JSON path, default\n"
"$MPIKVS_CONFIG; table: its table), else the default.  mode:\n"
"'lockfree', 'fine-lock' or 'coarse-lock'; transport: 'auto', 'mpi' or\n"
"'ucx'.  verify: True takes MPIKVS_VERIFY for the table's \"verify\"\n"
"fraction of hits (get(status=True) tells them), a float in (0, 1] for\n"
"that fraction instead (MPIKVS_OPEN_VERIFY); False: never.  The Handle is a context manager: with mpikvs.open(...) as kvs:\n"
"closes it (collectively) at the end.  The GIL is released while open\n"
"waits for the other ranks.");

static PyObject *module_open(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"comm", "key_size", "value_size",
                             "size_per_node", "mode", "config", "table",
                             "slots_per_bucket", "transport", "verify",
                             NULL};
    PyObject *comm_obj, *mode = NULL, *config = NULL, *table = NULL,
             *transport = NULL, *config_bytes = NULL, *verify = NULL;
    Py_ssize_t key_size = 0, value_size = 0, size_per_node = 0, slots = 0;
    mpikvs_options_t opt = MPIKVS_OPTIONS_INIT;
    size_t slots_size;
    handle_object *h = NULL;
    mpikvs_t *kvs = NULL;
    MPI_Comm comm;
    int rc;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$nnnOOOnOO:open", kwlist,
                                     &comm_obj, &key_size, &value_size,
                                     &size_per_node, &mode, &config, &table,
                                     &slots, &transport, &verify))
        return NULL;
    if (comm_from_object(comm_obj, "comm", &comm) < 0 ||
        option_size(key_size, "key_size", &opt.key_size) < 0 ||
        option_size(value_size, "value_size", &opt.value_size) < 0 ||
        option_size(size_per_node, "size_per_node", &opt.size_per_node) < 0 ||
        option_size(slots, "slots_per_bucket", &slots_size) < 0 ||
        option_str(mode, "mode", &opt.mode, NULL, 0) < 0 ||
        option_str(config, "config", &opt.config, &config_bytes, 1) < 0 ||
        option_str(table, "table", &opt.table, NULL, 0) < 0 ||
        option_str(transport, "transport", &opt.transport, NULL, 0) < 0)
        goto done;
    if (slots_size > 0xffffffffu) {
        errors_inval("slots_per_bucket: %zu, too large", slots_size);
        goto done;
    }
    opt.slots_per_bucket = (unsigned)slots_size;
    if (option_verify(verify, &opt) < 0)
        goto done;
    h = PyObject_New(handle_object, &handle_type);
    if (h == NULL)
        goto done;
    h->kvs = NULL;
    h->busy = PyThread_get_thread_ident();
    h->inflight = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = mpikvs_open(comm, &opt, &kvs);
    Py_END_ALLOW_THREADS
    h->busy = 0;
    if (rc != MPIKVS_OK) {
        Py_CLEAR(h);
        errors_raise_kvs(rc, "mpikvs_open", NULL);
        goto done;
    }
    h->kvs = kvs;
    h->key_size = mpikvs_key_size(kvs);
    h->value_size = mpikvs_value_size(kvs);
done:
    Py_XDECREF(config_bytes);
    return (PyObject *)h;
}

PyDoc_STRVAR(strerror_doc,
"strerror(rc) -> str\n\n"
"The text of a return code (mpikvs.OK, mpikvs.ERR_STALLED, ...) or of a\n"
"negated errno.");

static PyObject *module_strerror(PyObject *self, PyObject *arg)
{
    long rc = PyLong_AsLong(arg);

    (void)self;
    if (rc == -1 && PyErr_Occurred())
        return NULL;
    if (rc < -0x7fffffffL || rc > 0x7fffffffL)
        return errors_inval("rc: %ld, not a return code", rc);
    return PyUnicode_FromString(mpikvs_strerror((int)rc));
}

static PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))module_open,
     METH_VARARGS | METH_KEYWORDS, open_doc},
    {"strerror", module_strerror, METH_O, strerror_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mpikvs",
    .m_doc = "mpikvs: an in-job key-value cache for MPI simulations, over\n"
             "mpi4py communicators (mpikvs_python(3)).  open() returns a\n"
             "Handle; errors raise mpikvs.Error's subclasses.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit_mpikvs(void);
PyMODINIT_FUNC PyInit_mpikvs(void)
{
    PyObject *m;

    if (comm_import() < 0)
        return NULL;
    if (PyType_Ready(&handle_type) < 0 || PyType_Ready(&request_type) < 0)
        return NULL;
    m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&handle_type);
    Py_INCREF(&request_type);
    if (PyModule_AddObject(m, "Handle", (PyObject *)&handle_type) < 0 ||
        PyModule_AddObject(m, "Request", (PyObject *)&request_type) < 0 ||
        errors_add(m) < 0 ||
        /* the library's version, and the header's it was built with */
        PyModule_AddStringConstant(m, "version", mpikvs_version()) < 0 ||
        PyModule_AddStringConstant(m, "__version__", MPIKVS_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
