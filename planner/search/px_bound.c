/* px_bound.c — the step-time lower bound of px_bound.h. */
#include "px_bound.h"

#include <math.h>

void px_bound_init(const px_model *m, px_bound_layers *bl)
{
    for (int k = 0; k < PX_LAYER_KINDS; k++)
        bl->first[k] = -1;
    for (int64_t l = 0; l < m->n_layers; l++) {
        int64_t *first = &bl->first[px_model_layer_kind(m, l)];
        if (*first < 0)
            *first = l;
    }
}

/* Layers the stages hold: all of them, or the recorded split's (which the
 * cost model cuts at the model's last layer). */
static int64_t layers_held(const px_model *m, const px_parallel *par)
{
    if (par->n_chunks <= 0)
        return m->n_layers;
    int64_t n = 0;
    for (int c = 0; c < par->n_chunks; c++)
        n += par->layers_per_chunk[c];
    return n < m->n_layers ? n : m->n_layers;
}

/* One layer's forward + backward + exposed TP/CP/EP communication, one
 * micro-batch, without recomputation (px_cost_layer). */
static double layer_s(px_cost_ctx *ctx, const px_parallel *par, int64_t layer)
{
    px_layer_cost lc;
    px_cost_layer(ctx, par, layer, &lc);
    return lc.fwd_s + lc.bwd_s;
}

double px_bound_stage_mb_s(px_cost_ctx *ctx, const px_bound_layers *bl, const px_parallel *par)
{
    const px_model *m = ctx->model;
    int64_t held = layers_held(m, par);
    /* the layers are held in model order from the first: those of each
     * kind among the first `held` */
    double work = 0.0;
    for (int k = 0; k < PX_LAYER_KINDS; k++) {
        int64_t n = ctx->kind_prefix[k][held];
        if (n > 0 && bl->first[k] >= 0)
            work += (double)n * layer_s(ctx, par, bl->first[k]);
    }
    px_stage_extras ex;
    px_cost_stage_extras(ctx, par, &ex);
    work += ex.first_s + ex.last_s;
    return work / (double)par->pp;
}

double px_bound_step_s(px_cost_ctx *ctx, const px_bound_layers *bl, const px_parallel *par,
                       const px_schedule *sched, int n)
{
    double bubble = INFINITY;
    for (int i = 0; i < n; i++) {
        double b = px_cost_bubble_over_ideal(sched[i], par->pp, par->vpp, par->n_micro);
        bubble = b < bubble ? b : bubble;
    }
    if (!(bubble >= 0.0))
        bubble = 0.0;
    return (double)par->n_micro * (1.0 + bubble) * px_bound_stage_mb_s(ctx, bl, par);
}
