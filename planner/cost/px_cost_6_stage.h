/* px_cost_6_stage.h — the cost model's stage times (planner/cost/README.md):
 * a stage's micro-batch from its layers' times, and the slowest stage. */
#ifndef PX_COST_6_STAGE_H
#define PX_COST_6_STAGE_H

#include "px_cost_types.h"

/* Sums each layer's times of stage sl by its kind (lt[k]: one layer of kind
 * k) and recompute choice; extra: embedding / head seconds. */
void time_of_stage(const stage_layers *sl, const layer_time lt[PX_LAYER_KINDS],
                   double extra, stage_time *q);
/* The node crossings and the times of one layer of each kind. */
void time_layer_kinds(px_cost_ctx *ctx, const px_parallel *par, crossings *x,
                      layer_time lt[PX_LAYER_KINDS]);

/* The slowest stage's micro-batch, by part (seconds, and bytes per
 * micro-batch); the head's and embedding's GEMM / pointwise time is booked
 * as forward / backward and as element-wise time. */
typedef struct {
    double mb, fwd, bwd, rc, tp, tpt, ep, ept, cp, cpt, off, gemm, attn, mem, tpb, epb, cpb;
} slowest_stage;

/* The slowest of par's stages (sl: stage_counts), into *w. */
void slowest_stage_of(const px_cost_ctx *ctx, const px_parallel *par,
                      const stage_layers *sl, const layer_time lt[PX_LAYER_KINDS],
                      double first_s, double last_s, slowest_stage *w);

#endif
