/* px_report_io.c — reading execute's report (see px_report_io.h). */
#include "px_report_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *const CLASS_KEYS[PX_REPORT_CLASSES] = {"gemm", "attention", "elementwise",
                                                          "comm", "p2p",       "optimizer"};

const char *px_report_class_key(int c)
{
    return c >= 0 && c < PX_REPORT_CLASSES ? CLASS_KEYS[c] : "?";
}

/* Bounds of a report's numbers, so that compare's errors and breakdown are
 * printable: seconds up to 1e6 (a step of 11.6 days), a measured step of at
 * least 1 ns (it divides every error), rates and fractions finite. */
#define REPORT_MAX_S 1e6
#define REPORT_MIN_STEP_S 1e-9

static px_status get_number(json_t *obj, const char *side, const char *key, double lo,
                            double hi, double *out, const char *path, px_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "%s.%s: missing (a number)",
                            side, key);
    if (!json_is_number(v))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "%s.%s: not a number", side,
                            key);
    *out = json_number_value(v);
    if (!(*out >= lo && *out <= hi))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s.%s: %g is out of range (allowed: %g..%g)", side, key, *out, lo,
                            hi);
    return PX_OK;
}

static px_status read_side(json_t *root, const char *side, px_report_side *out,
                           const char *path, px_error *err)
{
    json_t *obj = json_object_get(root, side);
    if (!json_is_object(obj))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s: missing or not an object (step_time_s, tokens_per_s, mfu, "
                            "hfu, peak_memory_bytes)", side);
    PX_TRY(get_number(obj, side, "step_time_s", REPORT_MIN_STEP_S, REPORT_MAX_S,
                      &out->step_time_s, path, err));
    PX_TRY(get_number(obj, side, "tokens_per_s", 0, 1e18, &out->tokens_per_s, path, err));
    PX_TRY(get_number(obj, side, "mfu", 0, 100, &out->mfu, path, err));
    PX_TRY(get_number(obj, side, "hfu", 0, 100, &out->hfu, path, err));
    json_t *mem = json_object_get(obj, "peak_memory_bytes");
    if (!json_is_integer(mem))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s.peak_memory_bytes: missing or not an integer (bytes)", side);
    out->peak_memory_bytes = (int64_t)json_integer_value(mem);
    return PX_OK;
}

/* An array of n integers >= 0, one per rank (n: the first array's length
 * when *n < 0), into a new array. */
static px_status read_counts(json_t *root, const char *key, int *n, int64_t **out,
                             const char *path, px_error *err)
{
    json_t *a = json_object_get(root, key);
    if (!json_is_array(a))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s: expected an array of integers (one per rank)", key);
    if (*n < 0)
        *n = (int)json_array_size(a);
    if ((int)json_array_size(a) != *n || *n == 0)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s has %zu entries; expected %d (one per rank)", key,
                            json_array_size(a), *n);
    *out = calloc((size_t)*n, sizeof **out);
    if (!*out)
        return PX_FAIL(err, PX_ERR_NOMEM, "%s: out of memory", key);
    for (int i = 0; i < *n; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "%s[%d]: expected an integer >= 0", key, i);
        (*out)[i] = (int64_t)json_integer_value(v);
    }
    return PX_OK;
}

/* The per-rank arrays, all three or none (reports without a per-stage
 * prediction). */
static px_status read_ranks(json_t *root, px_report_ranks *rm, const char *path, px_error *err)
{
    if (!json_object_get(root, "per_rank_predicted_peak_memory_bytes"))
        return PX_OK;
    int n = -1;
    int64_t *stage = NULL;
    px_status st = read_counts(root, "per_rank_peak_memory_bytes", &n, &rm->meas_bytes, path,
                               err);
    if (st == PX_OK)
        st = read_counts(root, "per_rank_predicted_peak_memory_bytes", &n, &rm->pred_bytes,
                         path, err);
    if (st == PX_OK)
        st = read_counts(root, "per_rank_stage", &n, &stage, path, err);
    if (st == PX_OK) {
        rm->stage = calloc((size_t)n, sizeof *rm->stage);
        st = rm->stage ? PX_OK : PX_FAIL(err, PX_ERR_NOMEM, "per_rank_stage: out of memory");
        for (int i = 0; st == PX_OK && i < n; i++)
            rm->stage[i] = (int)stage[i];
    }
    free(stage);
    if (st == PX_OK)
        rm->n = n;
    return st;
}

/* Seconds of a class: 0..REPORT_MAX_S. */
static bool seconds_ok(json_t *v, double *out)
{
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return *out >= 0.0 && *out <= REPORT_MAX_S;
}

/* measured_class_s.KEY: one number >= 0 per rank; its mean into *out. */
static px_status read_rank_mean(json_t *meas, const char *key, int *ranks, double *out,
                                const char *path, px_error *err)
{
    json_t *a = json_object_get(meas, key);
    if (!json_is_array(a) || json_array_size(a) == 0 ||
        (*ranks > 0 && (int)json_array_size(a) != *ranks))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "measured_class_s.%s: expected an array of seconds, one per rank%s",
                            key, *ranks > 0 ? " (as many as the other classes)" : "");
    *ranks = (int)json_array_size(a);
    double sum = 0.0, v;
    for (int r = 0; r < *ranks; r++) {
        if (!seconds_ok(json_array_get(a, (size_t)r), &v))
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "measured_class_s.%s[%d]: expected seconds in 0..%g", key, r,
                                REPORT_MAX_S);
        sum += v;
    }
    *out = sum / (double)*ranks;
    return PX_OK;
}

/* The two class objects, both or neither. */
static px_status read_classes(json_t *root, px_report_file *out, const char *path,
                              px_error *err)
{
    json_t *meas = json_object_get(root, "measured_class_s");
    json_t *pred = json_object_get(root, "predicted_class_s");
    if (!meas && !pred)
        return PX_OK;
    if (!json_is_object(meas) || !json_is_object(pred))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s: expected an object beside %s",
                            json_is_object(meas) ? "predicted_class_s" : "measured_class_s",
                            json_is_object(meas) ? "measured_class_s" : "predicted_class_s");
    px_report_classes *c = &out->classes;
    for (int i = 0; i <= PX_REPORT_CLASSES; i++) {
        const char *key = i < PX_REPORT_CLASSES ? CLASS_KEYS[i] : "step";
        PX_TRY(read_rank_mean(meas, key, &c->ranks,
                              i < PX_REPORT_CLASSES ? &c->meas[i] : &c->meas_step, path, err));
        if (!seconds_ok(json_object_get(pred, key),
                        i < PX_REPORT_CLASSES ? &c->pred[i] : &c->pred_step))
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "predicted_class_s.%s: expected seconds in 0..%g", key,
                                REPORT_MAX_S);
    }
    if (!(c->meas_step >= REPORT_MIN_STEP_S))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "measured_class_s.step: a mean of %g s; expected at least %g s (the "
                            "breakdown divides by it)", c->meas_step, REPORT_MIN_STEP_S);
    out->has_classes = true;
    return PX_OK;
}

static int get_int(json_t *obj, const char *key, int dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static px_status read_root(json_t *root, px_report_file *out, const char *path, px_error *err)
{
    if (!json_is_object(root))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "the report is not a JSON object");
    json_t *ver = json_object_get(root, "schema_version");
    out->schema_version = ver ? get_int(root, "schema_version", -1) : 1;
    if (out->schema_version != PX_REPORT_VERSION)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "schema_version: this build reads report schema_version %d only "
                            "(re-run execute --report to write it)", PX_REPORT_VERSION);
    PX_TRY(read_side(root, "measured", &out->measured, path, err));
    PX_TRY(read_side(root, "predicted", &out->predicted, path, err));
    json_t *losses = json_object_get(root, "losses");
    out->n_losses = json_is_array(losses) ? (int)json_array_size(losses) : 0;
    out->world = get_int(root, "world_size", get_int(root, "ranks", 0));
    json_t *pr = json_object_get(root, "per_rank");
    if (!out->world && json_is_array(pr))
        out->world = (int)json_array_size(pr);
    json_t *plan = json_object_get(root, "plan");
    if (json_is_string(plan))
        snprintf(out->plan, sizeof out->plan, "%s", json_string_value(plan));
    PX_TRY(read_ranks(root, &out->ranks, path, err));
    return read_classes(root, out, path, err);
}

px_status px_report_file_read(const char *path, px_report_file *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        bool missing = jerr.line <= 0;
        return px_error_set(err, missing ? PX_ERR_IO : PX_ERR_PARSE, path, jerr.line,
                            jerr.column, "%s", jerr.text);
    }
    out->root = root;
    return read_root(root, out, path, err);
}

void px_report_file_free(px_report_file *r)
{
    free(r->ranks.stage);
    free(r->ranks.pred_bytes);
    free(r->ranks.meas_bytes);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}
