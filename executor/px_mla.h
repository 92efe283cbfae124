/* px_mla.h — multi-head latent attention (DeepSeek-V2/V3) in the engine:
 * the low-rank q and kv projections around the engine's attention core
 * (docs/executor.md, "Multi-head latent attention").  Internal to the
 * engine, like px_exec_internal.h.
 *
 * The projections turn the gathered norm output g [T, h] into the q|k|v rows
 * the attention kernels read, [T, 3 nh_l D] with D = qk_nope + qk_rope (the
 * query/key head width): q heads [q_nope | RoPE(q_rope)], k heads [k_nope |
 * RoPE(k_rope)] (k_rope one per token, the same for every head), v heads
 * [v | 0] (v_head_dim <= D: the zero columns give zero outputs, which the
 * output projection skips). */
#ifndef PX_MLA_H
#define PX_MLA_H

#include "px_exec_internal.h"

/* Engine sizes of an MLA model: head width D, as many k/v heads as q heads,
 * q|k|v rows 3 nh_l D.  Refuses v_head_dim > D. */
px_status px_mla_setup(px_exec *ex, px_error *err);

/* a->qkv (allocated, [T, qkv_l]) from g [T, h]; keeps the latents in a. */
px_status px_mla_qkv_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *g,
                         px_error *err);
/* o [T, h] (partial over TP) = the v columns of att [T, nh_l D] times Wo. */
px_status px_mla_out_fwd(px_exec *ex, const px_layer_params *lp, const void *att, void *o,
                         px_error *err);

/* Backward of px_mla_out_fwd: Wo's gradient, datt [T, nh_l D] (zero beyond
 * v_head_dim) from dy [T, h]. */
px_status px_mla_out_bwd(px_exec *ex, const px_layer_params *lp, const void *att,
                         const void *dy, void *datt, px_error *err);
/* Backward of px_mla_qkv_fwd: the projections' and latent norms' gradients
 * and dg [T, h] (partial over TP) from dqkv [T, qkv_l]; g is the gathered
 * input. */
px_status px_mla_qkv_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         const void *dqkv, const void *g, void *dg, px_error *err);

void px_mla_act_free(px_exec *ex, px_layer_act *a);

#endif
