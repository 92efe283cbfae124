/* px_kernels_cuda.h — the CUDA twins of kernels/cpu/px_kernels_cpu.h.
 *
 * Each px_cuda_<op>_fwd / _bwd takes the arguments of px_cpu_<op>_fwd / _bwd in
 * the same order, as device pointers, followed by the stream and the error
 * record; it launches asynchronously on the stream, checks the launch, and
 * returns a px_status.  The shapes, the row-major [S, B, ...] token order, the
 * packed qkv rows, and which gradients accumulate (+=) or are overwritten are
 * exactly those documented in px_kernels_cpu.h.
 *
 * Precision (the cost model's mixed precision): activations, weights and
 * activation gradients are bf16 (px_bf16, the raw bits of __nv_bfloat16 so
 * that C code can hold them); parameter gradients, optimizer state, norms'
 * saved statistics, the attention lse and the cross-entropy row statistics are
 * fp32; every reduction and every GEMM accumulates in fp32. */
#ifndef PX_KERNELS_CUDA_H
#define PX_KERNELS_CUDA_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_error.h"
#include "px_cuda_gemm.h"
#include "px_rope.h"
#include "px_router.h"

/* Storage of one bf16 value (the bits of __nv_bfloat16). */
typedef uint16_t px_bf16;

/* ---- casts ---------------------------------------------------------------- */
px_status px_cuda_cast_f32_to_bf16(px_bf16 *out, const float *inp, int64_t n,
                                   cudaStream_t stream, px_error *err);
px_status px_cuda_cast_bf16_to_f32(float *out, const px_bf16 *inp, int64_t n,
                                   cudaStream_t stream, px_error *err);

/* ---- embedding (vocabulary-parallel) -------------------------------------- */
px_status px_cuda_embedding_fwd(px_bf16 *out,          /* [T, C] overwritten */
                                const int32_t *tokens, /* [T] */
                                const px_bf16 *table,  /* [v1 - v0, C] */
                                int64_t T, int64_t C, int64_t v0, int64_t v1,
                                cudaStream_t stream, px_error *err);
px_status px_cuda_embedding_bwd(float *dtable,         /* [v1 - v0, C] += */
                                const px_bf16 *dout,   /* [T, C] */
                                const int32_t *tokens, /* [T] */
                                int64_t T, int64_t C, int64_t v0, int64_t v1,
                                cudaStream_t stream, px_error *err);

/* ---- learned positions (GPT) ---------------------------------------------- */
px_status px_cuda_positions_fwd(px_bf16 *x,         /* [S, B, C] in place */
                                const px_bf16 *pos, /* [max_positions, C] */
                                int64_t S, int64_t B, int64_t C, int64_t pos0,
                                cudaStream_t stream, px_error *err);
px_status px_cuda_positions_bwd(float *dpos,         /* [max_positions, C] += */
                                const px_bf16 *dout, /* [S, B, C] */
                                int64_t S, int64_t B, int64_t C, int64_t pos0,
                                cudaStream_t stream, px_error *err);

/* ---- RMSNorm and LayerNorm ------------------------------------------------ */
px_status px_cuda_rmsnorm_fwd(px_bf16 *out,          /* [T, C] */
                              float *rstd,           /* [T] */
                              const px_bf16 *inp,    /* [T, C] */
                              const px_bf16 *weight, /* [C] */
                              int64_t T, int64_t C, float eps, cudaStream_t stream,
                              px_error *err);
px_status px_cuda_rmsnorm_bwd(px_bf16 *dinp,         /* [T, C] += */
                              float *dweight,        /* [C] += */
                              const px_bf16 *dout,   /* [T, C] */
                              const px_bf16 *inp,    /* [T, C] */
                              const px_bf16 *weight, /* [C] */
                              const float *rstd,     /* [T] */
                              int64_t T, int64_t C, cudaStream_t stream, px_error *err);
px_status px_cuda_layernorm_fwd(px_bf16 *out,          /* [T, C] */
                                float *mean,           /* [T] */
                                float *rstd,           /* [T] */
                                const px_bf16 *inp,    /* [T, C] */
                                const px_bf16 *weight, /* [C] */
                                const px_bf16 *bias,   /* [C] */
                                int64_t T, int64_t C, float eps, cudaStream_t stream,
                                px_error *err);
px_status px_cuda_layernorm_bwd(px_bf16 *dinp,         /* [T, C] += */
                                float *dweight,        /* [C] += */
                                float *dbias,          /* [C] += */
                                const px_bf16 *dout,   /* [T, C] */
                                const px_bf16 *inp,    /* [T, C] */
                                const px_bf16 *weight, /* [C] */
                                const float *mean,     /* [T] */
                                const float *rstd,     /* [T] */
                                int64_t T, int64_t C, cudaStream_t stream, px_error *err);

/* ---- linear through cuBLAS (blas is bound to the stream) ------------------ */
px_status px_cuda_matmul_fwd(px_bf16 *out,          /* [T, N] overwritten */
                             const px_bf16 *inp,    /* [T, K] */
                             const px_bf16 *weight, /* [N, K] */
                             const px_bf16 *bias,   /* [N] or NULL */
                             int64_t T, int64_t K, int64_t N, px_cuda_blas *blas,
                             cudaStream_t stream, px_error *err);
px_status px_cuda_matmul_bwd(px_bf16 *dinp,         /* [T, K] overwritten; optional */
                             float *dweight,        /* [N, K] +=; optional */
                             float *dbias,          /* [N] +=; optional */
                             const px_bf16 *dout,   /* [T, N] */
                             const px_bf16 *inp,    /* [T, K] */
                             const px_bf16 *weight, /* [N, K] */
                             int64_t T, int64_t K, int64_t N, px_cuda_blas *blas,
                             cudaStream_t stream, px_error *err);

/* ---- bias and residual ----------------------------------------------------- */
px_status px_cuda_bias_add_fwd(px_bf16 *x, const px_bf16 *bias, int64_t T, int64_t N,
                               cudaStream_t stream, px_error *err);
px_status px_cuda_bias_add_bwd(float *dbias, const px_bf16 *dout, int64_t T, int64_t N,
                               cudaStream_t stream, px_error *err);
px_status px_cuda_residual_fwd(px_bf16 *out, const px_bf16 *a, const px_bf16 *b, int64_t n,
                               cudaStream_t stream, px_error *err);
px_status px_cuda_residual_bwd(px_bf16 *da, px_bf16 *db, const px_bf16 *dout, int64_t n,
                               cudaStream_t stream, px_error *err);

/* ---- RoPE (in place on the q and k heads of packed qkv rows) -------------- */
px_status px_cuda_rope_fwd(px_bf16 *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                           int64_t HD, int64_t pos0, const px_rope *rope, cudaStream_t stream,
                           px_error *err);
px_status px_cuda_rope_bwd(px_bf16 *dqkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                           int64_t HD, int64_t pos0, const px_rope *rope, cudaStream_t stream,
                           px_error *err);

/* ---- causal attention, FlashAttention style --------------------------------
 * Tiled over 64 query x 64 key rows, online softmax in registers, bf16 tensor
 * cores (mma.sync m16n8k16) with fp32 accumulation; no S x S matrix exists in
 * memory, so `probs` must be NULL (PX_ERR_UNSUPPORTED otherwise: the CUDA
 * backend always runs the FlashAttention path).  HD must be 16, 32, 64 or 128; NH a
 * multiple of NKV (GQA).  The backward recomputes the probabilities from q,
 * k and lse; it uses B * NH * S floats of stream-ordered scratch (the rowwise
 * dO.O), taken from and returned to the device's memory pool. */
px_status px_cuda_attention_fwd(px_bf16 *out,       /* [S, B, NH HD] overwritten */
                                float *lse,         /* [B, NH, S] overwritten */
                                float *probs,       /* must be NULL */
                                const px_bf16 *qkv, /* [S, B, (NH + 2 NKV) HD] */
                                int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                cudaStream_t stream, px_error *err);
px_status px_cuda_attention_bwd(px_bf16 *dqkv,       /* [S, B, (NH + 2 NKV) HD] overwritten */
                                const px_bf16 *dout, /* [S, B, NH HD] */
                                const px_bf16 *out,  /* [S, B, NH HD] */
                                const float *lse,    /* [B, NH, S] */
                                const float *probs,  /* must be NULL */
                                const px_bf16 *qkv,  /* [S, B, (NH + 2 NKV) HD] */
                                int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                cudaStream_t stream, px_error *err);

/* ---- context-parallel attention core -----------------------------------------
 * The twins of px_cpu_attention_kv_fwd/_bwd: this rank's Sq query rows, at
 * global positions qpos (a device array of Sq int32, each in [0, Skv)),
 * against the Skv gathered kv rows in position order; causal on global
 * positions (key j visible to query i when j <= qpos[i]).  The same kernels as
 * px_cuda_attention_fwd/_bwd (which are the case qpos[i] = i, q = kv = qkv).
 * Backward: dq gets the q heads of the query rows with its k, v heads zeroed;
 * dkv the k and v heads of every position with its q heads zeroed (this
 * rank's share: the caller sums it over the CP group).  Same scratch as the
 * backward above (B * NH * Sq floats). */
px_status px_cuda_attention_kv_fwd(px_bf16 *out,        /* [Sq, B, NH HD] overwritten */
                                   float *lse,          /* [B, NH, Sq] overwritten */
                                   const px_bf16 *q,    /* [Sq, B, (NH + 2 NKV) HD] */
                                   const int32_t *qpos, /* [Sq] */
                                   const px_bf16 *kv,   /* [Skv, B, (NH + 2 NKV) HD] */
                                   int64_t Sq, int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                                   int64_t HD, cudaStream_t stream, px_error *err);
px_status px_cuda_attention_kv_bwd(px_bf16 *dq,         /* [Sq, B, (NH + 2 NKV) HD] overwritten */
                                   px_bf16 *dkv,        /* [Skv, B, (NH + 2 NKV) HD] overwritten */
                                   const px_bf16 *dout, /* [Sq, B, NH HD] */
                                   const px_bf16 *out,  /* [Sq, B, NH HD] */
                                   const float *lse,    /* [B, NH, Sq] */
                                   const px_bf16 *q,    /* [Sq, B, (NH + 2 NKV) HD] */
                                   const int32_t *qpos, /* [Sq] */
                                   const px_bf16 *kv,   /* [Skv, B, (NH + 2 NKV) HD] */
                                   int64_t Sq, int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                                   int64_t HD, cudaStream_t stream, px_error *err);

/* ---- MLP activations -------------------------------------------------------- */
px_status px_cuda_swiglu_fwd(px_bf16 *out, const px_bf16 *gate_up, int64_t T, int64_t F,
                             cudaStream_t stream, px_error *err);
px_status px_cuda_swiglu_bwd(px_bf16 *dgate_up, const px_bf16 *dout, const px_bf16 *gate_up,
                             int64_t T, int64_t F, cudaStream_t stream, px_error *err);
px_status px_cuda_gelu_fwd(px_bf16 *out, const px_bf16 *inp, int64_t n, cudaStream_t stream,
                           px_error *err);
px_status px_cuda_gelu_bwd(px_bf16 *dinp, const px_bf16 *dout, const px_bf16 *inp, int64_t n,
                           cudaStream_t stream, px_error *err);

/* ---- vocabulary-parallel cross-entropy (logits bf16, statistics fp32) ------ */
px_status px_cuda_xent_max_fwd(float *max, const px_bf16 *logits, int64_t T, int64_t Vl,
                               cudaStream_t stream, px_error *err);
px_status px_cuda_xent_sumexp_fwd(float *sumexp, float *target_logit, const px_bf16 *logits,
                                  const float *max, const int32_t *targets, int64_t T,
                                  int64_t Vl, int64_t v0, cudaStream_t stream, px_error *err);
px_status px_cuda_xent_loss_fwd(float *loss, const float *max, const float *sumexp,
                                const float *target_logit, int64_t T, cudaStream_t stream,
                                px_error *err);
px_status px_cuda_xent_bwd(px_bf16 *dlogits, const px_bf16 *logits, const float *max,
                           const float *sumexp, const int32_t *targets, float dloss,
                           int64_t T, int64_t Vl, int64_t v0, cudaStream_t stream,
                           px_error *err);

/* ---- AdamW on fp32 master weights --------------------------------------------
 * As px_cpu_adamw_step; param_bf16 (may be NULL) receives the updated weights
 * rounded to bf16, the copy the forward and backward GEMMs read. */
px_status px_cuda_adamw_step(float *param, const float *grad, float *m, float *v, int64_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay,
                             int64_t step, px_bf16 *param_bf16, cudaStream_t stream,
                             px_error *err);

/* Fills buf[0..n) with value (fp32), e.g. zeroing gradient accumulators. */
px_status px_cuda_fill_f32(float *buf, float value, int64_t n, cudaStream_t stream,
                           px_error *err);

/* ---- mixture of experts (engineer "moe"; kernels/cuda/px_cuda_moe.cu) ---------
 * The twins of px_cpu_moe_*, with the same arguments and semantics (softmax
 * over all E experts, top k by p descending with ties to the lower index,
 * gates NOT renormalised; dispatched row a carries token rows[a] and gate
 * slot slots[a]).  Both storage forms are declared here: logits, dlogits and
 * the token rows x / y / out / dout are in the storage type (px_bf16 or, in
 * the _f32 form, float); the router statistics probs [T, E], gate [T k] and
 * dgate [T k] are fp32 in BOTH forms, like the norms' statistics; idx, rows
 * and slots are int32.  Every reduction accumulates in fp32.
 * - router_fwd / _bwd: k must be 1..PX_MOE_MAX_K and <= E, E <= 2^24
 *   (PX_ERR_INVALID otherwise).
 * - unpermute (out[rows[a]] += ...): with slots (gate or not) it is
 *   deterministic, with no atomics: slots must then be a permutation of
 *   [0, n) in which one token's rows have consecutive slots — the executor's
 *   slots = t k + j — and a token's rows are summed in slot order.  It takes
 *   n int32 of stream-ordered scratch from the device pool.  With
 *   slots == NULL (and gate == NULL) it adds with atomics, in no fixed order.
 * - gate given requires slots (PX_ERR_INVALID otherwise); gate_bwd always
 *   needs slots. */
#define PX_MOE_MAX_K 8
/* The router of px_router.h but group-limited selection (n_group > 1:
 * PX_ERR_UNSUPPORTED; the executor refuses such a plan on this backend). */
px_status px_cuda_moe_router_fwd(float *probs,          /* [T, E] fp32 scores */
                                 int32_t *idx,          /* [T, k] by score descending */
                                 float *gate,           /* [T, k] fp32 gates */
                                 const px_bf16 *logits, /* [T, E] */
                                 int64_t T, int64_t E, int64_t k, const px_router *r,
                                 cudaStream_t stream, px_error *err);
px_status px_cuda_moe_router_bwd(px_bf16 *dlogits,     /* [T, E] overwritten */
                                 const float *probs,   /* [T, E] */
                                 const int32_t *idx,   /* [T, k] */
                                 const float *dgate,   /* [T, k] */
                                 int64_t T, int64_t E, int64_t k, const px_router *r,
                                 cudaStream_t stream, px_error *err);
px_status px_cuda_moe_permute(px_bf16 *out,         /* [n, C] overwritten */
                              const px_bf16 *x,     /* [T, C] */
                              const int32_t *rows,  /* [n] */
                              const float *gate,    /* [T k] or NULL */
                              const int32_t *slots, /* [n] (with gate) */
                              int64_t n, int64_t C, cudaStream_t stream, px_error *err);
px_status px_cuda_moe_unpermute(px_bf16 *out,         /* [T, C] += */
                                const px_bf16 *y,     /* [n, C] */
                                const int32_t *rows,  /* [n] */
                                const float *gate,    /* [T k] or NULL */
                                const int32_t *slots, /* [n] or NULL (see above) */
                                int64_t n, int64_t C, cudaStream_t stream, px_error *err);
px_status px_cuda_moe_gate_bwd(float *dgate,         /* [T k] overwritten at slots */
                               const px_bf16 *dout,  /* [T, C] */
                               const px_bf16 *y,     /* [n, C] expert outputs */
                               const int32_t *rows,  /* [n] */
                               const int32_t *slots, /* [n] */
                               int64_t n, int64_t C, cudaStream_t stream, px_error *err);
px_status px_cuda_moe_router_fwd_f32(float *probs, int32_t *idx, float *gate,
                                     const float *logits, int64_t T, int64_t E, int64_t k,
                                     const px_router *r, cudaStream_t stream, px_error *err);
px_status px_cuda_moe_router_bwd_f32(float *dlogits, const float *probs, const int32_t *idx,
                                     const float *dgate, int64_t T, int64_t E, int64_t k,
                                     const px_router *r, cudaStream_t stream, px_error *err);
px_status px_cuda_moe_permute_f32(float *out, const float *x, const int32_t *rows,
                                  const float *gate, const int32_t *slots, int64_t n, int64_t C,
                                  cudaStream_t stream, px_error *err);
px_status px_cuda_moe_unpermute_f32(float *out, const float *y, const int32_t *rows,
                                    const float *gate, const int32_t *slots, int64_t n, int64_t C,
                                    cudaStream_t stream, px_error *err);
px_status px_cuda_moe_gate_bwd_f32(float *dgate, const float *dout, const float *y,
                                   const int32_t *rows, const int32_t *slots, int64_t n, int64_t C,
                                   cudaStream_t stream, px_error *err);

/* ---- fp32-storage variants ---------------------------------------------------
 * The same kernels instantiated for fp32 tensors (the argument order of the
 * twins with float in place of px_bf16).  They serve the executor's engine
 * in fp32 storage (`execute --dtype fp32`; bf16 storage uses the kernels
 * above): element-wise work runs in fp32, attention rounds its tiles to bf16 for the
 * tensor cores and accumulates in fp32, and the matmuls use cuBLAS with
 * CUBLAS_COMPUTE_32F_FAST_16BF (bf16 tensor cores, fp32 in and out). */
px_status px_cuda_embedding_fwd_f32(float *out, const int32_t *tokens, const float *table,
                                    int64_t T, int64_t C, int64_t v0, int64_t v1,
                                    cudaStream_t stream, px_error *err);
px_status px_cuda_embedding_bwd_f32(float *dtable, const float *dout, const int32_t *tokens,
                                    int64_t T, int64_t C, int64_t v0, int64_t v1,
                                    cudaStream_t stream, px_error *err);
px_status px_cuda_positions_fwd_f32(float *x, const float *pos, int64_t S, int64_t B, int64_t C,
                                    int64_t pos0, cudaStream_t stream, px_error *err);
px_status px_cuda_positions_bwd_f32(float *dpos, const float *dout, int64_t S, int64_t B, int64_t C,
                                    int64_t pos0, cudaStream_t stream, px_error *err);
px_status px_cuda_bias_add_fwd_f32(float *x, const float *bias, int64_t T, int64_t N,
                                   cudaStream_t stream, px_error *err);
px_status px_cuda_bias_add_bwd_f32(float *dbias, const float *dout, int64_t T, int64_t N,
                                   cudaStream_t stream, px_error *err);
px_status px_cuda_residual_fwd_f32(float *out, const float *a, const float *b, int64_t n,
                                   cudaStream_t stream, px_error *err);
px_status px_cuda_residual_bwd_f32(float *da, float *db, const float *dout, int64_t n,
                                   cudaStream_t stream, px_error *err);
px_status px_cuda_rope_fwd_f32(float *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                               int64_t HD, int64_t pos0, const px_rope *rope, cudaStream_t stream,
                               px_error *err);
px_status px_cuda_rope_bwd_f32(float *dqkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                               int64_t HD, int64_t pos0, const px_rope *rope, cudaStream_t stream,
                               px_error *err);
px_status px_cuda_swiglu_fwd_f32(float *out, const float *gate_up, int64_t T, int64_t F,
                                 cudaStream_t stream, px_error *err);
px_status px_cuda_swiglu_bwd_f32(float *dgate_up, const float *dout, const float *gate_up,
                                 int64_t T, int64_t F, cudaStream_t stream, px_error *err);
px_status px_cuda_gelu_fwd_f32(float *out, const float *inp, int64_t n, cudaStream_t stream,
                               px_error *err);
px_status px_cuda_gelu_bwd_f32(float *dinp, const float *dout, const float *inp, int64_t n,
                               cudaStream_t stream, px_error *err);
px_status px_cuda_rmsnorm_fwd_f32(float *out, float *rstd, const float *inp, const float *weight,
                                  int64_t T, int64_t C, float eps, cudaStream_t stream,
                                  px_error *err);
px_status px_cuda_rmsnorm_bwd_f32(float *dinp, float *dweight, const float *dout, const float *inp,
                                  const float *weight, const float *rstd, int64_t T, int64_t C,
                                  cudaStream_t stream, px_error *err);
px_status px_cuda_layernorm_fwd_f32(float *out, float *mean, float *rstd, const float *inp,
                                    const float *weight, const float *bias, int64_t T, int64_t C,
                                    float eps, cudaStream_t stream, px_error *err);
px_status px_cuda_layernorm_bwd_f32(float *dinp, float *dweight, float *dbias, const float *dout,
                                    const float *inp, const float *weight, const float *mean,
                                    const float *rstd, int64_t T, int64_t C, cudaStream_t stream,
                                    px_error *err);
px_status px_cuda_xent_max_fwd_f32(float *max, const float *logits, int64_t T, int64_t Vl,
                                   cudaStream_t stream, px_error *err);
px_status px_cuda_xent_sumexp_fwd_f32(float *sumexp, float *target_logit, const float *logits,
                                      const float *max, const int32_t *targets, int64_t T,
                                      int64_t Vl, int64_t v0, cudaStream_t stream, px_error *err);
px_status px_cuda_xent_loss_fwd_f32(float *loss, const float *max, const float *sumexp,
                                    const float *target_logit, int64_t T, cudaStream_t stream,
                                    px_error *err);
px_status px_cuda_xent_bwd_f32(float *dlogits, const float *logits, const float *max,
                               const float *sumexp, const int32_t *targets, float dloss, int64_t T,
                               int64_t Vl, int64_t v0, cudaStream_t stream, px_error *err);
px_status px_cuda_attention_fwd_f32(float *out, float *lse, float *probs, const float *qkv,
                                    int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                    cudaStream_t stream, px_error *err);
px_status px_cuda_attention_bwd_f32(float *dqkv, const float *dout, const float *out,
                                    const float *lse, const float *probs, const float *qkv,
                                    int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                    cudaStream_t stream, px_error *err);
px_status px_cuda_attention_kv_fwd_f32(float *out, float *lse, const float *q,
                                       const int32_t *qpos, const float *kv, int64_t Sq,
                                       int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                                       int64_t HD, cudaStream_t stream, px_error *err);
px_status px_cuda_attention_kv_bwd_f32(float *dq, float *dkv, const float *dout,
                                       const float *out, const float *lse, const float *q,
                                       const int32_t *qpos, const float *kv, int64_t Sq,
                                       int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                                       int64_t HD, cudaStream_t stream, px_error *err);
px_status px_cuda_matmul_fwd_f32(float *out, const float *inp, const float *weight,
                                 const float *bias, int64_t T, int64_t K, int64_t N,
                                 px_cuda_blas *blas, cudaStream_t stream, px_error *err);
px_status px_cuda_matmul_bwd_f32(float *dinp, float *dweight, float *dbias, const float *dout,
                                 const float *inp, const float *weight, int64_t T, int64_t K,
                                 int64_t N, px_cuda_blas *blas, cudaStream_t stream,
                                 px_error *err);

#ifdef __cplusplus
}
#endif

#endif
