/* px_cost_4_memory.h — the cost model's memory (planner/cost/README.md):
 * each stage's bytes by kind and the worst stage, from steps 1 to 3. */
#ifndef PX_COST_4_MEMORY_H
#define PX_COST_4_MEMORY_H

#include "px_checked.h"
#include "px_cost_1_layout.h"
#include "px_cost_runtime.h"

/* The bytes of the low-precision weight copies of n[k] layers of each kind
 * beyond their bf16 copies (negative where smaller). */
double prec_weight_copies(const px_cost_ctx *ctx, const px_parallel *par,
                          const int32_t n[PX_LAYER_KINDS]);
/* Weights, gradients and optimizer bytes of `dense` and `expert`
 * parameters on one GPU under par's ZeRO stage and the framework's rule. */
void param_state_bytes(const px_cost_ctx *ctx, const px_parallel *par, double dense,
                       double expert, double *w, double *g, double *o);

/* Activations of one layer of each kind the model has (ctx->kinds) under
 * each recompute choice; the other kinds' rows are left as they were, and
 * every reader reaches a row only through a stage's count of that kind. */
void layer_ops(px_cost_ctx *ctx, const px_parallel *par,
               px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT]);
/* One layer's activations (a layer of kind k) under recompute choice r, in
 * the plan's precision: what layer_ops holds for that kind and choice. */
void layer_act_ops(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k,
                   px_recompute r, px_act_ops *ops);
/* The MTP modules' parameters on a GPU of the last stage, added to its dense
 * and expert counts: per module its three norms (whole on every TP rank),
 * the column-parallel 2h -> h projection and a layer shaped like layer
 * n_layers (px_model_count_params's mtp). */
void mtp_local_params(const px_cost_ctx *ctx, const px_parallel *par, double *dense,
                      double *expert);
/* Stage `stage`'s bytes by kind (sl: its layers; ops: from layer_ops). */
void memory_of_stage(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                     const stage_layers *sl,
                     px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT], stage_mem *sm);
/* The stage with the most bytes (sl: stage_counts of par), into *worst. */
int worst_memory(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                 stage_mem *worst);
/* The memory part of a px_cost_detail, from the worst stage's breakdown. */
void fill_memory_detail(px_cost_ctx *ctx, const px_parallel *par, const stage_mem *w,
                        px_cost_detail *detail);

static inline void fill_memory(const px_cost_ctx *ctx, const px_parallel *par, const stage_mem *w,
                               int stage, px_memory *mem)
{
    mem->weights = px_i64_from_double_sat(w->w);
    mem->grads = px_i64_from_double_sat(w->g);
    mem->optimizer = px_i64_from_double_sat(w->o);
    mem->activations = px_i64_from_double_sat(w->act);
    mem->act_attention = px_i64_from_double_sat(w->act_att);
    mem->act_mlp = px_i64_from_double_sat(w->act_mlp);
    mem->act_norm = px_i64_from_double_sat(w->act_norm);
    mem->buffers = px_i64_from_double_sat(w->buf_emb + w->buf_final + w->buf_logits + w->buf_loss +
                                    w->buf_rc + w->buf_p2p + w->buf_zero3 + w->buf_zb +
                                    w->buf_off + w->buf_mtp);
    mem->worst_stage = stage;
    mem->host = px_i64_from_double_sat(w->host);
    mem->host_activations = px_i64_from_double_sat(w->host_act);
    px_cost_runtime_memory(ctx, par, mem); /* allocated, the runtime's parts, total */
}

#endif
