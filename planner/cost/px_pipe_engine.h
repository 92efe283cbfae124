/* px_pipe_engine.h — the communication a pipeline engine adds to the step
 * beyond the activations' volumes (docs/cost-model.md, "A pipeline engine
 * with blocking transfers"): DeepSpeed's pipeline engine.
 *
 * Its TrainSchedule runs 2·(m + p − 1) steps; in each, a stage first
 * exchanges with one neighbour (a forward step receives the activation from
 * the previous stage and sends it the gradient of the step before; a
 * backward step sends the next stage the activation of the step before and
 * receives its gradient), each a blocking send or receive of its own
 * (deepspeed/runtime/pipe/engine.py _exec_send_activations,
 * _exec_recv_grads...; p2p.py send / recv), and then computes.  With TP
 * the activation travels partitioned (1/t a rank) and is all-gathered over
 * the TP group where it is used: the received input before the forward,
 * the stage's own output (freed after sending) and the received gradient
 * before the backward (PartitionedTensor.full()).  Neighbours therefore
 * meet at every step: the critical path carries one transfer per stage of
 * the fill and the drain and, in the steady state, all four transfers of a
 * micro-batch (a max-plus evaluation of the schedule gives 2(p − 1) + 4(m − 1)
 * within two), and the three gathers of every forward / backward on it.
 * Megatron's 1F1B pairs a send with a receive in one batched exchange: two
 * a micro-batch (px_cost_7_pipe.c, pp_step_comm).
 *
 * After the schedule the engine all-reduces the gradient of the tied
 * embedding between the first and the last stage (ReduceTiedGrads:
 * _exec_reduce_tied_grads, the main fp32 gradient under the BF16
 * optimizer) before the data-parallel reduction: exposed. */
#ifndef PX_PIPE_ENGINE_H
#define PX_PIPE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "px_cost.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"

/* One-way transfers on the critical path of a step: 2(p − 1) + 4(m − 1);
 * 0 without a pipeline. */
double px_pipe_serial_transfers(int pp, int64_t n_micro);

/* TP all-gathers of the partitioned activation on the critical path: the
 * three of a micro-batch on each of the m + p − 1 stage-slots the step
 * runs through; 0 without a pipeline. */
double px_pipe_serial_gathers(int pp, int64_t n_micro);

/* Seconds of a step's pipeline transfers: one transfer takes p2p_s, one
 * gather gather_s. */
double px_pipe_serial_s(int pp, int64_t n_micro, double p2p_s, double gather_s);

/* Elements of the tied embedding's gradient one GPU of the first (and the
 * last) stage all-reduces: vocab · hidden / tp; 0 when the embeddings are
 * not tied or there is no pipeline (both copies on one stage). */
double px_pipe_tied_grad_elems(const px_model *m, const px_parallel *par);

/* Seconds of that all-reduce over the two stages (grad_bytes a gradient
 * element), crossing nodes or not. */
double px_pipe_tied_grad_s(const px_hw *hw, const px_model *m, const px_parallel *par,
                           double grad_bytes, bool crosses_node);

/* The step's pipeline communication under the traits of ctx->run: with
 * pp_blocking_p2p, *pp_total becomes the blocking engine's (the partitioned
 * activation's transfer over the PP link, pp_crosses, and its gather over
 * the TP group, tp_crosses); with tied_grad_allreduce the tied gradient's
 * all-reduce is added to *pp_total and its bytes to *pp_bytes.  Nothing
 * without those traits or without a pipeline. */
void px_pipe_engine_comm(const px_cost_ctx *ctx, const px_parallel *par, bool pp_crosses,
                         bool tp_crosses, double *pp_total, double *pp_bytes);

#endif
