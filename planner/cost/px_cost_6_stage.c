/* px_cost_6_stage.c — the cost model's stage times (planner/cost/README.md):
 * a stage's micro-batch from its layers' times, the slowest stage, and the
 * per-layer and per-stage views the partitioner reads (docs/cost-model.md). */
#include "px_cost_6_stage.h"

#include <string.h>

#include "px_checked.h"
#include "px_cost_1_layout.h"
#include "px_cost_2_ops.h"
#include "px_cost_4_memory.h"
#include "px_cost_5_layer.h"
#include "px_cost_lora.h"
#include "px_cost_precision.h"

/* Sums each layer's times by its kind (lt[k]) and its own recompute
 * choice: the recompute's extra compute, and for full recompute the
 * forward's TP collectives again.  extra: embedding / head seconds. */
void time_of_stage(const stage_layers *sl, const layer_time lt[PX_LAYER_KINDS], double extra,
                   stage_time *q)
{
    memset(q, 0, sizeof *q);
    for (int k = 0; k < PX_LAYER_KINDS; k++)
        for (int r = 0; sl->kind[k] > 0 && r < PX_RECOMPUTE_COUNT; r++) {
            double n = (double)sl->n[k][r];
            if (n == 0.0)
                continue;
            const layer_time *x = &lt[k];
            double full = r == PX_RECOMPUTE_FULL ? 1.0 : 0.0;
            q->fwd += n * x->fwd_s;
            q->bwd += n * x->bwd_s;
            q->rcs += n * x->rc_s[r];
            q->tp += n * (x->tp_s + full * x->tp_rc_s);
            q->tpt += n * (x->tp_total_s + full * x->tp_fwd_total_s);
            q->ep += n * x->ep_s;
            q->ept += n * x->ep_total_s;
            q->cp += n * x->cp_exposed_s;
            q->cpt += n * x->cp_total_s;
            q->off += (double)sl->off[k][r] * x->off_s[r];
            q->gemm += n * (x->gemm_fwd_s + x->bwd_s - x->attn_bwd_s - x->mem_bwd_s);
            q->attn += n * (x->attn_fwd_s + x->attn_bwd_s);
            q->mem += n * (x->mem_fwd_s + x->mem_bwd_s);
            q->tpb += n * x->tp_bytes * (1.0 + full * 0.5);
            q->epb += n * x->ep_bytes;
            q->cpb += n * x->cp_bytes;
        }
    q->extra = extra;
    q->mb = q->fwd + q->bwd + q->rcs + q->tp + q->ep + q->cp + q->off + extra;
}

/* The topology crossings and the timing of one layer of each kind (zero
 * for the kinds the model does not have). */
void time_layer_kinds(px_cost_ctx *ctx, const px_parallel *par, crossings *x,
                      layer_time lt[PX_LAYER_KINDS])
{
    find_crossings(ctx, par, x);
    for (int k = 0; k < PX_LAYER_KINDS; k++) {
        memset(&lt[k], 0, sizeof lt[k]);
        if (ctx->n_kind[k] > 0)
            time_layer(ctx, par, (px_layer_kind)k, x, &lt[k]);
    }
}

void slowest_stage_of(const px_cost_ctx *ctx, const px_parallel *par,
                      const stage_layers *sl, const layer_time lt[PX_LAYER_KINDS],
                      double first_s, double last_s, slowest_stage *w)
{
    int p = par->pp;
    memset(w, 0, sizeof *w);
    w->mb = -1.0;
    bool skip = middle_stages_identical(ctx, par);
    int seen[PX_SEEN_MAX], n_seen = 0;
    for (int st = 0; st < p; st++) {
        if (repeats_middle(sl, st, p, seen, &n_seen))
            continue;
        stage_time q;
        time_of_stage(&sl[st], lt, (st == 0 ? first_s : 0.0) + (st == p - 1 ? last_s : 0.0), &q);
        if (q.mb > w->mb) {
            w->mb = q.mb;
            /* the head's and embedding's GEMM/pointwise time is booked as forward/backward */
            w->fwd = q.fwd + q.extra / 3.0;
            w->bwd = q.bwd + 2.0 * q.extra / 3.0;
            w->rc = q.rcs;
            w->tp = q.tp;
            w->tpt = q.tpt;
            w->ep = q.ep;
            w->ept = q.ept;
            w->cp = q.cp;
            w->cpt = q.cpt;
            w->off = q.off;
            w->gemm = q.gemm;
            w->attn = q.attn;
            w->mem = q.mem + q.extra;
            w->tpb = q.tpb;
            w->epb = q.epb;
            w->cpb = q.cpb;
        }
        /* uniform dense stages between the first and the last are identical */
        if (st == 0 && p > 2 && skip)
            st = p - 2;
    }
}

void px_cost_stage_extras(px_cost_ctx *ctx, const px_parallel *par, px_stage_extras *out)
{
    memset(out, 0, sizeof *out);
    extras_time(ctx, par, &out->first_s, &out->last_s);
    double w, g, o;
    param_state_bytes(ctx, par, embedding_local_params(ctx, par->tp), 0.0, &w, &g, &o);
    out->first_static_bytes = w + g + o;
    /* the last stage: the head, the final norm and the MTP modules */
    double last = head_local_params(ctx, par->tp) + (double)ctx->pc.final_norm, last_exp = 0.0;
    mtp_local_params(ctx, par, &last, &last_exp);
    param_state_bytes(ctx, par, last, last_exp, &w, &g, &o);
    out->last_static_bytes = w + g + o;
    if (px_finetune_is_lora(&par->finetune)) { /* frozen: weights only */
        out->first_static_bytes =
            px_lora_static_total(ctx, par, embedding_local_params(ctx, par->tp), 0);
        out->last_static_bytes = px_lora_static_total(ctx, par, last + last_exp, 0);
    }
}

void px_cost_layer(px_cost_ctx *ctx, const px_parallel *par, int64_t layer, px_layer_cost *out)
{
    memset(out, 0, sizeof *out);
    px_layer_kind kind = px_model_layer_kind(ctx->model, layer);
    crossings x;
    find_crossings(ctx, par, &x);
    layer_time lt;
    time_layer(ctx, par, kind, &x, &lt);
    double dense = layer_dense_gpu_params(ctx, par, kind);
    double expert = layer_gpu_params(ctx, par, kind) - dense;
    out->params = px_i64_from_double_sat(dense + expert);
    double w, g, o;
    param_state_bytes(ctx, par, dense, expert, &w, &g, &o);
    out->static_bytes = w + g + o;
    if (px_finetune_is_lora(&par->finetune)) /* frozen base, one layer's adapters */
        out->static_bytes = px_lora_static_total(ctx, par, dense + expert, 1.0);
    int32_t one[PX_LAYER_KINDS] = {0};
    one[kind] = 1;
    out->static_bytes += prec_weight_copies(ctx, par, one);
    /* offloaded: every layer, or the model's first act_layers (a count
     * runs on one stage: px_plan_check) */
    bool off = par->offload.activations &&
               (par->offload.act_layers == 0 || layer < par->offload.act_layers);
    out->offloaded = off;
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
        px_act_ops ops;
        layer_act_ops(ctx, par, kind, (px_recompute)r, &ops);
        out->act_bytes[r] = ops.total;
        out->recompute_s[r] = lt.rc_s[r] + (r == PX_RECOMPUTE_FULL ? lt.tp_rc_s : 0.0);
        out->offload_s[r] = off ? lt.off_s[r] : 0.0;
    }
    out->fwd_s = lt.fwd_s + lt.tp_fwd_s + 0.5 * lt.ep_s + lt.cp_exposed_s / 3.0;
    out->bwd_s = lt.bwd_s + lt.tp_bwd_s + 0.5 * lt.ep_s + lt.cp_exposed_s * 2.0 / 3.0;
}

void px_cost_stages(px_cost_ctx *ctx, const px_parallel *par, double *stage_mb_s,
                    int64_t *stage_mem_bytes)
{
    stage_layers *sl = ctx->stage_ws;
    stage_counts(ctx, par, sl);
    crossings x;
    layer_time lt[PX_LAYER_KINDS];
    time_layer_kinds(ctx, par, &x, lt);
    double first_s, last_s;
    extras_time(ctx, par, &first_s, &last_s);
    px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    int p = par->pp;
    for (int st = 0; st < p; st++) {
        if (stage_mb_s) {
            stage_time q;
            time_of_stage(&sl[st], lt,
                          (st == 0 ? first_s : 0.0) + (st == p - 1 ? last_s : 0.0), &q);
            stage_mb_s[st] = q.mb;
        }
        if (stage_mem_bytes) {
            stage_mem sm;
            memory_of_stage(ctx, par, st, &sl[st], ops, &sm);
            px_memory mem;
            fill_memory(ctx, par, &sm, st, &mem);
            stage_mem_bytes[st] = mem.total;
        }
    }
}
