/* px_blocking.h — communication that runs blocking, between the compute
 * kernels: what `execute` does (its CPU backend and its engine never
 * overlap a collective with compute) and what `--overlap off` asks the cost
 * model to price (par.dp_overlap and par.tp_overlap false).
 * docs/cost-model.md, "Blocking communication (the executor)". */
#ifndef PX_BLOCKING_H
#define PX_BLOCKING_H

#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"

/* Seconds of waiting at blocking collectives: hw->sync_wait_s (measured by
 * `calibrate --mpi`; 0 elsewhere) for every synchronisation of a step on
 * the slowest stage, by the kind of collective.  tp, cp: per micro-batch
 * (they lie between the stage's kernels); dp_mb per micro-batch and
 * dp_step once a step (they lie after the backward). */
typedef struct {
    double tp, cp, dp_mb, dp_step;
} px_blocking_sync;

/* Counts, per layer and micro-batch, as the executor issues them: TP with
 * SP an all-gather and a reduce-scatter per block forward and three
 * collectives per block backward (10), without SP an all-reduce per block
 * each way (4), plus the cross-entropy's two all-reduces per micro-batch on
 * the last stage; CP the K/V all-gather forward, all-gather and
 * reduce-scatter backward (3); ZeRO-3 a weight all-gather forward and
 * backward and a gradient reduce-scatter (3), ZeRO-2 the reduce-scatter
 * (1).  Per step: the gradient all-reduce (ZeRO-0), reduce-scatter +
 * all-gather (ZeRO-1), the TP all-reduces of the SP-replicated gradients
 * (two norms a layer and the final norm) and the loss all-reduce.
 * An interruption can only hold a rank back by what it hits between two
 * synchronisations: each wait is scaled by px_blocking_wait_scale of the
 * compute before it against hw->sync_interval_s (the compute between two
 * synchronisations when the wait was measured): the per-micro-batch ones by
 * stage_mb_s (the slowest stage's micro-batch) over its synchronisations,
 * the step's first one after the backward by that interval too (with a
 * pipeline: one micro-batch, its messages synchronise the stages), or,
 * when nothing synchronises the micro-batches (DP with ZeRO 0-1, one rank),
 * by the whole step's compute (par->n_micro x stage_mb_s); the step's later
 * ones follow it closely and keep the measured wait. */
void px_blocking_sync_s(const px_model *m, const px_hw *hw, const px_parallel *par,
                        double stage_mb_s, px_blocking_sync *out);

/* How a wait measured after measured_s of compute scales to interval_s:
 * linearly below it (fewer interruptions land in a shorter interval), as
 * the square root above it (each rank's delay is a sum of independent
 * interruptions, whose difference spreads as the square root of their
 * number: a random walk).  1 when either is 0. */
double px_blocking_wait_scale(double interval_s, double measured_s);

/* The exposed DP / ZeRO time.  With par->dp_overlap off every stage's
 * collectives are exposed in full: ZeRO 0-2 reduce after the backward, and
 * ZeRO-3 gathers each layer's weights right before the layer runs (forward
 * and again in the backward) and reduce-scatters its gradients right after
 * (the executor's px_shard.c), each a blocking call on the critical path.
 * Otherwise `exposed` as the overlap model computed it. */
double px_blocking_dp_exposed(const px_parallel *par, double total, double exposed);

/* Bytes the executor's blocking ZeRO-3 streams per micro-batch besides its
 * collectives (executor/px_shard.c), for `params` elements on the stage,
 * sharded over the dp x cp group, weights of e bytes, fp32 gradients: each
 * unit's gathered weights are a fresh zeroed buffer with this rank's piece
 * copied in, forward and again backward; its gradient a fresh zeroed fp32
 * buffer, whose reduce-scattered piece is added to the shard (2 reads, 1
 * write).  *fwd_bytes: the forward's part.  0 unless par->zero >= 3, the
 * group has more than one rank and par->dp_overlap is off. */
double px_blocking_zero3_stream_bytes(const px_parallel *par, double params, double e,
                                      double *fwd_bytes);

/* Bytes the executor's GEMMs stream per micro-batch for their weights, for
 * `params` elements on the stage, weights of e bytes, gradients of
 * grad_bytes: the forward reads every weight, the backward reads it again
 * (input gradients) and reads and writes its gradient (the weight-gradient
 * GEMM accumulates into it).  A calibrated CPU profile's GEMM rates are of
 * warm operands (the best of repeated calls, px_calib_gemm.c), while a
 * layer's weights have left the core's caches since the previous
 * micro-batch touched them, so these bytes come on top of the GEMMs'
 * FLOPs; the fewer rows a micro-batch has, the larger their share.
 * *fwd_bytes: the forward's part. */
double px_blocking_weight_stream_bytes(double params, double e, double grad_bytes,
                                       double *fwd_bytes);

#endif
