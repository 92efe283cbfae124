/* px_cost_lora.h — a component of the cost model (step 3,
 * planner/cost/README.md): LoRA on a frozen base (docs/cost-model.md,
 * "Fine-tuning").  Each rule has one function; the memory, layer and step
 * steps call them where LoRA changes what they count.  Every function is
 * the identity (or 0 extra) when the plan does not train LoRA adapters. */
#ifndef PX_COST_LORA_H
#define PX_COST_LORA_H

#include "px_cost_types.h"

/* Adapter elements of one dense layer, whole (before TP): r (in + out) for
 * each targeted linear (A: in x r, B: r x out). */
double px_lora_layer_params(const px_finetune *ft, const px_act_shape *sh);

/* Adapter elements of one dense layer on one GPU: both A and B are split
 * over TP (Megatron's ParallelLinearAdapter), so /tp. */
double px_lora_layer_gpu_params(const px_cost_ctx *ctx, const px_parallel *par);

/* The parameters whose gradients a micro-batch accumulates: the adapters'
 * `adapter_params` under LoRA, else all `params`. */
double px_lora_trained(const px_finetune *ft, double params, double adapter_params);

/* Backward GEMM passes per forward GEMM of a base linear: 2 (input and
 * weight gradient), 1 under LoRA (input gradient only: the weights are
 * frozen). */
double px_lora_bwd_passes(const px_finetune *ft);

/* The adapters' own work for one micro-batch of T tokens on one GPU
 * (Megatron-Bridge's LoRALinear): forward x·A and (xA)·B for each target on
 * their roofline, the alpha/r scale and the sum into the base output;
 * backward the input and weight gradients of A and B (twice the forward
 * GEMMs), the scale's gradient and the adapter's input gradient added to
 * the base linear's. */
void px_lora_adapter_gemm_s(const px_hw *hw, const px_parallel *par, const px_act_shape *sh,
                            double T, double *fwd_s, double *bwd_s);

/* The trained share of a stage's `stage_params` parameters on one GPU: 1,
 * or under LoRA the adapters of the stage's layers (an even split of the
 * layers over the pp stages) over stage_params: what the DP gradient
 * reduction and the optimizer step cover. */
double px_lora_grad_share(const px_cost_ctx *ctx, const px_parallel *par, double stage_params);

/* FLOPs per token LoRA changes against px_flops_model_per_token (0 unless
 * LoRA): less the frozen weights' gradients (the forward's linear and head
 * FLOPs, the forward less its attention cores), plus the adapters' 2 r (in
 * + out) per target forward and twice that backward. */
double px_lora_flops_delta_per_token(const px_cost_ctx *ctx, const px_parallel *par,
                                     int64_t seq_len);

/* Static bytes of a stage under LoRA: the frozen base (`base_params` on the
 * GPU) in the activation dtype, no gradients or optimizer state, sharded
 * over `shard` by ZeRO-3 / FSDP; the adapters of its `layers` layers with
 * the bytes per parameter of training (fp32 main parameters, gradients and
 * Adam), sharded as the ZeRO stage or FSDP shards any parameter. */
void px_lora_static(const px_cost_ctx *ctx, const px_parallel *par, double base_params,
                    double layers, double shard, double *w, double *g, double *o);

/* The ranks LoRA's static bytes are sharded over: ZeRO-3's hybrid group
 * when set, else the dp·cp group. */
double px_lora_shard(const px_parallel *par);

/* Static bytes under LoRA of `base_params` frozen parameters and `layers`
 * layers' adapters on one GPU (px_lora_static over px_lora_shard): the
 * per-layer and per-stage views of the partitioner. */
double px_lora_static_total(const px_cost_ctx *ctx, const px_parallel *par, double base_params,
                            double layers);

#endif
