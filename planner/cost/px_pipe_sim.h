/* px_pipe_sim.h — a pipeline step timed on the executor's own timeline
 * (px_timeline, px_schedule.h) with each op's real duration.
 *
 * Why: the closed-form bubble (px_cost_bubble_over_ideal) assumes every
 * stage's forward and backward take the same time.  The executor runs the
 * ops of each stage in the timeline's order and exchanges the messages of
 * each phase as one blocking batch: a rank leaves a phase only when every
 * neighbour it exchanges with in that phase has reached it.  With stages of
 * unequal cost (the embedding on the first, the LM head and the loss on the
 * last) every phase waits for the slower neighbour, which interleaving
 * multiplies: its chunks alternate between light and heavy ones.
 * docs/cost-model.md, "The executor's conditions". */
#ifndef PX_PIPE_SIM_H
#define PX_PIPE_SIM_H

#include "px_error.h"
#include "px_plan.h"

/* Seconds from the first op of the step to the end of the last stage's
 * last exchange, for schedule s over pp stages, vpp chunks a stage and
 * n_micro micro-batches.  f_s, b_s: the forward and the whole backward of
 * one micro-batch through model chunk mc (index mc = chunk · pp + stage,
 * pp · vpp entries); w_s: of b_s, the weight-gradient part a zero-bubble
 * schedule runs as its own W op (ignored by the others); msg_s: one
 * pipeline message batch's transfer. */
px_status px_pipe_sim_step(px_schedule s, int pp, int vpp, int n_micro, const double *f_s,
                           const double *b_s, const double *w_s, double msg_s, double *step_s,
                           px_error *err);

#endif
