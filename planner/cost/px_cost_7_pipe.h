/* px_cost_7_pipe.h — the cost model's pipeline (planner/cost/README.md):
 * the stages' point-to-point traffic and the executor's bubble. */
#ifndef PX_COST_7_PIPE_H
#define PX_COST_7_PIPE_H

#include "px_cost_types.h"

/* PP point-to-point seconds and bytes of one step (x: node crossings). */
void pp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                  double *pp_total_out, double *pp_bytes_out);

/* The bubble of a blocking plan (par->dp_overlap off, the executor) on the
 * executor's pipeline timeline; `bubble` when it cannot be simulated. */
double pipe_timeline_bubble(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                            const layer_time lt[PX_LAYER_KINDS], double first_s,
                            double last_s, double wait_mb_s, double ideal, double pp_total,
                            double bubble);

#endif
