/* px_finetune.h — what a plan trains: the whole model from random weights
 * (pre-training), the whole model from a checkpoint (full fine-tuning, SFT)
 * or low-rank adapters on a frozen base (LoRA, Hu et al. 2021).  The costs
 * of each are in docs/cost-model.md, "Fine-tuning". */
#ifndef PX_FINETUNE_H
#define PX_FINETUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "px_error.h"

typedef enum {
    PX_FT_NONE = 0, /* pre-training */
    PX_FT_FULL,     /* SFT: every weight trained, the costs of pre-training */
    PX_FT_LORA,     /* frozen base, trained adapters */
    PX_FT_COUNT
} px_ft_mode;

/* The linear layers of a transformer layer LoRA can adapt, as bits. */
enum {
    PX_LORA_QKV = 1u << 0,  /* the fused query/key/value projection */
    PX_LORA_PROJ = 1u << 1, /* the attention output projection */
    PX_LORA_FC1 = 1u << 2,  /* the MLP's first linear (gate and up when gated) */
    PX_LORA_FC2 = 1u << 3,  /* the MLP's second linear */
    PX_LORA_ALL = 0xfu
};

/* Megatron-Bridge's and NeMo 2.0's LoRA defaults (peft/lora.py): rank
 * ("dim") 32, alpha 32, all four linears of each layer. */
#define PX_LORA_DEFAULT_RANK 32
#define PX_LORA_DEFAULT_ALPHA 32.0
#define PX_LORA_MAX_RANK 65536

typedef struct {
    px_ft_mode mode;
    int rank;         /* r: A is in x r, B is r x out */
    double alpha;     /* the adapters' scale alpha / r: no cost, recorded */
    unsigned targets; /* PX_LORA_* bits, never 0 */
} px_finetune;

/* Pre-training, with the LoRA defaults ready for --finetune lora. */
void px_finetune_init(px_finetune *f);

static inline bool px_finetune_is_lora(const px_finetune *f)
{
    return f->mode == PX_FT_LORA;
}

const char *px_finetune_mode_name(px_ft_mode m); /* "none", "full", "lora" */
px_status px_finetune_mode_parse(const char *s, px_ft_mode *out, px_error *err);

/* The target names in bit order: "qkv", "proj", "fc1", "fc2" (Megatron's
 * linear_qkv, linear_proj, linear_fc1, linear_fc2). */
const char *px_lora_target_name(int bit);
#define PX_LORA_TARGET_COUNT 4

/* A comma-separated list of target names, or "all"; repeated names are one. */
px_status px_lora_targets_parse(const char *s, unsigned *out, px_error *err);

/* One LoRA setting from its text: key "rank" (1..PX_LORA_MAX_RANK), "alpha"
 * (positive), "targets" (px_lora_targets_parse). */
px_status px_lora_set(px_finetune *f, const char *key, const char *value, px_error *err);

/* "qkv,proj,fc1,fc2" into buf. */
void px_lora_targets_format(unsigned targets, char *buf, size_t size);

#endif
