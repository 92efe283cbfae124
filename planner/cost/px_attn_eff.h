/* px_attn_eff.h — the attention kernel's rate as a function of the kernel
 * generation the framework runs, the GPU it runs on, the head width and the
 * sequence block one launch sees.  Rules and sources: docs/cost-model.md,
 * "Attention kernel efficiency". */
#ifndef PX_ATTN_EFF_H
#define PX_ATTN_EFF_H

#include "px_framework.h"
#include "px_hw.h"
#include "px_plan.h"

/* FlashAttention-2 on a GPU whose native kernels are a later generation
 * (Hopper's wgmma + TMA: FlashAttention-3, cuDNN's sm90 fused attention):
 * FA2 issues Ampere's synchronous mma.sync and reaches about 35 % of H100's
 * bf16 peak forward, against 55-75 % for the native kernels (Shah et al.
 * 2024, FlashAttention-3, sections 1 and 4.1: FA3 is 1.5-2.0x FA2 forward,
 * 1.5-1.75x backward): 1/1.6 of the native rate. */
#define PX_ATTN_OLD_GEN_REL 0.625
/* Applied once per generation between the kernel's and the GPU's: FA2 on a
 * Blackwell GPU (generation 4: tcgen05 MMA and tensor memory, cuDNN's sm100
 * kernels, FlashAttention-4) runs Ampere's mma.sync two generations behind,
 * at 0.625^2 = 0.39 of the native rate.  For scale (a check, not a fit):
 * Zadouri et al. 2026 (FlashAttention-4) put Triton's B200 kernel at
 * 1/2.7 and cuDNN 9.13 at 1/1.3 of FA4's 1.6 PFLOP/s, so a kernel not
 * built on tcgen05 runs at about 0.48 of cuDNN's; FA2 is older still. */

/* Every score element costs one exponential on the special-function units
 * besides the 4·d tensor-core FLOPs of its two products (Q·K^T and P·V);
 * the kernels overlap the two only partly, so the MMA share of a kernel
 * running its products at R FLOP/s is d / (d + R / (4 E)), E the
 * profile's exp_rate (H100: 989 TFLOP/s against 3.9 T exp/s, Shah et al.
 * 2024 section 3.1).  The cost model's default rate (PX_EFF_FLASH_REL) is
 * the d = 128 rate on H100, whose kernels the FlashAttention-3 figures
 * measure; a GPU with fewer exponentials per tensor-core FLOP (Blackwell:
 * twice H100's FLOP/s on the same 16 exp per clock per SM) loses more of
 * every head width to the exp, one with more (Blackwell Ultra, whose SFUs
 * run twice Blackwell's rate) less. */
#define PX_ATTN_HEAD_REF 128.0
/* H100 SXM's tensor-core FLOP per exponential: 989 TFLOP/s dense bf16
 * against 3.9 T exp/s (Shah et al. 2024 section 3.1). */
#define PX_ATTN_REF_FLOP_PER_EXP (989e12 / 3.9e12)

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

/* The kernel generation a run trains with: the plan's kernel k where it
 * names one (native 0, flash3 3, flash2 and triton 2, flash1 1), else the
 * framework's (its attention_kernel where the profile names one, else its
 * flash_attention_version), except flash-attn 2 where the GPU is
 * generation 4 (Blackwell) and the heads are wider than the framework's
 * generation-4 kernel trains (attn_native_max_head_dim: Transformer
 * Engine's cuDNN backend takes d <= 128 on sm100, so Nemotron-4's 192-wide
 * heads run flash-attn 2 there).  0 with no framework. */
int px_attn_kernel_version(const px_hw *hw, const px_fw_runtime *run, px_attn_kernel k,
                           double head_dim_v);

/* Older kernels against FlashAttention-2 on the same GPU (Dao 2023,
 * FlashAttention-2): FlashAttention 1 at half its rate ("around 2x", the
 * abstract); the Triton port at 1/1.8, the geometric mean of section 4.1's
 * "1.3-2.5x faster than FlashAttention in Triton".  Both are built on
 * Ampere's mma.sync, as FlashAttention-2 is. */
#define PX_ATTN_FA1_SLOWDOWN 2.0
#define PX_ATTN_TRITON_SLOWDOWN 1.8

/* The factor on the attention core's time of kernel k (PX_AK_FRAMEWORK: the
 * framework's) at generation gen (px_attn_kernel_version) beyond what
 * px_attn_rate_rel prices: the two slowdowns above, 1 for the others and
 * for a calibrated attn_eff (the executor's own kernel, measured as it
 * runs). */
double px_attn_kernel_slowdown(const px_hw *hw, const px_fw_runtime *run, px_attn_kernel k,
                               int gen);

/* Whether the GPU runs kernel k: FlashAttention-3 is Hopper's alone
 * (wgmma, which neither Ampere nor Blackwell has); FlashAttention 1 and 2
 * and the Triton port need Ampere or later (generation 2: Turing's and
 * Volta's tensor cores lack their bf16 mma.sync).  A message naming the
 * profile's generation otherwise. */
px_status px_attn_kernel_check_hw(const px_hw *hw, px_attn_kernel k, px_error *err);

#endif
