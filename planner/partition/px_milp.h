/* px_milp.h — a small mixed-integer linear program and the one wrapper around
 * GLPK.  px_milp.c is the only file of Parallax that includes <glpk.h>; every
 * other module builds its program through this interface.
 *
 * Why a wrapper and not GLPK directly: GLPK calls abort() on bad input
 * (an index out of range, a duplicate matrix entry, a bound on the wrong side)
 * and prints to stdout.  Here the program is first collected in plain arrays
 * and validated (sizes, indices, finite numbers, bounds, duplicates), and GLPK
 * is only touched inside px_milp_solve, under an error hook that longjmps
 * back, with terminal output captured instead of printed.  A solve always
 * runs with a time limit and a relative gap, and both GLPK status checks are
 * made (the return code of glp_intopt and glp_mip_status).
 *
 * The work limit: the clock makes a solve that stops early depend on the
 * machine and its load (the same program can return another split), so a
 * caller that wants the same answer everywhere bounds the search by its
 * work instead, counted in simplex iterations times the constraint matrix's
 * nonzeros (each iteration prices and ratio-tests the whole matrix at
 * worst), and keeps the time limit as a backstop.
 *
 * The program minimises c'x subject to lo <= A x <= hi and lb <= x <= ub,
 * with some columns integer or binary.  Indices are 0-based. */
#ifndef PX_MILP_H
#define PX_MILP_H

#include <stdbool.h>

#include "px_error.h"

typedef enum {
    PX_MILP_CONTINUOUS = 0,
    PX_MILP_INTEGER,
    PX_MILP_BINARY /* integer in [0, 1]; bounds may narrow it to a constant */
} px_milp_kind;

/* What a solve ended with. */
typedef enum {
    PX_MILP_OPTIMAL = 0,  /* proven optimal within the gap */
    PX_MILP_FEASIBLE,     /* an incumbent, not proven optimal (work or time limit) */
    PX_MILP_INFEASIBLE,   /* proven to have no integer solution */
    PX_MILP_NO_SOLUTION,  /* stopped (work or time limit) before any integer solution */
    PX_MILP_FAILED        /* GLPK error or numerical failure */
} px_milp_outcome;

typedef struct px_milp px_milp; /* opaque */

typedef struct {
    double time_limit_s; /* wall-clock limit of one solve; default PX_MILP_DEFAULT_TIME_LIMIT_S */
    double work_limit;   /* simplex iterations x nonzeros one solve may spend; 0 (default): none */
    double mip_gap;      /* relative gap at which to stop; default PX_MILP_DEFAULT_GAP */
    bool presolve;       /* GLPK's MIP presolver; default true */
    bool cuts;           /* Gomory, MIR and clique cuts; default true */
} px_milp_opts;

/* The defaults: a planner solves many small programs, so a few seconds each
 * is plenty; a gap of 1e-4 is far below the cost model's own accuracy. */
#define PX_MILP_DEFAULT_TIME_LIMIT_S 10.0
#define PX_MILP_DEFAULT_GAP 1e-4

typedef struct {
    px_milp_outcome outcome;
    double objective;   /* of the returned solution (OPTIMAL / FEASIBLE) */
    double gap;         /* relative gap GLPK reported last; 0 when proven, -1 unknown */
    bool limit_hit;     /* stopped by the work or the time limit */
    bool work_limit_hit;/* of those, by the work limit */
    double work;        /* simplex iterations x nonzeros spent (the work limit's unit) */
    double solve_s;     /* wall-clock seconds spent in GLPK */
    int glpk_ret;       /* glp_intopt's return code (diagnostics) */
    int glpk_status;    /* glp_mip_status (diagnostics) */
    double max_row_violation; /* of the returned solution, relative to max(1, |bound|) */
    bool retried;       /* the first run raised or broke a row; rerun without presolve and cuts */
} px_milp_result;

void px_milp_opts_init(px_milp_opts *o);

/* Creates an empty program.  Free with px_milp_free. */
px_status px_milp_new(px_milp **out, px_error *err);
void px_milp_free(px_milp *mp);

/* Adds a column (variable) with bounds [lb, ub] (-INFINITY / INFINITY for
 * none; integer and binary bounds must be whole numbers) and objective
 * coefficient obj.  name is optional (for px_milp_write_lp).  *col gets its
 * index. */
px_status px_milp_add_col(px_milp *mp, const char *name, px_milp_kind kind, double lb,
                          double ub, double obj, int *col, px_error *err);

/* Adds a row lo <= sum vals[k] * x[cols[k]] <= hi (either side infinite for a
 * one-sided row).  Columns must exist already and appear once.  *row (may be
 * NULL) gets its index. */
px_status px_milp_add_row(px_milp *mp, const char *name, double lo, double hi, int n,
                          const int *cols, const double *vals, int *row, px_error *err);

/* Changes a column's objective coefficient or bounds (for a second,
 * lexicographic pass over the same program). */
px_status px_milp_set_obj(px_milp *mp, int col, double obj, px_error *err);
px_status px_milp_set_col_bounds(px_milp *mp, int col, double lb, double ub, px_error *err);
px_status px_milp_set_row_bounds(px_milp *mp, int row, double lo, double hi, px_error *err);

int px_milp_n_cols(const px_milp *mp);
int px_milp_n_rows(const px_milp *mp);
int px_milp_n_nonzeros(const px_milp *mp);

/* Solves (minimisation).  When GLPK raises an error or returns a point that
 * breaks a row by more than 1e-6 (relative; its MIP presolver checks some
 * rows to only 1e-3), the solve is rerun once without presolve and cuts.
 * Returns PX_OK when a solution is available
 * (res->outcome OPTIMAL, or FEASIBLE when a limit stopped the search:
 * the caller must treat it as not proven); PX_ERR_INFEASIBLE when the program
 * has no integer solution; PX_ERR_SOLVER when a limit passed before any
 * integer solution was found, or GLPK failed (err says which, with GLPK's own
 * message when it raised an error); PX_ERR_INVALID for bad options. opts may
 * be NULL for the defaults. */
px_status px_milp_solve(px_milp *mp, const px_milp_opts *opts, px_milp_result *res,
                        px_error *err);

/* "work limit" or "time limit": which stopped a solve (res->limit_hit). */
const char *px_milp_limit_name(const px_milp_result *res);

/* Value of column col in the last successful solve (integer columns exactly
 * whole); NAN when there is none. */
double px_milp_value(const px_milp *mp, int col);

/* Writes the program in CPLEX LP format (debugging). */
px_status px_milp_write_lp(const px_milp *mp, const char *path, px_error *err);

/* Drives GLPK into one of its own errors on purpose, under the same guard
 * px_milp_solve uses, and returns the PX_ERR_SOLVER that the guard produces
 * (PX_ERR_INTERNAL if GLPK did not raise).  A self-check for tests: it proves
 * that a GLPK error becomes a message instead of an abort, and that GLPK
 * works again afterwards. */
px_status px_milp_check_error_guard(px_error *err);

#endif
