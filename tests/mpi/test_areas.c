/*
 * test_areas.c - the table tests of four API areas in one job, in the
 * mode given as argv[1] (lockfree | fine-lock | coarse-lock):
 * test_getput and test_batch (batches and started batches) on one big
 * table, then their other tables, test_absent (put-if-absent) and
 * test_open.  Each is a program of its own as well; run-mpi-tests.sh
 * runs them as this one because the start of a job (mpirun, MPI_Init,
 * the library's first open) costs about a second on a loaded machine of
 * two cores, and its matrix has 35 cells.
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
    mpikvs_t *kvs;

    table_test_start(argc, argv);
    /* one big table for gets, puts and batches, as test_basic had: the
     * keys test_big leaves are the ones the batches read */
    kvs = open_big();
    if (kvs) {
        getput_big(kvs);
        batch_big(kvs);
        close_big(&kvs);
    }
    test_async_close();
    getput_other_tables();
    absent_area();
    /* last: test_disagree leaves what follows it 30 s at most */
    open_area();
    return table_test_finish();
}
