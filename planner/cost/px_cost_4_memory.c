/* px_cost_4_memory.c — the cost model's memory (planner/cost/README.md):
 * from the layers on each stage and their operations, each stage's bytes by
 * kind, and the worst stage (docs/cost-model.md). */
#include "px_cost_4_memory.h"

#include <string.h>

#include "px_blocking.h"
#include "px_cost_2_ops.h"
#include "px_cost_fsdp.h"
#include "px_hybrid.h"
#include "px_cost_lora.h"
#include "px_cost_offload.h"
#include "px_cost_precision.h"

/* Zero-bubble B -> W: the output gradients one layer keeps for its deferred
 * weight gradients, per micro-batch (docs/cost-model.md, "Zero-bubble
 * gradients"): dY of the QKV projection [tok, (a dq + kv (dq + dv))/t] and
 * of the output projection [tok/tsp, h] (the row-parallel input gradient is
 * the sequence shard under SP); dense layers also dY of the MLP's first
 * linear [tok, f (2f gated)/t] and of its second [tok/tsp, h].  A MoE
 * layer's expert weight gradients are taken in B (their routed rows are
 * gone by W), so only its attention defers.  In the activation dtype. */
static double zb_grad_bytes(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k)
{
    px_act_shape sh;
    make_shape(ctx, par, k, PX_RECOMPUTE_NONE, &sh);
    double t = par->tp, tsp = sh.sp ? t : 1.0, tok = sh.s * sh.b, e = sh.elem_bytes;
    double bytes = 0.0;
    if (px_shape_attention(&sh))
        bytes += e * tok * ((sh.a * sh.dq + sh.kv * (sh.dq + sh.dv)) / t + sh.h / tsp);
    if (px_shape_mamba(&sh)) /* in_proj's and out_proj's output gradients */
        bytes += e * tok * (sh.m_in / t + sh.h / tsp);
    if (px_shape_dense_mlp(&sh))
        bytes += e * tok * ((sh.gated ? 2.0 : 1.0) * sh.f / t + sh.h / tsp);
    return bytes;
}

/* The low-precision weights of the stage's linear layers in place of their
 * bf16 copies (px_prec_weight_bytes_per_param): the difference in bytes,
 * negative where the quantised weights are smaller.  ZeRO-3 shards them
 * with the rest (counted in its gathered-layer buffer only). */
double prec_weight_copies(const px_cost_ctx *ctx, const px_parallel *par,
                          const int32_t n[PX_LAYER_KINDS])
{
    double per = px_prec_weight_bytes_per_param(ctx->hw, par->precision, elem_of(ctx),
                                                par->quantized_params);
    if (per == 0.0 || par->zero >= 3)
        return 0.0;
    double sum = 0.0;
    for (int i = 0; i < ctx->n_kinds; i++) {
        int k = ctx->kinds[i];
        bool moe = px_layer_has_experts((px_layer_kind)k);
        double local = (double)(ctx->kind_params[k] - (moe ? ctx->expert_params : 0)) / par->tp +
                       (moe ? (double)ctx->expert_params / (par->ep * par->etp) : 0.0);
        sum += (double)n[k] * local;
    }
    return per * sum;
}

/* Weights, gradients and optimizer state on a GPU of `dense` parameters
 * (sharded over the data-parallel group) and `expert` parameters (over the
 * expert data-parallel group), under the plan's ZeRO stage and the
 * framework's rule: FSDP's fp32 shard (px_cost_fsdp.h); DeepSpeed's 16-bit
 * partitions (zero_16bit_partitions: stage_1_and_2.py keeps the reduced
 * gradient partition in the 16-bit dtype and makes its fp32 copy for the
 * step, 2 + 4 bytes; stage3.py also keeps the 16-bit parameter shard,
 * ds_tensor, beside the fp32 master). */
void param_state_bytes(const px_cost_ctx *ctx, const px_parallel *par, double dense,
                       double expert, double *w, double *g, double *o)
{
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    double dshard = (double)par->dp * par->cp;
    double eshard = (double)par->tp * par->cp * par->dp / (par->ep * par->etp);
    double w1, g1, o1, w2, g2, o2;
    static_bytes(dense, dshard, par->zero, bpp, &w1, &g1, &o1);
    static_bytes(expert, eshard, par->zero, bpp, &w2, &g2, &o2);
    if (par->zero >= 3 && ctx->run) {
        /* FSDP: the fp32 shard is the weight; hybrid sharding shards over
         * the group only (px_cost_fsdp.h) */
        dshard = par->shard_group > 0 ? (double)par->shard_group : dshard;
        eshard = par->shard_group > 0 && eshard > dshard ? dshard : eshard;
        px_cost_fsdp_static(dense, dshard, bpp.grads, &w1, &g1, &o1);
        px_cost_fsdp_static(expert, eshard, bpp.grads, &w2, &g2, &o2);
    }
    *w = w1 + w2;
    *g = g1 + g2;
    *o = o1 + o2;
    if (par->zero >= 2 && ctx->run && ctx->run->zero_16bit_partitions) {
        double e = elem_of(ctx);
        double n = dense / (dshard > 1.0 ? dshard : 1.0) + expert / (eshard > 1.0 ? eshard : 1.0);
        *g = (e + 4.0) * n;
        if (par->zero >= 3)
            *w += e * n;
    }
}

void mtp_local_params(const px_cost_ctx *ctx, const px_parallel *par, double *dense,
                      double *expert)
{
    const px_model *m = ctx->model;
    if (m->n_mtp_modules <= 0)
        return;
    double D = (double)m->n_mtp_modules, h = (double)m->hidden;
    px_layer_kind k = mtp_layer_kind(ctx);
    *dense += D * (3.0 * h + 2.0 * h * h / par->tp + layer_local_params(ctx, par->tp, k));
    if (px_layer_has_experts(k))
        *expert += D * (double)ctx->expert_params / (par->ep * par->etp);
}

/* Parameters on the stage's GPU and their static bytes (weights, gradients,
 * optimizer state) under its ZeRO stage or the framework's FSDP. */
static void stage_static_memory(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                                const stage_layers *sl, stage_mem *sm)
{
    int p = par->pp;
    double dense = 0.0, n_moe = 0.0;
    for (int i = 0; i < ctx->n_kinds; i++) {
        int k = ctx->kinds[i];
        dense += (double)sl->kind[k] * layer_local_params(ctx, par->tp, (px_layer_kind)k);
        n_moe += px_layer_has_experts((px_layer_kind)k) ? (double)sl->kind[k] : 0.0;
    }
    if (stage == 0)
        dense += embedding_local_params(ctx, par->tp);
    if (stage == p - 1) {
        dense += (double)ctx->pc.final_norm;
        /* a tied head still needs its own copy when it lives on another stage */
        if (ctx->pc.lm_head > 0 || p > 1)
            dense += head_local_params(ctx, par->tp);
    }
    double expert = n_moe * (double)ctx->expert_params / (par->ep * par->etp);
    if (stage == p - 1)
        mtp_local_params(ctx, par, &dense, &expert);
    sm->dense_params = dense;
    sm->expert_params = expert;
    param_state_bytes(ctx, par, dense, expert, &sm->w, &sm->g, &sm->o);
    if (px_finetune_is_lora(&par->finetune)) /* frozen base, trained adapters */
        px_lora_static(ctx, par, dense + expert, (double)sl->kind[PX_LAYER_DENSE],
                       px_lora_shard(par), &sm->w, &sm->g, &sm->o);
    px_cost_offload_memory(ctx, par, &sm->w, &sm->g, &sm->o, &sm->host);
    sm->w += prec_weight_copies(ctx, par, sl->kind);
}

/* The activations the stage keeps for its micro-batches in flight, by part,
 * and the zero-bubble B -> W gradients. */
static void stage_activations(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                              const stage_layers *sl,
                              px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT], stage_mem *sm)
{
    int p = par->pp;
    double inflight = px_cost_inflight(par->schedule, p, par->vpp, par->n_micro, stage);
    sm->inflight = inflight;
    /* each layer's activations by its own recompute choice; an offloaded
     * layer's are on the host (px_cost_offload.h) */
    double att = 0.0, mlp = 0.0, nrm = 0.0, host = 0.0;
    for (int i = 0; i < ctx->n_kinds; i++) {
        int k = ctx->kinds[i];
        for (int r = 0; sl->kind[k] > 0 && r < PX_RECOMPUTE_COUNT; r++) {
            double n = (double)(sl->n[k][r] - sl->off[k][r]);
            host += (double)sl->off[k][r] * ops[k][r].total;
            if (n == 0.0)
                continue;
            att += n * ops[k][r].attention;
            mlp += n * ops[k][r].mlp;
            nrm += n * ops[k][r].norm;
        }
    }
    sm->host_act = inflight * host;
    sm->host += sm->host_act;
    sm->act_att = inflight * att;
    sm->act_mlp = inflight * mlp;
    sm->act_norm = inflight * nrm;
    sm->act = sm->act_att + sm->act_mlp + sm->act_norm;
    /* Zero-bubble: the micro-batches past B keep their layers' output
     * gradients until W, and a full-recompute layer's rebuilt activations
     * (B reran its forward; W needs them again). */
    double bw = px_cost_inflight_bw(par->schedule, p, par->vpp, par->n_micro, stage);
    sm->inflight_bw = bw;
    if (bw > 0.0) {
        double per = 0.0;
        for (int i = 0; i < ctx->n_kinds; i++) {
            int k = ctx->kinds[i];
            double n = (double)sl->kind[k];
            if (n == 0.0)
                continue;
            per += n * zb_grad_bytes(ctx, par, (px_layer_kind)k);
            per += (double)sl->n[k][PX_RECOMPUTE_FULL] *
                   (ops[k][PX_RECOMPUTE_NONE].total - ops[k][PX_RECOMPUTE_FULL].total);
        }
        sm->buf_zb = bw * per;
    }
}

/* The stage's buffers: embedding output, final norm, logits and loss on the
 * ends; a full-recompute rerun, the pipeline messages, ZeRO-3's gathered
 * layers.  Reads sm->inflight and sm->inflight_bw (stage_activations). */
/* The parameters of a layer's largest linear module on one GPU: the MLP's
 * up (or gate) projection, h x f (a routed expert's h x f_e), or the
 * attention's q|k|v projection taken fused, over TP. */
static double largest_linear_params(const px_cost_ctx *ctx, int tp)
{
    const px_model *m = ctx->model;
    double h = (double)m->hidden, dq = (double)px_model_qk_head_dim(m),
           dv = (double)px_model_v_head_dim(m);
    double qkv = (double)m->n_heads * dq + (double)m->n_kv_heads * (dq + dv);
    double f = (double)m->ffn > (double)m->moe_ffn ? (double)m->ffn : (double)m->moe_ffn;
    double in_proj = ctx->n_kind[PX_LAYER_MAMBA] > 0 ? (double)px_mamba_in_proj_width(m) : 0.0;
    f = f > in_proj ? f : in_proj;
    return h * (f > qkv ? f : qkv) / tp;
}

/* ZeRO-3's gathered buffers on stage `stage` (0 without ZeRO-3 or without a
 * sharding group): two layers' weights by default; DeepSpeed's largest
 * module with its 16-bit gradient; a framework's FSDP prefetch and
 * reshard (px_cost_fsdp_buffers), its pipeline's unsharded layers and its
 * head kept gathered. */
static double zero3_buffers(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                            const stage_layers *sl)
{
    double dshard = (double)par->dp * par->cp;
    if (par->zero < 3 || dshard <= 1.0)
        return 0.0;
    int p = par->pp;
    double t = par->tp, e = elem_of(ctx);
    px_bytes_per_param bpp = px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32);
    /* a layer as one GPU gathers it: its TP share and, of a MoE layer,
     * only the experts of its EP rank (a dense model: its matrices / t) */
    double etp = par->etp > 0 ? par->etp : 1;
    double gathered[PX_LAYER_KINDS] = {0}, lp = 0.0, held = 0.0, held_g = 0.0;
    for (int i = 0; i < ctx->n_kinds; i++) {
        int k = ctx->kinds[i];
        px_layer_kind kk = (px_layer_kind)k;
        double experts = (double)ctx->expert_params / ((double)par->ep * etp);
        gathered[k] = layer_local_params(ctx, par->tp, kk) +
                      (px_layer_has_experts(kk) ? experts : 0.0);
        if (gathered[k] > lp)
            lp = gathered[k];
        held += (double)sl->kind[k];
        held_g += (double)sl->kind[k] * gathered[k];
    }
    if (ctx->n_moe_layers == 0 && ctx->n_kinds == 1) /* its matrices / t */
        lp = (double)ctx->kind_params[first_kind(ctx)] / t;
    double z = 2.0 * lp * bpp.weights; /* two layers gathered at a time (prefetch) */
    if (ctx->run && ctx->run->zero_16bit_partitions) {
        /* DeepSpeed stage3.py: the module computing, gathered, and its
         * 16-bit gradient before the reduce-scatter; the prefetch
         * (stage3_prefetch_bucket_size, 5e7 elements by default) is a
         * fraction of a layer.  A module is a leaf that owns its
         * parameters (partitioned_param_coordinator.py fetches
         * parameters(recurse=False) of each submodule; the estimator's
         * model_to_params takes the largest such): a layer's largest
         * linear, or the embedding or the head
         * (estimate_zero3_model_states_mem_needs: 4 bytes x the largest
         * at 16 bits). */
        double big = largest_linear_params(ctx, par->tp),
               emb = embedding_local_params(ctx, par->tp),
               head = head_local_params(ctx, par->tp);
        big = emb > big ? emb : big;
        big = head > big ? head : big;
        z = 2.0 * e * big;
    } else if (ctx->run) {
        /* with blocking DP collectives (--overlap off, the CPU
         * executor) a gather cannot run ahead: each layer is gathered
         * when it starts, one at a time (measured: the ZeRO-3 peak
         * holds the shard and one layer) */
        px_fw_runtime run = *ctx->run;
        if (!par->dp_overlap)
            run.fsdp_prefetch_layers = 0;
        z = px_cost_fsdp_buffers(&run, lp, held, e, bpp.grads);
        /* under a pipeline the stage's layers stay gathered and their
         * gradients accumulate unsharded until the last micro-batch */
        if (px_cost_fsdp_stage_kept(&run, p))
            z = held_g * (e + run.fsdp_pp_grad_bytes);
        /* the head's unit, not resharded after its forward, stays
         * gathered through the loss into its backward */
        if (stage == p - 1 && run.fsdp_head_kept_gathered)
            z += e * head_local_params(ctx, par->tp);
    }
    return z;
}

/* The MTP modules' memory on the last stage: per micro-batch in flight and
 * module, its layer's activations under the plan's recompute, the inputs its
 * two norms, its 2h projection (the two halves) and its output norm keep (5
 * hidden-sized tensors, on the sequence shard: `hidden` elements each), and
 * its loss's saved softmax over this GPU's `logits` elements (fp32, as
 * Megatron's vocab-parallel cross-entropy keeps it for every micro-batch in
 * flight; the compute-dtype logits under a fused cross-entropy). */
static double mtp_buffers(const px_cost_ctx *ctx, const px_parallel *par,
                          px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT], double inflight,
                          double hidden,
                          double logits)
{
    const px_model *m = ctx->model;
    if (m->n_mtp_modules <= 0)
        return 0.0;
    double e = elem_of(ctx);
    int k = (int)mtp_layer_kind(ctx);
    double loss = (ctx->run && ctx->run->fused_cross_entropy ? e : 4.0) * logits;
    return (double)m->n_mtp_modules * inflight * (ops[k][plan_recompute(par)].total + 5.0 * e * hidden + loss);
}

/* Bytes per logit of the current micro-batch live at an unfused loss's
 * peak: the framework's count (under TP, its vocabulary-parallel loss's,
 * where it differs), else Megatron's: the compute-dtype logits and one
 * fp32 copy. */
static double unfused_loss_logit_bytes(const px_fw_runtime *run, int tp, double e)
{
    if (run && run->loss_parallel_logit_bytes > 0 && tp > 1)
        return run->loss_parallel_logit_bytes;
    if (run && run->loss_logit_bytes > 0)
        return run->loss_logit_bytes;
    return 4.0 + (e < 4 ? e : 0.0);
}

/* Stage-boundary tensors a pipeline stage holds, in messages (one
 * micro-batch's activation at the stage's input), on every stage: one being
 * sent and one received (Megatron sends and frees its outputs:
 * deallocate_output_tensor), or with pp_buffers_per_micro
 * (torch.distributed.pipelining's stage.py: _prepare_forward_infra and
 * _create_grad_recv_info allocate a receive buffer per micro-batch of each
 * of the rank's v chunks, kept from step to step; forward_one_chunk keeps
 * each output in fwd_cache until its backward) every chunk's activation and
 * gradient receive buffers. */
static double pp_buffers_every(const px_fw_runtime *run, const px_parallel *par)
{
    if (!run || !run->pp_buffers_per_micro)
        return 2.0;
    double v = par->vpp > 1 ? (double)par->vpp : 1.0;
    return 2.0 * v * (double)par->n_micro;
}

/* What the pipeline's ends hold beside that, in messages: the first chunk
 * receives no activations and the last no gradients.  A chunk's kept
 * outputs in flight are the next chunk's received inputs, which its first
 * layer's activations already count: only stage 0's first chunk adds its
 * outputs, and the last stage's last chunk, whose output is the loss's,
 * takes its inputs back (inflight: a chunk's micro-batches in flight). */
static double pp_buffers_end(const px_fw_runtime *run, const px_parallel *par, int stage,
                             double inflight)
{
    if (!run || !run->pp_buffers_per_micro)
        return 0.0;
    double m = (double)par->n_micro, n = 0.0;
    if (stage == 0)
        n += inflight - m;
    if (stage == par->pp - 1)
        n -= m + inflight;
    return n;
}

static void stage_buffers(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                          const stage_layers *sl,
                          px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT], stage_mem *sm)
{
    const px_model *m = ctx->model;
    int p = par->pp;
    double t = par->tp;
    double e = elem_of(ctx);
    bool sp = par->sp && par->tp > 1;
    double tsp = sp ? t : 1.0;
    double s = (double)seq_of(ctx, par) / par->cp, b = (double)par->micro_batch;
    double h = (double)m->hidden, V = vocab_rows(ctx, par->tp);
    double inflight = sm->inflight;
    double tok = s * b;
    /* The embedding's output is the first layer's input, counted with that
     * layer's activations; the embedding keeps its token ids (int64) for
     * the table's gradient and, in a GPT block, its dropout mask (1 byte,
     * on the sequence shard under SP), per micro-batch in flight. */
    if (stage == 0)
        sm->buf_emb = inflight * (8.0 * tok + (m->block == PX_BLOCK_GPT ? tok * h / tsp : 0.0));
    if (stage == p - 1) {
        /* final norm input and the head's input, per micro-batch in flight;
         * the current micro-batch's loss: the head GEMM's logits (compute
         * dtype) and their fp32 copy, which the loss turns into the softmax
         * in place and keeps for backward (Megatron's
         * vocab_parallel_cross_entropy: .float(), exp out=, save_for_backward);
         * the softmax of every other micro-batch in flight */
        sm->buf_final = inflight * 2.0 * e * tok * h / tsp;
        sm->buf_logits = unfused_loss_logit_bytes(ctx->run, par->tp, e) * tok * V / t;
        /* zero-bubble: past B the softmax has become the logits gradient,
         * kept in the activation dtype until W computes the head's */
        double others = inflight - sm->inflight_bw - 1.0;
        sm->buf_loss = (others > 0.0 ? others : 0.0) * 4.0 * tok * V / t +
                       sm->inflight_bw * e * tok * V / t;
        if (ctx->run && ctx->run->fused_cross_entropy) {
            /* a fused cross-entropy keeps the GEMM's logits (compute dtype)
             * and a log-sum-exp per token, and turns the logits into their
             * gradient in place: no fp32 copies */
            sm->buf_logits = e * tok * V / t;
            sm->buf_loss = (inflight - 1.0) * e * tok * V / t + inflight * 4.0 * tok;
        }
        if (ctx->run && ctx->run->loss_chunks > 1) {
            /* a chunked loss runs the head, the loss and their backward on
             * one slice of tokens at a time inside the forward: one slice's
             * logits live beside the fp32 buffer gathering the gradient of
             * the head's (TP-replicated) input; that gradient, cast to the
             * compute dtype, is what each micro-batch in flight keeps */
            sm->buf_logits = sm->buf_logits / ctx->run->loss_chunks + 4.0 * tok * h;
            sm->buf_loss = (inflight - 1.0) * e * tok * h;
        }
    }
    if (stage == p - 1)
        sm->buf_mtp = mtp_buffers(ctx, par, ops, inflight, tok * h / tsp, tok * V / t);
    /* a stage with a full-recompute layer holds that layer's full
     * activations while it reruns it (the largest such layer's) */
    double worst_rc = 0.0;
    for (int k = 0; k < PX_LAYER_KINDS; k++)
        if (sl->n[k][PX_RECOMPUTE_FULL] > 0 && ops[k][PX_RECOMPUTE_NONE].total > worst_rc)
            worst_rc = ops[k][PX_RECOMPUTE_NONE].total;
    /* the op-level selective policy reruns a layer's other operators in its
     * backward, and a set of recompute modules its modules: their outputs
     * are live again while it runs (the attention core alone adds nothing
     * beyond its kernel's own working set) */
    bool reruns = (ctx->run && ctx->run->selective_op_policy) ||
                  (par->recompute_modules & ~PX_RCM_DEFAULT) != 0;
    for (int k = 0; reruns && k < PX_LAYER_KINDS; k++) {
        double rerun = ops[k][PX_RECOMPUTE_NONE].total - ops[k][PX_RECOMPUTE_SELECTIVE].total;
        if (sl->n[k][PX_RECOMPUTE_SELECTIVE] > 0 && rerun > worst_rc)
            worst_rc = rerun;
    }
    sm->buf_rc = worst_rc;
    /* every layer offloaded: the layer in its backward holds its set again
     * (a count of leading layers is reloaded after the stage's other
     * layers have freed theirs: Transformer Engine's
     * get_cpu_offload_context keeps (layers - offloaded) layers' sets) */
    bool every = par->offload.activations && par->offload.act_layers == 0;
    for (int k = 0; every && k < PX_LAYER_KINDS; k++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
            if (sl->off[k][r] > 0 && ops[k][r].total > sm->buf_off)
                sm->buf_off = ops[k][r].total;
    if (p > 1) {
        double msg = px_cost_pp_msg_bytes(s, b, h, par->tp, sp, (int)e);
        sm->buf_p2p_end = pp_buffers_end(ctx->run, par, stage, inflight) * msg;
        sm->buf_p2p = pp_buffers_every(ctx->run, par) * msg + sm->buf_p2p_end;
    }
    sm->buf_zero3 = zero3_buffers(ctx, par, stage, sl);
}

/* ops[k][r]: one layer of kind k (px_layer_kind) under recompute choice r. */
void memory_of_stage(const px_cost_ctx *ctx, const px_parallel *par, int stage,
                     const stage_layers *sl,
                     px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT], stage_mem *sm)
{
    memset(sm, 0, sizeof *sm);
    stage_static_memory(ctx, par, stage, sl, sm);
    stage_activations(ctx, par, stage, sl, ops, sm);
    stage_buffers(ctx, par, stage, sl, ops, sm);
    sm->total = sm->w + sm->g + sm->o + sm->act + sm->buf_emb + sm->buf_final + sm->buf_logits +
                sm->buf_loss + sm->buf_rc + sm->buf_p2p + sm->buf_zero3 + sm->buf_zb +
                sm->buf_off + sm->buf_mtp;
}

void layer_act_ops(const px_cost_ctx *ctx, const px_parallel *par, px_layer_kind k,
                   px_recompute r, px_act_ops *ops)
{
    px_act_shape sh;
    make_shape(ctx, par, k, r, &sh);
    px_cost_act_layer(&sh, ops);
    px_prec_act_adjust(&sh, par->precision, ops);
}

/* Activations of one layer of each kind under each recompute choice (all
 * three: a layer may recompute by its own choice, and a recomputing layer
 * rebuilds the none set), remembered in ctx->ops_memo for the next
 * configuration of the same shape. */
void layer_ops(px_cost_ctx *ctx, const px_parallel *par,
               px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT])
{
    bool sp = par->sp && par->tp > 1;
    int64_t seq = seq_of(ctx, par);
    px_cost_ops_memo *mo = &ctx->ops_memo;
    if (mo->valid && mo->tp == par->tp && mo->cp == par->cp && mo->ep == par->ep &&
        mo->etp == par->etp && mo->sp == sp && mo->flash == par->flash_attention &&
        mo->micro_batch == par->micro_batch && mo->seq_len == seq &&
        mo->precision == par->precision) {
        for (int i = 0; i < ctx->n_kinds; i++) /* the kinds the model has */
            memcpy(ops[ctx->kinds[i]], mo->ops[ctx->kinds[i]], sizeof mo->ops[0]);
        return;
    }
    for (int i = 0; i < ctx->n_kinds; i++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
            layer_act_ops(ctx, par, (px_layer_kind)ctx->kinds[i], (px_recompute)r,
                          &ops[ctx->kinds[i]][r]);
    memcpy(mo->ops, ops, sizeof mo->ops);
    mo->tp = par->tp;
    mo->cp = par->cp;
    mo->ep = par->ep;
    mo->etp = par->etp;
    mo->sp = sp;
    mo->flash = par->flash_attention;
    mo->micro_batch = par->micro_batch;
    mo->seq_len = seq;
    mo->precision = par->precision;
    mo->valid = true;
}

/* ZB-H2: a middle stage's memory is its layers' times its in-flight counts
 * (px_cost_inflight, _bw), which never fall with the stage index (checked
 * here), so of the middle stages holding the same layers the last is the
 * worst, and the first with its counts on a tie.  Marks those in score[]
 * (with the first and last stages); false when the counts do fall or the
 * layers come in too many kinds (then every stage is scored). */
static bool later_middle_dominates(const px_parallel *par, const stage_layers *sl, bool *score)
{
    int p = par->pp, seen[PX_SEEN_MAX], best[PX_SEEN_MAX], n_seen = 0;
    double fl_best[PX_SEEN_MAX], bw_best[PX_SEEN_MAX];
    for (int st = 0; st < p; st++)
        score[st] = st == 0 || st == p - 1;
    for (int st = 1; st < p - 1; st++) {
        double fl = px_cost_inflight(par->schedule, p, par->vpp, par->n_micro, st);
        double bw = px_cost_inflight_bw(par->schedule, p, par->vpp, par->n_micro, st);
        int k = 0;
        while (k < n_seen && memcmp(sl[seen[k]].n, sl[st].n, sizeof sl[st].n))
            k++;
        if (k == n_seen) {
            if (n_seen == PX_SEEN_MAX)
                return false;
            seen[n_seen++] = st;
        } else if (fl < fl_best[k] || bw < bw_best[k]) {
            return false; /* a count fell */
        } else if (fl == fl_best[k] && bw == bw_best[k]) {
            continue; /* the same memory as the earlier stage */
        }
        best[k] = st;
        fl_best[k] = fl;
        bw_best[k] = bw;
    }
    for (int k = 0; k < n_seen; k++)
        score[best[k]] = true;
    return true;
}

/* sl: stage_counts of par */
int worst_memory(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                 stage_mem *worst)
{
    px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    int ws = 0;
    bool skip = middle_stages_identical(ctx, par);
    int seen[PX_SEEN_MAX], n_seen = 0;
    bool zb_score[PX_MAX_CHUNKS];
    bool zb_later = par->schedule == PX_SCHED_ZB_H2 && later_middle_dominates(par, sl, zb_score);
    for (int st = 0; st < par->pp; st++) {
        /* (under ZB-H2 a later stage keeps more B -> W gradients) */
        if (par->schedule == PX_SCHED_ZB_H2 ? zb_later && !zb_score[st]
                                            : repeats_middle(sl, st, par->pp, seen, &n_seen))
            continue;
        stage_mem sm;
        memory_of_stage(ctx, par, st, &sl[st], ops, &sm);
        if (st == 0 || sm.total > worst->total) {
            *worst = sm;
            ws = st;
        }
        /* uniform dense stages in the middle are identical: skip them */
        if (st == 0 && par->pp > 2 && skip)
            st = par->pp - 2; /* in-flight count never grows with i: stage 0 dominates
                               * 1..p−2 (ZB-H2's B -> W count does grow: p−2 dominates) */
    }
    return ws;
}

/* The memory part of a px_cost_detail, from the worst stage's breakdown. */
void fill_memory_detail(px_cost_ctx *ctx, const px_parallel *par, const stage_mem *w,
                        px_cost_detail *detail)
{
    detail->act_attention = w->act_att;
    detail->act_mlp = w->act_mlp;
    detail->act_norm = w->act_norm;
    detail->buf_embedding = w->buf_emb;
    detail->buf_logits = w->buf_logits;
    detail->buf_loss = w->buf_loss;
    detail->buf_final_norm = w->buf_final;
    detail->buf_recompute = w->buf_rc;
    detail->buf_offload = w->buf_off;
    detail->buf_mtp = w->buf_mtp;
    detail->buf_p2p = w->buf_p2p + w->buf_zero3;
    detail->inflight = w->inflight;
    detail->inflight_bw = w->inflight_bw;
    detail->buf_zb_grads = w->buf_zb;
    detail->params_per_gpu = px_i64_from_double_sat(w->dense_params + w->expert_params);
    px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    detail->layer_act_bytes = ops[first_kind(ctx)][par->recompute].total;
}

void px_cost_memory(px_cost_ctx *ctx, const px_parallel *par, px_memory *mem,
                    px_cost_detail *detail)
{
    stage_mem w;
    stage_layers *sl = ctx->stage_ws;
    stage_counts(ctx, par, sl);
    int ws = worst_memory(ctx, par, sl, &w);
    fill_memory(ctx, par, &w, ws, mem);
    if (detail)
        fill_memory_detail(ctx, par, &w, detail);
}

void px_cost_stage_memory(px_cost_ctx *ctx, const px_parallel *par, px_memory *per_stage)
{
    stage_layers *sl = ctx->stage_ws;
    stage_counts(ctx, par, sl);
    px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    for (int st = 0; st < par->pp; st++) {
        stage_mem sm;
        memory_of_stage(ctx, par, st, &sl[st], ops, &sm);
        fill_memory(ctx, par, &sm, st, &per_stage[st]);
    }
}

void px_cost_stage_end_buffers(px_cost_ctx *ctx, const px_parallel *par, double *first,
                               double *last, double *every)
{
    stage_layers none;
    memset(&none, 0, sizeof none);
    px_act_ops ops[PX_LAYER_KINDS][PX_RECOMPUTE_COUNT];
    layer_ops(ctx, par, ops);
    stage_mem sm;
    memory_of_stage(ctx, par, 0, &none, ops, &sm);
    *first = sm.buf_emb + sm.buf_p2p_end;
    *every = sm.buf_p2p - sm.buf_p2p_end + sm.buf_zero3;
    memory_of_stage(ctx, par, par->pp - 1, &none, ops, &sm);
    *last = sm.buf_final + sm.buf_logits + sm.buf_loss + sm.buf_mtp + sm.buf_p2p_end;
}
