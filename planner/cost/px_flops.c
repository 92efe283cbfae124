/* px_flops.c — FLOP counts, see px_flops.h for the convention. */
#include "px_flops.h"

#include "px_hybrid.h"
#include "px_sliding.h"

/* Attention-core forward FLOPs per token of layer `layer`: Q K^T and P V over
 * the whole sequence (non-causal convention), or over the window on a
 * sliding-window layer (px_sliding.h); 0 on a layer without attention. */
static double attn_core_fwd_per_token(const px_model *m, int64_t layer, int64_t seq_len)
{
    if (!px_layer_has_attention(px_model_layer_kind(m, layer)))
        return 0.0;
    double a = (double)m->n_heads;
    return 2.0 * px_sliding_keys_full(m, layer, seq_len) * a *
           (double)(px_model_qk_head_dim(m) + px_model_v_head_dim(m));
}

/* A Mamba-2 layer's scan per token, the count Megatron-LM's
 * num_floating_point_operations gives it (megatron/training/training.py,
 * its hybrid branch: 7 d_inner x state), with the mixer's real d_inner. */
double px_flops_mamba_scan_fwd_per_token(const px_model *m)
{
    return 7.0 * (double)px_mamba_d_inner(m) * (double)m->mamba_state;
}

double px_flops_layer_fwd_per_token(const px_model *m, int64_t layer, int64_t seq_len)
{
    double scan = px_model_layer_kind(m, layer) == PX_LAYER_MAMBA
                      ? px_flops_mamba_scan_fwd_per_token(m)
                      : 0.0;
    return 2.0 * (double)px_model_layer_matmul_params(m, layer, true) +
           attn_core_fwd_per_token(m, layer, seq_len) + scan;
}

double px_flops_attn_core_fwd_per_token(const px_model *m, int64_t seq_len)
{
    double core = 0.0;
    for (int64_t l = 0; l < m->n_layers; l++)
        core += attn_core_fwd_per_token(m, l, seq_len);
    return core + (double)m->n_mtp_modules * attn_core_fwd_per_token(m, m->n_layers, seq_len);
}

double px_flops_head_fwd_per_token(const px_model *m)
{
    return 2.0 * (double)m->vocab * (double)m->hidden;
}

double px_flops_mtp_fwd_per_token(const px_model *m, int64_t seq_len)
{
    if (m->n_mtp_modules <= 0)
        return 0.0;
    double h = (double)m->hidden;
    double one = px_flops_layer_fwd_per_token(m, m->n_layers, seq_len) +
                 2.0 * (2.0 * h * h + 3.0 * h) + px_flops_head_fwd_per_token(m);
    return (double)m->n_mtp_modules * one;
}

double px_flops_model_per_token(const px_model *m, int64_t seq_len)
{
    double fwd = px_flops_head_fwd_per_token(m) + px_flops_mtp_fwd_per_token(m, seq_len);
    for (int64_t l = 0; l < m->n_layers; l++)
        fwd += px_flops_layer_fwd_per_token(m, l, seq_len);
    return 3.0 * fwd;
}

double px_flops_causal_keys(int64_t seq_len)
{
    return seq_len > 0 ? 0.5 * ((double)seq_len + 1.0) : 0.0;
}

double px_flops_model_causal_per_token(const px_model *m, int64_t seq_len)
{
    /* the convention's core is linear in the keys: scale it to the causal count */
    double full = 0.0, causal = 0.0;
    for (int64_t l = 0; l <= m->n_layers; l++) { /* layer n_layers: each MTP module's */
        double n = l < m->n_layers ? 1.0 : (double)m->n_mtp_modules;
        double core = attn_core_fwd_per_token(m, l, seq_len);
        double keys = px_sliding_keys_full(m, l, seq_len);
        full += n * core;
        causal += keys > 0.0 ? n * core * px_sliding_keys_causal(m, l, seq_len) / keys : 0.0;
    }
    return px_flops_model_per_token(m, seq_len) - 3.0 * (full - causal);
}

/* The forward FLOPs per token that layer `layer` runs again under choice
 * rc: its whole forward (full) or its attention core (selective). */
static double layer_recompute_per_token(const px_model *m, int64_t layer, int64_t seq_len,
                                        px_recompute rc)
{
    if (rc == PX_RECOMPUTE_FULL)
        return px_flops_layer_fwd_per_token(m, layer, seq_len);
    if (rc == PX_RECOMPUTE_SELECTIVE)
        return attn_core_fwd_per_token(m, layer, seq_len);
    return 0.0;
}

double px_flops_hw_per_token(const px_model *m, int64_t seq_len, px_recompute rc)
{
    return px_flops_hw_per_token_layers(m, seq_len, rc, NULL, 0);
}

double px_flops_hw_per_token_layers(const px_model *m, int64_t seq_len, px_recompute rc,
                                    const unsigned char *layer_recompute, int n_layer_recompute)
{
    double extra = 0.0;
    for (int64_t l = 0; l < m->n_layers; l++) {
        px_recompute r = rc;
        if (n_layer_recompute > 0)
            r = l < n_layer_recompute ? (px_recompute)layer_recompute[l] : PX_RECOMPUTE_NONE;
        extra += layer_recompute_per_token(m, l, seq_len, r);
    }
    /* the MTP modules' layers recompute as the plan's mode says */
    extra += (double)m->n_mtp_modules * layer_recompute_per_token(m, m->n_layers, seq_len, rc);
    return px_flops_model_per_token(m, seq_len) + extra;
}

double px_flops_model_per_step(const px_model *m, int64_t seq_len, double tokens)
{
    return px_flops_model_per_token(m, seq_len) * tokens;
}

double px_flops_hw_per_step(const px_model *m, int64_t seq_len, double tokens,
                            px_recompute rc)
{
    return px_flops_hw_per_token(m, seq_len, rc) * tokens;
}
