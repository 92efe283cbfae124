/* px_cost_moe.h — what a routed-expert layer adds to the cost model beyond
 * its GEMMs: the imbalance of the routed load across the expert-parallel
 * ranks and the token permutation kernels around the dispatch.  Formulas
 * and sources: docs/cost-model.md, "Mixture of experts". */
#ifndef PX_COST_MOE_H
#define PX_COST_MOE_H

#include <stdbool.h>

#include "px_hw.h"

/* The busiest EP rank's routed rows over the mean, for dropless routing
 * whose expected loads are balanced (an auxiliary balancing loss, or
 * DeepSeek-V3's bias-based balancing): the rows a micro-batch routes are a
 * sample, so rank r's load is binomial with p = 1/ep over the group's
 * N = ep · copies_per_rank rows, and the expected maximum of ep such loads is
 * about mean + sigma · sqrt(2 ln ep):
 *   1 + sqrt(2 ln ep) · sqrt((ep − 1) / N).
 * 1 for ep <= 1.  The all-to-all and the expert GEMMs wait for that rank. */
double px_moe_imbalance(int ep, double copies_per_rank);

/* HBM bytes of the token permutation of `copies` routed rows of width h in
 * e-byte activations (the rows this GPU's experts compute: after the expert
 * TP all-gather), per direction (forward and backward together, halved).
 * Megatron's all-to-all dispatcher permutes this GPU's own copies by expert
 * before the dispatch and un-permutes them with the gate weights after the
 * combine, before the expert-TP all-gather and after its reduce-scatter
 * (own = copies / etp rows); with more than one local expert it also sorts
 * the received chunks by local expert and back (sort_chunks_by_idxs, on
 * the gathered rows: a read and a write each way, 4·copies).  Fused
 * (Transformer Engine's moe_permute / moe_unpermute, Megatron-Core's
 * --moe-permute-fusion): one read and write each, 4·own.  Unfused, the
 * PyTorch ops of moe_utils.permute / unpermute: index_select (forward 2
 * passes, its backward a zero fill and scatter_add, 3), and the gate
 * multiply + zero fill + scatter_add of the un-permute (forward 5, backward
 * the gather and both products' gradients, 6): 8·own a direction.
 *   e·h·((fused ? 4 : 8)·own + (n_local > 1 ? 4·copies : 0)) */
double px_moe_permute_bytes(double e, double copies, double etp, double n_local, bool fused,
                            double h);

/* HBM bytes, one direction, of padding the routed rows of each local expert
 * to the 16-row multiple FP8 tensor-core GEMMs need and un-padding the
 * output (Megatron's TEGroupedMLP under fp8: Transformer Engine's
 * Fp8Padding before linear_fc1 and Fp8Unpadding after linear_fc2; dropless
 * routing gives unaligned counts, so the copies run): each reads and
 * writes the e-byte rows, 4·e·copies·h; the backward pads and un-pads the
 * gradients the same way. */
double px_moe_fp8_pad_bytes(double e, double copies, double h);

/* Seconds of one EP all-to-all of msg bytes a rank (its routed rows for
 * all ep ranks) over a group of which in_node ranks (itself included)
 * share its node.  NCCL runs an all-to-all as one send and one receive per
 * peer (nccl-tests alltoall_perf; Megatron's dispatcher calls
 * all_to_all_single): the (in_node − 1)/ep share to the node's peers goes
 * over NVLink while the (ep − in_node)/ep share leaves through the NIC, at
 * the same time, so the slower of the two sets the time:
 *   max(t_coll(a2a, ep, msg·(ep − in_node)/(ep − 1), across nodes),
 *       t_coll(a2a, ep, msg·(in_node − 1)/(ep − 1), inside a node))
 * (px_time_coll_s charges (ep − 1)/ep of its message).  A group inside one
 * node (!crosses or in_node >= ep) is the plain intra-node all-to-all. */
double px_moe_a2a_time_s(const px_hw *hw, int ep, double msg, int in_node, bool crosses);

/* The same dispatch by a dispatcher that sends a token once to each other
 * node hosting any of its experts and lets that node's NVLink forward the
 * copies (DeepEP's normal kernels, HybridEP: Megatron-Core's flex
 * dispatcher, "removes redundant tokens during cross-node communication",
 * megatron/core/transformer/moe/README.md).  Of the copies that leave the
 * node, the network carries the share node_share (px_moe_node_share), and
 * NVLink carries every copy once, the forwarded ones too:
 *   max(t_coll(a2a, ep, msg·node_share·(ep − in_node)/(ep − 1), across nodes),
 *       t_coll(a2a, ep, msg, inside a node)).
 * px_moe_a2a_time_s where the group stays inside a node. */
double px_moe_a2a_dedup_time_s(const px_hw *hw, int ep, double msg, int in_node, bool crosses,
                               double node_share);

/* The network's share of a token's copies bound for other nodes under such a
 * dispatcher: the distinct other nodes its top_k experts sit on, over the
 * copies bound there.  With balanced routing a token's top_k experts are
 * k distinct experts among E, drawn alike, spread evenly over the
 * N = ep / in_node nodes of the group (E / N a node): a node holds none of
 * them with probability C(E − E/N, k) / C(E, k), so
 *   share = (N − 1)·(1 − C(E − E/N, k)/C(E, k)) / (k·(N − 1)/N).
 * 1 where the group is one node or a token has one expert. */
double px_moe_node_share(int n_experts, int top_k, int ep, int in_node);

/* Exposed seconds of a layer's EP dispatch and combine (a2a_s: the four
 * all-to-alls of one micro-batch, a quarter each) where the plan overlaps
 * them with another micro-batch's compute (px_parallel.moe_a2a_overlap,
 * plan's --moe-a2a-overlap): Megatron-Core's
 * --overlap-moe-expert-parallel-comm runs one micro-batch's forward beside
 * the previous one's backward, layer by layer, on two streams, and pairs
 * each all-to-all with one part of the other's compute
 * (megatron/core/models/common/model_chunk_schedule_plan.py, run()):
 *   the backward combine  under the forward's pre-dispatch part,
 *   both dispatches       under the experts' backward and forward,
 *   the forward combine   under the backward's pre-dispatch part
 * (the pre-dispatch part: attention, norms, router, permutation; here the
 * layer's compute less the routed experts' GEMMs).  Each pair exposes
 * max(0, a − c) + sm_frac · min(a, c), sm_frac the share of the compute the
 * communication kernels' SMs slow down while they run (px_cost_5_layer.c's
 * comm_sm_fraction).  a2a_s itself where there is only one micro-batch
 * (nothing to pair with). */
double px_moe_a2a_exposed_s(double a2a_s, double pre_fwd_s, double pre_bwd_s,
                            double experts_fwd_s, double experts_bwd_s, double sm_frac,
                            long long n_micro);

#endif
