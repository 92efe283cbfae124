/* px_cost_runtime.h — what the runtime holds on a device beside the plan's
 * tensors (docs/cost-model.md, "What the runtime takes"): library
 * workspaces and the caching allocator's cached blocks (the framework's
 * profile), the CUDA context and NCCL's communicator buffers (the
 * hardware's profile, times the communicators the layout needs).  The one
 * place they are summed into a plan's memory. */
#ifndef PX_COST_RUNTIME_H
#define PX_COST_RUNTIME_H

#include "px_cost_1_layout.h"

/* NCCL communicators one rank of par holds: PyTorch's ProcessGroupNCCL
 * creates one per process group at its first collective, so one for each
 * parallel group of more than one rank a step communicates over (TP, CP,
 * the pipeline's neighbours, the data-parallel sharding group, HSDP's
 * replicas, EP and MoE's expert data-parallel group). */
int px_cost_nccl_comms(const px_cost_ctx *ctx, const px_parallel *par);

/* Sets mem->allocated from the tensors' kinds and the runtime's parts (zero
 * without a framework profile: ctx->run NULL); mem->total, what must fit,
 * is the tensors, the workspaces, the context and NCCL's buffers: the
 * allocator's cached blocks are given back before an allocation fails, so
 * they count in its reserved peak only. */
void px_cost_runtime_memory(const px_cost_ctx *ctx, const px_parallel *par, px_memory *mem);

#endif
