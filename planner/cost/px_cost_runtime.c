/* px_cost_runtime.c — the runtime's memory beside the tensors
 * (px_cost_runtime.h). */
#include "px_cost_runtime.h"

#include "px_checked.h"

int px_cost_nccl_comms(const px_cost_ctx *ctx, const px_parallel *par)
{
    int64_t shard = (int64_t)par->dp * par->cp;
    int64_t group = par->shard_group > 0 && par->shard_group < shard ? par->shard_group : shard;
    int n = (par->tp > 1) + (par->cp > 1) + (par->pp > 1) + (group > 1) + (group < shard);
    if (ctx->n_moe_layers > 0 && par->ep > 1) {
        int64_t etp = par->etp > 0 ? par->etp : 1;
        int64_t edp = (int64_t)par->tp * par->cp * par->dp / ((int64_t)par->ep * etp);
        n += 1 + (edp > 1);
    }
    return n;
}

void px_cost_runtime_memory(const px_cost_ctx *ctx, const px_parallel *par, px_memory *mem)
{
    mem->allocated = mem->weights + mem->grads + mem->optimizer + mem->activations +
                     mem->buffers;
    mem->workspace = mem->allocator_cache = mem->runtime_context = mem->nccl = 0;
    mem->nccl_comms = 0;
    if (ctx->run) {
        const px_hw *hw = ctx->hw;
        /* the workspaces are the allocator's too: the cached share is of
         * everything it hands out, reserved = allocated / (1 - f) */
        double f = ctx->run->allocator_cache_fraction;
        mem->workspace = ctx->run->workspace_bytes;
        double in_use = (double)(mem->allocated + mem->workspace);
        mem->allocator_cache = px_i64_from_double_sat(f > 0.0 ? in_use * f / (1.0 - f) : 0.0);
        mem->runtime_context = hw->runtime_context_bytes;
        mem->nccl_comms = px_cost_nccl_comms(ctx, par);
        mem->nccl = mem->nccl_comms * hw->nccl_comm_bytes;
    }
    /* the cached blocks are not in the total a plan must fit: on a failed
     * cudaMalloc the caching allocator releases them and retries before it
     * reports out of memory (c10/cuda/CUDACachingAllocator.cpp,
     * release_cached_blocks); they are in its reserved peak
     * (px_memory_reserved) */
    mem->total = mem->allocated + mem->workspace + mem->runtime_context + mem->nccl;
}
