/*
 * interpolate.c - inverse distance weighting of a neighbourhood's
 * changes, and the mass balance that decides whether to trust it
 * (interpolate.h).
 */
#include "interpolate.h"

#include <math.h>

/* member j's input and state after dt (a cache value) */
static const double *member_in(const double *values, size_t j)
{
    return values + j * 2 * CHEM_NSTATE + CHEM_NSTATE;
}

static const double *member_after(const double *values, size_t j)
{
    return values + j * 2 * CHEM_NSTATE;
}

enum interp_verdict interp_check(const double before[CHEM_NSTATE],
                                 const double after[CHEM_NSTATE])
{
    double t0[CHEM_NELEMENTS], t1[CHEM_NELEMENTS];

    for (int f = 0; f < CHEM_NSTATE; f++)
        if (!(after[f] >= 0.0))   /* also NaN */
            return INTERP_NEGATIVE;
    chem_element_totals(before, t0);
    chem_element_totals(after, t1);
    for (int e = 0; e < CHEM_NELEMENTS; e++)
        if (!(fabs(t1[e] - t0[e]) <= INTERP_BALANCE_TOL))
            return INTERP_UNBALANCED;
    return INTERP_ACCEPTED;
}

enum interp_verdict interp_idw(const double *values, size_t n,
                               const double in[CHEM_NSTATE],
                               double out[CHEM_NSTATE])
{
    double lo[CHEM_NSTATE], range[CHEM_NSTATE];
    double change[CHEM_NSTATE] = {0}, total = 0.0;
    size_t exact = 0;

    /* min-max rescaling over the members and the query */
    for (int f = 0; f < CHEM_NSTATE; f++) {
        double hi = in[f];
        lo[f] = in[f];
        for (size_t j = 0; j < n; j++) {
            double v = member_in(values, j)[f];
            lo[f] = v < lo[f] ? v : lo[f];
            hi = v > hi ? v : hi;
        }
        range[f] = hi - lo[f];
    }
    for (size_t j = 0; j < n; j++) {
        const double *x = member_in(values, j), *y = member_after(values, j);
        double d2 = 0.0, w;
        for (int f = 0; f < CHEM_NSTATE; f++)
            if (range[f] > 0.0) {
                double d = (x[f] - in[f]) / range[f];
                d2 += d * d;
            }
        if (d2 == 0.0) {
            /* the first member at distance 0 drops what the others
             * weighed; later ones share with it */
            if (!exact++) {
                total = 0.0;
                for (int f = 0; f < CHEM_NSTATE; f++)
                    change[f] = 0.0;
            }
            w = 1.0;
        } else if (exact) {
            continue;
        } else {
            w = 1.0 / d2;   /* 1 / distance^2 */
        }
        total += w;
        for (int f = 0; f < CHEM_NSTATE; f++)
            change[f] += w * (y[f] - x[f]);
    }
    for (int f = 0; f < CHEM_NSTATE; f++)
        out[f] = in[f] + (total > 0.0 ? change[f] / total : 0.0);
    return interp_check(in, out);
}
