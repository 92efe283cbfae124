/* px_validate.h — fidelity against published measurements: each row of a
 * published-runs file (schema: shared/data/README.md) becomes the `plan`
 * call the data README defines (px_row.h: the model, the hardware profile,
 * every published dimension fixed, precision, framework and release) and is
 * predicted by the very search `plan` runs; the prediction is compared on the
 * README's quantity (tokens/s per GPU, else MFU, else step time) and, for the
 * rows that publish them, on TFLOP/s by the row's own FLOP convention (HFU
 * rows count the recomputed forward, MFU rows do not) and on one layer's
 * times.  Errors are relative, per row, and summarised per group, per family
 * and overall.
 *
 * Library code: loading fills a caller-owned px_error, nothing is printed
 * except by px_validate_write_table into the FILE the caller passes. */
#ifndef PX_VALIDATE_H
#define PX_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "px_error.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"
#include "px_row.h"

/* The validation bounds (docs/validation.md): mean absolute relative error of predicted throughput
 * over every row with a measured throughput, and of any one group's rows. */
#define PX_VALIDATE_MAX_MAE 0.10
#define PX_VALIDATE_MAX_GROUP_MAE 0.15
/* Korthikanti's full-vs-selective recompute ratios (Table 4 layer times,
 * Table 5 step times) must be reproduced within this relative error. */
#define PX_VALIDATE_MAX_RATIO_ERR 0.05
/* The bounds the test suite keeps on published-runs.json through the data
 * README's plan calls (its usable rows, all precisions; families of 3 rows
 * or more): what the cost model achieves today, so that a change that makes
 * it worse fails (docs/validation.md says where the gap to the goals lies). */
#define PX_VALIDATE_RUNS_MAX_MEAN 0.16
#define PX_VALIDATE_RUNS_MAX_FAMILY 0.40
#define PX_VALIDATE_RUNS_MAX_REFUSED 0.01
/* The bounds kept on its low-precision and MoE rows */
#define PX_VALIDATE_LOWP_MAX_MEAN 0.14
#define PX_VALIDATE_LOWP_MAX_FAMILY 0.40
#define PX_VALIDATE_LOWP_MAX_REFUSED 0.01
/* A family's mean error is bounded from this many predicted rows on (as
 * shared/tools/published_runs.py --max-family does). */
#define PX_VALIDATE_FAMILY_MIN_ROWS 3

/* Which FLOPs a row's TFLOP/s counts. */
typedef enum {
    PX_VAL_CONV_MODEL = 0, /* MFU: model FLOPs (Korthikanti eq. 7, Megatron-Core) */
    PX_VAL_CONV_HW         /* HFU: hardware FLOPs, the recomputed forward counted
                            * (Narayanan eq. 3) */
} px_val_conv;

/* What a row's primary error is measured on. */
typedef enum {
    PX_VAL_ON_NONE = 0, /* nothing measured that the model predicts */
    PX_VAL_ON_TFLOPS,   /* TFLOP/s per GPU (throughput) */
    PX_VAL_ON_STEP,     /* step time only */
    PX_VAL_ON_LAYER     /* one layer's forward + backward time only */
} px_val_on;

/* One row: the README's plan call (px_row.h), its prediction, and what
 * validate compares beyond the README's quantity (TFLOP/s on the row's FLOP
 * convention, one layer's times). */
typedef struct {
    char id[96];
    char group[64];        /* the row's "group" ("?" when none) */
    bool mapped;           /* the plan call could be made (else note says why) */
    bool usable;           /* the README's usable rows (px_row_usable) */
    bool evaluated;        /* predicted */
    bool refused;          /* mapped and usable, but the planner refused it (note: its reason) */
    px_row_call call;      /* the plan call: model, hardware, options, compared quantity */
    px_row_result res;     /* the plan it predicted */
    px_val_conv conv;

    /* measured; < 0 when not published */
    double meas_tflops, meas_mfu, meas_hfu, meas_step_s, meas_tok_gpu;
    double meas_layer_fwd_s, meas_layer_bwd_s;

    /* predicted */
    double pred_tflops;    /* on the row's convention */
    double pred_tok_gpu;
    double pred_layer_fwd_s, pred_layer_bwd_s;
    px_val_on on;
    double err;            /* relative error of the primary metric: (pred − meas) / meas */
    double err_step;       /* relative error of the step time, 0 if not measured */
    bool fam_on;           /* the README's quantity compared (usable and predicted) */
    double fam_err;        /* its error, + = predicted too fast (res.err) */
    char note[1100];       /* why a row could not be evaluated, or an assumption taken */
} px_val_row;

/* Errors of one family of rows of the published-runs schema. */
typedef struct {
    char name[96];
    int n_usable, n_pred, n_refused;
    bool all_lowp_moe;      /* every row of it low-precision or MoE */
    double mean_abs, bias;  /* mean |fam_err| and mean fam_err over the predicted */
    double worst_abs;
    char worst_id[96];
} px_val_family;

/* Mean and worst absolute relative error over a set of rows. */
typedef struct {
    char name[64];
    int n;
    double mean_abs;
    double worst_abs;
    char worst_id[96];
} px_val_stat;

/* A full-vs-selective recompute pair: ratio of their times (step or layer). */
typedef struct {
    int full_row, sel_row;  /* indices into rows */
    double meas_ratio, pred_ratio, err;
} px_val_ratio;

#define PX_VALIDATE_MAX_GROUPS 32
#define PX_VALIDATE_MAX_RATIOS 32
#define PX_VALIDATE_MAX_FAMILIES 64

typedef struct {
    char path[512];
    char profiles_dir[512]; /* "" = the default */
    int n_rows;
    px_val_row *rows;      /* owned; px_validate_free releases it */
    int n_groups;
    px_val_stat groups[PX_VALIDATE_MAX_GROUPS]; /* primary metric, by group */
    px_val_stat overall_tflops;                 /* every row with a measured TFLOP/s */
    px_val_stat overall_step;                   /* every row with a measured step time */
    int n_ratios;
    px_val_ratio ratios[PX_VALIDATE_MAX_RATIOS];
    double worst_ratio_err;
    /* the published-runs families (bf16/fp16 and fp8 alike) and the total
     * over every usable row */
    int n_families;
    px_val_family families[PX_VALIDATE_MAX_FAMILIES];
    px_val_family all_usable;
    px_val_family all_lowp_moe;                 /* the usable low-precision (fp8) and MoE rows */
} px_val_report;

/* Bounds on the families of a published-runs file (id prefix / GPU, as
 * shared/tools/published_runs.py groups them): the mean |error| over every
 * predicted usable row (all_usable), every family's, and the fraction of
 * usable rows refused.  why (may be NULL) names the first failure. */
bool px_validate_family_bounds(const px_val_report *r, double max_mean, double max_family,
                               double max_refused, char *why, int why_len);

/* The mean and refused bounds on the low-precision (not bf16 / fp16) and
 * MoE rows together (all_lowp_moe); max_family bounds the families made of
 * such rows only. */
bool px_validate_lowp_moe_bounds(const px_val_report *r, double max_mean, double max_family,
                                 double max_refused, char *why, int why_len);

/* Reads the rows of `path` (a JSON array of published runs) and maps each
 * to its plan call (px_row_map; profiles_dir may be NULL for the default);
 * rows the mapping cannot make a call of are kept with a note and not
 * evaluated. */
px_status px_validate_load(const char *path, const char *profiles_dir, px_val_report *out,
                           px_error *err);

/* Predicts every mapped row by the search `plan` runs (px_row_predict), fills
 * the per-row errors, the group, family and overall statistics and the
 * recompute ratios.  A row the planner refuses keeps its reason in note. */
px_status px_validate_run(px_val_report *r, px_error *err);

/* Load + run. */
px_status px_validate_file(const char *path, const char *profiles_dir, px_val_report *out,
                           px_error *err);

void px_validate_free(px_val_report *r);

/* True when the validation bounds hold: overall throughput MAE, every group's
 * MAE and every recompute ratio.  why (may be NULL) names the first failure. */
bool px_validate_within_bounds(const px_val_report *r, char *why, int why_len);

/* The fixed-column tables (rows, layer times, recompute ratios, groups),
 * '#'-prefixed metadata first. */
void px_validate_write_table(const px_val_report *r, FILE *out);

/* The cost model's breakdown (px_cost_detail) of row `id`'s predicted
 * configuration, one quantity a line.  PX_ERR_NOT_FOUND for an unknown or
 * unevaluated id. */
px_status px_validate_explain(const px_val_report *r, const char *id, FILE *out, px_error *err);

/* The same as JSON (sorted keys) to `out`. */
px_status px_validate_write_json(const px_val_report *r, FILE *out, px_error *err);

/* The published file next to the source tree
 * ($PARALLAX_SOURCE_ROOT/../shared/data/published-megatron.json, else the
 * compiled-in source root's), falling back to the copy under
 * tests/validate/data/.  Writes the path into buf. */
void px_validate_default_path(char *buf, int buf_len);

#endif
