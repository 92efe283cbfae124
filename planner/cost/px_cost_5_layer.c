/* px_cost_5_layer.c — the cost model's layer times (planner/cost/README.md):
 * one layer's seconds by part (GEMMs, attention core, element-wise passes,
 * TP / EP / CP communication) from its shape and the kernel and collective
 * times of the profiles, and the head's and embedding's (docs/cost-model.md). */
#include "px_cost_5_layer.h"

#include <math.h>
#include <string.h>

#include "px_attn_eff.h"
#include "px_blocking.h"
#include "px_cost_1_layout.h"
#include "px_cost_2_ops.h"
#include "px_cost_4_memory.h"
#include "px_cost_cp.h"
#include "px_cost_lora.h"
#include "px_cost_moe.h"
#include "px_cost_offload.h"
#include "px_cost_precision.h"
#include "px_fp8_accum.h"
#include "px_grad_accum.h"
#include "px_sliding.h"

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

/* A GEMM's shape: m tokens, n outputs, k inputs. */
typedef struct {
    double m, n, k;
} gemm_shape;

/* The attention's projections in forward order, the output projection
 * last: MLA's q down / up (or q), kv down and kv up; else q, k and v, as one
 * GEMM where the layer runs them fused (fused_qkv) or as torchtitan's three
 * nn.Linear modules.  Returns the count (at most 5). */
static int attn_projections(const px_model *m, const px_act_shape *sh, const layer_dims *d,
                            bool fused_qkv, gemm_shape out[5])
{
    double T = d->T, h = d->h, a_t = d->a_t, kv_t = d->kv_t;
    int n = 0;
    if (m->attn == PX_ATTN_MLA) {
        double rope = (double)m->qk_rope_head_dim, nope = sh->dq - rope;
        if (m->q_lora_rank > 0) {
            out[n++] = (gemm_shape){T, (double)m->q_lora_rank, h};
            out[n++] = (gemm_shape){T, a_t * sh->dq, (double)m->q_lora_rank};
        } else {
            out[n++] = (gemm_shape){T, a_t * sh->dq, h};
        }
        out[n++] = (gemm_shape){T, (double)m->kv_lora_rank + rope, h};
        out[n++] = (gemm_shape){T, a_t * (nope + sh->dv), (double)m->kv_lora_rank};
    } else if (fused_qkv) {
        out[n++] = (gemm_shape){T, a_t * sh->dq + kv_t * (sh->dq + sh->dv), h};
    } else {
        out[n++] = (gemm_shape){T, a_t * sh->dq, h};
        out[n++] = (gemm_shape){T, kv_t * sh->dq, h};
        out[n++] = (gemm_shape){T, kv_t * sh->dv, h};
    }
    out[n++] = (gemm_shape){T, h, a_t * sh->dv};
    return n;
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
    double T = d->T, a_t = d->a_t;
    double g = *pg;
    gemm_shape proj[5];
    int n = attn_projections(m, &sh, d, sh.fused_qkv, proj);
    for (int i = 0; i < n; i++) {
        if (i == n - 1)
            *g_col = g; /* the output projection is the row-parallel one */
        g += linear_s(hw, pq, proj[i].m, proj[i].n, proj[i].k, gb);
    }
    /* attention core: the FLOP convention counts the full s×s product; a
     * causal kernel does half of it */
    double attn_flops = 2.0 * T * sh.s_kv * a_t * (sh.dq + sh.dv);
    if (par->flash_attention) {
        /* sliding-window layers: the model's mean share of a causal core */
        lt->attn_fwd_s = px_time_attn_s(hw, 0.5 * attn_flops *
                                                px_sliding_causal_fraction(m, seq_of(ctx, par)));
        /* the kernel generation, head width and block length (px_attn_eff.h) */
        int gen = px_attn_kernel_version(hw, ctx->run, par->attn_kernel, sh.dv);
        lt->attn_fwd_s *= px_attn_kernel_slowdown(hw, ctx->run, par->attn_kernel, gen) /
                          px_attn_rate_rel(hw, gen, sh.dq, sh.s);
        lt->attn_bwd_s = 2.5 * lt->attn_fwd_s; /* the backward recomputes the scores */
    } else {
        attn_core_unfused(hw, &sh, T, a_t, &lt->attn_fwd_s, &lt->attn_bwd_s);
    }

    *pg = g;
}

/* Matmuls in forward order, for the op-level selective policy. */
typedef struct {
    int count;       /* matmuls seen */
    double rerun_s;  /* forward seconds of the even-numbered ones */
} mm_order;

static void mm_next(mm_order *o, const px_hw *hw, px_precision p, gemm_shape s)
{
    double b = 0.0;
    if (++o->count % 2 == 0)
        o->rerun_s += linear_s(hw, p, s.m, s.n, s.k, &b);
}

/* Forward GEMM seconds the op-level selective policy (torchtitan's
 * SelectiveAC "op", torchtitan/distributed/activation_checkpoint.py) reruns
 * in the backward: it keeps every compute op's output but every second
 * matmul's, counted in forward order over the block's nn.Linear modules
 * (wq, wk, wv or one wqkv, wo; MLA's wq_a, wq_b, wkv_a, wkv_b, wo; then w1,
 * w3, w2, or a GeLU MLP's fc1, fc2).  A MoE layer's experts and router are kept, as
 * its memory rule keeps them (px_cost_2_ops.c sac_op_layer). */
static double sac_op_rerun_gemm_s(const px_cost_ctx *ctx, const px_parallel *par,
                                  const px_act_shape *sh, const layer_dims *d)
{
    const px_hw *hw = ctx->hw;
    const px_precision pq = par->precision;
    double T = d->T, h = d->h;
    mm_order o = {0, 0.0};
    gemm_shape proj[5];
    int n = px_shape_attention(sh) ? attn_projections(ctx->model, sh, d, sh->fused_qkv, proj) : 0;
    for (int i = 0; i < n; i++)
        mm_next(&o, hw, pq, proj[i]);
    if (px_shape_dense_mlp(sh)) {
        double f_t = sh->f / d->t;
        if (sh->gated && sh->fused_gate_up) {
            mm_next(&o, hw, pq, (gemm_shape){T, 2.0 * f_t, h});
        } else {
            mm_next(&o, hw, pq, (gemm_shape){T, f_t, h});
            if (sh->gated)
                mm_next(&o, hw, pq, (gemm_shape){T, f_t, h});
        }
        mm_next(&o, hw, pq, (gemm_shape){T, h, f_t});
    }
    return o.rerun_s;
}

/* The MLP or the routed and shared experts: GEMM seconds added to *pg
 * forward and *gb backward (*g_col: the dense MLP's column-parallel GEMM's
 * forward), the elements through the activation function and the
 * token-permutation bytes added to *act_elems and *mem. */
static void layer_mlp_time(const px_cost_ctx *ctx, const px_parallel *par,
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
    if (sh.moe) {
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
        /* the gate and up projections: one GEMM of both widths, or two */
        g_col_mlp = !sh.gated || sh.fused_gate_up
                        ? linear_s(hw, pq, T, up * sh.f / t, h, gb)
                        : linear_s(hw, pq, T, sh.f / t, h, gb) +
                              linear_s(hw, pq, T, sh.f / t, h, gb);
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
    /* memory-bound operators: a norm and a residual add a sublayer (2 of
     * each in a transformer block; Gemma's sandwich norms 2 more), the activation
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
    double subs = px_shape_norms(&sh); /* sublayers: one residual add each */
    double res_f = px_cost_class_fwd_bytes(PX_MEM_RESIDUAL, subs * Th, (int)e), drop_f = drop;
    if (sh.dropout && !mem_class_measured(hw, PX_MEM_RESIDUAL)) {
        res_f = 2.0 * (3.0 * e + 1.0) * Th;
        drop_f = 0.0;
    }
    double mf = 0.0, mb = 0.0;
    mem_class_fb(hw, PX_MEM_GENERIC, mem + drop_f, mem + drop, &mf, &mb);
    /* forward bytes of a measured class from px_cost_class_fwd_bytes (what
     * calibrate divides); the backward bytes here are the datasheet's */
    /* 1.0 for a block's two norms */
    double norm_pairs = (px_shape_norms(&sh) + sh.extra_norms) / 2.0;
    if (sh.eager_norm) {
        double nf, nb;
        px_cost_eager_norm_bytes(2.0 * Th * norm_pairs, (int)e, &nf, &nb);
        mem_class_fb(hw, PX_MEM_GENERIC, nf, nb, &mf, &mb);
    } else {
        mem_class_fb(hw, PX_MEM_NORM,
                     px_cost_class_fwd_bytes(PX_MEM_NORM, 2.0 * Th * norm_pairs, (int)e),
                     6.0 * e * Th * norm_pairs, &mf, &mb);
    }
    mem_class_fb(hw, PX_MEM_RESIDUAL, res_f, 3.0 * e * subs * Th, &mf, &mb);
    px_mem_class act = sh.gated ? PX_MEM_SWIGLU : PX_MEM_GELU;
    if (act_elems <= 0.0) {
        /* no MLP: no activation function */
    } else if (sh.eager_swiglu) {
        double af, ab;
        px_cost_eager_swiglu_bytes(act_elems, (int)e, &af, &ab);
        mem_class_fb(hw, PX_MEM_GENERIC, af, ab, &mf, &mb);
    } else {
        mem_class_fb(hw, act, px_cost_class_fwd_bytes(act, act_elems, (int)e),
                     (sh.gated ? 5.0 : 3.0) * e * act_elems, &mf, &mb);
    }
    if (sh.eager_rope) {
        double rf, rb;
        px_cost_eager_rope_bytes(T * (a_t + kv_t) * sh.dq, (int)e, &rf, &rb);
        mem_class_fb(hw, PX_MEM_GENERIC, rf, rb, &mf, &mb);
    } else if (sh.rope) {
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
        lt->core_extra_s += f;
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

/* A Mamba-2 mixer (Megatron-Core's MambaMixer; Dao & Gu 2024, "Transformers
 * are SSMs"): in_proj (column-parallel, its z|x|B|C|dt outputs split over
 * TP) and out_proj (row-parallel) are linear GEMMs in the plan's precision,
 * into *pg forward and *gb backward (*g_col: in_proj's forward, the TP
 * overlap window).  The state-space-dual scan is booked as the layer's
 * sequence-mixing core (lt's attn_*): over chunks of PX_MAMBA_CHUNK tokens it
 * is four batched GEMMs (mamba_ssm's ssd_combined.py kernels) -- C·B^T a
 * group (Q x Q x state), its masked product with x a head (Q x head_dim x
 * Q), the chunk's state B^T·x (state x head_dim x Q) and the state's
 * output C·state (Q x head_dim x state) -- each batch at the profile's
 * rate for one GEMM of its shape stacked along m (one kernel over all its
 * tiles); the backward takes two GEMMs for each and reruns C·B^T and the
 * chunk states.  The element-wise work, added to *mem (forward bytes; the
 * backward moves as much): the causal convolution with its SiLU reads and
 * writes x|B|C, the scan reads in_proj's output and writes its output and
 * the gated output, the gated RMSNorm reads and writes d_inner. */
#define PX_MAMBA_CHUNK 128.0 /* Megatron-Core's mamba_chunk_size default */
static void layer_mamba_time(const px_cost_ctx *ctx, const px_parallel *par,
                             const px_act_shape *sh, const layer_dims *d, double *pg,
                             double *gb, double *g_col, double *mem, layer_time *lt)
{
    const px_hw *hw = ctx->hw;
    double t = d->t, T = d->T, h = d->h, e = d->e;
    *g_col = linear_s(hw, par->precision, T, sh->m_in / t, h, gb);
    *pg += *g_col + linear_s(hw, par->precision, T, h, sh->m_inner / t, gb);
    double Q = PX_MAMBA_CHUNK, chunks = T / Q;
    double heads = sh->m_heads / t, groups = sh->m_groups / t;
    double P = sh->m_inner / sh->m_heads, N = sh->m_bc / sh->m_groups;
    double cb = px_time_gemm_s(hw, chunks * groups * Q, Q, N);
    double state = px_time_gemm_s(hw, chunks * heads * N, P, Q);
    double out = px_time_gemm_s(hw, chunks * heads * Q, P, Q) +
                 px_time_gemm_s(hw, chunks * heads * Q, P, N);
    lt->attn_fwd_s = cb + state + out;
    lt->attn_bwd_s = 2.0 * lt->attn_fwd_s + cb + state;
    double conv = (sh->m_inner + 2.0 * sh->m_bc) / t;
    *mem += e * T * (2.0 * conv + sh->m_in / t + 4.0 * sh->m_inner / t);
}

/* Context parallelism of a Mamba mixer (Megatron-Core's
 * mamba_context_parallel.py): after in_proj, all-to-alls turn z, x, B, C
 * and dt from sequence shards into head shards of the whole sequence (B and
 * C repeated to cp groups where a rank has fewer), and one turns the scan's
 * output back; the backward mirrors them.  On the critical path. */
static void mamba_cp_time(const px_hw *hw, const px_parallel *par, const px_act_shape *sh,
                          const layer_dims *d, bool crosses, layer_time *lt)
{
    double t = d->t, c = par->cp, gl = sh->m_groups / t;
    double gp = gl < c ? c : gl, N = sh->m_bc / sh->m_groups;
    double in = d->e * d->T * (2.0 * sh->m_inner / t + 2.0 * gp * N + sh->m_heads / t);
    double outb = d->e * d->T * sh->m_inner / t;
    double one = px_time_coll_s(hw, PX_COLL_ALLTOALL, par->cp, in, crosses) +
                 px_time_coll_s(hw, PX_COLL_ALLTOALL, par->cp, outb, crosses);
    lt->cp_total_s += 2.0 * one;
    lt->cp_exposed_s += 2.0 * one;
    lt->cp_bytes += 2.0 * (px_coll_wire_bytes(PX_COLL_ALLTOALL, par->cp, in) +
                           px_coll_wire_bytes(PX_COLL_ALLTOALL, par->cp, outb));
}

/* The forward GEMM seconds a TP block's collectives can run under, per
 * block in order (the mixer's: attention or a Mamba mixer; the dense
 * MLP's): its column-parallel GEMMs (a Mamba mixer's in_proj), which read
 * the all-gathered input, and its row-parallel one, whose output is
 * reduce-scattered. */
typedef struct {
    double col[2], row[2];
} tp_windows;

/* Seconds of a collective of a seconds run under w seconds of compute: what
 * outlasts the compute, and the share f of the compute's time it takes
 * from it while both run. */
static double exposed_under(double a, double w, double f)
{
    return dmax(0.0, a - w) + f * dmin(a, w);
}

/* TP, expert TP, EP and CP communication of one layer (lt's tp_*, ep_*,
 * cp_*); win: the GEMM windows of its TP blocks. */
static void layer_comm_time(const px_cost_ctx *ctx, const px_parallel *par,
                            const px_act_shape *ps, const layer_dims *d, const crossings *x,
                            const tp_windows *win, layer_time *lt)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    const px_act_shape sh = *ps;
    double e = d->e, t = d->t, T = d->T, h = d->h, a_t = d->a_t, kv_t = d->kv_t;
    /* TP, per block (attention or a Mamba mixer, and a dense MLP; a MoE
     * layer's experts communicate through EP), as Megatron runs it.  Forward: an
     * all-reduce after the row-parallel GEMM (SP: all-gather before the
     * column-parallel GEMM, reduce-scatter after the row-parallel one), on
     * the critical path.  Backward: the column-parallel GEMM's input-gradient
     * all-reduce (SP: reduce-scatter) runs asynchronously under its
     * weight-gradient GEMM; with SP that GEMM's input, kept as a 1/t shard,
     * is all-gathered again under its input-gradient GEMM, and the
     * row-parallel GEMM's output gradient is all-gathered before it can
     * start (exposed).  A backward GEMM takes about its forward's time.
     * With tp_comm_overlap (Transformer Engine's userbuffers, torchtitan's
     * async TP) each sequence-parallel collective that was exposed runs in
     * chunks under the GEMM it feeds or follows: the forward all-gather
     * under the column-parallel GEMM, the forward reduce-scatter under the
     * row-parallel one, the backward's output-gradient all-gather under the
     * row-parallel GEMM's input gradient. */
    double msg = e * T * h;
    bool moe = sh.moe, mixer = px_shape_attention(&sh) || px_shape_mamba(&sh);
    int blocks = (mixer ? 1 : 0) + (px_shape_dense_mlp(&sh) ? 1 : 0);
    double n_tp_coll = 2.0 * blocks;
    double one = px_time_coll_s(hw, PX_COLL_ALLREDUCE, par->tp, msg, x->tp);
    double one_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, par->tp, msg, x->tp);
    double one_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, par->tp, msg, x->tp);
    bool chunked = sh.sp && par->tp_comm_overlap;
    double f = comm_sm_fraction(hw);
    for (int blk = 0; blk < blocks; blk++) {
        double w = par->tp_overlap || chunked ? win->col[blk] : 0.0;
        double fwd = one, bwd = exposed_under(one, w, f);
        if (sh.sp) {
            double w_col = chunked ? win->col[blk] : 0.0, w_row = chunked ? win->row[blk] : 0.0;
            fwd = exposed_under(one_ag, w_col, f) + exposed_under(one_rs, w_row, f);
            bwd = exposed_under(one_ag, w_row, f) + exposed_under(one_rs, w, f) +
                  exposed_under(one_ag, w, f);
        }
        if (blk == blocks - 1 && px_shape_dense_mlp(&sh)) /* the MLP's own forward */
            lt->tp_mlp_fwd_s = fwd;
        lt->tp_fwd_s += fwd;
        lt->tp_bwd_s += bwd;
        lt->tp_fwd_total_s += sh.sp ? one_ag + one_rs : one;
        lt->tp_total_s += sh.sp ? 3.0 * one_ag + 2.0 * one_rs : 2.0 * one;
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
        lt->tp_total_s += 2.0 * et;
        lt->tp_fwd_total_s += et;
        lt->tp_bytes += 2.0 * px_coll_wire_bytes(PX_COLL_ALLREDUCE, par->etp, emsg);
        lt->tp_rc_s += et;
        /* EP: dispatch + combine all-to-all, forward and backward, of this
         * GPU's (sequence-parallel) share of the routed tokens */
        double amsg = e * (T / t) * h * sh.top_k;
        bool outer = ctx->run && ctx->run->pp_outermost;
        int in_node = ep_ranks_in_node(hw, par, outer, x->ep);
        double a2a = par->moe_dispatcher == PX_MOE_ALLTOALL
                         ? px_moe_a2a_time_s(hw, par->ep, amsg, in_node, x->ep)
                         : px_moe_a2a_dedup_time_s(
                               hw, par->ep, amsg, in_node, x->ep,
                               px_moe_node_share((int)sh.n_experts, (int)sh.top_k, par->ep,
                                                 in_node));
        a2a *= px_moe_imbalance(par->ep, T * sh.top_k / t);
        lt->ep_s = lt->ep_total_s = 4.0 * a2a;
        if (par->moe_a2a_overlap) /* under the other micro-batch */
            lt->ep_s = px_moe_a2a_exposed_s(lt->ep_s, lt->fwd_s - lt->experts_fwd_s,
                                            lt->bwd_s - lt->experts_bwd_s, lt->experts_fwd_s,
                                            lt->experts_bwd_s, comm_sm_fraction(hw),
                                            (long long)par->n_micro);
        lt->ep_bytes = 4.0 * px_coll_wire_bytes(PX_COLL_ALLTOALL, par->ep, amsg);
    }
    if (px_shape_mamba(&sh) && par->cp > 1)
        mamba_cp_time(hw, par, &sh, d, x->cp, lt);
    /* CP: ring p2p overlapped with the attention core, all-gather, or the
     * Ulysses all-to-all (px_cost_cp.c) */
    if (par->cp > 1 && px_shape_attention(&sh)) {
        bool repeated = ctx->run && ctx->run->cp_kv_repeated;
        double kvmsg = e * T * (repeated ? a_t : kv_t) * (sh.dq + sh.dv);
        if (m->attn == PX_ATTN_MLA)
            kvmsg = e * T * ((double)m->kv_lora_rank + (double)m->qk_rope_head_dim);
        px_cp_time cpt;
        px_cost_cp_time(hw, par->cp_comm, par->cp, kvmsg, e * T * a_t * sh.dq,
                        e * T * a_t * sh.dv, lt->attn_fwd_s, x->cp,
                        ctx->run && ctx->run->cp_allgather_overlap, &cpt);
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
double layer_dense_gpu_params(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k)
{
    return layer_local_params(ctx, par->tp, k);
}

double layer_gpu_params(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k)
{
    return layer_dense_gpu_params(ctx, par, k) +
           (px_layer_has_experts(k) ? (double)ctx->expert_params / (par->ep * par->etp) : 0.0);
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

/* Forward seconds selective recompute reruns for the modules of sh's set
 * (Megatron-Core's --recompute-modules): the attention core with its
 * element-wise work; MLA's up-projections; the norms that are modules of
 * their own (a MoE layer's pre-MLP norm, MLA's input norm: Megatron's
 * spec fuses the others into the next linear); the routed experts'
 * activation; a dense MLP's GEMMs, activation and forward TP collectives; a
 * MoE layer's router, experts, shared experts, activations, token
 * permutation and forward all-to-alls (mlp_gemm_s: the MLP's forward GEMM
 * seconds); the shared experts' GEMMs and activation.  A module's rerun
 * happens in the backward, where nothing hides it. */
static double module_rerun_s(const px_cost_ctx *ctx, const px_parallel *par,
                             const px_act_shape *sh, const layer_dims *d, double mlp_gemm_s,
                             const layer_time *lt)
{
    const px_hw *hw = ctx->hw;
    px_act_shape s = *sh; /* made for no recompute: the set as a selective layer runs it */
    s.recompute = PX_RECOMPUTE_SELECTIVE;
    double T = d->T, t = d->t, e = d->e, Th = T * d->h / d->tsp, up = s.gated ? 2.0 : 1.0;
    px_mem_class act = s.gated ? PX_MEM_SWIGLU : PX_MEM_GELU;
    double sec = 0.0, b = 0.0;
    if (px_shape_attention(&s) && px_shape_reruns(&s, PX_RCM_CORE_ATTN))
        sec += lt->attn_fwd_s + lt->core_extra_s;
    bool mla = s.q_lora > 0.0 || s.kv_lora > 0.0;
    if (mla && px_shape_reruns(&s, PX_RCM_MLA_UP_PROJ)) {
        gemm_shape proj[5];
        int n = attn_projections(ctx->model, &s, d, true, proj);
        if (s.q_lora > 0.0) /* q's up-projection follows its down-projection */
            sec += linear_s(hw, par->precision, proj[1].m, proj[1].n, proj[1].k, &b);
        sec += linear_s(hw, par->precision, proj[n - 2].m, proj[n - 2].n, proj[n - 2].k, &b);
    }
    double norms = (s.moe ? 1.0 : 0.0) + (mla ? 1.0 : 0.0);
    if (norms > 0.0 && px_shape_reruns(&s, PX_RCM_LAYERNORM))
        sec += px_time_mem_class_s(hw, PX_MEM_NORM,
                                   px_cost_class_fwd_bytes(PX_MEM_NORM, norms * Th, (int)e));
    double routed = s.moe ? T * s.top_k * s.moe_f / t : 0.0, fs = s.n_shared * s.moe_f;
    if (s.moe && px_shape_reruns(&s, PX_RCM_MOE)) {
        double perm = px_moe_permute_bytes(e, T * s.top_k * par->etp / t, par->etp,
                                           s.n_experts / par->ep,
                                           ctx->run && ctx->run->fused_moe_permute, d->h);
        sec += mlp_gemm_s + px_time_mem_class_s(hw, PX_MEM_GENERIC, perm) +
               px_time_mem_class_s(hw, act, px_cost_class_fwd_bytes(act, routed + T * fs / t,
                                                                      (int)e)) +
               0.5 * lt->ep_total_s; /* the forward's dispatch and combine */
    } else if (s.moe) {
        if (px_shape_reruns(&s, PX_RCM_MOE_ACT))
            sec += px_time_mem_class_s(hw, act, px_cost_class_fwd_bytes(act, routed, (int)e));
        if (fs > 0.0 && px_shape_reruns(&s, PX_RCM_SHARED_EXPERTS))
            sec += linear_s(hw, par->precision, T, up * fs / t, d->h, &b) +
                   linear_s(hw, par->precision, T, d->h, fs / t, &b) +
                   px_time_mem_class_s(hw, act, px_cost_class_fwd_bytes(act, T * fs / t, (int)e));
    }
    if (px_shape_dense_mlp(&s) && px_shape_reruns(&s, PX_RCM_MLP))
        sec += mlp_gemm_s +
               px_time_mem_class_s(hw, act, px_cost_class_fwd_bytes(act, T * s.f / t, (int)e)) +
               lt->tp_mlp_fwd_s;
    return sec;
}

/* One layer's seconds for one micro-batch on one GPU, by part.  The linear
 * GEMMs run in the plan's precision (the router, the attention core and the
 * LM head stay in bf16). */
void time_layer(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind kind,
                const crossings *x, layer_time *lt)
{
    memset(lt, 0, sizeof *lt);
    px_act_shape sh;
    make_shape(ctx, par, kind, PX_RECOMPUTE_NONE, &sh);
    bool moe = sh.moe;
    layer_dims d;
    layer_dims_of(par, &sh, &d);
    double g = 0.0, gb = 0.0, g_col_attn = 0.0, g_col_mlp = 0.0, act_elems = 0.0, mem = 0.0;
    if (px_shape_attention(&sh))
        layer_attention_time(ctx, par, &sh, &d, &g, &gb, &g_col_attn, lt);
    if (px_shape_mamba(&sh))
        layer_mamba_time(ctx, par, &sh, &d, &g, &gb, &g_col_attn, &mem, lt);
    double g_before_mlp = g, gb_before_mlp = gb;
    if (px_shape_dense_mlp(&sh) || sh.moe)
        layer_mlp_time(ctx, par, &sh, &d, &g, &gb, &g_col_mlp, &act_elems, &mem);
    double mlp_gemm_s = g - g_before_mlp;
    gb *= px_lora_bwd_passes(&par->finetune) / 2.0; /* LoRA: no frozen weight gradients */
    double lora_f, lora_b;
    px_lora_adapter_gemm_s(ctx->hw, par, &sh, d.T, &lora_f, &lora_b);
    g += lora_f;
    gb += lora_b;
    lt->gemm_fwd_s = g;
    layer_pointwise_time(ctx->hw, par, &sh, &d, mem, act_elems, lt);
    lt->fwd_s = lt->gemm_fwd_s + lt->attn_fwd_s + lt->mem_fwd_s;
    /* backward: the GEMMs' input and weight gradients, the attention core's
     * backward; per-tensor FP8 runs the linear ones with the split
     * accumulator on Hopper (px_fp8_accum.h; the router GEMM stays bf16) */
    double router_s = moe ? px_time_gemm_s(ctx->hw, d.T / d.tsp, sh.n_experts, d.h) : 0.0;
    double grad_acc = px_fp8_grad_gemm_factor(ctx->hw, par->precision);
    lt->bwd_s = gb + (grad_acc - 1.0) * (gb - 2.0 * router_s) + lt->attn_bwd_s + lt->mem_bwd_s;
    if (moe) { /* the experts' GEMMs; the router is the dispatch's side */
        lt->experts_fwd_s = g - g_before_mlp - router_s;
        lt->experts_bwd_s = grad_acc * (gb - gb_before_mlp - 2.0 * router_s);
    }
    double ws_f, ws_b, params = layer_gpu_params(ctx, par, kind);
    weight_stream_time(ctx, par, params, &ws_f, &ws_b);
    lt->gemm_fwd_s += ws_f;
    lt->fwd_s += ws_f;
    lt->bwd_s += ws_b;
    double trained = px_lora_trained(&par->finetune, params, px_lora_layer_gpu_params(ctx, par));
    double acc = grad_accum_time(ctx, par, trained, false);
    lt->mem_bwd_s += acc;
    lt->bwd_s += acc;
    lt->rc_s[PX_RECOMPUTE_NONE] = 0.0;
    lt->rc_s[PX_RECOMPUTE_FULL] = lt->fwd_s;

    /* the mixer's row-parallel GEMM is what its projections add past the
     * column-parallel ones; the dense MLP's, what it adds past fc1 */
    bool mixer = px_shape_attention(&sh) || px_shape_mamba(&sh);
    tp_windows win = {{mixer ? g_col_attn : g_col_mlp, g_col_mlp},
                      {mixer ? g_before_mlp - g_col_attn : mlp_gemm_s - g_col_mlp,
                       mlp_gemm_s - g_col_mlp}};
    layer_comm_time(ctx, par, &sh, &d, x, &win, lt);
    /* selective: the modules of the set (the attention core by default,
     * Korthikanti's policy; a Mamba mixer has no selective option and keeps
     * its scan), or the op-level policy's matmuls and every element-wise op */
    lt->rc_s[PX_RECOMPUTE_SELECTIVE] =
        sh.sac_op ? sac_op_rerun_gemm_s(ctx, par, &sh, &d) + lt->mem_fwd_s
                  : module_rerun_s(ctx, par, &sh, &d, mlp_gemm_s, lt);
    if (par->offload.activations)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            px_act_ops ops;
            layer_act_ops(ctx, par, kind, (px_recompute)r, &ops);
            /* the windows: a layer's forward, and its backward with its rerun */
            lt->off_s[r] = px_cost_act_offload_layer_s(ctx, ops.total, lt->fwd_s,
                                                       lt->bwd_s + lt->rc_s[r]);
        }
}

/* The multi-token-prediction modules of one micro-batch on the last stage
 * (seconds; DeepSeek-V3's MTP as Megatron-Core's multi_token_prediction.py
 * runs it): each embeds the tokens shifted by its depth, normalises them and
 * the hidden state (two norms), projects their concatenation 2h -> h
 * (column-parallel), runs one layer shaped like layer n_layers under the
 * plan's recompute, normalises its output and computes the shared LM head
 * and its loss again.  norm_s: one norm forward and backward; embed_s: the
 * lookup forward and backward; head_loss_s: the head's GEMMs and the
 * cross-entropy. */
static double mtp_time(px_cost_ctx *ctx, const px_parallel *par, double T, double norm_s,
                       double embed_s, double head_loss_s)
{
    const px_model *m = ctx->model;
    if (m->n_mtp_modules <= 0)
        return 0.0;
    double t = par->tp, h = (double)m->hidden;
    crossings x;
    find_crossings(ctx, par, &x);
    layer_time lt;
    time_layer(ctx, par, mtp_layer_kind(ctx), &x, &lt);
    px_recompute r = plan_recompute(par);
    double layer_s = lt.fwd_s + lt.bwd_s + lt.rc_s[r] + lt.tp_s +
                     (r == PX_RECOMPUTE_FULL ? lt.tp_rc_s : 0.0) + lt.ep_s + lt.cp_exposed_s;
    /* forward + 2 backward */
    double proj_s = 3.0 * px_time_gemm_s(ctx->hw, T, h / t, 2.0 * h);
    return (double)m->n_mtp_modules *
           (layer_s + proj_s + 3.0 * norm_s + embed_s + head_loss_s);
}

/* Head and embedding work of one micro-batch (seconds). */
void extras_time(px_cost_ctx *ctx, const px_parallel *par, double *first_s,
                 double *last_s)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    double e = elem_of(ctx), t = par->tp;
    double tsp = (par->sp && par->tp > 1) ? t : 1.0;
    double T = (double)par->micro_batch * (double)seq_of(ctx, par) / par->cp;
    double h = (double)m->hidden, V = (double)m->vocab;
    /* embedding: gather rows forward, scatter-add backward (fwd + bwd bytes) */
    double embed_s = px_time_mem_class_s(
        hw, PX_MEM_EMBED, px_cost_class_bytes(PX_MEM_EMBED, T * h, (int)e, false) / tsp);
    *first_s = embed_s +
               grad_accum_time(ctx, par,
                               px_lora_trained(&par->finetune, (double)ctx->pc.embedding / t, 0.0),
                               true);
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
    const px_finetune *ft = &par->finetune; /* LoRA: the head is frozen */
    double norm_s, nf, nb;
    if (eager_norm_of(ctx)) {
        px_cost_eager_norm_bytes(T * h / tsp, (int)e, &nf, &nb);
        norm_s = px_time_mem_class_s(hw, PX_MEM_GENERIC, nf + nb);
    } else {
        norm_s = px_time_mem_class_s(
            hw, PX_MEM_NORM, px_cost_class_bytes(PX_MEM_NORM, T * h, (int)e, false) / tsp);
    }
    double head_loss_s = (1.0 + px_lora_bwd_passes(ft)) * head +
                         px_time_mem_class_s(hw, PX_MEM_XENT, xent / t);
    *last_s = head_loss_s + head_ws_f + head_ws_b +
              grad_accum_time(ctx, par, px_lora_trained(ft, (double)ctx->head_params / t, 0.0),
                              false) +
              norm_s + mtp_time(ctx, par, T, norm_s, embed_s, head_loss_s);
}

double px_cost_tp_bytes_per_layer(double s, double b, double h, int t, int elem_bytes)
{
    return 4.0 * px_coll_wire_bytes(PX_COLL_ALLREDUCE, t, elem_bytes * b * s * h);
}
