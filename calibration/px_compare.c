/* px_compare.c — predicted against measured for runs of `execute --report`
 * (px_compare.h). */
#include "px_compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_html.h"

/* Step time and peak memory must be finite and >= 0 on both sides: a
 * negative value (a sign bug in the writer) would give a meaningless error
 * that may still fall within the limits. */
static px_status check_side(const char *path, const char *side, const px_report_side *s,
                            px_error *err)
{
    if (!isfinite(s->step_time_s) || s->step_time_s < 0.0)
        return PX_FAIL(err, PX_ERR_INVALID, "%s: %s.step_time_s is %g: a time in seconds >= 0",
                       path, side, s->step_time_s);
    if (s->peak_memory_bytes < 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "%s: %s.peak_memory_bytes is %lld: a byte count >= 0", path, side,
                       (long long)s->peak_memory_bytes);
    return PX_OK;
}

bool px_compare_plan_warning(const char *path, char *buf, size_t n)
{
    json_t *root = json_load_file(path, 0, NULL);
    json_t *plan = json_object_get(root, "plan");
    bool has_par = json_is_object(json_object_get(root, "parallel")) ||
                   json_is_object(json_object_get(plan, "parallel"));
    if (!json_is_string(plan) || has_par) {
        json_decref(root);
        return false;
    }
    const char *pp = json_string_value(plan);
    FILE *f = pp[0] ? fopen(pp, "r") : NULL;
    char alt[1100] = "";
    if (!f && pp[0] && pp[0] != '/') { /* px_report_read also looks beside the report */
        const char *slash = strrchr(path, '/');
        snprintf(alt, sizeof alt, "%.*s/%s", slash ? (int)(slash - path) : 1,
                 slash ? path : ".", pp);
        f = fopen(alt, "r");
    }
    bool warn = f == NULL;
    if (f)
        fclose(f);
    else if (!pp[0])
        snprintf(buf, n, "%s: \"plan\" is empty: the run is labelled by the report's file name",
                 path);
    else
        snprintf(buf, n, "%s: plan \"%s\"%s%s%s cannot be opened (%s): the run is labelled by "
                 "the report's file name", path, pp, alt[0] ? " (nor " : "", alt[0] ? alt : "",
                 alt[0] ? ")" : "", strerror(errno));
    json_decref(root);
    return warn;
}

/* Reads an array of n integers >= 0 (n: the first array's length when *n <
 * 0), naming the file and the field when it is not one. */
static px_status read_counts(const char *path, json_t *root, const char *key, int *n,
                             int64_t **out, px_error *err)
{
    json_t *a = json_object_get(root, key);
    if (!json_is_array(a))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "%s: %s: expected an array of integers (one per rank)", path, key);
    if (*n < 0)
        *n = (int)json_array_size(a);
    if ((int)json_array_size(a) != *n || *n == 0)
        return PX_FAIL(err, PX_ERR_INVALID, "%s: %s has %zu entries; expected %d (one per rank)",
                       path, key, json_array_size(a), *n);
    *out = calloc((size_t)*n, sizeof **out);
    if (!*out)
        return PX_FAIL(err, PX_ERR_NOMEM, "%s: %s: out of memory", path, key);
    for (int i = 0; i < *n; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return PX_FAIL(err, PX_ERR_INVALID, "%s: %s[%d]: expected an integer >= 0", path,
                           key, i);
        (*out)[i] = (int64_t)json_integer_value(v);
    }
    return PX_OK;
}

/* Fills rm from the report at path (n = 0 without the arrays). */
static px_status read_rank_mem(const char *path, px_rank_mem *rm, px_error *err)
{
    memset(rm, 0, sizeof *rm);
    json_t *root = json_load_file(path, 0, NULL);
    if (!root || !json_object_get(root, "per_rank_predicted_peak_memory_bytes")) {
        json_decref(root);
        return PX_OK;
    }
    int n = -1;
    int64_t *stage = NULL;
    px_status st = read_counts(path, root, "per_rank_peak_memory_bytes", &n, &rm->meas_bytes,
                               err);
    if (!st)
        st = read_counts(path, root, "per_rank_predicted_peak_memory_bytes", &n,
                         &rm->pred_bytes, err);
    if (!st)
        st = read_counts(path, root, "per_rank_stage", &n, &stage, err);
    if (!st) {
        rm->stage = calloc((size_t)n, sizeof *rm->stage);
        if (!rm->stage)
            st = PX_FAIL(err, PX_ERR_NOMEM, "%s: per_rank_stage: out of memory", path);
        for (int i = 0; !st && i < n; i++)
            rm->stage[i] = (int)stage[i];
    }
    free(stage);
    json_decref(root);
    if (st)
        return st;
    rm->n = n;
    for (int i = 0; i < n; i++) {
        double e = px_report_rel_err((double)rm->pred_bytes[i], (double)rm->meas_bytes[i]);
        if (i == 0 || !(fabs(e) <= fabs(rm->worst_err))) {
            rm->worst = i;
            rm->worst_err = e;
        }
    }
    return PX_OK;
}

px_status px_compare_read(const char *path, bool breakdown, px_compare_run *run, px_error *err)
{
    PX_TRY(px_report_read(path, &run->report, err));
    PX_TRY(check_side(path, "measured", &run->report.measured, err));
    PX_TRY(check_side(path, "predicted", &run->report.predicted, err));
    PX_TRY(read_rank_mem(path, &run->ranks, err));
    if (breakdown)
        PX_TRY(px_breakdown_read(path, &run->breakdown, err));
    return PX_OK;
}

void px_compare_score(px_compare_set *set)
{
    px_report *reports = malloc((size_t)(set->n > 0 ? set->n : 1) * sizeof *reports);
    if (reports) { /* px_report_label_apart works on an array of reports */
        for (int i = 0; i < set->n; i++)
            reports[i] = set->runs[i].report;
        px_report_label_apart(reports, set->n);
        for (int i = 0; i < set->n; i++)
            set->runs[i].report = reports[i];
        free(reports);
    }
    set->n_bad = 0;
    set->worst_time = set->worst_mem = set->worst_rank = 0.0;
    set->any_rank = false;
    for (int i = 0; i < set->n; i++) {
        px_compare_run *run = &set->runs[i];
        const px_report_side *p = &run->report.predicted, *m = &run->report.measured;
        run->e_time = px_report_rel_err(p->step_time_s, m->step_time_s);
        run->e_tok = px_report_rel_err(p->tokens_per_s, m->tokens_per_s);
        run->e_mfu = px_report_rel_err(p->mfu, m->mfu);
        run->e_mem = px_report_rel_err((double)p->peak_memory_bytes,
                                       (double)m->peak_memory_bytes);
        const px_rank_mem *rm = &run->ranks;
        run->ok = (set->max_time < 0.0 || fabs(run->e_time) <= set->max_time) &&
                  (set->max_mem < 0.0 || fabs(run->e_mem) <= set->max_mem) &&
                  (set->max_mem < 0.0 || rm->n == 0 || fabs(rm->worst_err) <= set->max_mem);
        set->n_bad += !run->ok;
        set->worst_time = fmax(set->worst_time, fabs(run->e_time));
        set->worst_mem = fmax(set->worst_mem, fabs(run->e_mem));
        if (rm->n > 0) {
            set->any_rank = true;
            set->worst_rank = fmax(set->worst_rank, fabs(rm->worst_err));
        }
    }
}

void px_compare_free(px_compare_set *set)
{
    for (int i = 0; i < set->n; i++) {
        free(set->runs[i].ranks.stage);
        free(set->runs[i].ranks.pred_bytes);
        free(set->runs[i].ranks.meas_bytes);
    }
    free(set->runs);
    set->runs = NULL;
    set->n = 0;
}
