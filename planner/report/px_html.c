/* px_html.c — the self-contained HTML report (px_html.h). */
#include "px_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_plan_check.h"
#include "px_outfile.h"
#include "px_overhead.h"
#include "px_schedule.h"

/* ------------------------------------------------------------------ */
/* drawing                                                             */

static const char *const mem_parts[6] = {"weights", "grads", "optimizer", "activations",
                                         "buffers", "runtime"};

/* The unit the axis reads in: GB, MB or kB by the largest value. */
static void mem_unit(double max_bytes, double *mult, const char **unit)
{
    *mult = max_bytes >= 1e9 ? 1e-9 : max_bytes >= 1e6 ? 1e-6 : 1e-3;
    *unit = max_bytes >= 1e9 ? "GB" : max_bytes >= 1e6 ? "MB" : "kB";
}

/* The stages' memory as stacked bars on an axis scaled to the data: the
 * device-memory and usable lines are drawn when the largest stage comes within a
 * quarter of the limit, and said in words otherwise. */
static void memory_svg(px_buf *b, const px_memory *stages, int pp, const px_hw *hw,
                       int64_t predicted_peak)
{
    const double left = 70, plot_h = 240, top = 20;
    double bar_w = fmin(60.0, 1000.0 / pp * 0.7), gap = fmin(30.0, 1000.0 / pp * 0.3);
    double width = pp * (bar_w + gap);
    int64_t limit = px_hw_usable_bytes(hw), largest = 1;
    for (int s = 0; s < pp; s++)
        largest = stages[s].total > largest ? stages[s].total : largest;
    bool lines = (double)largest >= 0.25 * (double)limit;
    double ymax = lines ? fmax((double)largest, (double)hw->hbm_bytes) : (double)largest, mult;
    const char *unit;
    mem_unit(ymax, &mult, &unit);
    double base = top + plot_h;
    px_html_scale sc = px_html_scale_for(0.0, 1.05 * ymax, 0.0, base, top);
    px_buf_printf(b, "<svg class=\"memory\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                     "height=\"%.0f\" data-predicted-peak-bytes=\"%lld\" data-limit-bytes=\"%lld\" "
                     "data-hbm-bytes=\"%lld\" data-axis-max-bytes=\"%.0f\">\n",
                  left + width + 320, top + plot_h + 34, (long long)predicted_peak,
                  (long long)limit, (long long)hw->hbm_bytes, sc.hi);
    px_html_axis_y(b, &sc, left, mult, unit);
    for (int s = 0; s < pp; s++) {
        const px_memory *m = &stages[s];
        /* the runtime's share (workspaces, CUDA context, NCCL) is what the
         * total holds beyond the tensors */
        int64_t tensors = m->weights + m->grads + m->optimizer + m->activations + m->buffers;
        const int64_t part[6] = {m->weights,     m->grads,   m->optimizer,
                                 m->activations, m->buffers, m->total - tensors};
        double x = left + s * (bar_w + gap) + gap / 2, y = base, sum = 0;
        px_buf_printf(b, "<g class=\"mem-bar\" data-stage=\"%d\" data-total-bytes=\"%lld\">", s,
                      (long long)m->total);
        for (int k = 0; k < 6; k++) {
            sum += (double)part[k];
            double y1 = px_html_at(&sc, sum);
            px_buf_printf(b, "<rect class=\"mem-seg m-%s\" data-part=\"%s\" data-bytes=\"%lld\" "
                             "x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\"><title>%s "
                             "%.4g %s</title></rect>",
                          mem_parts[k], mem_parts[k], (long long)part[k], x, y1, bar_w, y - y1,
                          mem_parts[k], (double)part[k] * mult, unit);
            y = y1;
        }
        px_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%.4g %s</text>", x, y - 3,
                      (double)m->total * mult, unit);
        px_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text></g>\n",
                      x + bar_w / 2, base + 14, s);
    }
    if (lines) {
        double yl = px_html_at(&sc, (double)limit), yh = px_html_at(&sc, (double)hw->hbm_bytes);
        px_buf_printf(b, "<line class=\"hbm\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\"/>"
                         "<text x=\"%.0f\" y=\"%.2f\">device memory %.1f GB</text>",
                      left, left + width, yh, yh, left + width + 6, yh + 4,
                      (double)hw->hbm_bytes / 1e9);
        px_buf_printf(b, "<line class=\"limit\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" "
                         "y2=\"%.2f\"/><text x=\"%.0f\" y=\"%.2f\">usable %.1f GB</text>",
                      left, left + width, yl, yl, left + width + 6, yl + 14,
                      (double)limit / 1e9);
    } else {
        px_buf_printf(b, "<text class=\"off-scale\" x=\"%.0f\" y=\"%.0f\">device memory %.1f "
                         "GB, usable %.1f GB:</text><text x=\"%.0f\" y=\"%.0f\">above this axis "
                         "(largest stage %.2g %%)</text>",
                      left + width + 6, top + 12, (double)hw->hbm_bytes / 1e9,
                      (double)limit / 1e9, left + width + 6, top + 26,
                      100.0 * (double)largest / (double)limit);
    }
    px_buf_printf(b, "<line class=\"axis\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\"/>"
                     "<text class=\"unit\" x=\"%.0f\" y=\"%.0f\">stage</text></svg>\n",
                  left, left + width, base, base, left + width + 6, base + 14);
}

/* The step's parts: compute, exposed communication, bubble, optimizer and
 * what the step has beyond them (0 when they cover it). */
typedef struct {
    double part[5];
} time_parts;
static const char *const time_names[5] = {"compute", "comm", "bubble", "optimizer", "other"};
static const char *const time_labels[5] = {"compute", "exposed communication", "pipeline bubble",
                                           "optimizer step", "other"};

static time_parts split_time(const px_time *t)
{
    time_parts p = {{t->compute_s,
                     t->tp_comm_s + t->cp_comm_s + t->ep_comm_s + t->pp_comm_s + t->dp_comm_s,
                     t->bubble_s, t->optimizer_s, 0.0}};
    double sum = p.part[0] + p.part[1] + p.part[2] + p.part[3];
    p.part[4] = t->step_s > sum ? t->step_s - sum : 0.0;
    return p;
}

/* A tick across a run's bar with its label above: the measured step
 * (black) or the report's own prediction (dashed). */
static void step_tick(px_buf *b, const char *cls, const char *label, double x, double y,
                      double s)
{
    px_buf_printf(b, "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\">"
                     "<title>%s %.4g s</title></line><text class=\"tick-label %s-label\" "
                     "x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" style=\"font-size:10px\">%s "
                     "%.4g s</text>",
                  cls, x, x, y - 2, y + 18, label, s, cls, x, y - 4, label, s);
}

/* One stacked bar a run on one step-time axis: from 0, or, when the steps
 * are within 10 % of each other, from a round value below the shortest
 * (the axis says so), so that close plans look apart. */
static void time_bars_svg(px_buf *b, const px_html_run *runs, int n)
{
    const double width = 820;
    double smax = 0, smin = INFINITY, left = 120;
    bool measured = false;
    for (int i = 0; i < n; i++) {
        double t = runs[i].pred->time.step_s;
        smax = fmax(smax, t);
        smin = fmin(smin, t);
        if (runs[i].has_measured) {
            measured = true;
            smax = fmax(smax, fmax(runs[i].meas_step_s, runs[i].cmp_step_s));
            smin = fmin(smin, fmin(runs[i].meas_step_s, runs[i].cmp_step_s));
        }
        left = fmax(left, 6.5 * (double)strlen(runs[i].label) + 12); /* the label column */
    }
    double row_h = measured ? 40 : 24, top = measured ? 16 : 4;
    px_html_scale sc = px_html_scale_for(smin, smax, 0.10, left, left + width);
    px_buf_printf(b, "<svg class=\"time-bars\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\" data-axis-from-s=\"%.9g\">\n",
                  left + width + 100, top + n * row_h + 40, sc.lo);
    for (int i = 0; i < n; i++) {
        time_parts p = split_time(&runs[i].pred->time);
        double y = top + i * row_h, sum = 0, x = left;
        px_buf_printf(b, "<g class=\"time-bar\" data-run=\"%d\" data-step-s=\"%.9g\">"
                         "<text x=\"4\" y=\"%.0f\">",
                      i, runs[i].pred->time.step_s, y + 13);
        px_buf_html(b, runs[i].label);
        px_buf_puts(b, "</text>");
        for (int k = 0; k < 5; k++) {
            sum += p.part[k];
            double x1 = px_html_at(&sc, sum);
            px_buf_printf(b, "<rect class=\"t-%s\" data-part=\"%s\" data-s=\"%.9g\" x=\"%.2f\" "
                             "y=\"%.0f\" width=\"%.2f\" height=\"16\"><title>%s %.4g s</title>"
                             "</rect>",
                          time_names[k], time_names[k], p.part[k], x, y, x1 - x, time_labels[k],
                          p.part[k]);
            x = x1;
        }
        if (!sc.zero_based) /* the bar's start is cut off with the axis */
            px_buf_printf(b, "<path d=\"M%.1f %.0f l4 8 l-4 8\" stroke=\"#fff\" "
                             "stroke-width=\"2\" fill=\"none\"/>",
                          left + 4, y);
        px_buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\">%.4g s</text>", x + 4, y + 13,
                      runs[i].pred->time.step_s);
        if (runs[i].has_measured) {
            if (runs[i].cmp_step_s != runs[i].pred->time.step_s) /* the report's own */
                step_tick(b, "pred", "report's prediction", px_html_at(&sc, runs[i].cmp_step_s),
                          y, runs[i].cmp_step_s);
            step_tick(b, "meas", "measured", px_html_at(&sc, runs[i].meas_step_s), y,
                      runs[i].meas_step_s);
        }
        px_buf_puts(b, "</g>\n");
    }
    double mult;
    const char *unit;
    px_html_time_unit(sc.hi, &mult, &unit);
    px_html_axis_x(b, &sc, top + n * row_h, mult, unit);
    px_buf_puts(b, "</svg>\n");
}

/* ------------------------------------------------------------------ */
/* tables and sections                                                 */

static double rel_err(double pred, double meas)
{
    return meas != 0.0 ? (pred - meas) / meas : (pred == 0.0 ? 0.0 : INFINITY);
}

/* The uniform recompute choice, or "mixed" where the layers differ. */
static const char *recompute_label(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return "mixed (per layer)";
    if (p->n_layer_recompute > 0 && p->layer_recompute[0] < PX_RECOMPUTE_COUNT)
        return px_recompute_name((px_recompute)p->layer_recompute[0]);
    return px_recompute_name(p->recompute);
}

static void plans_table(px_buf *b, const px_html_run *runs, int n)
{
    px_buf_puts(b, "<table class=\"plans\"><tr><th class=\"l\">run</th><th>TP</th><th>CP</th>"
                   "<th>EP</th><th>ETP</th><th>PP</th><th>VPP</th><th>DP</th><th>mbs</th>"
                   "<th>m</th><th>ZeRO</th><th class=\"l\">recompute</th>"
                   "<th class=\"l\">schedule</th><th>SP</th><th>mem [GB]</th>"
                   "<th>step [s]</th><th>tokens/s</th><th>MFU</th><th>bubble</th></tr>\n");
    for (int i = 0; i < n; i++) {
        const px_parallel *p = runs[i].par;
        const px_prediction *q = runs[i].pred;
        px_buf_printf(b, "<tr class=\"plan-row%s\"><td class=\"l\">", i == 0 ? " chosen" : "");
        px_buf_html(b, runs[i].label);
        if (!p) { /* a measured run whose plan file is not at hand */
            px_buf_printf(b, "</td><td colspan=\"14\" class=\"l\">(plan file not readable)</td>"
                             "<td>%.1f</td><td>%.4g</td><td>%.4g</td><td>%.1f %%</td>"
                             "<td></td></tr>\n",
                          (double)q->mem.total / 1e9, q->time.step_s, q->tokens_per_s,
                          100.0 * q->mfu);
            continue;
        }
        px_buf_printf(b, "</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td>"
                         "<td>%d</td><td>%d</td><td>%lld</td><td>%lld</td><td>%d</td>"
                         "<td class=\"l\">%s</td><td class=\"l\">%s</td><td>%s</td>"
                         "<td>%.1f</td><td>%.4g</td><td>%.4g</td><td>%.1f %%</td>"
                         "<td>%.1f %%</td></tr>\n",
                      p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp,
                      (long long)p->micro_batch, (long long)p->n_micro, p->zero,
                      recompute_label(p),
                      px_schedule_name(p->schedule), p->sp ? "on" : "off",
                      (double)q->mem.total / 1e9, q->time.step_s, q->tokens_per_s,
                      100.0 * q->mfu, 100.0 * q->bubble_fraction);
    }
    px_buf_puts(b, "</table>\n");
}

static void err_cell(px_buf *b, double e)
{
    if (isfinite(e))
        px_buf_printf(b, "<td>%+.1f %%</td>", 100.0 * e);
    else
        px_buf_puts(b, "<td>n/a</td>");
}

static void measured_table(px_buf *b, const px_html_run *runs, int n)
{
    px_buf_puts(b, "<h2>Predicted vs measured</h2>\n<p class=\"note\">err = (predicted - "
                   "measured) / measured; memory: the worst stage predicted, the worst rank "
                   "measured.</p>\n<table class=\"measured\"><tr><th class=\"l\">run</th>"
                   "<th>step [s] pred</th><th>meas</th><th>err</th><th>tokens/s pred</th>"
                   "<th>meas</th><th>err</th><th>MFU pred</th><th>meas</th><th>peak [GB] pred"
                   "</th><th>meas</th><th>err</th></tr>\n");
    for (int i = 0; i < n; i++) {
        const px_html_run *r = &runs[i];
        if (!r->has_measured)
            continue;
        px_buf_printf(b, "<tr class=\"measured-row\" data-run=\"%d\"><td class=\"l\">", i);
        px_buf_html(b, r->label);
        px_buf_printf(b, "</td><td>%.4g</td><td>%.4g</td>", r->cmp_step_s, r->meas_step_s);
        err_cell(b, rel_err(r->cmp_step_s, r->meas_step_s));
        px_buf_printf(b, "<td>%.4g</td><td>%.4g</td>", r->cmp_tokens_per_s,
                      r->meas_tokens_per_s);
        err_cell(b, rel_err(r->cmp_tokens_per_s, r->meas_tokens_per_s));
        px_buf_printf(b, "<td>%.1f %%</td><td>%.1f %%</td><td>%.4g</td><td>%.4g</td>",
                      100.0 * r->cmp_mfu, 100.0 * r->meas_mfu, (double)r->cmp_peak_bytes / 1e9,
                      (double)r->meas_peak_bytes / 1e9);
        err_cell(b, rel_err((double)r->cmp_peak_bytes, (double)r->meas_peak_bytes));
        px_buf_puts(b, "</tr>\n");
    }
    px_buf_puts(b, "</table>\n");
}

static void breakdown_table(px_buf *b, const px_time *t)
{
    time_parts p = split_time(t);
    px_buf_puts(b, "<table class=\"breakdown\"><tr><th class=\"l\">part of the step</th>"
                   "<th>seconds</th><th>share</th></tr>\n");
    for (int k = 0; k < 5; k++)
        px_buf_printf(b, "<tr data-part=\"%s\" data-s=\"%.9g\"><td class=\"l\">%s</td>"
                         "<td>%.4g</td><td>%.1f %%</td></tr>\n",
                      time_names[k], p.part[k], time_labels[k], p.part[k],
                      t->step_s > 0 ? 100.0 * p.part[k] / t->step_s : 0.0);
    px_buf_printf(b, "<tr><td class=\"l\">exposed TP / CP / EP / PP / DP</td><td colspan=\"2\">"
                     "%.3g / %.3g / %.3g / %.3g / %.3g</td></tr>\n"
                     "<tr><th class=\"l\">step</th><th>%.4g</th><th></th></tr></table>\n",
                  t->tp_comm_s, t->cp_comm_s, t->ep_comm_s, t->pp_comm_s, t->dp_comm_s,
                  t->step_s);
}

/* The timeline, memory and time breakdown of one run. */
/* The timeline's caption: what the drawing shows, and the step's pipeline
 * part as the prediction books it (the step less the exposed data-parallel
 * communication, the optimizer and the per-step overhead, so never longer
 * than the step); the drawing's own length beside it, and why the two can
 * differ. */
static void timeline_caption(px_buf *b, const px_html_run *r, double makespan_s, double msg_s)
{
    const px_time *t = &r->pred->time;
    double part = t->step_s - t->dp_comm_s - t->optimizer_s - px_overhead_step_s(r->run);
    part = part > 0 ? part : 0;
    px_buf_printf(b, "<p class=\"note timeline-caption\" data-step-s=\"%.9g\" "
                     "data-pipeline-s=\"%.9g\" data-drawn-s=\"%.9g\">Each stage's ops in the executor's order, each as long as "
                     "the cost model's time of one micro-batch through the stage over its chunks "
                     "(forward : backward as its layers split); a pipeline message %.3g ms. The "
                     "prediction's step of %.4g s books %.4g s for the pipeline (the "
                     "micro-batches, a bubble of %.4g s and the messages) and the rest for "
                     "exposed data-parallel communication, the optimizer step and per-step "
                     "overheads. Run end to end with these op times the drawn schedule takes "
                     "%.4g s",
                  t->step_s, part, makespan_s, 1e3 * msg_s, t->step_s, part, t->bubble_s,
                  makespan_s);
    if (fabs(makespan_s - part) > 0.01 * part)
        px_buf_puts(b, ": the prediction takes the schedule's bubble from its formula "
                       "(docs/cost-model.md, \"Pipeline bubble\"), with the pipeline messages "
                       "overlapped or not as the framework runs them, not from this drawing");
    px_buf_puts(b, ".</p>\n");
}

/* The chosen plan's stages as the plan file recorded them, or costed. */
static void stage_memory(px_cost_ctx *ctx, const px_html_run *r, px_memory *stages)
{
    const px_parallel *p = r->par;
    if (!r->stages) {
        px_cost_stage_memory(ctx, p, stages);
        return;
    }
    for (int s = 0; s < p->pp; s++)
        stages[s] = (px_memory){.weights = r->stages[s].weights,
                                .grads = r->stages[s].grads,
                                .optimizer = r->stages[s].optimizer,
                                .activations = r->stages[s].activations,
                                .buffers = r->stages[s].buffers,
                                .total = r->stages[s].total,
                                .worst_stage = s};
}

/* The timeline, memory and time breakdown of one run. */
static px_status detail_section(px_buf *b, const px_html_run *r, int index, px_error *err)
{
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_memory *stages = calloc((size_t)r->par->pp, sizeof *stages);
    px_buf svg = {0};
    double makespan_s = 0, msg_s = 0;
    if (!ctx || !stages) {
        free(ctx);
        free(stages);
        return PX_FAIL(err, PX_ERR_NOMEM, "HTML report: out of memory");
    }
    px_status st = px_cost_ctx_init(ctx, r->model, r->hw, err);
    if (st == PX_OK) {
        ctx->run = r->run;
        st = px_html_timeline(&svg, ctx, r->par, r->stages, &makespan_s, &msg_s, err);
    }
    if (st == PX_OK) {
        const px_parallel *p = r->par;
        stage_memory(ctx, r, stages);
        px_buf_printf(b, "<section class=\"run-detail\" data-run=\"%d\"><h2>", index);
        px_buf_html(b, r->label);
        px_buf_printf(b, ": %s, PP %d x VPP %d, %lld micro-batches of %lld</h2>\n",
                      px_schedule_name(p->schedule), p->pp, p->vpp, (long long)p->n_micro,
                      (long long)p->micro_batch);
        px_buf_puts(b, "<h3>Pipeline timeline, one row per stage</h3>\n");
        timeline_caption(b, r, makespan_s, msg_s);
        static const char *const tl_items[][2] = {
            {"forward (F)", "#4e79a7"}, {"backward (B)", "#59a14f"},
            {"weight gradients (W)", "#f28e2b"}, {"idle", "#ececec"},
            {"pipeline message (arriving)", "#b07aa1"},
            {"steady state not drawn (mb: micro-batches left out)", "#fff;border:1px dashed #888"}};
        px_html_legend(b, tl_items, 6);
        px_buf_puts(b, svg.data ? svg.data : "");
        px_buf_puts(b, "<h3>Memory per GPU by stage</h3>\n");
        static const char *const mem_items[][2] = {
            {"weights", "#4e79a7"}, {"gradients", "#76b7b2"}, {"optimizer state", "#edc948"},
            {"activations", "#e15759"}, {"buffers", "#bab0ac"}, {"runtime", "#9c755f"}};
        px_html_legend(b, mem_items, 6);
        memory_svg(b, stages, p->pp, r->hw, r->pred->mem.total);
        px_buf_puts(b, "<h3>Time of one step</h3>\n");
        breakdown_table(b, &r->pred->time);
        px_buf_puts(b, "</section>\n");
    }
    if (svg.failed && st == PX_OK)
        st = PX_FAIL(err, PX_ERR_NOMEM, "HTML report: out of memory");
    px_buf_free(&svg);
    free(stages);
    free(ctx);
    return st;
}

px_status px_html_write(const char *path, const char *title, const char *subtitle,
                        const px_html_run *runs, int n_runs, px_error *err)
{
    px_buf b = {0};
    px_html_begin(&b, title, subtitle);
    px_buf_puts(&b, "<h2>Plans side by side</h2>\n");
    plans_table(&b, runs, n_runs);
    px_buf_puts(&b, "<h3>Time of a step, predicted (black tick: measured; dashed tick: the "
                   "report's own prediction where it differs from the plan's)</h3>\n");
    static const char *const t_items[][2] = {
        {"compute", "#4e79a7"}, {"exposed communication", "#b07aa1"},
        {"pipeline bubble", "#d9d9d9"}, {"optimizer step", "#edc948"}, {"other", "#bab0ac"}};
    px_html_legend(&b, t_items, 5);
    time_bars_svg(&b, runs, n_runs);
    bool any_measured = false;
    for (int i = 0; i < n_runs; i++)
        any_measured = any_measured || runs[i].has_measured;
    if (any_measured)
        measured_table(&b, runs, n_runs);
    px_status st = PX_OK;
    for (int i = 0; i < n_runs && st == PX_OK; i++)
        if (runs[i].detail && runs[i].par)
            st = detail_section(&b, &runs[i], i, err);
    px_html_end(&b);
    if (st == PX_OK)
        st = px_buf_write(&b, path, err);
    px_buf_free(&b);
    return st;
}
