/* px_hybrid.h — hybrid Mamba-2 / attention stacks (px_model.layer_pattern
 * and mamba_*; Megatron-Core's hybrid models, NVIDIA's Nemotron-H and
 * Nemotron 3): the pattern's symbols, the preset keys "layer_pattern" and
 * "mamba", and the Mamba-2 mixer's sizes (docs/model-schema.md,
 * docs/cost-model.md "Hybrid Mamba-2 models"). */
#ifndef PX_HYBRID_H
#define PX_HYBRID_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_model.h"
#include "px_plan_json.h"

/* The pattern's symbols, Megatron-Core's (megatron/core/ssm/
 * mamba_hybrid_layer_allocation.py): "M*-E", in px_layer_kind order from
 * PX_LAYER_MAMBA on. */
#define PX_HYBRID_SYMBOLS "M*-E"

/* The default width of the mixer's causal convolution (Mamba-2's d_conv). */
#define PX_MAMBA_CONV_DEFAULT 4

bool px_model_is_hybrid(const px_model *m);

/* The kind a pattern symbol names (a symbol outside PX_HYBRID_SYMBOLS:
 * PX_LAYER_DENSE; px_hybrid_check refuses it first). */
px_layer_kind px_hybrid_kind(char symbol);

/* The pattern's consistency: n_layers symbols of PX_HYBRID_SYMBOLS, the
 * Mamba sizes where 'M' layers exist (heads split into groups), experts
 * where 'E' layers exist, and none of the transformer-only options (MLA,
 * MTP modules, sandwich norms, a GPT block, a MoE layer rule). */
px_status px_hybrid_check(const px_model *m, px_error *err);

/* Reads "layer_pattern" and "mamba" (an object of heads, head_dim, state,
 * groups, conv) from obj (the model's JSON); path names obj in errors ("" at
 * a file's root).  Absent: not a hybrid. */
px_status px_hybrid_read(px_model *m, json_t *obj, const char *file, const char *path,
                         px_error *err);

/* Adds the two keys to obj for a hybrid model; 0, or -1 out of memory. */
int px_hybrid_write(const px_model *m, json_t *obj);

/* The mixer's sizes, elements: d_inner (heads x head_dim); in_proj's outputs
 * z, x, B, C and dt (2 d_inner + 2 groups x state + heads); the convolved
 * channels x, B, C (d_inner + 2 groups x state). */
int64_t px_mamba_d_inner(const px_model *m);
int64_t px_mamba_in_proj_width(const px_model *m);
int64_t px_mamba_conv_channels(const px_model *m);

/* One mixer's parameters: in_proj and out_proj (the matmul weights), the
 * convolution's weights and biases, dt_bias, A_log and D a head, the gated
 * RMSNorm's weight; its layer's pre-norm is not counted here. */
int64_t px_mamba_matmul_params(const px_model *m);
int64_t px_mamba_params(const px_model *m);

#endif
