/* px_cost_2_ops.h — step 2 of the cost model (planner/cost/README.md): a
 * layer's shape, and the sizes of its operations.  The formulas the tests
 * and the planner call by name are in px_cost.h. */
#ifndef PX_COST_2_OPS_H
#define PX_COST_2_OPS_H

#include "px_cost_precision.h"
#include "px_cost_types.h"

/* The shape of one layer of kind k under recompute choice rc. */
void make_shape(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k,
                px_recompute rc, px_act_shape *sh);

/* Whether the llama block's RMSNorms run as PyTorch's composite ops (the
 * framework's fused_norm false): GPT's LayerNorm is one ATen kernel either
 * way. */
static inline bool eager_norm_of(const px_cost_ctx *ctx)
{
    return ctx->model->block == PX_BLOCK_LLAMA && ctx->run && !ctx->run->fused_norm;
}

/* Whether the layers' quantised linears keep their activation-dtype input for
 * the backward (the framework's quant_keeps_hp_input): torchao's linears
 * save the bf16 input and weight, except under its float8 tensorwise
 * tensor-parallel styles (Float8ColwiseParallel, Float8RowwiseParallel),
 * which cast the input before the collective, so the linear receives,
 * and saves, float8. */
static inline bool quant_hp_input_of(const px_cost_ctx *ctx, const px_parallel *par)
{
    return ctx->run && ctx->run->quant_keeps_hp_input && px_prec_is_low(par->precision) &&
           !(par->precision == PX_PREC_FP8_CS && par->tp > 1);
}

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

/* Rows of the embedding and the head on the GPUs of a TP group: the
 * vocabulary padded as the framework pads it (px_caps_vocab_rows). */
static inline double vocab_rows(const px_cost_ctx *ctx, int tp)
{
    int64_t v = ctx->model->vocab;
    int q = ctx->run ? ctx->run->vocab_rows_multiple * tp : 0;
    return q > 0 ? (double)((v + q - 1) / q * q) : (double)v;
}

/* One layer's parameters on a GPU outside its routed experts: the matrices
 * (and a Mamba mixer's per-channel weights) split over TP, the pre-norms
 * (and a MoE layer's router) whole on every TP rank, as Megatron's TE and
 * core layers keep them. */
static inline double layer_local_params(const px_cost_ctx *ctx, int tp, px_layer_kind k)
{
    bool moe = px_layer_has_experts(k);
    double whole = (double)ctx->kind_norm_params[k] + (moe ? (double)ctx->router_params : 0.0);
    double all = (double)(ctx->kind_params[k] - (moe ? ctx->expert_params : 0));
    return (all - whole) / tp + whole;
}

/* The kind of the model's first layer (what stage 0 starts with). */
static inline px_layer_kind first_kind(const px_cost_ctx *ctx)
{
    return px_model_layer_kind(ctx->model, 0);
}

/* The kind of the MTP modules' layer (shaped like layer n_layers: a
 * transformer block; hybrid models have no MTP modules here). */
static inline px_layer_kind mtp_layer_kind(const px_cost_ctx *ctx)
{
    return px_model_layer_kind(ctx->model, ctx->model->n_layers);
}

/* The plan's one recompute mode (none where the plan has no single one):
 * what an extra layer outside the per-layer choices runs, as the MTP's. */
static inline px_recompute plan_recompute(const px_parallel *par)
{
    return par->recompute >= 0 && par->recompute < PX_RECOMPUTE_COUNT ? par->recompute
                                                                       : PX_RECOMPUTE_NONE;
}

/* The first stage's embedding on a GPU: the (padded) token table split
 * over TP, learned positions whole; the last stage's head and final norm. */
static inline double embedding_local_params(const px_cost_ctx *ctx, int tp)
{
    double h = (double)ctx->model->hidden;
    double positions = (double)ctx->pc.embedding - (double)ctx->model->vocab * h;
    return vocab_rows(ctx, tp) * h / tp + positions;
}

static inline double head_local_params(const px_cost_ctx *ctx, int tp)
{
    double h = (double)ctx->model->hidden;
    double extra = (vocab_rows(ctx, tp) - (double)ctx->model->vocab) * h;
    return ((double)ctx->head_params + extra) / tp;
}

#endif
