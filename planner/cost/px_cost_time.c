/* px_cost_time.c — the cost model's times: node crossings, one layer's
 * seconds by part, the head and embedding, and a stage's micro-batch
 * (docs/cost-model.md). */
#include "px_cost.h"
#include "px_cost_internal.h"
#include "px_blocking.h"
#include "px_cost_fsdp.h"

#include <math.h>
#include <string.h>

#include "px_checked.h"
#include "px_attn_eff.h"
#include "px_cost_cp.h"
#include "px_cost_moe.h"
#include "px_fp8_accum.h"
#include "px_grad_accum.h"
#include "px_domain.h"
#include "px_cost_precision.h"
#include "px_efficiency.h"
#include "px_flops.h"
#include "px_layout.h"
#include "px_sliding.h"
#include "px_plan_check.h"

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

static bool default_order(const char *order)
{
    return order[0] == '\0' || strcmp(order, "tp-cp-ep-pp-dp") == 0 ||
           strcmp(order, "tp-cp-pp-dp") == 0;
}

/* Rank order tp, cp, ep, dp, pp (px_fw_runtime.pp_outermost): a stage holds
 * the B = tp·cp·dp consecutive ranks s·B …, the dense dimensions are the
 * strides 1, tp, tp·cp (dp) and B (pp), and the expert grid folds the same
 * block as etp, ep, edp; every group is an aligned block of stride · size
 * ranks, so dim_crosses answers each. */
static void pp_outermost_crossings(const px_parallel *par, int g, bool moe, crossings *x)
{
    int tc = par->tp * par->cp, blk = tc * par->dp;
    x->tp = dim_crosses(1, par->tp, g);
    x->cp = dim_crosses(par->tp, par->cp, g);
    x->dp = dim_crosses(tc, par->dp, g);
    x->pp = dim_crosses(blk, par->pp, g);
    if (!moe || par->ep * par->etp < 1 || blk % (par->ep * par->etp) != 0)
        return;
    x->etp = dim_crosses(1, par->etp, g);
    x->ep = dim_crosses(par->etp, par->ep, g);
    x->edp = dim_crosses(par->etp * par->ep, blk / (par->ep * par->etp), g);
}

static void find_crossings(px_cost_ctx *ctx, const px_parallel *par, crossings *x)
{
    const px_hw *hw = ctx->hw;
    memset(x, 0, sizeof *x);
    if (hw->torus)
        return; /* no node cliff: every group uses the fast links */
    int gpus = par->tp * par->cp * par->pp * par->dp;
    int g = px_domain_job_gpus(hw, gpus);
    if (gpus <= g)
        return; /* the whole job on one domain, whatever its order */
    bool moe = ctx->n_moe_layers > 0;
    px_layout lay;
    bool have_lay = false;
    if (default_order(par->order) && ctx->run && ctx->run->pp_outermost) {
        /* the framework lays the default grid out its own way */
        pp_outermost_crossings(par, g, moe, x);
        return;
    }
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

void make_shape(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
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
double comm_sm_fraction(const px_hw *hw)
{
    return hw->comm_overlap_cost;
}

/* True when the profile has a measured bandwidth for operator class c
 * (calibrated CPU profiles): such a rate is defined on the byte counts
 * calibrate charges (forward bytes, backward 2x), so those counts are kept
 * for it; datasheet profiles get the per-operator counts below. */
bool mem_class_measured(const px_hw *hw, px_mem_class c)
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

/* The sizes one layer's terms share: element bytes, the TP degree and the
 * sequence-parallel divisor, the tokens this GPU sees in attention, the
 * hidden size, the query heads and KV heads on this GPU. */
typedef struct {
    double e, t, tsp, T, h, a_t, kv_t;
} layer_dims;

static void layer_dims_of(const px_parallel *par, const px_act_shape *sh, layer_dims *d)
{
    d->e = sh->elem_bytes;
    d->t = par->tp;
    d->tsp = sh->sp ? d->t : 1.0;
    d->T = sh->b * sh->s; /* tokens this GPU sees in attention */
    d->h = sh->h;
    d->a_t = sh->a / d->t;
    d->kv_t = sh->kv >= d->t ? sh->kv / d->t : 1.0;
}

/* A linear layer's GEMM of m tokens, n outputs and k inputs in precision p
 * (px_prec_time_linear_s): its forward seconds, its backward's added to
 * *bwd. */
static double linear_s(const px_hw *hw, px_precision p, double m, double n, double k,
                       double *bwd)
{
    double b, f = px_prec_time_linear_s(hw, p, m, n, k, &b);
    *bwd += b;
    return f;
}

/* Attention: the projections' GEMM seconds added to *pg forward and *gb
 * backward (*g_col: the forward of the column-parallel ones, the TP overlap
 * window), the core into lt. */
static void layer_attention_time(const px_cost_ctx *ctx, const px_parallel *par,
                                 const px_act_shape *ps, const layer_dims *d, double *pg,
                                 double *gb, double *g_col, layer_time *lt)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    const px_precision pq = par->precision;
    const px_act_shape sh = *ps;
    double T = d->T, h = d->h, a_t = d->a_t, kv_t = d->kv_t;
    double g = *pg;
    /* attention projections */
    if (m->attn == PX_ATTN_MLA) {
        double rope = (double)m->qk_rope_head_dim, nope = sh.dq - rope;
        if (m->q_lora_rank > 0) {
            g += linear_s(hw, pq, T, (double)m->q_lora_rank, h, gb);
            g += linear_s(hw, pq, T, a_t * sh.dq, (double)m->q_lora_rank, gb);
        } else {
            g += linear_s(hw, pq, T, a_t * sh.dq, h, gb);
        }
        g += linear_s(hw, pq, T, (double)m->kv_lora_rank + rope, h, gb);
        g += linear_s(hw, pq, T, a_t * (nope + sh.dv), (double)m->kv_lora_rank, gb);
    } else {
        g += linear_s(hw, pq, T, a_t * sh.dq + kv_t * (sh.dq + sh.dv), h, gb);
    }
    *g_col = g;
    g += linear_s(hw, pq, T, h, a_t * sh.dv, gb);
    /* attention core: the FLOP convention counts the full s×s product; a
     * causal kernel does half of it */
    double attn_flops = 2.0 * T * sh.s_kv * a_t * (sh.dq + sh.dv);
    if (par->flash_attention) {
        /* sliding-window layers: the model's mean share of a causal core */
        lt->attn_fwd_s = px_time_attn_s(hw, 0.5 * attn_flops *
                                                px_sliding_causal_fraction(m, seq_of(ctx, par)));
        /* the kernel generation, head width and block length (px_attn_eff.h) */
        lt->attn_fwd_s /= px_attn_rate_rel(hw, px_attn_kernel_version(hw, ctx->run, sh.dv),
                                           sh.dq, sh.s);
        /* FlashAttention 1 runs at half FlashAttention-2's rate (Dao 2023:
         * FA2 is about 2x FA1); a calibrated attn_eff is the kernel's own */
        if (ctx->run && ctx->run->flash_attention_version == 1 && hw->attn_eff <= 0.0)
            lt->attn_fwd_s *= 2.0;
        lt->attn_bwd_s = 2.5 * lt->attn_fwd_s; /* the backward recomputes the scores */
    } else {
        attn_core_unfused(hw, &sh, T, a_t, &lt->attn_fwd_s, &lt->attn_bwd_s);
    }

    *pg = g;
}

/* The MLP or the routed and shared experts: GEMM seconds added to *pg
 * forward and *gb backward (*g_col: the dense MLP's column-parallel GEMM's
 * forward), the elements through the activation function and the
 * token-permutation bytes added to *act_elems and *mem. */
static void layer_mlp_time(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                           const px_act_shape *ps, const layer_dims *d, double *pg,
                           double *gb, double *g_col, double *act_elems_out, double *mem_out)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    const px_precision pq = par->precision;
    const px_act_shape sh = *ps;
    double e = d->e, t = d->t, tsp = d->tsp, T = d->T, h = d->h;
    double g = *pg;
    double up = sh.gated ? 2.0 : 1.0;
    double act_elems = *act_elems_out; /* elements through the activation function */
    double mem = *mem_out;
    double g_col_mlp = 0.0;
    if (moe) {
        double E = sh.n_experts, r = sh.top_k, fe = sh.moe_f, etp = par->etp, ep = par->ep;
        double router = px_time_gemm_s(hw, T / tsp, E, h); /* bf16 */
        g += router;
        *gb += 2.0 * router;
        double tok = T * r * etp / t;           /* routed copies on this GPU */
        double per_expert = tok * ep / E;       /* tokens per local expert */
        double n_local = E / ep;
        /* the busiest EP rank sets the pace of the expert GEMMs
         * (px_cost_moe.c: balanced, dropless routing) */
        double imb = px_moe_imbalance(par->ep, T * r / t);
        double eb = 0.0;
        g += imb * n_local * (linear_s(hw, pq, per_expert, up * fe / etp, h, &eb) +
                              linear_s(hw, pq, per_expert, h, fe / etp, &eb));
        *gb += imb * n_local * eb;
        act_elems += tok * fe / etp;
        /* permute and un-permute the routed tokens: Megatron's dispatcher
         * passes (px_cost_moe.c); the fp32 CPU executor's two */
        mem += e >= 4.0 ? 4.0 * e * tok * h
                        : px_moe_permute_bytes(e, tok, etp, n_local,
                                               ctx->run && ctx->run->fused_moe_permute, h);
        if (px_prec_is_low(pq) && ctx->run && ctx->run->grouped_gemm)
            mem += px_moe_fp8_pad_bytes(e, tok, h); /* FP8 row alignment */
        if (m->n_shared_experts > 0) {
            double fs = sh.n_shared * fe;
            g += linear_s(hw, pq, T, up * fs / t, h, gb) + linear_s(hw, pq, T, h, fs / t, gb);
            act_elems += T * fs / t;
        }
    } else {
        g_col_mlp = linear_s(hw, pq, T, up * sh.f / t, h, gb);
        g += g_col_mlp + linear_s(hw, pq, T, h, sh.f / t, gb);
        act_elems += T * sh.f / t;
    }
    *pg = g;
    *g_col = g_col_mlp;
    *act_elems_out = act_elems;
    *mem_out = mem;
}

/* The memory-bound operators and the low-precision casts: lt's mem_fwd_s
 * and mem_bwd_s. */
static void layer_pointwise_time(const px_hw *hw, const px_parallel *par,
                                 const px_act_shape *ps, const layer_dims *d, double mem,
                                 double act_elems, layer_time *lt)
{
    const px_act_shape sh = *ps;
    double e = d->e, tsp = d->tsp, T = d->T, h = d->h, a_t = d->a_t, kv_t = d->kv_t;
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

}

/* f forward and b backward seconds of element-wise work added to lt, rerun
 * by full recompute, and by selective recompute too when it belongs to the
 * attention core (with_core). */
static void add_elementwise(layer_time *lt, double f, double b, bool with_core)
{
    lt->mem_fwd_s += f;
    lt->mem_bwd_s += b;
    lt->fwd_s += f;
    lt->bwd_s += b;
    lt->rc_s[PX_RECOMPUTE_FULL] += f;
    if (with_core)
        lt->rc_s[PX_RECOMPUTE_SELECTIVE] += f;
}

/* The executor's CP (px_cost_cp_gather_qkv_time): the q|k|v rows gathered
 * and their gradients reduce-scattered in place of the flavour's transfers
 * (*cpt), its buffers and copies (whole gathered sequences, beyond the
 * caches) streamed at the triad's rate into lt's element-wise time. */
static void cp_gather_qkv(const px_hw *hw, const px_parallel *par, const px_act_shape *sh,
                          const layer_dims *d, bool crosses, bool mla, px_cp_time *cpt,
                          layer_time *lt)
{
    double kv_w = mla ? d->a_t * (sh->dq + sh->dv) : d->kv_t * (sh->dq + sh->dv);
    double rows = d->e * d->T * (d->a_t * sh->dq + kv_w);
    double sf, sb;
    px_cost_cp_gather_qkv_time(hw, par->cp, rows, crosses, cpt, &sf, &sb);
    add_elementwise(lt, px_time_stream_s(hw, sf), px_time_stream_s(hw, sb), false);
}

/* The p2p ring's merging passes (px_cost_cp_ring_merge_bytes) in lt's
 * element-wise time; rerun with the attention core by either recompute. */
static void cp_ring_merge(const px_hw *hw, const px_parallel *par, const px_act_shape *sh,
                          const layer_dims *d, layer_time *lt)
{
    double fb, bb;
    px_cost_cp_ring_merge_bytes(par->cp, d->T, d->a_t, d->kv_t, sh->dq, sh->dv, d->e, &fb, &bb);
    add_elementwise(lt, px_time_mem_s(hw, fb), px_time_mem_s(hw, bb), true);
}

/* TP, expert TP, EP and CP communication of one layer (lt's tp_*, ep_*,
 * cp_*); g_col_attn, g_col_mlp: the column-parallel GEMMs' seconds. */
static void layer_comm_time(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                            const px_act_shape *ps, const layer_dims *d, const crossings *x,
                            double g_col_attn, double g_col_mlp, layer_time *lt)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    const px_act_shape sh = *ps;
    double e = d->e, t = d->t, T = d->T, h = d->h, a_t = d->a_t, kv_t = d->kv_t;
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
        if (ctx->run && ctx->run->moe_a2a_overlap) /* under the other micro-batch */
            lt->ep_s = px_moe_a2a_exposed_s(lt->ep_s, lt->fwd_s + lt->bwd_s,
                                            comm_sm_fraction(hw), (long long)par->n_micro);
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
        /* as the executor runs it: its plans are blocking (--overlap off) */
        if (ctx->run && ctx->run->cp_gather_qkv && !par->dp_overlap)
            cp_gather_qkv(hw, par, &sh, d, x->cp, m->attn == PX_ATTN_MLA, &cpt, lt);
        else if (par->cp_comm == PX_CPC_P2P && !(ctx->run && ctx->run->cp_gather_qkv))
            cp_ring_merge(hw, par, &sh, d, lt); /* a ring merges its steps' outputs */
        lt->cp_total_s = cpt.total_s;
        lt->cp_exposed_s = cpt.exposed_s;
        lt->cp_bytes = cpt.bytes;
    }
}

/* A layer's parameters on one GPU: its dense part split over TP, its experts
 * over EP x expert TP. */
static double layer_dense_gpu_params(const px_cost_ctx *ctx, const px_parallel *par, bool moe)
{
    return (double)(moe ? ctx->moe_layer_params - ctx->expert_params : ctx->dense_layer_params) /
           par->tp;
}

static double layer_gpu_params(const px_cost_ctx *ctx, const px_parallel *par, bool moe)
{
    return layer_dense_gpu_params(ctx, par, moe) +
           (moe ? (double)ctx->expert_params / (par->ep * par->etp) : 0.0);
}

/* Seconds a micro-batch spends adding the gradients of `params` weights of
 * this GPU into their main gradients (px_grad_accum.h): the framework's own
 * kernel (and its cast copy) where it has one, else the fused
 * weight-gradient GEMM's read of the main gradient; the embedding table
 * (`embedding`) has a dense gradient of its own to write and add.  The
 * executor's weight stream (below) and its calibrated embedding class
 * count theirs. */
static double grad_accum_time(const px_cost_ctx *ctx, const px_parallel *par, double params,
                              bool embedding)
{
    const px_fw_runtime *run = ctx->run;
    bool separate = run && run->grad_accum_separate, blocking = blocking_engine(ctx, par);
    double e = elem_of(ctx), g = px_cost_bytes_per_param((int)e, par->grad_fp32).grads;
    double s = 0.0;
    if (embedding && !blocking)
        s = px_grad_accum_embed_s(ctx->hw, par, params, e, g);
    else if (embedding || separate)
        s = px_grad_accum_s(ctx->hw, par, separate, params, e, g);
    else if (!blocking)
        s = px_grad_accum_fused_s(ctx->hw, par, separate, params, g);
    if (run && run->grad_accum_cast_copy)
        s += px_grad_accum_cast_s(ctx->hw, par, separate, params, g);
    return s;
}

/* The executor's GEMMs stream `params` weights of this GPU from memory every
 * micro-batch (px_blocking_weight_stream_bytes): seconds forward (*fwd_s) and
 * backward (*bwd_s) at the triad's rate; 0 unless blocking_engine. */
static void weight_stream_time(const px_cost_ctx *ctx, const px_parallel *par, double params,
                               double *fwd_s, double *bwd_s)
{
    *fwd_s = *bwd_s = 0.0;
    if (!blocking_engine(ctx, par))
        return;
    double e = elem_of(ctx), f;
    double all = px_blocking_weight_stream_bytes(
        params, e, px_cost_bytes_per_param((int)e, par->grad_fp32).grads, &f);
    *fwd_s = px_time_stream_s(ctx->hw, f);
    *bwd_s = px_time_stream_s(ctx->hw, all - f);
}

/* One layer's seconds for one micro-batch on one GPU, by part.  The linear
 * GEMMs run in the plan's precision (the router, the attention core and the
 * LM head stay in bf16). */
static void time_layer(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                       const crossings *x, layer_time *lt)
{
    memset(lt, 0, sizeof *lt);
    px_act_shape sh;
    make_shape(ctx, par, moe, PX_RECOMPUTE_NONE, &sh);
    layer_dims d;
    layer_dims_of(par, &sh, &d);
    double g = 0.0, gb = 0.0, g_col_attn = 0.0, g_col_mlp = 0.0, act_elems = 0.0, mem = 0.0;
    layer_attention_time(ctx, par, &sh, &d, &g, &gb, &g_col_attn, lt);
    layer_mlp_time(ctx, par, moe, &sh, &d, &g, &gb, &g_col_mlp, &act_elems, &mem);
    lt->gemm_fwd_s = g;
    layer_pointwise_time(ctx->hw, par, &sh, &d, mem, act_elems, lt);
    lt->fwd_s = lt->gemm_fwd_s + lt->attn_fwd_s + lt->mem_fwd_s;
    /* backward: the GEMMs' input and weight gradients, the attention core's
     * backward; per-tensor FP8 runs the linear ones with the split
     * accumulator on Hopper (px_fp8_accum.h; the router GEMM stays bf16) */
    double router_s = moe ? px_time_gemm_s(ctx->hw, d.T / d.tsp, sh.n_experts, d.h) : 0.0;
    double grad_acc = px_fp8_grad_gemm_factor(ctx->hw, par->precision);
    lt->bwd_s = gb + (grad_acc - 1.0) * (gb - 2.0 * router_s) + lt->attn_bwd_s + lt->mem_bwd_s;
    double ws_f, ws_b, params = layer_gpu_params(ctx, par, moe);
    weight_stream_time(ctx, par, params, &ws_f, &ws_b);
    lt->gemm_fwd_s += ws_f;
    lt->fwd_s += ws_f;
    lt->bwd_s += ws_b;
    double acc = grad_accum_time(ctx, par, params, false);
    lt->mem_bwd_s += acc;
    lt->bwd_s += acc;
    lt->rc_s[PX_RECOMPUTE_NONE] = 0.0;
    lt->rc_s[PX_RECOMPUTE_SELECTIVE] = lt->attn_fwd_s;
    lt->rc_s[PX_RECOMPUTE_FULL] = lt->fwd_s;

    layer_comm_time(ctx, par, moe, &sh, &d, x, g_col_attn, g_col_mlp, lt);
}

/* Head and embedding work of one micro-batch (seconds). */
void extras_time(const px_cost_ctx *ctx, const px_parallel *par, double *first_s,
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
                   hw, PX_MEM_EMBED, px_cost_class_bytes(PX_MEM_EMBED, T * h, (int)e, false) / tsp) +
               grad_accum_time(ctx, par, (double)ctx->pc.embedding / t, true);
    /* LM head GEMM (fwd + 2x bwd), the final norm (read + write, 3x for fwd +
     * bwd), and the fp32 cross-entropy over the V/t logits of every token,
     * forward and backward together: 4 fp32 passes where the profile has a
     * measured rate for the loss (calibrate's byte count) */
    double head = px_time_gemm_s(hw, T, V / t, h), head_ws_f, head_ws_b;
    weight_stream_time(ctx, par, (double)ctx->head_params / t, &head_ws_f, &head_ws_b);
    /* A datasheet profile streams the loss as Megatron's vocab-parallel
     * cross-entropy runs it, one kernel a step over the fp32 logits: cast
     * (read e, write 4), max (read 4), subtract (read 4, write 4), exp (read
     * 4, write 4), sum (read 4), normalise (read 4, write 4); backward scale
     * (read 4, write 4) and cast back (read 4, write e): 48 + 2e bytes. */
    double xent = mem_class_measured(hw, PX_MEM_XENT)
                      ? px_cost_class_bytes(PX_MEM_XENT, T * V, (int)e, false)
                      : (48.0 + 2.0 * e) * T * V;
    *last_s = 3.0 * head + head_ws_f + head_ws_b +
              grad_accum_time(ctx, par, (double)ctx->head_params / t, false) +
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
}

void px_cost_layer(px_cost_ctx *ctx, const px_parallel *par, int64_t layer, px_layer_cost *out)
{
    memset(out, 0, sizeof *out);
    bool moe = px_model_layer_is_moe(ctx->model, layer);
    crossings x;
    find_crossings(ctx, par, &x);
    layer_time lt;
    time_layer(ctx, par, moe, &x, &lt);
    double dense = layer_dense_gpu_params(ctx, par, moe);
    double expert = layer_gpu_params(ctx, par, moe) - dense;
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

/* Sums each layer's times by its kind (ld dense, lm MoE) and its own
 * recompute choice: the recompute's extra compute, and for full recompute
 * the forward's TP collectives again.  extra: embedding / head seconds. */
void time_of_stage(const stage_layers *sl, const layer_time *ld, const layer_time *lm,
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
            q->gemm += n * (x->gemm_fwd_s + x->bwd_s - x->attn_bwd_s - x->mem_bwd_s);
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
void time_layer_kinds(px_cost_ctx *ctx, const px_parallel *par, crossings *x,
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

void px_cost_stages(px_cost_ctx *ctx, const px_parallel *par, double *stage_mb_s,
                    int64_t *stage_mem_bytes)
{
    stage_layers *sl = ctx->stage_ws;
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
 * replaces the whole-stage estimate of eval_impl.  The dense parameters are
 * sharded over the data-parallel group (dp rank stride tp·cp·pp in the
 * default order, tp·cp with pp outermost); the experts over their
 * expert-data-parallel group of tp·cp·dp / (ep·etp) ranks, stride etp·ep in
 * the expert grid (px_cost_internal.h's rank fold), which crosses nodes on
 * its own (x->edp) and rides as many NICs as it holds GPUs of a node. */
void fsdp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                    double dense_params, double expert_params, px_bytes_per_param bpp,
                    double fwd_s, double bwd_s, double *total, double *exposed,
                    double *bytes)
{
    const px_hw *hw = ctx->hw;
    int ddp = par->dp * par->cp;
    int group = par->shard_group > 0 && par->shard_group < ddp ? par->shard_group : ddp;
    int replicas = ddp / group;
    int gpus = par->tp * par->cp * par->pp * par->dp;
    int g = px_domain_job_gpus(hw, gpus);
    bool outer = ctx->run && ctx->run->pp_outermost;
    int st = par->tp * par->cp * (outer ? 1 : par->pp);
    bool spans = !hw->torus && gpus > g; /* else the job is one domain */
    bool cross_group = spans && (group == ddp ? (x->dp || x->cp) : dim_crosses(st, group, g));
    bool cross_rep = spans && replicas > 1 && dim_crosses(st * group, replicas, g);
    double n = (double)ctx->model->n_layers / par->pp;
    px_fsdp_shard sh[2] = {{group, cross_group, px_cost_fsdp_rails(hw, ctx->run, group, st),
                            dense_params / n}};
    int n_sh = 1;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    if (expert_params > 0.0 && par->shard_group <= 0) {
        /* rank step of the expert-data-parallel dimension */
        int64_t tc = (int64_t)par->tp * par->cp;
        int64_t step = (int64_t)par->etp * par->ep;
        int st_e = (int)(outer ? step : stage_rank(step, tc, par->pp, 0));
        sh[n_sh++] = (px_fsdp_shard){edp, spans && x->edp,
                                     px_cost_fsdp_rails(hw, ctx->run, edp, st_e),
                                     expert_params / n};
    } else {
        sh[0].layer_params += expert_params / n; /* hybrid groups shard both alike */
    }
    px_fsdp_time ft;
    px_cost_fsdp_time_shards(hw, ctx->run, sh, n_sh, replicas, cross_rep, n, elem_of(ctx),
                             bpp.grads, (double)par->n_micro, fwd_s, bwd_s,
                             comm_sm_fraction(hw), &ft);
    *total = ft.total_s;
    *exposed = ft.exposed_s;
    *bytes = ft.bytes;
}
