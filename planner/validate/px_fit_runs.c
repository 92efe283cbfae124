/* px_fit_runs.c — measured runs fitted into profiles (px_fit_runs.h). */
#include "px_fit_runs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_jfield.h"
#include "px_plan_json.h"

/* The runs' plan calls and frameworks (each the base with the run's own
 * release, as `plan --framework BASE --framework-release R` loads it). */
typedef struct {
    const px_row_call *calls;
    px_row_call *pinned;  /* each run's call with what its first search chose fixed */
    bool *is_pinned;
    const px_framework *fws;
    px_framework scratch;
} pred_ctx;

/* The call with the dimensions the run leaves to the search fixed at what
 * the search chose: the fit then varies the profiles on the layout `plan`
 * picks for the run, one configuration an evaluation instead of a search. */
static void pin(const px_row_call *call, const px_row_result *r, px_row_call *out)
{
    const px_parallel *par = &r->best.par;
    *out = *call;
    if (out->vpp == 0)
        out->vpp = par->vpp;
    if (out->micro_batch == 0)
        out->micro_batch = par->micro_batch;
    if (out->global_batch == 0)
        out->global_batch = r->global_batch;
    if (out->zero < 0)
        out->zero = par->zero;
    if (out->recompute < 0 && par->n_layer_recompute == 0)
        out->recompute = (int)par->recompute;
    if (out->cp == 0)
        out->cp = par->cp;
    if (out->ep == 0)
        out->ep = par->ep;
}

static px_status predict(void *vc, int run, const px_hw *hw, const px_framework *fw,
                         px_fit_pred *out, px_error *err)
{
    pred_ctx *c = vc;
    c->scratch = c->fws[run];
    for (int i = 0; px_framework_fit_fields[i]; i++)
        px_framework_fit_set(&c->scratch, px_framework_fit_fields[i],
                             px_framework_fit_value(fw, px_framework_fit_fields[i]));
    px_row_result r;
    const px_row_call *call = c->is_pinned[run] ? &c->pinned[run] : &c->calls[run];
    px_status st = px_row_predict(call, hw, &c->scratch, &r, err);
    if (st != PX_OK)
        return st;
    if (!c->is_pinned[run]) {
        pin(&c->calls[run], &r, &c->pinned[run]);
        c->is_pinned[run] = true;
    }
    out->rate = c->calls[run].on == PX_ROW_ON_STEP ? 1.0 / r.predicted : r.predicted;
    out->step_s = r.best.pred.time.step_s;
    out->n_micro = (int)r.best.par.n_micro;
    return PX_OK;
}

static double measured_rate(const px_row_call *c)
{
    return c->on == PX_ROW_ON_STEP ? 1.0 / c->measured : c->measured;
}

/* Maps every row; an unusable one is an error naming the file and row. */
static px_status map_rows(json_t *rows, const char *file, const px_fit_runs_opts *o,
                          px_fit_runs_result *out, px_error *err)
{
    if (!json_is_array(rows) || json_array_size(rows) == 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "expected a non-empty JSON array of runs (the published-runs "
                            "schema, shared/data/README.md)");
    if (json_array_size(rows) > PX_FIT_MAX_RUNS)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%zu runs: at most %d are fitted",
                            json_array_size(rows), PX_FIT_MAX_RUNS);
    out->calls = calloc(json_array_size(rows), sizeof *out->calls);
    if (!out->calls)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        px_status st = px_row_map(row, o->profiles_dir, &out->calls[i], err);
        if (st == PX_OK && out->calls[i].on == PX_ROW_ON_NONE)
            st = PX_FAIL(err, PX_ERR_INVALID, "row %s: measured: no tokens_per_sec_per_gpu, mfu "
                         "or step_time_s to fit to", out->calls[i].id);
        if (st != PX_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return px_error_set(err, st, file, 0, 0, "runs[%zu]: %s", i, msg);
        }
        out->n_runs++;
    }
    return PX_OK;
}

/* The fitted framework: the base profile's file with the fitted runtime
 * fields, their sources and the provenance added (its releases kept). */
static px_status framework_doc(const px_fit_runs_opts *o, const px_framework *fitted,
                               json_t **doc, px_error *err)
{
    char path[1024];
    json_t *root = NULL;
    px_status st = px_framework_path(o->framework, NULL, path, (int)sizeof path, err);
    if (st == PX_OK)
        st = px_jf_load_file(path, &root, err);
    if (st != PX_OK)
        return st;
    json_t *run = json_object_get(root, "runtime"), *src = json_object_get(root, "sources");
    json_object_del(root, "fitted");
    const px_fitted *pv = &fitted->fitted;
    if (json_is_object(run) && json_is_object(src) && pv->n_factors > 0) {
        char why[256];
        snprintf(why, sizeof why,
                 "fitted by calibrate --from-runs to %d measured runs (see \"fitted\")",
                 pv->n_runs);
        for (int i = 0; i < pv->n_factors; i++) {
            json_object_set_new(run, pv->factors[i].field, json_real(pv->factors[i].fitted));
            json_object_set_new(src, pv->factors[i].field, json_string(why));
        }
        json_object_set_new(root, "fitted", px_fitted_to_json(pv));
    }
    *doc = root;
    return PX_OK;
}

static px_status hw_doc(const px_fit_result *fit, json_t **doc, px_error *err)
{
    px_hw hw = fit->hw;
    if (hw.fitted.n_factors > 0) {
        char d[sizeof hw.description];
        snprintf(d, sizeof d, "%.180s; fitted to %d measured runs", hw.description,
                 hw.fitted.n_runs);
        snprintf(hw.description, sizeof hw.description, "%s", d);
    }
    return px_hw_to_json(&hw, doc, err);
}

/* Loads the base profiles and each run's framework (its release on the base). */
static px_status load_bases(const px_fit_runs_opts *o, const px_fit_runs_result *out,
                            px_hw *hw, px_framework *fw, px_framework *fws, px_error *err)
{
    px_status st = px_hw_load(o->hw, o->profiles_dir, hw, err);
    if (st == PX_OK)
        st = px_framework_load(o->framework, NULL, fw, err);
    for (int i = 0; i < out->n_runs && st == PX_OK; i++)
        st = px_row_load_framework(&out->calls[i], o->framework, NULL, &fws[i], err);
    return st;
}

px_status px_fit_runs(json_t *rows, const char *file, const px_fit_runs_opts *o,
                      px_fit_runs_result *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    if (!o->hw || !o->hw[0] || !o->framework || !o->framework[0])
        return PX_FAIL(err, PX_ERR_USAGE, "calibrate --from-runs: give the base profiles "
                       "(--hw NAME|FILE and --framework NAME|FILE)");
    px_status st = map_rows(rows, file, o, out, err);
    px_hw *hw = malloc(sizeof *hw);
    px_framework *fw = malloc(sizeof *fw);
    pred_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx && st == PX_OK) {
        ctx->pinned = calloc((size_t)out->n_runs, sizeof *ctx->pinned);
        ctx->is_pinned = calloc((size_t)out->n_runs, sizeof *ctx->is_pinned);
    }
    px_framework *fws = calloc((size_t)(out->n_runs ? out->n_runs : 1), sizeof *fws);
    out->fit = malloc(sizeof *out->fit);
    if (st == PX_OK && (!hw || !fw || !ctx || !ctx->pinned || !ctx->is_pinned || !fws || !out->fit))
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    if (st == PX_OK)
        st = load_bases(o, out, hw, fw, fws, err);
    if (st == PX_OK) {
        ctx->calls = out->calls;
        ctx->fws = fws;
        px_fit_problem p = {.n_runs = out->n_runs, .predict = predict, .ctx = ctx, .hw = hw,
                            .fw = fw, .hw_base = o->hw, .fw_base = o->framework,
                            .max_factors = o->max_factors};
        for (int i = 0; i < out->n_runs; i++) {
            p.ids[i] = out->calls[i].id;
            p.measured[i] = measured_rate(&out->calls[i]);
        }
        st = px_fit_run(&p, o->leave_one_out, out->fit, err);
    }
    if (st == PX_OK)
        st = hw_doc(out->fit, &out->hw_doc, err);
    if (st == PX_OK)
        st = framework_doc(o, &out->fit->fw, &out->fw_doc, err);
    free(hw);
    free(fw);
    if (ctx) {
        free(ctx->pinned);
        free(ctx->is_pinned);
    }
    free(ctx);
    free(fws);
    if (st != PX_OK)
        px_fit_runs_free(out);
    return st;
}

void px_fit_runs_free(px_fit_runs_result *r)
{
    free(r->calls);
    free(r->fit);
    json_decref(r->hw_doc);
    json_decref(r->fw_doc);
    memset(r, 0, sizeof *r);
}

static const char *on_name(px_row_on on)
{
    return on == PX_ROW_ON_TOKENS ? "tokens_per_s_per_gpu" : on == PX_ROW_ON_MFU ? "mfu"
                                                                                : "step_time_s";
}

/* + = predicted too fast, on the run's compared quantity (README's sign). */
static double rel_err(const px_fit_runs_result *r, int i, double pred_rate)
{
    return pred_rate / measured_rate(&r->calls[i]) - 1.0;
}

static bool factor_in_hw(px_fit_factor f)
{
    const char *field = px_fit_factor_field(f);
    for (int i = 0; px_hw_fit_fields[i]; i++)
        if (strcmp(px_hw_fit_fields[i], field) == 0)
            return true;
    return false;
}

static double loo_mean(const px_fit_runs_result *r)
{
    double s = 0.0;
    for (int i = 0; i < r->n_runs; i++)
        s += fabs(rel_err(r, i, r->fit->loo_pred[i]));
    return s / r->n_runs;
}

static bool have_loo(const px_fit_runs_result *r)
{
    return r->n_runs >= 2 && r->fit->loo_pred[0] > 0.0;
}

void px_fit_runs_write_table(const px_fit_runs_result *r, FILE *out)
{
    const px_fit_result *f = r->fit;
    fprintf(out, "# %d runs, %d factor(s) fitted%s (%d evaluations of the runs)\n", r->n_runs,
            f->n_factors, f->kept_base ? ": no improvement, base kept" : "", f->evaluations);
    fprintf(out, "%-22s %-9s %12s %12s %8s   %s\n", "factor", "profile", "base", "fitted",
            "change", "bounds");
    for (int j = 0; j < f->n_factors; j++) {
        px_fit_factor k = f->factor[j];
        double chg = f->base[k] != 0.0 ? f->fitted[k] / f->base[k] - 1.0 : 0.0;
        char c[32];
        if (f->base[k] != 0.0)
            snprintf(c, sizeof c, "%+7.1f%%", 100.0 * chg);
        else
            snprintf(c, sizeof c, "%+.3g", f->fitted[k] - f->base[k]);
        fprintf(out, "%-22s %-9s %12.5g %12.5g %8s   %.4g .. %.4g\n", px_fit_factor_field(k),
                factor_in_hw(k) ? "hw" : "framework", f->base[k], f->fitted[k], c, f->lo[k],
                f->hi[k]);
    }
    for (int k = 0; k < PX_FIT_FACTOR_COUNT; k++)
        if (f->skipped[k])
            fprintf(out, "%-22s not fitted: no run's prediction depends on it\n",
                    px_fit_factor_field((px_fit_factor)k));
    fprintf(out, "%-60s %-20s %12s %8s %8s %8s\n", "run", "compared", "measured", "base",
            "fitted", "left-out");
    for (int i = 0; i < r->n_runs; i++) {
        char loo[16] = "-";
        if (have_loo(r))
            snprintf(loo, sizeof loo, "%+7.1f%%", 100.0 * rel_err(r, i, f->loo_pred[i]));
        fprintf(out, "%-60.60s %-20s %12.5g %+7.1f%% %+7.1f%% %8s\n", r->calls[i].id,
                on_name(r->calls[i].on), r->calls[i].measured,
                100.0 * rel_err(r, i, f->pred_base[i]), 100.0 * rel_err(r, i, f->pred_fit[i]),
                loo);
    }
    fprintf(out, "sum of squared log errors: base %.4g, fitted %.4g\n", f->sse_base, f->sse_fit);
    if (f->n_counts_tried > 1) {
        fprintf(out, "factors fitted by leave-one-out RMS log error:");
        for (int k = 1; k <= f->n_counts_tried; k++)
            fprintf(out, " %d: %.4f%s", k, f->loo_by_count[k], k == f->n_factors ? " (chosen)" : "");
        fputc('\n', out);
    }
    if (have_loo(r))
        fprintf(out, "leave-one-out: mean |error| %.1f%% (each run predicted from a fit on "
                "the others)\n", 100.0 * loo_mean(r));
}

json_t *px_fit_runs_table_json(const px_fit_runs_result *r)
{
    const px_fit_result *f = r->fit;
    json_t *t = json_object(), *runs = json_array(), *fs = json_array(), *sk = json_array();
    if (!t || !runs || !fs || !sk) {
        json_decref(t);
        json_decref(runs);
        json_decref(fs);
        json_decref(sk);
        return NULL;
    }
    for (int j = 0; j < f->n_factors; j++) {
        px_fit_factor k = f->factor[j];
        json_array_append_new(fs, json_pack("{s:s,s:s,s:f,s:f,s:f,s:f}", "field",
                                            px_fit_factor_field(k), "profile",
                                            factor_in_hw(k) ? "hw" : "framework", "base",
                                            f->base[k], "fitted", f->fitted[k], "min", f->lo[k],
                                            "max", f->hi[k]));
    }
    for (int k = 0; k < PX_FIT_FACTOR_COUNT; k++)
        if (f->skipped[k])
            json_array_append_new(sk, json_string(px_fit_factor_field((px_fit_factor)k)));
    for (int i = 0; i < r->n_runs; i++) {
        json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:f}", "id", r->calls[i].id, "compared",
                              on_name(r->calls[i].on), "measured", r->calls[i].measured,
                              "err_base", rel_err(r, i, f->pred_base[i]), "err_fitted",
                              rel_err(r, i, f->pred_fit[i]));
        if (o && have_loo(r))
            json_object_set_new(o, "err_left_out", json_real(rel_err(r, i, f->loo_pred[i])));
        json_array_append_new(runs, o);
    }
    json_object_set_new(t, "factors", fs);
    json_object_set_new(t, "not_exercised", sk);
    json_object_set_new(t, "runs", runs);
    json_object_set_new(t, "sse_base", json_real(f->sse_base));
    json_object_set_new(t, "sse_fitted", json_real(f->sse_fit));
    json_object_set_new(t, "kept_base", json_boolean(f->kept_base));
    json_object_set_new(t, "evaluations", json_integer(f->evaluations));
    if (have_loo(r))
        json_object_set_new(t, "left_out_mean_abs_err", json_real(loo_mean(r)));
    return t;
}
