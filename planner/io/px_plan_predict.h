/* px_plan_predict.h — the prediction a plan file carries beyond the step
 * totals: each pipeline stage's memory by kind and micro-batch time, and the
 * step time by the executor's trace classes.  The plan's writers fill them
 * from the cost model once, so every reader (execute's report, compare)
 * reads the same numbers instead of re-running the model. */
#ifndef PX_PLAN_PREDICT_H
#define PX_PLAN_PREDICT_H

#include "px_plan.h"

/* Fills plan->n_stages, plan->stages and plan->class_time for plan->par
 * (model and hw as in the plan), with the framework's runtime traits the
 * search scored it under (run; NULL: Parallax's own), so the numbers agree
 * with plan->pred.  An error when the cost model cannot score the
 * configuration. */
struct px_fw_runtime;
px_status px_plan_predict(px_plan *plan, const struct px_fw_runtime *run, px_error *err);

/* Layers of each pipeline stage (over its vpp chunks; chunk c sits on stage
 * c mod pp) under par's split, or the default split when par records none:
 * layers needs par->pp entries. */
void px_plan_stage_layers(const px_parallel *par, int64_t n_layers, int *layers);

#endif
