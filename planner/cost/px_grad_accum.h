/* px_grad_accum.h — each micro-batch's gradients added into the main
 * gradients (docs/cost-model.md, "Gradient accumulation").
 *
 * Megatron-LM since 2022 (gradient_accumulation_fusion, on by default) and
 * Transformer Engine write each weight-gradient GEMM's result straight into
 * the main gradient (the GEMM's epilogue accumulates): the GEMM reads the
 * main gradient it adds to, one pass over it a micro-batch.  The embedding
 * table's gradient is no GEMM's: written dense, then added by the framework.
 * Megatron-LM's local DDP before that, and DeepSpeed's BF16 optimizer under
 * its pipeline engine (update_hp_grads after every micro-batch's backward),
 * let the GEMM write a low-precision gradient and then add it into the main
 * gradient: per micro-batch, every parameter of the stage is read in the
 * compute dtype and its main gradient read and written — an HBM-bound pass
 * that is long next to the micro-batch's GEMMs when a GPU holds many
 * parameters and one micro-batch holds few tokens (Megatron-Turing NLG:
 * 1.9e9 parameters a GPU, 2048 tokens a micro-batch: 7 % of it on A100). */
#ifndef PX_GRAD_ACCUM_H
#define PX_GRAD_ACCUM_H

#include <stdbool.h>

#include "px_hw.h"
#include "px_plan.h"

/* Bytes of one micro-batch's accumulation over `params` parameters: the
 * low-precision gradient read (elem_bytes) and the main gradient read and
 * written (grad_bytes each). */
double px_grad_accum_bytes(double params, double elem_bytes, double grad_bytes);

/* Seconds one micro-batch's separate accumulation adds to a stage holding
 * `params` parameters on one GPU; 0 when the framework fuses it
 * (separate false) or when the gradients are sharded per micro-batch
 * (ZeRO 2 and 3 reduce-scatter each micro-batch's gradients, so only the
 * shard accumulates). */
double px_grad_accum_s(const px_hw *hw, const px_parallel *par, bool separate, double params,
                       double elem_bytes, double grad_bytes);

/* Bytes a cast copy adds to one micro-batch's accumulation: the gradient
 * first cast into a temporary of the main gradient's dtype, written and
 * read again by the add (DeepSpeed's BF16 optimizer, update_hp_grads:
 * hp_grad.add_(lp.grad.to(hp_grad.dtype)); Megatron's main_grad.add_(grad)
 * casts inside the add's kernel). */
double px_grad_accum_cast_bytes(double params, double grad_bytes);

/* Seconds that cast copy adds to a micro-batch on the stage; 0 where
 * px_grad_accum_s charges nothing. */
double px_grad_accum_cast_s(const px_hw *hw, const px_parallel *par, bool separate,
                            double params, double grad_bytes);

/* Bytes one micro-batch's fused accumulation reads besides what a GEMM of
 * the calibrated rate moves: a weight-gradient GEMM that accumulates into
 * the main gradient (beta = 1: Transformer Engine's
 * fuse_wgrad_accumulation, accumulate=True with out=weight.main_grad,
 * Megatron's gradient_accumulation_fusion) reads every element of it in its
 * epilogue before writing the sum back, where the GEMMs the efficiency model
 * describes only write their output: params · grad_bytes. */
double px_grad_accum_fused_bytes(double params, double grad_bytes);

/* Seconds that read adds to a micro-batch on a stage holding `params`
 * parameters on one GPU; 0 where the accumulation is a separate kernel
 * (separate: px_grad_accum_s charges it) or the gradients are sharded per
 * micro-batch (ZeRO 2 and 3: each micro-batch's gradient is a fresh
 * buffer, reduce-scattered). */
double px_grad_accum_fused_s(const px_hw *hw, const px_parallel *par, bool separate,
                             double params, double grad_bytes);

/* Bytes one micro-batch moves for the embedding table's gradient, which no
 * GEMM accumulates: the dense embedding backward (PyTorch's
 * embedding_dense_backward under Megatron's VocabParallelEmbedding) writes
 * a zeroed gradient the size of the table (elem_bytes) and scatters the
 * tokens' rows into it, and the framework adds it into the main gradient
 * (Megatron-Core's DDP hook, main_grad.add_(grad); DeepSpeed's
 * update_hp_grads): read elem_bytes, main gradient read and written:
 * params · (2·elem_bytes + 2·grad_bytes). */
double px_grad_accum_embed_bytes(double params, double elem_bytes, double grad_bytes);

/* Seconds of that for `params` table elements on one GPU (the table over
 * TP); 0 under ZeRO 2 and 3 (the gradient is reduce-scattered instead of
 * accumulated). */
double px_grad_accum_embed_s(const px_hw *hw, const px_parallel *par, double params,
                             double elem_bytes, double grad_bytes);

#endif
