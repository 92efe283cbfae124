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

bool px_compare_plan_warning(const px_compare_run *run, const char *path, char *buf, size_t n)
{
    const json_t *root = run->report.file.root;
    json_t *plan = json_object_get(root, "plan");
    bool has_par = json_is_object(json_object_get(root, "parallel")) ||
                   json_is_object(json_object_get(plan, "parallel"));
    if (!json_is_string(plan) || has_par)
        return false;
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
    return warn;
}

/* The per-rank memory of the report (px_report_io's arrays) and its worst
 * rank (n = 0 without the arrays). */
static void rank_mem_of(const px_report_ranks *r, px_rank_mem *rm)
{
    memset(rm, 0, sizeof *rm);
    rm->n = r->n;
    rm->stage = r->stage;
    rm->pred_bytes = r->pred_bytes;
    rm->meas_bytes = r->meas_bytes;
    for (int i = 0; i < rm->n; i++) {
        double e = px_report_rel_err((double)rm->pred_bytes[i], (double)rm->meas_bytes[i]);
        if (i == 0 || !(fabs(e) <= fabs(rm->worst_err))) {
            rm->worst = i;
            rm->worst_err = e;
        }
    }
}

/* The range of the report's step_times_s (n_steps 0 when absent, shorter
 * than two steps, or holding a value that is not a time >= 0). */
static void step_range_of(const px_report_file *f, px_compare_run *run)
{
    json_t *a = json_object_get(f->root, "step_times_s");
    run->n_steps = 0;
    if (!json_is_array(a) || json_array_size(a) < 2)
        return;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        double t = json_number_value(v);
        if (!json_is_number(v) || !isfinite(t) || t < 0.0) {
            run->n_steps = 0;
            return;
        }
        run->step_min = i == 0 ? t : fmin(run->step_min, t);
        run->step_max = i == 0 ? t : fmax(run->step_max, t);
        run->n_steps++;
    }
}

px_status px_compare_read(const char *path, bool breakdown, px_compare_run *run, px_error *err)
{
    PX_TRY(px_report_read(path, &run->report, err));
    PX_TRY(check_side(path, "measured", &run->report.measured, err));
    PX_TRY(check_side(path, "predicted", &run->report.predicted, err));
    rank_mem_of(&run->report.file.ranks, &run->ranks);
    step_range_of(&run->report.file, run);
    if (breakdown)
        PX_TRY(px_breakdown_from_report(&run->report.file, path, &run->breakdown, err));
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
    set->n_bad = set->n_fail = 0;
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
        bool time_ok = fabs(run->e_time) <= set->max_time;
        bool mem_ok = fabs(run->e_mem) <= set->max_mem &&
                      (rm->n == 0 || fabs(rm->worst_err) <= set->max_mem);
        run->ok = time_ok && mem_ok;
        run->fails_given = (set->time_given && !time_ok) || (set->mem_given && !mem_ok);
        set->n_bad += !run->ok;
        set->n_fail += run->fails_given;
        set->worst_time = fmax(set->worst_time, fabs(run->e_time));
        set->worst_mem = fmax(set->worst_mem, fabs(run->e_mem));
        if (rm->n > 0) {
            set->any_rank = true;
            set->worst_rank = fmax(set->worst_rank, fabs(rm->worst_err));
        }
    }
}

int px_compare_repeat_warnings(FILE *out, const px_compare_set *set)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        const px_compare_run *a = &set->runs[i];
        if (!a->report.label_shared || a->n_steps < 2)
            continue;
        for (int j = i + 1; j < set->n; j++) {
            const px_compare_run *b = &set->runs[j];
            if (!b->report.label_shared || b->n_steps < 2 ||
                strcmp(a->report.label_base, b->report.label_base) != 0)
                continue;
            double ta = a->report.measured.step_time_s, tb = b->report.measured.step_time_s;
            double bound = (a->step_max - a->step_min) + (b->step_max - b->step_min);
            if (!(fabs(ta - tb) > bound))
                continue;
            fprintf(out, "compare: warning: two runs of one plan disagree beyond their noise: "
                         "%s %.4f s and %s %.4f s (%.2fx), more apart than their step-to-step "
                         "ranges together (%.4f s): measure again before trusting either\n",
                    a->report.path, ta, b->report.path, tb, fmax(ta, tb) / fmin(ta, tb),
                    bound);
            n++;
        }
    }
    return n;
}

void px_compare_free(px_compare_set *set)
{
    for (int i = 0; i < set->n; i++)
        px_report_free(&set->runs[i].report); /* runs[i].ranks points into it */
    free(set->runs);
    set->runs = NULL;
    set->n = 0;
}
