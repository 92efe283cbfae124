/* px_search_plan.h — the search `plan` runs, as one call shared by the plan
 * command and by everything that must predict what plan predicts (validate's
 * published-runs rows, calibrate --from-runs): the framework's capabilities
 * and runtime traits bound to the options, and with every dimension fixed
 * exactly that layout, split uniformly, unless the caller named a stage
 * partition. */
#ifndef PX_SEARCH_PLAN_H
#define PX_SEARCH_PLAN_H

#include <stdbool.h>

#include "px_error.h"
#include "px_framework.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_search.h"

/* Runs px_search_run on o with o->caps and o->run taken from fw (which must
 * outlive the call).  partition_given: the caller asked for a stage
 * partition by name (plan's --partition / --no-milp), which then stays as o
 * says; otherwise a fully fixed layout (px_search_fully_fixed) turns the
 * program off.  *fixed_uniform (may be NULL) says whether that happened. */
px_status px_search_for_plan(const px_model *m, const px_hw *hw, const px_framework *fw,
                             int gpus, px_search_opts *o, bool partition_given,
                             px_search_result *res, bool *fixed_uniform, px_error *err);

#endif
