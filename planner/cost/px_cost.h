/* px_cost.h — the lecture's cost model: memory, communication, pipeline
 * bubble, compute time, MFU/HFU, time to train and goodput for one parallel
 * configuration.  Every formula is written down, with its source, in
 * docs/cost-model.md; the section names there match the comments here.
 *
 * Two levels:
 *  - formula-level functions of plain numbers (the spec's worked example uses
 *    N = 70e9 rather than an architecture), used by the golden tests;
 *  - the model-level evaluation px_cost_eval(): a px_model, a px_hw and a
 *    px_parallel in, a px_prediction (and optionally a px_cost_detail for
 *    --explain) out.  It is closed-form and allocation-free so the search can
 *    score millions of configurations a second. */
#ifndef PX_COST_H
#define PX_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "px_efficiency.h"
#include "px_error.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"

/* ------------------------------------------------------------------ */
/* Static memory (spec "Static memory")                                */

/* Bytes per parameter of the weights, gradients and optimizer state.
 * dtype_bytes 2 (bf16 mixed precision): 2, grad_fp32 ? 4 : 2, 12 (fp32 master
 * 4 + Adam 4 + 4).  dtype_bytes 4 (fp32, the CPU backend): 4, 4, 8 (the
 * weights are the master copy). */
typedef struct {
    double weights, grads, optimizer;
} px_bytes_per_param;

px_bytes_per_param px_cost_bytes_per_param(int dtype_bytes, bool grad_fp32);

/* ------------------------------------------------------------------ */
/* Element-wise operator classes (spec "Element-wise time")            */

/* The bytes the cost model charges for `elems` elements of element-wise
 * class c, forward + backward, when the profile has a measured rate for the
 * class (px_hw norm_bw ... embed_bw).  The one place these byte counts live:
 * the layer and step times (px_cost_5_layer.c, px_cost_8_step.c) multiply
 * by them and both calibrations (calibration/
 * px_calib_kernels.c, dtype 4; calibration/px_calib_cuda.c, dtype 2) divide them
 * by the measured time, so a measured rate reproduces the measured time.
 * e = dtype_bytes (the activation dtype; 0 means 2).  `elems` per class:
 *  NORM      one normalised [tokens, hidden] tensor: fwd read + write 2e,
 *            total 6e (backward 2x forward);
 *  RESIDUAL  one residual sum: fwd 2 reads + 1 write 3e, total 9e;
 *  GELU      activation outputs: fwd 2e, total 6e;
 *  SWIGLU    activation outputs [tokens, f]: fwd 3e, total 9e;
 *  ROPE      rotated q and k elements: fwd 2e, total 6e;
 *  XENT      logits [tokens, vocab shard]: 4 fp32 passes, 16 whatever e;
 *  ADAMW     parameters: 2 x optimizer state + gradient (+ the low-precision
 *            weight copy when e < 4) of px_cost_bytes_per_param: 20 (fp32),
 *            30 (bf16, fp32 grads), 28 (bf16 grads);
 *  EMBED     gathered [tokens, hidden] elements: gather + scatter-add, 6e;
 *  GENERIC   never measured: a read + write per pass, 6e.
 * (The datasheet fallbacks in px_cost_5_layer.c and px_cost_8_step.c charge some classes more: Megatron's
 * unfused cross-entropy, its fused bias-dropout-add, the extra passes around
 * Adam; those are not what the executor's kernels do and are not measured.) */
double px_cost_class_bytes(px_mem_class c, double elems, int dtype_bytes, bool grad_fp32);

/* The forward share of px_cost_class_bytes for the per-layer classes
 * (NORM, RESIDUAL, GELU, SWIGLU, ROPE, GENERIC): a third of the total,
 * the backward being charged twice the forward.  0 for XENT, ADAMW and
 * EMBED, which are charged as one forward + backward total. */
double px_cost_class_fwd_bytes(px_mem_class c, double elems, int dtype_bytes);

/* An RMSNorm or a RoPE run as PyTorch's composite tensor ops in eager mode
 * (px_fw_runtime.fused_norm / fused_rope false): the HBM bytes of every op
 * forward and of autograd's backward over them, per normalised (RMSNorm:
 * tokens x hidden) or rotated (RoPE: q and k) element, activations of e
 * bytes, the arithmetic in fp32; the gated MLP's activation times its up
 * projection (SwiGLU, GeGLU) per element of [tokens, f].  One kernel does it
 * in px_cost_class_bytes' NORM, ROPE and SWIGLU bytes. */
void px_cost_eager_norm_bytes(double elems, int dtype_bytes, double *fwd, double *bwd);
void px_cost_eager_rope_bytes(double elems, int dtype_bytes, double *fwd, double *bwd);
void px_cost_eager_swiglu_bytes(double elems, int dtype_bytes, double *fwd, double *bwd);

/* Weights, grads and optimizer bytes per GPU for n_params split over tp·pp
 * and sharded over dp by ZeRO stage `zero` (1: optimizer /dp, 2: + grads,
 * 3: + weights).  Fills weights/grads/optimizer/total of *out (the rest 0). */
void px_cost_static_formula(double n_params, int tp, int pp, int dp, int zero,
                            int dtype_bytes, bool grad_fp32, px_memory *out);

/* ------------------------------------------------------------------ */
/* Activations per operator (spec "Activation memory per transformer   */
/* layer"; Korthikanti et al. 2022, Table 2 and section 4)             */

/* The shape of one transformer layer as its activations see it.  s is the
 * sequence length held by this GPU (s/cp); s_kv the keys each query attends
 * to (the full s: ring attention visits all of them). */
typedef struct {
    double s, s_kv, b;
    double h;              /* hidden */
    double a, kv;          /* query heads, key/value heads */
    double dq, dv;         /* per-head q·k width and v width */
    double f;              /* MLP inner size (dense) */
    bool gated;            /* SwiGLU (gate and up outputs) vs GeLU */
    bool dropout;          /* GPT-style dropout masks (Llama: none) */
    int elem_bytes;        /* activation dtype: 2 bf16, 4 fp32 */
    int tp;                /* t */
    bool sp;               /* sequence parallel */
    bool sp_gathered_in;   /* with sp: the QKV and dense-MLP inputs are kept all-gathered
                            * (whole sequence), as DTensor's redistribute to Replicate
                            * leaves them (px_fw_runtime.sp_keeps_gathered_input) */
    bool flash;            /* FlashAttention: no s×s matrix, softmax stats kept */
    int extra_norms;       /* norms beyond the two of a layer (Gemma's sandwich norms on
                            * the attention's and the MLP's output: 2) */
    px_recompute recompute;
    unsigned rc_modules;   /* selective: bits of px_rc_module rerun (0 reads as
                            * PX_RCM_DEFAULT, the attention core) */
    bool sac_op;           /* selective recompute is the op-level policy (every other
                            * matmul's output and the attention's kept, the rest rerun:
                            * px_fw_runtime.selective_op_policy), not the attention core */
    bool fused_qkv;        /* q, k and v come out of one linear (px_fw_runtime.fused_qkv):
                            * one GEMM, one matmul in the op-level policy's count */
    bool fused_gate_up;    /* a gated MLP's gate and up projections as one linear
                            * (px_fw_runtime.fused_gate_up) */
    bool quant_hp_input;   /* low precision: the linears keep their activation-dtype input
                            * and quantise it again in the backward
                            * (px_fw_runtime.quant_keeps_hp_input: quant_hp_input_of) */
    bool eager_norm;       /* the RMSNorms run as PyTorch's composite ops
                            * (px_cost_eager_norm_bytes), not one kernel */
    bool eager_rope;       /* RoPE runs as PyTorch's composite ops (px_cost_eager_rope_bytes) */
    bool eager_swiglu;     /* the gated activation and product run as PyTorch's composite
                            * ops (px_cost_eager_swiglu_bytes) */
    /* MLA: stored latents (0 for standard attention) */
    double q_lora, kv_lora, rope_dim;
    /* What the layer computes (px_layer_kind): which of attention, a dense
     * MLP, routed experts and a Mamba-2 mixer it has, and its norms */
    px_layer_kind kind;    /* (0, a zeroed shape: a transformer block) */
    bool rope;             /* the attention rotates q and k (the llama block, but
                            * where rope_fraction is 0: Nemotron-H) */
    /* MoE layer: routed experts replace the dense MLP */
    bool moe;
    double n_experts, top_k, moe_f, n_shared; /* n_shared experts of size moe_f */
    int ep, etp;
    /* Mamba-2 mixer (px_hybrid.h): d_inner, its heads, groups x state (the
     * width of B and of C), in_proj's outputs */
    double m_inner, m_heads, m_groups, m_bc, m_in;
} px_act_shape;

/* Bytes stored for backward by one layer for one micro-batch, per operator.
 * Korthikanti's decomposition: attention = qkv_in + q + k + v + scores
 * (softmax_out + score_mask + score_drop) + proj_in + attn_mask; MLP = mlp_in
 * + fc1_out + act_out + mlp_mask; norms = norm1_in + norm2_in + extra_norm_in. */
typedef struct {
    double norm1_in, norm2_in;
    double extra_norm_in;       /* the extra norms' inputs (the branches' outputs) */
    double qkv_in, q, k, v, latent;
    double softmax_out, score_mask, score_drop, softmax_stats;
    double proj_in, attn_mask;
    double mlp_in, fc1_out, act_out, mlp_mask;
    double mamba;               /* a Mamba-2 mixer's saved tensors (px_cost_2_ops.c) */
    double router, expert;      /* MoE: router probabilities, routed-expert tensors (the sum
                                 * of the four below) */
    double moe_recv, moe_gate_up, moe_combine, moe_meta;
    double attention, mlp, norm;/* the three parts (a Mamba mixer's counts as attention:
                                 * the sequence mixer) */
    double total;
} px_act_ops;

void px_cost_act_layer(const px_act_shape *sh, px_act_ops *out);

/* Whether selective recompute under sh reruns module mod (its
 * --recompute-modules set; none outside selective recompute). */
static inline bool px_shape_reruns(const px_act_shape *sh, px_rc_module mod)
{
    unsigned set = sh->rc_modules ? sh->rc_modules : PX_RCM_DEFAULT;
    return sh->recompute == PX_RECOMPUTE_SELECTIVE && (set & (1u << mod)) != 0;
}

/* What a shape's layer has (its kind; moe: experts in place of the dense
 * MLP), and its pre-norms, one a sublayer. */
static inline bool px_shape_attention(const px_act_shape *sh)
{
    return px_layer_has_attention(sh->kind);
}
static inline bool px_shape_dense_mlp(const px_act_shape *sh)
{
    return px_layer_has_dense_mlp(sh->kind) && !sh->moe;
}
static inline bool px_shape_mamba(const px_act_shape *sh)
{
    return sh->kind == PX_LAYER_MAMBA;
}
static inline int px_shape_norms(const px_act_shape *sh)
{
    return px_layer_sublayers(sh->kind);
}

/* Micro-batches whose activations stage `stage` (0-based) of p holds at its
 * peak, in units of "one micro-batch through the stage's layers" (all v
 * chunks): GPipe m; 1F1B and ZB-H1 min(p−i, m); interleaved the Megatron
 * warm-up count (2(p−i−1) + (v−1)p + 1 chunks, ≤ m·v) / v; ZB-H2 min(2p−1, m)
 * on every stage. */
double px_cost_inflight(px_schedule sched, int p, int v, int64_t m, int stage);

/* Zero-bubble schedules (ZB-H1, ZB-H2) split each backward into B (input
 * gradients) and W (weight gradients): of the px_cost_inflight micro-batches
 * held at the peak, how many are past B and keep the output gradients W
 * needs (docs/cost-model.md, "Zero-bubble gradients").  ZB-H1 1 (W right
 * after B; v chunks: 1/v); ZB-H2 max(1, min(m − 2(p−1−i), p + i)); other
 * schedules 0.  The executor's orders reach these counts
 * (tests/unit/test_schedule.c). */
double px_cost_inflight_bw(px_schedule sched, int p, int v, int64_t m, int stage);

/* Activation bytes of one layer for the lecture's GPT block (no dropout
 * distinction: Korthikanti's table), a formula-level helper for the tests:
 * sbh(34 + 5as/h) etc. per the six rows.  row: 0 none, 1 tp, 2 tp+sp,
 * 3 tp+selective, 4 tp+sp+selective, 5 full recompute (sp: /t). */
double px_cost_korthikanti_row(int row, double s, double b, double h, double a, int t, bool sp);

/* K and V of one layer: 2 · elem · b · s · h · kv/a. */
double px_cost_kv_bytes(double s, double b, double h, double a, double kv, int elem_bytes);

/* ------------------------------------------------------------------ */
/* Bubble (spec "Pipeline bubble")                                     */

/* Idle time as a fraction of the ideal (bubble-free) time: (p−1)/m GPipe,
 * 1F1B; (p−1)/(v·m) interleaved; (p−1)/(3m) ZB-H1 (when m >= p, else as
 * 1F1B); 0 ZB-H2 (when m >= 2p−1, else as ZB-H1). */
double px_cost_bubble_over_ideal(px_schedule sched, int p, int v, int64_t m);

/* The same as a fraction of the step: x/(1+x); (p−1)/(m+p−1) for 1F1B. */
double px_cost_bubble_fraction(px_schedule sched, int p, int v, int64_t m);

/* ------------------------------------------------------------------ */
/* Communication volumes (spec "Communication"), bytes one GPU sends    */

/* TP per layer per micro-batch: 4 all-reduces (2 fwd, 2 bwd) of
 * elem·b·s·h, ring factor 2(t−1)/t; SP has the same volume. */
double px_cost_tp_bytes_per_layer(double s, double b, double h, int t, int elem_bytes);

/* PP message at a stage boundary per micro-batch, one direction. */
double px_cost_pp_msg_bytes(double s, double b, double h, int t, bool sp, int elem_bytes);

/* DP break-even: tokens per GPU above which gradient traffic
 * (comm_bytes_per_param · N / bw) is shorter than compute (6·N·tokens / peak). */
double px_cost_dp_breakeven_tokens(double peak_flops, double bw, double comm_bytes_per_param);

/* ------------------------------------------------------------------ */
/* Time to train and goodput (spec "Compute and MFU", "Goodput")       */

/* Days for 6·N·D FLOPs on G GPUs of peak at mfu. */
double px_cost_days_formula(double n_params, double tokens, int gpus, double peak_flops,
                            double mfu);

typedef struct {
    double job_mtbf_s, ckpt_write_s, interval_s, lost_fraction;
} px_goodput;

/* MTBF_job = MTBF_gpu/G; τ = sqrt(2 δ MTBF_job); lost = δ/τ + τ/(2 MTBF_job)
 * + R/MTBF_job (capped at 1). */
px_goodput px_cost_goodput(double gpu_mtbf_hours, int gpus, double ckpt_bytes_per_gpu,
                           double ckpt_write_bw, double restart_s);

/* ------------------------------------------------------------------ */
/* Model-level evaluation                                              */

/* px_cost_ctx.ops_memo (below). */
typedef struct {
    bool valid;
    int tp, cp, ep, etp;
    bool sp, flash;
    int64_t micro_batch, seq_len;
    px_precision precision;
    px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
} px_cost_ops_memo;

/* Layers of each kind (px_layer_kind) and recompute choice on one stage,
 * and of them those whose activations are offloaded to the host (at most
 * PX_MAX_LAYERS: 32 bits, which keeps the stage loops' copies small). */
typedef struct {
    int32_t n[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    int32_t off[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    int32_t kind[PX_LAYER_KINDS];
} px_cost_stage_layers;

/* What the search computes once per (model, hardware), and the evaluation's
 * workspace: a context serves one thread at a time.  Large (about 200 KB):
 * callers that keep several allocate them. */
typedef struct {
    const px_model *model;
    const px_hw *hw;
    px_param_count pc;
    int64_t n_moe_layers;        /* layers with routed experts */
    int64_t n_kind[PX_LAYER_KINDS];          /* layers of each kind */
    int n_kinds;                             /* kinds the model has: */
    int kinds[PX_LAYER_KINDS];               /* those kinds, in px_layer_kind order */
    int32_t kind_prefix[PX_LAYER_KINDS][PX_MAX_LAYERS + 1]; /* of kind k among the first i */
    int64_t kind_params[PX_LAYER_KINDS];     /* one layer of each kind, all experts, elements */
    int64_t kind_norm_params[PX_LAYER_KINDS];/* its norms: whole on every TP rank */
    int64_t expert_params;       /* routed experts of one MoE layer */
    int64_t head_params;         /* LM head (V·h, also when tied and pp > 1) */
    int64_t router_params;       /* one MoE layer's router: whole on every TP rank */
    int64_t flops_seq_len;       /* the sequence length the two below are for */
    double model_flops_per_token;
    double model_flops_causal_per_token; /* attention as executed (mfu_causal) */
    double hw_flops_per_token[PX_RECOMPUTE_COUNT];
    /* small cache of "does this group leave a node" for expert groups */
    struct {
        int key[6];
        bool valid;
        bool ep_cross, etp_cross, edp_cross;
    } xcache[64];
    /* one layer's activations of each kind under every recompute choice,
     * for the last (tp, cp, sp, flash, micro-batch, sequence, ep, etp): the
     * search scores ZeRO stages, recompute choices and schedules (up to 48
     * configurations) on one such shape */
    px_cost_ops_memo ops_memo;
    /* How the framework runs the plan (px_framework.h); NULL: the planner's
     * defaults.  Read by the FSDP terms (px_cost_fsdp.h) and the fused
     * cross-entropy buffers. */
    const struct px_fw_runtime *run;
    /* Workspace of px_cost_eval, px_cost_memory, px_cost_stages and
     * px_cost_stage_memory: the layers on each pipeline stage (stage_counts),
     * overwritten by every call. */
    px_cost_stage_layers stage_ws[PX_MAX_CHUNKS];
} px_cost_ctx;

px_status px_cost_ctx_init(px_cost_ctx *ctx, const px_model *m, const px_hw *hw,
                           px_error *err);

/* Everything --explain prints, per GPU on the worst stage. */
typedef struct {
    /* memory: activations of the worst stage by part (all in-flight
     * micro-batches), and the buffers */
    double act_attention, act_mlp, act_norm;
    double buf_embedding, buf_logits, buf_loss, buf_final_norm, buf_recompute, buf_p2p;
    double layer_act_bytes;      /* one layer, one micro-batch (the first layer's kind) */
    double inflight;             /* micro-batches in flight on the worst stage */
    double inflight_bw;          /* of those, past B and waiting for W (zero-bubble) */
    double buf_zb_grads;         /* their kept output gradients (+ rebuilt full-recompute sets) */
    double buf_offload;          /* an offloaded layer's activations, back for its backward */
    double buf_mtp;              /* the MTP modules' activations and saved losses (last stage) */
    int64_t params_per_gpu;      /* elements, worst stage, before ZeRO sharding */
    /* time: per step, totals vs exposed */
    double tp_total_s, tp_exposed_s;
    double cp_total_s, cp_exposed_s;
    double ep_total_s, ep_exposed_s;
    double pp_total_s, pp_exposed_s;
    double dp_total_s, dp_exposed_s;
    double compute_fwd_s, compute_bwd_s, compute_recompute_s; /* per step */
    double gemm_s, attn_s, membound_s;                         /* per step */
    double stage_mb_s;           /* slowest stage, one micro-batch (fwd+bwd+comm) */
    double bubble_over_ideal;
    bool tp_crosses, cp_crosses, ep_crosses, pp_crosses, dp_crosses;
    /* bytes one GPU sends per step, by kind; TP per layer per micro-batch */
    double tp_bytes_per_step, cp_bytes_per_step, ep_bytes_per_step, pp_bytes_per_step,
        dp_bytes_per_step, tp_bytes_per_layer;
} px_cost_detail;

/* px_plan_check (px_plan_check.h) under the planner's capability set
 * (px_caps_parallax): the configurations the cost model can price. */
px_status px_cost_check(const px_model *m, const px_parallel *par, px_error *err);

/* Scores one configuration.  par->seq_len 0 means the model's.  train_tokens
 * (0: skip) fills the time-to-train and goodput fields of *pred; gpu_mtbf_hours
 * 0 means the profile's.  detail may be NULL.  Does not call px_cost_check:
 * the search validates as it enumerates; call it first otherwise. */
px_status px_cost_eval(px_cost_ctx *ctx, const px_parallel *par, double train_tokens,
                       double gpu_mtbf_hours, px_prediction *pred, px_cost_detail *detail,
                       px_error *err);

/* The search's variant: computes the memory first and, when the worst
 * stage's total exceeds mem_limit, returns PX_ERR_INFEASIBLE with only
 * pred->mem filled (err untouched); otherwise as px_cost_eval. */
px_status px_cost_eval_if_fits(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                               double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                               px_error *err);

/* Convenience: ctx init + check + eval (no time to train). */
px_status px_cost_evaluate(const px_model *m, const px_hw *hw, const px_parallel *par,
                           px_prediction *pred, px_error *err);

/* Memory only (cheap): fills pred->mem.  Used to prune before timing. */
void px_cost_memory(px_cost_ctx *ctx, const px_parallel *par, px_memory *mem,
                    px_cost_detail *detail);

/* Per-layer costs for a configuration, for the stage partitioner
 * (px_partition): what layer `layer` adds to its stage. */
typedef struct {
    int64_t params;          /* elements on one GPU of the stage (after tp/ep sharding) */
    double static_bytes;     /* weights + grads + optimizer under the ZeRO stage */
    double act_bytes[PX_RECOMPUTE_COUNT]; /* stored per micro-batch, by recompute mode */
    double fwd_s, bwd_s;     /* one micro-batch, compute + exposed TP/CP/EP comm */
    double recompute_s[PX_RECOMPUTE_COUNT]; /* extra time per micro-batch */
    bool offloaded;          /* its activations are stored on the host, not the device */
    double offload_s[PX_RECOMPUTE_COUNT];   /* activation copies the compute waits for, per
                                             * micro-batch (0 unless offloaded) */
} px_layer_cost;

void px_cost_layer(px_cost_ctx *ctx, const px_parallel *par, int64_t layer, px_layer_cost *out);

/* Fixed per-stage extras: embedding on the first stage, LM head + loss on
 * the last (static bytes, time per micro-batch; their activation buffers:
 * px_cost_stage_end_buffers). */
typedef struct {
    double first_static_bytes, first_s;
    double last_static_bytes, last_s;
} px_stage_extras;

void px_cost_stage_extras(px_cost_ctx *ctx, const px_parallel *par, px_stage_extras *out);

/* The split of n_layers over `chunks` pipeline chunks (model order) when a
 * configuration records none (par->n_chunks == 0): n_layers / chunks each,
 * and when that leaves a remainder r, one more layer to each of the r middle
 * chunks (c in [(chunks - r) / 2, (chunks - r) / 2 + r)), away from the first
 * chunk (embedding) and the last (LM head and loss).  The same rule as
 * px_partition_uniform.  layers_per_chunk needs `chunks` entries; chunks must
 * be 1..n_layers. */
void px_cost_default_split(int64_t n_layers, int chunks, int *layers_per_chunk);

/* When par records no split and pp * vpp does not divide the model's layers,
 * writes the default split into par->n_chunks / layers_per_chunk, so that a
 * plan file runs exactly what was costed (the executor's own default for an
 * unrecorded uneven split differs).  Returns true when it wrote. */
bool px_cost_record_split(const px_model *m, px_parallel *par);

/* Per-stage numbers of a configuration, for tests and --explain: the time of
 * one micro-batch through stage s (forward + backward + recompute + exposed
 * TP/CP/EP communication + embedding / head, as the step's slowest-stage
 * term) and the stage's memory per GPU (the same total as pred->mem for the
 * worst stage).  Arrays need par->pp entries; either may be NULL. */
void px_cost_stages(px_cost_ctx *ctx, const px_parallel *par, double *stage_mb_s,
                    int64_t *stage_mem_bytes);

/* The buffers of memory_of_stage that do not depend on a stage's layers, for
 * the partitioner: the embedding's (stage 0), the final norm's, logits' and
 * loss's (stage p-1), and what every stage holds (p2p, ZeRO-3 gathers). */
void px_cost_stage_end_buffers(px_cost_ctx *ctx, const px_parallel *par, double *first,
                               double *last, double *every);

/* The memory of every pipeline stage by part (per GPU; the parts sum to
 * total, and the worst stage's equals pred->mem): per_stage needs par->pp
 * entries. */
void px_cost_stage_memory(px_cost_ctx *ctx, const px_parallel *par, px_memory *per_stage);

#endif
