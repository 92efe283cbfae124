/* px_plan_offload.h — parallel.offload in a plan file (docs/plan-schema.md):
 * {"kind": "optimizer"|"none", "fraction": F, and with activation offload
 * "activations": true, "activation_layers": N}, written only when the plan
 * offloads, so other plans keep their bytes; read as no offload when absent. */
#ifndef PX_PLAN_OFFLOAD_H
#define PX_PLAN_OFFLOAD_H

#include "px_offload.h"
#include "px_plan_json.h"

/* Adds "offload" to the parallel object po unless nothing is offloaded. */
px_status px_plan_offload_write(const px_offload *o, json_t *po, px_error *err);

/* Reads po's "offload" (absent: none). */
px_status px_plan_offload_read(json_t *po, const char *file, px_offload *out, px_error *err);

#endif
