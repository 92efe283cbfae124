/* px_html.c — the self-contained HTML report (px_html.h). */
#include "px_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_plan_check.h"
#include "px_outfile.h"
#include "px_schedule.h"

/* ------------------------------------------------------------------ */
/* the timed timeline                                                  */

typedef struct {
    double t0, t1;
    char kind;
    int chunk, micro;
} timed_op;

typedef struct {
    double t0, t1;
    int src, dst;
} timed_msg;

typedef struct {
    int pp;
    int *n_ops;      /* [pp] */
    timed_op **ops;  /* [pp][n_ops] */
    timed_msg *msgs;
    int n_msgs;
    double makespan_s, msg_s;
    double fwd_s[PX_MAX_CHUNKS], bwd_s[PX_MAX_CHUNKS], wgrad_s[PX_MAX_CHUNKS]; /* per op */
    double mb_s[PX_MAX_CHUNKS]; /* one micro-batch through the stage, all its chunks */
} timed_timeline;

static void timed_free(timed_timeline *tt)
{
    for (int r = 0; tt->ops && r < tt->pp; r++)
        free(tt->ops[r]);
    free(tt->ops);
    free(tt->n_ops);
    free(tt->msgs);
    memset(tt, 0, sizeof *tt);
}

/* Op durations per stage: the cost model's time of one micro-batch through
 * the stage (px_cost_stages, or the plan file's record of it, stages) over
 * its vpp chunks, split forward : backward
 * as the stage's first layer splits (backward with its recompute); a
 * zero-bubble schedule's backward is half input gradients (B), half weight
 * gradients (W).  A pipeline message takes the latency plus the boundary
 * activation over the link the PP groups use. */
static void op_durations(px_cost_ctx *ctx, const px_parallel *par,
                         const px_stage_prediction *stages, timed_timeline *tt)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    double mb_s[PX_MAX_CHUNKS];
    if (stages)
        for (int s = 0; s < par->pp; s++)
            mb_s[s] = stages[s].microbatch_s;
    else
        px_cost_stages(ctx, par, mb_s, NULL);
    px_layer_cost lc;
    px_cost_layer(ctx, par, 0, &lc);
    int r0 = par->n_layer_recompute > 0 ? par->layer_recompute[0] : (int)par->recompute;
    double f = lc.fwd_s, b = lc.bwd_s + lc.recompute_s[r0 < PX_RECOMPUTE_COUNT ? r0 : 0];
    double frac = f + b > 0 ? f / (f + b) : 1.0 / 3.0;
    bool has_w = par->schedule == PX_SCHED_ZB_H1 || par->schedule == PX_SCHED_ZB_H2;
    for (int st = 0; st < par->pp; st++) {
        tt->mb_s[st] = mb_s[st];
        double per_chunk = mb_s[st] / par->vpp;
        tt->fwd_s[st] = per_chunk * frac;
        tt->bwd_s[st] = per_chunk * (1.0 - frac) * (has_w ? 0.5 : 1.0);
        tt->wgrad_s[st] = has_w ? tt->bwd_s[st] : 0.0;
    }
    px_prediction pr;
    px_cost_detail d;
    px_cost_eval(ctx, par, 0.0, 0.0, &pr, &d, NULL);
    int64_t s = px_plan_seq_len(m, par);
    double bytes = px_cost_pp_msg_bytes((double)s / par->cp, (double)par->micro_batch,
                                        (double)m->hidden, par->tp, par->sp, hw->dtype_bytes);
    bool inter = d.pp_crosses && !hw->torus;
    tt->msg_s = par->pp > 1 ? (inter ? hw->inter_lat_s + bytes / hw->inter_bw
                                     : hw->intra_lat_s + bytes / hw->intra_bw)
                            : 0.0;
}

/* Runs the executor's timeline (each stage's op list and its slots) with
 * those durations: an op starts when its stage is free and its input has
 * arrived from the neighbour, in slot order, as the executor runs it. */
static px_status time_ops(const px_timeline *tl, int vpp, int n_micro, timed_timeline *tt,
                           px_error *err)
{
    int pp = tl->pp, n_mc = pp * vpp;
    size_t n_keys = (size_t)n_mc * (size_t)n_micro;
    double *f_arr = calloc(n_keys, sizeof *f_arr), *b_arr = calloc(n_keys, sizeof *b_arr);
    double *free_at = calloc((size_t)pp, sizeof *free_at);
    int *next = calloc((size_t)pp, sizeof *next);
    tt->pp = pp;
    tt->n_ops = calloc((size_t)pp, sizeof *tt->n_ops);
    tt->ops = calloc((size_t)pp, sizeof *tt->ops);
    tt->msgs = calloc((size_t)tl->n_msgs + 1, sizeof *tt->msgs);
    bool ok = f_arr && b_arr && free_at && next && tt->n_ops && tt->ops && tt->msgs;
    for (int r = 0; ok && r < pp; r++)
        ok = (tt->ops[r] = calloc((size_t)tl->n_ops[r] + 1, sizeof **tt->ops)) != NULL;
    for (int t = 0; ok && t < tl->n_slots; t++) {
        for (int r = 0; r < pp; r++) {
            if (next[r] >= tl->n_ops[r] || tl->slot[r][next[r]] != t)
                continue;
            px_sched_op op = tl->ops[r][next[r]++];
            int mc = op.chunk * pp + r;
            double start = free_at[r];
            if (op.kind == 'F' && mc > 0)
                start = fmax(start, f_arr[(size_t)(mc - 1) * n_micro + op.micro]);
            else if (op.kind == 'B' && mc < n_mc - 1)
                start = fmax(start, b_arr[(size_t)(mc + 1) * n_micro + op.micro]);
            double dur = op.kind == 'F' ? tt->fwd_s[r] : op.kind == 'B' ? tt->bwd_s[r]
                                                                         : tt->wgrad_s[r];
            double end = start + dur;
            tt->ops[r][tt->n_ops[r]++] = (timed_op){start, end, op.kind, op.chunk, op.micro};
            free_at[r] = end;
            tt->makespan_s = fmax(tt->makespan_s, end);
            int dst = -1;
            if (op.kind == 'F' && mc < n_mc - 1) {
                f_arr[(size_t)mc * n_micro + op.micro] = end + tt->msg_s;
                dst = (mc + 1) % pp;
            } else if (op.kind == 'B' && mc > 0) {
                b_arr[(size_t)mc * n_micro + op.micro] = end + tt->msg_s;
                dst = (mc - 1) % pp;
            }
            if (dst >= 0 && tt->n_msgs < tl->n_msgs)
                tt->msgs[tt->n_msgs++] = (timed_msg){end, end + tt->msg_s, r, dst};
        }
    }
    free(f_arr);
    free(b_arr);
    free(free_at);
    free(next);
    if (!ok)
        return PX_FAIL(err, PX_ERR_NOMEM, "HTML report: out of memory timing the timeline");
    return PX_OK;
}

static px_status build_timed(px_cost_ctx *ctx, const px_parallel *par,
                             const px_stage_prediction *stages, timed_timeline *tt,
                             px_error *err)
{
    memset(tt, 0, sizeof *tt);
    op_durations(ctx, par, stages, tt);
    px_timeline tl;
    px_status st = px_timeline_build(&tl, par->schedule, par->pp, par->vpp,
                                     (int)par->n_micro, err);
    if (st != PX_OK)
        return st;
    st = time_ops(&tl, par->vpp, (int)par->n_micro, tt, err);
    px_timeline_free(&tl);
    return st;
}

/* ------------------------------------------------------------------ */
/* drawing                                                             */

static const char css[] =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;"
    "border-bottom:1px solid #ccc}h3{font-size:15px;margin:18px 0 4px}"
    "p.sub{color:#555;margin:0 0 12px}p.note{color:#555;font-size:12px;margin:2px 0 8px}"
    "table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}"
    "th{background:#f2f2f2}td.l,th.l{text-align:left}"
    "tr.chosen td{font-weight:bold}"
    "svg text{font-family:sans-serif;font-size:11px;fill:#222}"
    ".op-F{fill:#4e79a7}.op-B{fill:#59a14f}.op-W{fill:#f28e2b}"
    ".idle{fill:#ececec}.comm{fill:#b07aa1}"
    ".m-weights{fill:#4e79a7}.m-grads{fill:#76b7b2}.m-optimizer{fill:#edc948}"
    ".m-activations{fill:#e15759}.m-buffers{fill:#bab0ac}.m-runtime{fill:#9c755f}"
    ".t-compute{fill:#4e79a7}.t-comm{fill:#b07aa1}.t-bubble{fill:#d9d9d9}"
    ".t-optimizer{fill:#edc948}.t-other{fill:#bab0ac}"
    ".limit{stroke:#d62728;stroke-width:2;stroke-dasharray:6 3}"
    ".hbm{stroke:#555;stroke-width:1}.axis{stroke:#888;stroke-width:1}"
    ".meas{stroke:#000;stroke-width:3}.pred{stroke:#4e79a7;stroke-width:3;"
    "stroke-dasharray:3 2}"
    ".legend span{display:inline-block;margin-right:14px;font-size:12px}"
    ".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;"
    "vertical-align:-2px}";

static void legend(px_buf *b, const char *const items[][2], int n)
{
    px_buf_puts(b, "<div class=\"legend\">");
    for (int i = 0; i < n; i++)
        px_buf_printf(b, "<span><i style=\"background:%s\"></i>%s</span>", items[i][1],
                      items[i][0]);
    px_buf_puts(b, "</div>\n");
}

/* A round step for axis ticks: 1, 2 or 5 times a power of ten, ~n ticks. */
static double tick_step(double range, int n)
{
    double raw = range / n, p = pow(10.0, floor(log10(raw)));
    double f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void timeline_svg(px_buf *b, const timed_timeline *tt, const px_parallel *par)
{
    const double left = 70, width = 1060, row_h = 30, op_h = 20;
    int pp = tt->pp;
    double span = tt->makespan_s > 0 ? tt->makespan_s : 1.0;
    double sx = width / span, height = pp * row_h + 30;
    px_buf_printf(b, "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\" data-stages=\"%d\" data-makespan-s=\"%.9g\">\n",
                  left + width + 10, height, pp, tt->makespan_s);
    for (int r = 0; r < pp; r++) {
        double y = r * row_h + 4;
        px_buf_printf(b, "<g class=\"stage-row\" data-stage=\"%d\" data-ops=\"%d\" "
                         "data-microbatch-s=\"%.9g\"><text x=\"4\" y=\"%.1f\">stage %d</text>\n",
                      r, tt->n_ops[r], tt->mb_s[r], y + 14, r);
        double t = 0.0; /* idle gaps between this stage's ops */
        for (int k = 0; k <= tt->n_ops[r]; k++) {
            double next = k < tt->n_ops[r] ? tt->ops[r][k].t0 : tt->makespan_s;
            if (next - t > span * 1e-9)
                px_buf_printf(b, "<rect class=\"idle\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                                 "height=\"%.0f\"/>",
                              left + t * sx, y, (next - t) * sx, op_h);
            if (k < tt->n_ops[r])
                t = tt->ops[r][k].t1;
        }
        for (int k = 0; k < tt->n_ops[r]; k++) {
            const timed_op *o = &tt->ops[r][k];
            double w = (o->t1 - o->t0) * sx;
            px_buf_printf(b, "<rect class=\"op op-%c\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                             "height=\"%.0f\" stroke=\"#fff\" stroke-width=\"%s\">"
                             "<title>%c micro-batch %d, chunk %d: %.4g ms</title></rect>",
                          o->kind, left + o->t0 * sx, y, w, op_h, w > 4 ? "0.5" : "0", o->kind,
                          o->micro, o->chunk * pp + r, 1e3 * (o->t1 - o->t0));
            if (w > 14)
                px_buf_printf(b, "<text x=\"%.2f\" y=\"%.1f\" style=\"fill:#fff;font-size:9px\">"
                                 "%d</text>",
                              left + o->t0 * sx + 2, y + 14, o->micro);
        }
        for (int k = 0; k < tt->n_msgs; k++) /* messages arriving at this stage */
            if (tt->msgs[k].dst == r)
                px_buf_printf(b, "<rect class=\"comm\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                                 "height=\"4\"/>",
                              left + tt->msgs[k].t0 * sx, y + op_h + 1,
                              fmax((tt->msgs[k].t1 - tt->msgs[k].t0) * sx, 0.5));
        px_buf_puts(b, "</g>\n");
    }
    double step = tick_step(span * 1e3, 8), axis_y = pp * row_h + 6;
    px_buf_printf(b, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>",
                  left, axis_y, left + width, axis_y);
    for (double ms = 0; ms <= span * 1e3 * 1.0001; ms += step)
        px_buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\">%g</text>", left + ms / 1e3 * sx - 3,
                      axis_y + 14, ms);
    px_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\">ms</text></svg>\n", left - 24, axis_y + 14);
    (void)par;
}

static const char *const mem_parts[6] = {"weights", "grads", "optimizer", "activations",
                                         "buffers", "runtime"};

static void memory_svg(px_buf *b, const px_memory *stages, int pp, const px_hw *hw,
                       int64_t predicted_peak)
{
    const double left = 70, plot_h = 240, top = 20;
    double bar_w = fmin(60.0, 1000.0 / pp * 0.7), gap = fmin(30.0, 1000.0 / pp * 0.3);
    double width = pp * (bar_w + gap);
    int64_t limit = px_hw_usable_bytes(hw), ymax = hw->hbm_bytes;
    for (int s = 0; s < pp; s++)
        if (stages[s].total > ymax)
            ymax = stages[s].total;
    double sy = plot_h / (1.05 * (double)ymax);
    px_buf_printf(b, "<svg class=\"memory\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                     "height=\"%.0f\" data-predicted-peak-bytes=\"%lld\" data-limit-bytes=\"%lld\" "
                     "data-hbm-bytes=\"%lld\">\n",
                  left + width + 160, top + plot_h + 34, (long long)predicted_peak,
                  (long long)limit, (long long)hw->hbm_bytes);
    double base = top + plot_h;
    double gb_step = tick_step(1.05 * (double)ymax / 1e9, 5);
    for (double g = gb_step; g * 1e9 * sy <= plot_h; g += gb_step)
        px_buf_printf(b, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" "
                         "stroke=\"#eee\"/><text x=\"%.0f\" y=\"%.2f\">%g</text>",
                      left - 4, left + width, base - g * 1e9 * sy, base - g * 1e9 * sy, left - 34,
                      base - g * 1e9 * sy + 4, g);
    for (int s = 0; s < pp; s++) {
        const px_memory *m = &stages[s];
        /* the runtime's share (workspaces, CUDA context, NCCL) is what the
         * total holds beyond the tensors */
        int64_t tensors = m->weights + m->grads + m->optimizer + m->activations + m->buffers;
        const int64_t part[6] = {m->weights,     m->grads,   m->optimizer,
                                 m->activations, m->buffers, m->total - tensors};
        double x = left + s * (bar_w + gap) + gap / 2, y = base;
        px_buf_printf(b, "<g class=\"mem-bar\" data-stage=\"%d\" data-total-bytes=\"%lld\">", s,
                      (long long)m->total);
        for (int k = 0; k < 6; k++) {
            double h = (double)part[k] * sy;
            y -= h;
            px_buf_printf(b, "<rect class=\"mem-seg m-%s\" data-part=\"%s\" data-bytes=\"%lld\" "
                             "x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\"><title>%s "
                             "%.2f GB</title></rect>",
                          mem_parts[k], mem_parts[k], (long long)part[k], x, y, bar_w, h,
                          mem_parts[k], (double)part[k] / 1e9);
        }
        if (m->total >= 1000000000)
            px_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%.1f GB</text>", x, y - 3,
                          (double)m->total / 1e9);
        else
            px_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%.3g MB</text>", x, y - 3,
                          (double)m->total / 1e6);
        px_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%d</text></g>\n", x + bar_w / 2 - 3,
                      base + 14, s);
    }
    double yl = base - (double)limit * sy, yh = base - (double)hw->hbm_bytes * sy;
    px_buf_printf(b, "<line class=\"hbm\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\"/>"
                     "<text x=\"%.0f\" y=\"%.2f\">HBM %.1f GB</text>",
                  left, left + width, yh, yh, left + width + 6, yh + 4,
                  (double)hw->hbm_bytes / 1e9);
    px_buf_printf(b, "<line class=\"limit\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\"/>"
                     "<text x=\"%.0f\" y=\"%.2f\">usable %.1f GB</text>",
                  left, left + width, yl, yl, left + width + 6, yl + 14, (double)limit / 1e9);
    px_buf_printf(b, "<line class=\"axis\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\"/>"
                     "<text x=\"4\" y=\"%.0f\">GB</text><text x=\"%.0f\" y=\"%.0f\">stage</text>"
                     "</svg>\n",
                  left, left + width, base, base, top + 10, left - 40, base + 14);
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

/* One stacked bar a run, the same scale for all: the runs side by side. */
static void time_bars_svg(px_buf *b, const px_html_run *runs, int n)
{
    const double width = 820, row_h = 24;
    double smax = 0, left = 120;
    for (int i = 0; i < n; i++) {
        smax = fmax(smax, runs[i].pred->time.step_s);
        if (runs[i].has_measured)
            smax = fmax(smax, fmax(runs[i].meas_step_s, runs[i].cmp_step_s));
        left = fmax(left, 6.5 * (double)strlen(runs[i].label) + 12); /* the label column */
    }
    double sx = smax > 0 ? width / (1.05 * smax) : 0;
    px_buf_printf(b, "<svg class=\"time-bars\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\">\n",
                  left + width + 100, n * row_h + 10);
    for (int i = 0; i < n; i++) {
        time_parts p = split_time(&runs[i].pred->time);
        double x = left, y = i * row_h + 4;
        px_buf_printf(b, "<g class=\"time-bar\" data-run=\"%d\" data-step-s=\"%.9g\">"
                         "<text x=\"4\" y=\"%.0f\">",
                      i, runs[i].pred->time.step_s, y + 13);
        px_buf_html(b, runs[i].label);
        px_buf_puts(b, "</text>");
        for (int k = 0; k < 5; k++) {
            double w = p.part[k] * sx;
            px_buf_printf(b, "<rect class=\"t-%s\" data-part=\"%s\" data-s=\"%.9g\" x=\"%.2f\" "
                             "y=\"%.0f\" width=\"%.2f\" height=\"16\"><title>%s %.4g s</title>"
                             "</rect>",
                          time_names[k], time_names[k], p.part[k], x, y, w, time_labels[k],
                          p.part[k]);
            x += w;
        }
        px_buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\">%.4g s</text>", x + 4, y + 13,
                      runs[i].pred->time.step_s);
        if (runs[i].has_measured) {
            double xm = left + runs[i].meas_step_s * sx;
            if (runs[i].cmp_step_s != runs[i].pred->time.step_s) { /* the report's own */
                double xp = left + runs[i].cmp_step_s * sx;
                px_buf_printf(b, "<line class=\"pred\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" "
                                 "y2=\"%.0f\"><title>predicted in the report %.4g s</title>"
                                 "</line>",
                              xp, xp, y - 2, y + 18, runs[i].cmp_step_s);
            }
            px_buf_printf(b, "<line class=\"meas\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" "
                             "y2=\"%.0f\"><title>measured %.4g s</title></line>",
                          xm, xm, y - 2, y + 18, runs[i].meas_step_s);
        }
        px_buf_puts(b, "</g>\n");
    }
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
static px_status detail_section(px_buf *b, const px_html_run *r, int index, px_error *err)
{
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_memory *stages = calloc((size_t)r->par->pp, sizeof *stages);
    if (!ctx || !stages) {
        free(ctx);
        free(stages);
        return PX_FAIL(err, PX_ERR_NOMEM, "HTML report: out of memory");
    }
    timed_timeline tt;
    memset(&tt, 0, sizeof tt);
    px_status st = px_cost_ctx_init(ctx, r->model, r->hw, err);
    if (st == PX_OK) {
        ctx->run = r->run;
        st = build_timed(ctx, r->par, r->stages, &tt, err);
    }
    if (st == PX_OK) {
        const px_parallel *p = r->par;
        if (r->stages) /* the plan file's numbers, as recorded */
            for (int s = 0; s < p->pp; s++)
                stages[s] = (px_memory){.weights = r->stages[s].weights,
                                        .grads = r->stages[s].grads,
                                        .optimizer = r->stages[s].optimizer,
                                        .activations = r->stages[s].activations,
                                        .buffers = r->stages[s].buffers,
                                        .total = r->stages[s].total,
                                        .worst_stage = s};
        else
            px_cost_stage_memory(ctx, p, stages);
        px_buf_printf(b, "<section class=\"run-detail\" data-run=\"%d\"><h2>", index);
        px_buf_html(b, r->label);
        px_buf_printf(b, ": %s, PP %d x VPP %d, %lld micro-batches of %lld</h2>\n",
                      px_schedule_name(p->schedule), p->pp, p->vpp, (long long)p->n_micro,
                      (long long)p->micro_batch);
        px_buf_printf(b, "<h3>Pipeline timeline, one row per stage</h3>\n<p class=\"note\">The "
                         "executor's op order; each op as long as the cost model's time of one "
                         "micro-batch through the stage (forward : backward as its layers "
                         "split); a message %.3g ms. The pipeline part of the step: %.4g s "
                         "(of %.4g s).</p>\n",
                      1e3 * tt.msg_s, tt.makespan_s, r->pred->time.step_s);
        static const char *const tl_items[][2] = {
            {"forward (F)", "#4e79a7"}, {"backward (B)", "#59a14f"},
            {"weight gradients (W)", "#f28e2b"}, {"idle", "#ececec"},
            {"pipeline message (arriving)", "#b07aa1"}};
        legend(b, tl_items, 5);
        timeline_svg(b, &tt, p);
        px_buf_puts(b, "<h3>Memory per GPU by stage</h3>\n");
        static const char *const mem_items[][2] = {
            {"weights", "#4e79a7"}, {"gradients", "#76b7b2"}, {"optimizer state", "#edc948"},
            {"activations", "#e15759"}, {"buffers", "#bab0ac"}, {"runtime", "#9c755f"}};
        legend(b, mem_items, 6);
        memory_svg(b, stages, p->pp, r->hw, r->pred->mem.total);
        px_buf_puts(b, "<h3>Time of one step</h3>\n");
        breakdown_table(b, &r->pred->time);
        px_buf_puts(b, "</section>\n");
    }
    timed_free(&tt);
    free(stages);
    free(ctx);
    return st;
}

px_status px_html_write(const char *path, const char *title, const char *subtitle,
                        const px_html_run *runs, int n_runs, px_error *err)
{
    px_buf b = {0};
    px_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    px_buf_html(&b, title);
    px_buf_printf(&b, "</title><style>%s</style></head><body>\n<h1>", css);
    px_buf_html(&b, title);
    px_buf_puts(&b, "</h1>\n<p class=\"sub\">");
    px_buf_html(&b, subtitle);
    px_buf_puts(&b, "</p>\n<h2>Plans side by side</h2>\n");
    plans_table(&b, runs, n_runs);
    px_buf_puts(&b, "<h3>Time of a step, predicted (black tick: measured; dashed tick: the "
                   "report's own prediction where it differs from the plan's)</h3>\n");
    static const char *const t_items[][2] = {
        {"compute", "#4e79a7"}, {"exposed communication", "#b07aa1"},
        {"pipeline bubble", "#d9d9d9"}, {"optimizer step", "#edc948"}, {"other", "#bab0ac"}};
    legend(&b, t_items, 5);
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
    px_buf_puts(&b, "</body></html>\n");
    if (st == PX_OK)
        st = px_buf_write(&b, path, err);
    px_buf_free(&b);
    return st;
}
