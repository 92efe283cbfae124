/* px_cost_fsdp.h — ZeRO-3 / FSDP as the frameworks run it (PyTorch FSDP and
 * FSDP2, Megatron-FSDP, DeepSpeed ZeRO-3, MaxText's fsdp axis): the
 * parameters, gradients and optimizer state are sharded over a group; each
 * layer's parameters are all-gathered (in the compute dtype) just before its
 * forward, the next `fsdp_prefetch_layers` layers' gathers run under its
 * compute; after the forward the gathered copy is freed
 * (`fsdp_reshard_after_forward`) and gathered again for the backward, whose
 * unsharded gradients are reduce-scattered layer by layer under the
 * backward of the layer before.  Only the first gather of a pass and the
 * last reduce-scatter cannot hide.  Hybrid sharding (`shard_group` N):
 * sharded within groups of N, replicated across them; the replicas
 * all-reduce their gradient shards once per step.  See docs/cost-model.md,
 * "FSDP / ZeRO-3 as frameworks run it". */
#ifndef PX_COST_FSDP_H
#define PX_COST_FSDP_H

#include <stdbool.h>

#include "px_framework.h"
#include "px_hw.h"

/* Bytes per GPU of the sharded model state: the fp32 master parameters
 * (the weights FSDP keeps), the gradient shard (grad_bytes per parameter)
 * and Adam's two moments, for `params` elements sharded over `shard`. */
void px_cost_fsdp_static(double params, double shard, double grad_bytes, double *weights,
                         double *grads, double *optimizer);

/* Transient bytes: the gathered compute-dtype parameters of the layers in
 * flight (the computing one and the prefetched ones; all the stage's layers
 * when the framework keeps them gathered between forward and backward) and
 * the unsharded gradient of the layer whose backward is running, before its
 * reduce-scatter.  layer_params per GPU (after TP), n_layers on the stage. */
double px_cost_fsdp_buffers(const px_fw_runtime *run, double layer_params, double n_layers,
                            double elem_bytes, double grad_bytes);

typedef struct {
    double total_s;   /* every gather, reduce-scatter (and replica all-reduce) of a step */
    double exposed_s; /* on the critical path */
    double bytes;     /* sent per GPU per step */
} px_fsdp_time;

/* One step of m micro-batches on a stage of n_layers layers of layer_params
 * parameters each (per GPU after TP), forward / backward compute of one
 * micro-batch fwd_s / bwd_s.  group: the shard group size (crossing a node:
 * cross_group, over `rails` NICs a node: px_cost_fsdp_rails); replicas > 1:
 * hybrid sharding, their all-reduce crossing nodes when cross_rep. */
void px_cost_fsdp_time(const px_hw *hw, const px_fw_runtime *run, int group, int replicas,
                       bool cross_group, bool cross_rep, double rails, double layer_params,
                       double n_layers, double elem_bytes, double grad_bytes, double m,
                       double fwd_s, double bwd_s, double sm_fraction, px_fsdp_time *out);

/* One shard group of a layer's parameters: experts are sharded over their
 * expert-data-parallel group (Megatron-Core's expert_data_parallel_group,
 * its own ranks and stride), the rest over the data-parallel group. */
typedef struct {
    int group;           /* ranks the parameters are sharded over */
    bool cross;          /* the group spans nodes */
    double rails;        /* NICs a node its collectives use (px_cost_fsdp_rails) */
    double layer_params; /* a layer's parameters in this group, per GPU */
    double h2d_s, d2h_s; /* parameter offload: a layer's shard up before its gather, its
                          * gradient's shard down after its reduce-scatter (0 without) */
} px_fsdp_shard;

/* Whether a pipeline stage of pp > 1 keeps its layers gathered from its
 * first forward to its last backward, accumulates their gradients unsharded
 * (run->fsdp_pp_grad_bytes a parameter) and reduce-scatters them once, after
 * its last micro-batch: torch.distributed.pipelining's FSDP stages.  The
 * one rule for the memory (the gathered stage) and the time (one gather and
 * one reduce-scatter a step). */
bool px_cost_fsdp_stage_kept(const px_fw_runtime *run, int pp);

/* px_cost_fsdp_time over n_shards groups: each layer gathers (and
 * reduce-scatters) every group's share, one after the other on the same
 * links, so their times add before the overlap windows apply.  kept
 * (px_cost_fsdp_stage_kept): the stage is gathered once, in its first
 * micro-batch's forward, and its reduce-scatters run after its last
 * backward, where no compute of the stage is left to hide them. */
void px_cost_fsdp_time_shards(const px_hw *hw, const px_fw_runtime *run,
                              const px_fsdp_shard *shards, int n_shards, int replicas,
                              bool cross_rep, double n_layers, double elem_bytes,
                              double grad_bytes, double m, bool kept, double fwd_s,
                              double bwd_s, double sm_fraction, px_fsdp_time *out);

/* NICs one shard group's collectives use per node: with flat per-layer
 * buffers (run->fsdp_flat_collectives) NCCL builds one ring per NIC, and a
 * group that holds k GPUs of every node it spans (k = node size / the
 * data-parallel rank stride tp·cp·pp) moves its node-crossing bytes over k
 * NICs: k times one NIC's rate, at most the NVLink rate each GPU forwards
 * at.  1 otherwise (per-parameter collectives ride one ring). */
double px_cost_fsdp_rails(const px_hw *hw, const px_fw_runtime *run, int group, int stride);

#endif
