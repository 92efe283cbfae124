/* px_cost.c — the cost model; every formula is documented, with its source,
 * in docs/cost-model.md under the heading named in the comment above it.
 * This file: the closed-form formulas, the context and the whole step
 * (px_cost_eval); layer and stage times are in px_cost_time.c, memory by
 * kind and stage in px_cost_memory.c. */
#include "px_cost.h"
#include "px_cost_internal.h"
#include "px_overhead.h"
#include "px_blocking.h"
#include "px_cost_fsdp.h"
#include "px_grad_accum.h"
#include "px_pipe_engine.h"

#include <math.h>
#include <string.h>

#include "px_checked.h"
#include "px_attn_eff.h"
#include "px_cost_cp.h"
#include "px_cost_moe.h"
#include "px_cost_precision.h"
#include "px_efficiency.h"
#include "px_flops.h"
#include "px_layout.h"
#include "px_sliding.h"
#include "px_plan_check.h"

/* ================================================================== */
/* Static memory                                                      */

px_bytes_per_param px_cost_bytes_per_param(int dtype_bytes, bool grad_fp32)
{
    px_bytes_per_param b;
    if (dtype_bytes >= 4) {
        /* fp32 training: the weights are the master copy, Adam adds m and v */
        b.weights = 4.0;
        b.grads = 4.0;
        b.optimizer = 8.0;
    } else {
        b.weights = (double)(dtype_bytes > 0 ? dtype_bytes : 2);
        b.grads = grad_fp32 ? 4.0 : b.weights;
        b.optimizer = 12.0; /* fp32 master 4 + Adam m 4 + v 4 */
    }
    return b;
}

/* ================================================================== */
/* Element-wise time: the bytes of each class (see px_cost.h)          */

/* Written as (coefficient x e) x elems so that it rounds exactly as the
 * closed forms of the spec (4e x Th for two norms...): the coefficients and
 * e are small integers, their products exact. */
double px_cost_class_fwd_bytes(px_mem_class c, double elems, int dtype_bytes)
{
    double e = dtype_bytes > 0 ? dtype_bytes : 2;
    switch (c) {
    case PX_MEM_NORM:
    case PX_MEM_GELU:
    case PX_MEM_ROPE:
    case PX_MEM_GENERIC: return 2.0 * e * elems; /* read + write */
    case PX_MEM_RESIDUAL:
    case PX_MEM_SWIGLU: return 3.0 * e * elems;  /* 2 reads + 1 write */
    default: return 0.0;                         /* charged as a total */
    }
}

double px_cost_class_bytes(px_mem_class c, double elems, int dtype_bytes, bool grad_fp32)
{
    int e = dtype_bytes > 0 ? dtype_bytes : 2;
    switch (c) {
    case PX_MEM_XENT:
        /* the executor's loss kernels: max, sum of exponentials (with the
         * target's logit), backward, charged as 4 passes over fp32 logits */
        return 4.0 * 4.0 * elems;
    case PX_MEM_ADAMW: {
        /* master weights, m and v read + written, the gradient read, the
         * low-precision copy written */
        px_bytes_per_param b = px_cost_bytes_per_param(e, grad_fp32);
        return elems * (2.0 * b.optimizer + b.grads + (e < 4 ? b.weights : 0.0));
    }
    case PX_MEM_EMBED:
        /* gather the rows forward, scatter-add them backward */
        return 3.0 * 2.0 * e * elems;
    default:
        return 3.0 * px_cost_class_fwd_bytes(c, elems, e); /* backward 2x forward */
    }
}

void px_cost_static_formula(double n_params, int tp, int pp, int dp, int zero,
                            int dtype_bytes, bool grad_fp32, px_memory *out)
{
    memset(out, 0, sizeof *out);
    double per_gpu = n_params / ((double)tp * (double)pp);
    double w, g, o;
    static_bytes(per_gpu, dp, zero, px_cost_bytes_per_param(dtype_bytes, grad_fp32), &w, &g,
                 &o);
    out->weights = px_i64_from_double_sat(w);
    out->grads = px_i64_from_double_sat(g);
    out->optimizer = px_i64_from_double_sat(o);
    out->total = out->weights + out->grads + out->optimizer;
}

/* ================================================================== */
/* Activations per operator                                           */

void px_cost_act_layer(const px_act_shape *sh, px_act_ops *o)
{
    memset(o, 0, sizeof *o);
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double t = sh->tp > 0 ? sh->tp : 1;
    double tsp = sh->sp ? t : 1.0;           /* SP shards the pointwise region */
    double sb = sh->s * sh->b;
    double sbh = sb * sh->h;
    double a_t = sh->a / t;                  /* heads per GPU */
    double kv_t = sh->kv >= t ? sh->kv / t : 1.0; /* kv heads are replicated when k < t */

    if (sh->recompute == PX_RECOMPUTE_FULL) {
        /* only the layer input survives the forward */
        o->norm1_in = e * sbh / tsp;
        o->norm = o->total = o->norm1_in;
        return;
    }
    o->norm1_in = e * sbh / tsp;
    o->norm2_in = e * sbh / tsp;
    o->qkv_in = e * sbh / tsp;
    if (sh->q_lora > 0.0 || sh->kv_lora > 0.0)
        o->latent = e * sb * (sh->q_lora + sh->kv_lora + sh->rope_dim);
    o->q = e * sb * a_t * sh->dq;
    o->k = e * sb * kv_t * sh->dq;
    o->v = e * sb * kv_t * sh->dv;
    if (sh->flash) {
        /* FlashAttention keeps only the row log-sum-exp (fp32) per head;
         * selective recompute reruns the whole core, keeping nothing */
        if (sh->recompute != PX_RECOMPUTE_SELECTIVE)
            o->softmax_stats = 4.0 * sb * a_t;
    } else if (sh->recompute != PX_RECOMPUTE_SELECTIVE) {
        double scores = sb * sh->s_kv * a_t;
        o->softmax_out = e * scores;
        if (sh->dropout) {
            o->score_mask = 1.0 * scores;
            o->score_drop = e * scores;
        }
    }
    o->proj_in = e * sb * a_t * sh->dv;
    o->attn_mask = sh->dropout ? sbh / tsp : 0.0;
    o->mlp_in = e * sbh / tsp;
    o->mlp_mask = sh->dropout ? sbh / tsp : 0.0;
    double up = sh->gated ? 2.0 : 1.0; /* SwiGLU keeps gate and up outputs */
    if (sh->moe) {
        /* Each GPU routes its own T/t tokens (its SP shard, or without SP
         * its slice of the TP group's tokens): fp32 router probabilities
         * over all E experts for the backward of the softmax. */
        double etp = sh->etp > 0 ? sh->etp : 1;
        double tm = sb / t;
        o->router = 4.0 * tm * sh->n_experts;
        /* routed token copies one GPU processes: top_k of each of its
         * tokens on average (the routing decides the exact count), times
         * etp when expert TP shares the rows */
        double tok = tm * sh->top_k * etp;
        /* per copy: the dispatched row received (input of the expert GEMMs,
         * the all-to-all receive buffer), the gate and up outputs and the
         * SwiGLU output (the down projection's input: Megatron keeps it;
         * the CPU executor rebuilds it in the backward as a temporary of the
         * same size, alive at the backward's peak), and the expert output
         * sent back (the combine buffer, needed for the gradient of the
         * gate probabilities).  The combine buffer holds only this GPU's
         * own tm·k rows: under expert TP the partial outputs are
         * reduce-scattered back to the GPU that received each row before it
         * keeps them (executor/px_moe.c) */
        o->moe_recv = tok * e * sh->h;
        o->moe_gate_up = tok * e * (up + 1.0) * sh->moe_f / etp;
        o->moe_combine = tm * sh->top_k * e * sh->h;
        /* routing tables, 4-byte ints / fp32: chosen expert and its gate
         * for each of the tm·k copies, and the token row and gate slot of
         * each row sent */
        o->moe_meta = 4.0 * 4.0 * tm * sh->top_k;
        o->expert = o->moe_recv + o->moe_gate_up + o->moe_combine + o->moe_meta;
        double fs = sh->n_shared * sh->moe_f;
        o->fc1_out = e * sb * up * fs / t;
        o->act_out = e * sb * fs / t;
    } else {
        o->fc1_out = e * sb * up * sh->f / t;
        o->act_out = e * sb * sh->f / t;
    }
    o->attention = o->qkv_in + o->latent + o->q + o->k + o->v + o->softmax_out + o->score_mask +
                   o->score_drop + o->softmax_stats + o->proj_in + o->attn_mask;
    o->mlp = o->mlp_in + o->fc1_out + o->act_out + o->mlp_mask + o->router + o->expert;
    o->norm = o->norm1_in + o->norm2_in;
    o->total = o->attention + o->mlp + o->norm;
}

double px_cost_korthikanti_row(int row, double s, double b, double h, double a, int t, bool sp)
{
    double sbh = s * b * h, score = 5.0 * a * s / h;
    switch (row) {
    case 0: return sbh * (34.0 + score);
    case 1: return sbh * (10.0 + 24.0 / t + score / t);
    case 2: return sbh * (34.0 / t + score / t);
    case 3: return sbh * (10.0 + 24.0 / t);
    case 4: return sbh * 34.0 / t;
    case 5: return 2.0 * sbh / (sp ? t : 1);
    default: return 0.0;
    }
}

double px_cost_kv_bytes(double s, double b, double h, double a, double kv, int elem_bytes)
{
    return 2.0 * elem_bytes * b * s * h * kv / a;
}

/* ================================================================== */
/* Pipeline schedules and bubble                                      */

double px_cost_inflight(px_schedule sched, int p, int v, int64_t m, int stage)
{
    double mm = (double)m;
    double left = (double)(p - stage); /* p − i */
    if (p <= 1)
        return sched == PX_SCHED_GPIPE ? mm : dmin(1.0, mm);
    switch (sched) {
    case PX_SCHED_GPIPE: return mm;
    case PX_SCHED_INTERLEAVED:
    case PX_SCHED_ZB_H1: {
        /* ZB-H1 runs each W right after its B: the 1F1B count, or the
         * interleaved one with v > 1 (the executor's orders) */
        if (sched == PX_SCHED_ZB_H1 && v <= 1)
            return dmin(left, mm);
        if (v < 1)
            v = 1;
        /* Megatron's warm-up: 2(p−i−1) + (v−1)p forward chunks, +1 in steady state */
        double chunks = 2.0 * (left - 1.0) + (double)(v - 1) * p + 1.0;
        return dmin(chunks, mm * v) / v;
    }
    case PX_SCHED_ZB_H2:
        /* Qi et al.'s parallelogram: stage 0 warms up with 2p−1 forwards and
         * the last stage ends with 2p−1 W's, each holding its activations
         * until then: 2p−1 on every stage (the executor's order, checked in
         * tests/unit/test_schedule.c). */
        return dmin(2.0 * p - 1.0, mm);
    case PX_SCHED_1F1B:
    default: return dmin(left, mm);
    }
}

double px_cost_inflight_bw(px_schedule sched, int p, int v, int64_t m, int stage)
{
    double mm = (double)m;
    if (m < 1)
        return 0.0;
    switch (sched) {
    case PX_SCHED_ZB_H1:
        /* W right after its B: one chunk-set past B at a time */
        return 1.0 / (v > 1 ? v : 1);
    case PX_SCHED_ZB_H2: {
        /* The order's steady phase is F-B-W; the later stages pile up B's
         * ahead of their W's (the tail of 2i + 1 W's): p + i of the 2p − 1
         * past B when stage 0 peaks, fewer when m is short of the count the
         * warm-up needs, m − 2(p−1−i).  Read off the unit-time order of
         * planner/spec/px_schedule.c for p = 1..8 and all m. */
        if (p <= 1)
            return dmin(1.0, mm);
        double n = dmin(mm - 2.0 * (p - 1 - stage), (double)(p + stage));
        return n < 1.0 ? 1.0 : n;
    }
    default: return 0.0;
    }
}

double px_cost_bubble_over_ideal(px_schedule sched, int p, int v, int64_t m)
{
    if (p <= 1 || m < 1)
        return 0.0;
    double x = (double)(p - 1) / (double)m;
    /* Zero-bubble schedules fill the bubble with deferred weight-gradient
     * (W) work of later micro-batches: ZB-H1 needs m >= p of them, ZB-H2
     * (its longer warm-up) m >= 2p − 1; with fewer they fall back a level. */
    switch (sched) {
    case PX_SCHED_INTERLEAVED: return x / (v > 1 ? v : 1);
    case PX_SCHED_ZB_H1: return m >= p ? x / 3.0 : x;
    case PX_SCHED_ZB_H2: return m >= 2 * (int64_t)p - 1 ? 0.0 : (m >= p ? x / 3.0 : x);
    default: return x;
    }
}

double px_cost_bubble_fraction(px_schedule sched, int p, int v, int64_t m)
{
    double x = px_cost_bubble_over_ideal(sched, p, v, m);
    return x / (1.0 + x);
}

/* ================================================================== */
/* Communication volumes                                              */

double px_cost_tp_bytes_per_layer(double s, double b, double h, int t, int elem_bytes)
{
    return 4.0 * px_coll_wire_bytes(PX_COLL_ALLREDUCE, t, elem_bytes * b * s * h);
}

double px_cost_pp_msg_bytes(double s, double b, double h, int t, bool sp, int elem_bytes)
{
    return elem_bytes * b * s * h / (sp && t > 1 ? t : 1);
}

double px_cost_dp_breakeven_tokens(double peak_flops, double bw, double comm_bytes_per_param)
{
    return comm_bytes_per_param * peak_flops / (6.0 * bw);
}

/* ================================================================== */
/* Time to train and goodput                                          */

double px_cost_days_formula(double n_params, double tokens, int gpus, double peak_flops,
                            double mfu)
{
    return 6.0 * n_params * tokens / ((double)gpus * peak_flops * mfu) / 86400.0;
}

px_goodput px_cost_goodput(double gpu_mtbf_hours, int gpus, double ckpt_bytes_per_gpu,
                           double ckpt_write_bw, double restart_s)
{
    px_goodput g;
    memset(&g, 0, sizeof g);
    if (gpu_mtbf_hours <= 0.0 || gpus < 1)
        return g;
    g.job_mtbf_s = gpu_mtbf_hours * 3600.0 / gpus;
    g.ckpt_write_s = ckpt_write_bw > 0.0 ? ckpt_bytes_per_gpu / ckpt_write_bw : 0.0;
    g.interval_s = sqrt(2.0 * g.ckpt_write_s * g.job_mtbf_s);
    double lost = restart_s / g.job_mtbf_s;
    if (g.interval_s > 0.0)
        lost += g.ckpt_write_s / g.interval_s + g.interval_s / (2.0 * g.job_mtbf_s);
    g.lost_fraction = lost > 1.0 ? 1.0 : lost;
    return g;
}

/* ================================================================== */
/* Model-level evaluation                                             */

px_status px_cost_ctx_init(px_cost_ctx *ctx, const px_model *m, const px_hw *hw, px_error *err)
{
    memset(ctx, 0, sizeof *ctx);
    if (m->n_layers < 1 || m->n_layers > PX_MAX_LAYERS)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: n_layers = %lld: allowed 1..%d", m->name,
                       (long long)m->n_layers, PX_MAX_LAYERS);
    if (hw->peak_flops <= 0.0 || hw->hbm_bytes <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "hardware %s: peak_flops and hbm_bytes must be > 0", hw->name);
    ctx->model = m;
    ctx->hw = hw;
    px_model_count_params(m, &ctx->pc);
    int64_t first_moe = -1, first_dense = -1;
    for (int64_t l = 0; l < m->n_layers; l++) {
        bool moe = px_model_layer_is_moe(m, l);
        ctx->moe_prefix[l + 1] = ctx->moe_prefix[l] + (moe ? 1 : 0);
        if (moe && first_moe < 0)
            first_moe = l;
        if (!moe && first_dense < 0)
            first_dense = l;
    }
    ctx->n_moe_layers = ctx->moe_prefix[m->n_layers];
    if (first_dense >= 0)
        ctx->dense_layer_params = px_model_layer_params(m, first_dense);
    if (first_moe >= 0) {
        ctx->moe_layer_params = px_model_layer_params(m, first_moe);
        ctx->expert_params = ctx->pc.expert_mlp / ctx->n_moe_layers;
    }
    ctx->head_params = ctx->pc.lm_head > 0 ? ctx->pc.lm_head : m->vocab * m->hidden;
    int64_t s = m->seq_len > 0 ? m->seq_len : 1;
    ctx->flops_seq_len = s;
    ctx->model_flops_per_token = px_flops_model_per_token(m, s);
    ctx->model_flops_causal_per_token = px_flops_model_causal_per_token(m, s);
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
        ctx->hw_flops_per_token[r] = px_flops_hw_per_token(m, s, (px_recompute)r);
    return PX_OK;
}

px_status px_cost_check(const px_model *m, const px_parallel *par, px_error *err)
{
    px_caps caps; /* the cost model prices the planner's whole space */
    px_caps_parallax(&caps);
    return px_plan_check(m, par, &caps, err);
}

void px_cost_default_split(int64_t n_layers, int chunks, int *layers_per_chunk)
{
    if (chunks < 1)
        return;
    int64_t base = n_layers / chunks, rem = n_layers % chunks, first = (chunks - rem) / 2;
    for (int c = 0; c < chunks; c++)
        layers_per_chunk[c] = (int)(base + (c >= first && c < first + rem ? 1 : 0));
}

bool px_cost_record_split(const px_model *m, px_parallel *par)
{
    int chunks = par->pp * par->vpp;
    if (par->n_chunks > 0 || chunks < 1 || chunks > PX_MAX_CHUNKS || chunks > m->n_layers ||
        m->n_layers % chunks == 0)
        return false;
    px_cost_default_split(m->n_layers, chunks, par->layers_per_chunk);
    par->n_chunks = chunks;
    return true;
}

static px_status eval_impl(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                           double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                           px_cost_detail *detail, px_error *err);

px_status px_cost_eval(px_cost_ctx *ctx, const px_parallel *par, double train_tokens,
                       double gpu_mtbf_hours, px_prediction *pred, px_cost_detail *detail,
                       px_error *err)
{
    return eval_impl(ctx, par, -1, train_tokens, gpu_mtbf_hours, pred, detail, err);
}

px_status px_cost_eval_if_fits(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                               double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                               px_error *err)
{
    return eval_impl(ctx, par, mem_limit, train_tokens, gpu_mtbf_hours, pred, NULL, err);
}

/* The slowest stage's micro-batch, by part (seconds, and bytes per
 * micro-batch); the head's and embedding's GEMM / pointwise time is booked
 * as forward / backward and as element-wise time. */
typedef struct {
    double mb, fwd, bwd, rc, tp, ep, cp, cpt, gemm, attn, mem, tpb, epb, cpb;
} slowest_stage;

static void slowest_stage_of(const px_cost_ctx *ctx, const px_parallel *par,
                             const stage_layers *sl, const layer_time *ld, const layer_time *lm,
                             double first_s, double last_s, slowest_stage *w)
{
    int p = par->pp;
    memset(w, 0, sizeof *w);
    w->mb = -1.0;
    bool skip = middle_stages_identical(ctx, par);
    int seen[PX_SEEN_MAX], n_seen = 0;
    for (int st = 0; st < p; st++) {
        if (repeats_middle(sl, st, p, seen, &n_seen))
            continue;
        stage_time q;
        time_of_stage(&sl[st], ld, lm, (st == 0 ? first_s : 0.0) + (st == p - 1 ? last_s : 0.0),
                      &q);
        if (q.mb > w->mb) {
            w->mb = q.mb;
            /* the head's and embedding's GEMM/pointwise time is booked as forward/backward */
            w->fwd = q.fwd + q.extra / 3.0;
            w->bwd = q.bwd + 2.0 * q.extra / 3.0;
            w->rc = q.rcs;
            w->tp = q.tp;
            w->ep = q.ep;
            w->cp = q.cp;
            w->cpt = q.cpt;
            w->gemm = q.gemm;
            w->attn = q.attn;
            w->mem = q.mem + q.extra;
            w->tpb = q.tpb;
            w->epb = q.epb;
            w->cpb = q.cpb;
        }
        /* uniform dense stages between the first and the last are identical */
        if (st == 0 && p > 2 && skip)
            st = p - 2;
    }
}

/* PP: each stage sends and receives one activation (forward) and one
 * gradient (backward) per micro-batch per chunk; the sends sit between
 * compute steps of the 1F1B loop, so they are on the critical path */
static void pp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                         double *pp_total_out, double *pp_bytes_out)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    int p = par->pp;
    double mm = (double)par->n_micro;
    double v = par->vpp;
    double pp_total = 0.0, pp_bytes = 0.0;
    if (p > 1) {
        bool sp = par->sp && par->tp > 1;
        double msg = px_cost_pp_msg_bytes((double)seq_of(ctx, par) / par->cp,
                                          (double)par->micro_batch, (double)m->hidden,
                                          par->tp, sp, elem_of(ctx));
        double one = px_time_coll_s(hw, PX_COLL_P2P, 2, msg, x->pp);
        if (!sp && par->tp > 1) {
            /* Megatron's scatter/gather (Narayanan et al. 2021, sec. 4.1): the t
             * ranks of a TP group hold the same activation; each sends 1/t of
             * it over its own link and the receivers all-gather it in-node */
            msg /= par->tp;
            one = px_time_coll_s(hw, PX_COLL_P2P, 2, msg, x->pp) +
                  px_time_coll_s(hw, PX_COLL_ALLGATHER, par->tp, msg * par->tp, x->tp);
        }
        pp_total = 2.0 * v * mm * one;
        pp_bytes = 2.0 * v * mm * msg;
    }
    *pp_total_out = pp_total;
    *pp_bytes_out = pp_bytes;
}

/* Exposed seconds of a once-a-step data-parallel collective of t seconds
 * overlapped with compute: with one model chunk a stage, all but `tail` (the
 * bucket the compute ends or starts with) hides under one micro-batch's
 * backward (forward), `win`.  Megatron's interleaved schedule launches each
 * of the v chunks' share separately (schedules.py: a chunk's gradient
 * reduction when its last micro-batch's backward ends, the next chunk's
 * parameter gather when a chunk's first forward starts), p chunk-steps
 * apart: the first launched share hides under ((v - 1)·p + 1) chunk-steps of
 * win / v each, and each share under its own win / v. */
static double chunked_exposed(const px_parallel *par, double t, double win, double tail)
{
    double v = par->schedule == PX_SCHED_INTERLEAVED && par->vpp > 1 ? (double)par->vpp : 1.0;
    double k = ((v - 1.0) * par->pp + 1.0) / v;
    return dmax(tail, dmax((t - win) / v, t - k * win));
}

/* DP / ZeRO: see docs/cost-model.md "Data parallel and the overlap model".
 * dense_p, exp_p: the worst stage's parameters on one GPU; fwd_win, bwd_win:
 * one micro-batch's forward and backward compute, the overlap windows. */
static void dp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                         double w_dense_p, double w_exp_p, double fwd_win, double bwd_win,
                         const px_blocking_sync *sync, double *total, double *exposed,
                         double *bytes)
{
    const px_hw *hw = ctx->hw;
    double mm = (double)par->n_micro;
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    int ddp = par->dp * par->cp;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    /* quantised parameters are gathered quantised (px_cost_precision.h) */
    double gath = par->quantized_params ? px_prec_param_gather_bytes(par->precision, bpp.weights)
                                        : bpp.weights;
    double grad_b = w_dense_p * bpp.grads, wt_b = w_dense_p * gath;
    double egrad_b = w_exp_p * bpp.grads, ewt_b = w_exp_p * gath;
    bool dcross = x->dp || x->cp;
    double t_ar = px_time_coll_s(hw, PX_COLL_ALLREDUCE, ddp, grad_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_ALLREDUCE, edp, egrad_b, x->edp);
    double t_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, ddp, grad_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, edp, egrad_b, x->edp);
    double t_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, ddp, wt_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_ALLGATHER, edp, ewt_b, x->edp);
    double dp_bytes_ar = px_coll_wire_bytes(PX_COLL_ALLREDUCE, ddp, grad_b) +
                         px_coll_wire_bytes(PX_COLL_ALLREDUCE, edp, egrad_b);
    double dp_bytes_rs = px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, ddp, grad_b) +
                         px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, edp, egrad_b);
    double dp_bytes_ag = px_coll_wire_bytes(PX_COLL_ALLGATHER, ddp, wt_b) +
                         px_coll_wire_bytes(PX_COLL_ALLGATHER, edp, ewt_b);
    /* The last gradients the backward produces (stage 0's embedding, or its
     * first layer) are reduced after the compute has ended, and the first
     * weights the next forward needs are gathered before it can start: that
     * bucket's communication is exposed however long the windows are. */
    double tail_p = dmin(w_dense_p, dmax((double)ctx->pc.embedding,
                                         (double)ctx->dense_layer_params) / par->tp);
    double tail_ar = px_time_coll_s(hw, PX_COLL_ALLREDUCE, ddp, tail_p * bpp.grads, dcross);
    double tail_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, ddp, tail_p * bpp.grads, dcross);
    double tail_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, ddp, tail_p * bpp.weights, dcross);
    double dp_total = 0.0, dp_exposed = 0.0, dp_bytes = 0.0;
    switch (par->zero) {
    case 0:
        dp_total = t_ar;
        dp_exposed = chunked_exposed(par, t_ar, bwd_win, tail_ar);
        dp_bytes = dp_bytes_ar;
        break;
    case 1:
        if (ctx->run && ctx->run->zero1_grad_allreduce) {
            /* the whole gradient all-reduced, then each replica updates its
             * shard (DeepSpeed's BF16 optimizer under the pipeline engine) */
            t_rs = t_ar;
            tail_rs = tail_ar;
            dp_bytes_rs = dp_bytes_ar;
        }
        dp_total = t_rs + t_ag;
        dp_exposed = chunked_exposed(par, t_rs, bwd_win, tail_rs) +
                     chunked_exposed(par, t_ag, fwd_win, tail_ag);
        dp_bytes = dp_bytes_rs + dp_bytes_ag;
        break;
    case 2:
        /* sharded gradients cannot accumulate: one reduce-scatter per micro-batch */
        dp_total = mm * t_rs + t_ag;
        dp_exposed = mm * dmax(0.0, t_rs - bwd_win) + dmax(0.0, t_ag - fwd_win);
        dp_bytes = mm * dp_bytes_rs + dp_bytes_ag;
        break;
    default:
        /* ZeRO-3 / FSDP: weights gathered for every forward and backward */
        dp_total = mm * (2.0 * t_ag + t_rs);
        dp_exposed = mm * (dmax(0.0, t_ag - fwd_win) + dmax(0.0, t_ag + t_rs - bwd_win));
        dp_bytes = mm * (2.0 * dp_bytes_ag + dp_bytes_rs);
        break;
    }
    if (!par->dp_overlap && par->zero <= 2)
        dp_exposed = dp_total; /* reduced (and gathered) after the backward */
    dp_exposed = px_blocking_dp_exposed(par, dp_total, dp_exposed); /* ZeRO-3 too */
    /* the hidden part still takes SMs from the compute it hides under */
    dp_exposed += comm_sm_fraction(hw) * (dp_total - dp_exposed);
    if (par->zero >= 3 && ctx->run && (ddp > 1 || edp > 1))
        fsdp_step_comm(ctx, par, x, w_dense_p + w_exp_p, bpp, fwd_win, bwd_win, &dp_total,
                       &dp_exposed, &dp_bytes);
    /* a blocking engine (the executor): no prefetch hides a layer's gather
     * either; frameworks that prefetch keep their gathers under compute
     * (fsdp_step_comm) whether or not the gradient reduction overlaps */
    if (blocking_engine(ctx, par))
        dp_exposed = dp_total;
    if (ddp <= 1 && edp <= 1)
        dp_total = dp_exposed = dp_bytes = 0.0;
    dp_exposed += mm * sync->dp_mb + sync->dp_step;
    *total = dp_total;
    *exposed = dp_exposed;
    *bytes = dp_bytes;
}

/* optimizer step: Adam streams master weights, m, v (read + write), the
 * gradient (read) and writes the low-precision weights */
static double optimizer_time(const px_cost_ctx *ctx, const px_parallel *par, double w_dense_p,
                             double w_exp_p)
{
    const px_hw *hw = ctx->hw;
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    int ddp = par->dp * par->cp;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    double shard = par->zero >= 1 ? (double)ddp : 1.0;
    double eshard = par->zero >= 1 ? (double)edp : 1.0;
    double opt_params = w_dense_p / shard + w_exp_p / eshard;
    double opt_s = px_time_mem_class_s(
        hw, PX_MEM_ADAMW, px_cost_class_bytes(PX_MEM_ADAMW, opt_params, elem_of(ctx),
                                              par->grad_fp32));
    if (!mem_class_measured(hw, PX_MEM_ADAMW)) {
        /* around Adam (datasheet profiles): the gradient norm for clipping
         * reads the shard's gradients, the low-precision copy reads the fp32
         * master again, and the next step starts by zeroing the whole local
         * gradient buffer */
        double extra = opt_params * (bpp.grads + (elem_of(ctx) < 4 ? 4.0 : 0.0)) +
                       (w_dense_p + w_exp_p) * bpp.grads;
        opt_s += px_time_mem_s(hw, extra);
    }
    return opt_s;
}

/* Tokens, FLOPs and utilisation of a step of `step` seconds. */
static void fill_rates(px_cost_ctx *ctx, const px_parallel *par, double step, double bubble,
                       px_prediction *pred)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    px_recompute rc = par->recompute;
    double mm = (double)par->n_micro;
    int64_t s = seq_of(ctx, par);
    double tokens = (double)par->micro_batch * mm * par->dp * (double)s;
    if (s != ctx->flops_seq_len) {
        /* FLOPs per token depend on s (attention): recompute once per length */
        ctx->flops_seq_len = s;
        ctx->model_flops_per_token = px_flops_model_per_token(m, s);
        ctx->model_flops_causal_per_token = px_flops_model_causal_per_token(m, s);
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
            ctx->hw_flops_per_token[r] = px_flops_hw_per_token(m, s, (px_recompute)r);
    }
    double fpt = ctx->model_flops_per_token, hpt = ctx->hw_flops_per_token[rc];
    if (par->n_layer_recompute > 0)
        hpt = px_flops_hw_per_token_layers(m, s, rc, par->layer_recompute, par->n_layer_recompute);
    double gpus = (double)par->tp * par->cp * par->pp * par->dp;
    pred->model_flops_per_step = fpt * tokens;
    pred->hw_flops_per_step = hpt * tokens;
    pred->tokens_per_s = tokens / step;
    pred->mfu = pred->model_flops_per_step / (step * gpus * hw->peak_flops);
    pred->hfu = pred->hw_flops_per_step / (step * gpus * hw->peak_flops);
    pred->mfu_causal = ctx->model_flops_causal_per_token * tokens / (step * gpus * hw->peak_flops);
    pred->bubble_fraction = bubble / step;
}

/* Days to train, checkpoints and goodput, when train_tokens > 0. */
static void fill_goodput(const px_cost_ctx *ctx, const px_parallel *par, double train_tokens,
                         double gpu_mtbf_hours, px_prediction *pred)
{
    const px_hw *hw = ctx->hw;
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double gpus = (double)par->tp * par->cp * par->pp * par->dp;
    if (train_tokens > 0.0) {
        pred->train_tokens = train_tokens;
        pred->days_to_train = train_tokens / pred->tokens_per_s / 86400.0;
        double ckpt_bpp = bpp.optimizer + (elem_of(ctx) >= 4 ? bpp.weights : 0.0);
        pred->ckpt_bytes_per_gpu = (double)ctx->pc.total * ckpt_bpp / gpus;
        double mtbf = gpu_mtbf_hours > 0.0 ? gpu_mtbf_hours : hw->gpu_mtbf_hours;
        px_goodput gp = px_cost_goodput(mtbf, (int)gpus, pred->ckpt_bytes_per_gpu,
                                        hw->ckpt_write_bw, hw->restart_s);
        pred->ckpt_write_s = gp.ckpt_write_s;
        pred->ckpt_interval_s = gp.interval_s;
        pred->job_mtbf_s = gp.job_mtbf_s;
        pred->lost_fraction = gp.lost_fraction;
        pred->goodput_days = gp.lost_fraction < 1.0
                                 ? pred->days_to_train / (1.0 - gp.lost_fraction)
                                 : INFINITY;
    }

}

/* Everything --explain prints about the step's time and traffic. */
static void fill_time_detail(const px_cost_ctx *ctx, const px_parallel *par,
                             const slowest_stage *w, const crossings *x, const layer_time *ld,
                             const layer_time *lm, double bubble_x, double pp_total,
                             double pp_bytes, double dp_total, double dp_exposed,
                             double dp_bytes, px_cost_detail *detail)
{
    double mm = (double)par->n_micro;
    detail->tp_total_s = detail->tp_exposed_s = mm * w->tp;
    detail->cp_total_s = mm * w->cpt;
    detail->cp_exposed_s = mm * w->cp;
    detail->ep_total_s = detail->ep_exposed_s = mm * w->ep;
    detail->pp_total_s = detail->pp_exposed_s = pp_total;
    detail->dp_total_s = dp_total;
    detail->dp_exposed_s = dp_exposed;
    detail->compute_fwd_s = mm * w->fwd;
    detail->compute_bwd_s = mm * w->bwd;
    detail->compute_recompute_s = mm * w->rc;
    detail->gemm_s = mm * w->gemm;
    detail->attn_s = mm * w->attn;
    detail->membound_s = mm * w->mem;
    detail->stage_mb_s = w->mb;
    detail->bubble_over_ideal = bubble_x;
    detail->tp_crosses = x->tp;
    detail->cp_crosses = x->cp;
    detail->ep_crosses = x->ep;
    detail->pp_crosses = x->pp;
    detail->dp_crosses = x->dp;
    detail->tp_bytes_per_step = mm * w->tpb;
    detail->ep_bytes_per_step = mm * w->epb;
    detail->cp_bytes_per_step = mm * w->cpb;
    detail->pp_bytes_per_step = pp_bytes;
    detail->dp_bytes_per_step = dp_bytes;
    detail->tp_bytes_per_layer = ctx->dense_layer_params > 0 ? ld->tp_bytes : lm->tp_bytes;
}

static px_status eval_impl(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                           double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                           px_cost_detail *detail, px_error *err)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    memset(pred, 0, sizeof *pred);
    if (detail)
        memset(detail, 0, sizeof *detail);
    if (par->tp < 1 || par->pp < 1 || par->dp < 1 || par->cp < 1 || par->vpp < 1 ||
        par->micro_batch < 1 || par->n_micro < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel sizes and batch must be >= 1");

    /* memory */
    stage_mem wm;
    stage_layers *sl = ctx->stage_ws;
    stage_counts(ctx, par, sl);
    int ws = worst_memory(ctx, par, sl, &wm);
    fill_memory(&wm, ws, &pred->mem);
    if (mem_limit >= 0 && pred->mem.total > mem_limit)
        return PX_ERR_INFEASIBLE; /* memory only: the search prunes here */

    crossings x;
    layer_time ld, lm;
    time_layer_kinds(ctx, par, &x, &ld, &lm);
    double first_s, last_s;
    extras_time(ctx, par, &first_s, &last_s);

    /* slowest stage, one micro-batch */
    int p = par->pp;
    slowest_stage w;
    slowest_stage_of(ctx, par, sl, &ld, &lm, first_s, last_s, &w);
    double w_dense_p = wm.dense_params, w_exp_p = wm.expert_params;
    double z3_fwd, z3 = px_blocking_zero3_stream_bytes(par, w_dense_p + w_exp_p, elem_of(ctx),
                                                       &z3_fwd); /* its buffers and copies */
    if (z3 > 0.0 && blocking_engine(ctx, par)) {
        double f = px_time_stream_s(hw, z3_fwd), b = px_time_stream_s(hw, z3 - z3_fwd);
        w.fwd += f;
        w.bwd += b;
        w.mem += f + b;
        w.mb += f + b;
    }
    double mm = (double)par->n_micro;
    px_blocking_sync sync; /* waits at blocking collectives (px_blocking.h) */
    px_blocking_sync_s(m, hw, par, w.mb, &sync);
    w.tp += sync.tp;
    w.cp += sync.cp;
    w.mb += sync.tp + sync.cp;
    w.mb += px_overhead_microbatch_s(ctx->run);
    double ideal = mm * w.mb;
    double bubble_x = px_cost_bubble_over_ideal(par->schedule, p, par->vpp, par->n_micro);
    double bubble = bubble_x * ideal;

    double pp_total, pp_bytes;
    pp_step_comm(ctx, par, &x, &pp_total, &pp_bytes);
    px_pipe_engine_comm(ctx, par, x.pp, x.tp, &pp_total, &pp_bytes); /* DeepSpeed's engine */
    if (p > 1 && blocking_engine(ctx, par)) /* the executor's timeline */
        bubble = pipe_timeline_bubble(ctx, par, sl, &ld, &lm, first_s, last_s,
                                      sync.tp + sync.cp, ideal, pp_total, bubble);

    /* overlap windows: the backward (forward) compute of one micro-batch */
    double bwd_win = w.bwd + w.rc, fwd_win = w.fwd;
    double dp_total, dp_exposed, dp_bytes;
    dp_step_comm(ctx, par, &x, w_dense_p, w_exp_p, fwd_win, bwd_win, &sync, &dp_total,
                 &dp_exposed, &dp_bytes);
    double opt_s = optimizer_time(ctx, par, w_dense_p, w_exp_p);

    double step = ideal + bubble + pp_total + dp_exposed + opt_s + px_overhead_step_s(ctx->run);

    px_time *tm = &pred->time;
    tm->step_s = step;
    tm->compute_s = mm * (w.fwd + w.bwd + w.rc);
    tm->recompute_s = mm * w.rc;
    tm->tp_comm_s = mm * w.tp;
    tm->cp_comm_s = mm * w.cp;
    tm->cp_comm_total_s = mm * w.cpt;
    tm->ep_comm_s = mm * w.ep;
    tm->pp_comm_s = pp_total;
    tm->dp_comm_s = dp_exposed;
    tm->dp_comm_total_s = dp_total;
    tm->bubble_s = bubble;
    tm->optimizer_s = opt_s;

    fill_rates(ctx, par, step, bubble, pred);
    fill_goodput(ctx, par, train_tokens, gpu_mtbf_hours, pred);
    if (detail) {
        fill_memory_detail(ctx, par, &wm, detail);
        fill_time_detail(ctx, par, &w, &x, &ld, &lm, bubble_x, pp_total, pp_bytes, dp_total,
                         dp_exposed, dp_bytes, detail);
    }
    return PX_OK;
}

px_status px_cost_evaluate(const px_model *m, const px_hw *hw, const px_parallel *par,
                           px_prediction *pred, px_error *err)
{
    px_cost_ctx ctx;
    px_status st = px_cost_ctx_init(&ctx, m, hw, err);
    if (st != PX_OK)
        return st;
    st = px_cost_check(m, par, err);
    if (st != PX_OK)
        return st;
    return px_cost_eval(&ctx, par, 0.0, 0.0, pred, NULL, err);
}
