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

#include "px_calib.h"
#include "px_error.h"

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
