/*
 * grid.c - the rows of the grid on this rank, the halo row from the rank
 * above, and explicit upwind advection.
 */
#include "grid.h"

#include <stdlib.h>
#include <string.h>

/* The share of the left and top edges, from the top-left corner, through
 * which the MgCl2 water enters. */
#define INJECT_SHARE 0.5

/* Rows of rank r: as even as they go, the first ny % nranks ranks get
 * one more. */
static void rows_of(int ny, int nranks, int r, int *row0, int *nrows)
{
    int base = ny / nranks, extra = ny % nranks;

    *nrows = base + (r < extra);
    *row0 = r * base + (r < extra ? r : extra);
}

int grid_open(struct grid *g, MPI_Comm comm, int nx, int ny,
              const cell_t initial, const cell_t injected,
              struct rt_err *err)
{
    int failed = 0, any = 0;

    memset(g, 0, sizeof(*g));
    g->comm = MPI_COMM_NULL;
    g->cell_type = g->row_type = MPI_DATATYPE_NULL;
    rt_mpi(MPI_Comm_dup(comm, &g->comm), "MPI_Comm_dup");
    rt_mpi(MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN),
           "MPI_Comm_set_errhandler");
    rt_mpi(MPI_Comm_rank(g->comm, &g->rank), "MPI_Comm_rank");
    rt_mpi(MPI_Comm_size(g->comm, &g->nranks), "MPI_Comm_size");
    rt_mpi(MPI_Type_contiguous(CHEM_NSTATE, MPI_DOUBLE, &g->cell_type),
           "MPI_Type_contiguous");
    rt_mpi(MPI_Type_commit(&g->cell_type), "MPI_Type_commit");
    rt_mpi(MPI_Type_contiguous(nx, g->cell_type, &g->row_type),
           "MPI_Type_contiguous");
    rt_mpi(MPI_Type_commit(&g->row_type), "MPI_Type_commit");
    g->nx = nx;
    g->ny = ny;
    memcpy(g->initial, initial, sizeof(cell_t));
    memcpy(g->injected, injected, sizeof(cell_t));
    if (g->nranks > ny) {
        /* every rank finds this; rank 0 says it */
        (g->rank ? rt_echo : rt_fail)(err, "%d ranks for %d rows: every "
                                           "rank needs a row (use --ny %d "
                                           "or more, or fewer ranks)",
                                      g->nranks, ny, g->nranks);
        grid_close(g);
        return -1;
    }
    rows_of(ny, g->nranks, g->rank, &g->row0, &g->nrows);

    size_t n = (size_t)(g->nrows + 1) * (size_t)nx;
    g->cells = calloc(n, sizeof(cell_t));
    g->scratch = calloc(n, sizeof(cell_t));
    if (g->rank == 0) {
        g->counts = malloc((size_t)g->nranks * sizeof(int));
        g->displs = malloc((size_t)g->nranks * sizeof(int));
    }
    if (!g->cells || !g->scratch ||
        (g->rank == 0 && (!g->counts || !g->displs)))
        failed = rt_fail(err, "out of memory for %zu cells", 2 * n) != 0;
    rt_mpi(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, g->comm),
           "MPI_Allreduce");
    if (any) {
        if (!failed)
            rt_echo(err, "another rank is out of memory for its cells");
        grid_close(g);
        return -1;
    }
    for (int r = 0; g->rank == 0 && r < g->nranks; r++) {
        int row0, nrows;
        rows_of(ny, g->nranks, r, &row0, &nrows);
        g->counts[r] = nrows * nx;
        g->displs[r] = row0 * nx;
    }
    grid_reset(g);
    return 0;
}

void grid_close(struct grid *g)
{
    free(g->cells);
    free(g->scratch);
    free(g->counts);
    free(g->displs);
    g->cells = g->scratch = NULL;
    g->counts = g->displs = NULL;
    if (g->row_type != MPI_DATATYPE_NULL)
        MPI_Type_free(&g->row_type);
    if (g->cell_type != MPI_DATATYPE_NULL)
        MPI_Type_free(&g->cell_type);
    if (g->comm != MPI_COMM_NULL)
        MPI_Comm_free(&g->comm);
}

void grid_reset(struct grid *g)
{
    size_t n = (size_t)(g->nrows + 1) * (size_t)g->nx;

    for (size_t i = 0; i < n; i++)
        memcpy(g->cells[i], g->initial, sizeof(cell_t));
}

/* What flows in across the left edge at row y, or the top edge at
 * column x: MgCl2 water near the corner, pore water elsewhere. */
static const double *inflow(const struct grid *g, int along, int length)
{
    return along < (int)(INJECT_SHARE * length) ? g->injected : g->initial;
}

void grid_advect(struct grid *g)
{
    const int nx = g->nx;
    const int above = g->rank > 0 ? g->rank - 1 : MPI_PROC_NULL;
    const int below = g->rank < g->nranks - 1 ? g->rank + 1 : MPI_PROC_NULL;

    /* The halo: my last row goes down, the row above my first comes in.
     * The first rank's halo is the top edge's inflow instead. */
    rt_mpi(MPI_Sendrecv(grid_row(g, g->nrows - 1), 1, g->row_type, below, 0,
                        g->cells, 1, g->row_type, above, 0, g->comm,
                        MPI_STATUS_IGNORE),
           "MPI_Sendrecv of the halo row");
    if (g->rank == 0)
        for (int x = 0; x < nx; x++)
            memcpy(g->cells[x], inflow(g, x, nx), sizeof(cell_t));

    /* c' = c - Cx (c - c_left) - Cy (c - c_up): upwind differences for a
     * flow to the right and down; stable while Cx + Cy <= 1. */
    for (int y = 0; y < g->nrows; y++) {
        const cell_t *up = grid_row(g, y - 1);
        const cell_t *row = grid_row(g, y);
        cell_t *out = g->scratch + (size_t)(y + 1) * (size_t)nx;
        const double *left = inflow(g, g->row0 + y, g->ny);
        for (int x = 0; x < nx; x++) {
            for (int s = 0; s < CHEM_NMOBILE; s++)
                out[x][s] = row[x][s] -
                            GRID_COURANT_X * (row[x][s] - left[s]) -
                            GRID_COURANT_Y * (row[x][s] - up[x][s]);
            for (int s = CHEM_NMOBILE; s < CHEM_NSTATE; s++)
                out[x][s] = row[x][s];
            left = row[x];
        }
    }
    /* The new state becomes the grid; the halo row is refilled next step. */
    cell_t *t = g->cells;
    g->cells = g->scratch;
    g->scratch = t;
}

void grid_gather(const struct grid *g, cell_t *all)
{
    rt_mpi(MPI_Gatherv(grid_row(g, 0), g->nrows * g->nx, g->cell_type, all,
                       g->counts, g->displs, g->cell_type, 0, g->comm),
           "MPI_Gatherv");
}
