/* px_cost_2_ops.c — the cost model's second step (planner/cost/README.md):
 * a layer's shape from the model and the layout, and from the shape its
 * operations' sizes: activation bytes by operator, bytes per parameter,
 * element-wise bytes by class, message sizes (docs/cost-model.md). */
#include "px_cost_2_ops.h"

#include <string.h>

#include "px_checked.h"
#include "px_hybrid.h"

void make_shape(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k,
                px_recompute rc, px_act_shape *sh)
{
    bool moe = px_layer_has_experts(k);
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
    sh->gated = px_model_mlp_gated(m);
    sh->elem_bytes = elem_of(ctx);
    /* GPT blocks train with dropout in Megatron (Korthikanti's masks); an
     * fp32 profile describes the CPU backend, which has none
     * (docs/executor.md), so neither its masks nor its passes are charged;
     * nor where the framework's models train at dropout 0 (dropout_off) */
    sh->dropout = m->block == PX_BLOCK_GPT && sh->elem_bytes != 4 &&
                  !(ctx->run && ctx->run->dropout_off);
    sh->tp = par->tp;
    sh->sp = par->sp && par->tp > 1;
    sh->sp_gathered_in = sh->sp && ctx->run && ctx->run->sp_keeps_gathered_input;
    sh->flash = par->flash_attention;
    sh->kind = k;
    sh->extra_norms = px_model_kind_norms(m, k) - px_shape_norms(sh);
    sh->recompute = rc;
    sh->rc_modules = par->recompute_modules;
    sh->sac_op = ctx->run && ctx->run->selective_op_policy;
    sh->fused_qkv = !ctx->run || ctx->run->fused_qkv;
    sh->fused_gate_up = !ctx->run || ctx->run->fused_gate_up;
    /* the llama block's norm, RoPE and gated activation as the framework
     * runs them (GPT's block has none of these in composite form) */
    sh->eager_norm = eager_norm_of(ctx);
    sh->quant_hp_input = quant_hp_input_of(ctx, par);
    sh->rope = m->block == PX_BLOCK_LLAMA && px_shape_attention(sh) && m->rope_fraction > 0.0;
    sh->eager_rope = sh->rope && ctx->run && !ctx->run->fused_rope;
    sh->eager_swiglu = sh->gated && ctx->run && !ctx->run->fused_swiglu;
    sh->moe = moe;
    if (moe) {
        sh->n_experts = (double)m->n_experts;
        sh->top_k = (double)m->top_k;
        sh->moe_f = (double)m->moe_ffn;
        sh->n_shared = (double)m->n_shared_experts;
        sh->ep = par->ep;
        sh->etp = par->etp;
    }
    if (px_shape_mamba(sh)) {
        sh->m_inner = (double)px_mamba_d_inner(m);
        sh->m_heads = (double)m->mamba_heads;
        sh->m_groups = (double)m->mamba_groups;
        sh->m_bc = (double)(m->mamba_groups * m->mamba_state);
        sh->m_in = (double)px_mamba_in_proj_width(m);
    }
}

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

/* The composite RMSNorm (torchtitan's 2024 RMSNorm, Hugging Face's
 * LlamaRMSNorm: y = w * (x.float() * rsqrt(mean(x.float()^2) + eps)).to(e)).
 * Forward, per element: cast up (read e, write 4), square (read 4, write 4),
 * mean (read 4), scale (read 4, write 4), cast down (read 4, write e), times
 * the weight (read e, write e): 28 + 4e.  Backward: the weight's product
 * (the input gradient read e, written e; the weight gradient's product read
 * 2e, written e, summed read e), the cast's (read e, write 4), the scale's
 * (input gradient read 4, written 4; the rsqrt gradient's product read 8,
 * written 4, summed read 4), the square's (read 4 and the broadcast
 * gradient, write 4, scaled read 4, write 4), the two input-gradient paths
 * summed (read 8, write 4), cast down (read 4, write e): 60 + 8e.  At e = 2
 * that is 112 bytes an element where one kernel moves 6e = 12 (NORM), the 9x
 * that pytorch/pytorch pull request 153666 measured between the unfused
 * norm and its fused CUDA kernel. */
void px_cost_eager_norm_bytes(double elems, int dtype_bytes, double *fwd, double *bwd)
{
    double e = dtype_bytes > 0 ? dtype_bytes : 2;
    *fwd = (28.0 + 4.0 * e) * elems;
    *bwd = (60.0 + 8.0 * e) * elems;
}

/* The composite RoPE of q and k (torchtitan's apply_rotary_emb: view the
 * fp32 copy as complex, multiply by the frequencies, view as real, cast
 * back).  Forward, per rotated element: cast up (read e, write 4), the
 * complex product (read 4 and the broadcast frequencies, write 4), cast
 * down (read 4, write e): 16 + 2e.  The backward runs the same three passes
 * in reverse: 16 + 2e.  Hugging Face's rotate_half form (x*cos +
 * cat(-x2, x1)*sin, five ops on e-byte tensors) moves 10e forward, the
 * same 20 bytes at e = 2. */
void px_cost_eager_rope_bytes(double elems, int dtype_bytes, double *fwd, double *bwd)
{
    double e = dtype_bytes > 0 ? dtype_bytes : 2;
    *fwd = (16.0 + 2.0 * e) * elems;
    *bwd = (16.0 + 2.0 * e) * elems;
}

/* The composite gated activation (torchtitan's FeedForward, Hugging Face's
 * LlamaMLP: act(w1 x) * (w3 x)).  Forward: the activation (read e, write
 * e), the product (read 2e, write e): 5e.  Backward: the product's two
 * gradients (each read 2e, write e), the activation's (read the gradient
 * and its input, write e): 9e.  One kernel moves 3e and 5e (SWIGLU). */
void px_cost_eager_swiglu_bytes(double elems, int dtype_bytes, double *fwd, double *bwd)
{
    double e = dtype_bytes > 0 ? dtype_bytes : 2;
    *fwd = 5.0 * e * elems;
    *bwd = 9.0 * e * elems;
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

/* The op-level selective policy (torchtitan's SelectiveAC, "op"): per
 * layer the checkpoint keeps its input and the outputs of the attention
 * kernel and of the odd-numbered matmuls in forward order (wq, wv, then w1
 * and w2 of a gated MLP; w1 alone of a GeLU one), plus every TP
 * reduce-scatter's output; everything else is rerun in the backward.  A
 * MoE layer's experts keep what the full rule keeps. */
static void sac_op_layer(const px_act_shape *sh, px_act_ops *o)
{
    px_act_shape full = *sh;
    full.recompute = PX_RECOMPUTE_NONE;
    px_act_ops all;
    px_cost_act_layer(&full, &all);
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double t = sh->tp > 0 ? sh->tp : 1;
    double tsp = sh->sp ? t : 1.0;
    double sb = sh->s * sh->b, sbh = sb * sh->h;
    memset(o, 0, sizeof *o);
    /* the checkpoint's input, and the two reduce-scatters' outputs: with
     * them (or wo's and w2's outputs at t = 1, rerun or kept) the inputs of
     * Gemma's sandwich norms, which add nothing here */
    o->norm1_in = e * sbh / tsp;
    o->norm2_in = t > 1 ? 2.0 * e * sbh / tsp : 0.0;
    /* wq, wk, wv are matmuls 1-3 (wq's and wv's outputs kept, wk's rerun),
     * or one fused wqkv, matmul 1, all kept; wo comes next, rerun either way */
    o->q = all.q;
    o->k = sh->fused_qkv ? all.k : 0.0;
    o->v = all.v;
    o->latent = all.latent;
    o->softmax_stats = sh->flash ? 4.0 * sb * sh->a / t : 0.0;
    o->softmax_out = all.softmax_out;        /* the math path's scores */
    o->proj_in = all.proj_in;                /* the attention kernel's output */
    if (sh->moe) {
        o->mlp_in = all.mlp_in;
        o->fc1_out = all.fc1_out;
        o->act_out = all.act_out;
        o->router = all.router;
        o->moe_recv = all.moe_recv;
        o->moe_gate_up = all.moe_gate_up;
        o->moe_combine = all.moe_combine;
        o->moe_meta = all.moe_meta;
        o->expert = all.expert;
    } else {
        o->fc1_out = e * sb * sh->f / t;     /* w1: matmul 5 */
        /* w2 (matmul 7 of a gated MLP): the local product, before TP's
         * reduce-scatter */
        o->act_out = sh->gated ? e * sbh : 0.0;
    }
    o->attention = o->latent + o->q + o->k + o->v + o->softmax_out + o->softmax_stats +
                   o->proj_in;
    o->mlp = o->mlp_in + o->fc1_out + o->act_out + o->router + o->expert;
    o->norm = o->norm1_in + o->norm2_in;
    o->total = o->attention + o->mlp + o->norm;
}

/* A Mamba-2 layer's saved tensors per token (Megatron-Core's MambaMixer on
 * its default path, mamba_ssm's mamba_split_conv1d_scan_combined without its
 * norm, then Megatron's gated RMSNorm and the row-parallel out_proj): the
 * in_proj GEMM's input (in_in: the pre-norm's output, as the attention's
 * QKV input), in_proj's output z|x|B|C|dt, the scan's output before the
 * gate, the gated norm's input and the out_proj's input, all split over TP,
 * and the norm's fp32 reciprocal RMS per group.  The scan's kernels rerun
 * the convolution and the chunk states in the backward. */
static double mamba_saved_bytes(const px_act_shape *sh, double in_in)
{
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double t = sh->tp > 0 ? sh->tp : 1;
    double sb = sh->s * sh->b;
    return in_in + e * sb * (sh->m_in + 3.0 * sh->m_inner) / t + 4.0 * sb * sh->m_groups / t;
}

/* The attention's saved tensors (Korthikanti's attention rows). */
static void attention_saved(const px_act_shape *sh, px_act_ops *o, double gathered)
{
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double t = sh->tp > 0 ? sh->tp : 1;
    double tsp = sh->sp ? t : 1.0;
    double sb = sh->s * sh->b, sbh = sb * sh->h;
    double a_t = sh->a / t;
    double kv_t = sh->kv >= t ? sh->kv / t : 1.0; /* kv heads are replicated when k < t */
    o->qkv_in = e * sbh / gathered;
    if (sh->q_lora > 0.0 || sh->kv_lora > 0.0)
        o->latent = e * sb * (sh->q_lora + sh->kv_lora + sh->rope_dim);
    o->q = e * sb * a_t * sh->dq;
    o->k = e * sb * kv_t * sh->dq;
    o->v = e * sb * kv_t * sh->dv;
    bool core_rerun = px_shape_reruns(sh, PX_RCM_CORE_ATTN);
    if (sh->flash) {
        /* FlashAttention keeps only the row log-sum-exp (fp32) per head;
         * selective recompute reruns the whole core, keeping nothing */
        if (!core_rerun)
            o->softmax_stats = 4.0 * sb * a_t;
    } else if (!core_rerun) {
        double scores = sb * sh->s_kv * a_t;
        o->softmax_out = e * scores;
        if (sh->dropout) {
            o->score_mask = 1.0 * scores;
            o->score_drop = e * scores;
        }
    }
    o->proj_in = e * sb * a_t * sh->dv;
    o->attn_mask = sh->dropout ? sbh / tsp : 0.0;
    bool mla = sh->q_lora > 0.0 || sh->kv_lora > 0.0;
    if (mla && px_shape_reruns(sh, PX_RCM_MLA_UP_PROJ))
        o->q = o->k = o->v = 0.0; /* freed after the core's forward, rebuilt from the latents */
    if (mla && px_shape_reruns(sh, PX_RCM_LAYERNORM))
        o->qkv_in = 0.0; /* MLA's input norm is a module of its own (Megatron's spec) */
}

/* The MLP's or the experts' saved tensors (Korthikanti's MLP rows; the
 * routed copies of a MoE layer). */
static void mlp_saved(const px_act_shape *sh, px_act_ops *o, double gathered)
{
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double t = sh->tp > 0 ? sh->tp : 1;
    double tsp = sh->sp ? t : 1.0;
    double sb = sh->s * sh->b, sbh = sb * sh->h;
    /* a MoE layer's router and dispatch read the SP shard itself */
    o->mlp_in = e * sbh / (sh->moe ? tsp : gathered);
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
        /* moe_act recompute frees the activation's output (the down
         * projection's input) and computes it again before that backward */
        double act = px_shape_reruns(sh, PX_RCM_MOE_ACT) ? 0.0 : 1.0;
        o->moe_gate_up = tok * e * (up + act) * sh->moe_f / etp;
        o->moe_combine = tm * sh->top_k * e * sh->h;
        /* routing tables, 4-byte ints / fp32: chosen expert and its gate
         * for each of the tm·k copies, and the token row and gate slot of
         * each row sent */
        o->moe_meta = 4.0 * 4.0 * tm * sh->top_k;
        o->expert = o->moe_recv + o->moe_gate_up + o->moe_combine + o->moe_meta;
        double fs = sh->n_shared * sh->moe_f;
        o->fc1_out = e * sb * up * fs / t;
        o->act_out = e * sb * fs / t;
        /* the pre-MLP norm is a module of its own in a MoE layer: layernorm
         * recompute frees its output, the router's and dispatch's input */
        if (px_shape_reruns(sh, PX_RCM_LAYERNORM))
            o->mlp_in = 0.0;
        if (px_shape_reruns(sh, PX_RCM_SHARED_EXPERTS) || px_shape_reruns(sh, PX_RCM_MOE))
            o->fc1_out = o->act_out = 0.0;
        if (px_shape_reruns(sh, PX_RCM_MOE)) { /* kept: the layer's input (mlp_in) */
            o->router = o->moe_recv = o->moe_gate_up = o->moe_combine = o->moe_meta = 0.0;
            o->expert = 0.0;
        }
    } else {
        o->fc1_out = e * sb * up * sh->f / t;
        o->act_out = e * sb * sh->f / t;
        /* a dense MLP rerun from its checkpointed input, the norm's input
         * (norm2_in: the norm is fused into fc1) */
        if (px_shape_reruns(sh, PX_RCM_MLP))
            o->mlp_in = o->mlp_mask = o->fc1_out = o->act_out = 0.0;
    }
}

void px_cost_act_layer(const px_act_shape *sh, px_act_ops *o)
{
    memset(o, 0, sizeof *o);
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double t = sh->tp > 0 ? sh->tp : 1;
    double tsp = sh->sp ? t : 1.0;           /* SP shards the pointwise region */
    double sb = sh->s * sh->b;
    double sbh = sb * sh->h;

    if (sh->recompute == PX_RECOMPUTE_FULL) {
        /* only the layer input survives the forward */
        o->norm1_in = e * sbh / tsp;
        o->norm = o->total = o->norm1_in;
        return;
    }
    if (sh->recompute == PX_RECOMPUTE_SELECTIVE && sh->sac_op && px_shape_norms(sh) == 2) {
        sac_op_layer(sh, o);
        return;
    }
    o->norm1_in = e * sbh / tsp;
    o->norm2_in = px_shape_norms(sh) == 2 ? e * sbh / tsp : 0.0;
    /* an RMSNorm's backward needs its input: for a sandwich norm the
     * branch's output after TP's reduce (SP-sharded like the others) */
    o->extra_norm_in = sh->extra_norms * e * sbh / tsp;
    /* the column-parallel linears' input: the SP shard, gathered again in
     * the backward (Megatron), or the gathered whole kept (torchtitan) */
    double gathered = sh->sp_gathered_in ? 1.0 : tsp;
    if (px_shape_mamba(sh))
        o->mamba = mamba_saved_bytes(sh, e * sbh / gathered);
    if (px_shape_attention(sh))
        attention_saved(sh, o, gathered);
    if (px_shape_dense_mlp(sh) || sh->moe)
        mlp_saved(sh, o, gathered);
    o->attention = o->qkv_in + o->latent + o->q + o->k + o->v + o->softmax_out + o->score_mask +
                   o->score_drop + o->softmax_stats + o->proj_in + o->attn_mask + o->mamba;
    o->mlp = o->mlp_in + o->fc1_out + o->act_out + o->mlp_mask + o->router + o->expert;
    o->norm = o->norm1_in + o->norm2_in + o->extra_norm_in;
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

double px_cost_pp_msg_bytes(double s, double b, double h, int t, bool sp, int elem_bytes)
{
    return elem_bytes * b * s * h / (sp && t > 1 ? t : 1);
}
