/* px_cost_internal.h — what the cost model's files (px_cost.c, px_cost_time.c,
 * px_cost_memory.c) share: their working types and helpers.  Not part of the
 * planner's interface; the comment of each helper is at its definition. */
#ifndef PX_COST_INTERNAL_H
#define PX_COST_INTERNAL_H

#include "px_cost.h"
#include "px_checked.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_plan_check.h"

#include <string.h>

static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dmin(double a, double b) { return a < b ? a : b; }

typedef struct {
    bool tp, cp, pp, dp, ep, etp, edp;
} crossings;

/* Times of one layer for one micro-batch on one GPU. */
typedef struct {
    double gemm_fwd_s, attn_fwd_s, mem_fwd_s;   /* compute, forward */
    double attn_bwd_s, mem_bwd_s;                /* attention core, pointwise: backward */
    double fwd_s, bwd_s;                         /* compute */
    double rc_s[PX_RECOMPUTE_COUNT];             /* extra compute by recompute mode */
    double tp_s, tp_bytes, tp_rc_s;              /* TP comm (exposed), rc: full recompute's extra */
    double tp_fwd_s, tp_bwd_s;                   /* tp_s split: forward, backward */
    double ep_s, ep_bytes;
    double cp_total_s, cp_exposed_s, cp_bytes;
} layer_time;

/* Layers of each kind and recompute choice on one stage (px_cost.h). */
typedef px_cost_stage_layers stage_layers;

typedef struct {
    double dense_params, expert_params; /* elements on one GPU */
    double w, g, o;                     /* static bytes */
    double act, act_att, act_mlp, act_norm, inflight, inflight_bw;
    double buf_emb, buf_logits, buf_loss, buf_final, buf_rc, buf_p2p, buf_zero3, buf_zb;
    double total;
} stage_mem;

/* One micro-batch through one stage, by part (seconds; bytes per micro-batch). */
typedef struct {
    double fwd, bwd, rcs, tp, ep, cp, cpt, extra, mb;
    double gemm, attn, mem, tpb, epb, cpb;
} stage_time;

/* The sequence length the plan runs (px_plan_seq_len) and the activation
 * element bytes: small and on every path, so inline. */
static inline int64_t seq_of(const px_cost_ctx *ctx, const px_parallel *par)
{
    return px_plan_seq_len(ctx->model, par);
}

static inline int elem_of(const px_cost_ctx *ctx)
{
    return ctx->hw->dtype_bytes > 0 ? ctx->hw->dtype_bytes : 2;
}

/* A blocking plan (--overlap off) run by an engine that blocks
 * (px_fw_runtime.blocking_engine: the CPU executor): the condition of every
 * executor term (docs/cost-model.md, "The executor's conditions"). */
static inline bool blocking_engine(const px_cost_ctx *ctx, const px_parallel *par)
{
    return !par->dp_overlap && ctx->run && ctx->run->blocking_engine;
}

/* Middle stages remembered by repeats_middle. */
enum { PX_SEEN_MAX = 8 };

/* Small helpers on the search's path through the three files: inline. */

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

/* True when every stage between the first and the last holds the same
 * layers with the same choices, so that the stage loops may skip them. */
static inline bool middle_stages_identical(const px_cost_ctx *ctx, const px_parallel *par)
{
    return par->n_chunks == 0 && par->n_layer_recompute == 0 &&
           ctx->model->n_layers % ((int64_t)par->pp * par->vpp) == 0 &&
           (ctx->n_moe_layers == 0 || ctx->n_moe_layers == ctx->model->n_layers);
}

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

static inline void fill_memory(const stage_mem *w, int stage, px_memory *mem)
{
    mem->weights = px_i64_from_double_sat(w->w);
    mem->grads = px_i64_from_double_sat(w->g);
    mem->optimizer = px_i64_from_double_sat(w->o);
    mem->activations = px_i64_from_double_sat(w->act);
    mem->act_attention = px_i64_from_double_sat(w->act_att);
    mem->act_mlp = px_i64_from_double_sat(w->act_mlp);
    mem->act_norm = px_i64_from_double_sat(w->act_norm);
    mem->buffers = px_i64_from_double_sat(w->buf_emb + w->buf_final + w->buf_logits + w->buf_loss +
                                    w->buf_rc + w->buf_p2p + w->buf_zero3 + w->buf_zb);
    mem->total = mem->weights + mem->grads + mem->optimizer + mem->activations + mem->buffers;
    mem->worst_stage = stage;
}

/* px_cost_time.c */
void make_shape(const px_cost_ctx *ctx, const px_parallel *par, bool moe,
                px_recompute rc, px_act_shape *sh);
double comm_sm_fraction(const px_hw *hw);
bool mem_class_measured(const px_hw *hw, px_mem_class c);
void extras_time(const px_cost_ctx *ctx, const px_parallel *par, double *first_s,
                 double *last_s);
void time_of_stage(const stage_layers *sl, const layer_time *ld, const layer_time *lm,
                   double extra, stage_time *q);
void time_layer_kinds(px_cost_ctx *ctx, const px_parallel *par, crossings *x,
                      layer_time *dense, layer_time *moe);
void fsdp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                    double dense_params, double expert_params, px_bytes_per_param bpp,
                    double fwd_s, double bwd_s, double *total, double *exposed,
                    double *bytes);

/* px_cost_pipe.c: the bubble of a blocking plan (par->dp_overlap off, the
 * executor) on the executor's pipeline timeline; `bubble` when it cannot
 * be simulated */
double pipe_timeline_bubble(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                            const layer_time *ld, const layer_time *lm, double first_s,
                            double last_s, double wait_mb_s, double ideal, double pp_total,
                            double bubble);

/* px_cost_memory.c */
void stage_counts(const px_cost_ctx *ctx, const px_parallel *par, stage_layers *sl);
double prec_weight_copies(const px_cost_ctx *ctx, const px_parallel *par, int64_t nd,
                          int64_t nm);
void memory_of_stage(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                     const stage_layers *sl,
                     px_act_ops ops[2][PX_RECOMPUTE_COUNT], stage_mem *sm);
void layer_ops(px_cost_ctx *ctx, const px_parallel *par,
               px_act_ops ops[2][PX_RECOMPUTE_COUNT]);
int worst_memory(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                 stage_mem *worst);
void fill_memory_detail(px_cost_ctx *ctx, const px_parallel *par, const stage_mem *w,
                        px_cost_detail *detail);

#endif
