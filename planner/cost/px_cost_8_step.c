/* px_cost_8_step.c — the cost model's last step (planner/cost/README.md):
 * the context, and the whole step (px_cost_eval): memory, the slowest
 * stage, the pipeline, the data-parallel and optimizer time, the rates and
 * the goodput.  Every formula is documented, with its source, in
 * docs/cost-model.md under the heading named in the comment above it. */
#include "px_cost.h"
#include "px_cost_types.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "px_blocking.h"
#include "px_cost_1_layout.h"
#include "px_cost_2_ops.h"
#include "px_cost_4_memory.h"
#include "px_cost_5_layer.h"
#include "px_cost_6_stage.h"
#include "px_cost_7_pipe.h"
#include "px_cost_fsdp.h"
#include "px_cost_lora.h"
#include "px_cost_offload.h"
#include "px_cost_precision.h"
#include "px_domain.h"
#include "px_flops.h"
#include "px_overhead.h"
#include "px_pipe_engine.h"

px_status px_cost_ctx_init(px_cost_ctx *ctx, const px_model *m, const px_hw *hw, px_error *err)
{
    memset(ctx, 0, sizeof *ctx);
    if (m->n_layers < 1 || m->n_layers > PX_MAX_LAYERS)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: n_layers = %lld: allowed 1..%d", m->name,
                       (long long)m->n_layers, PX_MAX_LAYERS);
    if (hw->peak_flops <= 0.0 || hw->hbm_bytes <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "hardware %s: peak_flops and hbm_bytes must be > 0", hw->name);
    ctx->model = m;
    ctx->hw = hw;
    px_model_count_params(m, &ctx->pc);
    int64_t first[PX_LAYER_KINDS];
    for (int k = 0; k < PX_LAYER_KINDS; k++)
        first[k] = -1;
    for (int64_t l = 0; l < m->n_layers; l++) {
        px_layer_kind kl = px_model_layer_kind(m, l);
        for (int k = 0; k < PX_LAYER_KINDS; k++)
            ctx->kind_prefix[k][l + 1] = ctx->kind_prefix[k][l] + (k == (int)kl ? 1 : 0);
        if (first[kl] < 0)
            first[kl] = l;
    }
    for (int k = 0; k < PX_LAYER_KINDS; k++) {
        ctx->n_kind[k] = ctx->kind_prefix[k][m->n_layers];
        if (first[k] < 0)
            continue;
        ctx->kinds[ctx->n_kinds++] = k;
        ctx->kind_params[k] = px_model_layer_params(m, first[k]);
        ctx->kind_norm_params[k] = px_model_kind_norm_params(m, (px_layer_kind)k);
        if (px_layer_has_experts((px_layer_kind)k))
            ctx->n_moe_layers += ctx->n_kind[k];
    }
    if (ctx->n_moe_layers > 0) {
        ctx->expert_params = ctx->pc.expert_mlp / ctx->n_moe_layers;
        ctx->router_params = ctx->pc.router / ctx->n_moe_layers;
    }
    ctx->head_params = ctx->pc.lm_head > 0 ? ctx->pc.lm_head : m->vocab * m->hidden;
    int64_t s = m->seq_len > 0 ? m->seq_len : 1;
    ctx->flops_seq_len = s;
    ctx->model_flops_per_token = px_flops_model_per_token(m, s);
    ctx->model_flops_causal_per_token = px_flops_model_causal_per_token(m, s);
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
        ctx->hw_flops_per_token[r] = px_flops_hw_per_token(m, s, (px_recompute)r);
    return PX_OK;
}

px_status px_cost_check(const px_model *m, const px_parallel *par, px_error *err)
{
    px_caps caps; /* the cost model prices the planner's whole space */
    px_caps_parallax(&caps);
    return px_plan_check(m, par, &caps, err);
}

/* n doubles, each finite and >= 0 (a struct of seconds read as an array). */
static inline bool seconds_ok(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < 0.0)
            return false;
    return true;
}

/* Every time the model produces is a finite, non-negative number of seconds
 * and a step takes time: checked once, where the layer and step times are
 * assembled (debug builds; the profiles' bounds keep a release build there). */
static void assert_times(const px_time *tm, const layer_time lt[PX_LAYER_KINDS])
{
    _Static_assert(sizeof(px_time) % sizeof(double) == 0, "px_time holds seconds only");
    _Static_assert(sizeof(layer_time) % sizeof(double) == 0, "layer_time holds doubles only");
    assert(seconds_ok((const double *)lt, PX_LAYER_KINDS * sizeof *lt / sizeof(double)));
    assert(seconds_ok((const double *)tm, sizeof *tm / sizeof(double)));
    assert(tm->step_s > 0.0 && tm->compute_s > 0.0);
    (void)tm, (void)lt;
}

static px_status eval_impl(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                           double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                           px_cost_detail *detail, px_error *err);

px_status px_cost_eval(px_cost_ctx *ctx, const px_parallel *par, double train_tokens,
                       double gpu_mtbf_hours, px_prediction *pred, px_cost_detail *detail,
                       px_error *err)
{
    return eval_impl(ctx, par, -1, train_tokens, gpu_mtbf_hours, pred, detail, err);
}

px_status px_cost_eval_if_fits(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                               double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                               px_error *err)
{
    return eval_impl(ctx, par, mem_limit, train_tokens, gpu_mtbf_hours, pred, NULL, err);
}

/* Exposed seconds of a once-a-step data-parallel collective of t seconds
 * overlapped with compute: with one model chunk a stage, all but `tail` (the
 * bucket the compute ends or starts with) hides under one micro-batch's
 * backward (forward), `win`.  Megatron's interleaved schedule launches each
 * of the v chunks' share separately (schedules.py: a chunk's gradient
 * reduction when its last micro-batch's backward ends, the next chunk's
 * parameter gather when a chunk's first forward starts), p chunk-steps
 * apart: the first launched share hides under ((v - 1)·p + 1) chunk-steps of
 * win / v each, and each share under its own win / v. */
static double chunked_exposed(const px_parallel *par, double t, double win, double tail)
{
    double v = par->schedule == PX_SCHED_INTERLEAVED && par->vpp > 1 ? (double)par->vpp : 1.0;
    double k = ((v - 1.0) * par->pp + 1.0) / v;
    return dmax(tail, dmax((t - win) / v, t - k * win));
}

/* ZeRO-3 as the framework runs it, layer by layer (px_cost_fsdp.h):
 * replaces the whole-stage estimate of eval_impl.  The dense parameters are
 * sharded over the data-parallel group (dp rank stride tp·cp·pp in the
 * default order, tp·cp with pp outermost); the experts over their
 * expert-data-parallel group of tp·cp·dp / (ep·etp) ranks
 * (expert_dp_rank_stride), which crosses nodes on its own (x->edp) and
 * rides as many NICs as it holds GPUs of a node. */
static void fsdp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                           double dense_params, double expert_params, px_bytes_per_param bpp,
                           double fwd_s, double bwd_s, double *total, double *exposed,
                           double *bytes)
{
    const px_hw *hw = ctx->hw;
    int ddp = par->dp * par->cp;
    int group = par->shard_group > 0 && par->shard_group < ddp ? par->shard_group : ddp;
    int replicas = ddp / group;
    int gpus = par->tp * par->cp * par->pp * par->dp;
    int g = px_domain_job_gpus(hw, gpus);
    bool outer = ctx->run && ctx->run->pp_outermost;
    int st = par->tp * par->cp * (outer ? 1 : par->pp);
    bool spans = !hw->torus && gpus > g; /* else the job is one domain */
    bool cross_group = spans && (group == ddp ? (x->dp || x->cp) : dim_crosses(st, group, g));
    bool cross_rep = spans && replicas > 1 && dim_crosses(st * group, replicas, g);
    double n = (double)ctx->model->n_layers / par->pp;
    px_fsdp_shard sh[2] = {{group, cross_group, px_cost_fsdp_rails(hw, ctx->run, group, st),
                            dense_params / n, 0.0, 0.0}};
    int n_sh = 1;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    int st_e = expert_dp_rank_stride(par, outer);
    /* the experts' own group where it is another group; the same group (EP
     * 1 under a stride-1 fold), hybrid sharding and the executor's own
     * ZeRO-3 units (blocking_engine: its terms are bench/exec_fidelity.sh's)
     * gather a layer's parameters together */
    if (expert_params > 0.0 && par->shard_group <= 0 && !blocking_engine(ctx, par) &&
        (edp != group || st_e != st)) {
        sh[n_sh++] = (px_fsdp_shard){edp, spans && x->edp,
                                     px_cost_fsdp_rails(hw, ctx->run, edp, st_e),
                                     expert_params / n, 0.0, 0.0};
    } else {
        sh[0].layer_params += expert_params / n;
    }
    if (par->offload.kind == PX_OFFLOAD_PARAMS) /* each shard through the host link */
        for (int i = 0; i < n_sh; i++) {
            double shard = sh[i].layer_params / (sh[i].group > 1 ? sh[i].group : 1);
            sh[i].h2d_s = shard * px_cost_offload_param_copy_bytes(ctx) / hw->host_link_bw;
            sh[i].d2h_s = shard * bpp.grads / hw->host_link_bw;
        }
    px_fsdp_time ft;
    px_cost_fsdp_time_shards(hw, ctx->run, sh, n_sh, replicas, cross_rep, n, elem_of(ctx),
                             bpp.grads, (double)par->n_micro,
                             px_cost_fsdp_stage_kept(ctx->run, par->pp), fwd_s, bwd_s,
                             comm_sm_fraction(hw), &ft);
    *total = ft.total_s;
    *exposed = ft.exposed_s;
    *bytes = ft.bytes;
}

/* DP / ZeRO: see docs/cost-model.md "Data parallel and the overlap model".
 * dense_p, exp_p: the worst stage's parameters on one GPU; fwd_win, bwd_win:
 * one micro-batch's forward and backward compute, the overlap windows. */
static void dp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                         double w_dense_p, double w_exp_p, double fwd_win, double bwd_win,
                         const px_blocking_sync *sync, double *total, double *exposed,
                         double *bytes)
{
    const px_hw *hw = ctx->hw;
    double mm = (double)par->n_micro;
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    bpp.grads *= px_lora_grad_share(ctx, par, w_dense_p + w_exp_p); /* LoRA: adapters' only */
    int ddp = par->dp * par->cp;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    /* quantised parameters are gathered quantised (px_cost_precision.h) */
    double gath = par->quantized_params ? px_prec_param_gather_bytes(par->precision, bpp.weights)
                                        : bpp.weights;
    double grad_b = w_dense_p * bpp.grads, wt_b = w_dense_p * gath;
    double egrad_b = w_exp_p * bpp.grads, ewt_b = w_exp_p * gath;
    bool dcross = x->dp || x->cp;
    double t_ar = px_time_coll_s(hw, PX_COLL_ALLREDUCE, ddp, grad_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_ALLREDUCE, edp, egrad_b, x->edp);
    double t_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, ddp, grad_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, edp, egrad_b, x->edp);
    double t_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, ddp, wt_b, dcross) +
                  px_time_coll_s(hw, PX_COLL_ALLGATHER, edp, ewt_b, x->edp);
    double dp_bytes_ar = px_coll_wire_bytes(PX_COLL_ALLREDUCE, ddp, grad_b) +
                         px_coll_wire_bytes(PX_COLL_ALLREDUCE, edp, egrad_b);
    double dp_bytes_rs = px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, ddp, grad_b) +
                         px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, edp, egrad_b);
    double dp_bytes_ag = px_coll_wire_bytes(PX_COLL_ALLGATHER, ddp, wt_b) +
                         px_coll_wire_bytes(PX_COLL_ALLGATHER, edp, ewt_b);
    /* The last gradients the backward produces (stage 0's embedding, or its
     * first layer) are reduced after the compute has ended, and the first
     * weights the next forward needs are gathered before it can start: that
     * bucket's communication is exposed however long the windows are. */
    double tail_p = dmin(w_dense_p, dmax((double)ctx->pc.embedding / par->tp,
                                         layer_local_params(ctx, par->tp, first_kind(ctx))));
    double tail_ar = px_time_coll_s(hw, PX_COLL_ALLREDUCE, ddp, tail_p * bpp.grads, dcross);
    double tail_rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, ddp, tail_p * bpp.grads, dcross);
    double tail_ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, ddp, tail_p * bpp.weights, dcross);
    double dp_total = 0.0, dp_exposed = 0.0, dp_bytes = 0.0;
    switch (par->zero) {
    case 0:
        dp_total = t_ar;
        dp_exposed = chunked_exposed(par, t_ar, bwd_win, tail_ar);
        dp_bytes = dp_bytes_ar;
        break;
    case 1:
        if (ctx->run && ctx->run->zero1_grad_allreduce) {
            /* the whole gradient all-reduced, then each replica updates its
             * shard (DeepSpeed's BF16 optimizer under the pipeline engine) */
            t_rs = t_ar;
            tail_rs = tail_ar;
            dp_bytes_rs = dp_bytes_ar;
        }
        dp_total = t_rs + t_ag;
        dp_exposed = chunked_exposed(par, t_rs, bwd_win, tail_rs) +
                     chunked_exposed(par, t_ag, fwd_win, tail_ag);
        dp_bytes = dp_bytes_rs + dp_bytes_ag;
        break;
    case 2:
        /* sharded gradients cannot accumulate: one reduce-scatter per micro-batch */
        dp_total = mm * t_rs + t_ag;
        dp_exposed = mm * dmax(0.0, t_rs - bwd_win) + dmax(0.0, t_ag - fwd_win);
        dp_bytes = mm * dp_bytes_rs + dp_bytes_ag;
        break;
    default:
        if (par->offload.kind == PX_OFFLOAD_PARAMS) { /* the shards through the host link */
            t_ag += (w_dense_p / ddp + w_exp_p / edp) * px_cost_offload_param_copy_bytes(ctx) /
                    hw->host_link_bw;
            t_rs += (w_dense_p / ddp + w_exp_p / edp) * bpp.grads / hw->host_link_bw;
        }
        /* ZeRO-3 / FSDP: weights gathered for every forward and backward */
        dp_total = mm * (2.0 * t_ag + t_rs);
        dp_exposed = mm * (dmax(0.0, t_ag - fwd_win) + dmax(0.0, t_ag + t_rs - bwd_win));
        dp_bytes = mm * (2.0 * dp_bytes_ag + dp_bytes_rs);
        break;
    }
    if (!par->dp_overlap && par->zero <= 2)
        dp_exposed = dp_total; /* reduced (and gathered) after the backward */
    dp_exposed = px_blocking_dp_exposed(par, dp_total, dp_exposed); /* ZeRO-3 too */
    /* the hidden part still takes SMs from the compute it hides under */
    dp_exposed += comm_sm_fraction(hw) * (dp_total - dp_exposed);
    bool param_copies = par->offload.kind == PX_OFFLOAD_PARAMS; /* even without a group */
    if (par->zero >= 3 && ctx->run && (ddp > 1 || edp > 1 || param_copies))
        fsdp_step_comm(ctx, par, x, w_dense_p, w_exp_p, bpp, fwd_win, bwd_win, &dp_total,
                       &dp_exposed, &dp_bytes);
    /* a blocking engine (the executor): no prefetch hides a layer's gather
     * either; frameworks that prefetch keep their gathers under compute
     * (fsdp_step_comm) whether or not the gradient reduction overlaps */
    if (blocking_engine(ctx, par))
        dp_exposed = dp_total;
    if (ddp <= 1 && edp <= 1 && !param_copies)
        dp_total = dp_exposed = dp_bytes = 0.0;
    dp_exposed += mm * sync->dp_mb + sync->dp_step;
    *total = dp_total;
    *exposed = dp_exposed;
    *bytes = dp_bytes;
}

/* optimizer step: Adam streams master weights, m, v (read + write), the
 * gradient (read) and writes the low-precision weights; an offloaded share
 * runs on the host (*host_s, px_cost_offload.h) */
static double optimizer_time(const px_cost_ctx *ctx, const px_parallel *par, double w_dense_p,
                             double w_exp_p, double *host_s)
{
    const px_hw *hw = ctx->hw;
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double trained = px_lora_grad_share(ctx, par, w_dense_p + w_exp_p); /* LoRA: adapters */
    w_dense_p *= trained;
    w_exp_p *= trained;
    int ddp = par->dp * par->cp;
    int edp = par->tp * par->cp * par->dp / (par->ep * par->etp);
    double shard = par->zero >= 1 ? (double)ddp : 1.0;
    double eshard = par->zero >= 1 ? (double)edp : 1.0;
    double opt_params = w_dense_p / shard + w_exp_p / eshard;
    double opt_s = px_time_mem_class_s(
        hw, PX_MEM_ADAMW, px_cost_class_bytes(PX_MEM_ADAMW, opt_params, elem_of(ctx),
                                              par->grad_fp32));
    if (!mem_class_measured(hw, PX_MEM_ADAMW)) {
        /* around Adam (datasheet profiles): the gradient norm for clipping
         * reads the shard's gradients, the low-precision copy reads the fp32
         * master again, and the next step starts by zeroing the whole local
         * gradient buffer */
        double extra = opt_params * (bpp.grads + (elem_of(ctx) < 4 ? 4.0 : 0.0)) +
                       (w_dense_p + w_exp_p) * bpp.grads;
        opt_s += px_time_mem_s(hw, extra);
    }
    return px_cost_offload_step_s(ctx, par, opt_s, opt_params, bpp.grads, host_s);
}

/* Tokens, FLOPs and utilisation of a step of `step` seconds. */
static void fill_rates(px_cost_ctx *ctx, const px_parallel *par, double step, double bubble,
                       px_prediction *pred)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    px_recompute rc = par->recompute;
    double mm = (double)par->n_micro;
    int64_t s = seq_of(ctx, par);
    double tokens = (double)par->micro_batch * mm * par->dp * (double)s;
    if (s != ctx->flops_seq_len) {
        /* FLOPs per token depend on s (attention): recompute once per length */
        ctx->flops_seq_len = s;
        ctx->model_flops_per_token = px_flops_model_per_token(m, s);
        ctx->model_flops_causal_per_token = px_flops_model_causal_per_token(m, s);
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
            ctx->hw_flops_per_token[r] = px_flops_hw_per_token(m, s, (px_recompute)r);
    }
    double fpt = ctx->model_flops_per_token, hpt = ctx->hw_flops_per_token[rc];
    if (par->n_layer_recompute > 0)
        hpt = px_flops_hw_per_token_layers(m, s, rc, par->layer_recompute, par->n_layer_recompute);
    double lora = px_lora_flops_delta_per_token(ctx, par, s); /* frozen weights: no wgrad */
    fpt += lora;
    hpt += lora;
    double gpus = (double)par->tp * par->cp * par->pp * par->dp;
    pred->model_flops_per_step = fpt * tokens;
    pred->hw_flops_per_step = hpt * tokens;
    pred->tokens_per_s = tokens / step;
    pred->mfu = pred->model_flops_per_step / (step * gpus * hw->peak_flops);
    pred->hfu = pred->hw_flops_per_step / (step * gpus * hw->peak_flops);
    pred->mfu_causal =
        (ctx->model_flops_causal_per_token + lora) * tokens / (step * gpus * hw->peak_flops);
    pred->bubble_fraction = bubble / step;
}

/* Days to train, checkpoints and goodput, when train_tokens > 0. */
static void fill_goodput(const px_cost_ctx *ctx, const px_parallel *par, double train_tokens,
                         double gpu_mtbf_hours, px_prediction *pred)
{
    const px_hw *hw = ctx->hw;
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double gpus = (double)par->tp * par->cp * par->pp * par->dp;
    if (train_tokens > 0.0) {
        pred->train_tokens = train_tokens;
        pred->days_to_train = train_tokens / pred->tokens_per_s / 86400.0;
        double ckpt_bpp = bpp.optimizer + (elem_of(ctx) >= 4 ? bpp.weights : 0.0);
        pred->ckpt_bytes_per_gpu = (double)ctx->pc.total * ckpt_bpp / gpus;
        double mtbf = gpu_mtbf_hours > 0.0 ? gpu_mtbf_hours : hw->gpu_mtbf_hours;
        px_goodput gp = px_cost_goodput(mtbf, (int)gpus, pred->ckpt_bytes_per_gpu,
                                        hw->ckpt_write_bw, hw->restart_s);
        pred->ckpt_write_s = gp.ckpt_write_s;
        pred->ckpt_interval_s = gp.interval_s;
        pred->job_mtbf_s = gp.job_mtbf_s;
        pred->lost_fraction = gp.lost_fraction;
        pred->goodput_days = gp.lost_fraction < 1.0
                                 ? pred->days_to_train / (1.0 - gp.lost_fraction)
                                 : INFINITY;
    }

}

/* Everything --explain prints about the step's time and traffic. */
static void fill_time_detail(const px_cost_ctx *ctx, const px_parallel *par,
                             const slowest_stage *w, const crossings *x,
                             const layer_time lt[PX_LAYER_KINDS], double bubble_x, double pp_total,
                             double pp_bytes, double dp_total, double dp_exposed,
                             double dp_bytes, px_cost_detail *detail)
{
    double mm = (double)par->n_micro;
    detail->tp_total_s = mm * w->tpt;
    detail->tp_exposed_s = mm * w->tp;
    detail->cp_total_s = mm * w->cpt;
    detail->cp_exposed_s = mm * w->cp;
    detail->ep_total_s = mm * w->ept;
    detail->ep_exposed_s = mm * w->ep;
    detail->pp_total_s = detail->pp_exposed_s = pp_total;
    detail->dp_total_s = dp_total;
    detail->dp_exposed_s = dp_exposed;
    detail->compute_fwd_s = mm * w->fwd;
    detail->compute_bwd_s = mm * w->bwd;
    detail->compute_recompute_s = mm * w->rc;
    detail->gemm_s = mm * w->gemm;
    detail->attn_s = mm * w->attn;
    detail->membound_s = mm * w->mem;
    detail->stage_mb_s = w->mb;
    detail->bubble_over_ideal = bubble_x;
    detail->tp_crosses = x->tp;
    detail->cp_crosses = x->cp;
    detail->ep_crosses = x->ep;
    detail->pp_crosses = x->pp;
    detail->dp_crosses = x->dp;
    detail->tp_bytes_per_step = mm * w->tpb;
    detail->ep_bytes_per_step = mm * w->epb;
    detail->cp_bytes_per_step = mm * w->cpb;
    detail->pp_bytes_per_step = pp_bytes;
    detail->dp_bytes_per_step = dp_bytes;
    detail->tp_bytes_per_layer = lt[first_kind(ctx)].tp_bytes;
}

static px_status eval_impl(px_cost_ctx *ctx, const px_parallel *par, int64_t mem_limit,
                           double train_tokens, double gpu_mtbf_hours, px_prediction *pred,
                           px_cost_detail *detail, px_error *err)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    memset(pred, 0, sizeof *pred);
    if (detail)
        memset(detail, 0, sizeof *detail);
    if (par->tp < 1 || par->pp < 1 || par->dp < 1 || par->cp < 1 || par->vpp < 1 ||
        par->micro_batch < 1 || par->n_micro < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel sizes and batch must be >= 1");

    /* memory */
    stage_mem wm;
    stage_layers *sl = ctx->stage_ws;
    stage_counts(ctx, par, sl);
    int ws = worst_memory(ctx, par, sl, &wm);
    fill_memory(ctx, par, &wm, ws, &pred->mem);
    if (mem_limit >= 0 && pred->mem.total > mem_limit)
        return PX_ERR_INFEASIBLE; /* memory only: the search prunes here */
    if (mem_limit >= 0 && pred->mem.host > hw->host_mem_bytes)
        return PX_ERR_INFEASIBLE; /* the offloaded state does not fit the host */

    crossings x;
    layer_time lt[PX_LAYER_KINDS];
    time_layer_kinds(ctx, par, &x, lt);
    double first_s, last_s;
    extras_time(ctx, par, &first_s, &last_s);

    /* slowest stage, one micro-batch */
    int p = par->pp;
    slowest_stage w;
    slowest_stage_of(ctx, par, sl, lt, first_s, last_s, &w);
    double w_dense_p = wm.dense_params, w_exp_p = wm.expert_params;
    double z3_fwd, z3 = px_blocking_zero3_stream_bytes(par, w_dense_p + w_exp_p, elem_of(ctx),
                                                       &z3_fwd); /* its buffers and copies */
    if (z3 > 0.0 && blocking_engine(ctx, par)) {
        double f = px_time_stream_s(hw, z3_fwd), b = px_time_stream_s(hw, z3 - z3_fwd);
        w.fwd += f;
        w.bwd += b;
        w.mem += f + b;
        w.mb += f + b;
    }
    double mm = (double)par->n_micro;
    px_blocking_sync sync; /* waits at blocking collectives (px_blocking.h) */
    px_blocking_sync_s(m, hw, par, w.mb, &sync);
    w.tp += sync.tp;
    w.tpt += sync.tp;
    w.cp += sync.cp;
    w.cpt += sync.cp;
    w.mb += sync.tp + sync.cp;
    w.mb += px_overhead_microbatch_s(ctx->run);
    double ideal = mm * w.mb;
    double bubble_x = px_cost_bubble_over_ideal(par->schedule, p, par->vpp, par->n_micro);
    double bubble = bubble_x * ideal;

    double pp_total, pp_bytes;
    pp_step_comm(ctx, par, &x, &pp_total, &pp_bytes);
    px_pipe_engine_comm(ctx, par, x.pp, x.tp, &pp_total, &pp_bytes); /* DeepSpeed's engine */
    if (p > 1 && blocking_engine(ctx, par)) /* the executor's timeline */
        bubble = pipe_timeline_bubble(ctx, par, sl, lt, first_s, last_s,
                                      sync.tp + sync.cp, ideal, pp_total, bubble);

    /* overlap windows: the backward (forward) compute of one micro-batch */
    double bwd_win = w.bwd + w.rc, fwd_win = w.fwd;
    double dp_total, dp_exposed, dp_bytes;
    dp_step_comm(ctx, par, &x, w_dense_p, w_exp_p, fwd_win, bwd_win, &sync, &dp_total,
                 &dp_exposed, &dp_bytes);
    double offload_s;
    double opt_s = optimizer_time(ctx, par, w_dense_p, w_exp_p, &offload_s);

    double step = ideal + bubble + pp_total + dp_exposed + opt_s + px_overhead_step_s(ctx->run);

    px_time *tm = &pred->time;
    tm->step_s = step;
    tm->compute_s = mm * (w.fwd + w.bwd + w.rc);
    tm->recompute_s = mm * w.rc;
    tm->tp_comm_s = mm * w.tp;
    tm->cp_comm_s = mm * w.cp;
    tm->cp_comm_total_s = mm * w.cpt;
    tm->ep_comm_s = mm * w.ep;
    tm->pp_comm_s = pp_total;
    tm->dp_comm_s = dp_exposed;
    tm->dp_comm_total_s = dp_total;
    tm->bubble_s = bubble;
    tm->optimizer_s = opt_s;
    tm->offload_s = offload_s;
    tm->act_offload_s = mm * w.off;
    assert_times(tm, lt);

    fill_rates(ctx, par, step, bubble, pred);
    fill_goodput(ctx, par, train_tokens, gpu_mtbf_hours, pred);
    if (detail) {
        fill_memory_detail(ctx, par, &wm, detail);
        fill_time_detail(ctx, par, &w, &x, lt, bubble_x, pp_total, pp_bytes, dp_total,
                         dp_exposed, dp_bytes, detail);
    }
    return PX_OK;
}

px_status px_cost_evaluate(const px_model *m, const px_hw *hw, const px_parallel *par,
                           px_prediction *pred, px_error *err)
{
    px_cost_ctx ctx;
    px_status st = px_cost_ctx_init(&ctx, m, hw, err);
    if (st != PX_OK)
        return st;
    st = px_cost_check(m, par, err);
    if (st != PX_OK)
        return st;
    return px_cost_eval(&ctx, par, 0.0, 0.0, pred, NULL, err);
}

double px_cost_dp_breakeven_tokens(double peak_flops, double bw, double comm_bytes_per_param)
{
    return comm_bytes_per_param * peak_flops / (6.0 * bw);
}

double px_cost_days_formula(double n_params, double tokens, int gpus, double peak_flops,
                            double mfu)
{
    return 6.0 * n_params * tokens / ((double)gpus * peak_flops * mfu) / 86400.0;
}

px_goodput px_cost_goodput(double gpu_mtbf_hours, int gpus, double ckpt_bytes_per_gpu,
                           double ckpt_write_bw, double restart_s)
{
    px_goodput g;
    memset(&g, 0, sizeof g);
    if (gpu_mtbf_hours <= 0.0 || gpus < 1)
        return g;
    g.job_mtbf_s = gpu_mtbf_hours * 3600.0 / gpus;
    g.ckpt_write_s = ckpt_write_bw > 0.0 ? ckpt_bytes_per_gpu / ckpt_write_bw : 0.0;
    g.interval_s = sqrt(2.0 * g.ckpt_write_s * g.job_mtbf_s);
    double lost = restart_s / g.job_mtbf_s;
    if (g.interval_s > 0.0)
        lost += g.ckpt_write_s / g.interval_s + g.interval_s / (2.0 * g.job_mtbf_s);
    g.lost_fraction = lost > 1.0 ? 1.0 : lost;
    return g;
}
