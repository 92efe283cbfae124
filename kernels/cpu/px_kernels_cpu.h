/* px_kernels_cpu.h — the fp32 CPU kernels of one transformer training step.
 *
 * These are production code (the CPU backend of `execute`) and the reference
 * twins of the CUDA kernels: every px_cpu_<op>_fwd / _bwd here has a
 * px_cuda_<op>_fwd / _bwd with the same argument order (device pointers).
 *
 * Conventions (they hold for every kernel below):
 * - Row-major, fp32.  Activations are [T, C] with T = S * B tokens in
 *   sequence-major order (token row = s * B + b, Megatron's [s, b, h]), so a
 *   sequence-parallel shard is a contiguous block of rows.
 * - Linear weights are stored [N, K] (out features x in features), out = in W^T,
 *   so a column-parallel shard is a contiguous block of rows of the full W.
 * - Outputs come first, then inputs, then sizes.  Shapes are in the comments.
 * - Backward kernels ACCUMULATE (+=) into parameter gradients (gradient
 *   accumulation over micro-batches), and into `dinp` of the norms, the
 *   residual and the position embedding (the residual stream adds up
 *   gradients from two paths).  Every other input gradient is OVERWRITTEN;
 *   each kernel says which.  A gradient pointer documented as optional may be
 *   NULL to skip that product (zero-bubble schedules split B and W that way).
 * - No kernel allocates more than O(S) scratch, prints or fails: sizes are
 *   validated by the caller (the engine). */
#ifndef PX_KERNELS_CPU_H
#define PX_KERNELS_CPU_H

#include <stdint.h>
#include "px_rope.h"
#include "px_router.h"

/* ---- embedding (vocabulary-parallel) --------------------------------------
 * This shard holds rows [v0, v1) of the full [V, C] table.  Tokens outside the
 * range give zero rows; the caller sums the shards (all-reduce, or
 * reduce-scatter under sequence parallelism). */
void px_cpu_embedding_fwd(float *out,            /* [T, C] overwritten */
                          const int32_t *tokens, /* [T] */
                          const float *table,    /* [v1 - v0, C] */
                          int64_t T, int64_t C, int64_t v0, int64_t v1);
void px_cpu_embedding_bwd(float *dtable,         /* [v1 - v0, C] += */
                          const float *dout,     /* [T, C] */
                          const int32_t *tokens, /* [T] */
                          int64_t T, int64_t C, int64_t v0, int64_t v1);

/* ---- learned positions (GPT) -----------------------------------------------
 * x[s, b, :] += pos[pos0 + s, :] for the S sequence rows held here (pos0 is the
 * first position of a sequence shard). */
void px_cpu_positions_fwd(float *x,         /* [S, B, C] in place */
                          const float *pos, /* [max_positions, C] */
                          int64_t S, int64_t B, int64_t C, int64_t pos0);
void px_cpu_positions_bwd(float *dpos,       /* [max_positions, C] += */
                          const float *dout, /* [S, B, C] */
                          int64_t S, int64_t B, int64_t C, int64_t pos0);

/* ---- RMSNorm: out = inp / rms(inp) * weight -------------------------------- */
void px_cpu_rmsnorm_fwd(float *out,          /* [T, C] */
                        float *rstd,         /* [T] saved for backward */
                        const float *inp,    /* [T, C] */
                        const float *weight, /* [C] */
                        int64_t T, int64_t C, float eps);
void px_cpu_rmsnorm_bwd(float *dinp,         /* [T, C] += */
                        float *dweight,      /* [C] += */
                        const float *dout,   /* [T, C] */
                        const float *inp,    /* [T, C] */
                        const float *weight, /* [C] */
                        const float *rstd,   /* [T] */
                        int64_t T, int64_t C);

/* ---- LayerNorm: out = (inp - mean) * rstd * weight + bias ----------------- */
void px_cpu_layernorm_fwd(float *out,          /* [T, C] */
                          float *mean,         /* [T] saved */
                          float *rstd,         /* [T] saved */
                          const float *inp,    /* [T, C] */
                          const float *weight, /* [C] */
                          const float *bias,   /* [C] */
                          int64_t T, int64_t C, float eps);
void px_cpu_layernorm_bwd(float *dinp,         /* [T, C] += */
                          float *dweight,      /* [C] += */
                          float *dbias,        /* [C] += */
                          const float *dout,   /* [T, C] */
                          const float *inp,    /* [T, C] */
                          const float *weight, /* [C] */
                          const float *mean,   /* [T] */
                          const float *rstd,   /* [T] */
                          int64_t T, int64_t C);

/* ---- linear: out = inp W^T (+ bias) ---------------------------------------
 * GEMMs go through BLAS (cblas_sgemm).  A column-parallel shard passes its
 * [N/t, K] rows; a row-parallel shard its [N, K/t] columns (then the caller
 * sums the partial outputs). */
void px_cpu_matmul_fwd(float *out,          /* [T, N] overwritten */
                       const float *inp,    /* [T, K] */
                       const float *weight, /* [N, K] */
                       const float *bias,   /* [N] or NULL */
                       int64_t T, int64_t K, int64_t N);
void px_cpu_matmul_bwd(float *dinp,         /* [T, K] overwritten; optional */
                       float *dweight,      /* [N, K] +=; optional */
                       float *dbias,        /* [N] +=; optional */
                       const float *dout,   /* [T, N] */
                       const float *inp,    /* [T, K] */
                       const float *weight, /* [N, K] */
                       int64_t T, int64_t K, int64_t N);

/* ---- bias and residual ------------------------------------------------------ */
void px_cpu_bias_add_fwd(float *x,          /* [T, N] in place */
                         const float *bias, /* [N] */
                         int64_t T, int64_t N);
void px_cpu_bias_add_bwd(float *dbias,      /* [N] += */
                         const float *dout, /* [T, N] */
                         int64_t T, int64_t N);
void px_cpu_residual_fwd(float *out,     /* [n] = a + b; may alias a or b */
                         const float *a, /* [n] */
                         const float *b, /* [n] */
                         int64_t n);
void px_cpu_residual_bwd(float *da,        /* [n] += (optional) */
                         float *db,        /* [n] += (optional) */
                         const float *dout,/* [n] */
                         int64_t n);

/* ---- rotary position embedding (Llama) --------------------------------------
 * qkv rows are [q heads (NH) | k heads (NKV) | v heads (NKV)] x HD; RoPE rotates
 * the q and k heads in place, the pairs and frequencies of px_rope.h (theta,
 * rope_scaling, rotate-half or interleaved), position of row s * B + b is
 * pos0 + s.  Backward applies the inverse rotation to the gradient in place. */
void px_cpu_rope_fwd(float *qkv, /* [S, B, (NH + 2 NKV) HD] in place */
                     int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                     int64_t pos0, const px_rope *rope);
void px_cpu_rope_bwd(float *dqkv, /* [S, B, (NH + 2 NKV) HD] in place */
                     int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                     int64_t pos0, const px_rope *rope);

/* ---- causal attention core (GQA: query head h reads kv head h / (NH/NKV)) ----
 * Memory-aware: the forward keeps only the log-sum-exp of each score row
 * (lse); the backward recomputes the probabilities from q, k and lse, as
 * FlashAttention does, unless the forward stored them in `probs` (the
 * non-FlashAttention path; probs NULL means don't store / recompute).
 * Tiled: every product is a cblas_sgemm on query x key tiles, with 16 KiB of
 * stack scratch per call (two tiles) and no allocation. */
void px_cpu_attention_fwd(float *out,       /* [S, B, NH HD] overwritten */
                          float *lse,       /* [B, NH, S] overwritten */
                          float *probs,     /* [B, NH, S, S] or NULL */
                          const float *qkv, /* [S, B, (NH + 2 NKV) HD] */
                          int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD);
void px_cpu_attention_bwd(float *dqkv,        /* [S, B, (NH + 2 NKV) HD] overwritten */
                          const float *dout,  /* [S, B, NH HD] */
                          const float *out,   /* [S, B, NH HD] */
                          const float *lse,   /* [B, NH, S] */
                          const float *probs, /* [B, NH, S, S] or NULL (recompute) */
                          const float *qkv,   /* [S, B, (NH + 2 NKV) HD] */
                          int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD);

/* ---- context-parallel attention core ---------------------------------------
 * This rank's Sq query rows (global positions qpos) against the keys and
 * values of the whole sequence, kv rows in position order (gathered over the
 * CP group); causal on global positions (key j visible to query i when
 * j <= qpos[i]).  Same lse-only memory as px_cpu_attention_fwd.  Backward: dq
 * gets the q heads of the query rows (k, v heads zeroed), dkv the k and v heads
 * of every position (q heads zeroed): this rank's share, summed over the group
 * by the caller (reduce-scatter). */
void px_cpu_attention_kv_fwd(float *out,           /* [Sq, B, NH HD] overwritten */
                             float *lse,           /* [B, NH, Sq] overwritten */
                             const float *q,       /* [Sq, B, (NH + 2 NKV) HD] */
                             const int32_t *qpos,  /* [Sq] */
                             const float *kv,      /* [Skv, B, (NH + 2 NKV) HD] */
                             int64_t Sq, int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                             int64_t HD);
void px_cpu_attention_kv_bwd(float *dq,            /* [Sq, B, (NH + 2 NKV) HD] overwritten */
                             float *dkv,           /* [Skv, B, (NH + 2 NKV) HD] overwritten */
                             const float *dout,    /* [Sq, B, NH HD] */
                             const float *out,     /* [Sq, B, NH HD] */
                             const float *lse,     /* [B, NH, Sq] */
                             const float *q,       /* [Sq, B, (NH + 2 NKV) HD] */
                             const int32_t *qpos,  /* [Sq] */
                             const float *kv,      /* [Skv, B, (NH + 2 NKV) HD] */
                             int64_t Sq, int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                             int64_t HD);

/* ---- MLP activations ---------------------------------------------------------
 * SwiGLU: gate_up rows are [gate (F) | up (F)], out = silu(gate) * up.
 * GeLU: tanh approximation. */
void px_cpu_swiglu_fwd(float *out,           /* [T, F] */
                       const float *gate_up, /* [T, 2F] */
                       int64_t T, int64_t F);
void px_cpu_swiglu_bwd(float *dgate_up,      /* [T, 2F] overwritten */
                       const float *dout,    /* [T, F] */
                       const float *gate_up, /* [T, 2F] */
                       int64_t T, int64_t F);
void px_cpu_gelu_fwd(float *out,       /* [n] */
                     const float *inp, /* [n] */
                     int64_t n);
void px_cpu_gelu_bwd(float *dinp,       /* [n] overwritten; may alias dout */
                     const float *dout, /* [n] */
                     const float *inp,  /* [n] */
                     int64_t n);

/* ---- vocabulary-parallel cross-entropy --------------------------------------
 * The shard holds logits of vocabulary [v0, v0 + Vl).  Split into local parts
 * so no full logits row is ever gathered:
 *   1. px_cpu_xent_max_fwd          -> caller all-reduces max (MAX) over TP
 *   2. px_cpu_xent_sumexp_fwd       -> caller all-reduces sumexp and
 *                                      target_logit (SUM) over TP
 *   3. px_cpu_xent_loss_fwd         -> per-token loss, identical on every shard
 *   4. px_cpu_xent_bwd              -> dlogits of this shard
 * target_logit is the target's logit when this shard owns it, else 0. */
void px_cpu_xent_max_fwd(float *max,          /* [T] */
                         const float *logits, /* [T, Vl] */
                         int64_t T, int64_t Vl);
void px_cpu_xent_sumexp_fwd(float *sumexp,          /* [T] sum exp(logit - max) */
                            float *target_logit,    /* [T] */
                            const float *logits,    /* [T, Vl] */
                            const float *max,       /* [T] global max */
                            const int32_t *targets, /* [T] */
                            int64_t T, int64_t Vl, int64_t v0);
void px_cpu_xent_loss_fwd(float *loss,               /* [T] */
                          const float *max,          /* [T] */
                          const float *sumexp,       /* [T] global */
                          const float *target_logit, /* [T] global */
                          int64_t T);
/* dlogits = dloss * (softmax(logits) - onehot(target)); dlogits may alias logits. */
void px_cpu_xent_bwd(float *dlogits,         /* [T, Vl] overwritten */
                     const float *logits,    /* [T, Vl] */
                     const float *max,       /* [T] */
                     const float *sumexp,    /* [T] */
                     const int32_t *targets, /* [T] */
                     float dloss,            /* d(total loss)/d(each token's loss) */
                     int64_t T, int64_t Vl, int64_t v0);

/* ---- mixture of experts: router and token permutation -------------------------
 * Router: the scores, picks and gates of px_router.h (softmax or sigmoid
 * scores, optional group limit, renormalised and scaled gates); idx holds
 * the k picks by score descending (ties: the lower expert index).  The MoE
 * output of token t is sum_j gate[t, j] * expert_idx[t,j](x_t).
 * A dispatched row a carries token rows[a] and slot slots[a] = t * k + j (the
 * gate it is scaled by). */
void px_cpu_moe_router_fwd(float *probs,        /* [T, E] scores */
                           int32_t *idx,        /* [T, k] chosen experts, by score descending */
                           float *gate,         /* [T, k] their gates */
                           const float *logits, /* [T, E] */
                           int64_t T, int64_t E, int64_t k, const px_router *r);
/* dlogits from the gates' gradient, through the renormalisation and scale
 * to the chosen scores ds, then softmax's p * (ds - sum_e p ds) or
 * sigmoid's ds * s (1 - s). */
void px_cpu_moe_router_bwd(float *dlogits,      /* [T, E] overwritten */
                           const float *probs,  /* [T, E] */
                           const int32_t *idx,  /* [T, k] */
                           const float *dgate,  /* [T, k] */
                           int64_t T, int64_t E, int64_t k, const px_router *r);
/* out[a] = x[rows[a]] (times gate[slots[a]] when gate is not NULL). */
void px_cpu_moe_permute(float *out,            /* [n, C] overwritten */
                        const float *x,        /* [T, C] */
                        const int32_t *rows,   /* [n] */
                        const float *gate,     /* [T k] or NULL */
                        const int32_t *slots,  /* [n] (with gate) */
                        int64_t n, int64_t C);
/* out[rows[a]] += y[a] (times gate[slots[a]] when gate is not NULL). */
void px_cpu_moe_unpermute(float *out,           /* [T, C] += */
                          const float *y,       /* [n, C] */
                          const int32_t *rows,  /* [n] */
                          const float *gate,    /* [T k] or NULL */
                          const int32_t *slots, /* [n] (with gate) */
                          int64_t n, int64_t C);
/* dgate[slots[a]] = dot(dout[rows[a]], y[a]): the gradient of each gate. */
void px_cpu_moe_gate_bwd(float *dgate,         /* [T k] overwritten at slots */
                         const float *dout,    /* [T, C] */
                         const float *y,       /* [n, C] expert outputs */
                         const int32_t *rows,  /* [n] */
                         const int32_t *slots, /* [n] */
                         int64_t n, int64_t C);

/* ---- AdamW (fp32 master weights; bias-corrected; decoupled weight decay) ----
 * step is 1-based.  Works on any contiguous slice (ZeRO-1 shards). */
void px_cpu_adamw_step(float *param,      /* [n] updated */
                       const float *grad, /* [n] */
                       float *m,          /* [n] first moment */
                       float *v,          /* [n] second moment */
                       int64_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, int64_t step);

#endif
