/* px_report.h — reading what `execute --report` writes (docs/executor.md):
 * the measured and the predicted step time, tokens/s, MFU, HFU and peak
 * memory of one run, for `compare` to tabulate.  Unknown keys are ignored
 * (the executor may add more); the ones read here must be present and of the
 * right type. */
#ifndef PX_REPORT_H
#define PX_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_plan.h"

typedef struct {
    double step_time_s;
    double tokens_per_s;
    double mfu;
    double hfu;
    int64_t peak_memory_bytes; /* the worst rank's */
} px_report_side;

typedef struct {
    char path[512];
    char label[128];      /* the run's split ("tp2 pp1 dp1 mb1x4 1f1b") or file stem */
    int world;            /* ranks, 0 when the report does not say */
    px_report_side measured;
    px_report_side predicted;
    int n_losses;
    /* px_report_label_apart's working fields */
    bool label_shared;
    char label_base[128], stem[128];
} px_report;

px_status px_report_read(const char *path, px_report *out, px_error *err);

/* Appends the report's file name (and a count where names repeat) to the
 * labels that several runs share, so that runs of one plan stay apart. */
void px_report_label_apart(px_report *runs, int n);

/* Reads the plan file a report names (as given, else beside the report). */
px_status px_report_read_plan(const char *report_path, px_plan *plan, px_error *err);

/* (predicted - measured) / measured; 0 when both are 0, +inf when only
 * measured is 0. */
double px_report_rel_err(double predicted, double measured);

#endif
