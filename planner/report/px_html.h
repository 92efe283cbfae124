/* px_html.h — the HTML report of `plan --html` and `compare --html`: one
 * self-contained page (inline SVG and CSS; no script, image, font or
 * stylesheet loaded from anywhere) with, for each run drawn in detail, the
 * pipeline timeline per stage (the executor's op order, px_timeline_build,
 * timed with the cost model's per-stage times), the per-stage memory as
 * stacked bars against the HBM limit and the step's time breakdown; the runs
 * side by side; predicted vs measured where a run was measured.  The page's
 * elements carry data- attributes (stage, bytes, seconds) so that tests can
 * read the numbers back (docs/html-report.md). */
#ifndef PX_HTML_H
#define PX_HTML_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"

typedef struct {
    const char *label;            /* "#1 (chosen)": a plan's position, or a run's label */
    const px_model *model;
    const px_hw *hw;
    const px_parallel *par;       /* NULL: a measured run without its plan (a row only) */
    const px_prediction *pred;
    /* how the framework runs it (px_framework.h), for the detail's cost
     * model as the search costed it; NULL: the planner's defaults */
    const struct px_fw_runtime *run;
    /* the plan file's per-stage prediction (par->pp stages), drawn as
     * recorded: the memory bars and each stage's micro-batch time come from
     * it, not from the cost model again; NULL: costed here under run */
    const px_stage_prediction *stages;
    bool detail;                  /* draw its timeline, memory and time breakdown */
    bool has_measured;            /* an `execute --report` gave the numbers below */
    double meas_step_s, meas_tokens_per_s, meas_mfu;
    int64_t meas_peak_bytes;      /* the worst rank's */
    /* the prediction the measurement is compared against (the report's own,
     * which `compare` tabulates; pred's when the caller copies them) */
    double cmp_step_s, cmp_tokens_per_s, cmp_mfu;
    int64_t cmp_peak_bytes;
} px_html_run;

/* Writes the page to path atomically.  title and subtitle are plain text
 * (escaped here). */
px_status px_html_write(const char *path, const char *title, const char *subtitle,
                        const px_html_run *runs, int n_runs, px_error *err);

/* One point of a sweep (plan --sweep): its value along x, the series it
 * belongs to (the other swept keys' values, "" for none) and the best
 * plan's numbers, or the reason it has none. */
typedef struct {
    char x[64];
    char series[192];
    bool ok;
    char layout[160]; /* the best plan's layout in words */
    double step_s, tokens_per_s, mfu;
    int64_t mem_bytes; /* per GPU, the worst stage */
    char reason[512];
} px_html_sweep_point;

/* Writes the sweep's page to path atomically: step time, MFU and memory
 * against x (x_key names it), one line a series, and every point in a
 * table. */
px_status px_html_sweep_write(const char *path, const char *title, const char *subtitle,
                              const char *x_key, const px_html_sweep_point *pts, int n,
                              px_error *err);

#endif
