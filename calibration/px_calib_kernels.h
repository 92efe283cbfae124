/* px_calib_kernels.h — the executor's own non-GEMM CPU kernels
 * (kernels/cpu/px_kernels_cpu.h), timed at representative shapes.
 *
 * Why: on a CPU the element-wise operators (norms, RoPE, SwiGLU/GeLU with
 * their exp/tanh, residuals, cross-entropy, AdamW) are often bound by
 * arithmetic rather than by memory, and the attention core is the
 * executor's loop nest, not a tuned library.  A STREAM number alone would
 * predict them several times too fast.  So the profile records what these
 * very kernels achieve, in the cost model's terms:
 *  - per operator class (px_hw norm_bw ... embed_bw): the bytes the cost model
 *    charges for the class's forward + backward divided by the measured time
 *    of the executor's kernels doing it;
 *  - mem_bound_eff: the same over the per-layer mix, as a fraction of hbm_bw
 *    (the triad), for a cost model that only knows one element-wise rate;
 *  - attn_eff: the attention core's rate, forward + backward, as the cost
 *    model counts it (causal FLOPs = half the s x s product, backward 2.5x
 *    forward) as a fraction of peak_flops. */
#ifndef PX_CALIB_KERNELS_H
#define PX_CALIB_KERNELS_H

#include <stdint.h>

#include "px_calib.h"
#include "px_cost.h"
#include "px_efficiency.h"
#include "px_error.h"

/* The work one timed call of an element-wise class does, in both
 * calibrations (this CPU one and the GPU one, px_calib_cuda.c):
 *  NORM      RMSNorm and LayerNorm, forward + backward, over [tokens, hidden];
 *  RESIDUAL  one residual sum, forward + backward, over [tokens, hidden];
 *  GELU      over [tokens, ffn_gelu]; SWIGLU over [tokens, ffn_swiglu];
 *  ROPE      the q and k heads of [tokens, (heads + 2 kv_heads) head_dim];
 *  XENT      max, sum of exponentials, loss and backward over [tokens, vocab];
 *  ADAMW     one step over adam_params (fp32 gradients: both executors'
 *            optimizers take fp32 gradients);
 *  EMBED     gather + scatter-add of [tokens, hidden] rows. */
typedef struct {
    int64_t tokens, hidden, ffn_gelu, ffn_swiglu, heads, kv_heads, head_dim, vocab, adam_params;
} px_calib_ew_shape;

/* The bytes the cost model charges for that call in storage dtype
 * dtype_bytes (4: the CPU executor, 2: the GPU's bf16), from
 * px_cost_class_bytes (planner/cost/px_cost.h), the cost model's own count: a
 * rate of these bytes over the measured time gives the measured time back in
 * the model.  Header-only: the GPU calibration does not link this file's
 * CPU kernels. */
static inline double px_calib_class_bytes(px_mem_class c, const px_calib_ew_shape *s,
                                          int dtype_bytes)
{
    double T = (double)s->tokens;
    switch (c) {
    case PX_MEM_NORM: /* two norm kinds */
        return 2.0 * px_cost_class_bytes(c, T * (double)s->hidden, dtype_bytes, true);
    case PX_MEM_RESIDUAL:
    case PX_MEM_EMBED: return px_cost_class_bytes(c, T * (double)s->hidden, dtype_bytes, true);
    case PX_MEM_GELU: return px_cost_class_bytes(c, T * (double)s->ffn_gelu, dtype_bytes, true);
    case PX_MEM_SWIGLU:
        return px_cost_class_bytes(c, T * (double)s->ffn_swiglu, dtype_bytes, true);
    case PX_MEM_ROPE:
        return px_cost_class_bytes(
            c, T * (double)(s->heads + s->kv_heads) * (double)s->head_dim, dtype_bytes, true);
    case PX_MEM_XENT: return px_cost_class_bytes(c, T * (double)s->vocab, dtype_bytes, true);
    case PX_MEM_ADAMW:
        return px_cost_class_bytes(c, (double)s->adam_params, dtype_bytes, true);
    default: return 0.0;
    }
}

/* The CPU calibration's shape (px_calib_kernels.c). */
px_calib_ew_shape px_calib_kernels_shape(void);

/* The GPU calibration's shape (px_calib_cuda.c), one layer of a
 * 1B-8B Llama step: 8192 tokens, hidden 4096, GeLU 4 x hidden (GPT's), SwiGLU
 * ffn 14336, 32 query heads and 8 kv heads of 128, a 32000-entry vocabulary
 * shard (a 128k vocabulary over TP 4), AdamW over 64M parameters.  Here so
 * that the CPU tests can check the GPU's byte accounting. */
#define PX_CALIB_GPU_SHAPE                                                                     \
    {.tokens = 8192, .hidden = 4096, .ffn_gelu = 4 * 4096, .ffn_swiglu = 14336, .heads = 32,  \
     .kv_heads = 8, .head_dim = 128, .vocab = 32000, .adam_params = (int64_t)1 << 26}

typedef struct {
    double elementwise_bw; /* bytes/s over the per-layer mix (norm, residual,
                            * gelu, swiglu, rope), cost-model bytes */
    double attn_flops;     /* cost-model FLOP/s of the attention core (fwd + bwd) */
    /* per class, in the units of px_hw's norm_bw ... embed_bw */
    double norm_bw, residual_bw, gelu_bw, swiglu_bw, rope_bw, xent_bw, adamw_bw, embed_bw;
} px_calib_kernels_result;

px_status px_calib_kernels_run(const px_calib_opts *o, px_calib_kernels_result *r,
                               px_error *err);

#endif
