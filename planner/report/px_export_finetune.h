/* px_export_finetune.h — a fine-tuning plan in the export formats: the PEFT
 * settings where the format has them (Megatron-Bridge / NeMo's peft), the
 * fine-tuning switch of Megatron-LM, and the refusal where a format cannot
 * express LoRA (docs/export.md). */
#ifndef PX_EXPORT_FINETUNE_H
#define PX_EXPORT_FINETUNE_H

#include "px_export.h"

/* PX_ERR_UNSUPPORTED naming LoRA where target t's file has no adapters
 * (Megatron-LM's pretrain_gpt.py, torchtitan's job TOML, the DeepSpeed
 * config); PX_OK otherwise. */
px_status px_export_finetune_check(const px_plan *plan, px_export_target t, px_error *err);

/* Megatron-LM: --finetune for a full fine-tune (the weights loaded with
 * --load, no optimizer state, iteration 0). */
void px_export_finetune_megatron(const px_plan *plan, px_buf *b);

/* Megatron-Bridge / NeMo 2: the peft section (LoRA's target_modules, dim,
 * alpha) or, for a full fine-tune, where the base checkpoint goes. */
void px_export_finetune_nemo(const px_plan *plan, px_buf *yaml, px_buf *hydra);

#endif
