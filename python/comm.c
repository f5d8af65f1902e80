/*
 * comm.c - mpi4py communicators through mpi4py's C API: the only file
 * that includes mpi4py.h, whose import table is static to it.
 */
#include "mpikvs_py.h"

#include <mpi4py/mpi4py.h>

/* Import mpi4py.MPI's C API (it initialises MPI, as `from mpi4py import
 * MPI` does). */
int comm_import(void)
{
    return import_mpi4py();
}

int comm_from_object(PyObject *obj, const char *arg, MPI_Comm *comm)
{
    MPI_Comm *c;

    if (!PyObject_TypeCheck(obj, &PyMPIComm_Type)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: an mpi4py.MPI.Comm is required, not '%s'", arg,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    c = PyMPIComm_Get(obj);
    if (c == NULL)
        return -1;
    if (*c == MPI_COMM_NULL) {
        errors_inval("%s: MPI.COMM_NULL is not a communicator to open on",
                     arg);
        return -1;
    }
    *comm = *c;
    return 0;
}
