/*
 * interpolate.h - POET's surrogate for an exact miss: the changes of a
 * neighbourhood of cached results, weighted by inverse distance, applied
 * to the cell's own input, and accepted only where the chemistry's mass
 * balance holds.
 *
 * The members are cache values (cache.h): the state after dt and the
 * input it came from.  The distance of a member to the cell is measured
 * over the six amounts of the inputs, each rescaled to [0, 1] over the
 * members and the cell together (min-max: a field that does not vary
 * there counts for nothing), so that no amount outweighs another by its
 * unit.  A member's weight is 1 / distance^2 (Shepard's inverse
 * distance weighting of power 2); a member at distance 0 takes the whole
 * weight (the members at distance 0 share it).  The interpolated change
 * is the weighted mean of the members' changes (after - input).
 */
#ifndef MPIKVS_RT_INTERPOLATE_H
#define MPIKVS_RT_INTERPOLATE_H

#include <stddef.h>

#include "chemistry.h"

/* The largest change of an element's total (mol/kgw) an accepted
 * interpolation may make: POET's. */
#define INTERP_BALANCE_TOL 1e-10

enum interp_verdict {
    INTERP_ACCEPTED = 0,
    INTERP_UNBALANCED,   /* an element's total moved by more than the
                          * tolerance */
    INTERP_NEGATIVE      /* an amount came out below zero */
};

/* Interpolate n members (values, CHEM_NSTATE * 2 doubles each: after,
 * input) at the state in, into out (not in).  out is written whatever
 * the verdict. */
enum interp_verdict interp_idw(const double *values, size_t n,
                               const double in[CHEM_NSTATE],
                               double out[CHEM_NSTATE]);

/* The verdict on a state after against the state before it: the same
 * test interp_idw makes. */
enum interp_verdict interp_check(const double before[CHEM_NSTATE],
                                 const double after[CHEM_NSTATE]);

#endif /* MPIKVS_RT_INTERPOLATE_H */
