/* px_html_timeline.c — the pipeline timeline of the HTML report
 * (px_html_internal.h): the executor's op order per stage timed with the
 * cost model's per-stage times, drawn with its steady state collapsed when
 * it is too long to read. */
#include "px_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_efficiency.h"
#include "px_plan_check.h"
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
    tt->msg_s = par->pp > 1 ? px_time_coll_s(hw, PX_COLL_P2P, 2, bytes, d.pp_crosses) : 0.0;
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
/* drawing, with the steady state collapsed                            */

/* Seconds onto pixels: left + t * sx up to cut_a; the steady state
 * (cut_a, cut_b) drawn as an elision mark gap_px wide; from cut_b on
 * shifted left by what was left out.  cut_b <= cut_a: nothing left out. */
typedef struct {
    double left, sx, cut_a, cut_b, gap_px;
} time_map;

static bool collapsed(const time_map *m)
{
    return m->cut_b > m->cut_a;
}

static double tx(const time_map *m, double t)
{
    if (!collapsed(m) || t <= m->cut_a)
        return m->left + t * m->sx;
    if (t >= m->cut_b)
        return m->left + m->cut_a * m->sx + m->gap_px + (t - m->cut_b) * m->sx;
    return m->left + m->cut_a * m->sx + 0.5 * m->gap_px; /* inside: the mark */
}

/* The drawn pieces of [t0, t1] (none, one, or two around the mark). */
static int pieces(const time_map *m, double t0, double t1, double x[2], double w[2])
{
    if (!collapsed(m)) {
        x[0] = tx(m, t0);
        w[0] = (t1 - t0) * m->sx;
        return 1;
    }
    int n = 0;
    if (t0 < m->cut_a) {
        x[n] = tx(m, t0);
        w[n++] = (fmin(t1, m->cut_a) - t0) * m->sx;
    }
    if (t1 > m->cut_b) {
        double s = fmax(t0, m->cut_b);
        x[n] = tx(m, s);
        w[n++] = (t1 - s) * m->sx;
    }
    return n;
}

/* The steady state to leave out: from a couple of micro-batches after the
 * last stage starts its first backward (the warm-up's end) to one before
 * the first stage runs its last forward (the cool-down's start); nothing
 * when a stage has at most PX_HTML_STEADY_MAX ops. */
static void choose_cut(const timed_timeline *tt, double width_px, time_map *m)
{
    const double gap_px = 70;
    int most = 0;
    double warm_end = 0.0, cool_start = tt->makespan_s, cycle = 0.0;
    for (int r = 0; r < tt->pp; r++) {
        most = tt->n_ops[r] > most ? tt->n_ops[r] : most;
        cycle = fmax(cycle, tt->mb_s[r]);
        for (int k = 0; k < tt->n_ops[r]; k++)
            if (tt->ops[r][k].kind == 'B') {
                warm_end = fmax(warm_end, tt->ops[r][k].t0);
                break;
            }
        for (int k = tt->n_ops[r] - 1; k >= 0; k--)
            if (tt->ops[r][k].kind == 'F') {
                cool_start = fmin(cool_start, tt->ops[r][k].t1);
                break;
            }
    }
    double a = warm_end + 2.0 * cycle, b = cool_start - cycle, span = tt->makespan_s;
    m->left = 70;
    m->cut_a = m->cut_b = 0.0;
    m->gap_px = 0.0;
    if (most > PX_HTML_STEADY_MAX && b - a > 2.0 * cycle && b - a > 0.1 * span) {
        m->cut_a = a;
        m->cut_b = b;
        m->gap_px = gap_px;
        span -= b - a;
    }
    m->sx = (width_px - m->gap_px) / (span > 0 ? span : 1.0);
}

/* The time axis: ticks on both sides of the mark, in s or ms. */
static void time_axis(px_buf *b, const timed_timeline *tt, const time_map *m, double y,
                      double width_px)
{
    double mult;
    const char *unit;
    px_html_time_unit(tt->makespan_s, &mult, &unit);
    double shown = tt->makespan_s - (m->cut_b - m->cut_a);
    double step = px_html_tick_step(shown * mult, 8) / mult;
    px_buf_printf(b, "<g class=\"axis-x\" data-unit=\"%s\"><line class=\"axis\" x1=\"%.1f\" "
                     "x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                  unit, m->left, m->left + width_px, y, y);
    for (int i = 0; i <= 1000; i++) {
        double t = i * step;
        if (t > tt->makespan_s * (1 + 1e-9))
            break;
        if (collapsed(m) && t > m->cut_a && t < m->cut_b)
            continue;
        double x = tx(m, t);
        px_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                         "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g"
                         "</text>",
                      x, x, y, y + 4, x, y + 15, t * mult);
    }
    px_buf_printf(b, "<text class=\"unit\" x=\"%.1f\" y=\"%.1f\">%s</text></g>\n",
                  m->left + width_px + 6, y + 15, unit);
}

/* Stage r's ops with a visible piece. */
static int ops_drawn(const timed_timeline *tt, const time_map *m, int r)
{
    double x[2], w[2];
    int n = 0;
    for (int k = 0; k < tt->n_ops[r]; k++)
        n += pieces(m, tt->ops[r][k].t0, tt->ops[r][k].t1, x, w) > 0;
    return n;
}

/* Stage r's row: idle gaps, ops, arriving messages. */
static void stage_row(px_buf *b, const timed_timeline *tt, const time_map *m, int r, double y)
{
    const double op_h = 20;
    double x[2], w[2];
    /* the row idle, the ops over it: the gaps between them are the bubble */
    for (int i = 0, n = pieces(m, 0.0, tt->makespan_s, x, w); i < n; i++)
        px_buf_printf(b, "<rect class=\"idle\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                         "height=\"%.0f\"/>",
                      x[i], y, w[i], op_h);
    for (int k = 0; k < tt->n_ops[r]; k++) {
        const timed_op *o = &tt->ops[r][k];
        int n = pieces(m, o->t0, o->t1, x, w);
        for (int i = 0; i < n; i++) {
            px_buf_printf(b, "<rect class=\"op op-%c\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                             "height=\"%.0f\" stroke=\"#fff\" stroke-width=\"%s\">"
                             "<title>%c micro-batch %d, chunk %d: %.4g ms</title></rect>",
                          o->kind, x[i], y, w[i], op_h, w[i] > 4 ? "0.5" : "0", o->kind,
                          o->micro, o->chunk * tt->pp + r, 1e3 * (o->t1 - o->t0));
            if (w[i] > 14)
                px_buf_printf(b, "<text x=\"%.2f\" y=\"%.1f\" style=\"fill:#fff;font-size:9px\">"
                                 "%d</text>",
                              x[i] + 2, y + 14, o->micro);
        }
    }
    for (int k = 0; k < tt->n_msgs; k++) { /* messages arriving at this stage */
        const timed_msg *g = &tt->msgs[k];
        if (g->dst != r)
            continue;
        for (int i = 0, n = pieces(m, g->t0, g->t1, x, w); i < n; i++)
            px_buf_printf(b, "<rect class=\"comm\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                             "height=\"4\"/>",
                          x[i], y + op_h + 1, fmax(w[i], 0.5));
    }
}

/* The elision mark across the rows, with what it leaves out. */
static void elision_mark(px_buf *b, const timed_timeline *tt, const time_map *m, int vpp,
                         int per_op, int hidden_ops, double rows_h)
{
    double x = m->left + m->cut_a * m->sx;
    int micro = (int)lround((double)hidden_ops / (per_op * vpp));
    px_buf_printf(b, "<g class=\"elision\" data-from-s=\"%.9g\" data-to-s=\"%.9g\" "
                     "data-elided-ops=\"%d\" data-elided-microbatches=\"%d\">"
                     "<rect class=\"elided\" x=\"%.1f\" y=\"2\" width=\"%.1f\" height=\"%.1f\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">&#8943;</text>"
                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" style=\"font-size:10px\">"
                     "%d mb</text><title>steady state not drawn: about %d micro-batches (%d ops a "
                     "stage), %.4g s</title></g>\n",
                  m->cut_a, m->cut_b, hidden_ops, micro, x + 4, m->gap_px - 8, rows_h,
                  x + m->gap_px / 2, rows_h / 2, x + m->gap_px / 2, rows_h / 2 + 14, micro,
                  micro, hidden_ops, m->cut_b - m->cut_a);
    (void)tt;
}

static void timeline_svg(px_buf *b, const timed_timeline *tt, const px_parallel *par)
{
    const double width = 1060, row_h = 30;
    int pp = tt->pp, per_op = par->schedule == PX_SCHED_ZB_H1 ||
                                      par->schedule == PX_SCHED_ZB_H2 ? 3 : 2;
    time_map m;
    choose_cut(tt, width, &m);
    double height = pp * row_h + 50;
    px_buf_printf(b, "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\" data-stages=\"%d\" data-makespan-s=\"%.9g\" "
                     "data-collapsed=\"%d\">\n",
                  m.left + width + 40, height, pp, tt->makespan_s, collapsed(&m));
    int hidden0 = 0;
    for (int r = 0; r < pp; r++) {
        double y = r * row_h + 4;
        int drawn = ops_drawn(tt, &m, r);
        px_buf_printf(b, "<g class=\"stage-row\" data-stage=\"%d\" data-ops=\"%d\" "
                         "data-ops-drawn=\"%d\" data-ops-elided=\"%d\" data-microbatch-s=\"%.9g\">"
                         "<text x=\"4\" y=\"%.1f\">stage %d</text>\n",
                      r, tt->n_ops[r], drawn, tt->n_ops[r] - drawn, tt->mb_s[r], y + 14, r);
        stage_row(b, tt, &m, r, y);
        px_buf_puts(b, "</g>\n");
        if (r == 0)
            hidden0 = tt->n_ops[r] - drawn;
    }
    if (collapsed(&m))
        elision_mark(b, tt, &m, par->vpp, per_op, hidden0, pp * row_h);
    time_axis(b, tt, &m, pp * row_h + 6, width);
    px_buf_puts(b, "</svg>\n");
}

px_status px_html_timeline(px_buf *b, px_cost_ctx *ctx, const px_parallel *par,
                           const px_stage_prediction *stages, double *makespan_s,
                           double *msg_s, px_error *err)
{
    timed_timeline tt;
    px_status st = build_timed(ctx, par, stages, &tt, err);
    if (st == PX_OK) {
        timeline_svg(b, &tt, par);
        *makespan_s = tt.makespan_s;
        *msg_s = tt.msg_s;
    }
    timed_free(&tt);
    return st;
}
