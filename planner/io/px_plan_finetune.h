/* px_plan_finetune.h — parallel.finetune in a plan file (docs/plan-schema.md):
 * written only when the plan fine-tunes, so pre-training plans keep their
 * bytes; read as pre-training when absent. */
#ifndef PX_PLAN_FINETUNE_H
#define PX_PLAN_FINETUNE_H

#include "px_finetune.h"
#include "px_plan_json.h"

/* Adds "finetune" to the parallel object po unless ft is pre-training. */
px_status px_plan_finetune_write(const px_finetune *ft, json_t *po, px_error *err);

/* Reads po's "finetune" (absent: pre-training with the LoRA defaults). */
px_status px_plan_finetune_read(json_t *po, const char *file, px_finetune *out, px_error *err);

#endif
