/* px_plan_predict.c — per-stage and per-class predictions of a plan (see
 * px_plan_predict.h). */
#include "px_plan_predict.h"

#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_efficiency.h"

void px_plan_stage_layers(const px_parallel *par, int64_t n_layers, int *layers)
{
    int chunks = par->pp * par->vpp;
    int split[PX_MAX_CHUNKS];
    if (par->n_chunks > 0)
        memcpy(split, par->layers_per_chunk, (size_t)chunks * sizeof *split);
    else
        px_cost_default_split(n_layers, chunks, split);
    memset(layers, 0, (size_t)par->pp * sizeof *layers);
    for (int c = 0; c < chunks; c++)
        layers[c % par->pp] += split[c];
}

/* The step time by trace class from the cost model's detail.  The cost
 * model books the LM head's GEMM (forward + 2x backward) with the last
 * stage's element-wise extras; the trace times it as a GEMM, so it moves
 * when the last stage sets the pace. */
static void class_time(const px_plan *plan, const px_cost_detail *d, const px_prediction *pred,
                       const double *stage_mb_s, px_class_time *out)
{
    out->gemm_s = d->gemm_s;
    out->attention_s = d->attn_s;
    out->elementwise_s = d->membound_s;
    out->comm_s = d->tp_exposed_s + d->cp_exposed_s + d->ep_exposed_s + d->dp_exposed_s;
    out->p2p_s = d->pp_exposed_s + pred->time.bubble_s;
    out->optimizer_s = pred->time.optimizer_s;
    const px_parallel *q = &plan->par;
    int slowest = 0;
    for (int s = 1; s < q->pp; s++)
        slowest = stage_mb_s[s] > stage_mb_s[slowest] ? s : slowest;
    if (slowest != q->pp - 1)
        return;
    int64_t seq = q->seq_len > 0 ? q->seq_len : plan->model.seq_len;
    double T = (double)q->micro_batch * (double)seq / q->cp;
    double head = 3.0 * (double)q->n_micro *
                  px_time_gemm_s(&plan->hw, T, (double)plan->model.vocab / q->tp,
                                 (double)plan->model.hidden);
    head = head < out->elementwise_s ? head : out->elementwise_s;
    out->gemm_s += head;
    out->elementwise_s -= head;
}

px_status px_plan_predict(px_plan *plan, const struct px_fw_runtime *run, px_error *err)
{
    int pp = plan->par.pp;
    if (pp < 1 || pp > PX_MAX_CHUNKS)
        return PX_FAIL(err, PX_ERR_INVALID, "plan pp = %d: allowed 1..%d", pp, PX_MAX_CHUNKS);
    /* the context is ~10 KB of memo tables: off the stack */
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_cost_detail *d = malloc(sizeof *d);
    px_memory *mem = calloc((size_t)pp, sizeof *mem);
    double *mb_s = calloc((size_t)pp, sizeof *mb_s);
    int *layers = calloc((size_t)pp, sizeof *layers);
    px_prediction pred;
    px_status st = ctx && d && mem && mb_s && layers
                       ? PX_OK
                       : PX_FAIL(err, PX_ERR_NOMEM, "per-stage prediction: out of memory");
    if (st == PX_OK)
        st = px_cost_ctx_init(ctx, &plan->model, &plan->hw, err);
    if (st == PX_OK) {
        ctx->run = run;
        st = px_cost_eval(ctx, &plan->par, 0.0, 0.0, &pred, d, err);
    }
    if (st == PX_OK) {
        px_cost_stage_memory(ctx, &plan->par, mem);
        px_cost_stages(ctx, &plan->par, mb_s, NULL);
        px_plan_stage_layers(&plan->par, plan->model.n_layers, layers);
        for (int s = 0; s < pp; s++)
            plan->stages[s] = (px_stage_prediction){
                .layers = layers[s], .weights = mem[s].weights, .grads = mem[s].grads,
                .optimizer = mem[s].optimizer, .activations = mem[s].activations,
                .buffers = mem[s].buffers, .total = mem[s].total,
                .runtime = mem[s].total - mem[s].allocated, .microbatch_s = mb_s[s]};
        plan->n_stages = pp;
        class_time(plan, d, &pred, mb_s, &plan->class_time);
    }
    free(ctx);
    free(d);
    free(mem);
    free(mb_s);
    free(layers);
    return st;
}
