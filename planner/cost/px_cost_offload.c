/* px_cost_offload.c — optimizer offload (px_cost_offload.h). */
#include "px_cost_offload.h"

#include "px_cost.h"

void px_cost_offload_memory(const px_cost_ctx *ctx, const px_parallel *par, double *weights,
                            double *optimizer, double *host)
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
     * down, the step, the weights up */
    *host_s = n * grad_bytes / link + n * PX_OFFLOAD_ADAM_STREAM_BYTES / dram +
              n * (double)elem_of(ctx) / link;
    double rest = (1.0 - share) * device_s; /* the device's share runs meanwhile */
    return rest > *host_s ? rest : *host_s;
}

bool px_cost_offload_hw_known(const px_hw *hw)
{
    return hw->host_link_bw > 0.0 && hw->host_mem_bytes > 0 && hw->host_mem_bw > 0.0;
}
