/* px_attn_eff.h — the attention kernel's rate as a function of the kernel
 * generation the framework runs, the GPU it runs on, the head width and the
 * sequence block one launch sees.  Rules and sources: docs/cost-model.md,
 * "Attention kernel efficiency". */
#ifndef PX_ATTN_EFF_H
#define PX_ATTN_EFF_H

#include "px_hw.h"

/* FlashAttention-2 on a GPU whose native kernels are a later generation
 * (Hopper's wgmma + TMA: FlashAttention-3, cuDNN's sm90 fused attention):
 * FA2 issues Ampere's synchronous mma.sync and reaches about 35 % of H100's
 * bf16 peak forward, against 55-75 % for the native kernels (Shah et al.
 * 2024, FlashAttention-3, sections 1 and 4.1: FA3 is 1.5-2.0x FA2 forward,
 * 1.5-1.75x backward): 1/1.6 of the native rate. */
#define PX_ATTN_OLD_GEN_REL 0.625

/* Every score element costs one exponential on the special-function units
 * besides the 4·d tensor-core FLOPs of its two products (Q·K^T and P·V);
 * the kernels overlap the two only partly, so the MMA share of a kernel
 * running its products at R FLOP/s is d / (d + R / (4 E)), E the
 * profile's exp_rate (H100: 989 TFLOP/s against 3.9 T exp/s, Shah et al.
 * 2024 section 3.1).  The cost model's default rate (PX_EFF_FLASH_REL) is
 * the d = 128 rate. */
#define PX_ATTN_HEAD_REF 128.0

/* A causal kernel works in 128 x 128 tiles: a 128-row query tile visits
 * on average s/256 key tiles, of which the diagonal one is half masked
 * and still computed, so a launch over s query positions does useful work
 * (s/256) / (s/256 + 1/2) = s / (s + 128) of its tile time.  Under CP a
 * launch sees the local block s/cp (Megatron's ring runs one kernel per
 * step on it). */
#define PX_ATTN_SEQ_HALF 128.0

/* The attention core's rate relative to the cost model's default flash rate
 * (PX_EFF_FLASH_REL x the best GEMM rate), for a kernel of generation
 * `flash_version` (1..3; 0 = the GPU's native one), head width `head_dim`
 * and `s_q` query positions per launch (the local sequence: s / cp).
 * A calibrated hw->attn_eff is the executor's own kernel: 1. */
double px_attn_rate_rel(const px_hw *hw, int flash_version, double head_dim, double s_q);

#endif
