/* px_blocking.h — communication that runs blocking, between the compute
 * kernels: what `execute` does (its CPU backend and its engine never
 * overlap a collective with compute) and what `--overlap off` asks the cost
 * model to price (par.dp_overlap and par.tp_overlap false).
 * docs/cost-model.md, "Blocking communication (the executor)". */
#ifndef PX_BLOCKING_H
#define PX_BLOCKING_H

#include "px_plan.h"

/* The exposed DP / ZeRO time.  With par->dp_overlap off every stage's
 * collectives are exposed in full: ZeRO 0-2 reduce after the backward, and
 * ZeRO-3 gathers each layer's weights right before the layer runs (forward
 * and again in the backward) and reduce-scatters its gradients right after
 * (the executor's px_shard.c), each a blocking call on the critical path.
 * Otherwise `exposed` as the overlap model computed it. */
double px_blocking_dp_exposed(const px_parallel *par, double total, double exposed);

#endif
