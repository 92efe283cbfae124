/* px_cost_offload.c — optimizer, parameter and activation offload
 * (px_cost_offload.h). */
#include "px_cost_offload.h"

#include <math.h>

#include "px_cost.h"

void px_cost_offload_memory(const px_cost_ctx *ctx, const px_parallel *par, double *weights,
                            double *grads, double *optimizer, double *host)
{
    double share = px_offload_host_share(&par->offload);
    *host = 0.0;
    if (share <= 0.0)
        return;
    bool fsdp = par->zero >= 3 && ctx->run && !px_finetune_is_lora(&par->finetune);
    double e = (double)elem_of(ctx);
    /* the optimizer's parameters on this GPU, from its state's bytes */
    double per = fsdp ? 8.0 : px_cost_bytes_per_param(elem_of(ctx), par->grad_fp32).optimizer;
    double n = share * (*optimizer / per);
    *host = n * PX_OFFLOAD_HOST_BYTES_PER_PARAM;
    *optimizer *= 1.0 - share;
    if (fsdp)
        *weights -= n * (4.0 - (ctx->run->zero_16bit_partitions ? 0.0 : e));
    if (par->offload.kind == PX_OFFLOAD_PARAMS) {
        /* a 16-bit shard the device gathered from (DeepSpeed's ds_tensor)
         * moves too (FSDP2 gathers from its fp32 shard, the master already
         * moved); the gradients' shards go down as they are reduced and are
         * the host's fp32 copy already counted */
        if (!fsdp || ctx->run->zero_16bit_partitions)
            *host += *weights;
        *weights = 0.0;
        *grads = 0.0;
    }
}

double px_cost_offload_param_copy_bytes(const px_cost_ctx *ctx)
{
    /* DeepSpeed copies its 16-bit shard up; FSDP2 its fp32 sharded
     * parameter, cast on the device before the all-gather */
    return ctx->run && ctx->run->zero_16bit_partitions ? (double)elem_of(ctx) : 4.0;
}

double px_cost_offload_step_s(const px_cost_ctx *ctx, const px_parallel *par, double device_s,
                              double opt_params, double grad_bytes, double *host_s)
{
    double share = px_offload_host_share(&par->offload);
    *host_s = 0.0;
    if (share <= 0.0)
        return device_s;
    const px_hw *hw = ctx->hw;
    double n = share * opt_params;
    double link = hw->host_link_bw > 0.0 ? hw->host_link_bw : 1.0;
    double dram = hw->host_mem_bw > 0.0 ? hw->host_mem_bw : 1.0;
    /* in order, as both frameworks run it after the backward: the gradients
     * down, the step, the weights up; with the parameters on the host the
     * gradients came down with their reduction and the step updates the
     * host's shard in place */
    double copies = par->offload.kind == PX_OFFLOAD_PARAMS
                        ? 0.0
                        : n * grad_bytes / link + n * (double)elem_of(ctx) / link;
    *host_s = copies + n * PX_OFFLOAD_ADAM_STREAM_BYTES / dram;
    double rest = (1.0 - share) * device_s; /* the device's share runs meanwhile */
    return rest > *host_s ? rest : *host_s;
}

double px_cost_act_offload_layer_s(const px_cost_ctx *ctx, double bytes, double win_fwd,
                                   double win_bwd)
{
    double link = ctx->hw->host_link_bw > 0.0 ? ctx->hw->host_link_bw : 1.0;
    double copy = bytes / link;
    const px_fw_runtime *run = ctx->run;
    double down = run && run->act_offload_async ? fmax(0.0, copy - win_fwd) : copy;
    double up = run && run->act_offload_prefetch ? fmax(0.0, copy - win_bwd) : copy;
    return down + up;
}

bool px_cost_offload_hw_known(const px_hw *hw)
{
    return hw->host_link_bw > 0.0 && hw->host_mem_bytes > 0 && hw->host_mem_bw > 0.0;
}
