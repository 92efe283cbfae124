/* px_cost_types.h — the working types the cost model's steps hand each other
 * (planner/cost/README.md: the steps in order), three facts of the context
 * every step reads (the sequence, the element bytes, whether the engine
 * blocks) and dmax / dmin.  Not part of the planner's interface; each
 * step's helpers are in that step's own header. */
#ifndef PX_COST_TYPES_H
#define PX_COST_TYPES_H

#include "px_cost.h"
#include "px_framework.h"
#include "px_plan_check.h"

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
    double core_extra_s;                         /* element-wise work of the attention core
                                                  * beyond attn_fwd_s, rerun with it */
    double tp_s, tp_bytes, tp_rc_s;              /* TP comm (exposed), rc: full recompute's extra */
    double tp_fwd_s, tp_bwd_s;                   /* tp_s split: forward, backward */
    double tp_mlp_fwd_s;                         /* of tp_fwd_s, a dense MLP block's */
    double tp_total_s, tp_fwd_total_s;           /* TP comm before any overlap; its forward */
    double ep_s, ep_bytes;                       /* EP all-to-all, exposed */
    double ep_total_s;                           /* ... and before any overlap */
    double experts_fwd_s, experts_bwd_s;         /* of fwd_s, bwd_s: the routed experts' GEMMs */
    double cp_total_s, cp_exposed_s, cp_bytes;
    double off_s[PX_RECOMPUTE_COUNT];            /* activation offload's exposed copies,
                                                  * by recompute mode (0 without) */
} layer_time;

/* Layers of each kind and recompute choice on one stage (px_cost.h). */
typedef px_cost_stage_layers stage_layers;

typedef struct {
    double dense_params, expert_params; /* elements on one GPU */
    double w, g, o;                     /* static bytes */
    double host;                        /* host bytes: offloaded optimizer share and
                                         * activations */
    double host_act;                    /* of it, the offloaded activations */
    double act, act_att, act_mlp, act_norm, inflight, inflight_bw;
    double buf_emb, buf_logits, buf_loss, buf_final, buf_rc, buf_p2p, buf_zero3, buf_zb;
    double buf_p2p_end;                 /* of buf_p2p, what the pipeline's first or last
                                         * stage holds more (or less) than the others */
    double buf_off;                     /* an offloaded layer's set, back for its backward */
    double buf_mtp;                     /* the MTP modules' activations and losses (last stage) */
    double total;
} stage_mem;

/* One micro-batch through one stage, by part (seconds; bytes per micro-batch). */
typedef struct {
    double fwd, bwd, rcs, tp, tpt, ep, ept, cp, cpt, off, extra, mb;
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

#endif
