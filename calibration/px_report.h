/* px_report.h — a run of `execute --report` as `compare` tabulates it: the
 * report (read by px_report_io.h, the one reader of the file) and a label
 * naming the run's split. */
#ifndef PX_REPORT_H
#define PX_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_plan.h"
#include "px_report_io.h"

typedef struct {
    char path[512];
    char label[128];      /* the run's split ("tp2 pp1 dp1 mb1x4 1f1b") or file stem */
    int world;            /* ranks, 0 when the report does not say */
    px_report_side measured;
    px_report_side predicted;
    int n_losses;
    px_report_file file;  /* the whole report as read (px_report_io.h); px_report_free */
    /* px_report_label_apart's working fields */
    bool label_shared;
    char label_base[128], stem[128];
} px_report;

/* Reads the report through px_report_file_read and labels the run. */
px_status px_report_read(const char *path, px_report *out, px_error *err);
void px_report_free(px_report *r);

/* Appends the report's file name (and a count where names repeat) to the
 * labels that several runs share, so that runs of one plan stay apart. */
void px_report_label_apart(px_report *runs, int n);

/* Reads the plan file a report names (as given, else beside the report). */
px_status px_report_read_plan(const char *report_path, px_plan *plan, px_error *err);

/* (predicted - measured) / measured; 0 when both are 0, +inf when only
 * measured is 0. */
double px_report_rel_err(double predicted, double measured);

#endif
