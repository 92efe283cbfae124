/* px_hf.h — a Hugging Face config.json (transformers' PretrainedConfig of a
 * decoder-only model) read into a px_model.  docs/model-schema.md, "Hugging
 * Face configs", lists the model types and what each field changes. */
#ifndef PX_HF_H
#define PX_HF_H

#include "px_error.h"
#include "px_model.h"
#include "px_plan_json.h"

/* root: the parsed config; file names it in errors.  An unsupported
 * model_type, or a field the cost model cannot follow, is refused naming the
 * field and the allowed values. */
px_status px_model_from_hf(json_t *root, const char *file, px_model *m, px_error *err);

#endif
