/*
 * grid.h - the 2-D grid, split by rows over the ranks, and its transport:
 * explicit first-order upwind advection of the dissolved species.
 *
 * The water flows to the right and down at once (Courant numbers
 * GRID_COURANT_X and GRID_COURANT_Y per step).  It enters through the
 * left and top edges: MgCl2 water through the half of each edge next to
 * the top-left corner, the initial pore water through the rest.  Cell
 * (x, y) has x = 0 at the left and y = 0 at the top; rank r holds the
 * rows [row0, row0 + nrows), in order, and needs the row above its first
 * one from rank r - 1 (the halo) before each step.
 */
#ifndef MPIKVS_RT_GRID_H
#define MPIKVS_RT_GRID_H

#include <mpi.h>

#include "chemistry.h"
#include "rt.h"

#define GRID_COURANT_X 0.45
#define GRID_COURANT_Y 0.45

/* A cell's state, the unit everything else moves around. */
typedef double cell_t[CHEM_NSTATE];

struct grid {
    int      nx, ny;           /* the whole grid */
    int      row0, nrows;      /* this rank's rows */
    int      rank, nranks;
    MPI_Comm comm;             /* a duplicate of the caller's */
    MPI_Datatype cell_type;    /* CHEM_NSTATE doubles */
    MPI_Datatype row_type;     /* nx cells */
    cell_t  *cells;            /* (nrows + 1) x nx: halo row first */
    cell_t  *scratch;          /* the same, for the advection */
    int     *counts, *displs;  /* rank 0: every rank's cells, for gathers */
    cell_t   initial;          /* pore water on calcite */
    cell_t   injected;         /* MgCl2 water */
};

/* This rank's cells: row y (0 <= y < nrows) of the rank's share. */
static inline cell_t *grid_row(const struct grid *g, int y)
{
    return g->cells + (size_t)(y + 1) * (size_t)g->nx;
}

/* Set up the rank's share of an nx x ny grid over comm (collective).
 * Fails, on every rank, when there are more ranks than rows or a rank is
 * out of memory.  Returns 0 or -1. */
int grid_open(struct grid *g, MPI_Comm comm, int nx, int ny,
              const cell_t initial, const cell_t injected,
              struct rt_err *err);
void grid_close(struct grid *g);

/* Every cell back to the initial state (the start of a run). */
void grid_reset(struct grid *g);

/* One step of transport (with the neighbour ranks): fetch the halo row,
 * then advect the mobile species. */
void grid_advect(struct grid *g);

/* Gather the whole grid, nx * ny cells in row order, into all, which
 * rank 0 allocates (NULL elsewhere).  Collective. */
void grid_gather(const struct grid *g, cell_t *all);

#endif /* MPIKVS_RT_GRID_H */
