/* px_compare_out.c — compare's outputs: the fixed-column table, its JSON
 * and the HTML page (px_compare.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_compare.h"
#include "px_framework.h"
#include "px_html.h"

static void pct(char *buf, size_t n, double e)
{
    if (isinf(e))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%+.1f%%", 100.0 * e);
}

/* The run column: as wide as the longest label, at least 44. */
static int label_width(const px_compare_set *set)
{
    int w = 44;
    for (int i = 0; i < set->n; i++)
        if ((int)strlen(set->runs[i].report.label) > w)
            w = (int)strlen(set->runs[i].report.label);
    return w;
}

/* Which limits are compare's defaults rather than the command line's. */
static const char *given_note(const px_compare_set *set)
{
    if (set->time_given && set->mem_given)
        return "";
    if (set->time_given)
        return " (memory: the default)";
    if (set->mem_given)
        return " (step time: the default)";
    return " (defaults)";
}

static void print_header(FILE *out, const px_compare_set *set, int w)
{
    fprintf(out, "# compare: predicted (cost model) vs measured (execute), "
                 "err = (predicted - measured) / measured\n");
    fprintf(out, "# limits%s: |step time err| <= %.0f%%, |peak memory err| <= %.0f%% (the "
                 "worst stage, and each rank against its own stage)\n",
            given_note(set), 100.0 * set->max_time, 100.0 * set->max_mem);
    fprintf(out, "# mem: the worst stage predicted vs the worst rank measured; rank_err: the "
                 "rank furthest from its own stage's prediction (n/a: no per-stage numbers)\n");
    fprintf(out, "%-*s %5s | %9s %9s %7s | %9s %9s %7s | %6s %6s %7s | %9s %9s %7s | %12s | "
                 "%s\n",
            w, "run", "ranks", "step_s", "step_s", "err", "tok/s", "tok/s", "err", "MFU%",
            "MFU%", "err", "mem_MB", "mem_MB", "err", "rank_err", "limits");
    fprintf(out, "%-*s %5s | %9s %9s %7s | %9s %9s %7s | %6s %6s %7s | %9s %9s %7s | %12s |\n",
            w, "", "", "pred", "meas", "", "pred", "meas", "", "pred", "meas", "", "pred",
            "meas", "", "");
}

static void print_run(FILE *out, const px_compare_run *run, int w)
{
    const px_report *r = &run->report;
    const px_report_side *p = &r->predicted, *m = &r->measured;
    const px_rank_mem *rm = &run->ranks;
    char et[16], ek[16], ef[16], em[16], ranks[16], er[32] = "n/a";
    if (rm->n > 0) {
        char e[16];
        pct(e, sizeof e, rm->worst_err);
        snprintf(er, sizeof er, "%s r%d", e, rm->worst);
    }
    pct(et, sizeof et, run->e_time);
    pct(ek, sizeof ek, run->e_tok);
    pct(ef, sizeof ef, run->e_mfu);
    pct(em, sizeof em, run->e_mem);
    if (r->world > 0)
        snprintf(ranks, sizeof ranks, "%d", r->world);
    else
        snprintf(ranks, sizeof ranks, "?");
    fprintf(out, "%-*s %5s | %9.4f %9.4f %7s | %9.0f %9.0f %7s | %6.1f %6.1f %7s | "
                 "%9.2f %9.2f %7s | %12s | %s\n",
            w, r->label, ranks, p->step_time_s, m->step_time_s, et, p->tokens_per_s,
            m->tokens_per_s, ek, 100.0 * p->mfu, 100.0 * m->mfu, ef,
            (double)p->peak_memory_bytes / 1e6, (double)m->peak_memory_bytes / 1e6, em, er,
            run->ok ? "within" : "outside");
}

/* Every rank against its own stage, after the runs' table. */
static void print_ranks(FILE *out, const px_compare_set *set, int w)
{
    fprintf(out, "# peak memory per rank against its own pipeline stage's prediction\n");
    fprintf(out, "%-*s %5s %5s | %9s %9s %7s\n", w, "run", "rank", "stage", "mem_MB", "mem_MB",
            "err");
    fprintf(out, "%-*s %5s %5s | %9s %9s %7s\n", w, "", "", "", "pred", "meas", "");
    for (int i = 0; i < set->n; i++) {
        const px_rank_mem *rm = &set->runs[i].ranks;
        for (int k = 0; k < rm->n; k++) {
            char e[16];
            pct(e, sizeof e,
                px_report_rel_err((double)rm->pred_bytes[k], (double)rm->meas_bytes[k]));
            fprintf(out, "%-*s %5d %5d | %9.2f %9.2f %7s\n", w, set->runs[i].report.label, k,
                    rm->stage[k], (double)rm->pred_bytes[k] / 1e6,
                    (double)rm->meas_bytes[k] / 1e6, e);
        }
    }
}

void px_compare_print(FILE *out, const px_compare_set *set)
{
    int w = label_width(set);
    print_header(out, set, w);
    for (int i = 0; i < set->n; i++)
        print_run(out, &set->runs[i], w);
    if (set->any_rank)
        print_ranks(out, set, w);
    if (set->breakdown) {
        fprintf(out, "# time by class, seconds per step: predicted vs measured (the mean over "
                     "the ranks of each rank's mean over the timed steps; step: the table's, the median of the slowest rank's steps, other: the rest); step_err = (pred - "
                     "meas) / measured step, the row's part of the step-time error\n");
        fprintf(out, "%-*s %-22s | %9s %9s %9s | %8s\n", w, "run", "class", "pred_s",
                "meas_s", "diff_s", "step_err");
        for (int i = 0; i < set->n; i++)
            px_breakdown_print(out, set->runs[i].report.label, w, &set->runs[i].breakdown);
    }
    char wr[48] = "";
    if (set->any_rank)
        snprintf(wr, sizeof wr, ", worst |rank memory err| %.1f%%", 100.0 * set->worst_rank);
    fprintf(out, "# %d run(s); worst |step time err| %.1f%%, worst |peak memory err| %.1f%%%s; "
                 "%d outside the limits%s\n",
            set->n, 100.0 * set->worst_time, 100.0 * set->worst_mem, wr, set->n_bad,
            given_note(set));
}

/* An infinite error (measured 0) is null: JSON has no infinity. */
static json_t *err_json(double e)
{
    return isfinite(e) ? json_real(e) : json_null();
}

static json_t *run_json(const px_compare_run *run, bool breakdown)
{
    const px_report *r = &run->report;
    const px_report_side *p = &r->predicted, *m = &r->measured;
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:b, s:{s:f, s:f, s:f, s:f, s:I}, s:{s:f, s:f, s:f, s:f, s:I}}",
        "report", r->path, "run", r->label, "ranks", r->world, "ok", run->ok, "predicted",
        "step_time_s", p->step_time_s, "tokens_per_s", p->tokens_per_s, "mfu", p->mfu, "hfu",
        p->hfu, "peak_memory_bytes", (json_int_t)p->peak_memory_bytes, "measured",
        "step_time_s", m->step_time_s, "tokens_per_s", m->tokens_per_s, "mfu", m->mfu, "hfu",
        m->hfu, "peak_memory_bytes", (json_int_t)m->peak_memory_bytes);
    json_t *rel = json_object();
    const char *keys[4] = {"step_time_s", "tokens_per_s", "mfu", "peak_memory_bytes"};
    const double errs[4] = {run->e_time, run->e_tok, run->e_mfu, run->e_mem};
    for (int k = 0; k < 4; k++)
        json_object_set_new(rel, keys[k], err_json(errs[k]));
    json_object_set_new(o, "relative_error", rel);
    if (breakdown)
        json_object_set_new(o, "breakdown", px_breakdown_json(&run->breakdown));
    const px_rank_mem *rm = &run->ranks;
    if (rm->n > 0) {
        json_t *ranks = json_array();
        for (int k = 0; k < rm->n; k++) {
            double e = px_report_rel_err((double)rm->pred_bytes[k], (double)rm->meas_bytes[k]);
            json_array_append_new(
                ranks, json_pack("{s:i, s:i, s:I, s:I, s:o}", "rank", k, "stage", rm->stage[k],
                                 "predicted_peak_memory_bytes", (json_int_t)rm->pred_bytes[k],
                                 "measured_peak_memory_bytes", (json_int_t)rm->meas_bytes[k],
                                 "relative_error", err_json(e)));
        }
        json_object_set_new(o, "per_rank", ranks);
        json_object_set_new(o, "worst_rank", json_integer(rm->worst));
        json_object_set_new(o, "worst_rank_memory_err", err_json(rm->worst_err));
    }
    return o;
}

json_t *px_compare_json(const px_compare_set *set)
{
    json_t *jruns = json_array();
    for (int i = 0; i < set->n; i++)
        json_array_append_new(jruns, run_json(&set->runs[i], set->breakdown));
    json_t *root = json_pack("{s:o, s:o, s:o, s:i, s:i}", "runs", jruns, "worst_step_time_err",
                             err_json(set->worst_time), "worst_peak_memory_err",
                             err_json(set->worst_mem), "n_runs", set->n, "n_failed",
                             set->n_bad);
    if (set->any_rank)
        json_object_set_new(root, "worst_rank_peak_memory_err", err_json(set->worst_rank));
    json_object_set_new(root, "max_time_err", json_real(set->max_time));
    json_object_set_new(root, "max_mem_err", json_real(set->max_mem));
    json_object_set_new(root, "n_failed_given_limits", json_integer(set->n_fail));
    return root;
}

/* A CSV field: quoted, with its quotes doubled, where it holds a comma, a
 * quote or a line break (RFC 4180). */
static void csv_str(FILE *out, const char *v)
{
    if (!strpbrk(v, ",\"\r\n")) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *c = v; *c; c++) {
        if (*c == '"')
            fputc('"', out);
        fputc(*c, out);
    }
    fputc('"', out);
}

static void csv_err(FILE *out, double e)
{
    if (isfinite(e))
        fprintf(out, ",%.6g", e);
    else
        fputc(',', out);
}

void px_compare_csv(FILE *out, const px_compare_set *set)
{
    fputs("report,run,ranks,predicted_step_time_s,measured_step_time_s,step_time_rel_err,"
          "predicted_tokens_per_s,measured_tokens_per_s,tokens_per_s_rel_err,predicted_mfu,"
          "measured_mfu,mfu_rel_err,predicted_peak_memory_bytes,measured_peak_memory_bytes,"
          "peak_memory_rel_err,worst_rank_memory_rel_err,max_step_time_rel_err,"
          "max_peak_memory_rel_err,within_limits\n", out);
    for (int i = 0; i < set->n; i++) {
        const px_compare_run *run = &set->runs[i];
        const px_report *r = &run->report;
        const px_report_side *p = &r->predicted, *m = &r->measured;
        csv_str(out, r->path);
        fputc(',', out);
        csv_str(out, r->label);
        fprintf(out, ",%d,%.9g,%.9g", r->world, p->step_time_s, m->step_time_s);
        csv_err(out, run->e_time);
        fprintf(out, ",%.9g,%.9g", p->tokens_per_s, m->tokens_per_s);
        csv_err(out, run->e_tok);
        fprintf(out, ",%.6g,%.6g", p->mfu, m->mfu);
        csv_err(out, run->e_mfu);
        fprintf(out, ",%lld,%lld", (long long)p->peak_memory_bytes,
                (long long)m->peak_memory_bytes);
        csv_err(out, run->e_mem);
        if (run->ranks.n > 0)
            csv_err(out, run->ranks.worst_err);
        else
            fputc(',', out);
        fprintf(out, ",%g,%g,%s\n", set->max_time, set->max_mem, run->ok ? "yes" : "no");
    }
}

/* One run for the page: the plan's details where its file can be read (its
 * recorded per-stage prediction, and the runtime traits of the framework it
 * was planned for, which the timeline's forward : backward split and
 * messages are costed under), else the report's own prediction. */
static px_status html_run(const px_report *r, px_plan *plan, px_prediction *pred,
                          px_framework *fw, px_html_run *hr, px_error *err)
{
    px_error e;
    bool have_plan = px_report_read_plan(r->path, plan, &e) == PX_OK;
    const px_fw_runtime *run = NULL;
    if (have_plan && plan->framework[0]) {
        if (px_framework_load(plan->framework, NULL, fw, &e) != PX_OK)
            return PX_FAIL(err, e.code, "%s: its plan's framework \"%s\": %s", r->path,
                           plan->framework, e.msg);
        run = &fw->run;
    }
    if (have_plan) {
        *pred = plan->pred;
    } else {
        pred->time.step_s = r->predicted.step_time_s;
        pred->tokens_per_s = r->predicted.tokens_per_s;
        pred->mfu = r->predicted.mfu;
        pred->mem.total = r->predicted.peak_memory_bytes;
    }
    bool recorded = have_plan && plan->n_stages == plan->par.pp;
    *hr = (px_html_run){.label = r->label, .model = &plan->model, .hw = &plan->hw,
                        .par = have_plan ? &plan->par : NULL, .pred = pred, .run = run,
                        .stages = recorded ? plan->stages : NULL,
                        .detail = have_plan, .has_measured = true,
                        .meas_step_s = r->measured.step_time_s,
                        .meas_tokens_per_s = r->measured.tokens_per_s,
                        .meas_mfu = r->measured.mfu,
                        .meas_peak_bytes = r->measured.peak_memory_bytes,
                        .cmp_step_s = r->predicted.step_time_s,
                        .cmp_tokens_per_s = r->predicted.tokens_per_s,
                        .cmp_mfu = r->predicted.mfu,
                        .cmp_peak_bytes = r->predicted.peak_memory_bytes};
    return PX_OK;
}

px_status px_compare_html(const char *path, const px_compare_set *set, px_error *err)
{
    int n = set->n;
    px_plan *plans = calloc((size_t)n, sizeof *plans);
    px_html_run *hr = calloc((size_t)n, sizeof *hr);
    px_prediction *preds = calloc((size_t)n, sizeof *preds);
    px_framework *fws = calloc((size_t)n, sizeof *fws);
    px_status st = PX_OK;
    if (!plans || !hr || !preds || !fws)
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++)
        st = html_run(&set->runs[i].report, &plans[i], &preds[i], &fws[i], &hr[i], err);
    if (!st) {
        char sub[64];
        snprintf(sub, sizeof sub, "%d run%s of execute, predicted by the cost model", n,
                 n == 1 ? "" : "s");
        st = px_html_write(path, "Parallax: predicted vs measured", sub, hr, n, err);
    }
    free(plans);
    free(hr);
    free(preds);
    free(fws);
    return st;
}
