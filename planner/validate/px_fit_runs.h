/* px_fit_runs.h — `calibrate --from-runs`: measured runs of the
 * published-runs schema (shared/data/README.md) fitted into a hardware and a
 * framework profile (px_fit.h), each run predicted through the one row ->
 * plan mapping (px_row.h) on the base profiles given, not the row's GPU's.
 * Used by `calibrate` and by the C API (parallax_calibrate_from_runs). */
#ifndef PX_FIT_RUNS_H
#define PX_FIT_RUNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "px_error.h"
#include "px_fit.h"
#include "px_row.h"

typedef struct {
    const char *hw;           /* base hardware profile: a name or a path */
    const char *framework;    /* base framework profile: a name or a path */
    const char *profiles_dir; /* hw_profiles/ (NULL: the default) */
    int max_factors;          /* 0: as many as runs (px_fit.h) */
    bool leave_one_out;
} px_fit_runs_opts;

typedef struct {
    int n_runs;
    px_row_call *calls;       /* owned: the runs as `plan` calls */
    px_fit_result *fit;       /* owned */
    json_t *hw_doc, *fw_doc;  /* the fitted profiles as profile files hold them */
} px_fit_runs_result;

/* Fits the rows (a JSON array; file names it in messages: a row that is not
 * usable or that the mapping refuses is an error naming the file, the row
 * and the field). */
px_status px_fit_runs(json_t *rows, const char *file, const px_fit_runs_opts *o,
                      px_fit_runs_result *out, px_error *err);

void px_fit_runs_free(px_fit_runs_result *r);

/* The fit as a table: each factor before and after with its bounds, each
 * run's error before and after and left out. */
void px_fit_runs_write_table(const px_fit_runs_result *r, FILE *out);

/* The same as JSON (a new reference; NULL when out of memory). */
json_t *px_fit_runs_table_json(const px_fit_runs_result *r);

#endif
