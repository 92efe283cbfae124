/* px_cost_cp.h — the communication of context-parallel attention in its
 * three flavours (px_cp_comm): ring p2p overlapped block by block with the
 * attention core, KV all-gather before it, and the Ulysses all-to-all of
 * heads and sequence around it.  Formulas and sources: docs/cost-model.md,
 * "Communication", CP. */
#ifndef PX_COST_CP_H
#define PX_COST_CP_H

#include <stdbool.h>

#include "px_hw.h"
#include "px_plan.h"

typedef struct {
    double total_s;   /* every CP transfer of one layer, one micro-batch, fwd + bwd */
    double exposed_s; /* of it, on the critical path */
    double fwd_exposed_s; /* the exposed part in the forward (full recompute reruns it) */
    double bytes;     /* bytes one GPU sends */
} px_cp_time;

/* One layer's CP communication for one micro-batch on one GPU.
 * c: CP size; kv_bytes: this rank's K and V (or MLA latent) block;
 * q_bytes, o_bytes: this rank's queries and attention output (a2a only);
 * attn_fwd_s: this rank's attention-core forward time (the ring overlaps a
 * 1/c block of it per step, the backward 2.5x); crosses: the CP group
 * leaves a node; gather_overlaps: the all-gather flavour as PyTorch runs
 * it (px_fw_runtime.cp_allgather_overlap). */
void px_cost_cp_time(const px_hw *hw, px_cp_comm flavour, int c, double kv_bytes,
                     double q_bytes, double o_bytes, double attn_fwd_s, bool crosses,
                     bool gather_overlaps, px_cp_time *out);

/* The CPU executor's CP (px_fw_runtime.cp_gather_qkv; executor/px_layer.c
 * gather_kv, scatter_dkv), whatever the flavour: before the attention every
 * rank all-gathers the whole sequence's q|k|v rows (message c·qkv_bytes,
 * qkv_bytes this rank's rows), again before the attention's backward, and
 * reduce-scatters their gradients after it; blocking, all exposed.
 * *stream_fwd_bytes, *stream_bwd_bytes: the bytes its buffers and copies
 * move (each fresh buffer zeroed by the allocator, rows put in position
 * order forward and backward, the gradient blocks out of it, the add of this
 * rank's summed piece), priced by the caller as a stream (px_time_stream_s). */
void px_cost_cp_gather_qkv_time(const px_hw *hw, int c, double qkv_bytes, bool crosses,
                                px_cp_time *out, double *stream_fwd_bytes,
                                double *stream_bwd_bytes);

/* HBM bytes, forward and backward, of a p2p ring's merging passes in one
 * layer for one micro-batch on one GPU, besides the attention kernels and
 * the K/V transfers (Transformer Engine's AttnFuncWithCPAndKVP2P, 2.x;
 * the 1.x releases move a little more): causal attention over 2·c
 * load-balanced chunks, so a rank's c − 1 later steps are on average half
 * full q against half the kv and half half q against full kv.  Each
 * step's output is rescaled by its log-sum-exp (kept in fp64) and added
 * into the bf16 output after the loop; backward, dq and the dk|dv that
 * travel the ring are added in bf16 every step.  T: this rank's tokens
 * (b · s / c); a_t, kv_t: query and K/V heads on this GPU; dq, dv: head
 * widths; e: activation bytes.  With q = T·a_t·dv·e, kv = T·kv_t·(dq+dv)·e,
 * L = T·a_t and h = (c − 1)/2:
 *   fwd = 2q + 2kv + 4.5·h·q + L·(40 + 42·h)
 *   bwd = 2q + 4kv + 4.5·h·(q + kv) + 4·L
 * 0 for c <= 1. */
void px_cost_cp_ring_merge_bytes(int c, double T, double a_t, double kv_t, double dq, double dv,
                                 double e, double *fwd_bytes, double *bwd_bytes);

#endif
