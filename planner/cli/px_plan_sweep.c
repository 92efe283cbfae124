/* px_plan_sweep.c — plan --sweep KEY=LIST (and --sweep-gpus): one search a
 * point of the product of the lists, the best plan of each written as a
 * table row (with --explain, each point's breakdown after the table), a JSON
 * array element, a CSV row (px_plan_csv.c) or a point of the HTML page's
 * charts (px_html_sweep). */
#include "px_plan_cmd_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "px_html.h"
#include "px_schedule.h"

static void sweep_header(FILE *out, const plan_cli *c, const px_model *model, int n)
{
    const px_sweep_spec *s = c->sweep;
    fprintf(out, "# plan sweep: %s, the best plan of each of %d points (", model->name, n);
    for (int a = 0; a < s->n_axes; a++)
        fprintf(out, "%s%s: %d", a ? " x " : "", px_sweep_key_name(s->axis[a].key),
                s->axis[a].n);
    fprintf(out, "); ms = the whole search\n");
    fprintf(out, "# units: step = seconds per optimizer step; mem = GB (1e9 bytes) per GPU, "
                 "worst stage; m = micro-batches per step\n");
    for (int a = 0; a < s->n_axes; a++)
        fprintf(out, px_sweep_key_is_number(s->axis[a].key) ? "%12s " : "%-14s ",
                px_sweep_key_name(s->axis[a].key));
    fprintf(out, "%10s %9s %8s %4s %3s %3s %3s %3s %3s %5s %4s %5s %4s %-9s %-11s %-8s %8s "
                 "%10s %6s %7s\n",
            "evaluated", "fit", "ms", "TP", "CP", "EP", "ETP", "PP", "VPP", "DP", "mbs", "m",
            "ZeRO", "recompute", "schedule", "prec", "step[s]", "tokens/s", "MFU", "mem[GB]");
}

static void sweep_table_row(FILE *out, const plan_cli *c, const px_sweep_row *r)
{
    const px_sweep_spec *s = c->sweep;
    for (int a = 0; a < s->n_axes; a++) {
        char v[PX_SWEEP_WORD_LEN];
        px_sweep_value_text(s, r, a, v, sizeof v);
        fprintf(out, px_sweep_key_is_number(s->axis[a].key) ? "%12s " : "%-14s ", v);
    }
    fprintf(out, "%10lld %9lld %8.1f ", (long long)r->n_evaluated, (long long)r->n_valid,
            1e3 * r->elapsed_s);
    if (r->st != PX_OK) {
        fprintf(out, " no plan: %s\n", r->msg);
        return;
    }
    const px_parallel *p = &r->best.par;
    const px_prediction *q = &r->best.pred;
    fprintf(out, "%4d %3d %3d %3d %3d %3d %5d %4lld %5lld %4d %-9s %-11s %-8s %8.3f %10.4g "
                 "%5.1f%% %7.1f\n",
            p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
            (long long)p->n_micro, p->zero, recompute_label(p), px_schedule_name(p->schedule),
            r->precision, q->time.step_s, q->tokens_per_s, 100.0 * q->mfu,
            (double)q->mem.total / 1e9);
}

/* One point as JSON: its swept values by key, what the search resolved,
 * and the best plan or the reason there is none. */
static json_t *sweep_point_json(const plan_cli *c, const px_model *model, const px_sweep_row *r)
{
    const px_sweep_spec *s = c->sweep;
    json_t *point = json_object();
    for (int a = 0; a < s->n_axes; a++) {
        const px_sweep_axis *ax = &s->axis[a];
        json_object_set_new(point, px_sweep_key_name(ax->key),
                            px_sweep_key_is_number(ax->key)
                                ? json_integer((json_int_t)ax->num[r->idx[a]])
                                : json_string(ax->word[r->idx[a]]));
    }
    json_t *o = json_pack("{s:o,s:i,s:s,s:s,s:s,s:I,s:I,s:f}", "point", point, "gpus", r->gpus,
                          "hw", r->hw, "framework", r->framework, "precision", r->precision,
                          "evaluated", (json_int_t)r->n_evaluated, "valid",
                          (json_int_t)r->n_valid, "elapsed_s", r->elapsed_s);
    if (r->seq_len > 0)
        json_object_set_new(o, "seq_len", json_integer((json_int_t)r->seq_len));
    if (r->global_batch > 0)
        json_object_set_new(o, "global_batch", json_integer((json_int_t)r->global_batch));
    if (r->st == PX_OK)
        json_object_set_new(o, "best", candidate_json(&r->best, r->seq_len, model->n_layers));
    else
        json_object_set_new(o, "error", json_string(r->msg));
    return o;
}

static px_status sweep_json(FILE *out, const plan_cli *c, const px_model *model,
                            const px_sweep_row *rows, int n, px_error *err)
{
    json_t *keys = json_array(), *arr = json_array();
    for (int a = 0; a < c->sweep->n_axes; a++)
        json_array_append_new(keys, json_string(px_sweep_key_name(c->sweep->axis[a].key)));
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, sweep_point_json(c, model, &rows[i]));
    /* the profile every point shares; null when the points sweep it */
    json_t *hw = px_sweep_find(c->sweep, PX_SWEEP_HW) || n == 0 ? json_null()
                                                                : json_string(rows[0].hw);
    json_t *root = json_pack("{s:s,s:o,s:o,s:o}", "model", model->name, "hw", hw, "swept",
                             keys, "sweep", arr);
    px_status st = PX_OK;
    if (json_dumpf(root, out, JSON_SORT_KEYS | JSON_INDENT(2)) != 0)
        st = PX_FAIL(err, PX_ERR_IO, "writing the JSON output failed: %s", strerror(errno));
    else
        fputc('\n', out);
    json_decref(root);
    return st;
}

/* The page: the first swept key along x, one series per value of the
 * others (px_html.h). */
static px_status sweep_html(const plan_cli *c, const px_model *model, const px_sweep_row *rows,
                            int n, px_error *err)
{
    const px_sweep_spec *s = c->sweep;
    px_html_sweep_point *pts = calloc((size_t)n, sizeof *pts);
    if (!pts)
        return PX_FAIL(err, PX_ERR_NOMEM, "HTML report: out of memory");
    for (int i = 0; i < n; i++) {
        const px_sweep_row *r = &rows[i];
        px_html_sweep_point *p = &pts[i];
        px_sweep_value_text(s, r, 0, p->x, sizeof p->x);
        size_t len = 0;
        for (int a = 1; a < s->n_axes; a++) {
            char v[PX_SWEEP_WORD_LEN];
            px_sweep_value_text(s, r, a, v, sizeof v);
            len += (size_t)snprintf(p->series + len, sizeof p->series - len, "%s%s=%s",
                                    a > 1 ? ", " : "", px_sweep_key_name(s->axis[a].key), v);
            if (len >= sizeof p->series)
                len = sizeof p->series - 1;
        }
        p->ok = r->st == PX_OK;
        const px_parallel *q = &r->best.par;
        snprintf(p->layout, sizeof p->layout,
                 "TP %d, CP %d, EP %d, PP %d x VPP %d, DP %d, %lld x %lld, ZeRO-%d, %s, %s, %s",
                 q->tp, q->cp, q->ep, q->pp, q->vpp, q->dp, (long long)q->micro_batch,
                 (long long)q->n_micro, q->zero, recompute_label(q),
                 px_schedule_name(q->schedule), r->precision);
        p->step_s = r->best.pred.time.step_s;
        p->tokens_per_s = r->best.pred.tokens_per_s;
        p->mfu = r->best.pred.mfu;
        p->mem_bytes = r->best.pred.mem.total;
        snprintf(p->reason, sizeof p->reason, "%s", r->msg);
    }
    char title[256];
    snprintf(title, sizeof title, "Parallax sweep: %s", model->name);
    char sub[512];
    snprintf(sub, sizeof sub, "the best plan of each of %d points; along x: %s", n,
             px_sweep_key_name(s->axis[0].key));
    px_status st = px_html_sweep_write(c->html, title, sub, px_sweep_key_name(s->axis[0].key),
                                       pts, n, err);
    free(pts);
    return st;
}

/* --explain: each point's breakdown, written while the sweep runs (the
 * search result is the point's own) and printed after the table. */
typedef struct {
    const plan_cli *c;
    const px_model *model;
    FILE *text; /* a memory stream */
    int done, n;
} sweep_explain;

static px_status explain_point(void *arg, const px_sweep_row *r, const px_hw *hw,
                               const px_search_opts *o, const px_search_result *res,
                               px_error *err)
{
    sweep_explain *x = arg;
    const px_sweep_spec *s = x->c->sweep;
    fprintf(x->text, "\n# point %d of %d:", ++x->done, x->n);
    for (int a = 0; a < s->n_axes; a++) {
        char v[PX_SWEEP_WORD_LEN];
        px_sweep_value_text(s, r, a, v, sizeof v);
        fprintf(x->text, "%s %s=%s", a ? "," : "", px_sweep_key_name(s->axis[a].key), v);
    }
    fprintf(x->text, " (%d x %s, framework %s, precision %s)\n", r->gpus, r->hw, r->framework,
            r->precision);
    if (r->st != PX_OK) {
        fprintf(x->text, "# no plan: %s\n", r->msg);
        return PX_OK;
    }
    return write_explain(x->text, o->run, x->model, hw, res, err);
}

/* Fails when no point could be planned (after writing every point's row). */
px_status run_sweep(const plan_cli *c, const px_model *model, FILE *out, px_error *err)
{
    int n = px_sweep_n_points(c->sweep);
    px_sweep_row *rows = malloc((size_t)n * sizeof *rows);
    if (!rows)
        return PX_FAIL(err, PX_ERR_NOMEM, "--sweep: out of memory");
    char *text = NULL;
    size_t text_len = 0;
    sweep_explain x = {c, model, NULL, 0, n};
    if (c->explain && !(x.text = open_memstream(&text, &text_len))) {
        free(rows);
        return PX_FAIL(err, PX_ERR_NOMEM, "--sweep --explain: out of memory");
    }
    px_sweep_base base = {model, c->hw, c->framework, c->framework_release, c->gpus, &c->opts,
                          c->partition_given, c->explain ? explain_point : NULL, &x};
    px_status st = px_sweep_run(&base, c->sweep, rows, err);
    if (x.text && fclose(x.text) != 0 && st == PX_OK)
        st = PX_FAIL(err, PX_ERR_NOMEM, "--sweep --explain: out of memory");
    if (st == PX_OK && c->json)
        st = sweep_json(out, c, model, rows, n, err);
    else if (st == PX_OK && c->csv)
        st = write_sweep_csv(out, c->sweep, rows, n, err);
    else if (st == PX_OK) {
        sweep_header(out, c, model, n);
        for (int i = 0; i < n; i++)
            sweep_table_row(out, c, &rows[i]);
        if (text)
            fwrite(text, 1, text_len, out);
    }
    if (st == PX_OK && c->html) {
        st = sweep_html(c, model, rows, n, err);
        if (st == PX_OK && !c->json && !c->csv)
            fprintf(out, "# wrote %s\n", c->html);
    }
    bool any = false;
    for (int i = 0; st == PX_OK && i < n; i++)
        any |= rows[i].st == PX_OK;
    if (st == PX_OK && !any)
        st = PX_FAIL(err, PX_ERR_INFEASIBLE, "--sweep: no point could be planned");
    free(text);
    free(rows);
    return st;
}
