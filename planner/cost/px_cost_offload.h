/* px_cost_offload.h — a component of the cost model (step 3,
 * planner/cost/README.md): optimizer and activation offload (px_offload.h,
 * docs/cost-model.md, "Offload").  The memory step moves the offloaded
 * share of the optimizer state, and the offloaded layers' activations
 * (stage_counts' off), to the host; the step adds the host's work and the
 * copies the compute waits for.  Both are the identity (0 extra) when the
 * plan offloads nothing. */
#ifndef PX_COST_OFFLOAD_H
#define PX_COST_OFFLOAD_H

#include "px_cost_types.h"

/* Host bytes per offloaded parameter: the fp32 master weight and Adam's two
 * moments (12 bytes) and the fp32 gradient the host's step reads (4). */
#define PX_OFFLOAD_HOST_BYTES_PER_PARAM 16.0

/* Bytes the host's Adam step streams per parameter: it reads the fp32
 * weight, gradient and both moments (16) and writes the weight, the moments
 * (12) and the 16-bit copy sent back to the device (2). */
#define PX_OFFLOAD_ADAM_STREAM_BYTES 30.0

/* Moves the offloaded share of a GPU's optimizer state to the host, from
 * the static bytes the memory step counted: *weights and *optimizer keep the
 * device's part, *host gets the offloaded parameters' fp32 master, moments
 * and gradient copy.  Under FSDP's accounting (ZeRO-3 with a framework
 * runtime, px_cost_fsdp.h) the fp32 master is the sharded weight: it moves
 * too, and the device keeps a 16-bit shard to gather from (DeepSpeed's
 * ds_tensor, already counted where zero_16bit_partitions is set).  With
 * the parameters offloaded (PX_OFFLOAD_PARAMS) the device keeps none of the
 * three: the shard it gathers from moves to *host and the gradients' shards
 * are the host's copy already counted. */
void px_cost_offload_memory(const px_cost_ctx *ctx, const px_parallel *par, double *weights,
                            double *grads, double *optimizer, double *host);

/* Bytes per parameter of a ZeRO-3 shard copied to the device before each
 * gather under parameter offload. */
double px_cost_offload_param_copy_bytes(const px_cost_ctx *ctx);

/* The optimizer step under offload, from device_s (the step with every
 * parameter on the device) and the optimizer's parameters on this GPU:
 * the device runs the rest while the host copies the offloaded share's
 * gradients in (grad_bytes each), runs Adam over it at host_mem_bw and
 * copies the 16-bit weights back over host_link_bw.  *host_s: the host's
 * part.  Returns the step's optimizer time. */
double px_cost_offload_step_s(const px_cost_ctx *ctx, const px_parallel *par, double device_s,
                              double opt_params, double grad_bytes, double *host_s);

/* Exposed seconds of one offloaded layer's activations in one micro-batch:
 * `bytes` to the host during its forward and back for its backward over
 * host_link_bw.  A copy the framework runs on a side stream
 * (act_offload_async) hides under the next layer's forward, of win_fwd
 * seconds; a prefetched copy back (act_offload_prefetch) under the
 * backward of the layer after it, win_bwd; otherwise the compute waits for
 * the whole copy.  Uniform layers: a layer's own windows stand for its
 * neighbour's. */
double px_cost_act_offload_layer_s(const px_cost_ctx *ctx, double bytes, double win_fwd,
                                   double win_bwd);

/* Whether the profile knows the host (host_link_bw, host_mem_bytes,
 * host_mem_bw all set): offload needs all three. */
bool px_cost_offload_hw_known(const px_hw *hw);

#endif
