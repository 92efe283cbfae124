/* px_bound.h — a proven lower bound on the cost model's step time for a
 * configuration whose sizes are set (tp, cp, pp, vpp, dp, ep, etp,
 * micro-batch, micro-batch count, split) and whose ZeRO stage, recompute
 * choice (uniform or per layer) and schedule are still open.  The search
 * uses it to skip the timing of configurations that cannot reach its list
 * (px_search.c); the optimum is unchanged because the bound never exceeds
 * the step px_cost_eval returns for any of those choices.
 *
 * Why it holds (docs/cost-model.md, "Step time"): step = m (1 + bubble) x
 * the slowest stage's micro-batch + the pipeline sends + the exposed DP
 * traffic + the optimizer, every term >= 0; the slowest stage's
 * micro-batch is at least the mean over the pp stages of all the work of one
 * micro-batch (every layer's forward, backward and exposed TP/CP/EP
 * communication, the embedding and the head), each layer at its cheapest
 * recompute choice (none: no extra compute); the layer times do not depend
 * on the ZeRO stage or the schedule. */
#ifndef PX_BOUND_H
#define PX_BOUND_H

#include "px_cost.h"

/* The model's layers by kind, found once per model (px_bound_init). */
typedef struct {
    int64_t first[PX_LAYER_KINDS]; /* the first layer of each kind, -1: none */
} px_bound_layers;

void px_bound_init(const px_model *m, px_bound_layers *bl);

/* Seconds of one micro-batch on the slowest stage, at least, whatever the
 * ZeRO stage, recompute choices and schedule. */
double px_bound_stage_mb_s(px_cost_ctx *ctx, const px_bound_layers *bl, const px_parallel *par);

/* Seconds of the step, at least, over the schedules sched[0..n) (and any
 * ZeRO stage and recompute choice): n_micro (1 + the least bubble) x
 * px_bound_stage_mb_s. */
double px_bound_step_s(px_cost_ctx *ctx, const px_bound_layers *bl, const px_parallel *par,
                       const px_schedule *sched, int n);

#endif
