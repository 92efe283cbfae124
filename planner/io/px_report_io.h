/* px_report_io.h — the report file that `execute --report` writes
 * (docs/executor.md): its schema version, the names of its time classes and
 * the one reader every C consumer (compare, its --breakdown and --html, the
 * calibration loop) goes through.  Keys read here must be present and of the
 * right type; keys not read are ignored (the executor may add more). */
#ifndef PX_REPORT_IO_H
#define PX_REPORT_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"

/* 1: the keys of docs/executor.md ("The report"); a report without
 * schema_version is read as version 1 (its keys are the same). */
#define PX_REPORT_VERSION 1

/* The step time by class: the executor's trace classes in report-key order
 * ("gemm", "attention", "elementwise", "comm", "p2p", "optimizer"). */
enum { PX_REPORT_CLASSES = 6 };
const char *px_report_class_key(int c);

/* One side of the comparison: "measured" or "predicted". */
typedef struct {
    double step_time_s;
    double tokens_per_s;
    double mfu;
    double hfu;
    int64_t peak_memory_bytes; /* the worst rank's (measured), the worst stage's (predicted) */
} px_report_side;

/* Each rank against its own pipeline stage (per_rank_peak_memory_bytes,
 * per_rank_stage, per_rank_predicted_peak_memory_bytes); n = 0 when the
 * report has no per-stage prediction. */
typedef struct {
    int n;
    int *stage;          /* [n] */
    int64_t *pred_bytes; /* [n] the rank's stage's prediction */
    int64_t *meas_bytes; /* [n] */
} px_report_ranks;

/* measured_class_s (per rank, then its step) and predicted_class_s. */
typedef struct {
    int ranks;
    double meas[PX_REPORT_CLASSES]; /* mean over the ranks, seconds per step */
    double meas_step;
    double pred[PX_REPORT_CLASSES];
    double pred_step;
} px_report_classes;

typedef struct {
    int schema_version;
    char plan[1024];      /* the plan file it ran ("" when not named) */
    int world;            /* world_size; 0 when the report does not say */
    int n_losses;
    px_report_side measured, predicted;
    px_report_ranks ranks;
    bool has_classes;     /* both class objects present */
    px_report_classes classes;
    struct json_t *root;  /* the whole document, for labels from an embedded parallel */
} px_report_file;

/* Reads and checks the report at path.  Errors name the file and the field.
 * px_report_file_free releases it (also after an error). */
px_status px_report_file_read(const char *path, px_report_file *out, px_error *err);
void px_report_file_free(px_report_file *r);

#endif
