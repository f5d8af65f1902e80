/*
 * chemistry.c - calcite and dolomite kinetics in a MgCl2 solution,
 * integrated with SUNDIALS CVODE.
 *
 * The model (25 degrees C):
 *
 *   calcite   CaCO3        = Ca+2 + CO3-2          log Ksp = -8.48
 *   dolomite  CaMg(CO3)2   = Ca+2 + Mg+2 + 2 CO3-2 log Ksp = -17.09
 *
 * each dissolving (or precipitating) at the rate
 *
 *   r = k * (1 - Omega) * s,   Omega = ion activity product / Ksp,
 *
 * where s, the share of the mineral's surface still there, is
 * m / (m + m_half) while the mineral dissolves and 1 while it grows on
 * the rock.  CO3-2 comes from the speciation of the water, solved at
 * every right-hand side: the carbonate equilibria (log K1 = -6.352,
 * log K2 = -10.329, log Kw = -14), the charge balance for H+, and
 * activity coefficients from the Davies equation at the ionic strength
 * of the species, iterated to a fixed point.  So the pH moves as calcite
 * dissolves, and the saturation of both minerals with it.
 *
 * Calcite reacts nearly three orders of magnitude faster than dolomite,
 * so a cell that transport has just disturbed relaxes to calcite
 * equilibrium within a second and then drifts over minutes: a stiff
 * system, which BDF with Newton iterations takes in large steps once the
 * transient is over.  With the Mg injected, calcite dissolves and dolomite
 * precipitates (2 CaCO3 + Mg+2 -> CaMg(CO3)2 + Ca+2); once the calcite
 * is gone, the carbonate-free injected water dissolves the dolomite
 * again: the classic POET test case.
 */
#include "chemistry.h"

#include <cvode/cvode.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <time.h>

const char *const chem_field_name[CHEM_NSTATE] = {
    "Ca", "Mg", "Cl", "C", "Calcite", "Dolomite",
};

const char *const chem_element_name[CHEM_NELEMENTS] = {"Ca", "Mg", "C"};

/* log10 of the equilibrium constants (PHREEQC's phreeqc.dat, 25 C). */
#define LOG_K1            (-6.352)   /* CO2 + H2O = HCO3- + H+ */
#define LOG_K2            (-10.329)  /* HCO3- = CO3-2 + H+ */
#define LOG_KW            (-14.0)    /* H2O = H+ + OH- */
#define LOG_KSP_CALCITE   (-8.48)
#define LOG_KSP_DOLOMITE  (-17.09)

/* Rate constants, mol/kgw/s, and the amount (mol/kgw) at which a
 * dissolving mineral has lost half its reactive surface. */
#define K_CALCITE         1e-4
#define K_DOLOMITE        2e-7
#define HALF_CALCITE      1e-6
#define HALF_DOLOMITE     1e-6

/* The rock: calcite per kg of pore water (POET's SimDol2D); the
 * injected water: 1 mmol/kgw MgCl2. */
#define ROCK_CALCITE      2.07e-4
#define INJECTED_MG       1e-3
#define INJECTED_CL       2e-3

/* CVODE's tolerances.  The absolute one sits far below every amount
 * that matters (1e-4 mol/kgw) and above the round-off of the solve. */
#define RTOL              1e-8
#define ATOL              1e-14
#define MAX_STEPS         50000

/* How long chem_initial_state lets pure water sit on calcite. */
#define EQUILIBRATION_S   1e7

struct constants {           /* thermodynamic: of activities */
    double k1, k2, kw, ksp_calcite, ksp_dolomite;
};

struct chem_solver {
    SUNContext      ctx;
    void           *cvode;
    N_Vector        y, abstol;
    SUNMatrix       jac;
    SUNLinearSolver ls;
    struct constants k;
    double          h_guess;      /* last H+, the next solve's start */
    struct chem_work work;
    char            cvode_msg[320];  /* CVODE's last error message */
};

static void constants_init(struct constants *k)
{
    k->k1 = pow(10.0, LOG_K1);
    k->k2 = pow(10.0, LOG_K2);
    k->kw = pow(10.0, LOG_KW);
    k->ksp_calcite = pow(10.0, LOG_KSP_CALCITE);
    k->ksp_dolomite = pow(10.0, LOG_KSP_DOLOMITE);
}

/* ---- speciation ------------------------------------------------------ */

/* Concentration constants at activity coefficients g1 (charge 1) and g2
 * (charge 2); neutral CO2(aq) has activity coefficient 1. */
struct conditional {
    double k1, k1k2, kw;
};

static void conditional_constants(const struct constants *k, double g1,
                                  double g2, struct conditional *c)
{
    c->k1 = k->k1 / (g1 * g1);              /* [H][HCO3] / [CO2] */
    c->k1k2 = c->k1 * (k->k2 / g2);         /* [H][CO3] / [HCO3] = K2/g2 */
    c->kw = k->kw / (g1 * g1);
}

/* The charge balance for H+: with total carbonate ct and alkalinity alk
 * (the charge of the conservative ions, 2 Ca + 2 Mg - Cl),
 *
 *   F(h) = ct * (K1 h + 2 K1 K2) / (h^2 + K1 h + K1 K2) + Kw/h - h - alk
 *
 * is zero.  F falls strictly with h, so the root is bracketed in
 * [1e-14, 1]; Newton's method on u = ln h finds it in a few steps, and a
 * step that leaves the bracket is replaced by bisection, so it always
 * converges.  guess is where to start (the previous root). */
static double solve_h(const struct conditional *k, double ct, double alk,
                      double guess)
{
    double lo = log(1e-14), hi = 0.0;     /* F(lo) > 0 > F(hi) */
    double u = guess > 1e-14 && guess < 1.0 ? log(guess) : log(1e-8);

    for (int it = 0; it < 200; it++) {
        double h = exp(u);
        double d = h * h + k->k1 * h + k->k1k2;
        double n = k->k1 * h + 2.0 * k->k1k2;
        double f = ct * n / d + k->kw / h - h - alk;
        double dfdh = ct * (k->k1 * d - n * (2.0 * h + k->k1)) / (d * d) -
                      k->kw / (h * h) - 1.0;
        double dfdu = h * dfdh;               /* dF/du = h dF/dh */
        if (f > 0.0)
            lo = u;
        else
            hi = u;
        double next = u - f / dfdu;
        if (!(next > lo && next < hi))
            next = 0.5 * (lo + hi);
        if (fabs(next - u) < 1e-13)
            return exp(next);
        u = next;
    }
    return exp(u);
}

/* Davies: log10 gamma = -A z^2 (sqrt(I) / (1 + sqrt(I)) - 0.3 I). */
#define DAVIES_A 0.5085

static double davies_log_gamma1(double ionic_strength)
{
    double r = sqrt(ionic_strength);

    return -DAVIES_A * (r / (1.0 + r) - 0.3 * ionic_strength);
}

/* What the rates need to know about the water. */
struct water {
    double h;                      /* [H+] */
    double co3;                    /* [CO3-2] */
    double g1, g2;                 /* activity coefficients */
};

/* Speciate water of the given totals.  The ionic strength depends on the
 * species and the species on the activity coefficients, so iterate:
 * activity coefficients from I, H+ from the charge balance, I from the
 * species, until I settles (to 1e-13: far below the perturbations of
 * CVODE's difference-quotient Jacobian, so the right-hand side stays
 * smooth for it). */
static void speciate(const struct constants *k, double ca, double mg,
                     double cl, double ct, double guess, struct water *w)
{
    const double alk = 2.0 * ca + 2.0 * mg - cl;
    /* first guess: all carbonate as HCO3- */
    double ionic = 0.5 * (4.0 * ca + 4.0 * mg + cl + ct);
    struct conditional c;

    w->h = guess;
    for (int it = 0; it < 50; it++) {
        double lg1 = davies_log_gamma1(ionic);
        w->g1 = pow(10.0, lg1);
        w->g2 = pow(10.0, 4.0 * lg1);
        conditional_constants(k, w->g1, w->g2, &c);
        w->h = solve_h(&c, ct, alk, w->h);
        double d = w->h * w->h + c.k1 * w->h + c.k1k2;
        double hco3 = ct * c.k1 * w->h / d;
        w->co3 = ct * c.k1k2 / d;
        double next = 0.5 * (4.0 * ca + 4.0 * mg + cl + w->h + c.kw / w->h +
                             hco3 + 4.0 * w->co3);
        double change = fabs(next - ionic);
        ionic = next;
        if (change <= 1e-13 * ionic)
            break;
    }
}

struct rates {
    struct water water;
    double omega_calcite, omega_dolomite;
    double calcite, dolomite;      /* dissolution rates, mol/kgw/s */
};

/* A state may dip below zero by CVODE's tolerance; the rates see zero. */
static inline double nonneg(double x)
{
    return x > 0.0 ? x : 0.0;
}

static void rates(const struct constants *k, const double *y, double guess,
                  struct rates *r)
{
    double ca = nonneg(y[CHEM_CA]), mg = nonneg(y[CHEM_MG]);
    double calcite = nonneg(y[CHEM_CALCITE]);
    double dolomite = nonneg(y[CHEM_DOLOMITE]);
    const struct water *w = &r->water;

    speciate(k, ca, mg, nonneg(y[CHEM_CL]), nonneg(y[CHEM_C]), guess,
             &r->water);
    double a_ca = w->g2 * ca, a_mg = w->g2 * mg, a_co3 = w->g2 * w->co3;
    r->omega_calcite = a_ca * a_co3 / k->ksp_calcite;
    r->omega_dolomite = a_ca * a_mg * a_co3 * a_co3 / k->ksp_dolomite;
    /* (1 - Omega) changes sign at equilibrium, where the surface term
     * switches; the rate is continuous there. */
    r->calcite = K_CALCITE * (1.0 - r->omega_calcite) *
                 (r->omega_calcite < 1.0 ? calcite / (calcite + HALF_CALCITE)
                                         : 1.0);
    r->dolomite = K_DOLOMITE * (1.0 - r->omega_dolomite) *
                  (r->omega_dolomite < 1.0
                       ? dolomite / (dolomite + HALF_DOLOMITE)
                       : 1.0);
}

static int rhs(sunrealtype t, N_Vector yv, N_Vector ydotv, void *data)
{
    struct chem_solver *s = data;
    const double *y = N_VGetArrayPointer(yv);
    double *ydot = N_VGetArrayPointer(ydotv);
    struct rates r;

    (void)t;
    rates(&s->k, y, s->h_guess, &r);
    s->h_guess = r.water.h;
    ydot[CHEM_CA] = r.calcite + r.dolomite;
    ydot[CHEM_MG] = r.dolomite;
    ydot[CHEM_CL] = 0.0;
    ydot[CHEM_C] = r.calcite + 2.0 * r.dolomite;
    ydot[CHEM_CALCITE] = -r.calcite;
    ydot[CHEM_DOLOMITE] = -r.dolomite;
    return 0;
}

/* The stoichiometry of rhs() below: calcite holds one Ca and one C,
 * dolomite one Ca, one Mg and two C. */
void chem_element_totals(const double state[CHEM_NSTATE],
                         double totals[CHEM_NELEMENTS])
{
    totals[CHEM_ELEMENT_CA] = state[CHEM_CA] + state[CHEM_CALCITE] +
                              state[CHEM_DOLOMITE];
    totals[CHEM_ELEMENT_MG] = state[CHEM_MG] + state[CHEM_DOLOMITE];
    totals[CHEM_ELEMENT_C] = state[CHEM_C] + state[CHEM_CALCITE] +
                             2.0 * state[CHEM_DOLOMITE];
}

double chem_ph(const double state[CHEM_NSTATE])
{
    struct constants k;
    struct rates r;

    constants_init(&k);
    rates(&k, state, 1e-8, &r);
    return -log10(r.water.g1 * r.water.h);   /* of the activity of H+ */
}

/* ---- CVODE ----------------------------------------------------------- */

/* CVODE reports failures through this handler: keep the text, so that
 * the caller can say which cell failed and why, instead of CVODE
 * printing to stderr on its own. */
static void keep_cvode_message(int code, const char *module,
                               const char *function, char *msg, void *data)
{
    struct chem_solver *s = data;

    if (code == CV_WARNING)
        return;
    snprintf(s->cvode_msg, sizeof(s->cvode_msg), "%s: %s: %s", module,
             function, msg);
}

static int cvode_check(struct chem_solver *s, int flag, const char *call,
                       struct rt_err *err)
{
    if (flag >= 0)
        return 0;
    return rt_fail(err, "%s failed (%s)%s%.300s", call,
                   CVodeGetReturnFlagName(flag), s->cvode_msg[0] ? ": " : "",
                   s->cvode_msg);
}

/* Name the input of a failed solve, so that it can be reproduced. */
static int solve_failed(const double in[CHEM_NSTATE], double dt,
                        struct rt_err *err)
{
    char what[sizeof(err->text)];

    snprintf(what, sizeof(what), "%s", err->text);
    return rt_fail(err, "%.300s; input Ca=%.17g Mg=%.17g Cl=%.17g C=%.17g "
                        "Calcite=%.17g Dolomite=%.17g dt=%.17g",
                   what, in[CHEM_CA], in[CHEM_MG], in[CHEM_CL], in[CHEM_C],
                   in[CHEM_CALCITE], in[CHEM_DOLOMITE], dt);
}

int chem_open(struct chem_solver **out, struct rt_err *err)
{
    struct chem_solver *s = calloc(1, sizeof(*s));
    int flag;

    *out = NULL;
    if (!s)
        return rt_fail(err, "out of memory for the chemistry solver");
    constants_init(&s->k);
    s->h_guess = 1e-8;
    if (SUNContext_Create(NULL, &s->ctx) != 0) {
        free(s);
        return rt_fail(err, "SUNContext_Create failed");
    }
    s->y = N_VNew_Serial(CHEM_NSTATE, s->ctx);
    s->abstol = N_VNew_Serial(CHEM_NSTATE, s->ctx);
    s->jac = SUNDenseMatrix(CHEM_NSTATE, CHEM_NSTATE, s->ctx);
    s->cvode = CVodeCreate(CV_BDF, s->ctx);
    if (!s->y || !s->abstol || !s->jac || !s->cvode) {
        chem_close(&s);
        return rt_fail(err, "out of memory for CVODE's vectors and matrix");
    }
    s->ls = SUNLinSol_Dense(s->y, s->jac, s->ctx);
    if (!s->ls) {
        chem_close(&s);
        return rt_fail(err, "SUNLinSol_Dense failed");
    }
    N_VConst(ATOL, s->abstol);
    N_VConst(0.0, s->y);
    if ((flag = CVodeSetErrHandlerFn(s->cvode, keep_cvode_message, s)) ||
        (flag = CVodeInit(s->cvode, rhs, 0.0, s->y)) ||
        (flag = CVodeSVtolerances(s->cvode, RTOL, s->abstol)) ||
        (flag = CVodeSetUserData(s->cvode, s)) ||
        (flag = CVodeSetLinearSolver(s->cvode, s->ls, s->jac)) ||
        (flag = CVodeSetMaxNumSteps(s->cvode, MAX_STEPS))) {
        cvode_check(s, flag, "setting up CVODE", err);
        chem_close(&s);
        return -1;
    }
    *out = s;
    return 0;
}

void chem_close(struct chem_solver **sp)
{
    struct chem_solver *s = *sp;

    if (!s)
        return;
    if (s->cvode)
        CVodeFree(&s->cvode);
    if (s->ls)
        SUNLinSolFree(s->ls);
    if (s->jac)
        SUNMatDestroy(s->jac);
    if (s->y)
        N_VDestroy(s->y);
    if (s->abstol)
        N_VDestroy(s->abstol);
    if (s->ctx)
        SUNContext_Free(&s->ctx);
    free(s);
    *sp = NULL;
}

/* Add what the last solve cost to the totals (CVodeReInit zeroes
 * CVODE's counters, so they are the last solve's). */
static int count_work(struct chem_solver *s, struct rt_err *err)
{
    long steps = 0, rhs_evals = 0, ls_rhs = 0, iters = 0, jacs = 0;
    int flag;

    if ((flag = CVodeGetNumSteps(s->cvode, &steps)) ||
        (flag = CVodeGetNumRhsEvals(s->cvode, &rhs_evals)) ||
        (flag = CVodeGetNumLinRhsEvals(s->cvode, &ls_rhs)) ||
        (flag = CVodeGetNumNonlinSolvIters(s->cvode, &iters)) ||
        (flag = CVodeGetNumJacEvals(s->cvode, &jacs)))
        return cvode_check(s, flag, "reading CVODE's counters", err);
    s->work.solves++;
    s->work.steps += (uint64_t)steps;
    s->work.rhs_evals += (uint64_t)(rhs_evals + ls_rhs);
    s->work.newton_iters += (uint64_t)iters;
    s->work.jac_evals += (uint64_t)jacs;
    return 0;
}

static double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int chem_solve(struct chem_solver *s, const double in[CHEM_NSTATE],
               double dt, double out[CHEM_NSTATE], struct rt_err *err)
{
    double *y = N_VGetArrayPointer(s->y);
    double start = seconds_now();
    sunrealtype t = 0.0;
    int flag;

    if (!(dt > 0.0))
        return rt_fail(err, "time step %g s is not positive", dt);
    for (int i = 0; i < CHEM_NSTATE; i++) {
        if (!(in[i] >= 0.0))   /* also NaN */
            return rt_fail(err, "%s = %g is not an amount (>= 0)",
                           chem_field_name[i], in[i]);
        y[i] = in[i];
    }
    /* Every solve starts from the same place, so its result depends on
     * its inputs alone, not on the cell solved before it. */
    s->h_guess = 1e-8;
    s->cvode_msg[0] = '\0';
    if ((flag = CVodeReInit(s->cvode, 0.0, s->y)) ||
        (flag = CVodeSetStopTime(s->cvode, dt)))
        return cvode_check(s, flag, "restarting CVODE for a cell", err);
    flag = CVode(s->cvode, dt, s->y, &t, CV_NORMAL);
    if (flag < 0) {
        cvode_check(s, flag, "CVode", err);
        return solve_failed(in, dt, err);
    }
    if (count_work(s, err))
        return -1;
    for (int i = 0; i < CHEM_NSTATE; i++)
        out[i] = nonneg(y[i]);
    s->work.seconds += seconds_now() - start;
    return 0;
}

void chem_work(const struct chem_solver *s, struct chem_work *w)
{
    *w = s->work;
}

int chem_initial_state(struct chem_solver *s, double state[CHEM_NSTATE],
                       struct rt_err *err)
{
    struct chem_work before = s->work;
    double water[CHEM_NSTATE] = {0};

    water[CHEM_CALCITE] = ROCK_CALCITE;
    if (chem_solve(s, water, EQUILIBRATION_S, state, err))
        return -1;
    /* this solve is set-up, not work of the simulation */
    s->work = before;
    return 0;
}

void chem_injected_state(double state[CHEM_NSTATE])
{
    memset(state, 0, CHEM_NSTATE * sizeof(state[0]));
    state[CHEM_MG] = INJECTED_MG;
    state[CHEM_CL] = INJECTED_CL;
}
