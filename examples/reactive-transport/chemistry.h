/*
 * chemistry.h - the per-cell chemistry: calcite dissolving and dolomite
 * precipitating in a magnesium chloride solution, as kinetic rates
 * integrated over one time step by SUNDIALS CVODE (stiff BDF, Newton
 * iterations with a dense direct solver).
 *
 * A cell's state is six amounts in mol per kg of water: four dissolved
 * totals, which the flow carries, and two minerals, which stay put.
 * chem_solve() is a pure function of its inputs: the same state and time
 * step give the same bits, on any rank, in any order of calls.  That is
 * what lets a result computed on one rank stand in for another's.
 */
#ifndef MPIKVS_RT_CHEMISTRY_H
#define MPIKVS_RT_CHEMISTRY_H

#include <stdint.h>

#include "rt.h"

enum chem_field {
    CHEM_CA = 0,       /* dissolved calcium, mol/kgw */
    CHEM_MG,           /* dissolved magnesium */
    CHEM_CL,           /* dissolved chloride (a tracer: it never reacts) */
    CHEM_C,            /* total dissolved carbonate, C(4) */
    CHEM_CALCITE,      /* calcite, CaCO3, mol per kgw of the cell */
    CHEM_DOLOMITE,     /* dolomite, CaMg(CO3)2 */
    CHEM_NSTATE
};
#define CHEM_NMOBILE 4 /* the first four fields move with the water */

/* The elements the reactions conserve, for mass balances. */
enum chem_element {
    CHEM_ELEMENT_CA = 0,
    CHEM_ELEMENT_MG,
    CHEM_ELEMENT_C,
    CHEM_NELEMENTS
};
extern const char *const chem_element_name[CHEM_NELEMENTS];

/* Field names, as in the job config and the outputs. */
extern const char *const chem_field_name[CHEM_NSTATE];

/* CVODE's work, summed over solves, for the report. */
struct chem_work {
    uint64_t solves;
    uint64_t steps;          /* internal BDF steps */
    uint64_t rhs_evals;      /* right-hand sides, Jacobians' included */
    uint64_t newton_iters;   /* nonlinear (Newton) iterations */
    uint64_t jac_evals;      /* Jacobians (difference quotients) */
    double   seconds;        /* spent in chem_solve */
};

struct chem_solver;

/* One solver per rank, reused for every cell.  Returns 0, or -1 with
 * err filled. */
int chem_open(struct chem_solver **s, struct rt_err *err);
void chem_close(struct chem_solver **s);

/* Integrate the cell state in over dt seconds into out (in and out may
 * be the same array).  Returns 0, or -1 with err saying what CVODE
 * reported. */
int chem_solve(struct chem_solver *s, const double in[CHEM_NSTATE],
               double dt, double out[CHEM_NSTATE], struct rt_err *err);

/* What the solves so far cost. */
void chem_work(const struct chem_solver *s, struct chem_work *w);

/* The total of each element in a state, dissolved and in the minerals
 * (Ca: Ca + Calcite + Dolomite, Mg: Mg + Dolomite, C: C + Calcite +
 * 2 Dolomite): the reactions leave them as they are. */
void chem_element_totals(const double state[CHEM_NSTATE],
                         double totals[CHEM_NELEMENTS]);

/* The pH of a state (the charge balance solved for H+). */
double chem_ph(const double state[CHEM_NSTATE]);

/* The two waters of the scenario.  The initial pore water is pure water
 * equilibrated with the rock's calcite (solved with CVODE: a long solve
 * to steady state), so the cells the injection has not reached stay as
 * they are; the injected water is magnesium chloride. */
int chem_initial_state(struct chem_solver *s, double state[CHEM_NSTATE],
                       struct rt_err *err);
void chem_injected_state(double state[CHEM_NSTATE]);

#endif /* MPIKVS_RT_CHEMISTRY_H */
