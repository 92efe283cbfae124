/* px_cost_moe.h — what a routed-expert layer adds to the cost model beyond
 * its GEMMs: the imbalance of the routed load across the expert-parallel
 * ranks and the token permutation kernels around the dispatch.  Formulas
 * and sources: docs/cost-model.md, "Mixture of experts". */
#ifndef PX_COST_MOE_H
#define PX_COST_MOE_H

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
 * e-byte activations, one direction (the backward moves the same):
 * Megatron's all-to-all dispatcher reads and writes every row four times —
 * permute by expert before the dispatch, sort the received chunks by local
 * expert, sort them back, un-permute and weight by the gate after the
 * combine: 8·e·copies·h. */
double px_moe_permute_bytes(double e, double copies, double h);

/* HBM bytes, one direction, of padding the routed rows of each local expert
 * to the 16-row multiple FP8 tensor-core GEMMs need and un-padding the
 * output (Megatron's TEGroupedMLP under fp8: Transformer Engine's
 * Fp8Padding before linear_fc1 and Fp8Unpadding after linear_fc2; dropless
 * routing gives unaligned counts, so the copies run): each reads and
 * writes the e-byte rows, 4·e·copies·h; the backward pads and un-pads the
 * gradients the same way. */
double px_moe_fp8_pad_bytes(double e, double copies, double h);

#endif
