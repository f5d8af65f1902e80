/*
 * test_areas.c - the table tests of four API areas in one job, in the
 * mode given as argv[1] (lockfree | fine-lock | coarse-lock):
 * test_open, test_getput, test_batch (batches and started batches) and
 * test_absent (put-if-absent), in that order.  Each is a program of its
 * own as well; run-mpi-tests.sh runs them as this one because the start
 * of a job (mpirun, MPI_Init, the library's first open) costs about a
 * second on a loaded machine of two cores, and its matrix has 35 cells.
 * A failure names the area's file and line; see mpitest.h for the
 * output.
 */
#define MT_AREAS_IN_ONE_JOB
#include "test_open.c"
#include "test_getput.c"
#include "test_batch.c"
#include "test_absent.c"

int main(int argc, char **argv)
{
    table_test_start(argc, argv);
    open_area();
    getput_area();
    batch_area();
    absent_area();
    return table_test_finish();
}
