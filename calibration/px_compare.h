/* px_compare.h — predicted against measured for runs of `execute --report`
 * (docs/executor.md): the errors of each run, each rank against its own
 * pipeline stage, the limits' verdict, and the table, JSON and HTML that
 * `compare` prints. */
#ifndef PX_COMPARE_H
#define PX_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "px_breakdown.h"
#include "px_error.h"
#include "px_report.h"

/* Each rank against its own pipeline stage's prediction: execute's reports
 * carry per_rank_peak_memory_bytes, per_rank_stage and
 * per_rank_predicted_peak_memory_bytes (docs/executor.md).  The worst-stage
 * comparison alone lets a stage that is off hide behind another: with 1F1B
 * stage 0 holds the most micro-batches and the last stage the head, so the
 * worst measured rank and the worst predicted stage need not be the same
 * stage.  Reports without the arrays (older ones, hand-made ones) have no
 * per-rank check (n = 0).  The arrays belong to the report (px_report_free). */
typedef struct {
    int n;               /* ranks, 0: the report has no per-stage prediction */
    int *stage;          /* [n] */
    int64_t *pred_bytes; /* [n] the rank's stage's prediction */
    int64_t *meas_bytes; /* [n] */
    int worst;           /* the rank with the largest |error| */
    double worst_err;    /* its error (signed) */
} px_rank_mem;

/* The limits compare applies when none is given: the goals of the
 * calibration loop (docs/calibration.md), a step time within 25 % and a peak
 * memory within 10 % of the measured.  Memory is held tighter because the
 * planner refuses a layout on it: an under-prediction of 10 % is an
 * out-of-memory on a device the plan fills.  A run outside them is marked
 * "outside" and counted; the exit status is 1 only for a limit given on the
 * command line (--max-time-err, --max-mem-err), so a plain look at runs, or
 * a check of memory alone, does not fail on the other default. */
#define PX_COMPARE_DEFAULT_MAX_TIME_ERR 0.25
#define PX_COMPARE_DEFAULT_MAX_MEM_ERR 0.10

/* One run: its report and what compare derives from it. */
typedef struct {
    px_report report;
    px_rank_mem ranks;
    px_breakdown breakdown;            /* read with --breakdown only */
    double e_time, e_tok, e_mfu, e_mem; /* (predicted - measured) / measured */
    bool ok;                           /* within the limits */
    bool fails_given;                  /* outside a limit given on the command line */
    int n_steps;                       /* timed steps in step_times_s, 0: none usable */
    double step_min, step_max;         /* their range: the run's step-to-step noise */
} px_compare_run;

typedef struct {
    px_compare_run *runs;
    int n;
    double max_time, max_mem; /* the limits, fractions (given or the defaults) */
    bool time_given, mem_given; /* on the command line: only these decide the exit */
    bool breakdown;           /* the runs carry their time by class */
    int n_bad;                /* runs outside the limits (given or the defaults) */
    int n_fail;               /* runs outside a limit given on the command line */
    double worst_time, worst_mem, worst_rank; /* largest |errors| */
    bool any_rank;            /* a run has per-rank predictions */
} px_compare_set;

/* Reads one report into run: the report, its per-rank memory and (with
 * breakdown) its time by class.  Refuses a negative or non-finite step time
 * or peak memory on either side and malformed per-rank arrays, naming the
 * file and the field. */
px_status px_compare_read(const char *path, bool breakdown, px_compare_run *run, px_error *err);

/* A report names its plan file and the run is labelled from it; when that
 * file cannot be read the label silently becomes the report's file name.
 * Writes the warning that says so, with the reason, into buf and returns
 * true; false when the plan is readable or embedded. */
bool px_compare_plan_warning(const px_compare_run *run, const char *path, char *buf, size_t n);

/* Labels the runs apart, then each run's errors and verdict and the set's
 * worst errors. */
void px_compare_score(px_compare_set *set);

/* The table: a row per run, a row per rank against its stage where the
 * reports have them, the time by class with breakdown, and the summary. */
void px_compare_print(FILE *out, const px_compare_set *set);

/* The same content as a JSON object (sorted by the caller's dump). */
json_t *px_compare_json(const px_compare_set *set);

/* --csv: the table as CSV, a header row with the units in the column names
 * and one row per run (an infinite error, measured 0, is an empty field). */
void px_compare_csv(FILE *out, const px_compare_set *set);

/* --html: every run, in detail where its plan file can be read. */
px_status px_compare_html(const char *path, const px_compare_set *set, px_error *err);

/* Runs of one plan (the label they share, told apart by report name) that
 * disagree beyond their noise: the two medians (measured.step_time_s) differ
 * by more than the sum of the two runs' step-to-step ranges (max - min of
 * step_times_s, the slowest rank's timed steps).  Each run's median lies
 * within its own range, so runs of one plan on a steady machine stay inside
 * that bound; beyond it one of them ran on a different machine state (load,
 * clock, placement) and neither measurement stands for the plan.  Writes
 * one warning line per such pair to out and returns their count; runs
 * without two usable step times are not judged. */
int px_compare_repeat_warnings(FILE *out, const px_compare_set *set);

void px_compare_free(px_compare_set *set);

#endif
