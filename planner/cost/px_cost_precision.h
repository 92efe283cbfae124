/* px_cost_precision.h — what the number format of the GEMMs (px_precision)
 * changes in the cost model: the tensor-core peak the layers' linear GEMMs
 * run at, the quantisation kernels around them (cast, amax, transpose,
 * scale factors), the low-precision weight copies the frameworks cache and
 * the activations they save in low precision.  Each rule and the framework
 * source it follows: docs/cost-model.md, "Low-precision GEMMs".
 *
 * What stays in bf16 whatever the precision: the attention core (no FP8
 * attention), the LM head, the router, the embedding, the optimizer state
 * and the gradients' reduction. */
#ifndef PX_COST_PRECISION_H
#define PX_COST_PRECISION_H

#include <stdbool.h>

#include "px_error.h"
#include "px_hw.h"
#include "px_precision.h"

/* Dense peak FLOP/s of the linear GEMMs in precision p on hw: peak_flops for
 * bf16 and fp16, fp8_flops for the FP8 formats with scales applied outside
 * the MMA (fp8, fp8-cs, fp8-rowwise, fp8-block), mxfp8_flops, fp4_flops.
 * 0 when the device lacks the path. */
double px_prec_peak_flops(const px_hw *hw, px_precision p);

/* PX_OK when hw runs precision p; otherwise PX_ERR_INVALID naming the
 * profile, the precision and the profile field that is 0. */
px_status px_prec_check_hw(const px_hw *hw, px_precision p, px_error *err);

/* Bytes of one element of a GEMM operand in precision p, its scale factors
 * included (fp8 1 + per-block scales, nvfp4 0.5 + 1/16, ...); e_b for bf16
 * and fp16. */
double px_prec_elem_bytes(px_precision p, double e_b);

/* True when p is an FP8 or FP4 format (the linear GEMMs quantise). */
bool px_prec_is_low(px_precision p);

/* Seconds of the GEMM C[m,n] = A[m,k]·B[k,n] in precision p: the bf16 time
 * of px_time_gemm_s scaled by peak / peak_p and by the shape model's
 * efficiency with each dimension's half-efficiency point moved with the
 * rate and the bytes that dimension streams: m and n stream the quantised
 * operands (half · (peak_p / peak) · (bytes_p / 2): unchanged for FP8),
 * k amortises the bf16 output written once per tile (half · peak_p /
 * peak).  px_time_gemm_s for bf16 and fp16. */
double px_prec_time_gemm_s(const px_hw *hw, px_precision p, double m, double n, double k);

/* A linear layer's GEMM (A: the m tokens' input, B: the weight) in
 * precision p: its forward seconds (px_prec_time_gemm_s), and in *bwd_s its
 * backward's, the input gradient (m, k, n) and the weight gradient
 * (k, n, m), whose reduction runs over the tokens.  The bf16 backward is
 * twice the forward (the shape model is symmetric in m, n, k; a calibrated
 * profile's rate is the forward shape's); a low-precision one moves each
 * GEMM's own dimensions as px_prec_time_gemm_s does, so a micro-batch of
 * few tokens slows the FP8 weight gradient as a shallow k slows any FP8
 * GEMM. */
double px_prec_time_linear_s(const px_hw *hw, px_precision p, double m, double n, double k,
                             double *bwd_s);

/* One linear layer's operands as the quantisation sees them, per micro-batch
 * on one GPU: T tokens, input width k, output width n. */
typedef struct {
    double T, k, n;
    bool input_from_norm; /* the input is a norm's output (TE LayerNormLinear):
                           * the norm writes the quantised tensor itself */
} px_prec_linear;

/* Extra HBM bytes of the quantisation kernels of `n_lin` linear layers,
 * forward (the input casts) and backward (the output-gradient casts, and
 * fp8-rowwise's rescaling of its gradient GEMMs' outputs), per
 * micro-batch, and of the weight casts once per step (weight_bytes_step).
 * e_b: the activation dtype's bytes.  hw decides whether FP8 operands need
 * a transposed copy for the backward GEMMs (see the .c).  recast: the
 * framework keeps the bf16 input and quantises it again in the backward,
 * one cast per GEMM operand, the weights every micro-batch
 * (px_fw_runtime.quant_keeps_hp_input; weight_bytes_step is then 0). */
void px_prec_cast_bytes(const px_hw *hw, px_precision p, double e_b, const px_prec_linear *lin,
                        int n_lin, bool recast, double *fwd_bytes, double *bwd_bytes,
                        double *weight_bytes_step);

/* Bytes per parameter of a linear layer's weights beyond the e_b-byte bf16
 * copy the cost model counts, for precision p: the quantised weights
 * replace it (NeMo's FP8 recipes set fp8_params: Transformer Engine keeps
 * the parameters quantised, the fp32 master in the optimizer), with the
 * transposed / columnwise copy the backward needs cached beside them.
 * Hopper FP8: 1 + 1 - 2 = 0; MXFP8: 2·(1 + 1/32) - 2; NVFP4: 2·(0.5 +
 * 1/16) - 2.  0 for bf16 / fp16.  Without quantized_params (bf16 weights,
 * the framework caches the quantised copies beside them: Megatron without
 * fp8_params, TE's weight workspace): the copies' full size. */
double px_prec_weight_bytes_per_param(const px_hw *hw, px_precision p, double e_b,
                                      bool quantized_params);

/* Bytes per parameter the data-parallel parameter all-gather moves (ZeRO
 * 1-3 after the update, FSDP before each layer): the quantised element and
 * its scales for the low-precision formats (Megatron's fp8_param_gather,
 * which NeMo's FP8 recipes turn on with fp8_params; torchao's
 * enable_fsdp_float8_all_gather), e_b otherwise.  The whole stage's
 * parameters are counted so, the bf16 embedding and head included. */
double px_prec_param_gather_bytes(px_precision p, double e_b);

/* Bytes per element of an activation a linear layer saves for its backward
 * (its quantised input), e_b for bf16 / fp16. */
double px_prec_saved_act_bytes(px_precision p, double e_b);

/* ---- layer-level hooks of the cost model's steps ---- */
#include "px_cost.h"

/* Seconds of the quantisation kernels of one layer of shape sh (its linear
 * layers: QKV or the MLA projections, the output projection, the MLP or the
 * routed and shared experts; not the router), forward and backward, per
 * micro-batch; the per-step weight casts are spread over the n_micro
 * micro-batches.  0 for bf16 / fp16. */
void px_prec_layer_cast_s(const px_hw *hw, const px_act_shape *sh, px_precision p,
                          int64_t n_micro, double *fwd_s, double *bwd_s);

/* Activations one layer saves in low precision: the inputs of its linear
 * layers (QKV input, output-projection input, MLP input, down-projection
 * input; the experts' down-projection input) are kept quantised by the
 * framework (TE saves the quantised input of every Linear) instead of in
 * the activation dtype; nothing where the framework keeps the bf16 input
 * (sh->quant_hp_input).  Adjusts o in place and its sums. */
void px_prec_act_adjust(const px_act_shape *sh, px_precision p, px_act_ops *o);

#endif
