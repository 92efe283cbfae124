/* compare — predicted vs measured for one or more `execute --report` runs:
 *
 *   compare [--max-time-err F] [--max-mem-err F] [--breakdown] [--json] report.json ...
 *
 * Prints one fixed-column row per run (step time, tokens/s, MFU, peak
 * memory: predicted, measured, relative error = (pred - meas) / meas), then,
 * for reports that carry per-stage predictions, a row per rank against its
 * own pipeline stage, and a summary; with the limits, exits 1 when any run's
 * |step-time error|, |peak-memory error| (worst stage vs worst rank) or any
 * rank's |error against its own stage| exceeds them (the table is printed
 * either way).  --breakdown adds each run's step time by class, predicted
 * against measured (px_breakdown.h).
 * --json prints the same content as JSON (sorted keys).  Exit 2: bad
 * arguments (a limit outside (0, 1]) or an unreadable report (also one whose
 * step time or peak memory is negative).  A report whose plan file cannot be
 * opened is a warning on stderr: the run is then labelled by its file name. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "px_args.h"
#include "px_error.h"
#include "px_breakdown.h"
#include "px_html.h"
#include "px_report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: compare [--max-time-err F] [--max-mem-err F] [--breakdown] [--json] [--html FILE] "
               "report.json ...\n"
               "  --max-time-err F  fail (exit 1) when |predicted/measured - 1| of the step\n"
               "                    time exceeds F for any run; F a fraction in (0, 1]\n"
               "                    (0.25 for 25 %%)\n"
               "  --max-mem-err F   the same for the peak memory (e.g. 0.10): the worst\n"
               "                    stage against the worst rank, and every rank against\n"
               "                    its own pipeline stage where the report has them\n"
               "  --breakdown       also the step time by class (GEMM, attention, element-wise,\n"
               "                    exposed communication, bubble + p2p, optimizer, other),\n"
               "                    predicted vs measured, from the report's *_class_s\n"
               "  --json            the table as JSON on stdout\n"
               "  --html FILE       also write a self-contained HTML report: predicted vs\n"
               "                    measured, and each run's pipeline timeline, per-stage\n"
               "                    memory and time breakdown from its plan file\n"
               "  --version         the Parallax version\n"
               "Runs of the same plan are told apart by their report's file name.\n"
               "Every option takes its value as `--flag value` or `--flag=value`, once.\n");
}

/* A limit is a fraction in (0, 1]: "25" meant 25 % would otherwise pass as
 * 2500 % and every run would be within it. */
static bool parse_fraction(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || !(v > 0.0) || v > 1.0)
        return false;
    *out = v;
    return true;
}

/* Step time and peak memory must be finite and >= 0 on both sides: a
 * negative value (a sign bug in the writer) would give a meaningless error
 * that may still fall within the limits. */
static bool check_side(const char *path, const char *side, const px_report_side *s)
{
    if (!isfinite(s->step_time_s) || s->step_time_s < 0.0) {
        fprintf(stderr, "compare: %s: %s.step_time_s is %g: a time in seconds >= 0\n", path,
                side, s->step_time_s);
        return false;
    }
    if (s->peak_memory_bytes < 0) {
        fprintf(stderr, "compare: %s: %s.peak_memory_bytes is %lld: a byte count >= 0\n",
                path, side, (long long)s->peak_memory_bytes);
        return false;
    }
    return true;
}

/* execute's reports name their plan file and px_report_read labels the run
 * from it; when that file cannot be read the label silently becomes the
 * report's file name.  Say so, with the reason, so that a moved plan is
 * noticed. */
static void warn_unread_plan(const char *path)
{
    json_t *root = json_load_file(path, 0, NULL);
    json_t *plan = json_object_get(root, "plan");
    bool has_par = json_is_object(json_object_get(root, "parallel")) ||
                   json_is_object(json_object_get(plan, "parallel"));
    if (!json_is_string(plan) || has_par) {
        json_decref(root);
        return;
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
    if (f)
        fclose(f);
    else if (!pp[0])
        fprintf(stderr, "compare: warning: %s: \"plan\" is empty: the run is labelled by "
                        "the report's file name\n", path);
    else
        fprintf(stderr, "compare: warning: %s: plan \"%s\"%s%s%s cannot be opened (%s): "
                        "the run is labelled by the report's file name\n", path, pp,
                alt[0] ? " (nor " : "", alt[0] ? alt : "", alt[0] ? ")" : "", strerror(errno));
    json_decref(root);
}

/* Each rank against its own pipeline stage's prediction: execute's reports
 * carry per_rank_peak_memory_bytes, per_rank_stage and
 * per_rank_predicted_peak_memory_bytes (docs/executor.md).  The worst-stage
 * comparison alone lets a stage that is off hide behind another: with 1F1B
 * stage 0 holds the most micro-batches and the last stage the head, so the
 * worst measured rank and the worst predicted stage need not be the same
 * stage.  Reports without the arrays (older ones, hand-made ones) have no
 * per-rank check (n = 0). */
typedef struct {
    int n;               /* ranks, 0: the report has no per-stage prediction */
    int *stage;          /* [n] */
    int64_t *pred_bytes; /* [n] the rank's stage's prediction */
    int64_t *meas_bytes; /* [n] */
    int worst;           /* the rank with the largest |error| */
    double worst_err;    /* its error (signed) */
} rank_mem;

/* Reads an array of n integers >= 0 (n: the first array's length when *n <
 * 0).  Returns false with a message naming the file and the field. */
static bool read_counts(const char *path, json_t *root, const char *key, int *n, int64_t **out)
{
    json_t *a = json_object_get(root, key);
    if (!json_is_array(a)) {
        fprintf(stderr, "compare: %s: %s: expected an array of integers (one per rank)\n",
                path, key);
        return false;
    }
    if (*n < 0)
        *n = (int)json_array_size(a);
    if ((int)json_array_size(a) != *n || *n == 0) {
        fprintf(stderr, "compare: %s: %s has %zu entries; expected %d (one per rank)\n", path,
                key, json_array_size(a), *n);
        return false;
    }
    *out = calloc((size_t)*n, sizeof **out);
    if (!*out)
        return false;
    for (int i = 0; i < *n; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            fprintf(stderr, "compare: %s: %s[%d]: expected an integer >= 0\n", path, key, i);
            return false;
        }
        (*out)[i] = (int64_t)json_integer_value(v);
    }
    return true;
}

/* Fills rm from the report at path; false (after a message) when the arrays
 * are present but malformed. */
static bool read_rank_mem(const char *path, rank_mem *rm)
{
    memset(rm, 0, sizeof *rm);
    json_t *root = json_load_file(path, 0, NULL);
    if (!root || !json_object_get(root, "per_rank_predicted_peak_memory_bytes")) {
        json_decref(root);
        return true;
    }
    int n = -1;
    int64_t *stage = NULL;
    bool ok = read_counts(path, root, "per_rank_peak_memory_bytes", &n, &rm->meas_bytes) &&
              read_counts(path, root, "per_rank_predicted_peak_memory_bytes", &n,
                          &rm->pred_bytes) &&
              read_counts(path, root, "per_rank_stage", &n, &stage);
    if (ok) {
        rm->stage = calloc((size_t)n, sizeof *rm->stage);
        ok = rm->stage != NULL;
        for (int i = 0; ok && i < n; i++)
            rm->stage[i] = (int)stage[i];
    }
    free(stage);
    json_decref(root);
    if (!ok)
        return false;
    rm->n = n;
    for (int i = 0; i < n; i++) {
        double e = px_report_rel_err((double)rm->pred_bytes[i], (double)rm->meas_bytes[i]);
        if (i == 0 || !(fabs(e) <= fabs(rm->worst_err))) {
            rm->worst = i;
            rm->worst_err = e;
        }
    }
    return true;
}

/* --html: every run, in detail where its plan file can be read. */
static int write_html(const char *path, const px_report *runs, int n)
{
    px_plan *plans = calloc((size_t)n, sizeof *plans);
    px_html_run *hr = calloc((size_t)n, sizeof *hr);
    px_prediction *preds = calloc((size_t)n, sizeof *preds);
    if (!plans || !hr || !preds) {
        fprintf(stderr, "compare: --html: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        px_error err;
        bool have_plan = px_report_read_plan(runs[i].path, &plans[i], &err) == PX_OK;
        if (have_plan) {
            preds[i] = plans[i].pred;
        } else { /* the report's own prediction, without the plan's details */
            preds[i].time.step_s = runs[i].predicted.step_time_s;
            preds[i].tokens_per_s = runs[i].predicted.tokens_per_s;
            preds[i].mfu = runs[i].predicted.mfu;
            preds[i].mem.total = runs[i].predicted.peak_memory_bytes;
        }
        hr[i] = (px_html_run){.label = runs[i].label, .model = &plans[i].model,
                              .hw = &plans[i].hw, .par = have_plan ? &plans[i].par : NULL,
                              .pred = &preds[i], .detail = have_plan, .has_measured = true,
                              .meas_step_s = runs[i].measured.step_time_s,
                              .meas_tokens_per_s = runs[i].measured.tokens_per_s,
                              .meas_mfu = runs[i].measured.mfu,
                              .meas_peak_bytes = runs[i].measured.peak_memory_bytes,
                              .cmp_step_s = runs[i].predicted.step_time_s,
                              .cmp_tokens_per_s = runs[i].predicted.tokens_per_s,
                              .cmp_mfu = runs[i].predicted.mfu,
                              .cmp_peak_bytes = runs[i].predicted.peak_memory_bytes};
    }
    char sub[64];
    snprintf(sub, sizeof sub, "%d run%s of execute, predicted by the cost model", n,
             n == 1 ? "" : "s");
    px_error err;
    px_error_clear(&err);
    int rc = 0;
    if (px_html_write(path, "Parallax: predicted vs measured", sub, hr, n, &err) != PX_OK) {
        char buf[1400];
        px_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "compare: --html: %s\n", buf);
        rc = 1;
    }
    free(plans);
    free(hr);
    free(preds);
    return rc;
}

static void pct(char *buf, size_t n, double e)
{
    if (isinf(e))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%+.1f%%", 100.0 * e);
}

typedef struct {
    double max_time, max_mem; /* -1: no limit */
    bool as_json, breakdown;
    const char *html_path;
} compare_cli;

/* --max-time-err / --max-mem-err: a fraction in (0, 1]. */
static px_status read_limit(const char *flag, const char *v, double *out, const char *example,
                            px_error *err)
{
    if (!parse_fraction(v, out))
        return PX_FAIL(err, PX_ERR_USAGE, "%s %s: a fraction in (0, 1], e.g. %s", flag, v,
                       example);
    return PX_OK;
}

static px_status read_max_time(void *s, const char *flag, const char *v, px_error *err)
{
    return read_limit(flag, v, &((compare_cli *)s)->max_time, "0.25 for 25 %", err);
}

static px_status read_max_mem(void *s, const char *flag, const char *v, px_error *err)
{
    return read_limit(flag, v, &((compare_cli *)s)->max_mem, "0.10 for 10 %", err);
}

static const px_arg compare_rows[] = {
    PX_ARG_CUSTOM("--max-time-err", read_max_time),
    PX_ARG_CUSTOM("--max-mem-err", read_max_mem),
    PX_ARG_SWITCH("--json", compare_cli, as_json),
    PX_ARG_SWITCH("--breakdown", compare_cli, breakdown),
    PX_ARG_STR("--html", compare_cli, html_path),
};

int main(int argc, char **argv)
{
    compare_cli cl = {-1.0, -1.0, false, false, NULL};
    px_args_result args;
    px_error aerr;
    if (px_args_parse(compare_rows, (int)(sizeof compare_rows / sizeof compare_rows[0]), argc,
                      argv, &cl, -1, &args, &aerr) != PX_OK) {
        char msg[2048];
        px_args_error_text("compare", &aerr, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    if (args.action == PX_ARGS_HELP) {
        usage(stdout);
        return 0;
    }
    if (args.action == PX_ARGS_VERSION) {
        printf("compare (parallax) %s\n", px_version());
        return 0;
    }
    double max_time = cl.max_time, max_mem = cl.max_mem;
    bool as_json = cl.as_json, breakdown = cl.breakdown;
    const char *html_path = cl.html_path;
    int n_paths = args.n_positional;
    const char **paths = args.positional;
    if (n_paths == 0) {
        fprintf(stderr, "compare: no report given\n");
        usage(stderr);
        return 2;
    }
    px_report *runs = calloc((size_t)n_paths, sizeof *runs);
    rank_mem *rms = calloc((size_t)n_paths, sizeof *rms);
    px_breakdown *bds = calloc((size_t)n_paths, sizeof *bds);
    if (!runs || !rms || !bds)
        return 2;
    for (int i = 0; i < n_paths; i++) {
        px_error err;
        px_error_clear(&err);
        if (px_report_read(paths[i], &runs[i], &err) != PX_OK) {
            char buf[1400];
            px_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "compare: %s\n", buf);
            return 2;
        }
        if (!check_side(paths[i], "measured", &runs[i].measured) ||
            !check_side(paths[i], "predicted", &runs[i].predicted))
            return 2;
        if (!read_rank_mem(paths[i], &rms[i]))
            return 2;
        px_error_clear(&err);
        if (breakdown && px_breakdown_read(paths[i], &bds[i], &err) != PX_OK) {
            char buf[1400];
            px_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "compare: %s\n", buf);
            return 2;
        }
        warn_unread_plan(paths[i]);
    }
    px_report_label_apart(runs, n_paths);
    int w = 44; /* the run column: as wide as the longest label */
    for (int i = 0; i < n_paths; i++)
        if ((int)strlen(runs[i].label) > w)
            w = (int)strlen(runs[i].label);
    if (html_path && write_html(html_path, runs, n_paths) != 0)
        return 2;

    int n_bad = 0;
    double worst_time = 0.0, worst_mem = 0.0, worst_rank = 0.0;
    bool any_rank = false;
    json_t *jruns = json_array();
    if (!as_json) {
        printf("# compare: predicted (cost model) vs measured (execute), "
               "err = (predicted - measured) / measured\n");
        if (max_time >= 0.0 || max_mem >= 0.0)
            printf("# limits: |step time err| <= %.0f%%, |peak memory err| <= %.0f%% (the "
                   "worst stage, and each rank against its own stage)\n",
                   max_time >= 0.0 ? 100.0 * max_time : INFINITY,
                   max_mem >= 0.0 ? 100.0 * max_mem : INFINITY);
        printf("# mem: the worst stage predicted vs the worst rank measured; rank_err: the "
               "rank furthest from its own stage's prediction (n/a: no per-stage numbers)\n");
        printf("%-*s %5s | %9s %9s %7s | %9s %9s %7s | %6s %6s %7s | %9s %9s %7s | %12s | "
               "%s\n",
               w, "run", "ranks", "step_s", "step_s", "err", "tok/s", "tok/s", "err", "MFU%",
               "MFU%", "err", "mem_MB", "mem_MB", "err", "rank_err", "ok");
        printf("%-*s %5s | %9s %9s %7s | %9s %9s %7s | %6s %6s %7s | %9s %9s %7s | %12s |\n",
               w, "", "", "pred", "meas", "", "pred", "meas", "", "pred", "meas", "", "pred",
               "meas", "", "");
    }
    for (int i = 0; i < n_paths; i++) {
        const px_report *r = &runs[i];
        const px_report_side *p = &r->predicted, *m = &r->measured;
        double e_time = px_report_rel_err(p->step_time_s, m->step_time_s);
        double e_tok = px_report_rel_err(p->tokens_per_s, m->tokens_per_s);
        double e_mfu = px_report_rel_err(p->mfu, m->mfu);
        double e_mem = px_report_rel_err((double)p->peak_memory_bytes,
                                         (double)m->peak_memory_bytes);
        const rank_mem *rm = &rms[i];
        bool ok = (max_time < 0.0 || fabs(e_time) <= max_time) &&
                  (max_mem < 0.0 || fabs(e_mem) <= max_mem) &&
                  (max_mem < 0.0 || rm->n == 0 || fabs(rm->worst_err) <= max_mem);
        n_bad += !ok;
        worst_time = fmax(worst_time, fabs(e_time));
        worst_mem = fmax(worst_mem, fabs(e_mem));
        if (rm->n > 0) {
            any_rank = true;
            worst_rank = fmax(worst_rank, fabs(rm->worst_err));
        }
        if (as_json) {
            json_t *o = json_pack(
                "{s:s, s:s, s:i, s:b, s:{s:f, s:f, s:f, s:f, s:I}, s:{s:f, s:f, s:f, s:f, s:I}}",
                "report", r->path, "run", r->label, "ranks", r->world, "ok", ok,
                "predicted", "step_time_s", p->step_time_s, "tokens_per_s", p->tokens_per_s,
                "mfu", p->mfu, "hfu", p->hfu, "peak_memory_bytes",
                (json_int_t)p->peak_memory_bytes, "measured", "step_time_s", m->step_time_s,
                "tokens_per_s", m->tokens_per_s, "mfu", m->mfu, "hfu", m->hfu,
                "peak_memory_bytes", (json_int_t)m->peak_memory_bytes);
            /* an infinite error (measured 0) is null: JSON has no infinity */
            json_t *rel = json_object();
            const char *keys[4] = {"step_time_s", "tokens_per_s", "mfu", "peak_memory_bytes"};
            const double errs[4] = {e_time, e_tok, e_mfu, e_mem};
            for (int k = 0; k < 4; k++)
                json_object_set_new(rel, keys[k], isfinite(errs[k]) ? json_real(errs[k])
                                                                    : json_null());
            json_object_set_new(o, "relative_error", rel);
            if (breakdown)
                json_object_set_new(o, "breakdown", px_breakdown_json(&bds[i]));
            if (rm->n > 0) {
                json_t *ranks = json_array();
                for (int k = 0; k < rm->n; k++) {
                    double e = px_report_rel_err((double)rm->pred_bytes[k],
                                                 (double)rm->meas_bytes[k]);
                    json_array_append_new(
                        ranks, json_pack("{s:i, s:i, s:I, s:I, s:o}", "rank", k, "stage",
                                         rm->stage[k], "predicted_peak_memory_bytes",
                                         (json_int_t)rm->pred_bytes[k],
                                         "measured_peak_memory_bytes",
                                         (json_int_t)rm->meas_bytes[k], "relative_error",
                                         isfinite(e) ? json_real(e) : json_null()));
                }
                json_object_set_new(o, "per_rank", ranks);
                json_object_set_new(o, "worst_rank", json_integer(rm->worst));
                json_object_set_new(o, "worst_rank_memory_err",
                                    isfinite(rm->worst_err) ? json_real(rm->worst_err)
                                                            : json_null());
            }
            json_array_append_new(jruns, o);
            continue;
        }
        char et[16], ek[16], ef[16], em[16], ranks[16], er[32] = "n/a";
        if (rm->n > 0) {
            char e[16];
            pct(e, sizeof e, rm->worst_err);
            snprintf(er, sizeof er, "%s r%d", e, rm->worst);
        }
        pct(et, sizeof et, e_time);
        pct(ek, sizeof ek, e_tok);
        pct(ef, sizeof ef, e_mfu);
        pct(em, sizeof em, e_mem);
        if (r->world > 0)
            snprintf(ranks, sizeof ranks, "%d", r->world);
        else
            snprintf(ranks, sizeof ranks, "?");
        printf("%-*s %5s | %9.4f %9.4f %7s | %9.0f %9.0f %7s | %6.1f %6.1f %7s | "
               "%9.2f %9.2f %7s | %12s | %s\n",
               w, r->label, ranks, p->step_time_s, m->step_time_s, et, p->tokens_per_s,
               m->tokens_per_s, ek, 100.0 * p->mfu, 100.0 * m->mfu, ef,
               (double)p->peak_memory_bytes / 1e6, (double)m->peak_memory_bytes / 1e6, em, er,
               ok ? "yes" : "NO");
    }
    /* every rank against its own stage, after the runs' table */
    if (!as_json && any_rank) {
        printf("# peak memory per rank against its own pipeline stage's prediction\n");
        printf("%-*s %5s %5s | %9s %9s %7s\n", w, "run", "rank", "stage", "mem_MB", "mem_MB",
               "err");
        printf("%-*s %5s %5s | %9s %9s %7s\n", w, "", "", "", "pred", "meas", "");
        for (int i = 0; i < n_paths; i++)
            for (int k = 0; k < rms[i].n; k++) {
                char e[16];
                pct(e, sizeof e,
                    px_report_rel_err((double)rms[i].pred_bytes[k],
                                      (double)rms[i].meas_bytes[k]));
                printf("%-*s %5d %5d | %9.2f %9.2f %7s\n", w, runs[i].label, k,
                       rms[i].stage[k], (double)rms[i].pred_bytes[k] / 1e6,
                       (double)rms[i].meas_bytes[k] / 1e6, e);
            }
    }
    if (!as_json && breakdown) {
        printf("# time by class, seconds per step: predicted vs measured (the mean over the "
               "ranks of each rank's mean over the timed steps); step_err = (pred - meas) / "
               "measured step, the row's part of the step-time error\n");
        printf("%-44s %-22s | %9s %9s %9s | %8s\n", "run", "class", "pred_s", "meas_s",
               "diff_s", "step_err");
        for (int i = 0; i < n_paths; i++)
            px_breakdown_print(stdout, runs[i].label, &bds[i]);
    }
    if (as_json) {
        json_t *root = json_pack("{s:o, s:o, s:o, s:i, s:i}", "runs", jruns,
                                 "worst_step_time_err",
                                 isfinite(worst_time) ? json_real(worst_time) : json_null(),
                                 "worst_peak_memory_err",
                                 isfinite(worst_mem) ? json_real(worst_mem) : json_null(),
                                 "n_runs", n_paths, "n_failed", n_bad);
        if (any_rank)
            json_object_set_new(root, "worst_rank_peak_memory_err",
                                isfinite(worst_rank) ? json_real(worst_rank) : json_null());
        if (max_time >= 0.0)
            json_object_set_new(root, "max_time_err", json_real(max_time));
        if (max_mem >= 0.0)
            json_object_set_new(root, "max_mem_err", json_real(max_mem));
        char *s = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
        if (s) {
            puts(s);
            free(s);
        }
        json_decref(root);
    } else {
        json_decref(jruns);
        char wr[48] = "";
        if (any_rank)
            snprintf(wr, sizeof wr, ", worst |rank memory err| %.1f%%", 100.0 * worst_rank);
        printf("# %d run(s); worst |step time err| %.1f%%, worst |peak memory err| %.1f%%%s; "
               "%d outside the limits\n",
               n_paths, 100.0 * worst_time, 100.0 * worst_mem, wr, n_bad);
    }
    for (int i = 0; i < n_paths; i++) {
        free(rms[i].stage);
        free(rms[i].pred_bytes);
        free(rms[i].meas_bytes);
    }
    free(rms);
    free(bds);
    free(runs);
    free(paths);
    return n_bad ? 1 : 0;
}
