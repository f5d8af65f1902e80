/*
 * errors.c - the module's exceptions and return-code constants, made
 * from mpikvs_errors.h's MPIKVS_RETURN_CODES, never a list of their own.
 *
 * mpikvs.Error(Exception) is the base, with attributes code (the return
 * code) and text (mpikvs_last_error's text, or the binding's own
 * message).  Each MPIKVS_ERR_<NAME> gets mpikvs.<Name>Error: the part
 * after MPIKVS_ERR_, its words (split at '_') each capitalised, then
 * "Error": MPIKVS_ERR_STALLED -> StalledError, MPIKVS_ERR_NOTEMPTY ->
 * NotemptyError.  InvalError is also a ValueError.  A negated errno
 * raises mpikvs.ErrnoError, also an OSError (errno set).  Every code is
 * also a module int named without MPIKVS_: mpikvs.OK, mpikvs.ERR_INVAL.
 */
#include "mpikvs_py.h"

#include <stdarg.h>
#include <string.h>

#define ERR_PREFIX "MPIKVS_ERR_"

static const struct return_code {
    const char *name;
    int value;
    const char *text;
} codes[] = {
#define RETURN_CODE_(name, value, text) { #name, value, text },
    MPIKVS_RETURN_CODES(RETURN_CODE_)
#undef RETURN_CODE_
};
#define NCODES (sizeof codes / sizeof codes[0])

static PyObject *error_base;            /* mpikvs.Error */
static PyObject *errno_error;           /* mpikvs.ErrnoError */
static PyObject *code_error[NCODES];    /* per code; NULL for OK, ... */

/* "MPIKVS_ERR_NOT_FOUND" -> "NotFoundError" into buf */
static void class_name(const char *c_name, char *buf, size_t len)
{
    const char *s = c_name + strlen(ERR_PREFIX);
    size_t i = 0;
    int word_start = 1;

    for (; *s != '\0' && i + 1 < len; s++) {
        if (*s == '_') {
            word_start = 1;
            continue;
        }
        buf[i++] = (char)(word_start ? *s : (*s >= 'A' && *s <= 'Z'
                                              ? *s - 'A' + 'a' : *s));
        word_start = 0;
    }
    buf[i] = '\0';
    strncat(buf, "Error", len - i - 1);
}

static PyObject *new_class(PyObject *module, const char *name,
                           const char *doc, PyObject *bases)
{
    char qualified[96];
    PyObject *cls;

    snprintf(qualified, sizeof qualified, "mpikvs.%s", name);
    cls = PyErr_NewExceptionWithDoc(qualified, doc, bases, NULL);
    if (cls == NULL)
        return NULL;
    if (PyModule_AddObject(module, name, cls) < 0) {
        Py_DECREF(cls);
        return NULL;
    }
    Py_INCREF(cls);         /* PyModule_AddObject took one; we keep one */
    return cls;
}

int errors_add(PyObject *module)
{
    PyObject *bases;

    error_base = new_class(module, "Error",
        "An mpikvs call failed: code is its return code, text the "
        "detail (mpikvs_last_error, or the binding's own message).",
        PyExc_Exception);
    if (error_base == NULL)
        return -1;
    bases = PyTuple_Pack(2, error_base, PyExc_OSError);
    if (bases == NULL)
        return -1;
    errno_error = new_class(module, "ErrnoError",
        "An mpikvs call failed with a negated errno: also an OSError "
        "(errno is -code).", bases);
    Py_DECREF(bases);
    if (errno_error == NULL)
        return -1;
    for (size_t i = 0; i < NCODES; i++) {
        char name[64];

        /* mpikvs.OK, mpikvs.MISS, mpikvs.ERR_INVAL, ... */
        if (PyModule_AddIntConstant(module, codes[i].name + strlen("MPIKVS_"),
                                    codes[i].value) < 0)
            return -1;
        if (strncmp(codes[i].name, ERR_PREFIX, strlen(ERR_PREFIX)) != 0)
            continue;
        class_name(codes[i].name, name, sizeof name);
        if (codes[i].value == MPIKVS_ERR_INVAL)
            bases = PyTuple_Pack(2, error_base, PyExc_ValueError);
        else
            bases = PyTuple_Pack(1, error_base);
        if (bases == NULL)
            return -1;
        code_error[i] = new_class(module, name, codes[i].text, bases);
        Py_DECREF(bases);
        if (code_error[i] == NULL)
            return -1;
    }
    return 0;
}

PyObject *errors_raise(int rc, const char *call, const char *text)
{
    PyObject *cls = error_base, *exc, *value;
    const char *what = mpikvs_strerror(rc);

    for (size_t i = 0; i < NCODES; i++)
        if (codes[i].value == rc && code_error[i] != NULL)
            cls = code_error[i];
    if (text == NULL)
        text = "";
    /* str(exc): the call, the code's text and the detail */
    value = PyUnicode_FromFormat("%s: %s%s%s", call, what,
                                 *text ? ": " : "", text);
    if (value == NULL)
        return NULL;
    if (cls == error_base && rc < 0 && (rc > MPIKVS_ERR_FIRST ||
                                        rc < MPIKVS_ERR_LAST)) {
        cls = errno_error;
        exc = PyObject_CallFunction(cls, "iO", -rc, value);
    } else {
        exc = PyObject_CallFunctionObjArgs(cls, value, NULL);
    }
    Py_DECREF(value);
    if (exc == NULL)
        return NULL;
    value = PyLong_FromLong(rc);
    if (value == NULL || PyObject_SetAttrString(exc, "code", value) < 0)
        goto fail;
    Py_DECREF(value);
    value = PyUnicode_FromString(text);
    if (value == NULL || PyObject_SetAttrString(exc, "text", value) < 0)
        goto fail;
    Py_DECREF(value);
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
fail:
    Py_XDECREF(value);
    Py_DECREF(exc);
    return NULL;
}

PyObject *errors_raise_kvs(int rc, const char *call, const mpikvs_t *kvs)
{
    return errors_raise(rc, call, mpikvs_last_error(kvs));
}

PyObject *errors_inval(const char *format, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, format);
    vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    return errors_raise(MPIKVS_ERR_INVAL, "mpikvs", text);
}
