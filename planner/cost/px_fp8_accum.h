/* px_fp8_accum.h — the accumulation mode of per-tensor FP8 gradient GEMMs
 * on parts whose FP8 tensor cores accumulate in reduced precision.
 *
 * Hopper's FP8 MMA keeps partial sums in a narrower accumulator (about 14
 * bits of mantissa: DeepSeek-V3 technical report, sec. 3.3.2, on H800), so
 * cuBLASLt offers two modes: fast accumulation, and the default, which
 * periodically promotes the partial sums into FP32 registers
 * (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0; the cuBLAS documentation: "when
 * enabled, problem execution might be faster but at the cost of lower
 * accuracy").  Transformer Engine runs the forward GEMM fast and the two
 * gradient GEMMs with the split accumulator (transformer_engine/pytorch/
 * module/base.py: _2X_ACC_FPROP False, _2X_ACC_DGRAD and _2X_ACC_WGRAD
 * True, TE 1.x and 2.x; the JAX side the same, FP8Helper.FP8_2X_ACC_*), as
 * XLA does (HIGHEST precision on the gradient dots, openxla/xla#6168) and
 * torchao (use_fast_accum only on the output GEMM, pytorch/ao#2377).  The
 * promoted GEMM runs 1.1–1.2x as long as the fast one on H100 (pytorch/ao
 * #2377's benchmark); the model takes the middle, 1.15.  Blackwell's
 * tensor cores accumulate FP8 in FP32 (no fast mode on sm100: Transformer
 * Engine's grouped GEMM, NVIDIA/TransformerEngine#2748), and the block
 * formats (MXFP8, NVFP4) run there; a profile with an MXFP8 rate is such a
 * part.  Formulas: docs/cost-model.md, "Low-precision GEMMs". */
#ifndef PX_FP8_ACCUM_H
#define PX_FP8_ACCUM_H

#include "px_hw.h"
#include "px_precision.h"

/* Time of a promoted (split-accumulator) FP8 GEMM over the fast one. */
#define PX_FP8_SPLIT_ACCUM_SLOWDOWN 1.15

/* How much longer precision p's gradient GEMMs (dgrad and wgrad) run on hw
 * than the forward GEMM of the same shape: PX_FP8_SPLIT_ACCUM_SLOWDOWN for
 * the cuBLASLt-run FP8 recipes (fp8, fp8-cs: Transformer Engine's delayed
 * and current scaling; fp8-rowwise: torchao's _scaled_mm) on a part with
 * FP8 and no MXFP8 rate (Hopper), else 1.  fp8-block's Hopper GEMMs
 * (DeepGEMM) promote in their own kernel and are left at the forward's
 * rate. */
double px_fp8_grad_gemm_factor(const px_hw *hw, px_precision p);

#endif
