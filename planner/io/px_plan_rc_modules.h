/* px_plan_rc_modules.h — parallel.recompute_modules in a plan file
 * (docs/plan-schema.md): the names of what a selective layer reruns, each
 * once, written only where the set is not the default (the attention core),
 * so other plans keep their bytes; read as the default when absent. */
#ifndef PX_PLAN_RC_MODULES_H
#define PX_PLAN_RC_MODULES_H

#include "px_plan_json.h"

/* Adds "recompute_modules" (an array of px_rc_module names, bits of set) to
 * the parallel object po unless set is the default. */
px_status px_plan_rc_modules_write(unsigned set, json_t *po, px_error *err);

/* Reads po's "recompute_modules" into *set (absent: PX_RCM_DEFAULT);
 * whether the set suits the plan is px_plan_check's. */
px_status px_plan_rc_modules_read(json_t *po, const char *file, unsigned *set, px_error *err);

#endif
