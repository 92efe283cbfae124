/* px_validate.c — published runs in, predictions and errors out: every row
 * through the plan call of the data README (px_row.h); see px_validate.h and
 * docs/validation.md. */
#include "px_validate.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_cost.h"
#include "px_framework.h"

/* ------------------------------------------------------------------ */
/* Loading: each row as its plan call                                  */

static double jpos_or(const json_t *obj, const char *key, double dflt)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : dflt;
}

static const char *jstr(const json_t *obj, const char *key)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool starts_with(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* The measured figures of a row and the FLOP convention its TFLOP/s counts:
 * HFU when util_metric says so, or when it publishes an HFU and no MFU. */
static void row_measured(const json_t *je, px_val_row *row)
{
    row->meas_tflops = jpos_or(je, "tflops_per_gpu", -1.0);
    row->meas_mfu = jpos_or(je, "mfu", -1.0);
    row->meas_hfu = jpos_or(je, "hfu", -1.0);
    row->meas_step_s = jpos_or(je, "step_time_s", -1.0);
    row->meas_tok_gpu = jpos_or(je, "tokens_per_sec_per_gpu", -1.0);
    row->meas_layer_fwd_s = row->meas_layer_bwd_s = -1.0;
    double fwd_ms = jpos_or(je, "layer_forward_ms", -1.0),
           bwd_ms = jpos_or(je, "layer_backward_ms", -1.0);
    if (fwd_ms > 0 && bwd_ms > 0) {
        row->meas_layer_fwd_s = fwd_ms * 1e-3;
        row->meas_layer_bwd_s = bwd_ms * 1e-3;
    }
    const char *um = jstr(je, "util_metric");
    row->conv = starts_with(um, "HFU") ||
                        (row->meas_hfu > 0 && row->meas_mfu <= 0 && !starts_with(um, "MFU"))
                    ? PX_VAL_CONV_HW
                    : PX_VAL_CONV_MODEL;
}

static void load_row(const json_t *jr, const char *profiles_dir, px_val_row *row)
{
    memset(row, 0, sizeof *row);
    const char *id = jstr(jr, "id"), *group = jstr(jr, "group");
    snprintf(row->id, sizeof row->id, "%s", id ? id : "?");
    snprintf(row->group, sizeof row->group, "%s", group ? group : "?");
    row_measured(json_object_get(jr, "measured"), row);
    row->usable = px_row_usable(jr, NULL, 0);
    px_error e;
    px_error_clear(&e);
    row->mapped = px_row_map(jr, profiles_dir, &row->call, &e) == PX_OK;
    snprintf(row->note, sizeof row->note, "%s", row->mapped ? row->call.note : e.msg);
    row->refused = row->usable && !row->mapped;
}

px_status px_validate_load(const char *path, const char *profiles_dir, px_val_report *out,
                           px_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    if (profiles_dir)
        snprintf(out->profiles_dir, sizeof out->profiles_dir, "%s", profiles_dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        bool io = jerr.line <= 0;
        return px_error_set(err, io ? PX_ERR_IO : PX_ERR_PARSE, path, io ? 0 : jerr.line,
                            io ? 0 : jerr.column, "%s", jerr.text);
    }
    if (!json_is_array(root) || json_array_size(root) == 0) {
        json_decref(root);
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "top level: expected a non-empty array of published runs");
    }
    size_t n = json_array_size(root);
    out->rows = calloc(n, sizeof *out->rows);
    if (!out->rows) {
        json_decref(root);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for %zu rows", n);
    }
    out->n_rows = (int)n;
    for (size_t i = 0; i < n; i++) {
        json_t *jr = json_array_get(root, i);
        if (!json_is_object(jr)) {
            json_decref(root);
            px_validate_free(out);
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "row %zu: expected an object", i);
        }
        load_row(jr, profiles_dir, &out->rows[i]);
    }
    json_decref(root);
    return PX_OK;
}

void px_validate_free(px_val_report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n_rows = 0;
}

/* ------------------------------------------------------------------ */
/* Prediction: the plan call of each row                               */

/* The TFLOP/s and one layer's times of the row's predicted plan, and the
 * errors against what the row measured. */
static px_status row_compare(px_val_row *row, const px_framework *fw, px_error *err)
{
    const px_prediction *p = &row->res.best.pred;
    const px_parallel *par = &row->res.best.par;
    double step = p->time.step_s;
    double flops = row->conv == PX_VAL_CONV_HW ? p->hw_flops_per_step : p->model_flops_per_step;
    row->pred_tflops = step > 0 ? flops / step / row->call.gpus / 1e12 : 0.0;
    row->pred_tok_gpu = p->tokens_per_s / row->call.gpus;
    /* one transformer layer, one micro-batch: Korthikanti's Table 4 */
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    if (!ctx)
        return PX_FAIL(err, PX_ERR_NOMEM, "validate: no memory for the cost context");
    px_status st = px_cost_ctx_init(ctx, &row->call.model, &row->call.hw, err);
    if (st == PX_OK) {
        ctx->run = &fw->run;
        px_layer_cost lc;
        px_cost_layer(ctx, par, 0, &lc);
        row->pred_layer_fwd_s = lc.fwd_s;
        row->pred_layer_bwd_s = lc.bwd_s + lc.recompute_s[par->recompute];
    }
    free(ctx);
    if (row->meas_tflops > 0) {
        row->on = PX_VAL_ON_TFLOPS;
        row->err = row->pred_tflops / row->meas_tflops - 1.0;
    } else if (row->meas_step_s > 0) {
        row->on = PX_VAL_ON_STEP;
        row->err = step / row->meas_step_s - 1.0;
    } else if (row->meas_layer_fwd_s > 0) {
        row->on = PX_VAL_ON_LAYER;
        row->err = (row->pred_layer_fwd_s + row->pred_layer_bwd_s) /
                       (row->meas_layer_fwd_s + row->meas_layer_bwd_s) -
                   1.0;
    }
    if (row->meas_step_s > 0)
        row->err_step = step / row->meas_step_s - 1.0;
    row->fam_on = row->usable && row->call.on != PX_ROW_ON_NONE;
    row->fam_err = row->res.err;
    return st;
}

/* Predicts one mapped row; a planner refusal is the row's note, not an
 * error of the run. */
static px_status predict_row(px_val_row *row, px_framework *fw, px_error *err)
{
    px_error e;
    px_error_clear(&e);
    px_status st = px_row_load_framework(&row->call, NULL, NULL, fw, &e);
    if (st == PX_OK)
        st = px_row_predict(&row->call, NULL, fw, &row->res, &e);
    if (st == PX_ERR_NOMEM) {
        if (err)
            *err = e;
        return st;
    }
    if (st != PX_OK) {
        snprintf(row->note, sizeof row->note, "%s", e.msg);
        row->refused = row->usable;
        return PX_OK;
    }
    row->evaluated = true;
    return row_compare(row, fw, err);
}

static void stat_add(px_val_stat *s, const char *id, double err)
{
    double a = fabs(err);
    s->mean_abs = (s->mean_abs * s->n + a) / (s->n + 1);
    s->n++;
    if (a > s->worst_abs || s->n == 1) {
        s->worst_abs = a;
        snprintf(s->worst_id, sizeof s->worst_id, "%s", id);
    }
}

/* The time a row's measurement stands for, for ratios: step, layer, or
 * (equal model FLOPs per step) the inverse of an MFU-convention TFLOP/s. */
static bool ratio_time(const px_val_row *r, int kind, double *meas, double *pred)
{
    switch (kind) {
    case 0:
        if (r->meas_step_s <= 0)
            return false;
        *meas = r->meas_step_s;
        *pred = r->res.best.pred.time.step_s;
        return true;
    case 1:
        if (r->meas_layer_fwd_s <= 0)
            return false;
        *meas = r->meas_layer_fwd_s + r->meas_layer_bwd_s;
        *pred = r->pred_layer_fwd_s + r->pred_layer_bwd_s;
        return true;
    default:
        if (r->meas_tflops <= 0 || r->conv != PX_VAL_CONV_MODEL)
            return false;
        *meas = 1.0 / r->meas_tflops;
        *pred = 1.0 / r->pred_tflops;
        return true;
    }
}

static void find_ratios(px_val_report *rep)
{
    rep->n_ratios = 0;
    rep->worst_ratio_err = 0.0;
    for (int i = 0; i < rep->n_rows; i++) {
        const px_val_row *f = &rep->rows[i];
        if (!f->evaluated || f->call.recompute != PX_RECOMPUTE_FULL)
            continue;
        int best = -1;
        for (int j = 0; j < rep->n_rows; j++) {
            const px_val_row *s = &rep->rows[j];
            const px_row_call *sc = &s->call, *fc = &f->call;
            if (!s->evaluated || sc->recompute != PX_RECOMPUTE_SELECTIVE ||
                strcmp(s->group, f->group) != 0 || sc->model.hidden != fc->model.hidden ||
                sc->model.n_layers != fc->model.n_layers || sc->gpus != fc->gpus ||
                sc->tp != fc->tp || sc->pp != fc->pp || sc->micro_batch != fc->micro_batch)
                continue;
            bool same_sp = s->res.best.par.sp == f->res.best.par.sp;
            if (best < 0 || (same_sp && rep->rows[best].res.best.par.sp != f->res.best.par.sp))
                best = j;
        }
        if (best < 0 || rep->n_ratios >= PX_VALIDATE_MAX_RATIOS)
            continue;
        const px_val_row *s = &rep->rows[best];
        for (int kind = 0; kind < 3; kind++) {
            double mf, pf, ms, ps;
            if (!ratio_time(f, kind, &mf, &pf) || !ratio_time(s, kind, &ms, &ps))
                continue;
            px_val_ratio *q = &rep->ratios[rep->n_ratios++];
            q->full_row = i;
            q->sel_row = best;
            q->meas_ratio = mf / ms;
            q->pred_ratio = pf / ps;
            q->err = q->pred_ratio / q->meas_ratio - 1.0;
            if (fabs(q->err) > rep->worst_ratio_err)
                rep->worst_ratio_err = fabs(q->err);
            break;
        }
    }
}

static void family_add(px_val_family *f, const px_val_row *row)
{
    f->n_usable++;
    if (!row->fam_on) {
        f->n_refused++;
        return;
    }
    double a = fabs(row->fam_err);
    f->mean_abs = (f->mean_abs * f->n_pred + a) / (f->n_pred + 1);
    f->bias = (f->bias * f->n_pred + row->fam_err) / (f->n_pred + 1);
    f->n_pred++;
    if (a > f->worst_abs || f->n_pred == 1) {
        f->worst_abs = a;
        snprintf(f->worst_id, sizeof f->worst_id, "%s", row->id);
    }
}

/* Adds an evaluated row's primary error to its group and the totals. */
static px_status add_to_groups(px_val_report *rep, const px_val_row *row, px_error *err)
{
    if (row->on == PX_VAL_ON_NONE)
        return PX_OK;
    int g = 0;
    while (g < rep->n_groups && strcmp(rep->groups[g].name, row->group) != 0)
        g++;
    if (g == rep->n_groups) {
        if (rep->n_groups >= PX_VALIDATE_MAX_GROUPS)
            return PX_FAIL(err, PX_ERR_INVALID, "more than %d groups in %s",
                           PX_VALIDATE_MAX_GROUPS, rep->path);
        memset(&rep->groups[g], 0, sizeof rep->groups[g]);
        snprintf(rep->groups[g].name, sizeof rep->groups[g].name, "%s", row->group);
        rep->n_groups++;
    }
    stat_add(&rep->groups[g], row->id, row->err);
    if (row->on == PX_VAL_ON_TFLOPS)
        stat_add(&rep->overall_tflops, row->id, row->err);
    if (row->meas_step_s > 0)
        stat_add(&rep->overall_step, row->id, row->err_step);
    return PX_OK;
}

static bool row_lowp_moe(const px_val_row *row)
{
    return row->call.moe ||
           (row->call.precision != PX_PREC_BF16 && row->call.precision != PX_PREC_FP16);
}

/* Families of the usable rows (id prefix / GPU), all_usable over all of
 * them, all_lowp_moe over the low-precision and MoE ones.  A usable row
 * without a prediction counts as refused (its note says why). */
static px_status families(px_val_report *rep, px_error *err)
{
    rep->n_families = 0;
    memset(&rep->all_usable, 0, sizeof rep->all_usable);
    snprintf(rep->all_usable.name, sizeof rep->all_usable.name, "all");
    memset(&rep->all_lowp_moe, 0, sizeof rep->all_lowp_moe);
    snprintf(rep->all_lowp_moe.name, sizeof rep->all_lowp_moe.name, "all fp8 or moe");
    for (int i = 0; i < rep->n_rows; i++) {
        px_val_row *row = &rep->rows[i];
        if (!row->usable)
            continue;
        const char *name = row->mapped ? row->call.family : "unmapped";
        int g = 0;
        while (g < rep->n_families && strcmp(rep->families[g].name, name) != 0)
            g++;
        if (g == rep->n_families) {
            if (rep->n_families >= PX_VALIDATE_MAX_FAMILIES)
                return PX_FAIL(err, PX_ERR_INVALID, "more than %d families in %s",
                               PX_VALIDATE_MAX_FAMILIES, rep->path);
            memset(&rep->families[g], 0, sizeof rep->families[g]);
            snprintf(rep->families[g].name, sizeof rep->families[g].name, "%s", name);
            rep->families[g].all_lowp_moe = true;
            rep->n_families++;
        }
        rep->families[g].all_lowp_moe &= row_lowp_moe(row);
        family_add(&rep->families[g], row);
        family_add(&rep->all_usable, row);
        if (row_lowp_moe(row))
            family_add(&rep->all_lowp_moe, row);
    }
    return PX_OK;
}

/* The bounds on one set of rows (all, the total over them) and its
 * families (with lowp_moe, only those made of low-precision or MoE rows). */
static bool set_bounds(const px_val_report *r, const px_val_family *all, bool lowp_moe,
                       const char *label, double max_mean, double max_family,
                       double max_refused, char *why, int why_len)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        why_len = (int)sizeof dummy;
    }
    why[0] = '\0';
    if (all->n_usable == 0 || all->n_pred == 0) {
        snprintf(why, (size_t)why_len, "no usable %s row was predicted", label);
        return false;
    }
    if (all->mean_abs > max_mean) {
        snprintf(why, (size_t)why_len, "%s: mean |error| %.1f%% over %d rows > %.1f%%", label,
                 100.0 * all->mean_abs, all->n_pred, 100.0 * max_mean);
        return false;
    }
    double refused = (double)all->n_refused / all->n_usable;
    if (refused > max_refused) {
        snprintf(why, (size_t)why_len, "%s: %d of %d usable rows refused (%.1f%% > %.1f%%)",
                 label, all->n_refused, all->n_usable, 100.0 * refused, 100.0 * max_refused);
        return false;
    }
    for (int g = 0; g < r->n_families; g++) {
        const px_val_family *f = &r->families[g];
        if ((!lowp_moe || f->all_lowp_moe) && f->n_pred >= PX_VALIDATE_FAMILY_MIN_ROWS &&
            f->mean_abs > max_family) {
            snprintf(why, (size_t)why_len, "family %s: mean |error| %.1f%% > %.1f%%", f->name,
                     100.0 * f->mean_abs, 100.0 * max_family);
            return false;
        }
    }
    return true;
}

bool px_validate_family_bounds(const px_val_report *r, double max_mean, double max_family,
                               double max_refused, char *why, int why_len)
{
    return set_bounds(r, &r->all_usable, false, "usable", max_mean, max_family, max_refused,
                      why, why_len);
}

bool px_validate_lowp_moe_bounds(const px_val_report *r, double max_mean, double max_family,
                                 double max_refused, char *why, int why_len)
{
    return set_bounds(r, &r->all_lowp_moe, true, "fp8/MoE", max_mean, max_family, max_refused,
                      why, why_len);
}

px_status px_validate_run(px_val_report *rep, px_error *err)
{
    rep->n_groups = 0;
    memset(&rep->overall_tflops, 0, sizeof rep->overall_tflops);
    memset(&rep->overall_step, 0, sizeof rep->overall_step);
    snprintf(rep->overall_tflops.name, sizeof rep->overall_tflops.name, "all (TFLOP/s)");
    snprintf(rep->overall_step.name, sizeof rep->overall_step.name, "all (step time)");
    px_framework *fw = malloc(sizeof *fw);
    if (!fw)
        return PX_FAIL(err, PX_ERR_NOMEM, "validate: no memory for a framework profile");
    px_status st = PX_OK;
    for (int i = 0; st == PX_OK && i < rep->n_rows; i++) {
        px_val_row *row = &rep->rows[i];
        if (!row->mapped)
            continue; /* load_row left a note */
        st = predict_row(row, fw, err);
        if (st == PX_OK && row->evaluated)
            st = add_to_groups(rep, row, err);
    }
    free(fw);
    if (st != PX_OK)
        return st;
    find_ratios(rep);
    return families(rep, err);
}

px_status px_validate_file(const char *path, const char *profiles_dir, px_val_report *out,
                           px_error *err)
{
    px_status st = px_validate_load(path, profiles_dir, out, err);
    if (st != PX_OK)
        return st;
    st = px_validate_run(out, err);
    if (st != PX_OK)
        px_validate_free(out);
    return st;
}

bool px_validate_within_bounds(const px_val_report *r, char *why, int why_len)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        why_len = (int)sizeof dummy;
    }
    why[0] = '\0';
    if (r->overall_tflops.n == 0) {
        snprintf(why, (size_t)why_len, "no row with a measured throughput was evaluated");
        return false;
    }
    if (r->overall_tflops.mean_abs > PX_VALIDATE_MAX_MAE) {
        snprintf(why, (size_t)why_len,
                 "throughput mean absolute error %.1f%% over %d rows > %.0f%%",
                 100.0 * r->overall_tflops.mean_abs, r->overall_tflops.n,
                 100.0 * PX_VALIDATE_MAX_MAE);
        return false;
    }
    for (int g = 0; g < r->n_groups; g++)
        if (r->groups[g].mean_abs > PX_VALIDATE_MAX_GROUP_MAE) {
            snprintf(why, (size_t)why_len, "group %s: mean absolute error %.1f%% > %.0f%%",
                     r->groups[g].name, 100.0 * r->groups[g].mean_abs,
                     100.0 * PX_VALIDATE_MAX_GROUP_MAE);
            return false;
        }
    for (int i = 0; i < r->n_ratios; i++)
        if (fabs(r->ratios[i].err) > PX_VALIDATE_MAX_RATIO_ERR) {
            snprintf(why, (size_t)why_len,
                     "full/selective ratio of %s: predicted %.3f vs measured %.3f (%+.1f%%, "
                     "bound %.0f%%)",
                     r->rows[r->ratios[i].full_row].id, r->ratios[i].pred_ratio,
                     r->ratios[i].meas_ratio, 100.0 * r->ratios[i].err,
                     100.0 * PX_VALIDATE_MAX_RATIO_ERR);
            return false;
        }
    return true;
}

#define PX_VALIDATE_REL_SHARED "/../shared/data/published-megatron.json"
#define PX_VALIDATE_REL_COPY "/tests/validate/data/published-megatron.json"

void px_validate_default_path(char *buf, int buf_len)
{
    const char *env = getenv("PARALLAX_SOURCE_ROOT");
    const char *roots[2] = {env && env[0] ? env : NULL, PX_SOURCE_ROOT};
    const char *rels[2] = {PX_VALIDATE_REL_SHARED, PX_VALIDATE_REL_COPY};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++) {
            if (!roots[i])
                continue;
            snprintf(buf, (size_t)buf_len, "%s%s", roots[i], rels[k]);
            if (access(buf, R_OK) == 0)
                return;
        }
    snprintf(buf, (size_t)buf_len, "%s%s", roots[0] ? roots[0] : PX_SOURCE_ROOT,
             PX_VALIDATE_REL_COPY);
}
