/* px_cost_5_layer.h — the cost model's layer times (planner/cost/README.md):
 * one layer's seconds by part, and the head's and embedding's. */
#ifndef PX_COST_5_LAYER_H
#define PX_COST_5_LAYER_H

#include "px_cost_types.h"

/* Fraction of the compute a collective in flight takes (the profile's
 * comm_overlap_cost). */
double comm_sm_fraction(const px_hw *hw);
/* True when the profile has a measured bandwidth for element-wise class c. */
bool mem_class_measured(const px_hw *hw, px_mem_class c);
/* One layer's times (a layer of kind `kind`) for one micro-batch on one GPU; x: the
 * node crossings of par (px_cost_1_layout.h). */
void time_layer(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind kind,
                const crossings *x, layer_time *lt);
/* Head and embedding work of one micro-batch (seconds); the last stage's
 * includes the MTP modules (docs/cost-model.md, "Multi-token prediction"). */
void extras_time(px_cost_ctx *ctx, const px_parallel *par, double *first_s,
                 double *last_s);
/* Parameters of one layer on one GPU: its dense part, and all of it. */
double layer_dense_gpu_params(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k);
double layer_gpu_params(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k);

#endif
