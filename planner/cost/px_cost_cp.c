/* px_cost_cp.c — CP attention communication (px_cost_cp.h). */
#include "px_cost_cp.h"

#include <string.h>

#include "px_efficiency.h"

static double dmax(double a, double b) { return a > b ? a : b; }

/* PyTorch's all-gather rotater (torch/distributed/tensor/experimental
 * _attention.py, _AllGatherRotater under _templated_ring_attention and its
 * backward): the forward starts one all-gather of every rank's K and V
 * before its first (local, causal) block and waits for it at the second, so
 * the gather hides under that block only; the backward gathers them again
 * the same way, and passes the K and V gradients, accumulated in fp32
 * (convert_to_f32), to the next rank after each of its c - 1 later blocks
 * (an all-to-all permute), each hidden under the next block's backward. */
static void torch_allgather_time(const px_hw *hw, int c, double kv_bytes, double attn_fwd_s,
                                 bool crosses, px_cp_time *out)
{
    double cm1 = (double)c - 1.0;
    double all = (double)c * kv_bytes;
    double ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, c, all, crosses);
    double grad = px_time_coll_s(hw, PX_COLL_P2P, 2, 2.0 * kv_bytes, crosses); /* fp32 */
    double block = attn_fwd_s / (double)c;
    out->total_s = 2.0 * ag + cm1 * grad;
    out->fwd_exposed_s = dmax(0.0, ag - block);
    out->exposed_s = out->fwd_exposed_s + dmax(0.0, ag - 2.5 * block) +
                     cm1 * dmax(0.0, grad - 2.5 * block);
    double hidden = out->total_s - out->exposed_s;
    out->exposed_s += hw->comm_overlap_cost * hidden;
    out->fwd_exposed_s += hw->comm_overlap_cost * (ag < block ? ag : block);
    out->bytes = 2.0 * px_coll_wire_bytes(PX_COLL_ALLGATHER, c, all) + cm1 * 2.0 * kv_bytes;
}

void px_cost_cp_time(const px_hw *hw, px_cp_comm flavour, int c, double kv_bytes,
                     double q_bytes, double o_bytes, double attn_fwd_s, bool crosses,
                     bool gather_overlaps, px_cp_time *out)
{
    memset(out, 0, sizeof *out);
    if (c <= 1)
        return;
    double cm1 = (double)c - 1.0;
    switch (flavour) {
    case PX_CPC_ALLGATHER: {
        if (gather_overlaps) {
            torch_allgather_time(hw, c, kv_bytes, attn_fwd_s, crosses, out);
            return;
        }
        /* Megatron's "all_gather" (Llama 3's CP): every rank gathers the
         * whole sequence's K and V before its attention (message c·kv), and
         * the backward reduce-scatters their gradients; neither overlaps */
        double ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, c, (double)c * kv_bytes, crosses);
        double rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, c, (double)c * kv_bytes, crosses);
        out->total_s = out->exposed_s = ag + rs;
        out->fwd_exposed_s = ag;
        out->bytes = px_coll_wire_bytes(PX_COLL_ALLGATHER, c, (double)c * kv_bytes) +
                     px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, c, (double)c * kv_bytes);
        return;
    }
    case PX_CPC_A2A: {
        /* Ulysses / Megatron "a2a": q, k, v go from sequence- to head-sharded
         * before the attention and the output back after it; the backward
         * moves their gradients the same way; on the critical path */
        double in = q_bytes + kv_bytes;
        double t_in = px_time_coll_s(hw, PX_COLL_ALLTOALL, c, in, crosses);
        double t_out = px_time_coll_s(hw, PX_COLL_ALLTOALL, c, o_bytes, crosses);
        out->total_s = out->exposed_s = 2.0 * (t_in + t_out);
        out->fwd_exposed_s = t_in + t_out;
        out->bytes = 2.0 * (px_coll_wire_bytes(PX_COLL_ALLTOALL, c, in) +
                            px_coll_wire_bytes(PX_COLL_ALLTOALL, c, o_bytes));
        return;
    }
    default: {
        /* ring (Megatron "p2p", ring attention): c-1 steps passing the K and V
         * block forward, twice the bytes backward (K, V and their gradients);
         * each step overlaps one 1/c block of the attention core (2.5x in
         * the backward) */
        double step = px_time_coll_s(hw, PX_COLL_P2P, 2, kv_bytes, crosses);
        double block = attn_fwd_s / (double)c;
        out->total_s = cm1 * 3.0 * step;
        out->fwd_exposed_s = cm1 * dmax(0.0, step - block);
        out->exposed_s = out->fwd_exposed_s + cm1 * dmax(0.0, 2.0 * step - 2.5 * block);
        /* the hidden transfers run on SMs the attention kernel then lacks
         * (NCCL send/recv channels): the profile's comm_overlap_cost of them */
        double hidden = out->total_s - out->exposed_s;
        out->exposed_s += hw->comm_overlap_cost * hidden;
        out->fwd_exposed_s += hw->comm_overlap_cost * cm1 * (step < block ? step : block);
        out->bytes = cm1 * 3.0 * kv_bytes;
        return;
    }
    }
}

void px_cost_cp_gather_qkv_time(const px_hw *hw, int c, double qkv_bytes, bool crosses,
                                px_cp_time *out, double *stream_fwd_bytes,
                                double *stream_bwd_bytes)
{
    memset(out, 0, sizeof *out);
    *stream_fwd_bytes = *stream_bwd_bytes = 0.0;
    if (c <= 1)
        return;
    double all = (double)c * qkv_bytes; /* the gathered sequence */
    double ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, c, all, crosses);
    double rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, c, all, crosses);
    out->total_s = out->exposed_s = 2.0 * ag + rs;
    out->fwd_exposed_s = ag;
    out->bytes = 2.0 * px_coll_wire_bytes(PX_COLL_ALLGATHER, c, all) +
                 px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, c, all);
    /* a copy reads and writes its bytes, a fresh (zeroed) buffer is written
     * once: forward the gathered rows and their copy in position order
     * (2 buffers, 1 copy); backward the same again, the rows' gradients and
     * their blocks out of position order (2 buffers, 1 copy), this rank's
     * summed piece (1 buffer) and its add (2 reads, 1 write) */
    *stream_fwd_bytes = 2.0 * all + 2.0 * all;
    *stream_bwd_bytes = 4.0 * all + qkv_bytes + 2.0 * 2.0 * all + 3.0 * qkv_bytes;
}

void px_cost_cp_ring_merge_bytes(int c, double T, double a_t, double kv_t, double dq, double dv,
                                 double e, double *fwd_bytes, double *bwd_bytes)
{
    *fwd_bytes = *bwd_bytes = 0.0;
    if (c <= 1 || T <= 0.0)
        return;
    double half = (c - 1) / 2.0;            /* steps of each half class */
    double q = T * a_t * dv * e;            /* out, dout, dq (bf16) */
    double kv = T * kv_t * (dq + dv) * e;   /* k and v, dk and dv */
    double lse = T * a_t;                   /* log-sum-exp elements */
    /* forward: k|v into the ring buffer, out initialised from step 0, each
     * later step's output corrected (3 per full step, 1.5 per half) after
     * the loop; the lse in fp64: 20 bytes an element initial, 20 / 10 a
     * full / half step, 12 for the final cast */
    *fwd_bytes = 2.0 * q + 2.0 * kv + 4.5 * half * q + lse * (40.0 + 42.0 * half);
    /* backward: k|v copied into the ring buffer, the lse half made
     * contiguous, dq and the travelling dk|dv added every step */
    *bwd_bytes = 2.0 * q + 4.0 * kv + 4.5 * half * (q + kv) + 4.0 * lse;
}
