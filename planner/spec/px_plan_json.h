/* px_plan_json.h — the JSON objects of models, hardware profiles and plans,
 * for callers that embed them in a larger document (`plan --json`) or read
 * them from one.  Kept apart from px_plan.h so that only the code that wants
 * jansson includes it. */
#ifndef PX_PLAN_JSON_H
#define PX_PLAN_JSON_H

#include <jansson.h>

#include "px_plan.h"

/* New object (caller decrefs) with every field of the plan, in the schema of
 * docs/plan-schema.md.  Also declared in px_plan.h. */
px_status px_plan_to_json(const px_plan *plan, json_t **out, px_error *err);

/* Reads a plan object strictly.  file names the input in messages (may be
 * NULL). */
px_status px_plan_from_json(json_t *root, const char *file, px_plan *out, px_error *err);

/* Model spec object (the preset schema without aliases/description).  path
 * is the JSON path of obj for messages ("" at a preset's root: then the
 * preset-only keys aliases, description and source are accepted). */
px_status px_model_to_json(const px_model *m, json_t **out, px_error *err);
px_status px_model_from_json(json_t *obj, const char *file, const char *path, px_model *out,
                             px_error *err);

/* A model from a JSON object in memory: a preset object, or a Hugging Face
 * config.json object (it has "model_type").  label stands for the file in
 * messages and names a Hugging Face model ("<dir>/config.json": dir). */
px_status px_model_from_any_json(json_t *root, const char *label, px_model *out,
                                 px_error *err);

/* Hardware profile object (docs/hw-schema.md). */
px_status px_hw_to_json(const px_hw *hw, json_t **out, px_error *err);
px_status px_hw_from_json(json_t *obj, const char *file, const char *path, px_hw *out,
                          px_error *err);

#endif
