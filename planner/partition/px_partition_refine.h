/* px_partition_refine.h — the stage partitioner applied to a planner
 * candidate: builds the per-layer problem of px_partition.h from the cost
 * model (px_cost_layer, px_cost_stage_extras), solves it, and writes the
 * split and the per-layer recompute choice back into the configuration.
 *
 * Layers are costed one by one, so mixed models are exact: DeepSeek-V3's
 * three dense layers and its MoE layers differ, the embedding sits on the
 * first stage and the LM head with the loss (a large vocabulary) on the
 * last. */
#ifndef PX_PARTITION_REFINE_H
#define PX_PARTITION_REFINE_H

#include "px_cost.h"
#include "px_error.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_partition.h"
#include "px_plan.h"

/* Every function here costs with ctx: the model, the hardware and how the
 * framework runs the plan (ctx->run, px_framework.h; NULL: the planner's
 * defaults), the context the search scores its candidates with, so that the
 * program's numbers are the ones `plan` prints and writes.  ctx's workspace
 * is used (one thread at a time). */

/* Fills pb for par: per layer i and choice r, time = fwd + bwd +
 * recompute of one micro-batch, activation and static bytes from
 * px_cost_layer; embedding / head + loss from px_cost_stage_extras; the
 * point-to-point buffers on every stage (p > 1); in-flight counts from
 * px_cost_inflight for par's schedule; limit = hbm - reserve, less the one
 * layer's full activations a full-recompute stage holds while it reruns a
 * layer (so that any choice the program makes is affordable). */
px_status px_partition_build(px_cost_ctx *ctx, const px_parallel *par, px_partition_problem *pb,
                             px_error *err);

/* What px_partition_refine found, for --explain's per-stage table. */
typedef struct {
    px_partition_solution before; /* par's split and recompute as they came in */
    px_partition_solution after;  /* the program's answer (== before if not better) */
    bool changed;                 /* par and pred were updated */
    int64_t mem_limit_bytes;      /* the limit the program used (px_partition_format_stages) */
    bool proven_optimal;          /* the program's answer is proven (before the comparison) */
    bool exact_dp;                /* ... and came from the exact DP, without GLPK */
    double work;                  /* GLPK's work over every solve, failed ones included
                                   * (px_milp.h's unit) */
    bool clock_hit;               /* the clock stopped one of them (px_partition_solution) */
} px_partition_report;

/* Solves the partition program for the candidate par and, when its slowest
 * stage is faster than par's current split (or par's split does not fit and
 * the program's does), records the split in par->layers_per_chunk
 * (n_chunks = pp * vpp) and the choices in par->layer_recompute
 * (n_layer_recompute = n_layers; px_cost_eval and the executor cost and run
 * every layer by its own choice; par->recompute becomes the common choice
 * when all layers agree and is left as it was otherwise), and re-scores pred
 * with px_cost_eval.  pred is in/out (the candidate's own
 * prediction, or zeroed; its train_tokens is kept; NULL: not re-scored).
 * Better means a smaller objective_s: the slowest stage, or with
 * interleaving the step's m T + (p-1) Tc.  Otherwise leaves par and pred
 * alone.  The program's recompute choices are limited to the bits
 * (1u << px_recompute) of allowed_recompute; 0 allows all three (the
 * planner passes the choice the user fixed, plan --recompute).  opts may be
 * NULL (defaults); report may be NULL.
 * PX_ERR_INFEASIBLE when no split fits (the message names the stage and the
 * overflow); PX_ERR_SOLVER when GLPK fails or finds nothing in time (par
 * untouched: keep the candidate as it was). */
px_status px_partition_refine(px_cost_ctx *ctx, px_parallel *par, px_prediction *pred,
                              const px_partition_opts *opts, unsigned allowed_recompute,
                              px_partition_report *report, px_error *err);

/* A lower bound on the slowest stage's time per micro-batch (seconds) that
 * any split and any recompute choice can give par: all the layers at their
 * fastest choice plus the embedding and the head, spread evenly over the
 * pp stages (the slowest stage is at least the average), or the
 * partitioner's memory-aware bound (px_partition_lower_bound) when larger.  The planner turns
 * it into a bound on the step time to skip candidates that cannot win. */
px_status px_partition_refine_bound(px_cost_ctx *ctx, const px_parallel *par,
                                    double *stage_lower_s, px_error *err);

/* The cost model's memory of every stage of par (its split and recompute
 * choices, which sol must hold) written into sol->stage_mem_bytes, with
 * fits, fullest_stage and max_over_bytes restated against *limit = HBM -
 * reserve: the numbers the plan file and --explain's breakdown carry
 * (px_cost_stage_memory, the one function for a stage's memory). */
px_status px_partition_cost_memory(px_cost_ctx *ctx, const px_parallel *par,
                                   px_partition_solution *sol, int64_t *limit, px_error *err);

#endif
