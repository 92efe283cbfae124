/* px_validate_report.c — validate's output: the fixed-column tables, the
 * JSON report and one row's cost breakdown; see px_validate.h. */
#include "px_validate.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_framework.h"

static void fmt_opt(char *buf, size_t n, double v, const char *fmt)
{
    if (v > 0)
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "n/a");
}

static void fmt_pct(char *buf, size_t n, bool have, double e)
{
    if (have)
        snprintf(buf, n, "%+.1f", 100.0 * e);
    else
        snprintf(buf, n, "n/a");
}

/* The families of the usable rows and the refused rows with the reason. */
static void write_families(const px_val_report *r, FILE *out)
{
    if (r->n_families == 0)
        return;
    fprintf(out, "\n# families (id prefix / GPU) of the usable rows: tokens/s per GPU, else "
                 "MFU, else step time; err = pred/meas - 1 (step: meas/pred - 1), + = "
                 "predicted too fast\n");
    fprintf(out, "%-44s %6s %6s %7s %8s %8s %8s  %s\n", "family", "usable", "pred", "refused",
            "mean|e|%", "bias%", "worst%", "worst row");
    for (int g = 0; g <= r->n_families + 1; g++) {
        const px_val_family *f = g < r->n_families    ? &r->families[g]
                                 : g == r->n_families ? &r->all_usable
                                                      : &r->all_lowp_moe;
        fprintf(out, "%-44.44s %6d %6d %7d %8.1f %+8.1f %8.1f  %s\n", f->name, f->n_usable,
                f->n_pred, f->n_refused, 100.0 * f->mean_abs, 100.0 * f->bias,
                100.0 * f->worst_abs, f->n_pred ? f->worst_id : "-");
    }
    bool any = false;
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        if (!w->usable || !w->refused)
            continue;
        if (!any)
            fprintf(out, "\n# refused usable rows and the planner's reason\n");
        any = true;
        fprintf(out, "%-48.48s %s\n", w->id, w->note);
    }
}

/* Published peak memory beside the predicted worst-stage peak, for the rows
 * that publish one.  Both in GiB; the row's figure keeps its framework's
 * convention (docs/cost-model.md, "Published peak memory"): torchtitan's is
 * the caching allocator's reserved peak, set beside the predicted reserved
 * bytes (px_memory_reserved). */
static void write_memory(const px_val_report *r, FILE *out)
{
    bool any = false;
    for (int i = 0; i < r->n_rows; i++)
        any |= r->rows[i].evaluated && r->rows[i].meas_memory_gb > 0;
    if (!any)
        return;
    fprintf(out, "\n# peak memory per GPU, GiB: published (its framework's convention: "
                 "torchtitan = the caching allocator's reserved peak) vs predicted reserved "
                 "(tensors + workspaces + allocator cache, worst stage)\n");
    fprintf(out, "%-40s %-12s %8s %8s %7s\n", "id", "framework", "m_GiB", "p_GiB", "err%");
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        if (!w->evaluated || w->meas_memory_gb <= 0)
            continue;
        double pred =
            (double)px_memory_reserved(&w->res.best.pred.mem) / (1024.0 * 1024.0 * 1024.0);
        fprintf(out, "%-40.40s %-12.12s %8.1f %8.1f %+7.1f\n", w->id, w->call.framework,
                w->meas_memory_gb, pred, 100.0 * (pred / w->meas_memory_gb - 1.0));
    }
}

void px_validate_write_table(const px_val_report *r, FILE *out)
{
    fprintf(out, "# validate: %s, %d rows\n", r->path, r->n_rows);
    fprintf(out, "# conv: HFU = hardware FLOPs (recomputed forward counted), MFU = model FLOPs;"
                 " err = pred/meas - 1\n");
    fprintf(out, "# each row as the plan call of the data README (px_row.h): what it leaves "
                 "unpublished is searched as plan searches it\n");
    fprintf(out, "%-40s %5s %2s %2s %3s %4s %3s %4s %2s %2s %4s %8s %8s %7s %6s %6s %8s %8s %7s\n",
                 "id", "gpus", "tp", "pp", "vpp", "dp", "b", "rc", "sp", "z", "conv", "meas_TF",
                 "pred_TF", "err%", "m_mfu", "p_mfu", "meas_s", "pred_s", "s_err%");
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        if (!w->evaluated) {
            fprintf(out, "%-40.40s not evaluated: %s\n", w->id, w->note);
            continue;
        }
        const px_parallel *p = &w->res.best.par;
        const px_prediction *q = &w->res.best.pred;
        char mtf[16], mmfu[16], mst[16], e1[16], e2[16];
        fmt_opt(mtf, sizeof mtf, w->meas_tflops, "%.1f");
        fmt_opt(mmfu, sizeof mmfu, w->meas_mfu, "%.3f");
        fmt_opt(mst, sizeof mst, w->meas_step_s, "%.2f");
        fmt_pct(e1, sizeof e1, w->on == PX_VAL_ON_TFLOPS, w->err);
        fmt_pct(e2, sizeof e2, w->meas_step_s > 0, w->err_step);
        static const char *const rc[] = {"none", "sel", "full"};
        fprintf(out,
                "%-40.40s %5d %2d %2d %3d %4d %3lld %4s %2d %2d %4s %8s %8.1f %7s %6s %6.3f %8s "
                "%8.2f %7s\n",
                w->id, w->call.gpus, p->tp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
                rc[p->recompute], p->sp ? 1 : 0, p->zero,
                w->conv == PX_VAL_CONV_HW ? "HFU" : "MFU", mtf, w->pred_tflops, e1, mmfu,
                q->mfu, mst, q->time.step_s, e2);
    }

    bool any_layer = false;
    for (int i = 0; i < r->n_rows; i++)
        any_layer |= r->rows[i].evaluated && r->rows[i].meas_layer_fwd_s > 0;
    if (any_layer) {
        fprintf(out, "\n# one transformer layer, one micro-batch (ms)\n");
        fprintf(out, "%-40s %8s %8s %8s %8s %8s %8s %7s\n", "id", "m_fwd", "p_fwd", "m_bwd",
                "p_bwd", "m_total", "p_total", "err%");
        for (int i = 0; i < r->n_rows; i++) {
            const px_val_row *w = &r->rows[i];
            if (!w->evaluated || w->meas_layer_fwd_s <= 0)
                continue;
            double mt = w->meas_layer_fwd_s + w->meas_layer_bwd_s,
                   pt = w->pred_layer_fwd_s + w->pred_layer_bwd_s;
            fprintf(out, "%-40.40s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %+7.1f\n", w->id,
                    1e3 * w->meas_layer_fwd_s, 1e3 * w->pred_layer_fwd_s,
                    1e3 * w->meas_layer_bwd_s, 1e3 * w->pred_layer_bwd_s, 1e3 * mt, 1e3 * pt,
                    100.0 * (pt / mt - 1.0));
        }
    }
    write_memory(r, out);
    if (r->n_ratios > 0) {
        fprintf(out, "\n# full / selective recompute time ratios (bound %.0f%%)\n",
                100.0 * PX_VALIDATE_MAX_RATIO_ERR);
        fprintf(out, "%-40s %-40s %7s %7s %7s\n", "full", "selective", "meas", "pred", "err%");
        for (int i = 0; i < r->n_ratios; i++) {
            const px_val_ratio *q = &r->ratios[i];
            fprintf(out, "%-40.40s %-40.40s %7.3f %7.3f %+7.1f\n", r->rows[q->full_row].id,
                    r->rows[q->sel_row].id, q->meas_ratio, q->pred_ratio, 100.0 * q->err);
        }
    }
    fprintf(out, "\n# mean and worst absolute error by group (primary metric: TFLOP/s, else step"
                 " time, else layer time)\n");
    fprintf(out, "%-28s %4s %8s %8s  %s\n", "group", "n", "mean%", "worst%", "worst row");
    for (int g = 0; g < r->n_groups; g++) {
        const px_val_stat *s = &r->groups[g];
        fprintf(out, "%-28.28s %4d %8.1f %8.1f  %s\n", s->name, s->n, 100.0 * s->mean_abs,
                100.0 * s->worst_abs, s->worst_id);
    }
    const px_val_stat *all[2] = {&r->overall_tflops, &r->overall_step};
    for (int k = 0; k < 2; k++)
        fprintf(out, "%-28.28s %4d %8.1f %8.1f  %s\n", all[k]->name, all[k]->n,
                100.0 * all[k]->mean_abs, 100.0 * all[k]->worst_abs, all[k]->worst_id);
    write_families(r, out);
    char why[256];
    bool ok = px_validate_within_bounds(r, why, sizeof why);
    fprintf(out, "# bounds (throughput MAE <= %.0f%%, group MAE <= %.0f%%, ratios <= %.0f%%): %s%s%s\n",
            100.0 * PX_VALIDATE_MAX_MAE, 100.0 * PX_VALIDATE_MAX_GROUP_MAE,
            100.0 * PX_VALIDATE_MAX_RATIO_ERR, ok ? "pass" : "FAIL", ok ? "" : ": ",
            ok ? "" : why);
}

px_status px_validate_explain(const px_val_report *r, const char *id, FILE *out, px_error *err)
{
    const px_val_row *w = NULL;
    for (int i = 0; i < r->n_rows && !w; i++)
        if (strcmp(r->rows[i].id, id) == 0)
            w = &r->rows[i];
    if (!w || !w->evaluated)
        return PX_FAIL(err, PX_ERR_NOT_FOUND, "row \"%s\": %s%.900s", id,
                       w ? "not evaluated: " : "no such id in the file", w ? w->note : "");
    px_framework *fw = malloc(sizeof *fw);
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_prediction p;
    px_cost_detail d;
    const px_parallel *par = &w->res.best.par;
    px_status st = fw && ctx ? px_row_load_framework(&w->call, NULL, NULL, fw, err)
                             : PX_FAIL(err, PX_ERR_NOMEM, "validate: out of memory");
    if (st == PX_OK)
        st = px_cost_ctx_init(ctx, &w->call.model, &w->call.hw, err);
    if (st == PX_OK) {
        ctx->run = &fw->run;
        st = px_cost_eval(ctx, par, 0.0, 0.0, &p, &d, err);
    }
    free(fw);
    free(ctx);
    if (st != PX_OK)
        return st;
    char args[1024];
    px_row_plan_args(&w->call, args, sizeof args);
    fprintf(out, "# %s: plan --hw %s%s %s\n", w->id, w->call.hw_name,
            w->call.hw_derived ? " (a copy with the row's memory / node size)" : "", args);
    fprintf(out, "# predicted: tp %d pp %d vpp %d cp %d ep %d etp %d dp %d, b %lld x m %lld, "
                 "recompute %s, sp %d, zero %d, flash %d\n",
            par->tp, par->pp, par->vpp, par->cp, par->ep, par->etp, par->dp,
            (long long)par->micro_batch, (long long)par->n_micro,
            px_recompute_name(par->recompute), par->sp, par->zero, par->flash_attention);
    const px_time *t = &p.time;
    fprintf(out, "%-28s %12s %8s\n", "quantity", "seconds", "of step");
    struct {
        const char *name;
        double v;
    } q[] = {{"step", t->step_s},
             {"compute fwd", d.compute_fwd_s},
             {"compute bwd", d.compute_bwd_s},
             {"compute recompute", d.compute_recompute_s},
             {"  of which gemm", d.gemm_s},
             {"  of which attention core", d.attn_s},
             {"  of which memory-bound", d.membound_s},
             {"tp comm exposed", d.tp_exposed_s},
             {"cp comm exposed", d.cp_exposed_s},
             {"ep comm exposed", d.ep_exposed_s},
             {"pp comm exposed", d.pp_exposed_s},
             {"dp comm total", d.dp_total_s},
             {"dp comm exposed", d.dp_exposed_s},
             {"bubble", t->bubble_s},
             {"optimizer", t->optimizer_s},
             {"stage micro-batch", d.stage_mb_s}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        fprintf(out, "%-28s %12.4f %7.1f%%\n", q[i].name, q[i].v,
                t->step_s > 0 ? 100.0 * q[i].v / t->step_s : 0.0);
    fprintf(out, "%-28s %12.2f GB\n", "memory per GPU", (double)p.mem.total / 1e9);
    const struct {
        const char *name;
        int64_t v;
    } mq[] = {{"  weights", p.mem.weights},         {"  gradients", p.mem.grads},
              {"  optimizer", p.mem.optimizer},     {"  activations", p.mem.activations},
              {"  buffers", p.mem.buffers}};
    for (size_t i = 0; i < sizeof mq / sizeof mq[0]; i++)
        fprintf(out, "%-28s %12.2f GB\n", mq[i].name, (double)mq[i].v / 1e9);
    fprintf(out, "%-28s %12.3f\n", "mfu", p.mfu);
    fprintf(out, "%-28s %12.3f\n", "hfu", p.hfu);
    return PX_OK;
}

static json_t *stat_json(const px_val_stat *s)
{
    return json_pack("{s:s, s:i, s:f, s:f, s:s}", "name", s->name, "n", s->n, "mean_abs_err",
                     s->mean_abs, "worst_abs_err", s->worst_abs, "worst_id", s->worst_id);
}

static json_t *num_or_null(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

/* The plan call of a row: its family, profile, options and compared quantity. */
static json_t *call_json(const px_row_call *c)
{
    static const char *const on[] = {"none", "tokens_per_s_per_gpu", "mfu", "step_time_s"};
    char args[1024];
    px_row_plan_args(c, args, sizeof args);
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:s, s:f, s:s}", "family", c->family, "hw",
                     c->hw_name, "hw_derived", c->hw_derived, "framework", c->framework,
                     "release", c->release[0] ? c->release : "none", "precision",
                     px_precision_name(c->precision), "on", on[c->on], "measured", c->measured,
                     "plan_args", args);
}

/* What an evaluated row predicted. */
static void row_prediction_json(const px_val_row *w, json_t *o)
{
    const px_parallel *p = &w->res.best.par;
    const px_prediction *q = &w->res.best.pred;
    json_object_set_new(o, "predicted", json_real(w->res.predicted));
    json_object_set_new(o, "time_limited", json_boolean(w->res.time_limited));
    json_object_set_new(o, "pred_tokens_per_s_per_gpu", json_real(w->pred_tok_gpu));
    json_object_set_new(o, "config",
                        json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:s, s:b, s:i, s:b}",
                                  "tp", p->tp, "cp", p->cp, "pp", p->pp, "vpp", p->vpp, "dp",
                                  p->dp, "ep", p->ep, "micro_batch", (json_int_t)p->micro_batch,
                                  "n_micro", (json_int_t)p->n_micro, "recompute",
                                  px_recompute_name(p->recompute), "sp", p->sp, "zero", p->zero,
                                  "flash_attention", p->flash_attention));
    json_object_set_new(o, "conv", json_string(w->conv == PX_VAL_CONV_HW ? "hfu" : "mfu"));
    json_object_set_new(o, "meas_tflops", num_or_null(w->meas_tflops));
    json_object_set_new(o, "pred_tflops", json_real(w->pred_tflops));
    json_object_set_new(o, "meas_mfu", num_or_null(w->meas_mfu));
    json_object_set_new(o, "pred_mfu", json_real(q->mfu));
    json_object_set_new(o, "pred_hfu", json_real(q->hfu));
    json_object_set_new(o, "meas_step_s", num_or_null(w->meas_step_s));
    json_object_set_new(o, "pred_step_s", json_real(q->time.step_s));
    json_object_set_new(o, "meas_layer_fwd_s", num_or_null(w->meas_layer_fwd_s));
    json_object_set_new(o, "meas_layer_bwd_s", num_or_null(w->meas_layer_bwd_s));
    json_object_set_new(o, "pred_layer_fwd_s", json_real(w->pred_layer_fwd_s));
    json_object_set_new(o, "pred_layer_bwd_s", json_real(w->pred_layer_bwd_s));
    json_object_set_new(o, "err", w->on != PX_VAL_ON_NONE ? json_real(w->err) : json_null());
    json_object_set_new(o, "meas_memory_gb", num_or_null(w->meas_memory_gb));
    json_object_set_new(o, "pred_memory_bytes",
                        json_integer((json_int_t)px_memory_reserved(&q->mem)));
    json_object_set_new(o, "pred_device_memory_bytes", json_integer((json_int_t)q->mem.total));
}

px_status px_validate_write_json(const px_val_report *r, FILE *out, px_error *err)
{
    json_t *root = json_object(), *rows = json_array(), *groups = json_array(),
           *ratios = json_array();
    if (!root || !rows || !groups || !ratios) {
        json_decref(root);
        json_decref(rows);
        json_decref(groups);
        json_decref(ratios);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        json_t *o = json_pack("{s:s, s:s, s:b, s:s, s:b, s:b, s:b}", "id", w->id, "group",
                              w->group, "evaluated", w->evaluated, "note", w->note, "mapped",
                              w->mapped, "usable", w->usable, "refused", w->refused);
        if (w->mapped)
            json_object_set_new(o, "call", call_json(&w->call));
        if (w->fam_on)
            json_object_set_new(o, "family_err", json_real(w->fam_err));
        json_object_set_new(o, "meas_tokens_per_s_per_gpu", num_or_null(w->meas_tok_gpu));
        if (w->evaluated)
            row_prediction_json(w, o);
        json_array_append_new(rows, o);
    }
    for (int g = 0; g < r->n_groups; g++)
        json_array_append_new(groups, stat_json(&r->groups[g]));
    for (int i = 0; i < r->n_ratios; i++) {
        const px_val_ratio *q = &r->ratios[i];
        json_array_append_new(ratios,
                              json_pack("{s:s, s:s, s:f, s:f, s:f}", "full",
                                        r->rows[q->full_row].id, "selective",
                                        r->rows[q->sel_row].id, "meas_ratio", q->meas_ratio,
                                        "pred_ratio", q->pred_ratio, "err", q->err));
    }
    json_object_set_new(root, "file", json_string(r->path));
    json_object_set_new(root, "rows", rows);
    json_object_set_new(root, "groups", groups);
    json_object_set_new(root, "ratios", ratios);
    json_object_set_new(root, "overall_tflops", stat_json(&r->overall_tflops));
    json_object_set_new(root, "overall_step", stat_json(&r->overall_step));
    json_object_set_new(root, "within_bounds", json_boolean(px_validate_within_bounds(r, NULL, 0)));
    json_t *fams = json_array();
    for (int g = 0; g <= r->n_families + 1; g++) {
        const px_val_family *f = g < r->n_families    ? &r->families[g]
                                 : g == r->n_families ? &r->all_usable
                                                      : &r->all_lowp_moe;
        json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:s}", "name", f->name,
                              "usable", f->n_usable, "predicted", f->n_pred, "refused",
                              f->n_refused, "mean_abs_err", f->mean_abs, "bias", f->bias,
                              "worst_abs_err", f->worst_abs, "worst_id", f->worst_id);
        if (g < r->n_families)
            json_array_append_new(fams, o);
        else
            json_object_set_new(root, g == r->n_families ? "all_usable" : "all_lowp_moe", o);
    }
    json_object_set_new(root, "families", fams);
    int rc = json_dumpf(root, out, JSON_SORT_KEYS | JSON_INDENT(1));
    json_decref(root);
    if (rc != 0)
        return PX_FAIL(err, PX_ERR_IO, "could not write the JSON report");
    fputc('\n', out);
    return PX_OK;
}

