/* px_breakdown.h — a run's step time by class, predicted against measured,
 * from an `execute --report` file (its `predicted_class_s` and
 * `measured_class_s`, docs/executor.md): the rows `compare --breakdown`
 * prints, so that a cost the model misses shows as the row whose measured
 * time exceeds its prediction. */
#ifndef PX_BREAKDOWN_H
#define PX_BREAKDOWN_H

#include <stdio.h>

#include <jansson.h>

#include "px_error.h"
#include "px_report_io.h"

/* The executor's classes (executor/px_trace.h), in report-key order, then
 * "other": the measured time no traced span covers (host work between
 * kernels, the loss bookkeeping, barriers). */
enum { PX_BD_CLASSES = PX_REPORT_CLASSES, PX_BD_ROWS = PX_BD_CLASSES + 1 };

typedef struct {
    int ranks;
    double pred[PX_BD_ROWS];  /* seconds per step; other = step - sum of the classes */
    double meas[PX_BD_ROWS];  /* mean over the ranks of each rank's mean per timed step */
    /* The step is the report's own, the one compare's table shows:
     * predicted.step_time_s and measured.step_time_s (the median of the
     * slowest rank's timed steps), so one run has one measured step.  The
     * classes are means over the ranks; "other" is the rest up to that step
     * (the slowest rank's extra time included; negative where the ranks'
     * mean class time exceeds the median step). */
    double pred_step, meas_step;
} px_breakdown;

/* The report key of row i ("gemm" ... "optimizer", "other") and its label. */
const char *px_breakdown_key(int i);
const char *px_breakdown_label(int i);

/* The rows from a report read by px_report_file_read (path: its file, for
 * the message); an error when the report has no class objects (execute
 * writes them on the CPU backend). */
px_status px_breakdown_from_report(const px_report_file *rep, const char *path,
                                   px_breakdown *out, px_error *err);

/* The rows as text (one line per class, run label first) and as JSON
 * ({class: {predicted_s, measured_s, step_error}}; step_error = (pred -
 * meas) / measured step, the row's part of the step-time error). */
void px_breakdown_print(FILE *f, const char *label, int label_width, const px_breakdown *b);
json_t *px_breakdown_json(const px_breakdown *b);

#endif
