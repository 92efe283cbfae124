/* px_cost_2_ops.h — step 2 of the cost model (planner/cost/README.md): a
 * layer's shape, and the sizes of its operations.  The formulas the tests
 * and the planner call by name are in px_cost.h. */
#ifndef PX_COST_2_OPS_H
#define PX_COST_2_OPS_H

#include "px_cost_types.h"

/* The shape of one layer (moe or dense) under recompute choice rc. */
void make_shape(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                px_recompute rc, px_act_shape *sh);

/* Small and on the search's path: inline. */
/* Bytes of `params` elements under ZeRO stage `zero` sharded over `shard`
 * ranks; fills weights/grads/optimizer. */
static inline void static_bytes(double params, double shard, int zero, px_bytes_per_param bpp,
                                double *w, double *g, double *o)
{
    if (shard < 1.0)
        shard = 1.0;
    *w = params * bpp.weights / (zero >= 3 ? shard : 1.0);
    *g = params * bpp.grads / (zero >= 2 ? shard : 1.0);
    *o = params * bpp.optimizer / (zero >= 1 ? shard : 1.0);
}

#endif
