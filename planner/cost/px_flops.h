/* px_flops.h — the one FLOP count that the planner (predicted MFU) and the
 * executor (measured MFU) share.  Convention (Narayanan et al. 2021, PaLM):
 * a multiply-add is 2 FLOPs; forward + backward = 3 x forward; the attention
 * core is counted as a full (non-causal) s x s product, 12 * s * (a * d) per
 * token per layer for fwd+bwd, as the published Megatron numbers do.  The
 * embedding lookup is not a matmul; the LM head is. */
#ifndef PX_FLOPS_H
#define PX_FLOPS_H

#include <stdint.h>

#include "px_model.h"
#include "px_plan.h"

/* Forward FLOPs of one token through layer `layer` at sequence length s. */
double px_flops_layer_fwd_per_token(const px_model *m, int64_t layer, int64_t seq_len);

/* A Mamba-2 mixer's selective scan, forward FLOPs per token (in the layer's
 * count above; its in_proj and out_proj are matmul weights). */
double px_flops_mamba_scan_fwd_per_token(const px_model *m);

/* Forward FLOPs of one token through the LM head. */
double px_flops_head_fwd_per_token(const px_model *m);

/* Forward FLOPs per token of the multi-token-prediction modules (DeepSeek-V3's
 * MTP, Megatron's --mtp-num-layers), n_mtp_modules of them, each one layer
 * shaped like layer n_layers, its 2h -> h projection, its three norms (3h
 * multiply-adds, as Megatron's num_floating_point_operations counts them)
 * and the shared LM head again; 0 without MTP.  Part of the model FLOPs. */
double px_flops_mtp_fwd_per_token(const px_model *m, int64_t seq_len);

/* The attention cores' forward FLOPs per token over all layers, the MTP
 * modules' included (the part of px_flops_model_per_token with no weights). */
double px_flops_attn_core_fwd_per_token(const px_model *m, int64_t seq_len);

/* Model FLOPs (the MFU numerator) of fwd+bwd for one token. */
double px_flops_model_per_token(const px_model *m, int64_t seq_len);

/* Hardware FLOPs (the HFU numerator) per token: model FLOPs plus what the
 * recompute mode runs again (full: every layer's forward; selective: the
 * attention core's forward). */
double px_flops_hw_per_token(const px_model *m, int64_t seq_len, px_recompute rc);
/* The same with a recompute choice per layer: layer_recompute[l] (a
 * px_recompute) for l < n_layer_recompute and none past it; with
 * n_layer_recompute == 0, rc for every layer.  The one count of hardware
 * FLOPs the cost model's HFU and the executor's measured HFU share. */
double px_flops_hw_per_token_layers(const px_model *m, int64_t seq_len, px_recompute rc,
                                    const unsigned char *layer_recompute, int n_layer_recompute);

/* Keys one query attends to on average in a causal attention of length s:
 * (s + 1)/2. */
double px_flops_causal_keys(int64_t seq_len);

/* Model FLOPs per token with the attention core counted as executed (the
 * `mfu_causal` numerator): query i multiplies against its i + 1 keys, so
 * the core is 12·a·d·(s + 1)/2 per token per layer for fwd+bwd instead of
 * the convention's 12·a·d·s (on a sliding-window layer of window w < s:
 * 12·a·d·(w − w(w − 1)/(2s)) instead of 12·a·d·w); everything else as
 * px_flops_model_per_token. */
double px_flops_model_causal_per_token(const px_model *m, int64_t seq_len);

/* Same, per training step of `tokens` tokens. */
double px_flops_model_per_step(const px_model *m, int64_t seq_len, double tokens);
double px_flops_hw_per_step(const px_model *m, int64_t seq_len, double tokens,
                            px_recompute rc);

#endif
