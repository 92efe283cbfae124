/* px_cost.c — the cost model; every formula is documented, with its source,
 * in docs/cost-model.md under the heading named in the comment above it. */
#include "px_cost.h"
#include "px_blocking.h"
#include "px_cost_fsdp.h"

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

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

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

/* Written as (coefficient x e) x elems so that the products the model-level
 * code used to spell out (4e x Th for two norms...) round identically: the
 * coefficients and e are small integers, their products exact. */
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

/* Bytes of `params` elements under ZeRO stage `zero` sharded over `shard`
 * ranks; fills weights/grads/optimizer. */
static void static_bytes(double params, double shard, int zero, px_bytes_per_param bpp,
                         double *w, double *g, double *o)
{
    if (shard < 1.0)
        shard = 1.0;
    *w = params * bpp.weights / (zero >= 3 ? shard : 1.0);
    *g = params * bpp.grads / (zero >= 2 ? shard : 1.0);
    *o = params * bpp.optimizer / (zero >= 1 ? shard : 1.0);
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
         * planner/px_schedule.c for p = 1..8 and all m. */
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

/* ---------------- node crossing ---------------- */

/* A dense dimension of size n and rank stride st: groups are the blocks of
 * st·n consecutive ranks, so every group stays inside a node exactly when
 * st·n divides the node size (or n == 1). */
static bool dim_crosses(int st, int n, int g)
{
    if (n <= 1)
        return false;
    if (g < 1)
        g = 1;
    return g % (st * n) != 0;
}

/* Expert groups (default order): a stage's GPUs are indexed
 * idx = tp_i + T·(cp_i + C·dp_i) and folded as idx = etp_i + etp·(ep_i + ep·edp_i);
 * the rank of idx on stage st is (idx mod TC) + TC·P·(idx div TC) + TC·st,
 * increasing in idx, so a group (first index f, step d, n members) stays in
 * one node exactly when its first and last members do. */
static int64_t stage_rank(int64_t idx, int64_t tc, int64_t pp, int64_t stage)
{
    return idx % tc + tc * pp * (idx / tc) + tc * stage;
}

static bool expert_dim_crosses(const px_parallel *par, int which, int g)
{
    int64_t tc = (int64_t)par->tp * par->cp, pp = par->pp;
    int64_t ep = par->ep, etp = par->etp, edp = tc * par->dp / (ep * etp);
    int64_t n = which == 0 ? ep : which == 1 ? etp : edp;
    if (n <= 1)
        return false;
    int64_t step = which == 0 ? etp : which == 1 ? 1 : etp * ep;
    /* the two other coordinates enumerate the groups */
    int64_t na = which == 0 ? etp : which == 1 ? ep : etp;
    int64_t nb = which == 0 ? edp : which == 1 ? edp : ep;
    int64_t stages = (tc % g == 0) ? 1 : pp; /* aligned stages repeat the pattern */
    /* Moving a group's indices by tc·g (or its stage by g) moves both ends'
     * ranks by a multiple of g: the answer repeats, so g stages and the
     * values of b whose steps (bstep each) reach distinct first indices
     * modulo tc·g cover every case. */
    int64_t period = tc * g, bstep = which == 2 ? etp : etp * ep;
    int64_t x = period, y = bstep; /* gcd */
    while (y) {
        int64_t r = x % y;
        x = y;
        y = r;
    }
    if (stages > g)
        stages = g;
    if (nb > period / x)
        nb = period / x;
    for (int64_t st = 0; st < stages; st++)
        for (int64_t b = 0; b < nb; b++)
            for (int64_t a = 0; a < na; a++) {
                int64_t first;
                if (which == 0)
                    first = a + etp * ep * b;         /* etp_i = a, edp_i = b */
                else if (which == 1)
                    first = etp * (a + ep * b);       /* ep_i = a, edp_i = b */
                else
                    first = a + etp * b;              /* etp_i = a, ep_i = b */
                int64_t last = first + (n - 1) * step;
                if (stage_rank(first, tc, pp, st) / g != stage_rank(last, tc, pp, st) / g)
                    return true;
            }
    return false;
}

typedef struct {
    bool tp, cp, pp, dp, ep, etp, edp;
} crossings;

static bool default_order(const char *order)
{
    return order[0] == '\0' || strcmp(order, "tp-cp-ep-pp-dp") == 0 ||
           strcmp(order, "tp-cp-pp-dp") == 0;
}

static void find_crossings(px_cost_ctx *ctx, const px_parallel *par, crossings *x)
{
    const px_hw *hw = ctx->hw;
    memset(x, 0, sizeof *x);
    if (hw->torus)
        return; /* no node cliff: every group uses the fast links */
    int g = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    bool moe = ctx->n_moe_layers > 0;
    px_layout lay;
    bool have_lay = false;
    if (default_order(par->order)) {
        int st = 1;
        x->tp = dim_crosses(st, par->tp, g);
        st *= par->tp;
        x->cp = dim_crosses(st, par->cp, g);
        st *= par->cp;
        x->pp = dim_crosses(st, par->pp, g);
        st *= par->pp;
        x->dp = dim_crosses(st, par->dp, g);
    } else {
        if (px_layout_init(&lay, par, NULL) != PX_OK)
            return;
        have_lay = true;
        x->tp = px_layout_crosses_node(&lay, PX_DIM_TP, g);
        x->cp = px_layout_crosses_node(&lay, PX_DIM_CP, g);
        x->pp = px_layout_crosses_node(&lay, PX_DIM_PP, g);
        x->dp = px_layout_crosses_node(&lay, PX_DIM_DP, g);
    }
    if (!moe)
        return;
    /* expert groups: exact answer from px_layout, cached per grid */
    int key[6] = {par->tp, par->cp, par->pp, par->dp, par->ep, par->etp};
    unsigned hsh = 0;
    for (int i = 0; i < 6; i++)
        hsh = hsh * 31u + (unsigned)key[i];
    hsh %= 64u;
    if (default_order(par->order) && ctx->xcache[hsh].valid &&
        memcmp(ctx->xcache[hsh].key, key, sizeof key) == 0) {
        x->ep = ctx->xcache[hsh].ep_cross;
        x->etp = ctx->xcache[hsh].etp_cross;
        x->edp = ctx->xcache[hsh].edp_cross;
        return;
    }
    if (have_lay) {
        x->ep = px_layout_crosses_node(&lay, PX_DIM_EP, g);
        x->etp = px_layout_crosses_node(&lay, PX_DIM_ETP, g);
        x->edp = px_layout_crosses_node(&lay, PX_DIM_EDP, g);
    } else {
        x->ep = expert_dim_crosses(par, 0, g);
        x->etp = expert_dim_crosses(par, 1, g);
        x->edp = expert_dim_crosses(par, 2, g);
    }
    if (default_order(par->order)) {
        memcpy(ctx->xcache[hsh].key, key, sizeof key);
        ctx->xcache[hsh].valid = true;
        ctx->xcache[hsh].ep_cross = x->ep;
        ctx->xcache[hsh].etp_cross = x->etp;
        ctx->xcache[hsh].edp_cross = x->edp;
    }
}

/* ---------------- per-layer costs ---------------- */

static int64_t seq_of(const px_cost_ctx *ctx, const px_parallel *par)
{
    return px_plan_seq_len(ctx->model, par);
}

static int elem_of(const px_cost_ctx *ctx)
{
    return ctx->hw->dtype_bytes > 0 ? ctx->hw->dtype_bytes : 2;
}

static void make_shape(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                       px_recompute rc, px_act_shape *sh)
{
    const px_model *m = ctx->model;
    memset(sh, 0, sizeof *sh);
    double s = (double)seq_of(ctx, par);
    sh->s = s / par->cp;
    sh->s_kv = s;
    sh->b = (double)par->micro_batch;
    sh->h = (double)m->hidden;
    sh->a = (double)m->n_heads;
    sh->dq = (double)px_model_qk_head_dim(m);
    sh->dv = (double)px_model_v_head_dim(m);
    if (m->attn == PX_ATTN_MLA) {
        /* after the up-projections every head has its own k and v */
        sh->kv = sh->a;
        sh->q_lora = (double)m->q_lora_rank;
        sh->kv_lora = (double)m->kv_lora_rank;
        sh->rope_dim = (double)m->qk_rope_head_dim;
    } else {
        sh->kv = (double)m->n_kv_heads;
    }
    sh->f = (double)m->ffn;
    sh->gated = m->block == PX_BLOCK_LLAMA;
    sh->elem_bytes = elem_of(ctx);
    /* GPT blocks train with dropout in Megatron (Korthikanti's masks); an
     * fp32 profile describes the CPU backend, which has none
     * (docs/executor.md), so neither its masks nor its passes are charged;
     * nor where the framework's models train at dropout 0 (dropout_off) */
    sh->dropout = m->block == PX_BLOCK_GPT && sh->elem_bytes != 4 &&
                  !(ctx->run && ctx->run->dropout_off);
    sh->tp = par->tp;
    sh->sp = par->sp && par->tp > 1;
    sh->flash = par->flash_attention;
    sh->recompute = rc;
    sh->moe = moe;
    if (moe) {
        sh->n_experts = (double)m->n_experts;
        sh->top_k = (double)m->top_k;
        sh->moe_f = (double)m->moe_ffn;
        sh->n_shared = (double)m->n_shared_experts;
        sh->ep = par->ep;
        sh->etp = par->etp;
    }
}

/* Times of one layer for one micro-batch on one GPU. */
typedef struct {
    double gemm_fwd_s, attn_fwd_s, mem_fwd_s;   /* compute, forward */
    double attn_bwd_s, mem_bwd_s;                /* attention core, pointwise: backward */
    double fwd_s, bwd_s;                         /* compute */
    double rc_s[PX_RECOMPUTE_COUNT];             /* extra compute by recompute mode */
    double tp_s, tp_bytes, tp_rc_s;              /* TP comm (exposed), rc: full recompute's extra */
    double tp_fwd_s, tp_bwd_s;                   /* tp_s split: forward, backward */
    double ep_s, ep_bytes;
    double cp_total_s, cp_exposed_s, cp_bytes;
} layer_time;

/* Seconds of `batch` GEMMs of shape (m, n, k) that also move `bytes`
 * through HBM: the slower of the two (roofline).  The s x s score GEMMs of
 * unfused attention have k = the head width (64..128), below every GPU's
 * ridge point: their cost is the score matrix they write or read. */
static double roofline_s(const px_hw *hw, double batch, double m, double n, double k,
                         double bytes)
{
    return dmax(batch * px_time_gemm_s(hw, m, n, k), px_time_mem_s(hw, bytes));
}

/* The attention core without FlashAttention (Megatron before 2023): the
 * s x s_kv scores of every local head are materialised, and the full
 * product is computed (the causal mask is applied to the scores).  Bytes
 * per score element, e-byte activations: forward = Q·K^T writes e, the fused
 * scale-mask-softmax reads and writes e, dropout reads e and writes e plus a
 * 1-byte mask, P·V reads e; backward = dP = dO·V^T writes e, dropout
 * backward reads e and the mask and writes e, softmax backward reads y and
 * dy and writes e, dV = P^T·dO, dQ = dS·K and dK = dS^T·Q read e each. */
static void attn_core_unfused(const px_hw *hw, const px_act_shape *sh, double T, double a_t,
                              double *fwd_s, double *bwd_s)
{
    double e = sh->elem_bytes, s = sh->s, skv = sh->s_kv;
    double heads = T / s * a_t;          /* b · a/t score matrices */
    double E = heads * s * skv;          /* score elements */
    double drop = sh->dropout ? 2.0 * e + 1.0 : 0.0;
    *fwd_s = roofline_s(hw, heads, s, skv, sh->dq, e * E)     /* Q·K^T */
             + px_time_mem_s(hw, 2.0 * e * E)                 /* softmax */
             + px_time_mem_s(hw, drop * E)                    /* dropout */
             + roofline_s(hw, heads, s, sh->dv, skv, e * E);  /* P·V */
    *bwd_s = roofline_s(hw, heads, s, skv, sh->dv, e * E)     /* dP */
             + px_time_mem_s(hw, drop * E)                    /* dropout */
             + px_time_mem_s(hw, 3.0 * e * E)                 /* softmax */
             + roofline_s(hw, heads, skv, sh->dv, s, e * E)   /* dV */
             + roofline_s(hw, heads, s, sh->dq, skv, e * E)   /* dQ */
             + roofline_s(hw, heads, skv, sh->dq, s, e * E);  /* dK */
}

/* Fraction of the compute a collective in flight takes: a property of the
 * hardware profile (comm_overlap_cost, docs/hw-schema.md). */
static double comm_sm_fraction(const px_hw *hw)
{
    return hw->comm_overlap_cost;
}

/* True when the profile has a measured bandwidth for operator class c
 * (calibrated CPU profiles): such a rate is defined on the byte counts
 * calibrate charges (forward bytes, backward 2x), so those counts are kept
 * for it; datasheet profiles get the per-operator counts below. */
static bool mem_class_measured(const px_hw *hw, px_mem_class c)
{
    return px_hw_class_bw_of(hw, c) > 0.0;
}

/* Forward and backward seconds of element-wise class c moving fwd_bytes
 * forward and bwd_bytes backward (a measured class: 2x its forward). */
static void mem_class_fb(const px_hw *hw, px_mem_class c, double fwd_bytes, double bwd_bytes,
                         double *fwd_s, double *bwd_s)
{
    double f = px_time_mem_class_s(hw, c, fwd_bytes);
    *fwd_s += f;
    *bwd_s += mem_class_measured(hw, c) ? 2.0 * f : px_time_mem_class_s(hw, c, bwd_bytes);
}

static void time_layer(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                       const crossings *x, layer_time *lt)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    /* the linear GEMMs run in the plan's precision (the router, the
     * attention core and the LM head stay in bf16) */
    const px_precision pq = par->precision;
    memset(lt, 0, sizeof *lt);
    px_act_shape sh;
    make_shape(ctx, par, moe, PX_RECOMPUTE_NONE, &sh);
    double e = sh.elem_bytes, t = par->tp;
    double tsp = sh.sp ? t : 1.0;
    double T = sh.b * sh.s; /* tokens this GPU sees in attention */
    double h = sh.h, a_t = sh.a / t, kv_t = sh.kv >= t ? sh.kv / t : 1.0;
    double g = 0.0;

    /* attention projections */
    if (m->attn == PX_ATTN_MLA) {
        double rope = (double)m->qk_rope_head_dim, nope = sh.dq - rope;
        if (m->q_lora_rank > 0) {
            g += px_prec_time_gemm_s(hw, pq, T, (double)m->q_lora_rank, h);
            g += px_prec_time_gemm_s(hw, pq, T, a_t * sh.dq, (double)m->q_lora_rank);
        } else {
            g += px_prec_time_gemm_s(hw, pq, T, a_t * sh.dq, h);
        }
        g += px_prec_time_gemm_s(hw, pq, T, (double)m->kv_lora_rank + rope, h);
        g += px_prec_time_gemm_s(hw, pq, T, a_t * (nope + sh.dv), (double)m->kv_lora_rank);
    } else {
        g += px_prec_time_gemm_s(hw, pq, T, a_t * sh.dq + kv_t * (sh.dq + sh.dv), h);
    }
    double g_col_attn = g; /* column-parallel projections: the TP overlap window */
    g += px_prec_time_gemm_s(hw, pq, T, h, a_t * sh.dv);
    /* attention core: the FLOP convention counts the full s×s product; a
     * causal kernel does half of it */
    double attn_flops = 2.0 * T * sh.s_kv * a_t * (sh.dq + sh.dv);
    if (par->flash_attention) {
        /* sliding-window layers: the model's mean share of a causal core */
        lt->attn_fwd_s = px_time_attn_s(hw, 0.5 * attn_flops *
                                                px_sliding_causal_fraction(m, seq_of(ctx, par)));
        /* the kernel generation, head width and block length (px_attn_eff.h) */
        lt->attn_fwd_s /= px_attn_rate_rel(hw, ctx->run ? ctx->run->flash_attention_version : 0,
                                           sh.dq, sh.s);
        /* FlashAttention 1 runs at half FlashAttention-2's rate (Dao 2023:
         * FA2 is about 2x FA1); a calibrated attn_eff is the kernel's own */
        if (ctx->run && ctx->run->flash_attention_version == 1 && hw->attn_eff <= 0.0)
            lt->attn_fwd_s *= 2.0;
        lt->attn_bwd_s = 2.5 * lt->attn_fwd_s; /* the backward recomputes the scores */
    } else {
        attn_core_unfused(hw, &sh, T, a_t, &lt->attn_fwd_s, &lt->attn_bwd_s);
    }

    /* MLP */
    double up = sh.gated ? 2.0 : 1.0;
    double act_elems = 0.0; /* elements through the activation function */
    double mem = 0.0;
    double g_col_mlp = 0.0;
    if (moe) {
        double E = sh.n_experts, r = sh.top_k, fe = sh.moe_f, etp = par->etp, ep = par->ep;
        g += px_time_gemm_s(hw, T / tsp, E, h); /* router */
        double tok = T * r * etp / t;           /* routed copies on this GPU */
        double per_expert = tok * ep / E;       /* tokens per local expert */
        double n_local = E / ep;
        /* the busiest EP rank sets the pace of the expert GEMMs
         * (px_cost_moe.c: balanced, dropless routing) */
        double imb = px_moe_imbalance(par->ep, T * r / t);
        g += imb * n_local * (px_prec_time_gemm_s(hw, pq, per_expert, up * fe / etp, h) +
                              px_prec_time_gemm_s(hw, pq, per_expert, h, fe / etp));
        act_elems += tok * fe / etp;
        /* permute and un-permute the routed tokens: Megatron's dispatcher
         * passes (px_cost_moe.c); the fp32 CPU executor's two */
        mem += e >= 4.0 ? 4.0 * e * tok * h : px_moe_permute_bytes(e, tok, h);
        if (px_prec_is_low(pq) && ctx->run && ctx->run->grouped_gemm)
            mem += px_moe_fp8_pad_bytes(e, tok, h); /* FP8 row alignment */
        if (m->n_shared_experts > 0) {
            double fs = sh.n_shared * fe;
            g += px_prec_time_gemm_s(hw, pq, T, up * fs / t, h) + px_prec_time_gemm_s(hw, pq, T, h, fs / t);
            act_elems += T * fs / t;
        }
    } else {
        g_col_mlp = px_prec_time_gemm_s(hw, pq, T, up * sh.f / t, h);
        g += g_col_mlp + px_prec_time_gemm_s(hw, pq, T, h, sh.f / t);
        act_elems += T * sh.f / t;
    }
    lt->gemm_fwd_s = g;

    /* memory-bound operators: 2 norms, 2 residual adds, the activation
     * function, dropout (GPT), RoPE on q and k (Llama), MoE token permutation
     * (above).  Bytes forward / backward: norm read + write / read x and dy,
     * write dx; residual 2 reads + 1 write / the same (the backward sums the
     * skip and branch gradients); GeLU read + write / read x and dy, write
     * dx; SwiGLU 2 reads + 1 write / 3 reads + 2 writes; dropout read, write,
     * 1-byte mask / the same; RoPE read + write / the same.  An element-wise
     * backward moves about what its forward moved, not twice. */
    double Th = T * h / tsp, drop = sh.dropout ? 2.0 * (2.0 * e + 1.0) * Th : 0.0;
    /* GPT blocks fuse the output dropout into the residual add (Megatron's
     * bias-dropout-add kernel: read x and the residual, write the sum and the
     * mask); a datasheet profile charges that fused forward */
    double res_f = px_cost_class_fwd_bytes(PX_MEM_RESIDUAL, 2.0 * Th, (int)e), drop_f = drop;
    if (sh.dropout && !mem_class_measured(hw, PX_MEM_RESIDUAL)) {
        res_f = 2.0 * (3.0 * e + 1.0) * Th;
        drop_f = 0.0;
    }
    double mf = 0.0, mb = 0.0;
    mem_class_fb(hw, PX_MEM_GENERIC, mem + drop_f, mem + drop, &mf, &mb);
    /* forward bytes of a measured class from px_cost_class_fwd_bytes (what
     * calibrate divides); the backward bytes here are the datasheet's */
    mem_class_fb(hw, PX_MEM_NORM, px_cost_class_fwd_bytes(PX_MEM_NORM, 2.0 * Th, (int)e),
                 6.0 * e * Th, &mf, &mb);
    mem_class_fb(hw, PX_MEM_RESIDUAL, res_f, 6.0 * e * Th, &mf, &mb);
    px_mem_class act = sh.gated ? PX_MEM_SWIGLU : PX_MEM_GELU;
    mem_class_fb(hw, act, px_cost_class_fwd_bytes(act, act_elems, (int)e),
                 (sh.gated ? 5.0 : 3.0) * e * act_elems, &mf, &mb);
    if (sh.gated) {
        double rope = px_cost_class_fwd_bytes(PX_MEM_ROPE, T * (a_t + kv_t) * sh.dq, (int)e);
        mem_class_fb(hw, PX_MEM_ROPE, rope, rope, &mf, &mb);
    }
    double qf, qb; /* quantisation kernels of low-precision GEMMs */
    px_prec_layer_cast_s(hw, &sh, par->precision, par->n_micro, &qf, &qb);
    lt->mem_fwd_s = mf + qf;
    lt->mem_bwd_s = mb + qb;

    lt->fwd_s = lt->gemm_fwd_s + lt->attn_fwd_s + lt->mem_fwd_s;
    /* backward: 2x the GEMMs (dgrad + wgrad), the attention core's backward */
    lt->bwd_s = 2.0 * lt->gemm_fwd_s + lt->attn_bwd_s + lt->mem_bwd_s;
    lt->rc_s[PX_RECOMPUTE_NONE] = 0.0;
    lt->rc_s[PX_RECOMPUTE_SELECTIVE] = lt->attn_fwd_s;
    lt->rc_s[PX_RECOMPUTE_FULL] = lt->fwd_s;

    /* TP, per block (attention and MLP; an MoE layer keeps the attention's,
     * its MLP communicates through EP), as Megatron runs it.  Forward: an
     * all-reduce after the row-parallel GEMM (SP: all-gather before the
     * column-parallel GEMM, reduce-scatter after the row-parallel one), on
     * the critical path.  Backward: the column-parallel GEMM's input-gradient
     * all-reduce (SP: reduce-scatter) runs asynchronously under its
     * weight-gradient GEMM; with SP that GEMM's input, kept as a 1/t shard,
     * is all-gathered again under its input-gradient GEMM, and the
     * row-parallel GEMM's output gradient is all-gathered before it can
     * start (exposed).  A backward GEMM takes about its forward's time. */
    double msg = e * T * h;
    double n_tp_coll = moe ? 2.0 : 4.0;
    double one = px_time_coll_s(hw, PX_COLL_ALLREDUCE, par->tp, msg, x->tp);
    double one_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, par->tp, msg, x->tp);
    double one_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, par->tp, msg, x->tp);
    double col_win[2] = {g_col_attn, g_col_mlp};
    for (int blk = 0; blk < (moe ? 1 : 2); blk++) {
        double f = comm_sm_fraction(hw), w = par->tp_overlap ? col_win[blk] : 0.0;
        if (sh.sp) {
            lt->tp_fwd_s += one_ag + one_rs;
            lt->tp_bwd_s += one_ag + dmax(0.0, one_rs - w) + dmax(0.0, one_ag - w) +
                            f * (dmin(one_rs, w) + dmin(one_ag, w));
        } else {
            lt->tp_fwd_s += one;
            lt->tp_bwd_s += dmax(0.0, one - w) + f * dmin(one, w);
        }
    }
    lt->tp_s = lt->tp_fwd_s + lt->tp_bwd_s;
    lt->tp_bytes = n_tp_coll * px_coll_wire_bytes(PX_COLL_ALLREDUCE, par->tp, msg);
    lt->tp_rc_s = lt->tp_fwd_s; /* full recompute reruns the forward's */
    if (moe) {
        /* expert TP: the routed tokens are gathered / reduced inside etp */
        double tok = T * sh.top_k * par->etp / t;
        double emsg = e * tok * h;
        double et = px_time_coll_s(hw, PX_COLL_ALLREDUCE, par->etp, emsg, x->etp);
        lt->tp_s += 2.0 * et;
        lt->tp_fwd_s += et;
        lt->tp_bwd_s += et;
        lt->tp_bytes += 2.0 * px_coll_wire_bytes(PX_COLL_ALLREDUCE, par->etp, emsg);
        lt->tp_rc_s += et;
        /* EP: dispatch + combine all-to-all, forward and backward, of this
         * GPU's (sequence-parallel) share of the routed tokens */
        double amsg = e * (T / t) * h * sh.top_k;
        double a2a = px_time_coll_s(hw, PX_COLL_ALLTOALL, par->ep, amsg, x->ep) *
                     px_moe_imbalance(par->ep, T * sh.top_k / t);
        lt->ep_s = 4.0 * a2a;
        lt->ep_bytes = 4.0 * px_coll_wire_bytes(PX_COLL_ALLTOALL, par->ep, amsg);
    }
    /* CP: ring p2p overlapped with the attention core, all-gather, or the
     * Ulysses all-to-all (px_cost_cp.c) */
    if (par->cp > 1) {
        double kvmsg = e * T * kv_t * (sh.dq + sh.dv);
        if (m->attn == PX_ATTN_MLA)
            kvmsg = e * T * ((double)m->kv_lora_rank + (double)m->qk_rope_head_dim);
        px_cp_time cpt;
        px_cost_cp_time(hw, par->cp_comm, par->cp, kvmsg, e * T * a_t * sh.dq,
                        e * T * a_t * sh.dv, lt->attn_fwd_s, x->cp, &cpt);
        lt->cp_total_s = cpt.total_s;
        lt->cp_exposed_s = cpt.exposed_s;
        lt->cp_bytes = cpt.bytes;
    }
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

/* Layers of each kind (0 dense, 1 MoE) and recompute choice on one stage. */
typedef struct {
    int64_t n[2][PX_RECOMPUTE_COUNT];
    int64_t kind[2];
} stage_layers;

/* True when every stage between the first and the last holds the same
 * layers with the same choices, so that the stage loops may skip them. */
static bool middle_stages_identical(const px_cost_ctx *ctx, const px_parallel *par)
{
    return par->n_chunks == 0 && par->n_layer_recompute == 0 &&
           ctx->model->n_layers % ((int64_t)par->pp * par->vpp) == 0 &&
           (ctx->n_moe_layers == 0 || ctx->n_moe_layers == ctx->model->n_layers);
}

/* Middle stages (1..p−2) that hold exactly the layers of an earlier middle
 * stage cannot be the worst: their time is the same and their memory no
 * larger (the in-flight count never grows with the stage index, and only
 * the first and last stages carry extras).  An uneven split has two kinds
 * of middle stage (floor(L/p) and one more layer), so the stage loops score
 * two stages instead of p − 2.  Returns true when stage st repeats one of
 * seen[0..*n); otherwise records it (up to PX_SEEN_MAX). */
enum { PX_SEEN_MAX = 8 };
static bool repeats_middle(const stage_layers *sl, int st, int p, int *seen, int *n)
{
    if (st == 0 || st == p - 1)
        return false;
    for (int i = 0; i < *n; i++)
        if (!memcmp(sl[seen[i]].n, sl[st].n, sizeof sl[st].n))
            return true;
    if (*n < PX_SEEN_MAX)
        seen[(*n)++] = st;
    return false;
}

/* Layers of each kind and recompute choice on every stage, in one pass over
 * the chunks; per layer only when par records per-layer choices (the search
 * scores uniform choices and must stay fast). */
static void stage_counts(const px_cost_ctx *ctx, const px_parallel *par, stage_layers *sl)
{
    int64_t L = ctx->model->n_layers;
    int p = par->pp, chunks = par->pp * par->vpp;
    memset(sl, 0, (size_t)p * sizeof *sl);
    int64_t base = L / chunks, rem = L % chunks, first = (chunks - rem) / 2;
    int rc = par->recompute;
    bool per_layer = par->n_layer_recompute > 0;
    int64_t start = 0;
    for (int c = 0; c < chunks && start < L; c++) {
        int64_t len = par->n_chunks > 0 ? par->layers_per_chunk[c]
                                        : base + (c >= first && c < first + rem ? 1 : 0);
        int64_t end = start + len > L ? L : start + len;
        stage_layers *s = &sl[c % p];
        if (per_layer) {
            for (int64_t l = start; l < end; l++) {
                int k = (int)(ctx->moe_prefix[l + 1] - ctx->moe_prefix[l]);
                int r = l < par->n_layer_recompute ? par->layer_recompute[l] : rc;
                s->n[k][r < PX_RECOMPUTE_COUNT ? r : rc]++;
            }
        } else {
            int64_t moe = ctx->moe_prefix[end] - ctx->moe_prefix[start];
            s->n[1][rc] += moe;
            s->n[0][rc] += (end - start) - moe;
        }
        start += len;
    }
    for (int st = 0; st < p; st++)
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
                sl[st].kind[k] += sl[st].n[k][r];
}

typedef struct {
    double dense_params, expert_params; /* elements on one GPU */
    double w, g, o;                     /* static bytes */
    double act, act_att, act_mlp, act_norm, inflight, inflight_bw;
    double buf_emb, buf_logits, buf_loss, buf_final, buf_rc, buf_p2p, buf_zero3, buf_zb;
    double total;
} stage_mem;

/* Zero-bubble B -> W: the output gradients one layer keeps for its deferred
 * weight gradients, per micro-batch (docs/cost-model.md, "Zero-bubble
 * gradients"): dY of the QKV projection [tok, (a dq + kv (dq + dv))/t] and
 * of the output projection [tok/tsp, h] (the row-parallel input gradient is
 * the sequence shard under SP); dense layers also dY of the MLP's first
 * linear [tok, f (2f gated)/t] and of its second [tok/tsp, h].  A MoE
 * layer's expert weight gradients are taken in B (their routed rows are
 * gone by W), so only its attention defers.  In the activation dtype. */
static double zb_grad_bytes(const px_cost_ctx *ctx, const px_parallel *par, bool moe)
{
    px_act_shape sh;
    make_shape(ctx, par, moe, PX_RECOMPUTE_NONE, &sh);
    double t = par->tp, tsp = sh.sp ? t : 1.0, tok = sh.s * sh.b, e = sh.elem_bytes;
    double qkv = (sh.a * sh.dq + sh.kv * (sh.dq + sh.dv)) / t;
    double bytes = e * tok * (qkv + sh.h / tsp);
    if (!moe)
        bytes += e * tok * ((sh.gated ? 2.0 : 1.0) * sh.f / t + sh.h / tsp);
    return bytes;
}

/* The low-precision weights of the stage's linear layers in place of their
 * bf16 copies (px_prec_weight_bytes_per_param): the difference in bytes,
 * negative where the quantised weights are smaller.  ZeRO-3 shards them
 * with the rest (counted in its gathered-layer buffer only). */
static double prec_weight_copies(const px_cost_ctx *ctx, const px_parallel *par, int64_t nd,
                                 int64_t nm)
{
    double per = px_prec_weight_bytes_per_param(ctx->hw, par->precision, elem_of(ctx),
                                                par->quantized_params);
    if (per == 0.0 || par->zero >= 3)
        return 0.0;
    double dl = (double)ctx->dense_layer_params / par->tp;
    double ml = (double)(ctx->moe_layer_params - ctx->expert_params) / par->tp +
                (double)ctx->expert_params / (par->ep * par->etp);
    return per * ((double)nd * dl + (double)nm * ml);
}

/* ops[k][r]: one layer of kind k (0 dense, 1 MoE) under recompute choice r. */
static void memory_of_stage(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                            const stage_layers *sl,
                            px_act_ops ops[2][PX_RECOMPUTE_COUNT], stage_mem *sm)
{
    int64_t nd = sl->kind[0], nm = sl->kind[1];
    const px_model *m = ctx->model;
    memset(sm, 0, sizeof *sm);
    int p = par->pp;
    double t = par->tp;
    double e = elem_of(ctx);
    bool sp = par->sp && par->tp > 1;
    double tsp = sp ? t : 1.0;
    double s = (double)seq_of(ctx, par) / par->cp, b = (double)par->micro_batch;
    double h = (double)m->hidden, V = (double)m->vocab;

    double dense = (double)nd * (double)ctx->dense_layer_params +
                   (double)nm * (double)(ctx->moe_layer_params - ctx->expert_params);
    dense /= t;
    if (stage == 0)
        dense += (double)ctx->pc.embedding / t;
    if (stage == p - 1) {
        dense += (double)ctx->pc.final_norm;
        /* a tied head still needs its own copy when it lives on another stage */
        if (ctx->pc.lm_head > 0 || p > 1)
            dense += (double)ctx->head_params / t;
    }
    double expert = (double)nm * (double)ctx->expert_params / (par->ep * par->etp);
    sm->dense_params = dense;
    sm->expert_params = expert;

    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double dshard = (double)par->dp * par->cp;
    double eshard = (double)par->tp * par->cp * par->dp / (par->ep * par->etp);
    double w1, g1, o1, w2, g2, o2;
    static_bytes(dense, dshard, par->zero, bpp, &w1, &g1, &o1);
    static_bytes(expert, eshard, par->zero, bpp, &w2, &g2, &o2);
    if (par->zero >= 3 && ctx->run) {
        /* FSDP: the fp32 shard is the weight; hybrid sharding shards over
         * the group only (px_cost_fsdp.h) */
        double gsh = par->shard_group > 0 ? (double)par->shard_group : dshard;
        double esh = par->shard_group > 0 && eshard > gsh ? gsh : eshard;
        px_cost_fsdp_static(dense, gsh, bpp.grads, &w1, &g1, &o1);
        px_cost_fsdp_static(expert, esh, bpp.grads, &w2, &g2, &o2);
    }
    sm->w = w1 + w2 + prec_weight_copies(ctx, par, nd, nm);
    sm->g = g1 + g2;
    sm->o = o1 + o2;

    double inflight = px_cost_inflight(par->schedule, p, par->vpp, par->n_micro, stage);
    sm->inflight = inflight;
    /* each layer's activations by its own recompute choice */
    double att = 0.0, mlp = 0.0, nrm = 0.0;
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            double n = (double)sl->n[k][r];
            if (n == 0.0)
                continue;
            att += n * ops[k][r].attention;
            mlp += n * ops[k][r].mlp;
            nrm += n * ops[k][r].norm;
        }
    sm->act_att = inflight * att;
    sm->act_mlp = inflight * mlp;
    sm->act_norm = inflight * nrm;
    sm->act = sm->act_att + sm->act_mlp + sm->act_norm;
    /* Zero-bubble: the micro-batches past B keep their layers' output
     * gradients until W, and a full-recompute layer's rebuilt activations
     * (B reran its forward; W needs them again). */
    double bw = px_cost_inflight_bw(par->schedule, p, par->vpp, par->n_micro, stage);
    sm->inflight_bw = bw;
    if (bw > 0.0) {
        double per = 0.0;
        for (int k = 0; k < 2; k++) {
            double n = (double)sl->kind[k];
            if (n == 0.0)
                continue;
            per += n * zb_grad_bytes(ctx, par, k == 1);
            per += (double)sl->n[k][PX_RECOMPUTE_FULL] *
                   (ops[k][PX_RECOMPUTE_NONE].total - ops[k][PX_RECOMPUTE_FULL].total);
        }
        sm->buf_zb = bw * per;
    }

    double tok = s * b;
    if (stage == 0)
        sm->buf_emb = inflight * (e * tok * h / tsp + (m->block == PX_BLOCK_GPT ? tok * h / tsp : 0.0));
    if (stage == p - 1) {
        /* final norm input and the head's input, per micro-batch in flight;
         * the fp32 logits (and bf16 GEMM output) of the current micro-batch;
         * the fp32 softmax the loss keeps for backward, per micro-batch */
        sm->buf_final = inflight * 2.0 * e * tok * h / tsp;
        sm->buf_logits = (4.0 + (e < 4 ? e : 0.0)) * tok * V / t;
        /* zero-bubble: past B the softmax has become the logits gradient,
         * kept in the activation dtype until W computes the head's */
        sm->buf_loss = (inflight - sm->inflight_bw) * 4.0 * tok * V / t +
                       sm->inflight_bw * e * tok * V / t;
        if (ctx->run && ctx->run->fused_cross_entropy) {
            /* a fused cross-entropy keeps the GEMM's logits (compute dtype)
             * and a log-sum-exp per token, and turns the logits into their
             * gradient in place: no fp32 copies */
            sm->buf_logits = e * tok * V / t;
            sm->buf_loss = (inflight - 1.0) * e * tok * V / t + inflight * 4.0 * tok;
        }
    }
    /* a stage with a full-recompute layer holds that layer's full
     * activations while it reruns it (the largest such layer's) */
    double worst_rc = 0.0;
    for (int k = 0; k < 2; k++)
        if (sl->n[k][PX_RECOMPUTE_FULL] > 0 && ops[k][PX_RECOMPUTE_NONE].total > worst_rc)
            worst_rc = ops[k][PX_RECOMPUTE_NONE].total;
    sm->buf_rc = worst_rc;
    if (p > 1)
        sm->buf_p2p = 2.0 * px_cost_pp_msg_bytes(s, b, h, par->tp, sp, (int)e);
    if (par->zero >= 3 && dshard > 1.0) {
        /* two layers' weights gathered at a time (prefetch) */
        double lp = (double)(ctx->moe_layer_params > ctx->dense_layer_params
                                 ? ctx->moe_layer_params
                                 : ctx->dense_layer_params);
        sm->buf_zero3 = 2.0 * lp / t * bpp.weights;
        if (ctx->run)
            sm->buf_zero3 = px_cost_fsdp_buffers(ctx->run, lp / t, (double)(nd + nm), e,
                                                 bpp.grads);
    }
    sm->total = sm->w + sm->g + sm->o + sm->act + sm->buf_emb + sm->buf_final + sm->buf_logits +
                sm->buf_loss + sm->buf_rc + sm->buf_p2p + sm->buf_zero3 + sm->buf_zb;
}

/* Activations of one layer of each kind under each recompute choice (all
 * three: a layer may recompute by its own choice, and a recomputing layer
 * rebuilds the none set), remembered in ctx->ops_memo for the next
 * configuration of the same shape. */
static void layer_ops(px_cost_ctx *ctx, const px_parallel *par,
                      px_act_ops ops[2][PX_RECOMPUTE_COUNT])
{
    bool sp = par->sp && par->tp > 1;
    int64_t seq = seq_of(ctx, par);
    px_cost_ops_memo *mo = &ctx->ops_memo;
    if (mo->valid && mo->tp == par->tp && mo->cp == par->cp && mo->ep == par->ep &&
        mo->etp == par->etp && mo->sp == sp && mo->flash == par->flash_attention &&
        mo->micro_batch == par->micro_batch && mo->seq_len == seq &&
        mo->precision == par->precision) {
        memcpy(ops, mo->ops, sizeof mo->ops);
        return;
    }
    memset(ops, 0, 2 * sizeof ops[0]);
    for (int k = 0; k < (ctx->n_moe_layers > 0 ? 2 : 1); k++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            px_act_shape sh;
            make_shape(ctx, par, k == 1, (px_recompute)r, &sh);
            px_cost_act_layer(&sh, &ops[k][r]);
            px_prec_act_adjust(&sh, par->precision, &ops[k][r]);
        }
    memcpy(mo->ops, ops, sizeof mo->ops);
    mo->tp = par->tp;
    mo->cp = par->cp;
    mo->ep = par->ep;
    mo->etp = par->etp;
    mo->sp = sp;
    mo->flash = par->flash_attention;
    mo->micro_batch = par->micro_batch;
    mo->seq_len = seq;
    mo->precision = par->precision;
    mo->valid = true;
}

/* ZB-H2: a middle stage's memory is its layers' times its in-flight counts
 * (px_cost_inflight, _bw), which never fall with the stage index (checked
 * here), so of the middle stages holding the same layers the last is the
 * worst, and the first with its counts on a tie.  Marks those in score[]
 * (with the first and last stages); false when the counts do fall or the
 * layers come in too many kinds (then every stage is scored). */
static bool later_middle_dominates(const px_parallel *par, const stage_layers *sl, bool *score)
{
    int p = par->pp, seen[PX_SEEN_MAX], best[PX_SEEN_MAX], n_seen = 0;
    double fl_best[PX_SEEN_MAX], bw_best[PX_SEEN_MAX];
    for (int st = 0; st < p; st++)
        score[st] = st == 0 || st == p - 1;
    for (int st = 1; st < p - 1; st++) {
        double fl = px_cost_inflight(par->schedule, p, par->vpp, par->n_micro, st);
        double bw = px_cost_inflight_bw(par->schedule, p, par->vpp, par->n_micro, st);
        int k = 0;
        while (k < n_seen && memcmp(sl[seen[k]].n, sl[st].n, sizeof sl[st].n))
            k++;
        if (k == n_seen) {
            if (n_seen == PX_SEEN_MAX)
                return false;
            seen[n_seen++] = st;
        } else if (fl < fl_best[k] || bw < bw_best[k]) {
            return false; /* a count fell */
        } else if (fl == fl_best[k] && bw == bw_best[k]) {
            continue; /* the same memory as the earlier stage */
        }
        best[k] = st;
        fl_best[k] = fl;
        bw_best[k] = bw;
    }
    for (int k = 0; k < n_seen; k++)
        score[best[k]] = true;
    return true;
}

/* sl: stage_counts of par */
static int worst_memory(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                        stage_mem *worst)
{
    px_act_ops ops[2][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    int ws = 0;
    bool skip = middle_stages_identical(ctx, par);
    int seen[PX_SEEN_MAX], n_seen = 0;
    bool zb_score[PX_MAX_CHUNKS];
    bool zb_later = par->schedule == PX_SCHED_ZB_H2 && later_middle_dominates(par, sl, zb_score);
    for (int st = 0; st < par->pp; st++) {
        /* (under ZB-H2 a later stage keeps more B -> W gradients) */
        if (par->schedule == PX_SCHED_ZB_H2 ? zb_later && !zb_score[st]
                                            : repeats_middle(sl, st, par->pp, seen, &n_seen))
            continue;
        stage_mem sm;
        memory_of_stage(ctx, par, st, &sl[st], ops, &sm);
        if (st == 0 || sm.total > worst->total) {
            *worst = sm;
            ws = st;
        }
        /* uniform dense stages in the middle are identical: skip them */
        if (st == 0 && par->pp > 2 && skip)
            st = par->pp - 2; /* in-flight count never grows with i: stage 0 dominates
                               * 1..p−2 (ZB-H2's B -> W count does grow: p−2 dominates) */
    }
    return ws;
}

static void fill_memory(const stage_mem *w, int stage, px_memory *mem)
{
    mem->weights = px_i64_from_double_sat(w->w);
    mem->grads = px_i64_from_double_sat(w->g);
    mem->optimizer = px_i64_from_double_sat(w->o);
    mem->activations = px_i64_from_double_sat(w->act);
    mem->act_attention = px_i64_from_double_sat(w->act_att);
    mem->act_mlp = px_i64_from_double_sat(w->act_mlp);
    mem->act_norm = px_i64_from_double_sat(w->act_norm);
    mem->buffers = px_i64_from_double_sat(w->buf_emb + w->buf_final + w->buf_logits + w->buf_loss +
                                    w->buf_rc + w->buf_p2p + w->buf_zero3 + w->buf_zb);
    mem->total = mem->weights + mem->grads + mem->optimizer + mem->activations + mem->buffers;
    mem->worst_stage = stage;
}

/* The memory part of a px_cost_detail, from the worst stage's breakdown. */
static void fill_memory_detail(px_cost_ctx *ctx, const px_parallel *par, const stage_mem *w,
                               px_cost_detail *detail)
{
    detail->act_attention = w->act_att;
    detail->act_mlp = w->act_mlp;
    detail->act_norm = w->act_norm;
    detail->buf_embedding = w->buf_emb;
    detail->buf_logits = w->buf_logits;
    detail->buf_loss = w->buf_loss;
    detail->buf_final_norm = w->buf_final;
    detail->buf_recompute = w->buf_rc;
    detail->buf_p2p = w->buf_p2p + w->buf_zero3;
    detail->inflight = w->inflight;
    detail->inflight_bw = w->inflight_bw;
    detail->buf_zb_grads = w->buf_zb;
    detail->params_per_gpu = px_i64_from_double_sat(w->dense_params + w->expert_params);
    px_act_ops ops[2][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    detail->layer_act_bytes = ops[ctx->dense_layer_params > 0 ? 0 : 1][par->recompute].total;
}

void px_cost_memory(px_cost_ctx *ctx, const px_parallel *par, px_memory *mem,
                    px_cost_detail *detail)
{
    stage_mem w;
    static _Thread_local stage_layers sl[PX_MAX_CHUNKS]; /* 56 KB: off the stack */
    stage_counts(ctx, par, sl);
    int ws = worst_memory(ctx, par, sl, &w);
    fill_memory(&w, ws, mem);
    if (detail)
        fill_memory_detail(ctx, par, &w, detail);
}

/* Head and embedding work of one micro-batch (seconds). */
static void extras_time(const px_cost_ctx *ctx, const px_parallel *par, double *first_s,
                        double *last_s)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    double e = elem_of(ctx), t = par->tp;
    double tsp = (par->sp && par->tp > 1) ? t : 1.0;
    double T = (double)par->micro_batch * (double)seq_of(ctx, par) / par->cp;
    double h = (double)m->hidden, V = (double)m->vocab;
    /* embedding: gather rows forward, scatter-add backward (fwd + bwd bytes) */
    *first_s = px_time_mem_class_s(
        hw, PX_MEM_EMBED, px_cost_class_bytes(PX_MEM_EMBED, T * h, (int)e, false) / tsp);
    /* LM head GEMM (fwd + 2x bwd), the final norm (read + write, 3x for fwd +
     * bwd), and the fp32 cross-entropy over the V/t logits of every token,
     * forward and backward together: 4 fp32 passes where the profile has a
     * measured rate for the loss (calibrate's byte count) */
    double head = px_time_gemm_s(hw, T, V / t, h);
    /* A datasheet profile streams the loss as Megatron's vocab-parallel
     * cross-entropy runs it, one kernel a step over the fp32 logits: cast
     * (read e, write 4), max (read 4), subtract (read 4, write 4), exp (read
     * 4, write 4), sum (read 4), normalise (read 4, write 4); backward scale
     * (read 4, write 4) and cast back (read 4, write e): 48 + 2e bytes. */
    double xent = mem_class_measured(hw, PX_MEM_XENT)
                      ? px_cost_class_bytes(PX_MEM_XENT, T * V, (int)e, false)
                      : (48.0 + 2.0 * e) * T * V;
    *last_s = 3.0 * head +
              px_time_mem_class_s(hw, PX_MEM_NORM,
                                  px_cost_class_bytes(PX_MEM_NORM, T * h, (int)e, false) / tsp) +
              px_time_mem_class_s(hw, PX_MEM_XENT, xent / t);
}

void px_cost_stage_extras(px_cost_ctx *ctx, const px_parallel *par, px_stage_extras *out)
{
    memset(out, 0, sizeof *out);
    extras_time(ctx, par, &out->first_s, &out->last_s);
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double shard = (double)par->dp * par->cp, w, g, o;
    static_bytes((double)ctx->pc.embedding / par->tp, shard, par->zero, bpp, &w, &g, &o);
    out->first_static_bytes = w + g + o;
    static_bytes((double)ctx->head_params / par->tp + (double)ctx->pc.final_norm, shard,
                 par->zero, bpp, &w, &g, &o);
    out->last_static_bytes = w + g + o;
    double e = elem_of(ctx), t = par->tp, tsp = (par->sp && par->tp > 1) ? t : 1.0;
    double tok = (double)par->micro_batch * (double)seq_of(ctx, par) / par->cp;
    double h = (double)ctx->model->hidden, V = (double)ctx->model->vocab;
    out->first_buffer_bytes = e * tok * h / tsp;
    out->last_buffer_bytes = 2.0 * e * tok * h / tsp + (8.0 + (e < 4 ? e : 0.0)) * tok * V / t;
}

void px_cost_layer(px_cost_ctx *ctx, const px_parallel *par, int64_t layer, px_layer_cost *out)
{
    memset(out, 0, sizeof *out);
    bool moe = px_model_layer_is_moe(ctx->model, layer);
    crossings x;
    find_crossings(ctx, par, &x);
    layer_time lt;
    time_layer(ctx, par, moe, &x, &lt);
    double dense = (double)(moe ? ctx->moe_layer_params - ctx->expert_params
                                : ctx->dense_layer_params) / par->tp;
    double expert = moe ? (double)ctx->expert_params / (par->ep * par->etp) : 0.0;
    out->params = px_i64_from_double_sat(dense + expert);
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double w, g, o, w2, g2, o2;
    static_bytes(dense, (double)par->dp * par->cp, par->zero, bpp, &w, &g, &o);
    static_bytes(expert, (double)par->tp * par->cp * par->dp / (par->ep * par->etp), par->zero,
                 bpp, &w2, &g2, &o2);
    out->static_bytes = w + g + o + w2 + g2 + o2;
    out->static_bytes += prec_weight_copies(ctx, par, moe ? 0 : 1, moe ? 1 : 0);
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
        px_act_shape sh;
        make_shape(ctx, par, moe, (px_recompute)r, &sh);
        px_act_ops ops;
        px_cost_act_layer(&sh, &ops);
        px_prec_act_adjust(&sh, par->precision, &ops);
        out->act_bytes[r] = ops.total;
        out->recompute_s[r] = lt.rc_s[r] + (r == PX_RECOMPUTE_FULL ? lt.tp_rc_s : 0.0);
    }
    out->fwd_s = lt.fwd_s + lt.tp_fwd_s + 0.5 * lt.ep_s + lt.cp_exposed_s / 3.0;
    out->bwd_s = lt.bwd_s + lt.tp_bwd_s + 0.5 * lt.ep_s + lt.cp_exposed_s * 2.0 / 3.0;
}

/* ---------------- the whole step ---------------- */

/* One micro-batch through one stage, by part (seconds; bytes per micro-batch). */
typedef struct {
    double fwd, bwd, rcs, tp, ep, cp, cpt, extra, mb;
    double gemm, attn, mem, tpb, epb, cpb;
} stage_time;

/* Sums each layer's times by its kind (ld dense, lm MoE) and its own
 * recompute choice: the recompute's extra compute, and for full recompute
 * the forward's TP collectives again.  extra: embedding / head seconds. */
static void time_of_stage(const stage_layers *sl, const layer_time *ld, const layer_time *lm,
                          double extra, stage_time *q)
{
    memset(q, 0, sizeof *q);
    const layer_time *lt[2] = {ld, lm};
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            double n = (double)sl->n[k][r];
            if (n == 0.0)
                continue;
            const layer_time *x = lt[k];
            double full = r == PX_RECOMPUTE_FULL ? 1.0 : 0.0;
            q->fwd += n * x->fwd_s;
            q->bwd += n * x->bwd_s;
            q->rcs += n * x->rc_s[r];
            q->tp += n * (x->tp_s + full * x->tp_rc_s);
            q->ep += n * x->ep_s;
            q->cp += n * x->cp_exposed_s;
            q->cpt += n * x->cp_total_s;
            q->gemm += n * 3.0 * x->gemm_fwd_s;
            q->attn += n * (x->attn_fwd_s + x->attn_bwd_s);
            q->mem += n * (x->mem_fwd_s + x->mem_bwd_s);
            q->tpb += n * x->tp_bytes * (1.0 + full * 0.5);
            q->epb += n * x->ep_bytes;
            q->cpb += n * x->cp_bytes;
        }
    q->extra = extra;
    q->mb = q->fwd + q->bwd + q->rcs + q->tp + q->ep + q->cp + extra;
}

/* The topology crossings and the timing of one dense and one MoE layer (each
 * zero when the model has no layer of that kind). */
static void time_layer_kinds(px_cost_ctx *ctx, const px_parallel *par, crossings *x,
                             layer_time *dense, layer_time *moe)
{
    find_crossings(ctx, par, x);
    memset(dense, 0, sizeof *dense);
    memset(moe, 0, sizeof *moe);
    if (ctx->dense_layer_params > 0)
        time_layer(ctx, par, false, x, dense);
    if (ctx->n_moe_layers > 0)
        time_layer(ctx, par, true, x, moe);
}

void px_cost_stage_end_buffers(px_cost_ctx *ctx, const px_parallel *par, double *first,
                               double *last, double *every)
{
    stage_layers none;
    memset(&none, 0, sizeof none);
    px_act_ops ops[2][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    stage_mem sm;
    memory_of_stage(ctx, par, 0, &none, ops, &sm);
    *first = sm.buf_emb;
    *every = sm.buf_p2p + sm.buf_zero3;
    memory_of_stage(ctx, par, par->pp - 1, &none, ops, &sm);
    *last = sm.buf_final + sm.buf_logits + sm.buf_loss;
}

void px_cost_stages(px_cost_ctx *ctx, const px_parallel *par, double *stage_mb_s,
                    int64_t *stage_mem_bytes)
{
    static _Thread_local stage_layers sl[PX_MAX_CHUNKS];
    stage_counts(ctx, par, sl);
    crossings x;
    layer_time ld, lm;
    time_layer_kinds(ctx, par, &x, &ld, &lm);
    double first_s, last_s;
    extras_time(ctx, par, &first_s, &last_s);
    px_act_ops ops[2][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    int p = par->pp;
    for (int st = 0; st < p; st++) {
        if (stage_mb_s) {
            stage_time q;
            time_of_stage(&sl[st], &ld, &lm,
                          (st == 0 ? first_s : 0.0) + (st == p - 1 ? last_s : 0.0), &q);
            stage_mb_s[st] = q.mb;
        }
        if (stage_mem_bytes) {
            stage_mem sm;
            memory_of_stage(ctx, par, st, &sl[st], ops, &sm);
            px_memory mem;
            fill_memory(&sm, st, &mem);
            stage_mem_bytes[st] = mem.total;
        }
    }
}

/* ZeRO-3 as the framework runs it, layer by layer (px_cost_fsdp.h):
 * replaces the whole-stage estimate of eval_impl. */
static void fsdp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                           double stage_params, px_bytes_per_param bpp, double fwd_s,
                           double bwd_s, double *total, double *exposed, double *bytes)
{
    const px_hw *hw = ctx->hw;
    int ddp = par->dp * par->cp;
    int group = par->shard_group > 0 && par->shard_group < ddp ? par->shard_group : ddp;
    int replicas = ddp / group;
    int g = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    int st = par->tp * par->cp * par->pp; /* dp rank stride, default order */
    bool cross_group = !hw->torus && (group == ddp ? (x->dp || x->cp) : dim_crosses(st, group, g));
    bool cross_rep = !hw->torus && replicas > 1 && dim_crosses(st * group, replicas, g);
    double n = (double)ctx->model->n_layers / par->pp;
    px_fsdp_time ft;
    double rails = px_cost_fsdp_rails(hw, ctx->run, group, st);
    px_cost_fsdp_time(hw, ctx->run, group, replicas, cross_group, cross_rep, rails,
                      stage_params / n, n,
                      elem_of(ctx), bpp.grads, (double)par->n_micro, fwd_s, bwd_s,
                      comm_sm_fraction(hw), &ft);
    *total = ft.total_s;
    *exposed = ft.exposed_s;
    *bytes = ft.bytes;
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
    static _Thread_local stage_layers sl[PX_MAX_CHUNKS]; /* 56 KB: off the stack */
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
    px_recompute rc = par->recompute;

    /* slowest stage, one micro-batch */
    int p = par->pp;
    double worst_mb = -1.0;
    double w_fwd = 0, w_bwd = 0, w_rc = 0, w_tp = 0, w_ep = 0, w_cp = 0, w_cpt = 0;
    double w_gemm = 0, w_attn = 0, w_mem = 0, w_tpb = 0, w_epb = 0, w_cpb = 0;
    double w_dense_p = 0, w_exp_p = 0;
    bool skip = middle_stages_identical(ctx, par);
    int seen[PX_SEEN_MAX], n_seen = 0;
    for (int st = 0; st < p; st++) {
        if (repeats_middle(sl, st, p, seen, &n_seen))
            continue;
        stage_time q;
        time_of_stage(&sl[st], &ld, &lm, (st == 0 ? first_s : 0.0) + (st == p - 1 ? last_s : 0.0),
                      &q);
        if (q.mb > worst_mb) {
            worst_mb = q.mb;
            /* the head's and embedding's GEMM/pointwise time is booked as forward/backward */
            w_fwd = q.fwd + q.extra / 3.0;
            w_bwd = q.bwd + 2.0 * q.extra / 3.0;
            w_rc = q.rcs;
            w_tp = q.tp;
            w_ep = q.ep;
            w_cp = q.cp;
            w_cpt = q.cpt;
            w_gemm = q.gemm;
            w_attn = q.attn;
            w_mem = q.mem + q.extra;
            w_tpb = q.tpb;
            w_epb = q.epb;
            w_cpb = q.cpb;
        }
        /* uniform dense stages between the first and the last are identical */
        if (st == 0 && p > 2 && skip)
            st = p - 2;
    }
    w_dense_p = wm.dense_params;
    w_exp_p = wm.expert_params;

    double mm = (double)par->n_micro;
    double v = par->vpp;
    px_blocking_sync sync; /* waits at blocking collectives (px_blocking.h) */
    px_blocking_sync_s(m, hw, par, worst_mb, &sync);
    w_tp += sync.tp;
    w_cp += sync.cp;
    worst_mb += sync.tp + sync.cp;
    double ideal = mm * worst_mb;
    double bubble_x = px_cost_bubble_over_ideal(par->schedule, p, par->vpp, par->n_micro);
    double bubble = bubble_x * ideal;

    /* PP: each stage sends and receives one activation (forward) and one
     * gradient (backward) per micro-batch per chunk; the sends sit between
     * compute steps of the 1F1B loop, so they are on the critical path */
    double pp_total = 0.0, pp_bytes = 0.0;
    if (p > 1) {
        bool sp = par->sp && par->tp > 1;
        double msg = px_cost_pp_msg_bytes((double)seq_of(ctx, par) / par->cp,
                                          (double)par->micro_batch, (double)m->hidden,
                                          par->tp, sp, elem_of(ctx));
        double one = px_time_coll_s(hw, PX_COLL_P2P, 2, msg, x.pp);
        if (!sp && par->tp > 1) {
            /* Megatron's scatter/gather (Narayanan et al. 2021, sec. 4.1): the t
             * ranks of a TP group hold the same activation; each sends 1/t of
             * it over its own link and the receivers all-gather it in-node */
            msg /= par->tp;
            one = px_time_coll_s(hw, PX_COLL_P2P, 2, msg, x.pp) +
                  px_time_coll_s(hw, PX_COLL_ALLGATHER, par->tp, msg * par->tp, x.tp);
        }
        pp_total = 2.0 * v * mm * one;
        pp_bytes = 2.0 * v * mm * msg;
    }

    /* DP / ZeRO: see docs/cost-model.md "Data parallel and the overlap model" */
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    int ddp = par->dp * par->cp;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    /* quantised parameters are gathered quantised (px_cost_precision.h) */
    double gath = par->quantized_params ? px_prec_param_gather_bytes(par->precision, bpp.weights)
                                        : bpp.weights;
    double grad_b = w_dense_p * bpp.grads, wt_b = w_dense_p * gath;
    double egrad_b = w_exp_p * bpp.grads, ewt_b = w_exp_p * gath;
    bool dcross = x.dp || x.cp;
    double t_ar = px_time_coll_s(hw, PX_COLL_ALLREDUCE, ddp, grad_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_ALLREDUCE, edp, egrad_b, x.edp);
    double t_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, ddp, grad_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, edp, egrad_b, x.edp);
    double t_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, ddp, wt_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_ALLGATHER, edp, ewt_b, x.edp);
    double dp_bytes_ar = px_coll_wire_bytes(PX_COLL_ALLREDUCE, ddp, grad_b) +
                         px_coll_wire_bytes(PX_COLL_ALLREDUCE, edp, egrad_b);
    double dp_bytes_rs = px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, ddp, grad_b) +
                         px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, edp, egrad_b);
    double dp_bytes_ag = px_coll_wire_bytes(PX_COLL_ALLGATHER, ddp, wt_b) +
                         px_coll_wire_bytes(PX_COLL_ALLGATHER, edp, ewt_b);
    /* overlap windows: the backward (forward) compute of one micro-batch */
    double bwd_win = w_bwd + w_rc, fwd_win = w_fwd;
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
        dp_exposed = dmax(tail_ar, t_ar - bwd_win);
        dp_bytes = dp_bytes_ar;
        break;
    case 1:
        dp_total = t_rs + t_ag;
        dp_exposed = dmax(tail_rs, t_rs - bwd_win) + dmax(tail_ag, t_ag - fwd_win);
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
        fsdp_step_comm(ctx, par, &x, w_dense_p + w_exp_p, bpp, fwd_win, bwd_win, &dp_total,
                       &dp_exposed, &dp_bytes);
    if (ddp <= 1 && edp <= 1)
        dp_total = dp_exposed = dp_bytes = 0.0;
    dp_exposed += mm * sync.dp_mb + sync.dp_step;

    /* optimizer step: Adam streams master weights, m, v (read + write), the
     * gradient (read) and writes the low-precision weights */
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

    double step = ideal + bubble + pp_total + dp_exposed + opt_s;

    px_time *tm = &pred->time;
    tm->step_s = step;
    tm->compute_s = mm * (w_fwd + w_bwd + w_rc);
    tm->recompute_s = mm * w_rc;
    tm->tp_comm_s = mm * w_tp;
    tm->cp_comm_s = mm * w_cp;
    tm->cp_comm_total_s = mm * w_cpt;
    tm->ep_comm_s = mm * w_ep;
    tm->pp_comm_s = pp_total;
    tm->dp_comm_s = dp_exposed;
    tm->dp_comm_total_s = dp_total;
    tm->bubble_s = bubble;
    tm->optimizer_s = opt_s;

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

    if (detail) {
        fill_memory_detail(ctx, par, &wm, detail);
        detail->tp_total_s = detail->tp_exposed_s = mm * w_tp;
        detail->cp_total_s = mm * w_cpt;
        detail->cp_exposed_s = mm * w_cp;
        detail->ep_total_s = detail->ep_exposed_s = mm * w_ep;
        detail->pp_total_s = detail->pp_exposed_s = pp_total;
        detail->dp_total_s = dp_total;
        detail->dp_exposed_s = dp_exposed;
        detail->compute_fwd_s = mm * w_fwd;
        detail->compute_bwd_s = mm * w_bwd;
        detail->compute_recompute_s = mm * w_rc;
        detail->gemm_s = mm * w_gemm;
        detail->attn_s = mm * w_attn;
        detail->membound_s = mm * w_mem;
        detail->stage_mb_s = worst_mb;
        detail->bubble_over_ideal = bubble_x;
        detail->tp_crosses = x.tp;
        detail->cp_crosses = x.cp;
        detail->ep_crosses = x.ep;
        detail->pp_crosses = x.pp;
        detail->dp_crosses = x.dp;
        detail->tp_bytes_per_step = mm * w_tpb;
        detail->ep_bytes_per_step = mm * w_epb;
        detail->cp_bytes_per_step = mm * w_cpb;
        detail->pp_bytes_per_step = pp_bytes;
        detail->dp_bytes_per_step = dp_bytes;
        detail->tp_bytes_per_layer = ctx->dense_layer_params > 0 ? ld.tp_bytes : lm.tp_bytes;
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

void px_cost_stage_memory(px_cost_ctx *ctx, const px_parallel *par, px_memory *per_stage)
{
    static _Thread_local stage_layers sl[PX_MAX_CHUNKS];
    stage_counts(ctx, par, sl);
    px_act_ops ops[2][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    for (int st = 0; st < par->pp; st++) {
        stage_mem sm;
        memory_of_stage(ctx, par, st, &sl[st], ops, &sm);
        fill_memory(&sm, st, &per_stage[st]);
    }
}
