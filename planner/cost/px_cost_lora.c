/* px_cost_lora.c — LoRA on a frozen base: adapter sizes, the backward
 * without the frozen weights' gradients, the adapters' GEMMs and state
 * (px_cost_lora.h; docs/cost-model.md, "Fine-tuning"). */
#include "px_cost_lora.h"

#include "px_cost_2_ops.h"
#include "px_cost_fsdp.h"
#include "px_flops.h"

/* in and out of the targeted linear `bit` of a dense layer (Megatron's
 * fused linear_qkv and linear_fc1: one adapter each) */
static void target_dims(int bit, const px_act_shape *sh, double *in, double *out)
{
    double qkv = sh->a * sh->dq + sh->kv * (sh->dq + sh->dv);
    double up = sh->gated ? 2.0 : 1.0;
    switch (bit) {
    case 0: *in = sh->h, *out = qkv; break;
    case 1: *in = sh->a * sh->dv, *out = sh->h; break;
    case 2: *in = sh->h, *out = up * sh->f; break;
    default: *in = sh->f, *out = sh->h; break;
    }
}

double px_lora_layer_params(const px_finetune *ft, const px_act_shape *sh)
{
    if (!px_finetune_is_lora(ft))
        return 0.0;
    double n = 0.0, in, out;
    for (int i = 0; i < PX_LORA_TARGET_COUNT; i++)
        if (ft->targets & (1u << i)) {
            target_dims(i, sh, &in, &out);
            n += (double)ft->rank * (in + out);
        }
    return n;
}

double px_lora_layer_gpu_params(const px_cost_ctx *ctx, const px_parallel *par)
{
    if (!px_finetune_is_lora(&par->finetune))
        return 0.0;
    px_act_shape sh;
    make_shape(ctx, par, PX_LAYER_DENSE, PX_RECOMPUTE_NONE, &sh);
    return px_lora_layer_params(&par->finetune, &sh) / par->tp;
}

double px_lora_trained(const px_finetune *ft, double params, double adapter_params)
{
    return px_finetune_is_lora(ft) ? adapter_params : params;
}

double px_lora_bwd_passes(const px_finetune *ft)
{
    return px_finetune_is_lora(ft) ? 1.0 : 2.0;
}

/* One GEMM [m, k] x [k, n] on its roofline: the adapters' are thin (k or n
 * is r), so reading and writing the activations can take longer than the
 * FLOPs. */
static double thin_gemm_s(const px_hw *hw, double e, double m, double n, double k)
{
    return dmax(px_time_gemm_s(hw, m, n, k), px_time_mem_s(hw, e * (m * k + k * n + m * n)));
}

void px_lora_adapter_gemm_s(const px_hw *hw, const px_parallel *par, const px_act_shape *sh,
                            double T, double *fwd_s, double *bwd_s)
{
    *fwd_s = *bwd_s = 0.0;
    const px_finetune *ft = &par->finetune;
    if (!px_finetune_is_lora(ft))
        return;
    double r = ft->rank, t = par->tp, e = sh->elem_bytes, in, out;
    for (int i = 0; i < PX_LORA_TARGET_COUNT; i++)
        if (ft->targets & (1u << i)) {
            target_dims(i, sh, &in, &out);
            /* the shards: A is r/t x in on a column-parallel base (qkv, fc1),
             * r x in/t on a row-parallel one (proj, fc2); B is out/t x r */
            bool column = i == 0 || i == 2;
            double ra = column ? r / t : r, ia = column ? in : in / t, o = out / t;
            double a = thin_gemm_s(hw, e, T, ra, ia), b = thin_gemm_s(hw, e, T, o, r);
            /* forward: x·A, (xA)·B, the scale alpha/r (read + write) and the
             * sum with the base output (2 reads + 1 write) over [T, out/t] */
            *fwd_s += a + b + px_time_mem_s(hw, 5.0 * e * T * o);
            /* backward: the scale's gradient, dB and d(xA), dA and dx, and
             * dx added to the base linear's input gradient [T, in] */
            *bwd_s += 2.0 * (a + b) + px_time_mem_s(hw, e * T * (2.0 * o + 3.0 * ia));
        }
}

double px_lora_grad_share(const px_cost_ctx *ctx, const px_parallel *par, double stage_params)
{
    if (!px_finetune_is_lora(&par->finetune) || stage_params <= 0.0)
        return 1.0;
    double layers = (double)ctx->model->n_layers / par->pp;
    double share = layers * px_lora_layer_gpu_params(ctx, par) / stage_params;
    return dmin(1.0, share);
}

void px_lora_static(const px_cost_ctx *ctx, const px_parallel *par, double base_params,
                    double layers, double shard, double *w, double *g, double *o)
{
    double e = elem_of(ctx);
    double adapters = layers * px_lora_layer_gpu_params(ctx, par);
    px_bytes_per_param bpp = px_cost_bytes_per_param((int)e, par->grad_fp32);
    double wa, ga, oa;
    static_bytes(adapters, shard, par->zero, bpp, &wa, &ga, &oa);
    if (par->zero >= 3 && ctx->run)
        px_cost_fsdp_static(adapters, shard, bpp.grads, &wa, &ga, &oa);
    *w = base_params * e / (par->zero >= 3 ? dmax(shard, 1.0) : 1.0) + wa;
    *g = ga;
    *o = oa;
}

double px_lora_flops_delta_per_token(const px_cost_ctx *ctx, const px_parallel *par,
                                     int64_t seq_len)
{
    if (!px_finetune_is_lora(&par->finetune))
        return 0.0;
    const px_model *m = ctx->model;
    double fwd = px_flops_model_per_token(m, seq_len) / 3.0;
    double weights_fwd = fwd - px_flops_attn_core_fwd_per_token(m, seq_len);
    px_act_shape sh;
    make_shape(ctx, par, PX_LAYER_DENSE, PX_RECOMPUTE_NONE, &sh);
    double adapters = 6.0 * (double)m->n_layers * px_lora_layer_params(&par->finetune, &sh);
    return adapters - weights_fwd;
}

double px_lora_shard(const px_parallel *par)
{
    return par->zero >= 3 && par->shard_group > 0 ? (double)par->shard_group
                                                  : (double)par->dp * par->cp;
}

double px_lora_static_total(const px_cost_ctx *ctx, const px_parallel *par, double base_params,
                            double layers)
{
    double w, g, o;
    px_lora_static(ctx, par, base_params, layers, px_lora_shard(par), &w, &g, &o);
    return w + g + o;
}
