/* px_partition_internal.h — what the partitioner's modules share: the
 * constants of the problem, the GLPK program's layout, the heuristic's
 * result and the helpers of more than one pass.  Not part of the API
 * (px_partition.h is). */
#ifndef PX_PARTITION_INTERNAL_H
#define PX_PARTITION_INTERNAL_H

#include <stdbool.h>
#include <time.h>

#include "px_milp.h"
#include "px_partition.h"

#define R_COUNT PX_RECOMPUTE_COUNT
#define ALL_RECOMPUTE ((1u << R_COUNT) - 1u)

/* A stage fits when its memory is within limit x (1 + MEM_TOL_REL).  GLPK
 * satisfies rows to about 1e-7 of the limit (px_milp rejects anything off by
 * more than 1e-6), so a split it returns must not be refused over a few
 * hundred bytes in 80 GB, which no memory model resolves anyway; the brute
 * force applies the same rule. */
#define MEM_TOL_REL 1e-6

/* Above this many integer variables the program is not worth handing to GLPK
 * inside a planner loop; the caller keeps the uniform split. */
#define MAX_INTEGERS 200000

#define GB(x) ((double)(x) / 1e9)

/* Largest p * (L+1)^2 for which the one-chunk-per-stage DP runs. */
#define DP_MAX_ARCS 1500000

/* Formulation (docs/partition.md): consecutive identical layers form runs;
 * a chunk boundary is placed by choosing the run it falls in (binary u) and
 * its offset inside the run (integer off); each (run, chunk) pair gets an
 * integer count per recompute choice.  Counting instead of placing layer by
 * layer removes the symmetry between identical layers (which of nine equal
 * layers recomputes does not matter) that makes branch-and-bound hopeless on
 * a per-layer model of a 32- or 80-layer transformer.  With every run one
 * layer long it is the per-layer model. */

typedef enum { BUILD_TIME, BUILD_OVERFLOW } build_mode;

typedef struct {
    const px_partition_problem *pb;
    px_milp *mp;
    int L, C, p, K;
    int *run_first; /* [K + 1]: G_k, first layer of run k; run_first[K] = L */
    int *u;         /* [c * K + k]: boundary c (1..C-1) falls in run k, or -1 */
    int *off;       /* [c * K + k]: its offset inside run k, or -1 (0) */
    int *n;         /* [(k * C + c) * R + r]: layers of run k in chunk c with choice r, or -1 */
    int t_col, e_col;
    int p_col;     /* peak memory share: every stage's memory / limit <= P <= 1 */
    int tc_col;    /* slowest chunk (objective with interleaving), or -1 */
    int j_row;     /* the objective wt T + wc Tc, bounded in the later passes */
    int rc_row;    /* recompute time <= (bound set for the third pass) */
    double wt, wc; /* objective weights */
    double tscale, mscale;
    int *rc; /* scratch for one row */
    double *rv;
    int rn, rcap;
    bool row_overflow;
} model;

/* The objective of the second pass: time spent recomputing. */
typedef enum { OBJ_TIME, OBJ_RECOMPUTE, OBJ_PEAK } objective;

typedef struct {
    bool have_split; /* split holds a feasible split (with recompute) */
    double lower_s;  /* valid lower bound on T (0 when unknown) */
    bool clock_hit;  /* the DP gave up at its deadline (no bound) */
} heuristic;

/* px_partition.c */
bool px_part_mem_fits(const px_partition_problem *pb, double mem);
bool px_part_allowed(const px_partition_problem *pb, int r);
double px_part_stage_mem(const px_partition_problem *pb, int s, int64_t static_sum,
                         int64_t act_sum);
/* The fewest layers j in [0, jmax] at the middle recompute choice with which
 * stage s fits under cap and the program's limit, or -1.  The stage holds
 * static_sum static bytes and act0 + j act_step activation bytes (act_step
 * < 0: a middle layer in place of a fastest one keeps less), so its memory
 * falls linearly with j: the closed form, then checked a layer either way.
 * The exact passes for identical layers (px_partition_same.c,
 * px_partition_chunks.c) share it. */
int px_part_fewest_mid(const px_partition_problem *pb, int s, int64_t static_sum, int64_t act0,
                       int64_t act_step, int jmax, double cap);
/* The least sum over the p stages of g[s][n_s] (row s at g + s g_stride)
 * with the counts n_s adding up to L and lo[s] <= n_s <= hi[s]: a DP over
 * (stage, layers so far).  The counts in n_out (may be NULL); INFINITY when
 * none.  d, arg: scratch of p (L + 1).  The exact passes' least
 * recomputation (px_partition_same.c, px_partition_chunks.c). */
double px_part_sum_dp(int p, int L, const double *g, int g_stride, const int *lo, const int *hi,
                      double *d, int *arg, int *n_out);
double px_part_stage_fixed_time(const px_partition_problem *pb, int s);
double px_part_chunk_fixed_time(const px_partition_problem *pb, int c);
void px_part_objective_weights(const px_partition_problem *pb, double *wt, double *wc);
double px_part_objective_of(const px_partition_problem *pb, double t, double tc);
double px_part_fastest_time(const px_partition_problem *pb, int i);
void px_part_clear_solver_fields(px_partition_solution *sol);
void px_part_format_recompute(const px_partition_problem *pb, const px_partition_solution *sol,
                              char *buf, int buf_len);
/* Every solver's start: *o is opts, or the defaults (written into *defaults)
 * when opts is NULL; refuses options out of range and an invalid problem. */
px_status px_part_begin(const px_partition_problem *pb, const px_partition_opts *opts,
                        px_partition_opts *defaults, const px_partition_opts **o,
                        px_error *err);

/* px_partition_bound.c */
int px_part_layer_hull(const px_partition_problem *pb, int i, int *pts);
void px_part_find_heuristic(const px_partition_problem *pb, px_partition_solution *split,
                            heuristic *h, const struct timespec *t0, double deadline_s);
px_status px_part_explain_infeasible(const px_partition_problem *pb, const px_partition_opts *o,
                                     double time_left_s, px_partition_solution *sol, px_error *err);
/* PX_ERR_INFEASIBLE naming sol (the split that overflows least; `what`
 * says how it was found: "best attempt", ...), its fullest stage and the
 * overflow. */
px_status px_part_infeasible_error(const px_partition_problem *pb,
                                   const px_partition_solution *sol, const char *what,
                                   px_error *err);

/* px_partition_exact.c */
bool px_part_exact_peak_dp(const px_partition_problem *pb, double t_cap,
                           px_partition_solution *sol);
bool px_part_wants_peak_pass(const px_partition_problem *pb, const px_partition_opts *o);
bool px_part_solve_exact(const px_partition_problem *pb, const px_partition_opts *o,
                         const px_partition_solution *start, px_partition_solution *sol);
bool px_part_solve_interleaved_exact(const px_partition_problem *pb, const px_partition_opts *o,
                                     px_partition_solution *sol);

/* px_partition_same.c */
bool px_part_solve_same_layers(const px_partition_problem *pb, const px_partition_opts *o,
                               px_partition_solution *sol);

/* px_partition_chunks.c: interleaving with identical layers and
 * recomputation; start (may be NULL) is a split whose objective bounds the
 * search.  False with *none_fits set: proven that no split fits, sol holds
 * the one that overflows least. */
bool px_part_solve_chunks_exact(const px_partition_problem *pb, const px_partition_opts *o,
                                const px_partition_solution *start, px_partition_solution *sol,
                                bool *none_fits);

/* px_partition_milp.c */
bool px_part_identical_layers(const px_partition_problem *pb, int i, int j);
bool px_part_dominated(const px_partition_problem *pb, int i, int r);
void px_part_model_free(model *m);
px_status px_part_model_build(model *m, const px_partition_problem *pb, build_mode mode,
                              px_error *err);
px_status px_part_model_decode(const model *m, px_partition_solution *sol, px_error *err);
void px_part_model_set_objective(model *m, objective which);
double px_part_elapsed_since(const struct timespec *t0);

#endif
