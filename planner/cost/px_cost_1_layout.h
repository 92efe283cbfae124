/* px_cost_1_layout.h — step 1 of the cost model (planner/cost/README.md):
 * what the layout alone decides.  The schedule's counts and the split are
 * in px_cost.h (the planner's interface); these are the steps' own. */
#ifndef PX_COST_1_LAYOUT_H
#define PX_COST_1_LAYOUT_H

#include <string.h>

#include "px_cost_types.h"

/* Layers of each kind and recompute choice on every stage of par. */
void stage_counts(const px_cost_ctx *ctx, const px_parallel *par, stage_layers *sl);

/* Whether a dense dimension of n ranks at rank stride st crosses a domain
 * of g GPUs. */
bool dim_crosses(int st, int n, int g);

/* Rank distance between consecutive members of an expert-data-parallel
 * group (the expert fold's stride etp·ep, placed by the default order, or
 * by pp outermost when pp_outermost). */
int expert_dp_rank_stride(const px_parallel *par, bool pp_outermost);

/* Members of rank 0's EP group on rank 0's node (the expert fold placed by
 * the default order, or pp outermost when pp_outermost); par->ep when the
 * group stays in a node (!crosses), 1 for another rank order (every peer
 * counted remote). */
int ep_ranks_in_node(const px_hw *hw, const px_parallel *par, bool pp_outermost, bool crosses);

/* Which of par's parallel groups cross a node (cached per grid in ctx). */
void find_crossings(px_cost_ctx *ctx, const px_parallel *par, crossings *x);

/* True when every stage between the first and the last holds the same
 * layers with the same choices, so that the stage loops may skip them. */
static inline bool middle_stages_identical(const px_cost_ctx *ctx, const px_parallel *par)
{
    return par->n_chunks == 0 && par->n_layer_recompute == 0 &&
           ctx->model->n_layers % ((int64_t)par->pp * par->vpp) == 0 &&
           ctx->n_kinds == 1;
}

/* Middle stages remembered by repeats_middle. */
enum { PX_SEEN_MAX = 8 };

/* Middle stages (1..p−2) that hold exactly the layers of an earlier middle
 * stage cannot be the worst: their time is the same and their memory no
 * larger (the in-flight count never grows with the stage index, and only
 * the first and last stages carry extras).  An uneven split has two kinds
 * of middle stage (floor(L/p) and one more layer), so the stage loops score
 * two stages instead of p − 2.  Returns true when stage st repeats one of
 * seen[0..*n); otherwise records it (up to PX_SEEN_MAX). */
static inline bool repeats_middle(const stage_layers *sl, int st, int p, int *seen, int *n)
{
    if (st == 0 || st == p - 1)
        return false;
    for (int i = 0; i < *n; i++)
        if (!memcmp(sl[seen[i]].n, sl[st].n, sizeof sl[st].n))
            return true;
    if (*n < PX_SEEN_MAX)
        seen[(*n)++] = st;
    return false;
}

#endif
