/* px_fit.h — fitting a hardware and a framework profile to a cluster's own
 * measured runs (`calibrate --from-runs`, docs/calibration.md).
 *
 * A few physically named factors, each a field of the profiles
 * (px_hw_fit_fields, px_framework_fit_fields), are fitted in a fixed order,
 * as many as there are runs and only those the runs exercise:
 *   1 gemm_eff_scale         multiplier on the GEMM rates       0.5 .. 1.25 x base
 *   2 step_overhead_s        seconds a step                     0 .. half the shortest step
 *   3 inter_bw               inter-node bandwidth               0.25 .. 2 x base
 *   4 microbatch_overhead_s  seconds a micro-batch              0 .. a quarter of the
 *                                                               shortest micro-batch
 *   5 attn_eff_scale         multiplier on the attention rate   0.5 .. 1.5 x base
 *   6 intra_bw               intra-node bandwidth               0.25 .. 1.5 x base
 * With three or more runs the count fitted (1 up to one a run) is the one
 * whose leave-one-out error (each run predicted from a fit on the others) is
 * least, a further factor counting only when it lowers that error by
 * PX_FIT_LOO_GAIN; with one or two runs, one factor a run.
 * The fit minimises the sum over runs of the squared log error of the
 * compared quantity (a rate: tokens/s per GPU, MFU, or 1 / step time) by a
 * bounded, deterministic Nelder-Mead search, and never ends worse on its own
 * runs than the base profiles (it keeps the base when it would).  Each run is
 * predicted by a caller's function: the planner's own prediction of the run's
 * `plan` call under the profiles being tried. */
#ifndef PX_FIT_H
#define PX_FIT_H

#include <stdbool.h>

#include "px_error.h"
#include "px_framework.h"
#include "px_hw.h"

#define PX_FIT_MAX_RUNS 32

typedef enum {
    PX_FIT_GEMM = 0,
    PX_FIT_STEP_OVERHEAD,
    PX_FIT_INTER_BW,
    PX_FIT_MICROBATCH_OVERHEAD,
    PX_FIT_ATTN,
    PX_FIT_INTRA_BW,
    PX_FIT_FACTOR_COUNT
} px_fit_factor;

/* The profile field a factor fits ("gemm_eff_scale", ...). */
const char *px_fit_factor_field(px_fit_factor f);

/* One run's prediction under the profiles being tried. */
typedef struct {
    double rate;    /* the compared quantity, larger = faster (tokens/s per GPU, MFU,
                     * or 1 / step time: the same kind as the run's measurement) */
    double step_s;  /* the predicted step time */
    int n_micro;    /* micro-batches a step of the predicted configuration */
} px_fit_pred;

typedef px_status (*px_fit_predict_fn)(void *ctx, int run, const px_hw *hw,
                                       const px_framework *fw, px_fit_pred *out,
                                       px_error *err);

typedef struct {
    int n_runs;
    const char *ids[PX_FIT_MAX_RUNS];   /* for the provenance */
    double measured[PX_FIT_MAX_RUNS];   /* the compared quantity as a rate */
    px_fit_predict_fn predict;
    void *ctx;
    const px_hw *hw;                    /* the base profiles */
    const px_framework *fw;
    const char *hw_base, *fw_base;      /* their names or paths, as given */
    int max_factors;                    /* 0: chosen by the leave-one-out error, at most
                                         * one a run; N: exactly min(N, runs) */
} px_fit_problem;

/* A further factor is fitted only when it lowers the leave-one-out RMS log
 * error by this fraction (px_fit.c, choose_fit). */
#define PX_FIT_LOO_GAIN 0.2

/* Stopping rule of the search, in the unit cube the bounds map to: the
 * simplex's extent below this in every coordinate (docs/calibration.md says
 * what it means for a factor). */
#define PX_FIT_TOL_U 1e-6
/* ... and for the leave-one-out fits, which only compare counts of factors
 * and predict a run left out to well within its error. */
#define PX_FIT_TOL_U_LOO 1e-3

typedef struct {
    int n_factors;
    px_fit_factor factor[PX_FIT_FACTOR_COUNT];
    double base[PX_FIT_FACTOR_COUNT], fitted[PX_FIT_FACTOR_COUNT]; /* field values */
    double lo[PX_FIT_FACTOR_COUNT], hi[PX_FIT_FACTOR_COUNT];       /* field bounds */
    bool skipped[PX_FIT_FACTOR_COUNT]; /* by factor: not exercised by the runs */
    double pred_base[PX_FIT_MAX_RUNS], pred_fit[PX_FIT_MAX_RUNS];
    double loo_pred[PX_FIT_MAX_RUNS];  /* each run from a fit on the others
                                        * (0: fewer than 2 runs) */
    double sse_base, sse_fit;          /* sum of squared log errors */
    bool kept_base;                    /* the fit would not improve: base kept */
    int evaluations;                   /* predictions of the whole set of runs */
    int n_counts_tried;                /* factor counts 1..n tried (3 or more runs) */
    double loo_by_count[PX_FIT_FACTOR_COUNT + 1]; /* leave-one-out RMS log error of
                                                   * each count tried */
    px_hw hw;                          /* the fitted profiles, with provenance */
    px_framework fw;
} px_fit_result;

/* Fits, fills *out (caller-owned; large: allocate it).  leave_one_out: also
 * the leave-one-out predictions. */
px_status px_fit_run(const px_fit_problem *p, bool leave_one_out, px_fit_result *out,
                     px_error *err);

#endif
